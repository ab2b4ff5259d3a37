"""The "Storage & recovery" sheet: the design, where the stall and the restart come from, and what it costs.

Columns: A label, B unit, C where a row comes from, D the baseline, then per design "set to",
"x baseline", value (blank = the baseline's, as on the Compare sheet). Blocks: the setup inputs (one
row per :data:`ckptplan.engine.fields.SETUP_FIELDS` field with its rule as data validation, named
``setup_<field>``), the scenario inputs as links to the Inputs sheet (a blank stall, write or restart
is derived; a value there, or one a design sets, is stated and wins); the design's derived figures,
the plan at them and the money, all :data:`workbook.design_formulas.PLAN_CALCS`: the baseline
column shows the Plan sheet's own cells (one computation, one answer), each design column computes
its own; a column with checkpoint tiers plans with the tiered model, live (:mod:`.tier_formulas`, its
cells in hidden columns to the right; only the tiered Monte Carlo's P(finish) is a value, with an "up
to date" check), and says "single level only" in the single-level figures' rows; the baseline's tiers (``tier<i>_<key>``) and failure
classes (``class<j>_name``/``_share``) with the first-order intervals of Benoit et al. (IEEE TC
66(7), 2017), then the tiers and classes a design puts in their place (grouped rows, :mod:`.tier_block`);
hidden columns to the right: each design column's spare-pool Erlang-B chain
(:func:`workbook.design_formulas.pool_chain_cell`: the Erlang-B recursion).

User text is written as text, never as a formula. Checks: ``("setup", "base"|k)`` = ``plan_setup`` of
design ``k`` without tiers; ``("setup_tier", i)``, ``("setup_class", j)``, ``("setup_first_order",)`` =
the baseline's tiers; in ``built.checks`` when a setup or designs are given (all: :func:`sheet_checks`).
"""

from __future__ import annotations

import math
from typing import Any, Callable
from weakref import WeakKeyDictionary

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.worksheet.pagebreak import Break
from openpyxl.utils import get_column_letter as col_letter
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.designs import default_designs, scenario_values
from ..engine.errors import InputError
from ..engine.fields import RULES, SETUP_FIELDS
from ..engine.setup import TIER_KEYS, RecoverySetup, plan_setups
from ..engine.storage import HOURS_PER_BILLING_MONTH
from . import design_formulas as D, flags, formulas as F, style as S, tier_formulas as TF
from .manifest import Built, Check
from .tier_block import TIER_COLUMNS as _TIER, design_tier_rows

__all__ = ["CLASS_SLOTS", "DESIGN_SLOTS", "SHEET", "TIER_SLOTS", "sheet_checks",
           "storage_sheet"]

SHEET = "Storage & recovery"
TIER_SLOTS, CLASS_SLOTS, DESIGN_SLOTS = 3, 4, 4  # the helper columns start after the last design's
# helper columns to the right of every design column (4 + 3 per design), with one spare column; rows (n = 0) from 8
_HELPER_COL, _FIRST, _WIDTH_A = 4 + 3 * 4 + 2, 8, 72
_REGISTRY: "WeakKeyDictionary[Workbook, tuple[list[Check], list[Check]]]" = WeakKeyDictionary()
_VISIBLE = {"effective_stall_min", "exact_interval_min", "chosen_interval_min", "waste_fraction", "expected_failures",
            "wall_h", "useful_h", "save_h", "restart_h", "rework_h", "gpus", "total_gpu_hours", "compute_cost",
            "goodput", "p_finish_by_deadline"}


def sheet_checks(wb: Workbook) -> tuple[list[Check], list[Check]]:
    """(checks, model-check flags) of the Storage & recovery sheet of ``wb`` (built in this process)."""
    return _REGISTRY.get(wb, ([], []))


def _put(ws, row: int, col: int, value: Any, fmt: str | None = None, font=None, fill=None, wrap: bool = False):
    """A value cell; a text stays text even when it starts with "=" (user text never becomes a formula)."""
    c = ws.cell(row=row, column=col, value=value)
    c.data_type = "s" if isinstance(value, str) else c.data_type
    for attr, v in (("number_format", fmt), ("font", font), ("fill", fill)):
        if v is not None:
            setattr(c, attr, v)
    c.alignment = Alignment(wrap_text=wrap, vertical="top")
    return c


def _fx(ws, row: int, col: int, expr: str, fmt: str | None = None, wrap: bool = False):
    c = _put(ws, row, col, None, fmt, wrap=wrap)
    c.value = "=" + expr
    return c


def _validate(ws, ref: str, rule: str | None, what: str) -> None:
    """The registry rule's data validation on ``ref`` (blank allowed); ``rule`` None: "yes" or "no"."""
    r = RULES.get(rule or "")
    kw = (dict(type="list", formula1='"yes,no"', error=f"{what}: yes or no") if r is None else
          dict(**r.data_validation(ref), showInputMessage=True, promptTitle=what[:32],
               prompt=f"{what}: {r.noun} (or empty)"[:255], error=f"{what} must be {r.noun}, or empty."[:225]))
    dv = DataValidation(**kw, allow_blank=True, showErrorMessage=True, errorTitle="Invalid input")
    ws.add_data_validation(dv)
    dv.add(ref)


