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

from .common import (ON_NODE_LOSS_HELP, console, duration, err_console, fail, field_options, flag, literal, print_rows,
                     scenario_from_options)
from .engine.fields import DEFAULT_RUNS, DEFAULT_SEED

if TYPE_CHECKING:  # the models load when the command runs, not when the CLI starts
    from .engine import deadline as dl

__all__ = ["deadline", "register"]


def _outlook(rep: dict[str, Any], analytic: dict[str, Any] | None, seed: int) -> None:
    """The outlook at the chosen interval: the simulated figures (the interval table's row for it, the same runs)
    and, side by side and labelled, the analytic ones where they apply (exponential failures, no final save)."""
    cur = literal(str(rep["currency"]))

    def h(key: str, src: dict[str, Any] = rep) -> str:
        v = src.get(key)
        return "-" if v is None else duration(v * 60)

    sim_head = f"simulated ({rep['runs']:,} runs, seed {seed})"
    rows = [(f"P(finish by {h('deadline_h')})",
             f"{rep['p_finish']:.1%} (95% CI {rep['p_finish_low']:.1%} - {rep['p_finish_high']:.1%})",
             "-" if not analytic or analytic.get("p_finish_by_deadline") is None
             else f"{analytic['p_finish_by_deadline']:.1%}"),
            ("wall time: mean", f"{h('wall_h_mean')} +- {h('wall_h_mean_se')}", f"{h('expected_wall_h_exact')} (exact)"),
            ("wall time: long-run formula", "-", h("long_run_wall_h")),
            ("wall time: P50 / P90 / P99", f"{h('wall_h_p50')} / {h('wall_h_p90')} / {h('wall_h_p99')}",
             " / ".join(h(k, analytic) for k in ("wall_h_p50", "wall_h_p90", "wall_h_p99")) if analytic else "-"),
            ("wall time with no failure", h("failure_free_wall_h"), h("failure_free_wall_h")),
            ("failures per run (mean)", f"{rep['failures_mean']:.1f}", "-"),
            ("time split: useful / save / rework / restart (mean)",
             " / ".join(h(k) for k in ("useful_h", "save_h", "rework_h", "restart_h")), "-"),
            ("GPU-hours: mean / P90", f"{rep['gpu_hours_mean']:,.0f} / {rep['gpu_hours_p90']:,.0f}", "-"),
            (f"cost ({cur}): mean / P90", f"{rep['cost_mean']:,.0f} / {rep['cost_p90']:,.0f}", "-")]
    head: tuple[str, ...] = ("figure", sim_head, "analytic (exponential failures)")
    if not analytic:  # a failure law or a final save the analytic answer does not model: the simulation alone
        rows = [r[:2] for r in rows]
        head = head[:2]
        if rep.get("on_node_loss") == "continue":   # an elastic job: its long-run expectation beside the runs
            rows[2] = ("wall time: long-run expectation (elastic chain)", h("long_run_wall_h"))
    print_rows(f"Deadline outlook saving every {duration(rep['interval_min'])} ({rep['segments']:,} segments)",
               head, rows, wrap=head[1:])


def _search_table(res: "dl.DeadlineSearch", seed: int, elastic: bool = False) -> None:
    cur = literal(res.currency)
    table = res.candidates
    rows = []

    def row_for(label: str, interval: float) -> None:
        r = table.iloc[int((table["interval_min"] - interval).abs().idxmin())]
        rows.append((label, duration(interval), f"{r['p_finish']:.1%}", f"{r['wall_h_mean']:,.1f}",
                     f"{r['wall_h_p90']:,.1f}", f"{r['cost_mean']:,.0f}"))

    exact, chosen = res.exact_optimum_interval_min, res.chosen_interval_min
    same = chosen is None or math.isclose(chosen, exact, rel_tol=1e-12)
    row_for("long-run exact optimum" + (" (the outlook above)" if same else ""), exact)
    if not same:
        row_for("chosen interval (the outlook above)", chosen)
    if res.finite_optimum_interval_min is not None:
        row_for(f"finite-job optimum ({res.finite_optimum_segments:,} segments)", res.finite_optimum_interval_min)
    row_for("highest P(finish)", res.best_probability["interval_min"])
    if res.cheapest_meeting_target is not None:
        row_for(f"cheapest with P >= {res.target:.0%}", res.cheapest_meeting_target["interval_min"])
    else:
        rows.append((f"cheapest with P >= {res.target:.0%}", "none", "-", "-", "-", "-"))
    runs = (f"{res.runs:,} runs per interval, seed {seed}" if elastic else
            f"the same {res.runs:,} runs, seed {seed}, for every interval")
    print_rows(f"Interval choice for the {duration(res.deadline_h * 60)} deadline (simulated: {runs})",
               ("interval", "save every", "P(finish)", "mean wall h", "P90 wall h", f"mean cost ({cur})"), rows,
               drop=("P90 wall h", "mean wall h"), first=24)


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
    on_node_loss: Optional[str] = typer.Option(None, "--on-node-loss", help=ON_NODE_LOSS_HELP),
    as_json: bool = flag("--json", help="Print JSON instead of tables"),
    overrides: Optional[dict] = None,
) -> None:
    """Monte Carlo of the finite run: P(finish by the deadline), percentiles, cost, and the interval to choose.

    Every scenario field can be set here (--deadline-h, --interval-min, ...); the rest come from the template.
    A job that trains on fewer replicas (--on-node-loss continue, --min-replicas below its replicas) is
    simulated as such: replicas out and back, pauses, stops at the floor (exponential failures).
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from .engine import deadline as dl
    from .engine import montecarlo as mc

    try:
        _check_overrides(overrides or {})
        # memory first: the report simulates one interval, the search up to MAX_SEARCH_INTERVALS on the same runs
        mc.check_simulation_size(runs, dl.MAX_SEARCH_INTERVALS)
        given = dict(overrides or {})
        if on_node_loss is not None:
            given["on_node_loss"] = on_node_loss
        sc = scenario_from_options(str(scenario_file) if scenario_file else template, given)
        law = mc.FailureLaw.weibull(weibull_shape) if weibull_shape is not None else mc.FailureLaw.exponential()
        # the per-failure sampler: the report is, run by run, the search's row for the chosen interval
        report = dl.deadline_report(sc, runs=runs, seed=seed, failures=law, final_save=final_save,
                                    method="per_failure")
        with Progress(TextColumn("simulating intervals"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=err_console, transient=True, disable=as_json) as bar:
            task = bar.add_task("search", total=dl.MAX_SEARCH_INTERVALS)  # the grid's size is set as it runs

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
                  f"{literal(report['failure_law'])}  |  {int(report['gpus']):,} GPUs", highlight=False)
    _outlook(report, analytic, seed)
    _search_table(search, seed, report.get("on_node_loss") == "continue")
    for note in search.notes:
        console.print(f"- {literal(note)} (simulated)", highlight=False)


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

    if report.get("failure_law", "").split(" ")[0] != "exponential" or report.get("final_save") \
            or report.get("on_node_loss") == "continue":     # an elastic job: simulated only, no analytic answer
        return None
    row = engine.evaluate(sc.replace(deadline_h=report["deadline_h"], interval_min=report["interval_min"])).iloc[0]
    keys = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99", "deadline_approximation_ok")
    return {k: (None if row[k] != row[k] else float(row[k])) for k in keys if k in row.index}


def register(app: typer.Typer) -> None:
    """Add the ``deadline`` command to ``app`` (the main ``ckptplan`` app)."""
    app.command("deadline")(deadline)
