"""An "Add-in check" sheet: every CKPT_ function beside the workbook's own live formula.

For users of the Excel add-in (:mod:`workbook.udfs` through xlwings). Each row calls one ``CKPT_``
function on the workbook's defined names (the Inputs and the Plan figures) and shows, beside it, the
same quantity from the workbook's plain formulas, their difference and whether they agree within a
relative tolerance the user can change. Until the add-in has imported the functions the ``CKPT_``
cells show ``#NAME?`` and the check column says so; the plain formulas work without Python.

Wire it into a generated workbook with::

    built = build_workbook(scenario, ...)
    add_udf_sheet(built.workbook)

LibreOffice cannot call the add-in, so the recalculation tests compare only the plain cells; the
``(udf_cell, plain_cell, key)`` triples returned let a test (or a user with Excel) compare the pairs.
"""

from __future__ import annotations

import re

from openpyxl import Workbook
from openpyxl.styles import Font
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.worksheet import Worksheet

from . import formulas as F
from . import style as S
from .lite import LITE_MAX_RUNS
from .udfs import BREAKDOWN_HEADER, BREAKDOWN_ROWS, MAX_RUNS

__all__ = ["BREAKDOWN_ARGS", "CHECKS", "DEADLINE_ARGS", "DEADLINE_RUNS", "DEADLINE_SEED", "HOSTS", "SETUP_CHECKS",
           "SETUP_SHEET", "SETUP_SHEET_TITLE", "SHEET_TITLE", "TOLERANCE", "add_setup_udf_sheet", "add_udf_sheet"]

SHEET_TITLE = "Add-in check: the CKPT_ functions beside the workbook's own formulas"
TOLERANCE = 1e-9          # relative; the engine and the sheet's Newton solver agree to ~2e-11
DEADLINE_RUNS = 10_000
DEADLINE_SEED = 0

#: the note under the sheet's title, per host the functions run on
HOSTS = {
    "desktop": ("Column B calls ckptplan's Python engine through the xlwings add-in (set it up with `ckptplan "
                "excel-setup FOLDER`); column C is this workbook's own live formula. They should agree to the tolerance "
                "below. Until the add-in has imported the functions (xlwings tab > Import Functions, in a copy saved as "
                ".xlsm), column B shows #NAME? and column E says so."),
    "server": ("Column B calls ckptplan's Python engine through xlwings Server (its custom_functions: `from "
               "ckptplan.workbook.udfs import *` and `from ckptplan.workbook.udfs_setup import *`); column C is this workbook's own live formula. They should agree to "
               "the tolerance below. Until the xlwings Server add-in is loaded, column B shows #NAME? and column E "
               "says so."),
    "lite": ("Column B calls ckptplan's Python engine through xlwings Lite, Python inside Excel on Windows, Mac and the "
             "web (set it up with `ckptplan excel-setup --lite FOLDER`: paste main.py and requirements.txt into the "
             "xlwings Lite editor); column C is this workbook's own live formula. They should agree to the tolerance "
             "below. Until xlwings Lite has installed ckptplan and loaded main.py, column B shows #NAME? and column E "
             "says so."),
}

_ASYNC = "async_write_min,async_slowdown_fraction"
_DOMAINS = ("domain1_mtbf_h,domain1_nodes_per_domain,nonfatal_share,domain2_mtbf_h,domain2_nodes_per_domain,"
            "domain3_mtbf_h,domain3_nodes_per_domain")
_WASTE_ARGS = f"chosen_interval_min,checkpoint_stall_min,job_mtbf_min,restart_min,{_ASYNC}"

