"""The Spot sheet: the plan on preemptible capacity as live formulas, and the capacity policies on the Compare sheet.

The formulas are :mod:`ckptplan.engine.preemption`'s model written for Excel (the engine docstring has
the derivation, the sources and where it stops holding): failures (rate ``lambda = 1/M``) and
preemptions (rate ``pi = 1 / spot_mtbp_min`` per minute, from the job's rate ``spot_preemptions_per_h``: the
Inputs' ``preemptions_per_h``, else ``nodes x preemptions_per_node_h``, live, as
:func:`ckptplan.engine.spot_rates.job_preemptions_per_h` resolves it) while the job holds its GPUs, ``theta =
lambda + pi``; per attempt of a segment ``S = T + C``: ``q = exp(-theta S)``, a failure ends it with
probability ``(lambda/theta)(1 - q)``, a preemption ``(pi/theta)(1 - q)``; a save fits the notice when
``preemption_notice_min >= C`` (then a preemption keeps the work: checkpoint on notice). Per cycle (one
checkpoint to the next)::

    time = [(1 - q)/theta + pf (D + R') + pp (k C + Wc + R')] / e,   work = [q T + k pi I] / e

``R' = (exp(theta R) - 1)(1/theta + (lambda/theta) D + (pi/theta) Wc)``, ``e = q + k pp``, ``I = int_0^S min(y, T)
exp(-theta y) dy``; ``D`` the downtime after a failure (the plan's ``used_downtime_min``: the job waits for a node,
nothing strikes it; Bougeret et al., SC'11) and ``R`` the rest of the restart (exposed). The interval is found as the engine finds it: a golden-section search on ``log T``
between ``sqrt(2 C / rate) / 1000`` and ``x 1000`` (``rate`` the rate of events that cost rework), the
same 80 steps (:data:`ckptplan.engine.preemption.STEPS`), written as rows (grouped, collapsed). The
tests recalculate the sheet in LibreOffice and compare every figure with :func:`ckptplan.engine.evaluate`.

The Plan sheet keeps the on-demand plan of the same inputs; this sheet says when no preemption is
given, and refuses by name what the model does not cover (a background write).
The spot / on-demand / fallback comparison (:func:`ckptplan.engine.spot.scenario_capacity`) is a
Monte Carlo: its figures are values on the Compare sheet, with a live check that says when an input
changed since they were simulated (as the Deadline sheet).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from openpyxl import Workbook
from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Alignment, Font, PatternFill

from ..engine.preemption import STEPS
from . import flags
from . import formulas as F
from . import style as S
from .manifest import Built, Check

__all__ = ["SHEET", "capacity_block", "spot_sheet"]

SHEET = "Spot"

_ALERT_FILL = PatternFill("solid", fgColor="F8CBAD")   # a refusal in the status, as the model checks show alerts
#: the model's failure to give a number, as the sheet shows it
_NA = '"n/a: see the status above"'


def _cycle_parts(T: str) -> dict[str, str]:
    """The per-cycle numerators at interval ``T`` (a reference or an expression), ``e`` and the ratio time/work."""
    th, lam, pi, C, Wc, k = "spot_theta", "spot_lam", "spot_pi", "spot_stall_min", "spot_wait_min", "spot_keep"
    q = f"EXP(-{th}*({T}+{C}))"
    miss = f"(1-{q})"
    pf, pp = f"({lam}/{th}*{miss})", f"({pi}/{th}*{miss})"
    eT = f"EXP(-{th}*{T})"
    integral = (f"((1-{eT}-{th}*{T}*{eT})/{th}^2+{T}*({eT}-{q})/{th})")
    time = f"({miss}/{th}+{pf}*(spot_downtime_min+spot_restart_all)+{pp}*({k}*{C}+{Wc}+spot_restart_all))"
    work = f"({q}*{T}+{k}*{pi}*{integral})"
    return {"q": q, "pf": pf, "pp": pp, "time": time, "work": work, "e": f"({q}+{k}*{pp})"}


def _objective(T: str) -> str:
    """The golden section's objective at ``T``: log of the expected wall time per unit of work (the engine's)."""
    p = _cycle_parts(T)
    return f"IFERROR(LN({p['time']})-LN({p['work']}),spot_big)"


#: the job's preemption rate, live (engine.spot_rates.job_preemptions_per_h): the Inputs' job rate when given, else
#: nodes x the node's rate (a published band's, when preemption_rate_source names one), else 0; not guarded by the
#: status, which reads it
_JOB_RATE = ("spot_preemptions_per_h", "Job's preemptions per hour (given, or nodes x per node-h)", "per h", "0.000000",
             'IF(ISNUMBER(preemptions_per_h),preemptions_per_h,IF(ISNUMBER(preemptions_per_node_h),'
             'nodes*preemptions_per_node_h,0))')

#: (defined name, label, unit, number format, formula, engine column or None): the rows before the search
_INPUT_ROWS = (
    ("spot_mtbp_min", "Mean time between preemptions of the job (60 / its rate above)", "min", F.MINUTES,
     "60/spot_preemptions_per_h", None),
    ("spot_notice_min", "Preemption notice (empty = none)", "min", F.MINUTES,
     'IF(preemption_notice_min="",0,preemption_notice_min)', None),
    ("spot_wait_min", "Wait for capacity after a preemption, no GPUs held (empty = none)", "min", F.MINUTES,
     'IF(capacity_wait_min="",0,capacity_wait_min)', None),
    ("spot_stall_min", "Save stall C (the plan's)", "min", F.MINUTES, "used_checkpoint_stall_min", None),
    ("spot_downtime_min", "Downtime D after a failure (waits for a node, nothing strikes)", "min", F.MINUTES, "used_downtime_min", None),
    ("spot_restart_min", "Restart R exposed (the plan's restart less its downtime)", "min",
     F.MINUTES, "MAX(used_restart_min-spot_downtime_min,0)", None),
    ("spot_mtbf_min", "Job MTBF of failures M (the plan's)", "min", F.MINUTES, "job_mtbf_min", None),
    ("spot_keep", "Save fits the notice (1: saved on notice; 0: rolls back)", "1/0",
     "0", "IF(spot_notice_min>=spot_stall_min,1,0)", None),
    ("spot_lam", "Failure rate lambda = 1 / M", "per min", "0.000000E+00", "1/spot_mtbf_min", None),
    ("spot_pi", "Preemption rate pi", "per min", "0.000000E+00", "1/spot_mtbp_min", None),
    ("spot_theta", "theta = lambda + pi", "per min", "0.000000E+00", "spot_lam+spot_pi", None),
    ("spot_restart_all", "Restart R' with its failures, preemptions, downtimes, waits", "min", F.MINUTES,
     "(EXP(spot_theta*spot_restart_min)-1)*(1/spot_theta+spot_lam/spot_theta*spot_downtime_min"
     "+spot_pi/spot_theta*spot_wait_min)", None),
    ("spot_young_min", "Search centre: sqrt(2 C / rate of events that cost rework)", "min", F.MINUTES,
     "SQRT(2*spot_stall_min/(spot_lam+IF(spot_keep=1,0,spot_pi)))", None),
    ("spot_span", "Search bracket: centre / and x this factor", "x", "#,##0", None, None),
    ("spot_golden", "Golden-section ratio (sqrt 5 - 1) / 2", "", "0.000000", "(SQRT(5)-1)/2", None),
    ("spot_big", "Objective where the model overflows", "", "0E+0", None, None),
)
_CONSTANTS = {"spot_span": 1000.0, "spot_big": 1e300}


def _status() -> str:
    """The sheet's status: no preemption given, a refusal by name, or the plan below."""
    return ('IF(AND(ISNUMBER(preemptions_per_h),ISNUMBER(preemptions_per_node_h)),"refused: preemptions_per_h and '
            'preemptions_per_node_h: give the job\'s rate or the node\'s, not both",'
            'IF(NOT(spot_preemptions_per_h>0),"no preemptions given (preemptions_per_h and preemptions_per_node_h empty '
            'or 0): the Plan sheet\'s on-demand plan is the plan",IF(used_async_write_min>0,"refused: async_write_min '
            'must be 0 with preemptions (checkpoint on notice is modelled for synchronous saves)","spot capacity: planned '
            'below (Plan sheet: the same inputs on on-demand capacity)")))')