class _Grid:
    """Rows over the baseline column (D) and the design columns; references per column; checks."""

    def __init__(self, wb: Workbook, ws, n: int, currency: str):
        self.wb, self.ws, self.n, self.currency, self.row = wb, ws, n, currency, _FIRST
        self.refs: list[dict[str, str]] = [{} for _ in range(n + 1)]
        self.checks, self.flags, self.named = [], [], set()

    @staticmethod
    def col(k: int) -> int:
        return 4 + 3 * k

    def name(self, key: str, cell: str) -> None:
        assert key not in self.named, key   # one cell per defined name
        self.named.add(key) or S.name(self.wb, key, SHEET, cell)

    def head(self, label: str, unit: str = "", cite: str = "", bold: bool = False) -> None:
        _put(self.ws, self.row, 1, label, font=Font(bold=True) if bold else None, wrap=True)
        _put(self.ws, self.row, 2, S.fmt_unit(unit, self.currency) if unit else None)
        _put(self.ws, self.row, 3, cite or None, font=S.NOTE_FONT)
        if len(label) > 1.15 * _WIDTH_A:   # ~1.15 characters per unit of width: wrap, and make room
            self.ws.row_dimensions[self.row].height = 13 * math.ceil(len(label) / (1.15 * _WIDTH_A)) + 2

    def band(self, title: str, note: str = "") -> None:
        S.header(self.ws, self.row + 1, [title] + [None] * (3 + 3 * self.n))
        if note:
            _put(self.ws, self.row + 2, 1, note, font=S.NOTE_FONT)
        self.row += 3 if note else 2

    def figure(self, key: str, label: str, unit: str, fmt: str, expr: Callable[[dict], str], cite: str = "",
               check: str | None = None, hidden: bool = False, base: str | None = None, dn: str | None = None,
               single: bool = False) -> None:
        """One derived row: ``expr(refs)`` in every column (``base``: the baseline's formula instead, the Plan
        sheet's cell); ``single``: a single-level figure, which a tiered column states in words instead."""
        r = self.row
        self.head(label, unit, cite)
        for k in range(self.n + 1):
            letter = col_letter(self.col(k))
            if single and self.tiered[k]:   # the tiered plan's formula, or words for a single-level figure
                over = TF.tiered_expr(key, self.blocks[k], self.refs[k], expr, F.NEVER)
                if over is None:
                    _put(self.ws, r, self.col(k), TF.SINGLE_LEVEL_ONLY, wrap=False)
                    D.bind(self.refs[k], key, '""')
                    continue
                _fx(self.ws, r, self.col(k), over, fmt)
                D.bind(self.refs[k], key, f"${letter}${r}")
                if check:
                    self.checks.append(Check(SHEET, f"{letter}{r}", ("setup_tiered", k or "base"), key))
                continue
            _fx(self.ws, r, self.col(k), base if k == 0 and base else expr(self.refs[k]), fmt)
            D.bind(self.refs[k], key, f"${letter}${r}")
            if check:
                self.checks.append(Check(SHEET, f"{letter}{r}", ("setup", k or "base"), check))
        if hidden:
            self.ws.row_dimensions[r].outlineLevel, self.ws.row_dimensions[r].hidden = 1, True
        if not hidden or dn is not None:   # a collapsed row is named when asked (the add-in checks call it)
            self.name(dn or f"setup_{key}", f"D{r}")
        self.row += 1