# (key, label, CKPT_ function, its arguments (defined names), plain formula, unit, number format)
CHECKS: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    ("job_mtbf_h", "Job MTBF from nodes and domains (ignores a Job MTBF override)",
     "CKPT_JOB_MTBF_DOMAINS", f"node_mtbf_h,nodes,{_DOMAINS}", "1/job_failure_rate_per_h", "h", F.HOURS),
    ("effective_stall_min", "Effective stall per save", "CKPT_EFFECTIVE_STALL",
     f"checkpoint_stall_min,{_ASYNC}", "effective_stall_min", "min", F.MINUTES),
    ("young_interval_min", "Young interval", "CKPT_YOUNG_INTERVAL", "effective_stall_min,job_mtbf_min",
     "young_interval_min", "min", F.MINUTES),
    ("daly_interval_min", "Daly higher-order interval", "CKPT_DALY_INTERVAL", "effective_stall_min,job_mtbf_min",
     "daly_interval_min", "min", F.MINUTES),
    ("exact_interval_min", "Exact optimum interval", "CKPT_EXACT_INTERVAL",
     f"checkpoint_stall_min,job_mtbf_min,{_ASYNC}", "exact_interval_min", "min", F.MINUTES),
    ("first_order_waste", "First-order waste at the chosen interval", "CKPT_WASTE",
     f'{_WASTE_ARGS},"first_order"', "first_order_waste", "share", F.PERCENT),
    ("waste_fraction", "Exact waste at the chosen interval", "CKPT_WASTE", f'{_WASTE_ARGS},"exact",downtime_min',
     "waste_fraction", "share", F.PERCENT),
    ("wall_h", "Expected wall time", "CKPT_WALL_TIME", f"useful_training_h,{_WASTE_ARGS},downtime_min", "wall_h", "h",
     F.HOURS),
    ("job_gpu_hours", "GPU-hours of the job (spares apart)", "CKPT_GPU_HOURS", "wall_h,gpus", "job_gpu_hours", "GPU-h",
     F.GPU_HOURS),
    ("compute_cost", "Cost of the job's GPU time", "CKPT_COST", "job_gpu_hours,price_per_gpu_hour", "compute_cost",
     "money", F.MONEY),
)
BREAKDOWN_ARGS = f"useful_training_h,{_WASTE_ARGS},gpus,price_per_gpu_hour,downtime_min"
DEADLINE_ARGS = f"useful_training_h,deadline_h,{_WASTE_ARGS}"
_BREAKDOWN_KEYS = {"hours": "{cat}_h", "GPU-hours": "{cat}_gpu_hours", "cost": "{cat}_cost"}
#: the breakdown's last row sums the job's four categories: the job's GPU-hours and compute cost (no spares, no storage)
_TOTAL_KEYS = {"hours": "wall_h", "GPU-hours": "job_gpu_hours", "cost": "compute_cost"}
_BLOCK_FORMATS = {"hours": F.HOURS, "GPU-hours": F.GPU_HOURS, "cost": F.MONEY}


def _names_in(formula: str) -> set[str]:
    """Identifiers a formula uses as defined names (function names and quoted text excluded)."""
    text = re.sub(r'"[^"]*"', "", formula)
    return {m.group(1) for m in re.finditer(r"(?<![\w.$])([A-Za-z_][\w.]*)(?![\w.]|\s*\()", text)
            if not re.fullmatch(r"\$?[A-Z]{1,3}\$?\d+", m.group(1))}


def _breakdown_key(cat: str, column: str) -> str:
    return _TOTAL_KEYS[column] if cat == "compute" else _BREAKDOWN_KEYS[column].format(cat=cat)


def _currency(wb: Workbook) -> str:
    if "currency" not in wb.defined_names:
        return "money"
    sheet, ref = next(iter(wb.defined_names["currency"].destinations))
    value = wb[sheet][ref.replace("$", "")].value
    return str(value) if value else "money"


def _diff(a: str, b: str) -> str:
    return f'=IF(AND(ISNUMBER({a}),ISNUMBER({b})),{a}-{b},"n/a")'


def _sheet_head(ws: Worksheet) -> None:
    """A check sheet's tolerance cell (B3) and column headers (row 5)."""
    ws["A3"] = "Agreement tolerance (relative)"
    tol = ws["B3"]
    tol.value = TOLERANCE
    tol.font, tol.fill, tol.number_format = S.INPUT_FONT, S.INPUT_FILL, "0.0E+00"
    S.header(ws, 5, ["Quantity", "Add-in (CKPT_ function)", "Workbook formula", "Difference (B - C)", "Agree?",
                    "Unit", "Function"])


