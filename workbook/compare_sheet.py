"""The Compare sheet: the live baseline against alternatives, each a set of changes on top of it.

An alternative is a design (:class:`ckptplan.engine.designs.Design`): per input, blank = the
baseline's value (whatever the planner makes it on the Inputs sheet), "set to" a value, or
"x baseline" a factor of the baseline's value (0.25 = a quarter). Every alternative input is a
live formula of the Inputs sheet and its two blue change cells, every figure a formula of the
Plan's (:data:`workbook.formulas.CALCS`), and the savings against the baseline are per run and
per month, as :func:`ckptplan.engine.compare_plans` computes them. The recalculation tests
compare every figure with the engine on the baseline and on ``design.apply(baseline)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openpyxl import Workbook
from openpyxl.styles import Alignment, Font
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from ..engine.cost import HOURS_PER_MONTH
from ..engine.fields import RULES
from . import design_formulas as D
from . import flags
from . import formulas as F
from . import style as S
from .manifest import Built, Check
from .tier_formulas import SINGLE_LEVEL_ONLY
from .tier_sheets import DESIGN_KEYS, TieredColumn, block_columns

if TYPE_CHECKING:
    from ..engine.designs import Design
    from ..engine.scenario import Scenario

__all__ = ["FIRST_INPUT_ROW", "SHEET", "compare_sheet", "value_column"]

SHEET = "Compare"
_SAVINGS_ROWS = 16   # rows from the model check to the end of the savings (the pool's chains start below)
#: figures shown; the design's steps and the solver's are grouped and collapsed (expand with +)
_VISIBLE = {c.key for c in F.CALCS} | {"used_checkpoint_stall_min", "used_async_write_min", "used_restart_min",
                                       "checkpoint_size_gb", "pool_reallocation_min", "storage_cost", "spare_cost",
                                       "total_cost", "cost_per_useful_gpu_hour"}
FIRST_INPUT_ROW = 7
_COLS_PER_DESIGN = 3   # set to | x baseline | value
_BLOCK_COL = 40   # the first hidden column of a tiered baseline's blocks (the sheet's own columns end well before)


def value_column(k: int) -> int:
    """Column of alternative ``k``'s values (1-based ``k``); its change cells are the two before it."""
    return 3 + _COLS_PER_DESIGN * k


def _change_validation(kind: str, field, ref: str) -> DataValidation:
    rule = field.check if kind == "set" else RULES["positive"]
    what = (f"set {field.defined_name} to {rule.noun}" if kind == "set"
            else f"multiply the baseline's {field.defined_name} by a factor, {rule.noun}")
    return DataValidation(**rule.data_validation(ref), allow_blank=True, showInputMessage=True, showErrorMessage=True,
                          promptTitle=("set to" if kind == "set" else "x baseline"),
                          prompt=f"Blank = same as the baseline; else {what}."[:255], errorTitle="Invalid change",
                          error=f"{field.defined_name}: {what}, or leave it blank."[:225], errorStyle="stop")