def _guard(expr: str) -> str:
    return f'IF(LEFT(spot_status,4)<>"spot",{_NA},IFERROR({expr},{_NA}))'


def _row(wb: Workbook, ws, row: int, name: str, label: str, unit: str, fmt: str, value: Any, currency: str,
         built: Built, engine_key: str | None, hidden: bool = False) -> int:
    ws.cell(row=row, column=1, value=label).alignment = Alignment(wrap_text=True, vertical="top")
    c = ws.cell(row=row, column=2, value=value)
    c.number_format = fmt
    ws.cell(row=row, column=3, value=S.fmt_unit(unit, currency))
    ws.cell(row=row, column=4, value=name).font = S.NOTE_FONT
    S.name(wb, name, SHEET, f"B{row}")
    if engine_key:
        built.checks.append(Check(SHEET, f"B{row}", ("spot",), engine_key))
        for col in range(1, 4):
            ws.cell(row=row, column=col).fill = S.KEY_FILL
    if hidden:
        ws.row_dimensions[row].outlineLevel = 1
        ws.row_dimensions[row].hidden = True
    return row + 1


def _search_rows(ws, first: int) -> tuple[str, str]:
    """The golden-section steps on ``log T`` (columns F-N, grouped and hidden, one row a step, as the engine's
    loop; text where the status is not a plan): (a, b) of the last step."""
    S.header(ws, first, ["step", "a", "b", "x1", "x2", "T1", "T2", "f1", "f2"], col=6)
    r0 = first + 1
    g = "spot_golden"
    for r in range(r0, r0 + STEPS + 1):
        p, left = r - 1, f"M{r - 1}<=N{r - 1}"
        if r == r0:
            cells = ["LN(spot_young_min/spot_span)", "LN(spot_young_min*spot_span)", f"H{r}-{g}*(H{r}-G{r})",
                     f"G{r}+{g}*(H{r}-G{r})"]
        else:
            cells = [f"IF({left},G{p},I{p})", f"IF({left},J{p},H{p})", f"IF({left},H{r}-{g}*(H{r}-G{r}),J{p})",
                     f"IF({left},I{p},G{r}+{g}*(H{r}-G{r}))"]
        cells += [f"EXP(I{r})", f"EXP(J{r})"]
        cells += ([_objective(f"K{r}"), _objective(f"L{r}")] if r == r0 else
                  [f"IF({left},{_objective(f'K{r}')},N{p})", f"IF({left},M{p},{_objective(f'L{r}')})"])
        ws.cell(row=r, column=6, value=r - r0)
        for col, expr in enumerate(cells, start=7):
            ws.cell(row=r, column=col, value="=" + _guard(expr))
    ws.column_dimensions.group("F", "N", hidden=True, outline_level=1)
    last = r0 + STEPS
    return f"G{last}", f"H{last}"


