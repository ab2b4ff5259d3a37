"""``ckptplan actual``: plan versus actual from a job's own logs.

A step-level log (:mod:`ckptplan.files.logs`) is split into where the wall time went
(:mod:`ckptplan.engine.measured`), set beside what the plan predicted for the same wall time, and
the difference explained input by input in hours, GPU-hours and money
(:mod:`ckptplan.engine.variance`). Several logs give one row per job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Optional

import typer

from .common import DEFAULT_TEMPLATE, console, duration, emit_scenario_file, err_console, fail, flag, json_ready, literal

__all__ = ["actual", "actual_h", "compare_log", "distinct_names", "emit_measured", "register", "summary_row"]

#: the plan-vs-actual buckets (engine.variance.BUCKETS) and the measured split's buckets they gather
RESTART_BUCKETS = ("restart_detection", "restart_reallocation", "restart_startup", "restart_init", "restart_load",
                   "restart_warmup", "restart_unsplit")


def actual_h(split: Any) -> dict[str, float]:
    """The measured split's hours in the plan-vs-actual buckets (the restart phases summed)."""
    b = split.badput_h
    return {"productive": split.productive_h, "save_blocking": b["save_blocking"],
            "async_slowdown": b["async_slowdown"], "rework": b["rework"],
            "restart": sum(b[k] for k in RESTART_BUCKETS), "startup": b["startup"], "idle": b["idle"]}


def compare_log(log: Any, plan: Any, confidence: float = 0.9) -> tuple[Any, Any]:
    """(measured split, plan-vs-actual) of one log against the plan scenario."""
    from .engine.variance import MEASURED_KEYS, plan_vs_actual
    from .files.logs import measure_log

    split = measure_log(log, confidence=confidence)
    if split.wall_h <= 0:
        raise ValueError(f"{log}: the log spans no time: nothing to compare")
    measured = {k: split.measured.get(k) for k in MEASURED_KEYS}
    return split, plan_vs_actual(plan, split.wall_h, measured, actual_h(split))


def emit_measured(path: Path, source: str, split: Any, log: Any, force: bool) -> Any:
    """Write the plan (template ``source``) with the log's measured inputs in place of its own
    (``--emit-scenario``); its setup, tiers, failure classes and designs kept
    (:func:`ckptplan.files.scenario_toml.write_measured`). Returns the plan written."""
    from .common import plan_from_options
    from .files.scenario_toml import write_measured

    template = plan_from_options(source, {})
    m = split.measured
    changes = {k: m[k] for k in ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min",
                                 "job_mtbf_h") if m.get(k) is not None}
    if changes.get("checkpoint_stall_min", 1.0) + changes.get("async_write_min", 1.0) <= 0:
        changes.pop("checkpoint_stall_min", None)  # a log of unmeasured saves: keep the plan's stall
        changes.pop("async_write_min", None)
    texts = {"name": f"{template.scenario.name} (measured)", "source": f"measured from {Path(str(log)).name}",
             "failure_rate_source": ""}
    notes = (["job_mtbf_h is the whole job's, measured: it replaces the node-derived MTBF."]
             if "job_mtbf_h" in changes else []) + list(split.notes)
    return write_measured(path, template, changes, command=f"`ckptplan actual {log}`", source=f"the step log {log}",
                          texts=texts, notes=notes, force=force)


def summary_row(log: Any, split: Any, variance: Any) -> dict[str, Any]:
    """One job's row for several logs: the log's full path, measured inputs, goodput and the plan difference
    (``actual`` puts each log's shortest distinct name, :func:`distinct_names`, before it as ``job``)."""
    m = split.measured
    t = variance.totals
    row = {"log": str(Path(str(log)).resolve()), "wall_h": split.wall_h, "productive_h": split.productive_h, "goodput": split.goodput}
    for k in ("failures", "job_mtbf_h", "checkpoint_stall_min", "async_write_min", "async_slowdown_fraction",
              "restart_min", "checkpoint_interval_min"):
        row[k] = m.get(k)
    row.update(planned_waste_h=t["planned_waste_h"], actual_waste_h=t["actual_waste_h"], difference_h=t["difference_h"],
               difference_gpu_hours=t["difference_gpu_hours"], difference_money=t["difference_money"],
               optimum_money_saved=variance.optimum_savings["money_saved"], currency=variance.currency)
    return row


#: the plan-vs-actual buckets as a planner reads them
_BUCKET_WORDS = {"save_blocking": "save (training blocked)", "async_slowdown": "slowdown during background writes",
                 "startup": "start-up"}