def compare_sheet(wb: Workbook, base: "Scenario", designs: "tuple[Design, ...]", built: Built, terms: int = 0,
                  tiered: bool = False) -> None:
    """Write the Compare sheet for ``designs`` on top of the live baseline (see the module notes).

    Every column plans the baseline's design (the ``setup_<field>`` names) at its own inputs: a blank stall,
    write or restart is derived from the design at that column's nodes and failure rate (``terms``: the
    spare pool's Erlang-B chain, in hidden rows below the sheet). ``tiered``: the baseline has checkpoint tiers, and
    every column plans them (:class:`workbook.tier_sheets.TieredColumn`, its block in hidden columns to the right:
    the design's rows as one level, the plan from the block), as ``ckptplan compare`` does."""
    ws = wb.create_sheet(SHEET)
    S.title(ws, "Compare: the baseline and alternatives, each a set of changes to it",
            "Every alternative follows the Inputs sheet except where its blue cells say otherwise: 'set to' a value, "
            "or 'x baseline' a factor of the baseline's value (0.25 = a quarter). Blank = same as the baseline. "
            "Positive savings favour the alternative.", 3 + _COLS_PER_DESIGN * len(designs))
    ws.row_dimensions[2].height = 30
    _design_heads(wb, ws, designs, built)
    refs_b, refs_a, row = _input_rows(wb, ws, base, designs, built)
    ws.cell(row=row, column=1, value="Input check (each alternative's inputs against their rules)").font = Font(bold=True)
    ws.cell(row=row, column=3, value='=IF(input_problems="","OK",input_problems)')
    flags.highlight(ws, f"C{row}")
    check_row = row   # written once the plan's rows are: a stall is required, stated or derived from the design
    row += 2
    S.header(ws, row, ["Figure", "Unit", "Baseline"] + [x for k in designs for x in ("", "", "value")])
    row += 1
    columns = [(3, refs_b, ("compare", "base"))] + [(value_column(k), refs_a[k - 1], ("compare", k))
                                                      for k in range(1, len(designs) + 1)]
    chain = row + len(D.PLAN_CALCS) + _SAVINGS_ROWS   # the spare pool's chains, hidden below the savings
    blocks = _tiered_columns(ws, columns) if tiered else {}
    row = _plan_rows(ws, row, columns, chain, terms, base.currency, built, blocks)
    checks = {3: "input_problems"}
    for k in range(1, len(designs) + 1):  # hidden helpers under the check: the change cells', then the inputs'
        vcol = value_column(k)
        changes = ws.cell(row=check_row + 1, column=vcol - 2, value="=" + F.change_problems(
            {key: (f"{get_column_letter(vcol - 2)}{FIRST_INPUT_ROW + i}", f"{get_column_letter(vcol - 1)}"
                   f"{FIRST_INPUT_ROW + i}") for i, key in enumerate(F.INPUTS)}))
        inputs = ws.cell(row=check_row + 1, column=vcol - 1, value="=" + F.input_problems(refs_a[k - 1]))
        c = ws.cell(row=check_row, column=vcol, value=f'=IF({changes.coordinate}<>"",{changes.coordinate},'
                                                        f'IF({inputs.coordinate}="","OK",{inputs.coordinate}))')
        c.alignment = Alignment(wrap_text=True, vertical="top")
        flags.highlight(ws, c.coordinate)
        checks[vcol] = f'IF({c.coordinate}="OK","",{c.coordinate})'
    ws.row_dimensions[check_row + 1].hidden = True
    ws.row_dimensions[check_row].height = 45
    ws.cell(row=row, column=1, value="Model check (where the answer leaves the models' range)").font = Font(bold=True)
    for col, refs, ctx in columns:
        check = (blocks[col].check(refs, checks[col]) if col in blocks
                 else flags.model_check(refs, problems=checks[col]))
        cell = ws.cell(row=row, column=col, value="=" + check)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        flags.highlight(ws, cell.coordinate)
        built.flags.append(Check(SHEET, cell.coordinate, ctx + (("tiered",) if col in blocks else ()), "warnings"))
    ws.row_dimensions[row].height = 45
    row = _savings(ws, row + 2, refs_b, refs_a, base.currency, built)
    assert row <= chain, (row, chain)
    _pool_sums(ws, columns, chain, terms)
    widths = {"A": 58, "B": 14, "C": 16}
    for k in range(1, len(designs) + 1):
        vcol = value_column(k)
        widths.update({get_column_letter(vcol - 2): 10, get_column_letter(vcol - 1): 10, get_column_letter(vcol): 16})
    for col, width in widths.items():
        ws.column_dimensions[col].width = width
    ws.freeze_panes = f"D{FIRST_INPUT_ROW}"
    ws.sheet_properties.outlinePr.summaryBelow = False


def _design_heads(wb: Workbook, ws, designs: "tuple[Design, ...]", built: Built) -> None:
    """Each alternative's name (an input) and the live text of what it changes, over its three columns."""
    names_row, changes_row, head_row = 4, 5, 6
    ws.cell(row=names_row, column=1, value="Alternative (type a name)").font = Font(bold=True)
    ws.cell(row=changes_row, column=1, value="What changes (from the blue cells below)").font = S.NOTE_FONT
    S.header(ws, head_row, ["Input", "Unit", "Baseline"])
    keys = list(F.INPUTS)
    for k, design in enumerate(designs, start=1):
        vcol = value_column(k)
        first = get_column_letter(vcol - 2)
        ws.merge_cells(start_row=names_row, start_column=vcol - 2, end_row=names_row, end_column=vcol)
        name = ws.cell(row=names_row, column=vcol - 2, value=design.name)
        name.font, name.fill = Font(bold=True, color="0000FF"), S.INPUT_FILL
        S.name(wb, f"alt{k}_name", SHEET, f"{first}{names_row}")
        built.input_cells[f"alt{k}:name"] = f"{SHEET}!${first}${names_row}"
        ws.merge_cells(start_row=changes_row, start_column=vcol - 2, end_row=changes_row, end_column=vcol)
        described = "&".join(
            f'IF({first}{FIRST_INPUT_ROW + i}<>"","; {key} = "&{first}{FIRST_INPUT_ROW + i},'
            f'IF({get_column_letter(vcol - 1)}{FIRST_INPUT_ROW + i}<>"","; {key} x"&'
            f'{get_column_letter(vcol - 1)}{FIRST_INPUT_ROW + i},""))' for i, key in enumerate(keys))
        c = ws.cell(row=changes_row, column=vcol - 2, value=f'=IF(({described})="","no change",MID({described},3,2000))')
        c.font, c.alignment = S.NOTE_FONT, Alignment(wrap_text=True, vertical="top")
        S.header(ws, head_row, ["set to", "x baseline", "value"], col=vcol - 2)
    ws.row_dimensions[changes_row].height = 42


