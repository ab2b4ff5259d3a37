"""``ckptplan`` command line: a thin front end over :mod:`ckptplan.engine` (and the workbook).

Every command validates through the engine; bad input prints the engine's message (field, value,
rule) and exits with status 2, never a traceback. Options that set a scenario field are generated
from the field registry (:func:`ckptplan.common.field_options`). Models, pandas and file formats
are imported inside the commands that use them, so ``ckptplan --help`` starts fast.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from .engine.fields import DEFAULT_RUNS, DEFAULT_SEED, FIELDS, SETUP_FIELDS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["app", "headline", "main", "print_plan", "print_planned"]

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="How often should a training job checkpoint, and what does it cost?")

from .common import (DEFAULT_TEMPLATE, ON_NODE_LOSS_HELP, PREEMPTION_RATE_SOURCE_HELP, console, duration, err_console, fail, field_options, flag,  # noqa: E402,F401
                     literal, literal_help, plan_from_options, scenario_from_options)


def _money(x: float, currency: str) -> str:
    return f"{x:,.0f} {currency}"


def headline(row: "pd.Series") -> dict[str, Any]:
    """The headline figures of one evaluated scenario, JSON-ready (units in the keys)."""
    keys = ["name", "job_mtbf_h", "effective_stall_min", "young_interval_min", "daly_interval_min",
            "exact_interval_min", "chosen_interval_min", "first_order_waste", "young_min_waste", "waste_fraction",
            "waste_fraction_at_optimum", "expected_failures", "wall_h", "useful_h", "save_h", "rework_h", "restart_h",
            "gpus", "useful_gpu_hours", "save_gpu_hours", "rework_gpu_hours", "restart_gpu_hours", "job_gpu_hours",
            "spare_gpu_hours", "total_gpu_hours",
            "compute_cost", "storage_cost", "spare_cost", "total_cost", "useful_cost", "save_cost", "rework_cost",
            "restart_cost", "goodput", "cost_per_useful_gpu_hour", "currency"]
    keys += [k for k in DEADLINE_KEYS if k in row.index]
    out: dict[str, Any] = {}
    for k in keys:
        v = row[k]
        out[k] = v if isinstance(v, str) else (float(v) if math.isfinite(v) else None)  # NaN/inf -> null (strict JSON)
    from .engine.validity import model_warnings

    out["warnings"] = model_warnings(row.to_frame().T)[0]
    from .cli_elastic import elastic_json
    from .cli_phases import schedule_json

    out.update(schedule_json(row))
    out.update(elastic_json(row))
    out.update(preemption_rate_json(row))
    if out.get("p_finish_by_deadline") is not None:   # how the deadline answer was reached, as `deadline` says
        simulated = "schedule" in out or float(row.get("expected_preemptions", 0.0) or 0.0) > 0 or _shrinks(row)
        out["deadline_method"] = "simulated" if simulated else "analytic"
        if simulated:
            out["deadline_runs"], out["deadline_seed"] = DEFAULT_RUNS, DEFAULT_SEED
    return out


def preemption_rate_json(row: "pd.Series") -> dict[str, Any]:
    """The preemption rate a spot plan used (none: on-demand capacity): ``preemptions_per_h`` the job's, and where
    it came from the node's rate, ``preemptions_per_node_h`` and its ``preemption_rate_source`` (a published band)."""
    from .engine.spot_rates import job_preemptions_per_h

    def number(name: str) -> float:
        v = row.get(name, math.nan)
        return math.nan if v is None or isinstance(v, str) else float(v)

    node = number("preemptions_per_node_h")
    job = float(job_preemptions_per_h(number("preemptions_per_h"), node, number("nodes")))
    if math.isnan(job):
        return {}
    if math.isnan(node):
        return {"preemptions_per_h": job}
    source = str(row.get("preemption_rate_source", "") or "")
    return {"preemptions_per_h": job, "preemptions_per_node_h": node, "preemption_rate_source": source}