def storage_sheet(wb: Workbook, scenario, setup, designs, built: Built, terms: int = D.POOL_TERMS) -> None:
    """Write the sheet for ``setup`` (None = none given) and ``designs`` (the Compare defaults = none);
    ``terms``: the spare pool's Erlang-B chain per design column (hidden columns to the right)."""
    st = setup if setup is not None else RecoverySetup()
    if not isinstance(st, RecoverySetup):
        raise InputError("setup", type(st).__name__, "must be a RecoverySetup")
    designs = tuple(designs or ())
    designs = () if designs == tuple(default_designs(scenario)) else designs
    for what, n, limit in (("tiers", len(st.tiers), TIER_SLOTS), ("failure_classes", len(st.failure_classes),
                                                                  CLASS_SLOTS), ("designs", len(designs), DESIGN_SLOTS)):
        if n > limit:
            raise InputError(what, n, f"the {SHEET} sheet holds at most {limit} {what.replace('_', ' ')}")
    if any("," in c for c in st.failure_classes):
        raise InputError("failure_classes", next(c for c in st.failure_classes if "," in c), "a class name in the "
                         "workbook cannot hold a comma (a tier's survives cell lists class names separated by commas)")
    columns = [(scenario, st)] + [(d.apply(scenario), d.apply_setup(st)) for d in designs]
    plans = plan_setups(columns)   # one pass; refuses what the engine refuses, naming the field
    ws = wb.create_sheet(SHEET)
    g = _Grid(wb, ws, len(designs), scenario.currency)
    g.tiered = [bool(su.tiers) for _, su in columns]
    g.terms = terms
    S.title(ws, "Storage & recovery: where the stall and the restart come from, and what they cost",
            "Checkpoint size and bandwidths give the save stall, background write and restore; the restart parts "
            "and the spare pool give the restart; the plan, storage and spare money follow "
            "(the Plan sheet's formulas; the baseline column is the Plan sheet). Blue cells are inputs; blank = not "
            "given.", 7)
    _inputs(g, st, designs)
    stated = [dict(r) for r in g.refs]   # the column's own inputs, before the design binds what it uses
    _derived(g)
    _tier_blocks(g, designs, stated, [len(su.tiers) for _, su in columns])
    _plan(g)
    _engine_values(g, columns, plans, designs)
    ws.row_breaks.append(Break(id=g.row - 1))   # the tier and class tables print on a page of their own
    _tiers(g, st, plans[0])
    g.row = design_tier_rows(ws, g.row, designs, g.name, (TIER_SLOTS, CLASS_SLOTS), g.currency)
    for i, text in enumerate([t.format(N=terms) for t in _NOTES] + flags.legend()):
        S.note(ws, g.row + 1 + i, text, 7)
    for col, width in zip("ABCDEFGHIJKLMNOP", (_WIDTH_A, 16, 30, 16, 10, 10, 16, 10, 10, 16, 10, 10, 16, 10, 10, 16)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "E8"
    # readable print: labels and units repeat on each page, two designs per page across beyond two
    ws.print_title_cols, ws.print_title_rows = "A:B", "7:7"
    ws.page_setup.fitToWidth = 1 + len(designs) // 3
    ws.sheet_properties.outlinePr.summaryBelow = ws.sheet_properties.outlinePr.summaryRight = False
    _REGISTRY[wb] = (g.checks, g.flags)
    if st.given() or designs or st.stated:
        built.checks.extend(g.checks)
        built.flags.extend(g.flags)


# ------------------------------------------------------------------------------------------- blocks

def _inputs(g: _Grid, st, designs) -> None:
    ws, rows = g.ws, {}
    for r, c, text, font in ((4, 1, "Design (type a name)", Font(bold=True)), (4, 4, "Baseline", Font(bold=True)),
                             (5, 1, "What changes (from the blue cells below)", S.NOTE_FONT)):
        _put(ws, r, c, text, font=font)
    ws.row_dimensions[6].hidden, ws.row_dimensions[5].height = True, 42
    for k, d in enumerate(designs, start=1):
        c = g.col(k) - 2
        for r in (4, 5):
            ws.merge_cells(start_row=r, start_column=c, end_row=r, end_column=c + 2)
        _put(ws, 4, c, d.name, font=Font(bold=True, color="0000FF"), fill=S.INPUT_FILL)
        g.name(f"setup_design{k}_name", f"{col_letter(c)}4")
    S.header(ws, 7, ["Input or figure", "Unit", "Defined name (Plan sheet)", "Baseline"]
             + ["set to", "x baseline", "value"] * len(designs))

    def change_row(key, dkey, label, unit, rule, integer, value=None, link=False, default=None):
        r, fmt = g.row, (S.INPUT_WHOLE if integer else S.INPUT_NUMBER)
        g.head(label, unit, "Inputs: " + key if link else f"setup_{key}")
        if link:
            _fx(ws, r, 4, f'IF({key}="","",{key})', fmt)
            g.name(f"setup_link_{key}", f"D{r}")   # the row the designs' change cells of this input are read from
        else:
            _put(ws, r, 4, value, fmt, S.INPUT_FONT, S.INPUT_FILL)
            _validate(ws, f"D{r}", rule, key)
            g.name(f"setup_{key}", f"D{r}")
        for k in range(g.n + 1):
            v, d = g.col(k), (designs[k - 1] if k else None)
            if d is not None:
                s_, t_ = f"{col_letter(v - 2)}{r}", f"{col_letter(v - 1)}{r}"
                _put(ws, r, v - 2, d.set.get(dkey), fmt, S.INPUT_FONT, S.INPUT_FILL)
                _put(ws, r, v - 1, None if dkey in d.set else d.times.get(dkey), S.INPUT_NUMBER, S.INPUT_FONT,
                     S.INPUT_FILL)
                g.name(f"setup_design{k}_set_{key}", s_)   # what the Compare sheet's break-even status watches
                g.name(f"setup_design{k}_times_{key}", t_)
                _validate(ws, s_, rule, f"{key} set to")
                _validate(ws, t_, "positive", f"{key} x baseline")
                kept = f"$D${r}"
                if key == "downtime_min" and "restart_min" in rows:   # it keeps its share of a changed restart
                    rr, vl = rows["restart_min"], col_letter(v)
                    kept = D.downtime_kept_share(kept, f"$D${rr}", f"{vl}{rr}", f"{col_letter(v - 2)}{rr}",
                                                 f"{col_letter(v - 1)}{rr}")
                _fx(ws, r, v, f'IF({s_}<>"",{s_},IF($D${r}="","",IF({t_}<>"",$D${r}*{t_},{kept})))', fmt)
            ref = g.refs[k][key] = f"${col_letter(v)}${r}"
            g.refs[k][f"{key}_d"] = f'IF({ref}="",{default or 0!r},{ref})'   # blank = the registry's default, or 0
        rows[key] = r
        g.row += 1

    g.band("Storage and recovery setup (blank = not given)")
    for f in SETUP_FIELDS:
        change_row(f.name, f.name, f.label, f.unit.replace("per GB", "money per GB"), f.rule, f.integer,
                   getattr(st, f.name), default=f.default)
    g.band("Scenario inputs (links to the Inputs sheet)")
    for key, field in F.INPUTS.items():
        change_row(key, field.name, field.label, field.unit.replace("per GPU", "money per GPU"), field.rule,
                   field.integer, link=True)
    for k, d in enumerate(designs, start=1):   # what changes: the change cells, and tiers a design replaces
        s_, t_ = col_letter(g.col(k) - 2), col_letter(g.col(k) - 1)
        _fx(ws, 6, g.col(k) - 2, "&".join(['"; tiers replaced"'] * (d.tiers is not None) + [
            f'IF({s_}{r}<>"","; {key} = "&{s_}{r},IF({t_}{r}<>"","; {key} x"&{t_}{r},""))' for key, r in rows.items()]))
        _fx(ws, 5, g.col(k) - 2, f'IF({s_}6="","no change",MID({s_}6,3,2000))', wrap=True).font = S.NOTE_FONT
    r, helper = g.row, g.row + 1
    g.input_helper = helper
    g.head("Input check (the setup's rules)", bold=True)
    _put(ws, helper, 1, "Input check, helper", font=S.NOTE_FONT)
    ws.row_dimensions[helper].hidden = True   # the texts, so that the visible cell stays short
    for k in range(g.n + 1):
        L = col_letter(g.col(k))
        _fx(ws, helper, g.col(k), _problems(g.refs[k], k))
        _fx(ws, r, g.col(k), f'IF({L}{helper}="","OK",{L}{helper})', wrap=True)
        flags.highlight(ws, f"{L}{r}")
    g.row += 2


def _problems(x: dict[str, str], k: int) -> str:
    """Text naming every setup input that breaks its rule, and the rules between inputs ("" when none)."""
    parts = [f'IF({x[f.name]}="","",IF(ISNUMBER({x[f.name]}),IF({f.check.excel_condition(x[f.name])},"",'
             f'"{f.name} must be {f.check.noun}; "),"{f.name} must be {f.check.noun}; "))' for f in SETUP_FIELDS]
    parts += [f'IF(AND({x["spares_d"]}>0,{x["repair_h"]}=""),"spares needs repair_h; ","")',
              f'IF(AND({x["parameters_b"]}="",OR({x["write_gb_s_per_writer"]}<>"",{x["aggregate_write_gb_s"]}<>"",'
              f'{x["d2h_gb_s_per_writer"]}<>"")),"a bandwidth needs parameters_b; ","")']
    return "&".join(parts + (["setup_tier_problems"] if k == 0 else []))


#: design rows shown (the other steps are grouped and collapsed, expand with +)
_DESIGN_VISIBLE = {"checkpoint_size_gb", "write_bandwidth_gb_s", "derived_checkpoint_stall_min",
                   "derived_async_write_min", "read_bandwidth_gb_s", "derived_restore_min", "mean_in_repair",
                   "spare_free_probability", "pool_reallocation_min", "reallocation_sd_min", "mean_nodes_in_repair",
                   "pool_waiting_share", *(f"part_{p}" for p in D.PARTS),
                   "restart_pipeline_min", "used_checkpoint_stall_min", "used_async_write_min", "used_restart_min"}
#: names of the baseline's figures on this sheet (``setup_<key>`` unless listed)
_NAMES = {
          "pool_reallocation_min": "setup_pool_reallocation_min"}


def _derived(g: _Grid) -> None:
    """The design's rows (:data:`workbook.design_formulas.DESIGN_CALCS`): the baseline column shows the Plan
    sheet's cells, each design column computes its own, with its spare pool's Erlang-B chain in hidden helper columns."""
    g.band("Derived from the design (live formulas)",
           "Blank = not given or not derivable. A stall, write or restart typed on Inputs (or set by a design) wins.")
    for key in ("job_failure_rate_per_h", "job_mtbf_h", "job_mtbf_min"):
        calc = F.CALC_BY_KEY[key]
        g.figure(key, calc.label + ("" if key != "job_mtbf_h" else " (a design's own)"), calc.unit, calc.fmt, calc.expr,
                 "Plan", "row:job_mtbf_h" if key == "job_mtbf_h" else None, hidden=key != "job_mtbf_h", base=key)
    ws, first = g.ws, _FIRST
    for k in range(g.n + 1):   # the pool's Erlang-B chain of this column, down a hidden helper column
        g.refs[k].update(pool_terms=str(g.terms),
                         pool_erlang_b=f"${col_letter(_HELPER_COL + k)}${first + g.terms - 1}" if k else '""')
    for calc in D.DESIGN_CALCS:
        g.figure(calc.key, calc.label, calc.unit, calc.fmt, calc.expr, calc.key, calc.engine_key,
                 hidden=calc.key not in _DESIGN_VISIBLE, base=calc.key,
                 dn=_NAMES.get(calc.key, f"setup_{calc.key}"))
    S.header(ws, 7, [f"Spare pool Erlang B, {col_letter(g.col(k))}" for k in range(1, g.n + 1)], col=_HELPER_COL + 1)
    for k in range(1, g.n + 1):
        col = _HELPER_COL + k
        D.write_pool_chain(ws, first, col, g.terms, g.refs[k])
        ws.column_dimensions[col_letter(col)].outlineLevel, ws.column_dimensions[col_letter(col)].hidden = 1, True


def _tier_blocks(g: _Grid, designs, stated: list[dict[str, str]], counts: list[int]) -> None:
    """Each tiered column's plan as formulas (:func:`workbook.tier_formulas.write_tier_block`), in hidden columns
    right of the spare pool's sums: the baseline's tier and class tables, or the design's own."""
    g.blocks = [{} for _ in range(g.n + 1)]
    col = _HELPER_COL + DESIGN_SLOTS + 2
    for k in range(g.n + 1):
        if not g.tiered[k]:
            continue
        d = designs[k - 1] if k else None
        own = f"setup_design{k}_"
        m = max(TIER_SLOTS, counts[k]) if d is not None and d.tiers is not None else TIER_SLOTS
        tiers, _ = TF.named_tables(own + "tier" if d is not None and d.tiers is not None else "tier", "", m, 0)
        mine = d is not None and d.failure_classes is not None
        _, classes = TF.named_tables("", own + "class" if mine else "class", 0, CLASS_SLOTS)
        x = dict(g.refs[k], restart_other=TF.restart_other(stated[k]["restart_min"], g.refs[k]))
        _put(g.ws, 7, col, f"Tiered plan of column {col_letter(g.col(k))}", font=Font(bold=True))
        g.blocks[k] = TF.write_tier_block(g.ws, _FIRST, col, x, tiers, classes)
        if k == 0:   # the baseline's optimum: the Interval curve's multiples are of it
            g.name("setup_tiered_optimum_interval_min", g.blocks[0]["tiered_optimum_interval_min"].replace("$", ""))
        width = TF.block_size(m, CLASS_SLOTS)[1]
        for c in range(col, col + width):
            g.ws.column_dimensions[col_letter(c)].outlineLevel, g.ws.column_dimensions[col_letter(c)].hidden = 1, True
        col += width + 1


def _plan(g: _Grid) -> None:
    g.band("The plan at the stall, write and restart above (the Plan sheet's formulas)",
           "A column with checkpoint tiers is planned by the tiered model, live (Benoit et al. 2017).")
    design = {c.key for c in D.DESIGN_CALCS} | {"job_failure_rate_per_h", "job_mtbf_h", "job_mtbf_min"}
    money = {c.key for c in D.MONEY_CALCS}
    for calc in D.PLAN_CALCS:
        if calc.key in design or calc.key in money:
            continue
        g.figure(calc.key, calc.label, calc.unit, calc.fmt, calc.expr, calc.key,
                 f"row:{calc.engine_key}" if calc.engine_key else None, calc.key not in _VISIBLE or calc.helper,
                 base=calc.key, dn=_NAMES.get(calc.key), single=True)
    g.head("Model check (keys: see the legend at the bottom)", bold=True)
    helper = g.row + 1   # hidden: each column's bad inputs (scenario and setup), which its check names first
    _put(g.ws, helper, 1, "Model check, helper: the column's inputs that break their rules", font=S.NOTE_FONT)
    g.ws.row_dimensions[helper].hidden = True
    for k in range(g.n + 1):
        L = col_letter(g.col(k))
        _fx(g.ws, helper, g.col(k), ("input_problems" if k == 0 else F.input_problems(g.refs[k]))
            + f"&{L}{g.input_helper}")
        problems = f"{L}{helper}"
        if k == 0:   # the Plan sheet of a tiered baseline shows this check
            g.name("setup_model_check", f"{L}{g.row}")
        if g.tiered[k]:   # the tiered plan's own check (bad tiers, an overflow, an optimum at the search's edge)
            c = _fx(g.ws, g.row, g.col(k), flags.tiered_model_check(g.refs[k], g.blocks[k], problems=problems),
                    wrap=True)
            flags.highlight(g.ws, c.coordinate, "OK")
            continue
        c = _fx(g.ws, g.row, g.col(k), flags.model_check(g.refs[k], keys=True, problems=problems), wrap=True)
        flags.highlight(g.ws, c.coordinate)
        g.flags.append(Check(SHEET, c.coordinate, ("setup", k or "base"), "warnings"))
    g.ws.row_dimensions[g.row].height = 30
    g.row += 2
    g.band("Storage, spares and the total")
    for calc in D.MONEY_CALCS:
        g.figure(calc.key, calc.label, calc.unit, calc.fmt, calc.expr, calc.key, calc.engine_key,
                 base=calc.key, dn=_NAMES.get(calc.key), single=True)


#: live rows of a tiered column's plan beside the ones above: key of its block -> label, unit, format
_TIER_ROWS = {"tiered_optimum_interval_min": ("First tier's interval at the optimum for the stated every (a stated "
                                              "interval_min wins above)", "min", F.MINUTES),
              **{f"tier{i + 1}_interval_min": (f"Tier {i + 1}'s interval = every x the first tier's", "min", F.MINUTES)
                 for i in range(TIER_SLOTS)},
              "mean_restart_min": ("Mean restart (classes weighted)", "min", F.MINUTES)}


def _engine_values(g: _Grid, columns, plans, designs) -> None:
    ws = g.ws
    g.band("Tiered plans: live formulas")
    g.head("Checkpoint tiers", "", "tiers below")
    g.name("setup_checkpoint_tiers", f"D{g.row}")   # `workbook --from` reads each design's "replaced: ..." here
    for k, ((_, su), d) in enumerate(zip(columns, (None,) + tuple(designs))):
        names = " + ".join(str(t.get("name", "?")) for t in su.tiers) or "none (single level)"
        text = names if k == 0 else ("same as the baseline" if d.tiers is None else f"replaced: {names}")
        _put(ws, g.row, g.col(k) - (2 if k else 0), text, wrap=True)
        if k:
            ws.merge_cells(start_row=g.row, start_column=g.col(k) - 2, end_row=g.row, end_column=g.col(k))
    ws.row_dimensions[g.row].height, g.row = 30, g.row + 1
    g.refs[0]["engine_wall_h"] = g.refs[0]["wall_h"] if g.tiered[0] else '""'
    if not any(su.tiers for _, su in columns):
        _put(ws, g.row, 1, "No checkpoint tiers: every figure above is live.", font=S.NOTE_FONT)
        g.row += 2
        return
    for key, (label, unit, fmt) in _TIER_ROWS.items():
        g.head(label + " (tiered model)", unit, "ckptplan plan")
        for k in range(g.n + 1):
            if g.tiered[k] and key in g.blocks[k]:
                _fx(ws, g.row, g.col(k), g.blocks[k][key], fmt)
                g.checks.append(Check(SHEET, f"{col_letter(g.col(k))}{g.row}", ("setup_tiered", k or "base"), key))
        g.row += 1
    _put(ws, g.row, 1, "P(finish by the deadline) of a tiered plan: the engine's tiered Monte Carlo, a value (a "
         "simulation is no formula). Regenerate the workbook after an edit (the status below says when).",
         font=S.NOTE_FONT, wrap=True)
    ws.row_dimensions[g.row].height, g.row = 40, g.row + 1
    g.head("P(finish by the deadline), tiered Monte Carlo (2,000 runs, seed 0), at build time", "share", "ckptplan plan")
    for k, ((_, su), p) in enumerate(zip(columns, plans)):
        if su.tiers:
            value = float(p.figures["p_finish_by_deadline"])
            _put(ws, g.row, g.col(k), "no deadline given" if math.isnan(value) else value, F.PERCENT, wrap=True)
    g.row += 1
    sc, st = columns[0]
    values, classes = scenario_values(sc), list(st.failure_classes.values())
    pairs = [(f.name, g.refs[0][f.name], getattr(st, f.name)) for f in SETUP_FIELDS]
    pairs += [(key, f"used_{key}" if key in D.DERIVED else key, values.get(f.name)) for key, f in F.INPUTS.items()]
    pairs += [(f"tier{i + 1}_{key}",) * 2 + ((st.tiers[i] if i < len(st.tiers) else {}).get(key),)
              for i in range(TIER_SLOTS) for key in TIER_KEYS if _TIER[key][1]]
    pairs += [(f"class{j + 1}_share",) * 2 + (classes[j] if j < len(classes) else None,) for j in range(CLASS_SLOTS)]
    def same(ref: str, v: Any) -> str:   # a derived value (used_*) is computed: equal to 1e-9, not to the last bit
        if v is None:
            return f'{ref}=""'
        if ref.startswith("used_"):
            return f'AND(ISNUMBER({ref}),ABS({ref}-{float(v)!r})<=1E-9*ABS({float(v)!r}))'
        return f'AND(ISNUMBER({ref}),{ref}={float(v)!r})'

    g.head("P(finish by the deadline) at build time: status (the baseline's inputs against those it used)", bold=True)
    _put(ws, g.row + 1, 1, "Engine values status, helper", font=S.NOTE_FONT)
    ws.row_dimensions[g.row + 1].hidden = True
    _fx(ws, g.row + 1, 4, "&".join(f'IF({same(ref, v)},"","{name}, ")' for name, ref, v in pairs))
    h = f"D{g.row + 1}"
    _fx(ws, g.row, 4, f'IF({h}="","up to date","OUT OF DATE: inputs changed since this value was computed: "&'
                      f'LEFT({h},LEN({h})-2)&". Regenerate the workbook.")', wrap=True)
    ws.merge_cells(start_row=g.row, start_column=4, end_row=g.row, end_column=max(7, g.col(g.n)))
    flags.highlight(ws, f"D{g.row}", "up to date")
    g.name("setup_engine_values_status", f"D{g.row}")
    g.row += 3


def _tiers(g: _Grid, st, plan) -> None:
    """The baseline's tiers and failure classes as inputs; per tier the first-order interval and storage cost."""
    t_rows = _tier_table(g, st)
    c_rows, total = _class_table(g, st, t_rows)
    _tier_figures(g, st, plan, t_rows, c_rows, total)


def _tier_table(g: _Grid, st) -> list[int]:
    """The baseline's tiers as input rows (``tier<i>_<key>``); returns their rows."""
    ws = g.ws
    _put(ws, g.row, 1, "Checkpoint tiers (baseline): a save writes tier 1, tier i takes every k-th save",
         font=Font(bold=True))
    S.header(ws, g.row + 1, [S.fmt_unit(h, g.currency) for h, _ in _TIER.values()])
    ws.row_dimensions[g.row + 1].height = 60
    g.row, t_rows = g.row + 2, []
    for i in range(TIER_SLOTS):
        t = dict(st.tiers[i]) if i < len(st.tiers) else {}
        if not isinstance(t.get("survives", ""), str):
            t["survives"] = ", ".join(t["survives"])
        for j, (key, (_, rule)) in enumerate(_TIER.items()):
            ref = f"{col_letter(1 + j)}{g.row}"
            fmt = "@" if rule is None else S.INPUT_WHOLE if rule == "count" else S.INPUT_NUMBER
            _put(ws, g.row, 1 + j, t.get(key), fmt, S.INPUT_FONT, S.INPUT_FILL)
            if rule is not None:
                _validate(ws, ref, rule, f"tier{i + 1}_{key}")
            g.name(f"tier{i + 1}_{key}", ref)
        t_rows.append(g.row)
        g.row += 1
    return t_rows


def _class_table(g: _Grid, st, t_rows: list[int]) -> tuple[list[int], str]:
    """The failure classes as input rows, each with the tier it restores from; returns their rows and the
    formula of their shares' sum."""
    ws = g.ws
    S.header(ws, g.row + 1, ["Failure class (name)", "Share of failures", "Restores from tier"])
    ws.row_dimensions[g.row + 1].height = 30
    g.row, c_rows, names = g.row + 2, [], list(st.failure_classes)
    bare = lambda ref: f'SUBSTITUTE({ref}," ","")'  # noqa: E731
    for j in range(CLASS_SLOTS):
        r = g.row
        _put(ws, r, 1, names[j] if j < len(names) else None, "@", S.INPUT_FONT, S.INPUT_FILL)
        _put(ws, r, 2, st.failure_classes[names[j]] if j < len(names) else None, S.INPUT_NUMBER, S.INPUT_FONT,
             S.INPUT_FILL)
        _validate(ws, f"B{r}", "share", f"class{j + 1}_share")
        g.name(f"class{j + 1}_name", f"A{r}")
        g.name(f"class{j + 1}_share", f"B{r}")
        found = '"none"'   # the first tier, in order, whose survives list names the class (FIND: exact case)
        for i in reversed(range(TIER_SLOTS)):
            found = (f'IF(AND($A${t_rows[i]}<>"",ISNUMBER(FIND(","&{bare(f"A{r}")}&",",","&{bare(f"$C${t_rows[i]}")}'
                     f'&","))),{i + 1},{found})')
        _fx(ws, r, 3, f'IF(A{r}="","",{found})', "0")
        g.checks.append(Check(SHEET, f"C{r}", ("setup_class", j), "recovery_index"))
        c_rows.append(r)
        g.row += 1
    total = "+".join(f'IF(A{r}="",0,B{r})' for r in c_rows)
    return c_rows, total


def _restored_shares(t_rows: list[int], c_rows: list[int], total: str) -> list[str]:
    """Per tier slot, the share of rollbacks restored from it (:func:`ckptplan.engine.tiers.class_rates_per_tier`): a
    class tries the tiers surviving it in order (the tier table's survives column), restoring tier ``i``'s copy fails
    with ``q_i = restore_failure_probability ^ copies`` (blank: 0 and 1), so tier ``i`` restores class ``j`` with
    ``share_j (1 - q_i)`` times the ``q`` of every earlier tier surviving ``j`` (the tiered model's restore outcomes)."""
    bare = lambda ref: f'SUBSTITUTE({ref}," ","")'  # noqa: E731
    p_col, n_col = (col_letter(1 + TIER_KEYS.index(key)) for key in ("restore_failure_probability", "copies"))
    q = [f'{D.either(f"${p_col}${tr}", "0")}^{D.either(f"${n_col}${tr}", "1")}' for tr in t_rows]

    def survives(i: int, cr: int) -> str:
        return (f'AND($A${t_rows[i]}<>"",ISNUMBER(FIND(","&{bare(f"$A${cr}")}&",",","&{bare(f"$C${t_rows[i]}")}'
                f'&",")))')

    out = []
    for i in range(len(t_rows)):
        terms = [f'IF(AND($A${cr}<>"",{survives(i, cr)}),$B${cr}*(1-{q[i]})'
                 + "".join(f"*IF({survives(e, cr)},{q[e]},1)" for e in range(i)) + ",0)" for cr in c_rows]
        out.append(f'({"+".join(terms)})/({total})')
    return out


def _tier_figures(g: _Grid, st, plan, t_rows: list[int], c_rows: list[int], total: str) -> None:
    """Per tier: stall, restore, level cost, share, rate, first-order interval and every, storage cost."""
    ws, x = g.ws, g.refs[0]
    S.header(ws, g.row + 1, ["Tier figures (baseline)", None, None, "Stall (min)", "Restore (min)",
                             "Level cost C (min)", "Share restored here", "Rollback rate (per min)",
                             "First-order interval (min)",
                             "First-order every", f"Storage cost ({g.currency})", "Interval of the plan (min)"])
    ws.row_dimensions[g.row + 1].height = 45
    g.row += 2
    M, W, s, size, n = (x[k] for k in ("job_mtbf_min", "async_write_min", "async_slowdown_fraction",
                                       "checkpoint_size_gb", "writers_used"))
    T_row, f_rows = g.row + TIER_SLOTS, []
    shares = _restored_shares(t_rows, c_rows, total)   # a sum cell by cell (the cached-value evaluator has no ranges)
    G_all = "+".join(f"IF(ISNUMBER(G{g.row + k}),G{g.row + k},0)" for k in range(TIER_SLOTS))
    for i, tr in enumerate(t_rows):
        r, c = g.row, (lambda key: f"${col_letter(1 + TIER_KEYS.index(key))}${tr}")
        wper, wagg = c("write_gb_s_per_writer"), c("aggregate_write_gb_s")
        rp, ra = D.either(c("read_gb_s_per_writer"), wper), D.either(c("aggregate_read_gb_s"), wagg)
        pe, na = f"J{r - 1}", '"n/a: give it, or parameters_b and a bandwidth"'
        _put(ws, r, 1, f"Tier {i + 1}", font=Font(bold=True))
        cells = {   # column -> formula; the Check key; the number format
            4: (D.either(c("checkpoint_stall_min"), f'IF(AND({size}<>"",OR({wper}<>"",{wagg}<>"")),'
                                                   f'{size}/{D.bandwidth(wper, wagg, n)}/60,{na})'),
                "checkpoint_stall_min", F.MINUTES),
            5: (D.either(c("restore_min"), f'IF(AND({size}<>"",OR({rp}<>"",{ra}<>"")),{size}/{D.bandwidth(rp, ra, n)}/60,{na})'),
                "restore_min", F.MINUTES),
            6: (f"D{r}" + (f"+{W}*{s}" if i == 0 else ""), "level_cost_min", F.MINUTES),
            7: (shares[i], "share", "0.000000"),
            # the first order's rollbacks to this tier; the last tier's also those whose every restore failed
            8: (f"(G{r}" + (f"+1-({G_all})" if i + 1 == TIER_SLOTS else
                            f'+IF($A${t_rows[i + 1]}="",1-({G_all}),0)') + f")/{M}", "rate_per_min", "0.000000"),
            9: (f'IF(H{r}=0,"inf: no class restores from it",SQRT(2*F{r}/H{r}))', "first_order_interval_min",
                F.MINUTES),
            10: ("1" if i == 0 else f"{pe}*IF(ISNUMBER(I{r}),MAX(1,MIN(MAX(1,INT(1000/{pe})),INT(I{r}/({pe}*$D${T_row})"
                 f"+0.5))),MAX(1,INT(1000/{pe})))", "first_order_every", "0"),
            11: (f'IF({size}="",0,{size}*{D.either(c("retention"), "1")}*{D.either(c("copies"), "1")}*IF(ISNUMBER('
                 f'{x["engine_wall_h"]}),{x["engine_wall_h"]},{x["wall_h"]})/{HOURS_PER_BILLING_MONTH!r}*'
                 f'{D.either(c("price_per_gb_month"), "0")})', "storage_cost", F.MONEY)}
        for col, (expr, key, fmt) in cells.items():
            _fx(ws, r, col, f'IF($A${tr}="","",{expr})', fmt)
            g.checks.append(Check(SHEET, f"{col_letter(col)}{r}", ("setup_tier", i), key))
        if g.tiered[0]:   # the baseline's tiered plan (live, hidden columns to the right)
            _fx(ws, r, 12, g.blocks[0][f"tier{i + 1}_interval_min"], F.MINUTES)
            g.checks.append(Check(SHEET, f"L{r}", ("setup_tiered", "base"), f"tier{i + 1}_interval_min"))
        f_rows.append(r)
        g.row += 1
    g.head("First-order design: interval T (min) and overhead (share of work)", cite="Benoit et al. 2017")
    _fx(ws, T_row, 4, f'IF($A${t_rows[0]}="","",MAX(I{f_rows[0]},{W}*(1-{s})))', F.MINUTES)
    over = "+".join(f'IF(OR($A${tr}="",H{fr}=0),0,SQRT(2*F{fr}*H{fr}))' for tr, fr in zip(t_rows, f_rows))
    _fx(ws, T_row, 5, f'IF($A${t_rows[0]}="","",{over})', F.PERCENT)
    g.checks += [Check(SHEET, f"D{T_row}", ("setup_first_order",), "T"),
                 Check(SHEET, f"E{T_row}", ("setup_first_order",), "first_order_overhead")]
    g.name("setup_first_order_T", f"D{T_row}")
    probs = [f'IF(AND({total}<>0,ABS({total}-1)>1E-9),"the class shares must sum to 1; ","")',
             f'IF(AND($A${t_rows[0]}<>"",{total}=0),"tiers need failure classes; ","")']
    probs += [f'IF(C{cr}="none","class {j + 1} is survived by no tier; ","")' for j, cr in enumerate(c_rows)]
    _put(ws, T_row + 1, 1, "Tier check, helper", font=S.NOTE_FONT)
    _fx(ws, T_row + 1, 4, "&".join(probs))
    ws.row_dimensions[T_row + 1].hidden = True
    g.name("setup_tier_problems", f"D{T_row + 1}")
    g.row = T_row + 2


_NOTES = (
        "Names: setup_<field> (the design's inputs), setup_link_<input> (the rows linking the Inputs sheet), "
        "setup_checkpoint_tiers, setup_<figure> (the baseline's figures, the Plan sheet's: "
        "setup_checkpoint_size_gb, setup_restart_pipeline_min, setup_wall_h, setup_total_cost ...), tier<i>_<key>, "
        "class<j>_name, class<j>_share.",
        "Designs: blank = the baseline's value, 'set to' a value, 'x baseline' a factor; a design that sets a stall, "
        "write or restart states it. Designs that replace the tiers are named in the 'Checkpoint tiers' row: the "
        "tier table is the baseline's; a design's own tiers and failure classes are in the grouped rows under it "
        "(setup_design<k>_tier<i>_<key>, setup_design<k>_class<j>_name / _share).",
        "Spare pool (Erlang's loss system: the job does not fail while it waits for a node): the wait for a node = "
        "(1 - B) x swap + B x 60 x repair h / (spares + 1), B = Erlang B(spares, nodes in repair), the recursion "
        "B(k) = mu B(k-1) / (k + mu B(k-1)) over up to {N} spares in hidden columns to the right (expand with +).",
        "First-order tier intervals (Benoit et al., IEEE TC 66(7), 2017): T_l = SQRT(2 C_l / lambda_l), C_1 = "
        "stall_1 + W x slowdown, C_l = stall_l; lambda_l = (share of failures restored from tier l) / job MTBF. "
        "Restores that fail are in it as in the tiered plan: a class tries the tiers surviving it in order, restoring "
        "tier i fails with q_i = restore_failure_probability ^ copies, so tier l restores a class with its share x "
        "(1 - q_l) x the q of every earlier tier surviving it; the rollbacks whose every restore failed (1 - the "
        "shares' sum) go back to the job's start, counted on the last tier's rate (the engine's first-order guess: "
        "they lose all progress, more than the half period the first order counts; the tiered plan prices that "
        "exactly). Tier storage cost uses the tiered plan's wall hours (live).",
        "Model check keys:")