def _print_one(split: Any, v: Any) -> None:
    from rich.table import Table

    m, cur = split.measured, literal(v.currency)
    def h(hours: Any) -> str:
        return duration(None if hours is None else hours * 60)

    mtbf = ("-" if m.get("job_mtbf_h") is None else
            f"{h(m['job_mtbf_h'])} ({split.confidence:.0%} interval {h(m['job_mtbf_h_low'])} .. "
            f"{h(m['job_mtbf_h_high'])})" if m.get("job_mtbf_h_high") is not None else h(m["job_mtbf_h"]))
    console.print(f"[bold]{literal(split.source)}[/] against plan [bold]{literal(v.scenario)}[/]: {h(split.wall_h)} of wall time, "
                  f"goodput (ETTR) {split.goodput:.2%}, {int(m.get('failures') or 0)} failures, job MTBF {mtbf}",
                  highlight=False)
    t = Table(title=f"Plan vs actual over the same {h(v.wall_h)} of wall time ({v.gpus:,} GPUs)", title_justify="left")
    for col in ("where the time went", "planned h", "actual h", "difference h", "GPU-hours", f"money ({cur})"):
        t.add_column(col, justify="left" if col.startswith("where") else "right")
    for b in v.buckets:
        t.add_row(_BUCKET_WORDS.get(b["bucket"], b["bucket"]), f"{b['planned_h']:,.2f}", f"{b['actual_h']:,.2f}", f"{b['difference_h']:+,.2f}",
                  f"{b['difference_gpu_hours']:+,.0f}", f"{b['difference_money']:+,.0f}")
    tot = v.totals
    t.add_row("[bold]waste (all but productive)[/]", f"{tot['planned_waste_h']:,.2f}", f"{tot['actual_waste_h']:,.2f}",
              f"{tot['difference_h']:+,.2f}", f"{tot['difference_gpu_hours']:+,.0f}", f"{tot['difference_money']:+,.0f}")
    console.print(t)
    for e in v.explanations:
        console.print(f"  {literal(e['text'])}", highlight=False)
    rest = {k: h for k, h in v.attribution.items() if k in ("interaction", "startup", "idle", "unexplained") and abs(h) > 1e-9}
    if rest:
        console.print("  rest of the difference: " + ", ".join(f"{k} {h:+,.2f} h" for k, h in rest.items()), highlight=False)
    o = v.optimum_savings
    console.print(f"saved every {duration(o['interval_used_min'])}; the optimum for the measured inputs is every "
                  f"{duration(o['optimal_interval_min'])} and would have saved {h(o['wall_h_saved'])} of wall time = "
                  f"{o['gpu_hours_saved']:,.0f} GPU-hours = {o['money_saved']:,.0f} {cur}", highlight=False)
    write, slowdown = m.get("async_write_min"), m.get("async_slowdown_fraction")
    console.print(f"measured: save stall {duration(m.get('checkpoint_stall_min'))}, "
                  + (f"background write {duration(write)} at {'-' if slowdown is None else format(slowdown, '.0%')} "
                     "slowdown" if write else "no background write")
                  + f", restart {duration(m.get('restart_min'))}, saved every "
                  f"{duration(m.get('checkpoint_interval_min'))}", highlight=False)
    for note in tuple(split.notes) + tuple(v.notes):
        console.print(f"note: {literal(note)}", highlight=False)


