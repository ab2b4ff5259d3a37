"""The "Storage & recovery" sheet: where the stall and the restart come from, and what storage and spares cost.

Columns: A label, B unit, C the defined name or the engine function a row mirrors, D the baseline, then
per design "set to", "x baseline", value (blank = the baseline's, as on the Compare sheet). Blocks:
the setup inputs (one row per :data:`ckptplan.engine.fields.SETUP_FIELDS` field with its rule as data
validation, named ``setup_<field>``), the scenario inputs as links to the Inputs sheet and
``setup_stated_<field>`` (the Inputs stall, write or restart wins over the derived one); the derived
figures, live and each the engine's formula (size, bandwidths, stall, write, restore, spare pool,
restart pipeline), the single-level plan at them (:data:`workbook.formulas.CALCS`: the exact optimum
by the Plan sheet's Newton steps, or the Inputs interval) and the money, baseline figures named
``setup_<figure>``; tiered plans' engine values (build time, with an "up to date" check); the
baseline's tiers (``tier<i>_<key>``) and failure classes (``class<j>_name``/``_share``) with the
first-order intervals of Benoit et al. (IEEE TC 66(7), 2017); hidden columns from P: the spare pool's
``POISSON.DIST(n, mu, FALSE)`` and waits for ``n = 0..N`` (:func:`poisson_rows`), summed by SUMPRODUCT.

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
from openpyxl.utils import get_column_letter as col_letter
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.designs import default_designs, scenario_values
from ..engine.errors import InputError
from ..engine.fields import RULES, SETUP_FIELDS
from ..engine.setup import DERIVED, TIER_KEYS, RecoverySetup, plan_setup
from ..engine.storage import HOURS_PER_BILLING_MONTH
from . import flags, formulas as F, style as S
from .manifest import Built, Check

__all__ = ["CLASS_SLOTS", "DESIGN_SLOTS", "MIN_POISSON_ROWS", "SHEET", "TIER_SLOTS", "poisson_rows", "sheet_checks",
           "storage_sheet"]

SHEET, MIN_POISSON_ROWS = "Storage & recovery", 100
TIER_SLOTS, CLASS_SLOTS, DESIGN_SLOTS = 3, 4, 4  # the helper columns start after the last design's
_TAIL_LOG = 2.0 * math.log(1e16)   # the engine's window: each Poisson tail outside it holds < 1e-16
# helper columns to the right of every design column (4 + 3 per design), with one spare column; rows (n = 0) from 8
_HELPER_COL, _FIRST, _WIDTH_A = 4 + 3 * 4 + 2, 8, 72
_REGISTRY: "WeakKeyDictionary[Workbook, tuple[list[Check], list[Check]]]" = WeakKeyDictionary()
_VISIBLE = {"effective_stall_min", "exact_interval_min", "chosen_interval_min", "waste_fraction", "expected_failures",
            "wall_h", "useful_h", "save_h", "restart_h", "rework_h", "gpus", "total_gpu_hours", "total_cost", "goodput",
            "p_finish_by_deadline"}
_CALC_NAMES = {"total_cost": ("Compute cost (job GPU-hours x price)", "setup_compute_cost"), "total_gpu_hours": (
    "GPU-hours of the job (spares below)", "setup_job_gpu_hours")}
_PARTS = ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min", "warmup_min")
#: the tier table's columns (TIER_KEYS order): header, rule (None: text)
_TIER = dict(zip(TIER_KEYS, (
    ("Tier name", None), ("Every k-th save", "count"), ("Survives (classes, comma-separated)", None),
    ("Stall, empty = derived (min)", "nonnegative"), ("Restore, empty = derived (min)", "nonnegative"),
    ("Write per writer (GB/s)", "positive"), ("Write aggregate (GB/s)", "positive"),
    ("Read per reader (GB/s)", "positive"), ("Read aggregate (GB/s)", "positive"), ("Checkpoints kept", "count"),
    ("Replicas of each", "count"), ("Price per GB-month (money)", "nonnegative"))))


def sheet_checks(wb: Workbook) -> tuple[list[Check], list[Check]]:
    """(checks, model-check flags) of the Storage & recovery sheet of ``wb`` (built in this process)."""
    return _REGISTRY.get(wb, ([], []))


def poisson_rows(mu_max: float) -> int:
    """Rows ``n = 0..N`` of the spare pool's helper: ``N`` = the engine's window end for ``4 mu_max`` (>= 100)."""
    mu = 4.0 * max(mu_max, 0.0)
    hi = math.ceil(mu + (_TAIL_LOG / 3.0 + math.sqrt(_TAIL_LOG ** 2 / 9.0 + 4.0 * _TAIL_LOG * mu)) / 2.0)
    return max(MIN_POISSON_ROWS, hi) + 1


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


def _bw(per: str, agg: str, n: str) -> str:
    """MIN(per x writers, aggregate), a blank side being no limit (storage.effective_bandwidth_gb_s)."""
    return f'IF({per}="",{agg},IF({agg}="",{per}*{n},MIN({per}*{n},{agg})))'


def _either(a: str, b: str) -> str:
    return f'IF({a}="",{b},{a})'


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
               check: str | None = None, hidden: bool = False, base: str | None = None, dn: str | None = None) -> None:
        """One derived row: ``expr(refs)`` in every column (``base``: the baseline's formula instead)."""
        r = self.row
        self.head(label, unit, cite)
        for k in range(self.n + 1):
            letter = col_letter(self.col(k))
            _fx(self.ws, r, self.col(k), base if k == 0 and base else expr(self.refs[k]), fmt)
            self.refs[k][key] = f"${letter}${r}"
            if check:
                self.checks.append(Check(SHEET, f"{letter}{r}", ("setup", k or "base"), check))
        if hidden:
            self.ws.row_dimensions[r].outlineLevel, self.ws.row_dimensions[r].hidden = 1, True
        else:
            self.name(dn or f"setup_{key}", f"D{r}")
        self.row += 1


def storage_sheet(wb: Workbook, scenario, setup, designs, built: Built) -> None:
    """Write the sheet for ``setup`` (None = none given) and ``designs`` (the Compare defaults = none)."""
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
    plans = [plan_setup(sc, su) for sc, su in columns]   # refuses what the engine refuses, naming the field
    mu_max = max([0.0] + [(1.0 if su.replacement_share is None else su.replacement_share) / p.figures["job_mtbf_h"]
                          * su.repair_h for (_, su), p in zip(columns, plans) if su.repair_h is not None])
    n_rows = poisson_rows(mu_max)
    ws = wb.create_sheet(SHEET)
    g = _Grid(wb, ws, len(designs), scenario.currency)
    S.title(ws, "Storage & recovery: where the stall and the restart come from, and what they cost",
            "Checkpoint size and bandwidths give the save stall, background write and restore; the restart parts "
            "and the spare pool give the restart; the plan, storage and spare money follow "
            "(engine.setup.plan_setup). Blue cells are inputs; blank = not given.", 7)
    _inputs(g, st, designs)
    _derived(g, n_rows)
    _plan(g)
    _engine_values(g, columns, plans, designs)
    _tiers(g, st, plans[0])
    for i, text in enumerate([t.format(N=n_rows - 1, mu=mu_max) for t in _NOTES] + flags.legend()):
        S.note(ws, g.row + 1 + i, text, 7)
    for col, width in zip("ABCDEFGHIJKLMNOP", (_WIDTH_A, 16, 30, 16, 10, 10, 16, 10, 10, 16, 10, 10, 16, 10, 10, 16)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "E8"
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
    S.header(ws, 7, ["Input or figure", "Unit", "Name / engine function", "Baseline"]
             + ["set to", "x baseline", "value"] * len(designs))

    def change_row(key, dkey, label, unit, rule, integer, value=None, link=False, default=None):
        r, fmt = g.row, (S.INPUT_WHOLE if integer else S.INPUT_NUMBER)
        g.head(label, unit, "Inputs: " + key if link else f"setup_{key}")
        if link:
            _fx(ws, r, 4, f'IF({key}="","",{key})', fmt)
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
                _validate(ws, s_, rule, f"{key} set to")
                _validate(ws, t_, "positive", f"{key} x baseline")
                _fx(ws, r, v, f'IF({s_}<>"",{s_},IF($D${r}="","",IF({t_}<>"",$D${r}*{t_},$D${r})))', fmt)
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
    for name in DERIVED:
        r = g.row
        g.head(f"{name} on Inputs is stated (measured): it wins over the derived one", "yes/no",
               f"setup_stated_{name}")
        _put(ws, r, 4, "yes" if name in st.stated else "no", None, S.INPUT_FONT, S.INPUT_FILL)
        _validate(ws, f"D{r}", None, f"setup_stated_{name}")
        g.name(f"setup_stated_{name}", f"D{r}")
        g.refs[0][f"stated_{name}"] = f"$D${r}"
        for k in range(1, g.n + 1):   # a design that changes it states it (Design.apply_setup)
            v, src = g.col(k), rows[name]
            _fx(ws, r, v, f'IF(OR({col_letter(v - 2)}{src}<>"",{col_letter(v - 1)}{src}<>""),"yes",$D${r})')
            g.refs[k][f"stated_{name}"] = f"${col_letter(v)}${r}"
        g.row += 1
    for k, d in enumerate(designs, start=1):   # what changes: the change cells, and tiers a design replaces
        s_, t_ = col_letter(g.col(k) - 2), col_letter(g.col(k) - 1)
        _fx(ws, 6, g.col(k) - 2, "&".join(['"; tiers replaced"'] * (d.tiers is not None) + [
            f'IF({s_}{r}<>"","; {key} = "&{s_}{r},IF({t_}{r}<>"","; {key} x"&{t_}{r},""))' for key, r in rows.items()]))
        _fx(ws, 5, g.col(k) - 2, f'IF({s_}6="","no change",MID({s_}6,3,2000))', wrap=True).font = S.NOTE_FONT
    r, helper = g.row, g.row + 1
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
    parts += [f'IF(OR({x[f"stated_{n}"]}="yes",{x[f"stated_{n}"]}="no"),"","stated_{n} must be yes or no; ")'
              for n in DERIVED]
    parts += [f'IF(AND({x["spares_d"]}>0,{x["repair_h"]}=""),"spares needs repair_h; ","")',
              f'IF(AND({x["parameters_b"]}="",OR({x["write_gb_s_per_writer"]}<>"",{x["aggregate_write_gb_s"]}<>"",'
              f'{x["d2h_gb_s_per_writer"]}<>"")),"a bandwidth needs parameters_b; ","")']
    return "&".join(parts + (["setup_tier_problems"] if k == 0 else []))


_READ = _bw(_either("{read_gb_s_per_writer}", "{write_gb_s_per_writer}"),
            _either("{aggregate_read_gb_s}", "{aggregate_write_gb_s}"), "{writers_used}")
#: derived rows: key, label, unit, format, formula ({ref} = this column's cell), engine function, Check key
_DERIVED = (
    ("checkpoint_size_gb", "Checkpoint size = parameters x bytes per parameter + extra state", "GB", "#,##0.0",
     'IF({parameters_b}="","",{parameters_b}*{bytes_per_parameter_d}+{extra_state_gb_d})',
     "storage.checkpoint_size_gb", "checkpoint_size_gb"),
    ("writers_used", "Writers (empty = one per node)", "writers", "#,##0", _either("{writers}", "{nodes}"),
     "setup: writers or nodes", "writers"),
    ("write_bandwidth_gb_s", "Write bandwidth = MIN(per writer x writers, aggregate)", "GB/s", "#,##0.00",
     'IF(OR({checkpoint_size_gb}="",AND({write_gb_s_per_writer}="",{aggregate_write_gb_s}="")),"",'
     + _bw("{write_gb_s_per_writer}", "{aggregate_write_gb_s}", "{writers_used}") + ")",
     "storage.effective_bandwidth_gb_s", "write_bandwidth_gb_s"),
    ("derived_checkpoint_stall_min", "Derived stall: size / bandwidth; async: size / (device-to-host x writers)",
     "min", F.MINUTES, 'IF({write_bandwidth_gb_s}="","",IF({d2h_gb_s_per_writer}="",{checkpoint_size_gb}/'
     '{write_bandwidth_gb_s}/60,{checkpoint_size_gb}/({d2h_gb_s_per_writer}*{writers_used})/60))',
     "storage.save_times", "derived_checkpoint_stall_min"),
    ("derived_async_write_min", "Derived background write: async size / bandwidth, sync 0", "min", F.MINUTES,
     'IF({write_bandwidth_gb_s}="","",IF({d2h_gb_s_per_writer}="",0,{checkpoint_size_gb}/{write_bandwidth_gb_s}/60))',
     "storage.save_times", "derived_async_write_min"),
    ("read_bandwidth_gb_s", "Read bandwidth (blank read figures = the write figures)", "GB/s", "#,##0.00",
     'IF({write_bandwidth_gb_s}="","",' + _READ + ")", "storage.restore_time_min", "read_bandwidth_gb_s"),
    ("derived_restore_min", "Derived restore = size / read bandwidth", "min", F.MINUTES,
     'IF({read_bandwidth_gb_s}="","",{checkpoint_size_gb}/{read_bandwidth_gb_s}/60)', "storage.restore_time_min",
     "derived_restore_min"),
    ("parts_given", "Restart parts given (any part, or repair_h)", "yes/no", "General",
     "IF(OR(" + ",".join(f'{{{p}}}<>""' for p in _PARTS + ("init_per_1000_nodes_min", "repair_h")) + '),"yes","no")',
     "setup._restart_parts", None),
    ("mean_in_repair", "Spare pool: nodes in repair mu = replacement share / job MTBF x repair_h", "nodes", "0.0000",
     'IF({repair_h}="","",{replacement_share_d}/{job_mtbf_h}*{repair_h})', "recovery (Palm's theorem)",
     "mean_in_repair"),
    ("spare_free_probability", "P(a spare is free) = POISSON.DIST(S - 1, mu, TRUE); 0 without spares", "share",
     "0.000000", 'IF({repair_h}="","",IF({spares_d}=0,0,IF({mean_in_repair}=0,1,'
     '_xlfn.POISSON.DIST({spares_d}-1,{mean_in_repair},TRUE))))', "recovery.spare_free_probability",
     "spare_free_probability"),
    ("pool_reallocation_min", "Reallocation from the pool = SUMPRODUCT(P(N = n), wait(n)) over n = 0..N", "min",
     F.MINUTES, 'IF({repair_h}="","",SUMPRODUCT({pmf},{wait})/SUM({pmf}))', "recovery.expected_reallocation_min",
     "pool_reallocation_min"),
    ("poisson_tail", "Poisson mass beyond N (must stay below 1e-12, else regenerate)", "share", "0.0E+00",
     'IF({repair_h}="","",IF({mean_in_repair}=0,0,1-_xlfn.POISSON.DIST({N},{mean_in_repair},TRUE)))',
     "helper columns P on", None),
    *((f"part_{p}", f"Restart part: {label}", "min", F.MINUTES, f'IF({{parts_given}}="yes",{expr},"")',
       "recovery.communicator_init_min" if p == "init_min" else "recovery.RESTART_PHASES", f"part:{p}")
      for p, label, expr in (
          ("detection_min", "detection", "{detection_min_d}"),
          ("reallocation_min", "reallocation (stated, else replacement share x the pool's, else 0)",
           _either("{reallocation_min}", 'IF({repair_h}<>"",{replacement_share_d}*{pool_reallocation_min},0)')),
          ("startup_min", "start-up", "{startup_min_d}"),
          ("init_min", "communicator init = fixed + per 1,000 nodes x nodes / 1,000",
           "{init_min_d}+{init_per_1000_nodes_min_d}*{nodes}/1000"),
          ("load_min", "checkpoint load (stated, else the derived restore)",
           _either("{load_min}", _either("{derived_restore_min}", "0"))),
          ("warmup_min", "warm-up", "{warmup_min_d}"))),
    ("restart_pipeline_min", "Restart pipeline = the sum of the parts", "min", F.MINUTES,
     'IF({parts_given}="yes",' + "+".join(f"{{part_{p}}}" for p in _PARTS) + ',"")', "recovery.restart_pipeline_min",
     "pipeline_min"),
    *((f"used_{n}", f"{label} the plan uses: stated, else derived, else the Inputs sheet's", "min", F.MINUTES,
       f'IF(AND({{stated_{n}}}<>"yes",{{{src}}}<>""),{{{src}}},{{{n}}})', "setup.plan_setup", f"used:{n}")
      for n, src, label in (("checkpoint_stall_min", "derived_checkpoint_stall_min", "Stall"),
                            ("async_write_min", "derived_async_write_min", "Background write"),
                            ("restart_min", "restart_pipeline_min", "Restart"))))


def _derived(g: _Grid, n_rows: int) -> None:
    g.band("Derived from the setup (live formulas)",
           "Blank = not given or not derivable. A stated Inputs value wins over the derived one.")
    rate, last = F.CALC_BY_KEY["job_failure_rate_per_h"], _FIRST + n_rows - 1
    g.figure("job_failure_rate_per_h", rate.label, rate.unit, rate.fmt, rate.expr, "Plan: job_failure_rate_per_h",
             hidden=True, base="job_failure_rate_per_h")
    g.figure("job_mtbf_h", "Job MTBF (the Plan sheet's; a design's own)", "h", F.HOURS,
             F.CALC_BY_KEY["job_mtbf_h"].expr, "Plan: job_mtbf_h", "row:job_mtbf_h", base="job_mtbf_h")
    for k in range(g.n + 1):   # this column's helper (below)
        p, w = col_letter(_HELPER_COL + 1 + 2 * k), col_letter(_HELPER_COL + 2 + 2 * k)
        g.refs[k].update(pmf=f"${p}${_FIRST}:${p}${last}", wait=f"${w}${_FIRST}:${w}${last}", N=str(n_rows - 1))
    for key, label, unit, fmt, template, cite, check in _DERIVED:
        g.figure(key, label, unit, fmt, (lambda t: lambda x: t.format_map(x))(template), cite, check)
    ws = g.ws   # the helper, columns P on (grouped, hidden): n = 0..N; per column P(N = n) and the wait given n
    S.header(ws, 7, ["n"] + [h for k in range(g.n + 1) for h in (f"P(N=n), {col_letter(g.col(k))}", "wait(n), min")],
             col=_HELPER_COL)
    for i in range(n_rows):
        r, n = _FIRST + i, f"${col_letter(_HELPER_COL)}{_FIRST + i}"
        _put(ws, r, _HELPER_COL, i)
        for k, x in enumerate(g.refs):
            wait = f'60*{x["repair_h"]}/({n}+1)'
            _fx(ws, r, _HELPER_COL + 1 + 2 * k, f'IF({x["repair_h"]}="","",IF({x["mean_in_repair"]}=0,IF({n}=0,1,0),'
                                                f'_xlfn.POISSON.DIST({n},{x["mean_in_repair"]},FALSE)))', "0.0E+00")
            _fx(ws, r, _HELPER_COL + 2 + 2 * k, f'IF({x["repair_h"]}="","",IF({n}<{x["spares_d"]},'
                                                f'MIN({x["swap_min_d"]},{wait}),{wait}))', F.MINUTES)
    for c in range(_HELPER_COL, _HELPER_COL + 3 + 2 * g.n):
        ws.column_dimensions[col_letter(c)].outlineLevel, ws.column_dimensions[col_letter(c)].hidden = 1, True


def _plan(g: _Grid) -> None:
    g.band("Single-level plan at the stall and restart above (the Plan sheet's formulas)",
           "With checkpoint tiers, the engine's tiered figures (values, below) replace these.")
    for k in range(g.n + 1):
        g.refs[k].update({name: g.refs[k][f"used_{name}"] for name in DERIVED})
    for calc in F.CALCS:
        if calc.key not in g.refs[0]:
            label, dn = _CALC_NAMES.get(calc.key, (calc.label, None))
            g.figure(calc.key, label, calc.unit, calc.fmt, calc.expr, "formulas.CALCS",
                     f"row:{calc.engine_key}" if calc.engine_key else None, calc.key not in _VISIBLE, dn=dn)
    g.head("Model check (keys: see the legend at the bottom)", bold=True)
    for k in range(g.n + 1):
        c = _fx(g.ws, g.row, g.col(k), flags.model_check(g.refs[k], keys=True), wrap=True)
        flags.highlight(g.ws, c.coordinate)
        g.flags.append(Check(SHEET, c.coordinate, ("setup", k or "base"), "warnings"))
    g.ws.row_dimensions[g.row].height = 30
    g.row += 1
    g.band("Storage, spares and the total (setup.plan_setup)")
    for key, label, unit, fmt, template, cite, check in _MONEY:
        g.figure(key, label, unit, fmt, (lambda t: lambda x: f'IF(ISNUMBER({x["wall_h"]}),{t.format_map(x)},'
                                         f'{F.NEVER})')(template), cite, check, dn=f"setup_{check or key}")


_MONEY = (
    ("billing_months", "Billing months = wall hours / 730", "months", "0.000",
     f"{{wall_h}}/{HOURS_PER_BILLING_MONTH!r}", "storage.months_from_hours", None),
    ("storage_cost", "Storage = size x retention x months x price per GB-month", "money", F.MONEY,
     'IF({checkpoint_size_gb}="",0,{checkpoint_size_gb}*{retention_d}*1*{billing_months}*{price_per_gb_month_d})',
     "storage.storage_cost", "storage_cost"),
    ("spare_gpu_hours", "Spare GPU-hours = spares x GPUs per node x wall hours", "GPU-h", F.GPU_HOURS,
     "{spares_d}*{gpus_per_node}*{wall_h}", "setup.plan_setup", "spare_gpu_hours"),
    ("all_gpu_hours", "GPU-hours, job and spares", "GPU-h", F.GPU_HOURS, "{total_gpu_hours}+{spare_gpu_hours}",
     "setup.plan_setup", "total_gpu_hours"),
    ("spare_cost", "Spare cost = spare GPU-hours x price", "money", F.MONEY, "{spare_gpu_hours}*{price_per_gpu_hour}",
     "setup.plan_setup", "spare_cost"),
    ("all_cost", "Total cost = compute + storage + spares", "money", F.MONEY,
     "{useful_cost}+{save_cost}+{rework_cost}+{restart_cost}+{storage_cost}+{spare_cost}", "setup.plan_setup",
     "total_cost"),
    ("all_cost_per_useful_gpu_hour", "Cost per useful GPU-hour = total / (GPUs x useful hours)", "money/GPU-h",
     "#,##0.0000", "{all_cost}/({gpus}*{useful_training_h})", "setup.plan_setup", "cost_per_useful_gpu_hour"))


_ENGINE_ROWS = (
    ("interval_min", "First tier's compute interval (numeric optimum)", "min", F.MINUTES),
    ("tier_intervals", "Every tier's interval", "", None), ("waste_fraction", "Waste", "share", F.PERCENT),
    ("wall_h", "Expected wall time", "h", F.HOURS), ("restart_min", "Mean restart (classes weighted)", "min", F.MINUTES),
    ("total_gpu_hours", "GPU-hours, job and spares", "GPU-h", F.GPU_HOURS), ("storage_cost", "Storage cost, all "
     "tiers", "money", F.MONEY), ("spare_cost", "Spare cost", "money", F.MONEY), ("total_cost", "Total cost", "money",
     F.MONEY), ("cost_per_useful_gpu_hour", "Cost per useful GPU-hour", "money/GPU-h", "#,##0.0000"),
    ("p_finish_by_deadline", "P(finish by the deadline), tiered Monte Carlo (2,000 runs, seed 0)", "share", F.PERCENT))


def _engine_values(g: _Grid, columns, plans, designs) -> None:
    ws = g.ws
    g.band("Engine, at build time: tiered plans (values, not formulas)")
    g.head("Checkpoint tiers", "", "setup.tiers")
    for k, ((_, su), d) in enumerate(zip(columns, (None,) + tuple(designs))):
        names = " + ".join(str(t.get("name", "?")) for t in su.tiers) or "none (single level)"
        text = names if k == 0 else ("same as the baseline" if d.tiers is None else f"replaced: {names}")
        _put(ws, g.row, g.col(k) - (2 if k else 0), text, wrap=True)
        if k:
            ws.merge_cells(start_row=g.row, start_column=g.col(k) - 2, end_row=g.row, end_column=g.col(k))
    ws.row_dimensions[g.row].height, g.row = 30, g.row + 1
    g.refs[0]["engine_wall_h"] = '""'
    if not any(su.tiers for _, su in columns):
        _put(ws, g.row, 1, "No checkpoint tiers: every figure above is live.", font=S.NOTE_FONT)
        g.row += 2
        return
    _put(ws, g.row, 1, "The tiered exact expectation, its numeric optimum and P(finish by the deadline) need the "
         "engine: regenerate the workbook after changing inputs.", font=S.NOTE_FONT)
    g.row += 1
    for key, label, unit, fmt in _ENGINE_ROWS:
        g.head(label + " (engine, at build time)", unit, "setup.plan_setup")
        for k, ((_, su), p) in enumerate(zip(columns, plans)):
            if not su.tiers:
                value = "single level: live above" if key == "interval_min" else None
            elif key == "tier_intervals":
                value = ", ".join(f"{t['name']} {t['interval_min']:.1f} min" for t in p.tiers)
            else:
                value = float(p.figures[key])
                value = "no deadline given" if math.isnan(value) else value
            _put(ws, g.row, g.col(k), value, fmt, wrap=True)
            ws.row_dimensions[g.row].height = 42 if key == "tier_intervals" else None
        if key == "wall_h":
            g.refs[0]["engine_wall_h"] = f"$D${g.row}"
        g.row += 1
    sc, st = columns[0]
    values, classes = scenario_values(sc), list(st.failure_classes.values())
    pairs = [(f.name, g.refs[0][f.name], getattr(st, f.name)) for f in SETUP_FIELDS]
    pairs += [(key, key, values.get(f.name)) for key, f in F.INPUTS.items()]
    pairs += [(f"tier{i + 1}_{key}",) * 2 + ((st.tiers[i] if i < len(st.tiers) else {}).get(key),)
              for i in range(TIER_SLOTS) for key in TIER_KEYS if _TIER[key][1]]
    pairs += [(f"class{j + 1}_share",) * 2 + (classes[j] if j < len(classes) else None,) for j in range(CLASS_SLOTS)]
    same = lambda ref, v: f'AND(ISNUMBER({ref}),{ref}={float(v)!r})' if v is not None else f'{ref}=""'  # noqa: E731
    g.head("Engine values: status (the baseline's inputs against those the engine used)", bold=True)
    _put(ws, g.row + 1, 1, "Engine values status, helper", font=S.NOTE_FONT)
    ws.row_dimensions[g.row + 1].hidden = True
    _fx(ws, g.row + 1, 4, "&".join(f'IF({same(ref, v)},"","{name}, ")' for name, ref, v in pairs))
    h = f"D{g.row + 1}"
    _fx(ws, g.row, 4, f'IF({h}="","up to date","OUT OF DATE: inputs changed since these values were computed: "&'
                      f'LEFT({h},LEN({h})-2)&". Regenerate the workbook.")', wrap=True)
    ws.merge_cells(start_row=g.row, start_column=4, end_row=g.row, end_column=max(7, g.col(g.n)))
    flags.highlight(ws, f"D{g.row}", "up to date")
    g.name("setup_engine_values_status", f"D{g.row}")
    g.row += 3


def _tiers(g: _Grid, st, plan) -> None:
    """The baseline's tiers and failure classes as inputs; per tier the first-order interval and storage cost."""
    ws, x = g.ws, g.refs[0]
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
    S.header(ws, g.row + 1, ["Tier figures (baseline)", None, None, "Stall (min)", "Restore (min)",
                             "Level cost C (min)", "Share restored here", "Rate (per min)", "First-order interval (min)",
                             "First-order every", f"Storage cost ({g.currency})", "Engine interval (min)"])
    ws.row_dimensions[g.row + 1].height = 45
    g.row += 2
    M, W, s, size, n = (x[k] for k in ("job_mtbf_min", "async_write_min", "async_slowdown_fraction",
                                       "checkpoint_size_gb", "writers_used"))
    T_row, f_rows = g.row + TIER_SLOTS, []
    for i, tr in enumerate(t_rows):
        r, c = g.row, (lambda key: f"${col_letter(1 + TIER_KEYS.index(key))}${tr}")
        wper, wagg = c("write_gb_s_per_writer"), c("aggregate_write_gb_s")
        rp, ra = _either(c("read_gb_s_per_writer"), wper), _either(c("aggregate_read_gb_s"), wagg)
        pe, na = f"J{r - 1}", '"n/a: give it, or parameters_b and a bandwidth"'
        _put(ws, r, 1, f"Tier {i + 1}", font=Font(bold=True))
        cells = {   # column -> formula; the Check key; the number format
            4: (_either(c("checkpoint_stall_min"), f'IF(AND({size}<>"",OR({wper}<>"",{wagg}<>"")),'
                                                   f'{size}/{_bw(wper, wagg, n)}/60,{na})'),
                "checkpoint_stall_min", F.MINUTES),
            5: (_either(c("restore_min"), f'IF(AND({size}<>"",OR({rp}<>"",{ra}<>"")),{size}/{_bw(rp, ra, n)}/60,{na})'),
                "restore_min", F.MINUTES),
            6: (f"D{r}" + (f"+{W}*{s}" if i == 0 else ""), "level_cost_min", F.MINUTES),
            7: (f'({"+".join(f"IF($C${cr}={i + 1},$B${cr},0)" for cr in c_rows)})/({total})', "share", "0.000000"),
            8: (f"G{r}/{M}", "rate_per_min", "0.000000"),
            9: (f'IF(H{r}=0,"inf: no class restores from it",SQRT(2*F{r}/H{r}))', "first_order_interval_min",
                F.MINUTES),
            10: ("1" if i == 0 else f"{pe}*IF(ISNUMBER(I{r}),MAX(1,MIN(MAX(1,INT(1000/{pe})),INT(I{r}/({pe}*$D${T_row})"
                 f"+0.5))),MAX(1,INT(1000/{pe})))", "first_order_every", "0"),
            11: (f'IF({size}="",0,{size}*{_either(c("retention"), "1")}*{_either(c("copies"), "1")}*IF(ISNUMBER('
                 f'{x["engine_wall_h"]}),{x["engine_wall_h"]},{x["wall_h"]})/{HOURS_PER_BILLING_MONTH!r}*'
                 f'{_either(c("price_per_gb_month"), "0")})', "storage_cost", F.MONEY)}
        for col, (expr, key, fmt) in cells.items():
            _fx(ws, r, col, f'IF($A${tr}="","",{expr})', fmt)
            g.checks.append(Check(SHEET, f"{col_letter(col)}{r}", ("setup_tier", i), key))
        _put(ws, r, 12, plan.tiers[i]["interval_min"] if st.tiers and i < len(plan.tiers) else None, F.MINUTES)
        f_rows.append(r)
        g.row += 1
    g.head("First-order design: interval T (min) and overhead (share of work)", cite="tiers.first_order_tier_intervals")
    _fx(ws, T_row, 4, f'IF($A${t_rows[0]}="","",MAX(I{f_rows[0]},{W}*(1-{s})))', F.MINUTES)
    over = "+".join(f'IF(OR($A${tr}="",G{fr}=0),0,SQRT(2*F{fr}*G{fr}/{M}))' for tr, fr in zip(t_rows, f_rows))
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
        "Names: setup_<field> (setup inputs), setup_stated_<field>, setup_<figure> (baseline figures: "
        "setup_checkpoint_size_gb, setup_restart_pipeline_min, setup_wall_h, setup_total_cost ...), tier<i>_<key>, "
        "class<j>_name, class<j>_share.",
        "Designs: blank = the baseline's value, 'set to' a value, 'x baseline' a factor (engine.designs.Design); a "
        "design that changes a stall, write or restart states it. Designs that replace the tiers are named in the "
        "'Checkpoint tiers' row: the tier table is the baseline's.",
        "Spare pool helper (hidden columns P on; expand with +): n = 0..{N}, enough for mu up to 4x the largest at "
        "build time ({mu:.3g}). It and the tier matching are computed on open (no cached value).",
        "First-order tier intervals (Benoit et al., IEEE TC 66(7), 2017): T_l = SQRT(2 C_l / lambda_l), C_1 = "
        "stall_1 + W x slowdown, C_l = stall_l; lambda_l = (share of the classes whose first surviving tier, in "
        "order, is l) / job MTBF. Tier storage cost uses the engine's tiered wall hours (build time).",
        "Model check keys:")