def _preemption_rate_line(row: "pd.Series") -> str | None:
    """``preemptions 0.00899 per h = 128 nodes x 7.03e-05 per node-h (band ...)`` for a plan whose job rate came from
    the node's (None otherwise: a job rate given is shown as given)."""
    found = preemption_rate_json(row)
    if "preemptions_per_node_h" not in found:
        return None
    line = (f"preemptions {found['preemptions_per_h']:.3g} per h = {int(row['nodes']):,} nodes x "
            f"{found['preemptions_per_node_h']:.3g} per node-h")
    if found["preemption_rate_source"]:
        from .engine.spot_rates import spot_rate

        band = spot_rate(found["preemption_rate_source"])
        line += (f" ({literal(band.name)}: published band {literal(band.band)}, {band.edge}; AWS Spot Instance Advisor, "
                 "see `ckptplan preemption-rates`)")
    return line


def _shrinks(row: "pd.Series") -> bool:
    """An elastic plan that trains on fewer replicas (its deadline answer is simulated)."""
    if str(row.get("on_node_loss", "")) != "continue" or "replicas" not in row.index:
        return False
    floor = float(row.get("min_replicas", math.nan))
    return not math.isnan(floor) and floor < float(row["replicas"])


#: the analytic deadline figures of evaluate(), when the scenario has a deadline
DEADLINE_KEYS = ("p_finish_by_deadline", "wall_h_p50", "wall_h_p90", "wall_h_p99")


