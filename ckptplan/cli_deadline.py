"""``ckptplan deadline``: will the run meet its deadline, and which interval gives it the best chance?

A thin front end over :mod:`engine.deadline` (deadline answers from the Monte Carlo of the finite
job in :mod:`engine.montecarlo`). Wire it into the main app with ``register(app)``. Bad input
prints the engine's message (field, value, rule) and exits with status 2, like every other command.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .common import console, duration, err_console, fail, field_options, flag, literal, scenario_from_options
from .engine.fields import DEFAULT_RUNS, DEFAULT_SEED

if TYPE_CHECKING:  # the models load when the command runs, not when the CLI starts
    from rich.table import Table

    from .engine import deadline as dl

__all__ = ["deadline", "register"]


def _report_table(rep: dict[str, Any]) -> "Table":
    from rich.table import Table

    cur = rep["currency"]
    def h(key: str) -> str:
        return duration(rep[key] * 60)

    t = Table(title=f"Deadline outlook saving every {duration(rep['interval_min'])} ({rep['segments']} segments, "
                    f"{rep['runs']:,} simulated runs)", title_justify="left")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_row(f"P(finish by {h('deadline_h')})",
              f"{rep['p_finish']:.1%}  (95% CI {rep['p_finish_low']:.1%} - {rep['p_finish_high']:.1%})")
    t.add_row("wall time: mean", f"{h('wall_h_mean')} +- {h('wall_h_mean_se')}")
    t.add_row("wall time: P50 / P90 / P99", f"{h('wall_h_p50')} / {h('wall_h_p90')} / {h('wall_h_p99')}")
    if rep["expected_wall_h_exact"] is not None:
        t.add_row("wall time: exact finite-job mean", h("expected_wall_h_exact"))
    t.add_row("wall time: long-run formula", h("long_run_wall_h"))
    t.add_row("wall time with no failure", h("failure_free_wall_h"))
    t.add_row("failures per run (mean)", f"{rep['failures_mean']:.1f}")
    t.add_row("time split: useful / save / rework / restart",
              f"{h('useful_h')} / {h('save_h')} / {h('rework_h')} / {h('restart_h')}")
    t.add_row("GPU-hours: mean / P90", f"{rep['gpu_hours_mean']:,.0f} / {rep['gpu_hours_p90']:,.0f}")
    t.add_row(f"cost ({cur}): mean / P90", f"{rep['cost_mean']:,.0f} / {rep['cost_p90']:,.0f}")
    return t


def _search_table(res: "dl.DeadlineSearch") -> "Table":
    from rich.table import Table

    t = Table(title=f"Interval choice for the {duration(res.deadline_h * 60)} deadline ({res.runs:,} runs per interval, "
                    "same failures for every interval)", title_justify="left")
    for col, just in (("interval", "left"), ("save every", "right"), ("P(finish)", "right"), ("mean wall h", "right"),
                      ("P90 wall h", "right"), (f"mean cost ({res.currency})", "right")):
        t.add_column(col, justify=just)
    table = res.candidates

    def row_for(label: str, interval: float) -> None:
        r = table.iloc[int((table["interval_min"] - interval).abs().idxmin())]
        t.add_row(label, duration(interval), f"{r['p_finish']:.1%}", f"{r['wall_h_mean']:,.1f}",
                  f"{r['wall_h_p90']:,.1f}", f"{r['cost_mean']:,.0f}")

    row_for("long-run exact optimum", res.exact_optimum_interval_min)
    if res.finite_optimum_interval_min is not None:
        row_for(f"finite-job optimum ({res.finite_optimum_segments} segments)", res.finite_optimum_interval_min)
    row_for("highest P(finish)", res.best_probability["interval_min"])
    if res.cheapest_meeting_target is not None:
        row_for(f"cheapest with P >= {res.target:.0%}", res.cheapest_meeting_target["interval_min"])
    else:
        t.add_row(f"cheapest with P >= {res.target:.0%}", "none", "-", "-", "-", "-")
    return t


@field_options()
def deadline(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name (see `ckptplan templates`) or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help="Scenario TOML file (same as --template FILE)"),
    runs: int = typer.Option(DEFAULT_RUNS, "--runs", parser=lambda text: _whole_number(text, "--runs"),
                             metavar="<int>", help="Simulated runs per interval (1e5 allowed)"),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Random seed (same seed, same answer)"),
    weibull_shape: Optional[float] = typer.Option(None, "--weibull-shape", help="Weibull shape k of the time between failures (mean = job MTBF); default: exponential. k < 1: clustered failures"),
    target: float = typer.Option(0.9, "--target", help="Required probability of meeting the deadline"),
    final_save: bool = flag("--final-save", help="Save after the last step too"),
    as_json: bool = flag("--json", help="Print JSON instead of tables"),
    overrides: Optional[dict] = None,
) -> None:
    """Monte Carlo of the finite run: P(finish by the deadline), percentiles, cost, and the interval to choose.

    Every scenario field can be set here (--deadline-h, --interval-min, ...); the rest come from the template.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from .engine import deadline as dl
    from .engine import montecarlo as mc

    try:
        _check_overrides(overrides or {})
        # memory first: the report simulates one interval, the search up to MAX_SEARCH_INTERVALS on the same runs
        mc.check_simulation_size(runs, dl.MAX_SEARCH_INTERVALS)
        sc = scenario_from_options(str(scenario_file) if scenario_file else template, overrides or {})
        law = mc.FailureLaw.weibull(weibull_shape) if weibull_shape is not None else mc.FailureLaw.exponential()
        report = dl.deadline_report(sc, runs=runs, seed=seed, failures=law, final_save=final_save)
        with Progress(TextColumn("simulating intervals"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=err_console, transient=True, disable=as_json) as bar:
            task = bar.add_task("search", total=None)

            def tick(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            search = dl.deadline_search(sc, target=target, runs=runs, seed=seed, failures=law,
                                        final_save=final_save, progress=tick)
        analytic = _analytic(sc, report)
    except (ValueError, OverflowError) as exc:
        fail(str(exc))
    if as_json:
        data = _finite_json({"report": report, "search": search.to_dict(), "analytic": analytic})
        typer.echo(json.dumps(data, indent=2, allow_nan=False))
        return

    console.print(f"[bold]{literal(str(report['name']))}[/]  job MTBF {duration(report['job_mtbf_h'] * 60)}  |  failures: "
                  f"{report['failure_law']}  |  {int(report['gpus']):,} GPUs", highlight=False)
    console.print(_report_table(report))
    if analytic:
        console.print(f"analytic answer (exponential failures, the same as plan and the workbook): P(finish) "
                      f"{analytic['p_finish_by_deadline']:.1%}, wall time P50 / P90 / P99 "
                      f"{' / '.join(duration(analytic[k] * 60) for k in ('wall_h_p50', 'wall_h_p90', 'wall_h_p99'))}",
                      highlight=False)
    console.print(_search_table(search))
    for note in search.notes:
        console.print(f"- {note}", highlight=False)


def _whole_number(text: str, option: str) -> int:
    """A whole number typed as digits or in exponent form (``1e8``): anything else is a usage error."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a whole number", param_hint=option) from None
        if not (math.isfinite(number) and number == math.floor(number)):
            raise typer.BadParameter(f"{text!r} is not a whole number", param_hint=option) from None
        value = int(number)
    return value


def _check_overrides(overrides: dict[str, Any]) -> None:
    """Refuse a whole number given on the command line that no float can hold (``--nodes 1`` and 400 zeros)."""
    from .engine.errors import InputError

    for name, value in overrides.items():
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                float(value)
            except OverflowError:
                raise InputError(name, f"~1e{len(str(abs(value))) - 1}",
                                 f"must be within the float64 range (|x| <= {sys.float_info.max:.6g})") from None


def _finite_json(value: Any) -> Any:
    """``value`` for ``json.dumps(allow_nan=False)``: a number that is not finite becomes null (never NaN/Infinity)."""
    if isinstance(value, dict):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalar
        return _finite_json(value.item())
    return value


def _analytic(sc: Any, report: dict[str, Any]) -> dict[str, Any] | None:
    """The long-run engine's analytic deadline answer for the simulated interval and deadline, when it
    applies (exponential failures, no final save): the figure ``plan``, the workbook and batch give."""
    from . import engine

    if report.get("failure_law", "").split(" ")[0] != "exponential" or report.get("final_save"):
        return None
    row = engine.evaluate(sc.replace(deadline_h=report["deadline_h"], interval_min=report["interval_min"])).iloc[0]
    keys = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99", "deadline_approximation_ok")
    return {k: (None if row[k] != row[k] else float(row[k])) for k in keys if k in row.index}


def register(app: typer.Typer) -> None:
    """Add the ``deadline`` command to ``app`` (the main ``ckptplan`` app)."""
    app.command("deadline")(deadline)