def actual(
    logs: List[Path] = typer.Argument(..., help="Step-level job log(s): CSV or JSON Lines, one event per row (the "
                                      "format is described above)"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="The plan: preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help="The plan as a scenario TOML file (same as --template FILE)"),
    confidence: float = typer.Option(0.9, "--confidence", help="Confidence level of the job MTBF interval"),
    as_json: bool = flag("--json", help="Print JSON instead of tables"),
    emit_scenario: Optional[Path] = typer.Option(None, "--emit-scenario", help="Write the plan with the measured inputs as a scenario TOML file (one log)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Several logs: write one row per job to .csv or .parquet"),
    force: bool = flag("--force", help="Overwrite --emit-scenario / --output files"),
) -> None:
    """Plan versus actual: where a job's time really went, next to the plan, in hours, GPU-hours and money.

    Reads the job's own step-level log (saves, restarts and their phases, steps), measures the
    blocking stall, the async write and slowdown, each restart phase and the job MTBF, and explains
    the difference from the plan input by input. Several logs: one row per job, named by the shortest
    part of its path no other log shares (--output keeps the full path too).

    Step log format (CSV with a header row, or JSON Lines: one object per line with the same keys),
    rows sorted by time, one event per row. Columns: timestamp (ISO 8601, e.g. 2024-03-01T08:00:00Z);
    event; cause (on interruption rows: hardware, software, network, planned ..., else empty);
    checkpoint_stall_s (optional: the blocking seconds of a checkpoint_saved row); step (the step
    number, required on step rows); phase (on restart_phase and startup_phase rows).

    Events: start, step (a training step finished), save_start (training blocked), save_unblocked
    (training resumes while the save is written in the background), checkpoint_saved (the checkpoint
    is durable), interruption, restart_phase (the end of one restart phase: detection, reallocation,
    startup, init, load, warmup, in that order), startup_phase (the same after a start),
    restart_complete, end. Rows: 2024-03-01T00:00:00Z,start,,,0, then 2024-03-01T00:01:02Z,step,,,1, ...
    (templates/example-step-log.csv is a whole log). An interruption log (what `ckptplan fit` reads:
    start, checkpoint_saved, interruption, restart_complete, end) is a step log without the step,
    save and phase rows: it gives the job MTBF, restart and stall but no split of the time.
    """
    from .common import scenario_from_options

    source = str(scenario_file) if scenario_file else template or DEFAULT_TEMPLATE
    try:
        plan = scenario_from_options(source, {})
    except ValueError as exc:
        fail(str(exc))
    if emit_scenario is not None and len(logs) != 1:
        fail("--emit-scenario takes one log")
    if len(logs) == 1:
        try:
            split, variance = compare_log(logs[0], plan, confidence)
        except ValueError as exc:
            fail(str(exc))
        if emit_scenario is not None:
            emit_scenario_file(emit_scenario, lambda: emit_measured(emit_scenario, source, split, logs[0], force),
                               "measured")
        if output is not None:
            _write_rows([summary_row(logs[0], split, variance)], output, force)
        if as_json:
            out = {"log": str(logs[0]), "scenario": plan.name, "measured": {**split.measured, "goodput": split.goodput},
                   "split": split.to_dict(), "plan_vs_actual": variance.to_dict()}
            typer.echo(json.dumps(json_ready(out), indent=2, allow_nan=False))
        else:
            _print_one(split, variance)
        if emit_scenario is not None:
            (err_console if as_json else console).print(f"wrote the measured scenario to {literal(emit_scenario)}",
                                                        highlight=False)
        return
    rows, problems = [], []
    for log, job in zip(logs, distinct_names(logs)):
        try:
            split, variance = compare_log(log, plan, confidence)
            rows.append({"job": job, **summary_row(log, split, variance)})
        except ValueError as exc:
            problems.append(str(exc))
    if output is not None and rows:
        _write_rows(rows, output, force)
    if as_json:
        typer.echo(json.dumps(json_ready({"scenario": plan.name, "jobs": rows, "errors": problems}), indent=2,
                              allow_nan=False))
    elif rows:
        _print_rows(rows, plan)
    for p in problems:
        err_console.print(f"[bold red]error:[/] {literal(p)}", highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(2)


def distinct_names(paths: list[Any]) -> list[str]:
    """Each path as the shortest tail of its folders that no other path shares (``a/run1/steps.csv`` and
    ``b/run1/steps.csv``, not ``steps.csv`` twice); the same file given twice is told by ``(2nd)``."""
    parts = [Path(str(p)).resolve().parts or (str(p),) for p in paths]
    names = []
    for i, mine in enumerate(parts):
        k = 1
        while k < len(mine) and any(o != mine and o[-k:] == mine[-k:] for o in parts):
            k += 1
        names.append(str(Path(*mine[-k:])))
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        n = seen[name]
        out.append(name if n == 1 else f"{name} ({n}{'nd' if n == 2 else 'rd' if n == 3 else 'th'})")
    return out


def _print_rows(rows: list[dict[str, Any]], plan: Any) -> None:
    from .common import print_rows

    cur = literal(plan.currency)

    def n(x: Any, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    def h(x: Any) -> str:
        return duration(None if x is None else x * 60)

    print_rows(f"Plan {literal(plan.name)} vs {len(rows)} jobs",
               ("log", "wall time", "goodput", "failures", "job MTBF", "save stall", "restart", "waste vs plan h",
                f"vs plan ({cur})", f"optimum would save ({cur})"),
               [(literal(r["job"]), h(r["wall_h"]), f"{r['goodput']:.2%}", n(r["failures"], ".0f"), h(r["job_mtbf_h"]),
                 duration(r["checkpoint_stall_min"]), duration(r["restart_min"]), f"{r['difference_h']:+,.2f}",
                 f"{r['difference_money']:+,.0f}", f"{r['optimum_money_saved']:,.0f}") for r in rows],
               drop=(f"optimum would save ({cur})", "failures", "restart", "save stall", "waste vs plan h"))


def _write_rows(rows: list[dict[str, Any]], output: Path, force: bool) -> None:
    import pandas as pd

    from .files.results import write_table

    try:
        write_table(pd.DataFrame(rows), output, force=force)
    except FileExistsError:
        fail(f"{output} exists; use --force to overwrite it")
    except (ValueError, OSError) as exc:
        fail(f"cannot write {output}: {exc}")


def register(app: typer.Typer) -> None:
    app.command("actual")(actual)