def _given(overrides: dict[str, Any] | None) -> str:
    """The fields set on the command line, as the header shows them."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    return ", ".join(f"{k} = {v:,g}" for k, v in given.items())


def print_plan(row: "pd.Series", overrides: dict[str, Any] | None = None, simulated: str | None = None) -> None:
    """The headline figures as tables; ``overrides``: the fields set on the command line (shown in the header);
    ``simulated``: the simulated deadline answer, shown beside the analytic one (``ckptplan workbook``)."""
    from rich.table import Table

    from . import engine
    from .engine.validity import model_warnings

    cur = row["currency"]
    given = _given(overrides)
    if given:
        console.print(f"[bold]{literal(str(row['name']))}[/] with {literal(given)}  (template: "
                      f"{literal(str(row.get('description', '') or ''))})", highlight=False)
    else:
        console.print(f"[bold]{literal(str(row['name']))}[/]  {literal(str(row.get('description', '') or ''))}",
                      highlight=False)
    console.print(
        f"{int(row['nodes']):,} nodes, job MTBF {duration(row['job_mtbf_h'] * 60)}  |  stall "
        f"{duration(row['checkpoint_stall_min'])}"
        + (f" + async write {duration(row['async_write_min'])} at {row['async_slowdown_fraction']:.0%} slowdown"
           f" (effective {duration(row['effective_stall_min'])})" if row["async_write_min"] > 0 else "")
        + f"  |  restart {duration(row['restart_min'])}  |  {int(row['gpus']):,} GPUs", highlight=False)
    if (rate_line := _preemption_rate_line(row)) is not None:
        console.print(rate_line, highlight=False)

    t = Table(title="Checkpoint interval by model", title_justify="left")
    t.add_column("model")
    t.add_column("save every", justify="right")
    t.add_column("waste, exact model", justify="right")
    t.add_row("Young (first order)", duration(row["young_interval_min"]), f"{row['waste_fraction_at_young']:.2%}")
    t.add_row("Daly (higher order)", duration(row["daly_interval_min"]), f"{row['waste_fraction_at_daly']:.2%}")
    t.add_row("exact optimum", duration(row["exact_interval_min"]), f"{row['waste_fraction_at_optimum']:.2%}")
    if not math.isnan(row.get("interval_min", math.nan)):
        t.add_row("chosen", duration(row["chosen_interval_min"]), f"{row['waste_fraction']:.2%}")
    console.print(t)
    from .cli_phases import print_schedule

    phased = print_schedule(row)
    console.print(f"first-order waste at the chosen interval: {row['first_order_waste']:.2%} "
                  f"(Young minimum sqrt(2C/M) = {row['young_min_waste']:.2%}; first order leaves out restarts)",
                  highlight=False)

    c = Table(title=("Expected run, on the schedule " if phased else
                     f"Expected run, saving every {duration(row['chosen_interval_min'])} ") +
                    f"({row['expected_failures']:,.1f} failures{_preemptions_expected(row, phased)} expected)",
              title_justify="left")
    for col, just in (("where the time goes", "left"), ("wall h", "right"), ("GPU-hours", "right"),
                      (f"cost ({cur})", "right"), ("share", "right")):
        c.add_column(col, justify=just)
    for cat in ("useful", "save", "rework", "restart"):
        c.add_row(cat, f"{row[f'{cat}_h']:,.1f}", f"{row[f'{cat}_gpu_hours']:,.0f}",
                  f"{row[f'{cat}_cost']:,.0f}", f"{row[f'{cat}_h'] / row['wall_h']:.2%}")
    wait_h = float(row.get("capacity_wait_h", 0.0))
    if wait_h > 0:   # preemptible capacity: waiting for capacity is wall time without GPUs
        c.add_row("capacity wait (no GPUs held)", f"{wait_h:,.1f}", "0", "0", f"{wait_h / row['wall_h']:.2%}")
    c.add_row("[bold]compute[/]", f"{row['wall_h']:,.1f}", f"{row['job_gpu_hours']:,.0f}",
              f"{row['compute_cost']:,.0f}", "100.00%")
    console.print(c)
    from .cli_elastic import print_elastic
    from .cli_setup import money_line

    print_elastic(row)
    console.print(money_line(row), highlight=False)
    if row["async_write_min"] > 0:
        naive = engine.waste_fraction(row["chosen_interval_min"], 1e-9, row["job_mtbf_h"] * 60, row["restart_min"])
        console.print(f"async is not free: treating these saves as C = 0 would predict {naive:.2%} waste at this "
                      f"interval; the async model gives {row['waste_fraction']:.2%} (throughput lost during the "
                      f"{duration(row['async_write_min'])} write, and rework while the checkpoint is not yet durable)",
                      highlight=False)
    console.print(f"goodput {row['goodput']:.2%}  |  {row['cost_per_useful_gpu_hour']:,.3f} {literal(str(cur))} per useful "
                  f"GPU-hour (list price {row['price_per_gpu_hour']:,.2f})", highlight=False)
    if "p_finish_by_deadline" in row.index and row["p_finish_by_deadline"] == row["p_finish_by_deadline"]:
        console.print(_deadline_line(row, phased, simulated), highlight=False)
    for warning in model_warnings(row.to_frame().T)[0]:
        console.print(f"[bold yellow]warning:[/] {literal(warning)}", highlight=False)


def _preemptions_expected(row: "pd.Series", phased: bool) -> str:
    """`` and N preemptions`` for a schedule on spot capacity (its failures and preemptions both count restarts')."""
    n = float(row.get("expected_preemptions", 0.0) or 0.0)
    return f" and {n:,.1f} preemptions" if phased and n > 0 else ""


def _deadline_line(row: "pd.Series", phased: bool, simulated: str | None) -> str:
    """The deadline answer, saying how it was reached (analytic, or simulated with its runs and seed)."""
    spot = float(row.get("expected_preemptions", 0.0) or 0.0) > 0
    elastic = _shrinks(row)
    how = (f"simulated on the schedule{' on spot capacity' if spot else ''} ({DEFAULT_RUNS:,} runs, seed "
           f"{DEFAULT_SEED}; " if phased else
           f"simulated on spot capacity ({DEFAULT_RUNS:,} runs, seed {DEFAULT_SEED}; `ckptplan compare` adds "
           "on-demand and the fallback; " if spot else
           f"simulated, training on fewer replicas ({DEFAULT_RUNS:,} runs, seed {DEFAULT_SEED}; " if elastic
           else "analytic (exponential failures; ")
    return (f"deadline {duration(row['deadline_h'] * 60)}: P(finish) {row['p_finish_by_deadline']:.1%} " + how
            + f"wall time P50 / P90 / P99 {' / '.join(duration(row[k] * 60) for k in DEADLINE_KEYS[1:])})"
            + ("" if phased or spot or elastic else "; `ckptplan deadline` simulates" if simulated is None
               else f"  |  {simulated}"))


@app.command("preemption-rates")
def preemption_rates(as_json: bool = flag("--json", help="Print JSON instead of a table")) -> None:
    """List the published spot interruption bands that `--preemption-rate-source` (and the scenario field) accept."""
    from .engine.spot_rates import spot_rates

    rates = spot_rates()
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in rates], indent=2, allow_nan=False))
        return
    from .common import print_rows

    sources = list(dict.fromkeys(r.source for r in rates))
    print_rows("Published spot interruption bands (per node-hour = -ln(1 - f) / 730 h; job per hour = nodes x it)",
               ("name", "published band", "f used", "per node-hour", "per 1,000 node-hours",
                "job per hour at 128 nodes", "source"),
               [(literal(r.name), literal(r.band), f"{r.fraction_per_month:.0%} ({r.edge})",
                 f"{r.preemptions_per_node_h:.3g}", f"{r.preemptions_per_node_h * 1000:.3g}",
                 f"{r.preemptions_per_node_h * 128:.3g}", f"[{sources.index(r.source) + 1}]") for r in rates])
    console.print("Each band at its upper edge (a conservative figure); >20% at 20 %: a LOWER BOUND. The conversion "
                  "assumes independent, exponential reclaims and the month's fraction per node held the whole month.",
                  highlight=False)
    for i, source in enumerate(sources, start=1):
        console.print(f"\\[{i}] {literal(source)}", highlight=False)