def _plan_rows(a: str, b: str) -> list[tuple[str, str, str, str, str, str | None]]:
    """The plan at the chosen interval: (name, label, unit, format, formula, engine column)."""
    p = _cycle_parts("spot_chosen_interval_min")
    opt = _cycle_parts("spot_exact_interval_min")
    wk = "useful_training_h*60/spot_cycle_work_min"      # cycles the job needs
    e, th, pi, Wc = p["e"], "spot_theta", "spot_pi", "spot_wait_min"
    partial = (f"EXP(-{th}*spot_chosen_interval_min)*(1-EXP(-{th}*spot_stall_min)-{th}*spot_stall_min*"
               f"EXP(-{th}*spot_stall_min))/{th}^2")
    grow = "(EXP(spot_theta*spot_restart_min)-1)"
    return [
        ("spot_exact_interval_min", "Optimum interval for failures + preemptions", "min", F.MINUTES,
         f"EXP(({a}+{b})/2)", "exact_interval_min"),
        ("spot_chosen_interval_min", "Chosen interval (Inputs' interval_min, empty = the optimum)", "min", F.MINUTES,
         'IF(interval_min="",spot_exact_interval_min,interval_min)', "chosen_interval_min"),
        ("spot_cycle_time_min", "Expected wall time per cycle (checkpoint to checkpoint)", "min", F.MINUTES,
         f"{p['time']}/{e}", None),
        ("spot_cycle_work_min", "Expected work kept per cycle", "min", F.MINUTES, f"{p['work']}/{e}", None),
        ("spot_wall_h", "Expected wall time", "h", F.HOURS, f"{wk}*spot_cycle_time_min/60", "wall_h"),
        ("spot_save_h", "  saving (periodic and on notice)", "h", F.HOURS,
         f"{wk}*({p['q']}*spot_stall_min+spot_keep*({p['pp']}*spot_stall_min+{pi}*{partial}))/{e}/60", "save_h"),
        ("spot_restart_h", "  restarting (downtimes included)", "h", F.HOURS,
         f"{wk}*(({p['pf']}+{p['pp']})*{grow}*(1/{th}+spot_lam/{th}*spot_downtime_min)+{p['pf']}*spot_downtime_min)"
         f"/{e}/60", "restart_h"),
        ("spot_capacity_wait_h", "  waiting for capacity (no GPUs held)", "h", F.HOURS,
         f"{wk}*({p['pp']}*{Wc}+({p['pf']}+{p['pp']})*{grow}*({pi}/{th})*{Wc})/{e}/60", "capacity_wait_h"),
        ("spot_rework_h", "  rework (work lost to failures and to preemptions without a notice save)", "h", F.HOURS,
         "MAX(spot_wall_h-useful_training_h-spot_save_h-spot_restart_h-spot_capacity_wait_h,0)", "rework_h"),
        ("spot_expected_failures", "Expected failures", "failures", "#,##0.00", f"{wk}*{p['pf']}/{e}",
         "expected_failures"),
        ("spot_expected_preemptions", "Expected preemptions", "preemptions", "#,##0.00", f"{wk}*{p['pp']}/{e}",
         "expected_preemptions"),
        ("spot_waste_fraction", "Waste (share of wall time not useful)", "share", F.PERCENT,
         "1-useful_training_h/spot_wall_h", "waste_fraction"),
        ("spot_waste_fraction_at_optimum", "Waste at the optimum interval", "share", F.PERCENT,
         f"1-{opt['work']}/{opt['time']}", "waste_fraction_at_optimum"),
        ("spot_price", "Price per GPU-hour paid (spot; empty = price_per_gpu_hour)", "money per GPU-h", "#,##0.00",
         'IF(spot_price_per_gpu_hour="",price_per_gpu_hour,spot_price_per_gpu_hour)', None),
        ("spot_job_gpu_hours", "GPU-hours the job holds (the wait for capacity holds none)", "GPU-h", F.GPU_HOURS,
         "(spot_wall_h-spot_capacity_wait_h)*gpus", "job_gpu_hours"),
        ("spot_compute_cost", "Compute cost on spot capacity", "money", F.MONEY, "spot_job_gpu_hours*spot_price",
         "compute_cost"),
        ("spot_goodput", "Goodput (useful share of the time GPUs are held)", "share", F.PERCENT,
         "useful_training_h/(spot_wall_h-spot_capacity_wait_h)", "goodput"),
        ("spot_cost_per_useful_gpu_hour", "Cost per useful GPU-hour", "money per GPU-h", "#,##0.000",
         "spot_compute_cost/(useful_training_h*gpus)", "cost_per_useful_gpu_hour"),
        ("spot_saves_vs_on_demand", "Saving against the Plan sheet's on-demand compute cost", "money", F.MONEY,
         "compute_cost-spot_compute_cost", None),
    ]