def _input_rows(wb: Workbook, ws, base: "Scenario", designs: "tuple[Design, ...]",
                built: Built) -> tuple[dict[str, str], list[dict[str, str]], int]:
    """One row per input: the baseline's link to Inputs, each alternative's change cells and value.
    Returns the baseline's and the alternatives' references and the row after the block."""
    refs_b: dict[str, str] = {}
    refs_a: list[dict[str, str]] = [{} for _ in designs]
    row = FIRST_INPUT_ROW
    for key, field in F.INPUTS.items():
        ws.cell(row=row, column=1, value=field.label)
        ws.cell(row=row, column=2, value=S.fmt_unit(field.unit if field.unit != "per GPU-h" else "money per GPU-h",
                                                     base.currency))
        base_cell = ws.cell(row=row, column=3, value=f'=IF({key}="","",{key})')
        base_cell.number_format = S.INPUT_NUMBER if not field.integer else S.INPUT_WHOLE
        refs_b[key] = f"$C${row}"
        for k, design in enumerate(designs, start=1):
            vcol = value_column(k)
            set_ref, times_ref = f"{get_column_letter(vcol - 2)}{row}", f"{get_column_letter(vcol - 1)}{row}"
            dkey = field.name  # the design's key: the registry name (job_mtbf_h, domain1_mtbf_h, ...)
            times = None if dkey in design.set else design.times.get(dkey)
            for col, kind, value in ((vcol - 2, "set", design.set.get(dkey)), (vcol - 1, "times", times)):
                cell = ws.cell(row=row, column=col, value=value)
                cell.font, cell.fill = S.INPUT_FONT, S.INPUT_FILL
                cell.number_format = S.INPUT_NUMBER
                dv = _change_validation(kind, field, cell.coordinate)
                ws.add_data_validation(dv)
                dv.add(cell)
                S.name(wb, f"alt{k}_{kind}_{key}", SHEET, cell.coordinate)
                built.input_cells[f"alt{k}:{kind}:{key}"] = f"{SHEET}!${get_column_letter(col)}${row}"
            value = ws.cell(row=row, column=vcol, value=(f'=IF({set_ref}<>"",{set_ref},IF(AND({times_ref}<>"",'
                                                         f'$C${row}<>""),$C${row}*{times_ref},'
                                                         f'{_unchanged(key, row, vcol)}))'))
            value.number_format = base_cell.number_format
            refs_a[k - 1][key] = f"${get_column_letter(vcol)}${row}"
        row += 1
    return refs_b, refs_a, row + 1


def _unchanged(key: str, row: int, vcol: int) -> str:
    """An input a design does not change: the baseline's (the downtime keeps its share of a changed restart)."""
    if key != "downtime_min":
        return f"$C${row}"
    keys = list(F.INPUTS)
    r = row + keys.index("restart_min") - keys.index("downtime_min")
    c, s, t = (get_column_letter(vcol - i) for i in (0, 2, 1))
    return D.downtime_kept_share(f"$C${row}", f"$C${r}", f"{c}{r}", f"{s}{r}", f"{t}{r}")


def _tiered_columns(ws, columns: list) -> dict[int, TieredColumn]:
    """Each column's tiered block, side by side in hidden columns right of the sheet (rows from the inputs': the
    sheet's pool chains run further down), keyed by the column."""
    out, at = {}, _BLOCK_COL
    for col, refs, _ in columns:
        out[col] = TieredColumn(ws, FIRST_INPUT_ROW, at, refs["restart_min"])   # the stated restart, before binding
        for c in range(at, at + block_columns()):
            ws.column_dimensions[get_column_letter(c)].outlineLevel = 1
            ws.column_dimensions[get_column_letter(c)].hidden = True
        at += block_columns() + 1
    return out