@app.command()
@field_options(FIELDS + SETUP_FIELDS)
def plan(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name (see `ckptplan templates`) or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help="Scenario TOML file (same as --template FILE)"),
    failure_rate_source: Optional[str] = typer.Option(None, "--failure-rate-source", help="A published fleet failure rate giving node_mtbf_h for this job's size (see `ckptplan failure-rates`)"),
    preemption_rate_source: Optional[str] = typer.Option(None, "--preemption-rate-source",
                                                         help=PREEMPTION_RATE_SOURCE_HELP),
    on_node_loss: Optional[str] = typer.Option(None, "--on-node-loss", help=ON_NODE_LOSS_HELP),
    as_json: bool = flag("--json", help="Print JSON instead of tables"),
    overrides: Optional[dict] = None,
) -> None:
    """Headline numbers for one scenario: intervals by model, waste, job MTBF, GPU-hours and cost.

    Every scenario field and storage-and-recovery setup field can be set here (the option is the
    field's name); the rest come from the template. A setup (checkpoint size, bandwidths, tiers,
    restart parts, spares) adds the checkpoint tiers, storage and spare cost to the plan.
    """
    from .cli_setup import setup_json
    from .engine.setup import plan_setup

    try:
        given = dict(overrides or {})
        if failure_rate_source is not None:
            given["failure_rate_source"] = failure_rate_source
        if preemption_rate_source is not None:
            given["preemption_rate_source"] = preemption_rate_source
        if on_node_loss is not None:
            given["on_node_loss"] = on_node_loss
        plan_file = plan_from_options(str(scenario_file) if scenario_file else template, given)
        planned = plan_setup(plan_file.scenario, plan_file.setup)
        row = planned.row
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(setup_json(planned, headline(row)), indent=2, allow_nan=False))
    else:
        print_planned(planned, plan_file.setup.given(), overrides)