def spot_sheet(wb: Workbook, currency: str, built: Built) -> None:
    """The Spot sheet (module notes), placed after the Compare sheet."""
    ws = wb.create_sheet(SHEET, index=wb.sheetnames.index("Compare") + 1 if "Compare" in wb.sheetnames else None)
    S.title(ws, "Spot: the plan on preemptible capacity (live formulas)",
            "Failures and preemptions while the job holds its GPUs; a save that fits the notice is taken on notice "
            "(the preemption model: see Notes). Inputs: preemptions_per_h (or preemptions_per_node_h), preemption_notice_min, "
            "capacity_wait_min, spot_price_per_gpu_hour on the Inputs sheet.")
    ws["A3"] = "Status"
    ws["A3"].font = Font(bold=True)
    ws["B3"] = "=" + _status()
    ws["B3"].alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells("B3:D3")
    ws.row_dimensions[3].height = 45
    ws.conditional_formatting.add("B3", FormulaRule(formula=['LEFT(B3,7)="refused"'], fill=_ALERT_FILL,
                                                    font=Font(bold=True, color="9C0006")))
    S.name(wb, "spot_status", SHEET, "B3")
    S.header(ws, 4, ["Quantity", "Value", "Unit", "Defined name"])
    name, label, unit, fmt, expr = _JOB_RATE
    row = _row(wb, ws, 5, name, label, unit, fmt, "=" + expr, currency, built, None)
    for name, label, unit, fmt, expr, key in _INPUT_ROWS:
        value = _CONSTANTS[name] if expr is None else "=" + _guard(expr)
        row = _row(wb, ws, row, name, label, unit, fmt, value, currency, built, key, hidden=name in _CONSTANTS)
    a, b = _search_rows(ws, 5)
    for name, label, unit, fmt, expr, key in _plan_rows(a, b):
        row = _row(wb, ws, row, name, label, unit, fmt, "=" + _guard(expr), currency, built, key)
    S.note(ws, row + 1, "The search rows (columns F-N, grouped: expand with +) are the engine's golden-section steps on "
           "log T. Exponential gaps for failures and preemptions alike (a spot market's preemptions cluster in "
           "practice); the notice save always completes. The deadline on spot capacity is simulated: the Compare "
           "sheet's capacity block, and `ckptplan plan`.", 4)
    ws.sheet_properties.outlinePr.summaryBelow = False
    for col, width in zip("ABCD", (62, 18, 16, 30)):
        ws.column_dimensions[col].width = width
    ws.freeze_panes = "A5"
    ws.print_title_rows = "4:4"