def _plan_rows(ws, row: int, columns: list, chain: int, terms: int, currency: str, built: Built,
               blocks: dict[int, TieredColumn]) -> int:
    """The whole plan (:data:`workbook.design_formulas.PLAN_CALCS`) in every column (a column in ``blocks``: the
    tiered plan of its block, the design's rows as one level); returns the next row."""
    for col, refs, _ in columns:
        refs.update(D.setup_refs(lambda name: f"setup_{name}"))
        refs.update(pool_terms=str(terms), pool_erlang_b=f"${get_column_letter(col)}${chain + terms - 1}"
                    if terms else "0")
    for calc in D.PLAN_CALCS:
        ws.cell(row=row, column=1, value=calc.label)
        ws.cell(row=row, column=2, value=S.fmt_unit(calc.unit, currency))
        for col, refs, ctx in columns:
            letter = get_column_letter(col)
            tier_row = col in blocks and calc.key not in DESIGN_KEYS
            expr = blocks[col].expr(calc.key, refs, calc.expr) if tier_row else calc.expr(refs)
            if expr is None:   # a figure of one level only
                ws.cell(row=row, column=col, value=SINGLE_LEVEL_ONLY)
                D.bind(refs, calc.key, '""')
                continue
            cell = ws.cell(row=row, column=col, value="=" + expr)
            cell.number_format = calc.fmt
            D.bind(refs, calc.key, f"${letter}${row}")
            if calc.engine_key:
                built.checks.append(Check(SHEET, f"{letter}{row}", ctx + (("tiered",) if tier_row else ()),
                                          calc.key if tier_row else calc.engine_key))
        one_level = blocks and ws.cell(row=row, column=3).value == SINGLE_LEVEL_ONLY   # a figure a tiered plan lacks
        if calc.helper or calc.key not in _VISIBLE or one_level:
            ws.row_dimensions[row].outlineLevel = 1
            ws.row_dimensions[row].hidden = True
        row += 1
    return row


def _pool_sums(ws, columns: list, chain: int, terms: int) -> None:
    """Each column's spare-pool Erlang-B chain (:func:`workbook.design_formulas.pool_chain_cell`) in hidden rows."""
    for col, refs, _ in columns:
        D.write_pool_chain(ws, chain, col, terms, refs)
    for n in range(terms):
        ws.row_dimensions[chain + n].hidden = True


def _savings(ws, row: int, refs_b: dict[str, str], refs_a: list[dict[str, str]], currency: str, built: Built) -> int:
    """Savings of each alternative against the baseline, per run and per month (engine.compare_plans)."""
    S.header(ws, row, ["Savings against the baseline", "Unit", "Baseline"] +
             [x for _ in refs_a for x in ("", "", "saved")])
    row += 1
    ws.cell(row=row, column=1, value="Hours in a month (365.2425 days / 12)")
    ws.cell(row=row, column=3, value=HOURS_PER_MONTH).number_format = "0.000"
    hours_cell = f"$C${row}"
    row += 1
    ws.cell(row=row, column=1, value="Runs per month (input, else the baseline run back to back)")
    ws.cell(row=row, column=2, value="runs")
    ws.cell(row=row, column=3, value=(f'=IF(runs_per_month<>"",runs_per_month,'
                                      f'IF(ISNUMBER({refs_b["wall_h"]}),{hours_cell}/{refs_b["wall_h"]},{F.NEVER}))')
            ).number_format = "0.000"
    built.checks.append(Check(SHEET, f"C{row}", ("compare_savings", 1), "runs_per_month"))
    runs_cell = f"$C${row}"
    row += 1
    figures = (("wall_h", "Wall hours saved per run", "h", F.HOURS, "wall_h_saved_per_run", False),
               ("total_gpu_hours", "GPU-hours saved per run", "GPU-h", F.GPU_HOURS, "gpu_hours_saved_per_run", False),
               ("total_gpu_hours", "GPU-hours saved per month", "GPU-h", F.GPU_HOURS, "gpu_hours_saved_per_month", True),
               ("total_cost", "Money saved per run", currency, F.MONEY, "money_saved_per_run", False),
               ("total_cost", "Money saved per month", currency, F.MONEY, "money_saved_per_month", True))
    for src, label, unit, fmt, key, monthly in figures:
        ws.cell(row=row, column=1, value=label).font = Font(bold=True)
        ws.cell(row=row, column=2, value=unit)
        for k, refs in enumerate(refs_a, start=1):
            letter = get_column_letter(value_column(k))
            both = f"AND(ISNUMBER({refs_b[src]}),ISNUMBER({refs[src]}),ISNUMBER({runs_cell}))"
            saved = f"({refs_b[src]}-{refs[src]})" + (f"*{runs_cell}" if monthly else "")
            ws.cell(row=row, column=value_column(k), value=f"=IF({both},{saved},{F.NEVER})").number_format = fmt
            built.checks.append(Check(SHEET, f"{letter}{row}", ("compare_savings", k), key))
        row += 1
    return row