def print_planned(planned: Any, setup_given: bool, overrides: dict[str, Any] | None = None,
                  simulated: str | None = None) -> None:
    """The console's plan of ``engine.setup.plan_setup``'s answer: the single-level plan's tables, or a tiered plan's
    headline and warnings; then the setup's figures (``setup_given``). ``plan`` and ``workbook`` print it alike."""
    from .cli_setup import print_setup

    row = planned.row
    single = len(planned.tiers) == 1 and planned.tiers[0]["name"] == "checkpoint"
    if single:
        print_plan(row, overrides, simulated=simulated)
    else:
        console.print(f"[bold]{literal(str(row['name']))}[/]  {literal(str(row.get('description', '') or ''))}",
                      highlight=False)
        console.print(f"{int(row['nodes']):,} nodes, job MTBF {duration(row['job_mtbf_h'] * 60)}, {int(row['gpus']):,} GPUs"
                      "  |  multi-level checkpoints: the tiers' exact expectation (single-level figures left out)",
                      highlight=False)
        for warning in planned.warnings:
            console.print(f"[bold yellow]warning:[/] {literal(warning)}", highlight=False)
    if setup_given:
        print_setup(planned, money=not single)


@app.command("failure-rates")
def failure_rates(as_json: bool = flag("--json", help="Print JSON instead of a table")) -> None:
    """List the published fleet failure rates that `--failure-rate-source` (and the scenario field) accept."""
    from .engine.fleets import fleet_rates

    rates = fleet_rates()
    if as_json:
        typer.echo(json.dumps([{**r.to_dict(), "node_mtbf_h": r.node_mtbf_h} for r in rates], indent=2, allow_nan=False))
        return
    from .common import print_rows

    sources = list(dict.fromkeys(r.source for r in rates))  # the long citations under the table, numbered
    print_rows("Published fleet failure rates (node MTBF = 24,000 h / rate; job MTBF = node MTBF / nodes)",
               ("name", "failures per 1,000 node-days", "node MTBF (h)", "job MTBF at 2,048 nodes (h)", "source"),
               [(literal(r.name), f"{r.failures_per_1000_node_days:.3g}", f"{r.node_mtbf_h:,.0f}",
                 f"{r.job_mtbf_h(2048):.2f}", f"[{sources.index(r.source) + 1}]") for r in rates])
    for i, source in enumerate(sources, start=1):
        console.print(f"\\[{i}] {literal(source)}", highlight=False)


@app.command()
def templates() -> None:
    """List the shipped scenario presets."""
    from rich.table import Table

    from . import files

    t = Table("name", "description")
    for name in files.list_templates():
        t.add_row(literal(name), literal(files.load_plan(name).scenario.description))  # text from files: never markup
    console.print(t)


def _simulated(report: dict | None) -> str | None:
    """The Deadline sheet's simulated P(finish) in words for the console (a tiered plan's: no interval search)."""
    if report is None:
        return None
    figures = {label.strip(): value for label, value, _, _ in report["rows"]}
    if report.get("tiered"):
        return (f"{figures['P(finish by the deadline)']:.1%} simulated for the tiered plan ({report['runs']:,} runs, "
                f"seed {report['seed']}: the Deadline sheet)")
    return (f"{figures['P(finish by the deadline)']:.1%} simulated ({report['runs']:,} runs, seed "
            f"{report['seed']}: the Deadline sheet), best {figures['its P(finish by the deadline)']:.1%} "
            f"saving every {duration(figures['Interval with the best chance of meeting the deadline'])}")