_POLICIES = (("on-demand", "all on-demand"), ("spot", "all spot"), ("fallback", "spot, on-demand fallback"))


def capacity_block(wb: Workbook, capacity: dict[str, Any] | None, used: dict[str, Any], currency: str) -> None:
    """Under the Compare sheet's figures: the three capacity policies (values of
    :func:`ckptplan.engine.spot.scenario_capacity`, ``used`` the Inputs values they were simulated with), with a
    live check that says when an input changed since; a line saying why when there is none."""
    ws = wb["Compare"]
    row = ws.max_row + 3
    ws.cell(row=row, column=1, value="Capacity: spot, on-demand, or spot with an on-demand fallback").font = \
        Font(bold=True)
    if capacity is None:
        S.note(ws, row + 1, "Left out: the scenario has no preemptions_per_h or no deadline_h (the comparison prices "
               "the three against the deadline), or the workbook was written with --no-deadline; give both and "
               "regenerate: ckptplan workbook --from THIS_FILE.", 6)
        return
    S.note(ws, row + 1, f"Monte Carlo values, not formulas: {capacity['runs']:,} simulated runs per policy, seed "
           f"{capacity['seed']}, on {dt.date.today().isoformat()}, deadline {capacity['deadline_h']:,g} h "
           "(the fallback moves to on-demand when the time left less the work left at "
           "on-demand's expected overheads falls below its threshold: Wu et al., NSDI'24). Regenerate to refresh.", 6)
    ws.cell(row=row + 2, column=1, value="Simulation status").font = Font(bold=True)
    status = ws.cell(row=row + 2, column=2, value="=" + flags.stale_check([(k, k, used[k]) for k in F.INPUT_KEYS]))
    status.alignment = Alignment(wrap_text=True, vertical="top")
    ws.merge_cells(start_row=row + 2, start_column=2, end_row=row + 2, end_column=6)
    ws.row_dimensions[row + 2].height = 45
    flags.highlight(ws, f"B{row + 2}", flags.UP_TO_DATE)
    S.name(wb, "capacity_status", "Compare", f"B{row + 2}")
    heads = ["capacity", "interval (min)", "P(finish by the deadline)", "wall P50 (h)", "wall P90 (h)",
             f"cost P50 ({currency})", f"cost P90 ({currency})"]
    S.header(ws, row + 3, heads)
    for col in range(1, len(heads) + 1):
        ws.cell(row=row + 3, column=col).alignment = Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row + 3].height = 45
    fmts = (F.MINUTES, "0.0%", F.HOURS, F.HOURS, F.MONEY, F.MONEY)
    for i, (key, label) in enumerate(_POLICIES):
        f = capacity["policies"][key]
        r = row + 4 + i
        ws.cell(row=r, column=1, value=label)
        for j, (value, fmt) in enumerate(zip((f["interval_min"], f["p_finish_by_deadline"], f["wall_h_p50"],
                                              f["wall_h_p90"], f["cost_p50"], f["cost_p90"]), fmts), start=2):
            ws.cell(row=r, column=j, value=value).number_format = fmt
    fb = capacity["policies"]["fallback"]
    S.note(ws, row + 8, f"Fallback threshold {fb['threshold_min']:,.1f} min of slack: the least that is on time as "
           f"often as on-demand ({fb['target_p_finish']:.1%}). Intervals: on-demand the exact optimum for failures, "
           "spot the Spot sheet's for failures + preemptions.", 6)
