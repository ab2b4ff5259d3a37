"""The engine's models written as Excel formulas: thin views of :mod:`engine`, tested against it.

Each :class:`Calc` is one derived quantity. Its ``expr`` builds the Excel expression from a mapping
of references (defined names such as ``checkpoint_stall_min`` on the Plan sheet, or cell
addresses such as ``B7`` in a table row), so one formula text serves the Plan sheet, the Compare
columns, the Scaling rows and the Scenarios table. ``engine_key`` names the column of
:func:`engine.evaluate` the cell must equal; ``tests/test_workbook_recalc.py`` recalculates the
generated workbooks in LibreOffice and compares every such cell with the engine to 1e-9.

Formulas mirror (see the engine docstrings for assumptions and references):

* job failure rate: :func:`engine.reliability.job_failure_rate_per_h` (up to 3 domain kinds);
* Young, Daly intervals: :func:`engine.waste.young_interval`, :func:`engine.waste.daly_interval`;
* exact optimum: :func:`engine.waste.exact_optimal_interval`. Excel has no Lambert W, so the sheet
  solves the same first-order condition ``ln y - y + 1 + C_eff/M = 0`` for ``y = 1 - T/M`` by six
  Newton steps from ``max(1 - sqrt(2c), exp(-1 - c))`` (a lower bound of the root, from which Newton
  increases monotonically to it), and uses the Lambert-W series in ``p = sqrt(2(1 - e^-c))`` below
  ``c = 1e-4``, where ``ln y`` loses precision. Agrees with the engine to ~2e-11 for
  ``c`` in [1e-14, 600];
* exact expected wall time, waste, failures and breakdown: :func:`engine.waste.expected_wall_time`,
  :func:`engine.waste.waste_fraction`, :func:`engine.waste.time_breakdown`;
* GPU-hours, the job's compute money, goodput: :mod:`engine.cost`. The design before the plan and
  the money after it (storage, spares, the total) are :mod:`workbook.design_formulas`, whose
  ``PLAN_CALCS`` is what the sheets write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..engine.fields import DOMAIN_FIELDS, DOMAIN_SLOTS, ELASTIC_FIELD_NAMES, FIELDS, NOT_ON_SHEETS, Field, domain_field
from . import wall_formulas as _wall

__all__ = ["CALCS", "CALC_BY_KEY", "ELASTIC_INPUTS", "GPU_HOURS", "HOURS", "INPUTS", "INPUT_KEYS", "MAX_EXPONENT", "MINUTES", "MONEY",
           "NEVER", "NEWTON_STEPS", "PERCENT", "RATIO", "SERIES_BELOW", "Calc", "Refs", "change_problems",
           "exposed_restart", "field_problem",
           "first_order_waste_at", "floor_interval", "input_problems", "waste_at"]

Refs = Mapping[str, str]

# Above this exponent EXP() overflows (Excel and LibreOffice give #NUM!); the engine raises there.
MAX_EXPONENT = 700
NEVER = '"n/a: the job would never finish (see Model check)"'
SERIES_BELOW = 1e-4
NEWTON_STEPS = 6
_SERIES = ("1", "-1/3", "11/72", "-43/540", "769/17280", "-221/8505")

MINUTES = "0.00"
HOURS = "#,##0.00"
PERCENT = "0.000%"
GPU_HOURS = "#,##0"
MONEY = "#,##0"
RATIO = "0.000000"


@dataclass(frozen=True)
class Calc:
    key: str
    label: str
    unit: str
    fmt: str
    expr: Callable[[Refs], str]
    engine_key: str | None = None
    helper: bool = False      # solver steps: shown grouped and collapsed


def _rate(r: Refs) -> str:
    node = f'IF({r["node_mtbf_h"]}<>"",(1-{r["nonfatal_share"]})*{r["nodes"]}/{r["node_mtbf_h"]},0)'
    doms = "".join(
        f'+IF({r[f"domain{i}_mtbf_h"]}<>"",CEILING({r["nodes"]}/{r[f"domain{i}_nodes_per_domain"]},1)/{r[f"domain{i}_mtbf_h"]},0)'
        for i in range(1, DOMAIN_SLOTS + 1))
    return node + doms


def _waste(T: str, r: Refs) -> str:
    """1 - T / ((M + D) e^(R/M) e^(L/M) (1 - e^(-P/M))), L = T + C + W, P = T + C + W s, R exposed, D downtime."""
    M, C, W, s = r["job_mtbf_min"], r["checkpoint_stall_min"], r["async_write_min"], r["async_slowdown_fraction"]
    R, D = exposed_restart(r), r["downtime_min"]
    return f"1-{T}/(({M}+{D})*EXP({R}/{M})*EXP(({T}+{C}+{W})/{M})*(1-EXP(-({T}+{C}+{W}*{s})/{M})))"


def _guard(expr: str, r: Refs) -> str:
    return f"IF({r['model_ok']},{expr},{NEVER})"


def floor_interval(T: str, r: Refs) -> str:
    """MAX(T, W (1 - s)): an interval no shorter than the async write it must fit (engine.waste)."""
    return f"MAX({T},{r['async_write_min']}*(1-{r['async_slowdown_fraction']}))"


def _newton(prev: str, r: Refs) -> str:
    c = r["stall_ratio"]
    return f"IF({c}<{SERIES_BELOW},{prev},{prev}-(LN({prev})-{prev}+1+{c})/(1/{prev}-1))"


def _series(r: Refs) -> str:
    c = r["stall_ratio"]
    p = f"SQRT(2*({c}-{c}^2/2+{c}^3/6-{c}^4/24))"
    return "+".join(f"({coef})*{p}^{k + 1}" for k, coef in enumerate(_SERIES))


def exposed_restart(r: Refs) -> str:
    """The restart the job can fail in: ``restart_min - downtime_min`` (the wait for a node is downtime)."""
    return f"({r['restart_min']}-{r['downtime_min']})"


def _exponent(r: Refs) -> str:
    """Largest (R + T + C + W)/M over the intervals the sheet evaluates (R the exposed restart)."""
    T = f"MAX({r['chosen_interval_min']},{r['young_interval_min']},{r['daly_interval_min']},{r['exact_interval_min']})"
    return f"({exposed_restart(r)}+{T}+{r['checkpoint_stall_min']}+{r['async_write_min']})/{r['job_mtbf_min']}"


def _parts(r: Refs) -> tuple[str, str]:
    T, C, W, s, M = r["chosen_interval_min"], r["checkpoint_stall_min"], r["async_write_min"], r["async_slowdown_fraction"], r["job_mtbf_min"]
    segments = f"{r['useful_training_h']}*60/{T}"
    per_segment = f"EXP(({T}+{C}+{W})/{M})*(1-EXP(-({T}+{C}+{W}*{s})/{M}))"
    return segments, per_segment


def _newton_calcs() -> list[Calc]:
    calcs = [Calc("newton_y0", "Exact optimum, start y0 = max(1 - sqrt(2c), exp(-1 - c))", "1 - T/M", RATIO,
                  lambda r: f"MAX(1-SQRT(2*{r['stall_ratio']}),EXP(-1-{r['stall_ratio']}))", helper=True)]
    for k in range(1, NEWTON_STEPS + 1):
        calcs.append(Calc(f"newton_y{k}", f"Exact optimum, Newton step {k}", "1 - T/M", RATIO,
                          (lambda k: lambda r: _newton(r[f"newton_y{k - 1}"], r))(k), helper=True))
    return calcs


CALCS: tuple[Calc, ...] = (
    Calc("job_failure_rate_per_h", "Job failure rate", "per h", "0.000000",
         _rate),
    Calc("job_mtbf_h", "Job MTBF", "h", HOURS,
         lambda r: f'IF({r["job_mtbf_override_h"]}<>"",{r["job_mtbf_override_h"]},1/{r["job_failure_rate_per_h"]})',
         "job_mtbf_h"),
    Calc("job_mtbf_min", "Job MTBF", "min", HOURS, lambda r: f"{r['job_mtbf_h']}*60"),
    Calc("effective_stall_min", "Effective stall per save (blocking + throughput lost to the write)", "min", MINUTES,
         lambda r: f"{r['checkpoint_stall_min']}+{r['async_write_min']}*{r['async_slowdown_fraction']}",
         "effective_stall_min"),
    Calc("young_interval_min", "Young interval sqrt(2 C M)", "min", MINUTES,
         lambda r: f"SQRT(2*{r['effective_stall_min']}*{r['job_mtbf_min']})", "young_interval_min"),
    Calc("daly_interval_min", "Daly higher-order interval", "min", MINUTES,
         lambda r: (lambda C, M: f"IF({C}<2*{M},SQRT(2*{C}*{M})*(1+SQRT({C}/(2*{M}))/3+{C}/(2*{M})/9)-{C},{M})")(
             r["effective_stall_min"], r["job_mtbf_min"]), "daly_interval_min"),
    Calc("stall_ratio", "c = effective stall / job MTBF", "ratio", "0.000000",
         lambda r: f"{r['effective_stall_min']}/{r['job_mtbf_min']}"),
    *_newton_calcs(),
    Calc("exact_interval_min", "Exact optimum interval (Daly's complete model)", "min", MINUTES,
         lambda r: floor_interval(f"{r['job_mtbf_min']}*IF({r['stall_ratio']}<{SERIES_BELOW},{_series(r)},1-{r[f'newton_y{NEWTON_STEPS}']})", r),
         "exact_interval_min"),
    Calc("chosen_interval_min", "Chosen interval (input, else the exact optimum)", "min", MINUTES,
         lambda r: f'IF({r["interval_min"]}<>"",{r["interval_min"]},{r["exact_interval_min"]})', "chosen_interval_min"),
    Calc("model_ok", "Can the job finish? (FALSE: it fails faster than it can save and restart; shorten restarts and "
         "saves, or use fewer or more reliable nodes)", "", "General",
         lambda r: f"{_exponent(r)}<={MAX_EXPONENT}"),
    Calc("first_order_waste", "First-order waste C/T + T/(2M) at the chosen interval", "share", PERCENT,
         lambda r: f"{r['effective_stall_min']}/{r['chosen_interval_min']}+{r['chosen_interval_min']}/(2*{r['job_mtbf_min']})",
         "first_order_waste"),
    Calc("young_min_waste", "First-order waste at Young's interval sqrt(2C/M)", "share", PERCENT,
         lambda r: f"SQRT(2*{r['effective_stall_min']}/{r['job_mtbf_min']})", "young_min_waste"),
    Calc("waste_fraction", "Exact waste at the chosen interval (share of wall time)", "share", PERCENT,
         lambda r: _guard(_waste(r["chosen_interval_min"], r), r), "waste_fraction"),
    Calc("waste_fraction_at_optimum", "Exact waste at the exact optimum", "share", PERCENT,
         lambda r: _guard(_waste(r["exact_interval_min"], r), r), "waste_fraction_at_optimum"),
    Calc("waste_fraction_at_young", "Exact waste at Young's interval", "share", PERCENT,
         lambda r: _guard(_waste(floor_interval(r["young_interval_min"], r), r), r), "waste_fraction_at_young"),
    Calc("waste_fraction_at_daly", "Exact waste at Daly's interval", "share", PERCENT,
         lambda r: _guard(_waste(floor_interval(r["daly_interval_min"], r), r), r), "waste_fraction_at_daly"),
    Calc("expected_failures", "Expected failures per run, restarts included (exposed time / job MTBF)", "failures",
         "#,##0.0",
         lambda r: _guard(f"{_parts(r)[0]}*{_parts(r)[1]}*EXP({exposed_restart(r)}/{r['job_mtbf_min']})", r),
         "expected_failures"),
    Calc("wall_h", "Expected wall time", "h", HOURS,
         lambda r: _guard(f"{_parts(r)[0]}*({r['job_mtbf_min']}+{r['downtime_min']})*EXP({exposed_restart(r)}/"
                          f"{r['job_mtbf_min']})*{_parts(r)[1]}/60", r),
         "wall_h"),
    Calc("useful_h", "  useful compute", "h", HOURS, lambda r: f"{r['useful_training_h']}", "useful_h"),
    Calc("save_h", "  checkpoint stall and write slowdown", "h", HOURS,
         lambda r: f"{_parts(r)[0]}*{r['effective_stall_min']}/60", "save_h"),
    Calc("restart_h", "  restart (downtime after every failure included)", "h", HOURS,
         lambda r: _guard(f"({_parts(r)[0]}*{_parts(r)[1]}*{r['job_mtbf_min']}*(EXP({exposed_restart(r)}/"
                          f"{r['job_mtbf_min']})-1)+{r['downtime_min']}*{r['expected_failures']})/60", r),
         "restart_h"),
    Calc("rework_h", "  rework (progress lost to failures)", "h", HOURS,
         lambda r: _guard("MAX(({0}*{1}*{2}-{0}*({3}+{4}+{5}*{6}))/60,0)".format(
             _parts(r)[0], _parts(r)[1], r["job_mtbf_min"], r["chosen_interval_min"],
             r["checkpoint_stall_min"], r["async_write_min"], r["async_slowdown_fraction"]), r), "rework_h"),
    Calc("gpus", "GPUs", "GPUs", "#,##0", lambda r: f"{r['nodes']}*{r['gpus_per_node']}", "gpus"),
    Calc("job_gpu_hours", "GPU-hours of the job (spares apart)", "GPU-h", GPU_HOURS,
         lambda r: _guard(f"{r['wall_h']}*{r['gpus']}", r), "job_gpu_hours"),
    *[Calc(f"{cat}_gpu_hours", f"  GPU-hours, {cat}", "GPU-h", GPU_HOURS,
           (lambda cat: lambda r: _guard(f"{r[f'{cat}_h']}*{r['gpus']}", r))(cat), f"{cat}_gpu_hours")
      for cat in ("useful", "save", "rework", "restart")],
    Calc("compute_cost", "Cost of the job's GPU time", "money", MONEY,
         lambda r: _guard(f"{r['job_gpu_hours']}*{r['price_per_gpu_hour']}", r), "compute_cost"),
    *[Calc(f"{cat}_cost", f"  cost, {cat}", "money", MONEY,
           (lambda cat: lambda r: _guard(f"{r[f'{cat}_gpu_hours']}*{r['price_per_gpu_hour']}", r))(cat), f"{cat}_cost")
      for cat in ("useful", "save", "rework", "restart")],
    Calc("goodput", "Goodput (useful share of GPU-hours)", "share", PERCENT,
         lambda r: _guard(f"{r['useful_h']}/{r['wall_h']}", r), "goodput"),
    # ---- the analytic deadline answer (engine.wall_distribution; text in workbook/wall_formulas.py): keep last
    Calc("dl_in_range", f"Deadline answer: failures rare enough for it (restart + interval + save under "
         f"{_wall.wd.MAX_EXPONENT:g} job MTBFs)", "", "General",
         lambda r: f"AND({r['model_ok']},({exposed_restart(r)}+{r['chosen_interval_min']}+{r['checkpoint_stall_min']}"
                   f"+{r['async_write_min']})/{r['job_mtbf_min']}<={_wall.wd.MAX_EXPONENT!r})", helper=True),
    *[Calc(f"dl_{key}", f"Deadline answer: {label}", unit, fmt,
           (lambda part: lambda r: _wall.guard(_wall.geometry(part, r), r, NEVER))(part), helper=True)
      for key, part, label, unit, fmt in (
          ("segments", "segments", "segments n = ceil(work / T)", "segments", "#,##0"),
          ("last_segment_min", "last_segment", "last segment", "min", MINUTES),
          ("skip_last", "skip", "job ends before the last write is durable (1 = yes)", "0/1", "0"),
          ("last_clean_min", "last_clean", "last window, from a restart", "min", MINUTES),
          ("last_flow_min", "last_flow", "last window, from a checkpoint", "min", MINUTES))],
    *[Calc(f"dl_k{j}_{w}", f"Deadline answer: cumulant {j} of the time lost to a failure, {_wall.WINDOWS[w]}",
           "M^" + str(j), "General", (lambda j, w: lambda r: _wall.guard(_wall.k(j, w, r), r, NEVER))(j, w),
           helper=True) for w in _wall.WINDOWS for j in (1, 2, 3)],
    *[Calc(f"dl_restart_{j}", f"Deadline answer: cumulant {j} of a restart (retried until it completes)", "M^" + str(j),
           "General", (lambda j: lambda r: _wall.guard(_wall.restart(j, r), r, NEVER))(j), helper=True)
      for j in (1, 2, 3)],
    *[Calc(f"dl_clean{j}_{w}", f"Deadline answer: cumulant {j} of the {_wall.WINDOWS[w]}", "M^" + str(j),
           "General", (lambda j, w: lambda r: _wall.guard(_wall.clean(j, w, r), r, NEVER))(j, w), helper=True)
      for w in ("fc", "lc") for j in (1, 2, 3)],
    *[Calc(f"dl_flow{j}_{w}", f"Deadline answer: cumulant {j} of the {_wall.WINDOWS[w[0] + 'f']}", "M^" + str(j),
           "General", (lambda j, w: lambda r: _wall.guard(_wall.flow(j, w, r), r, NEVER))(j, w), helper=True)
      for w in ("full", "last") for j in (1, 2, 3)],
    *[Calc(f"dl_total{j}", f"Deadline answer: cumulant {j} of the wall time", "M^" + str(j), "General",
           (lambda j: lambda r: _wall.guard(_wall.total(j, r), r, NEVER))(j), helper=True) for j in (1, 2, 3)],
    Calc("dl_wall_mean_min", "Deadline answer: mean wall time of the finite job (exact)", "min", HOURS,
         lambda r: _wall.guard(f"{r['job_mtbf_min']}*{r['dl_total1']}", r, NEVER), helper=True),
    Calc("dl_wall_sd_min", "Deadline answer: standard deviation of the wall time (exact)", "min", HOURS,
         lambda r: _wall.guard(f"{r['job_mtbf_min']}*SQRT({r['dl_total2']})", r, NEVER), helper=True),
    Calc("dl_wall_skewness", "Deadline answer: skewness of the wall time (exact)", "ratio", "0.0000",
         lambda r: _wall.guard(f"{r['dl_total3']}/{r['dl_total2']}^1.5", r, NEVER), helper=True),
    Calc("dl_failure_free_min", "Deadline answer: failure-free wall time (the least it can take)", "min", HOURS,
         lambda r: _wall.guard(_wall.geometry("failure_free", r), r, NEVER), helper=True),
    Calc("dl_expected_failures", "Deadline answer: expected failures (finite job, restarts excluded)", "failures",
         "#,##0.0", lambda r: _wall.guard(f"{r['dl_total1']}/(EXP({_wall.x('r', r)})*(1+{r['downtime_min']}/"
                                          f"{r['job_mtbf_min']}))", r, NEVER), helper=True),
    Calc("dl_ripple", "Deadline answer: lattice ripple (restarts long against windows)", "share", "General",
         lambda r: _wall.guard(_wall.cost_ripple(r), r, NEVER), helper=True),
    Calc("p_finish_by_deadline", "P(finish by the deadline), analytic (exponential failures)", "share", PERCENT,
         lambda r: f'IF({r["deadline_h"]}="","n/a: no deadline given",{_wall.guard(_wall.probability(r), r, NEVER)})',
         "p_finish_by_deadline"),
    *[Calc(f"wall_h_p{round(p * 100)}", f"Wall time, P{round(p * 100)} (analytic)", "h", HOURS,
           (lambda p: lambda r: _wall.guard(f"({_wall.quantile(p, r)})/60", r, NEVER))(p), f"wall_h_p{round(p * 100)}")
      for p in _wall.wd.QUANTILES],
    Calc("deadline_approximation_ok", f"Deadline answer inside its validity range (>= {_wall.wd.MIN_FAILURES:g} "
         f"failures, skewness <= {_wall.wd.MAX_SKEWNESS:g}, restarts not much longer than windows)", "", "General",
         lambda r: (f"IF({r['dl_in_range']},AND({r['dl_expected_failures']}>={_wall.wd.MIN_FAILURES!r},"
                    f"{r['dl_wall_skewness']}<={_wall.wd.MAX_SKEWNESS!r},{r['dl_ripple']}<={_wall.wd.MAX_RIPPLE!r}),FALSE)"),
         "deadline_approximation_ok"),
)
CALC_BY_KEY = {c.key: c for c in CALCS}

def _inputs() -> dict[str, Field]:
    """Every Inputs-sheet cell, keyed by its defined name, in sheet order: the registry's fields
    (:data:`ckptplan.engine.fields.FIELDS`) with the correlated-domain slots after the job MTBF override."""
    out: dict[str, Field] = {}
    for f in FIELDS:
        if f.name in NOT_ON_SHEETS or f.name in ELASTIC_FIELD_NAMES:   # a Weibull rate: refused; elastic: own block
            continue
        out[f.defined_name] = f
        if f.name == "job_mtbf_h":
            for i in range(1, DOMAIN_SLOTS + 1):
                for part in DOMAIN_FIELDS:
                    d = domain_field(i, part.name)
                    out[d.name] = d
    return out


#: defined name -> registry field of every input cell (the Plan's formulas reference these names)
INPUTS: dict[str, Field] = _inputs()
INPUT_KEYS: tuple[str, ...] = tuple(INPUTS)
#: defined name -> registry field of the elastic continuation's numeric input cells (their own block on the Inputs
#: sheet, under the others: the live formulas plan a job that stops at every failure and never read them; the
#: elastic plan's engine values do, :mod:`workbook.elastic_block`)
ELASTIC_INPUTS: dict[str, Field] = {f.defined_name: f for f in FIELDS if f.name in ELASTIC_FIELD_NAMES}


def waste_at(T: str, refs: Refs) -> str:
    """Exact waste at interval ``T`` (a reference or expression), guarded like the Plan cells."""
    return _guard(_waste(T, refs), refs)


def first_order_waste_at(T: str, refs: Refs) -> str:
    return f"{refs['effective_stall_min']}/{T}+{T}/(2*{refs['job_mtbf_min']})"


def input_problems(refs: Refs) -> str:
    """Text naming every input that breaks its rule ("" when all are valid).

    Each input's rule and its Excel condition come from the registry (:data:`INPUTS`). Data
    validation stops typed mistakes, but pasted
    values bypass it; the Plan sheet's "Input check" shows this text (or OK) so such a mistake
    stays visible instead of turning into a wrong number or an #NUM! further down. Cross-field
    rules (e.g. the async write fitting in the interval) are the engine's; the sheet checks each
    input on its own.
    """
    return "&".join(field_problem(key, field, refs[key]) for key, field in INPUTS.items())


def field_problem(key: str, field: Field, x: str) -> str:
    """Text naming what is wrong with the input ``key`` at reference ``x`` ("" when it meets its registry rule):
    an error value, a required input left empty, text, or a number the rule refuses."""
    message = f'"{key} must be {field.check.noun}; "'
    valid = f'IF(ISNUMBER({x}),IF({field.check.excel_condition(x)},"",{message}),{message})'
    empty = '""' if not field.required else f'"{key} is required; "'
    return f'IF(ISERROR({x}),"{key} is an error value; ",IF({x}="",{empty},{valid}))'


def change_problems(cells: Mapping[str, tuple[str, str]]) -> str:
    """Text naming every Compare change cell that holds no number ("" when all are numbers or blank).

    ``cells``: input key -> ("set to" cell, "x baseline" cell). A factor typed as ``x2`` says what the cell
    expected ("nodes: 'x baseline' takes a factor such as 2 or 0.5, not x2; ") instead of an error value
    further down; a number that breaks the input's rule once applied is the input check's to name.
    """
    parts = []
    for key, (set_cell, times_cell) in cells.items():
        noun = INPUTS[key].check.noun
        for cell, what in ((set_cell, f"'set to' takes {noun}"), (times_cell, "'x baseline' takes a factor such as "
                                                                              "2 or 0.5")):
            parts.append(f'IF(ISNUMBER({cell}),"",IF(ISERROR({cell}),"{key}: {what}, not an error value; ",'
                         f'IF({cell}="","","{key}: {what}, not "&{cell}&"; ")))')
    return "&".join(parts)