@app.command("workbook")
def workbook_cmd(
    output: Path = typer.Option(Path("plan.xlsx"), "--output", "-o", help="Workbook to write"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help="Scenario TOML file (same as --template FILE)"),
    from_workbook: Optional[Path] = typer.Option(None, "--from", help="Regenerate from a planning workbook you edited, keeping its inputs"),
    alternative: Optional[str] = typer.Option(None, "--alternative", help="A scenario (preset or TOML) to compare as the first alternative, written as its changes to the baseline; default: storage 4x faster, 2x nodes, restarts 2x faster"),
    deadline_runs: int = typer.Option(DEFAULT_RUNS, "--deadline-runs", help="Monte Carlo runs for the Deadline sheet (the same default as `ckptplan deadline`)"),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Monte Carlo seed for the Deadline sheet"),
    no_deadline: bool = flag("--no-deadline", help="Leave out the Deadline sheet (no simulation)"),
    with_udfs: bool = flag("--with-udfs", help="Add a sheet calling the CKPT_ add-in functions beside the plain formulas"),
    log: Optional[Path] = typer.Option(None, "--log", help="A job's step-level log: add a 'Plan vs actual' sheet comparing it with this plan"),
    emit_scenario: Optional[Path] = typer.Option(None, "--emit-scenario", help="Also write the plan as a scenario TOML file: the template's, or everything the --from workbook holds (setup, tiers, classes, designs)"),
    force: bool = flag("--force", help="Overwrite the output file(s) if they exist"),
) -> None:
    """Write a planning workbook (live Excel formulas) and print the headline numbers."""
    from . import files, workbook  # the command line is the only part of ckptplan that knows every side
    from .engine import evaluate
    from .files.signals import Terminated, terminate_on_signals

    single = None   # the setup's single-level plan: the scenario the sheets show and what it pays
    try:
        if from_workbook is not None and (template or scenario_file):
            fail("--from takes the inputs from the workbook: leave out --template/--scenario")
        plan, readiness = _workbook_plan(from_workbook, scenario_file or template)
        from .workbook.build import refuse_off_sheets

        refuse_off_sheets(plan.scenario)
        single = _single_level(plan)
        sc = plan.scenario if single is None else single.scenario
        setup, designs = plan.setup, (plan.designs or None)
        alt = files.load_scenario(alternative) if alternative is not None else None
        if alt is not None:
            designs = None  # the alternative replaces the first design
        report, capacity = (None, None) if no_deadline else _simulations(sc, plan, deadline_runs, seed)
        kept = workbook.read_break_even(from_workbook) if from_workbook is not None else None
        aim = workbook.read_target(from_workbook) if from_workbook is not None else None
        built = workbook.build_workbook(sc, alternative=alt, designs=designs, deadline=report, readiness=readiness,
                                        setup=setup, uncertainty=getattr(plan, "uncertainty", ()), capacity=capacity,
                                        break_even=kept, target=aim, swung=plan.scenario, single=single)
        if with_udfs:
            from .workbook.udf_sheet import add_udf_sheet
            add_udf_sheet(built.workbook)
        if log is not None:
            from .cli_actual import compare_log
            from .workbook.actual_sheet import actual_sheet

            split, variance = compare_log(log, sc)
            actual_sheet(built.workbook, split, variance)
        with terminate_on_signals():  # SIGTERM/SIGHUP: the temporary files are removed, as on Ctrl-C
            _write_outputs(built, output, plan, emit_scenario, from_workbook or scenario_file or template, force)
        # with the setup's storage and spares; an elastic plan is the engine's (the live sheets show it stopping)
        row = single.row if single is not None else evaluate([sc]).iloc[0] if sc.on_node_loss == "continue" else \
            built.results.iloc[0]
    except Terminated as exc:
        fail(f"{exc}: {output} was not written", int(exc.code))
    except FileExistsError as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:  # a full disk, a vanished folder (files.atomic.OutputError names the file)
        fail(str(exc))
    if plan.setup.tiers:   # the Plan sheet's plan: the tiered one, as `ckptplan plan` prints it
        from .engine.setup import plan_setup

        print_planned(plan_setup(plan.scenario, plan.setup), True)
    else:
        print_plan(row, simulated=_simulated(report))
    if report is None and not no_deadline:
        console.print("no deadline_h in the scenario: Deadline sheet left out", highlight=False)
    console.print(f"wrote {literal(str(output))} ({len(built.workbook.sheetnames)} sheets: {', '.join(built.workbook.sheetnames)})",
                  highlight=False)
    if emit_scenario is not None:
        console.print(f"wrote scenario {literal(repr(plan.scenario.name))} to {literal(emit_scenario)}", highlight=False)