def _check_row(ws: Worksheet, row: int, label: str, call: str, plain: str, fmt: str, agree: str, unit: str,
               func: str) -> None:
    """One row of a check sheet: the add-in call (B), the workbook's formula (C), their difference, the verdict."""
    ws.cell(row=row, column=1, value=label)
    b = ws.cell(row=row, column=2, value=f"={call}")
    c = ws.cell(row=row, column=3, value=f"={plain}")
    b.number_format = c.number_format = fmt
    b.fill = S.KEY_FILL
    ws.cell(row=row, column=4, value=_diff(f"B{row}", f"C{row}")).number_format = "0.00E+00"
    ws.cell(row=row, column=5, value=agree)
    ws.cell(row=row, column=6, value=unit)
    ws.cell(row=row, column=7, value=func).font = S.NOTE_FONT


def add_udf_sheet(wb: Workbook, sheet_name: str = "Add-in check",
                  function_prefix: str = "", host: str = "desktop") -> list[tuple[str, str, str]]:
    """Add the check sheet to a workbook made by :func:`workbook.build_workbook`.

    Returns ``(udf_cell, plain_cell, key)`` triples (cells like ``"B6"`` on ``sheet_name``): the
    cell calling a ``CKPT_`` function, the cell with the workbook's own formula for the same
    quantity, and its key, the :func:`engine.evaluate` column both equal (``job_mtbf_h`` only
    while no Job MTBF override is set). ``function_prefix``: text put before every function name,
    e.g. ``"XLWINGS."`` for the xlwings Server add-in's namespace; empty for the desktop add-in and
    xlwings Lite (``=CKPT_WASTE(...)``). ``host``: whose set-up the sheet's note describes, one of
    :data:`HOSTS` (``"desktop"``, ``"server"``, ``"lite"``); in ``"lite"`` the runs cell states the
    browser's cap (:data:`workbook.lite.LITE_MAX_RUNS`).

    The sheet goes before Readiness (or last). Raises ``ValueError`` if ``sheet_name`` exists or
    the workbook lacks a defined name the formulas use (i.e. it was not made by build_workbook).
    """
    if host not in HOSTS:
        raise ValueError(f"host must be one of {', '.join(HOSTS)} (got {host!r})")
    if sheet_name in wb.sheetnames:
        raise ValueError(f"the workbook already has a sheet named {sheet_name!r}")
    _check_defined_names(wb)
    index = wb.sheetnames.index("Readiness") if "Readiness" in wb.sheetnames else len(wb.sheetnames)
    ws = wb.create_sheet(sheet_name, index)
    currency = _currency(wb)
    S.title(ws, SHEET_TITLE, HOSTS[host], 7)
    _sheet_head(ws)
    triples: list[tuple[str, str, str]] = []
    row = _function_rows(ws, 6, function_prefix, currency, triples)
    row = _breakdown_blocks(ws, row + 1, function_prefix, triples)
    _deadline_rows(ws, row, function_prefix, host)
    for col, width in zip("ABCDEFG", (62, 20, 18, 18, 16, 12, 24)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A6"
    S.print_setup(ws)
    if all(n in wb.defined_names for n in _setup_names()):   # a workbook with the Storage & recovery sheet
        add_setup_udf_sheet(wb, function_prefix=function_prefix, host=host)
    S.keep_text_literal(wb, [currency])  # a currency such as "=1+1" labels cells as text, never as a formula
    return triples


def _check_defined_names(wb: Workbook) -> None:
    """``ValueError`` unless the workbook defines every name the check sheet's formulas use."""
    used = {"deadline_h"} | _names_in(BREAKDOWN_ARGS) | _names_in(DEADLINE_ARGS)
    for _, _, _, args, plain, _, _ in CHECKS:
        used |= _names_in(args) | _names_in(plain)
    missing = sorted(n for n in used if n not in wb.defined_names)
    if missing:
        raise ValueError(f"the workbook lacks defined names {', '.join(missing)}: "
                         "add the check sheet to a workbook made by workbook.build_workbook")


def _function_rows(ws: Worksheet, row: int, fn: str, currency: str, triples: list[tuple[str, str, str]]) -> int:
    """One row per function of :data:`CHECKS` from ``row``, each pair of cells added to ``triples``; returns the
    row after the last."""
    for key, label, func, args, plain, unit, fmt in CHECKS:
        agree = (f'=IF(ISNUMBER(D{row}),IF(ABS(D{row})<=$B$3*MAX(1,ABS(C{row})),"yes","NO"),'
                 f'"no value in B: add-in not loaded, or see the message in B")')
        _check_row(ws, row, label, f"{fn}{func}({args})", plain, fmt, agree, currency if unit == "money" else unit, func)
        triples.append((f"B{row}", f"C{row}", key))
        row += 1
    return row


def _breakdown_blocks(ws: Worksheet, row: int, fn: str, triples: list[tuple[str, str, str]]) -> int:
    """The spilled cost breakdown, the same table from the Plan sheet, and their differences, from ``row`` (a
    note); each pair of cells added to ``triples``. Returns the row after the last block plus one."""
    S.note(ws, row, "CKPT_COST_BREAKDOWN returns a 6 x 4 table (entered here as an array formula, so it works in "
          "every Excel version); below it the same figures from the Plan sheet, then the differences.", 7)
    top = row + 1
    size = len(BREAKDOWN_ROWS) + 1
    ref = f"A{top}:{chr(ord('A') + len(BREAKDOWN_HEADER) - 1)}{top + size - 1}"
    ws[f"A{top}"] = ArrayFormula(ref, f"={fn}CKPT_COST_BREAKDOWN({BREAKDOWN_ARGS})")
    plain_top = top + size + 1
    diff_top = plain_top + size + 1
    for block_top, title in ((plain_top, "Workbook formula"), (diff_top, "Difference (add-in - workbook)")):
        S.header(ws, block_top, [title] + BREAKDOWN_HEADER[1:])
    for i, cat in enumerate(BREAKDOWN_ROWS, start=1):
        ws.cell(row=plain_top + i, column=1, value=cat)
        ws.cell(row=diff_top + i, column=1, value=cat)
        for j, column in enumerate(BREAKDOWN_HEADER[1:], start=2):
            key = _breakdown_key(cat, column)
            letter = chr(ord("A") + j - 1)
            udf_cell, plain_cell = f"{letter}{top + i}", f"{letter}{plain_top + i}"
            ws[plain_cell] = f"={key}"
            ws[plain_cell].number_format = ws[udf_cell].number_format = _BLOCK_FORMATS[column]
            ws[f"{letter}{diff_top + i}"] = _diff(udf_cell, plain_cell)
            ws[f"{letter}{diff_top + i}"].number_format = "0.00E+00"
            triples.append((udf_cell, plain_cell, key))
    return diff_top + size + 1


def _deadline_rows(ws: Worksheet, row: int, fn: str, host: str) -> None:
    """The Monte Carlo's P(finish by the deadline), from ``row``: no plain-formula twin (Excel cannot simulate);
    the Deadline sheet has its answer."""
    S.header(ws, row, ["Deadline (Monte Carlo: Excel has no plain-formula twin)", "Add-in (CKPT_ function)"])
    S.header(ws, row, ["Unit", "Function"], col=6)
    runs_row, seed_row, p_row = row + 1, row + 2, row + 3
    cap = LITE_MAX_RUNS if host == "lite" else MAX_RUNS
    for r, label, value, fmt in ((runs_row, f"Simulated runs (at most {cap:,} per cell)", DEADLINE_RUNS, "#,##0"),
                                 (seed_row, "Random seed", DEADLINE_SEED, "0")):
        ws.cell(row=r, column=1, value=label)
        cell = ws.cell(row=r, column=2, value=value)
        cell.font, cell.fill, cell.number_format = S.INPUT_FONT, S.INPUT_FILL, fmt
    ws.cell(row=p_row, column=1, value="P(finish by the deadline) at the chosen interval").font = Font(bold=True)
    p = ws.cell(row=p_row, column=2, value=(
        f'=IF(deadline_h<>"",{fn}CKPT_DEADLINE_PROB({DEADLINE_ARGS},$B${runs_row},$B${seed_row},1,downtime_min),'
        '"no deadline_h on Inputs")'))
    p.number_format, p.fill = "0.0%", S.KEY_FILL
    ws.cell(row=p_row, column=6, value="probability")
    ws.cell(row=p_row, column=7, value="CKPT_DEADLINE_PROB").font = S.NOTE_FONT
    S.note(ws, p_row + 1, "Exponential failures at the job MTBF; with the same runs and seed it matches P(finish) on "
          "the Deadline sheet, when the workbook has one.", 7)


# ------------------------------------------------------------------------------- the setup's functions (udfs_setup)

SETUP_SHEET = "Add-in check (setup)"
SETUP_SHEET_TITLE = "Add-in check: the storage and recovery CKPT_ functions beside the Storage & recovery sheet"
_SIZE_ARGS = ("setup_checkpoint_size_gb,setup_writers_used,setup_write_gb_s_per_writer,setup_aggregate_write_gb_s,"
              "setup_d2h_gb_s_per_writer")
_READ = ('IF(setup_read_gb_s_per_writer<>"",setup_read_gb_s_per_writer,IF(setup_write_gb_s_per_writer<>"",'
         'setup_write_gb_s_per_writer,"")),IF(setup_aggregate_read_gb_s<>"",setup_aggregate_read_gb_s,'
         'IF(setup_aggregate_write_gb_s<>"",setup_aggregate_write_gb_s,""))')
_POOL = "setup_job_mtbf_h,setup_replacement_share,setup_repair_h,setup_spares"
# CKPT_TOTAL_COST at the stall, write and restart the Storage & recovery sheet uses (blank arguments: not given)
_TOTAL_COST = ("useful_training_h,nodes,setup_job_mtbf_h,price_per_gpu_hour,setup_used_checkpoint_stall_min,"
               "setup_used_restart_min,gpus_per_node,interval_min,setup_used_async_write_min,async_slowdown_fraction,"
               "setup_parameters_b,setup_bytes_per_parameter,setup_extra_state_gb" + "," * 14
               + "setup_spares,setup_repair_h,setup_swap_min,setup_replacement_share,setup_price_per_gb_month,"
               "setup_retention,setup_used_downtime_min")
#: (key: the plan_setup figure (or evaluate column) both equal, label, CKPT_ function, its arguments, plain formula,
#: unit, number format)
SETUP_CHECKS: tuple[tuple[str, str, str, str, str, str, str], ...] = (
    ("checkpoint_size_gb", "Checkpoint size", "CKPT_CHECKPOINT_SIZE_GB",
     "setup_parameters_b,setup_bytes_per_parameter,setup_extra_state_gb", "setup_checkpoint_size_gb", "GB", "#,##0.0"),
    ("derived_checkpoint_stall_min", "Derived stall per save", "CKPT_SAVE_STALL_MIN", _SIZE_ARGS,
     "setup_derived_checkpoint_stall_min", "min", F.MINUTES),
    ("derived_async_write_min", "Derived background write", "CKPT_ASYNC_WRITE_MIN", _SIZE_ARGS,
     "setup_derived_async_write_min", "min", F.MINUTES),
    ("derived_restore_min", "Derived restore (blank read figures = the write figures)", "CKPT_RESTORE_MIN",
     f"setup_checkpoint_size_gb,setup_writers_used,{_READ}", "setup_derived_restore_min", "min", F.MINUTES),
    ("restart_min", "Restart pipeline (the parts the sheet uses)", "CKPT_RESTART_PIPELINE_MIN",
     ",".join(f"setup_part_{p}" for p in ("detection_min", "reallocation_min", "startup_min", "init_min", "load_min",
                                           "warmup_min")), "setup_restart_pipeline_min", "min", F.MINUTES),
    ("spare_free_probability", "P(a spare is free)", "CKPT_SPARE_FREE_PROBABILITY", _POOL,
     "setup_spare_free_probability", "share", "0.000000"),
    ("pool_reallocation_min", "Reallocation from the spare pool", "CKPT_REALLOCATION_MIN", f"{_POOL},setup_swap_min",
     "setup_pool_reallocation_min", "min", F.MINUTES),
    ("young_interval_min", "One tier restoring every failure: Young's interval", "CKPT_TIER_INTERVAL_MIN",
     "effective_stall_min,1,job_mtbf_h", "young_interval_min", "min", F.MINUTES),
    ("total_cost", "Total cost: compute + storage + spares (single level)", "CKPT_TOTAL_COST", _TOTAL_COST,
     "setup_total_cost", "money", F.MONEY),
)


def _setup_names() -> set[str]:
    used: set[str] = set()
    for _, _, _, args, plain, _, _ in SETUP_CHECKS:
        used |= _names_in(args) | _names_in(plain)
    return used


def add_setup_udf_sheet(wb: Workbook, sheet_name: str = SETUP_SHEET, function_prefix: str = "",
                        host: str = "desktop") -> list[tuple[str, str, str]]:
    """Add the check sheet of the storage and recovery functions (:mod:`workbook.udfs_setup`) before "Add-in check".

    One row per :data:`SETUP_CHECKS`: the ``CKPT_`` call on the Storage & recovery sheet's defined
    names, the sheet's own live formula, their difference and agreement (a row whose figure the
    setup does not give says so). :func:`add_udf_sheet` adds it to a workbook that has the Storage &
    recovery sheet. Returns ``(udf_cell, plain_cell, key)`` triples, ``key`` the
    :func:`engine.setup.plan_setup` figure (``young_interval_min``: :func:`engine.evaluate`'s column)
    both equal. Raises ``ValueError`` if the sheet exists or a defined name is missing.
    """
    if host not in HOSTS:
        raise ValueError(f"host must be one of {', '.join(HOSTS)} (got {host!r})")
    if sheet_name in wb.sheetnames:
        raise ValueError(f"the workbook already has a sheet named {sheet_name!r}")
    missing = sorted(n for n in _setup_names() if n not in wb.defined_names)
    if missing:
        raise ValueError(f"the workbook lacks defined names {', '.join(missing)}: "
                         "add the check sheet to a workbook made by workbook.build_workbook")
    index = wb.sheetnames.index("Add-in check") if "Add-in check" in wb.sheetnames else len(wb.sheetnames)
    ws = wb.create_sheet(sheet_name, index)
    S.title(ws, SETUP_SHEET_TITLE, HOSTS[host].replace("this workbook's own live formula",
                                                       "the Storage & recovery sheet's live formula"), 7)
    _sheet_head(ws)
    currency = _currency(wb)
    triples = []
    for row, (key, label, func, args, plain, unit, fmt) in enumerate(SETUP_CHECKS, start=6):
        agree = (f'=IF(C{row}="","not given: the setup has no such figure",IF(ISNUMBER(D{row}),'
                 f'IF(ABS(D{row})<=$B$3*MAX(1,ABS(C{row})),"yes","NO"),'
                 f'"no value in B: add-in not loaded, or see the message in B"))')
        _check_row(ws, row, label, f"{function_prefix}{func}({args})", plain, fmt, agree,
                   currency if unit == "money" else unit, func)
        triples.append((f"B{row}", f"C{row}", key))
    S.note(ws, 6 + len(SETUP_CHECKS), "Single-level figures: with checkpoint tiers the Storage & recovery sheet's "
           "total is the tiered engine's, which CKPT_TOTAL_COST does not model.", 7)
    for col, width in zip("ABCDEFG", (62, 20, 18, 18, 16, 12, 30)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A6"
    S.print_setup(ws)
    return triples