def _write_outputs(built: Any, output: Path, plan: Any, emit_scenario: Optional[Path], source: Any, force: bool) -> None:
    """The workbook, and with ``--emit-scenario`` the plan it is written from as a scenario file
    (:mod:`ckptplan.files.scenario_toml`): both land or neither does."""
    from .files.atomic import atomic_write_many
    from .workbook.build import save

    outputs = [(output, lambda tmp: save(built.workbook, tmp))]
    if emit_scenario is not None:
        from .files.scenario_toml import plan_writer

        st = plan.setup
        header = [f"Written by `ckptplan workbook` from {source or DEFAULT_TEMPLATE}: the scenario, "
                  f"{len(st.columns())} storage and recovery setup field(s), {len(st.tiers)} checkpoint tier(s), "
                  f"{len(st.failure_classes)} failure class(es) and {len(plan.designs)} [[designs]].",
                  "A stall, background write or restart in [scenario] is stated: it wins over the one the setup "
                  "derives; one left out is derived."]
        outputs.append((emit_scenario, plan_writer(plan, header)))
    atomic_write_many(outputs, force=force)


def _simulations(sc: Any, plan: Any, runs: int, seed: int) -> tuple[Any, Any]:
    """The Deadline sheet's Monte Carlo and the Compare sheet's capacity block. The Deadline sheet simulates the Plan
    sheet's live plan: on-demand capacity, a constant rate (spot: the capacity block; a schedule: `plan`), a job that
    stops at every failure (elastic continuation: the engine's values on top of the Plan sheet), the tiered plan's
    simulation when the setup has tiers (from the inputs the setup derives)."""
    from . import workbook
    from .engine.spot import scenario_capacity

    from .engine.scenario import derived_scenario   # validated when loaded: the changes checked, not the rest

    live = derived_scenario(sc, on_node_loss="restart")
    planned = derived_scenario(plan.scenario, on_node_loss="restart") if plan.setup.tiers else live
    from .engine.spot_rates import on_demand_changes

    report = workbook.deadline_report(derived_scenario(planned, **on_demand_changes(planned), failure_phases=()), runs=runs,
                                      seed=seed, setup=plan.setup)
    return report, scenario_capacity(live)


def _workbook_plan(from_workbook: Optional[Path], source: Any) -> tuple[Any, Any]:
    """The plan a workbook is written from, and the Readiness statuses to keep: an edited workbook's
    (:func:`ckptplan.workbook.read.read_plan`: everything it holds), or a template's (none kept)."""
    from . import files, workbook

    if from_workbook is None:
        return files.load_plan(source or DEFAULT_TEMPLATE), None
    return workbook.read_plan(from_workbook), workbook.read_readiness(from_workbook)


def _single_level(plan: Any) -> Any:
    """The setup's single-level plan (None without a setup): the scenario the Inputs and Plan sheets show (the
    stall, write and restart the setup derives filled in; tiers left to the Storage & recovery sheet) and what
    it pays, storage and spares included."""
    if not plan.setup.given():
        return None
    from .engine.setup import plan_setup

    return plan_setup(plan.scenario, plan.setup.replace(tiers=(), failure_classes={}))


def main() -> None:
    """The ``ckptplan`` entry point: SIGTERM and SIGHUP (schedulers, ``timeout``, CI cancellation) end a
    command as Ctrl-C does, so every temporary file is removed (:mod:`ckptplan.files.signals`)."""
    from .files.signals import terminate_on_signals

    with terminate_on_signals():
        app()


from . import cli_actual, cli_batch, cli_deadline, cli_excel, cli_fit, cli_probe, cli_risk, cli_setup  # noqa: E402  (they import only .common, so no cycle)

cli_setup.register(app)
cli_actual.register(app)
cli_batch.register(app)
cli_deadline.register(app)
cli_fit.register(app)
cli_excel.register(app)
cli_probe.register(app)
cli_risk.register(app)
literal_help(app)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
