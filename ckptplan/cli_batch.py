"""``ckptplan batch`` and ``ckptplan sweep``: many scenarios at once, from a file or a grid, to a file.

A thin front end over :mod:`ckptplan.engine.batch` and :mod:`ckptplan.engine.sweep` (the models),
:mod:`ckptplan.files.tables` (reading scenario tables) and :func:`ckptplan.workbook.results.write_results`
(every output kind). Those, numpy and pandas load inside the commands, so ``ckptplan --help`` stays
fast. Wire it into the main app with ``register(app)``.

Columns a batch file omits come from a base scenario (``--template NAME|FILE``, default the seed
preset; ``--no-template`` refuses such a file instead, naming every missing required column): each
omitted column gets the template's value on every row, and the summary (printed, ``--json`` and the
.xlsx Summary sheet) says which columns were filled from which template. Never taken from the
template: ``name``, ``description``, ``source``; its job MTBF override when the file gives
``node_mtbf_h`` or failure-domain columns; its domains when the file gives domain columns; its
currency when the file gives prices; its deadline when the file gives ``useful_training_h``
(:func:`ckptplan.engine.template_fill.fill_from_template`). A blank cell means the field's default, as
everywhere; a blank cell of a required column takes the template's value when ``--template`` names one
(the summary counts them), else the row says ``useful_training_h: blank: is required``.

Input files are read as untrusted (:mod:`ckptplan.files.tables`, :mod:`ckptplan.files.untrusted`): a
CSV file's separator (``,`` ``;`` tab) and decimal separator (``.`` or ``,``, as Excel writes CSV in
much of Europe) are detected, or given with ``--delimiter``/``--decimal``; a row whose fields do not
match the header refuses the file (no row is evaluated under the wrong columns); cells, rows
(``--max-rows``), .xlsx parts and TOML nesting are bounded before any work.

Results: one row per input row; ``row`` is the data row of the input file (1 = the first row under
the header; blank rows count, so an .xlsx sheet row is ``row + 1``; TOML: the scenario's position).
``warnings`` says why an ok row's answer leaves its model's range; the summary counts those rows.

Exit status (both commands), so that pipelines notice:

* 0: every row evaluated;
* 3: the output was written, but some rows failed (``status = error`` in the file, each with its
  reason in the ``error`` column; the summary lists the first ones);
* 2: nothing was written: unreadable or empty input, a missing required column (``--no-template``),
  an unknown column, a CSV row whose fields do not match the header,
  bad range syntax or option, an output that exists (without ``--force``) or is no regular file (a
  pipe, a device such as ``/dev/null``, a folder: never written, ``--force`` or not), more rows than
  ``--max-rows`` (default :data:`~ckptplan.engine.fields.MAX_SWEEP_ROWS`, 5,000,000; checked before
  any work) or than an .xlsx sheet holds, a full disk, a Dask scheduler that cannot be reached;
* 143 / 129: stopped by SIGTERM / SIGHUP; like Ctrl-C (exit 1) no partial output and no temporary
  file is left (:mod:`ckptplan.files.signals`).

Outputs are written atomically (:mod:`ckptplan.files.atomic`): complete or not at all; of two runs
writing one new file at once, one wins and the other stops with "exists".

Sweep axes: one option per numeric scenario field, generated from the field registry
(``--checkpoint-stall-min``, ``--nodes``, ``--useful-training-h``, ``--price-per-gpu-hour``, ...:
:func:`ckptplan.common.field_options`), plus ``--axis FIELD=SPEC`` for any numeric column, failure
domains' included. Each takes numbers and ranges, comma-separated: ``0.5,1,2`` (a list),
``64:4096:x2`` (geometric: 64, 128, ..., 4096), ``0.5:3:+0.5`` (arithmetic: 0.5, 1.0, ..., 3.0),
mixed freely (``0.25,0.5:2:x2``). A range's end is included when the steps hit it. Rows = the
product of the axis lengths; the axes nest in the registry's field order (the order of ``--help``),
the first varying slowest, then the ``--axis`` options in the order given.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import typer

from .engine.errors import InputError
from .engine.fields import DEFAULT_CHUNK_ROWS, DEFAULT_RUNS, DEFAULT_SEED, EXCEL_MAX_DATA_ROWS, FIELDS, MAX_SWEEP_ROWS
from .files.atomic import OutputError, check_destination
from .files.signals import Terminated, terminate_on_signals

# `from package import module` resolves through sys.modules, so this works even when ckptplan.cli
# imports this module while it is still initialising; names are looked up at call time.
from ckptplan import common as _cli
from .common import field_options, json_ready

if TYPE_CHECKING:  # the models load only when a command runs
    from .engine.sweep import BatchSummary

__all__ = ["DEADLINE_CHUNK_ROWS", "EXIT_FILE_ERROR", "EXIT_ROW_ERRORS", "PROGRESS_FROM_ROWS", "SHOWN_WARNINGS", "batch",
           "register", "sweep"]

EXIT_ROW_ERRORS = 3
EXIT_FILE_ERROR = 2
#: rows per chunk when the Monte Carlo runs (a progress step every few seconds at 10^4 runs)
DEADLINE_CHUNK_ROWS = 64
#: rows per chunk with --strategies (four plans and a spare search per row: the progress moves every few rows)
STRATEGY_CHUNK_ROWS = 4
#: rows per chunk with --capacity (three policies' simulations and a threshold search per row, rows simulated together)
CAPACITY_CHUNK_ROWS = 32
#: show a progress bar from this many rows on (and always with --deadline), on a terminal
PROGRESS_FROM_ROWS = 100_000

_EXIT_HELP = ("Exit status: 0 all rows evaluated; 3 output written but some rows failed (status = error, "
              "reason in the error column); 2 nothing written (bad input file, missing or unknown column, "
              "bad option, output exists without --force or is no regular file, more rows than --max-rows or "
              "than .xlsx holds, disk full); 143/129 stopped by SIGTERM/SIGHUP (nothing left behind).")
#: model warnings printed under the summary (the rest: filter the warnings column)
SHOWN_WARNINGS = 3

def _failure_law(weibull_shape: Optional[float]) -> Any:
    if weibull_shape is None:
        return "exponential"
    from .engine.montecarlo import FailureLaw

    return FailureLaw.weibull(weibull_shape)


def _check_output(output: Path, force: bool, rows: Optional[int] = None) -> None:
    """Everything about the output that can fail, checked before any evaluation."""
    from .files.results import output_kind

    kind = output_kind(output)
    check_destination(output, force)  # exists (no --force), no such folder, a pipe/device/folder (never written)
    if kind == "xlsx" and rows is not None and rows > EXCEL_MAX_DATA_ROWS:
        raise InputError("rows", rows, f"exceed Excel's limit of {EXCEL_MAX_DATA_ROWS:,} data rows per sheet: "
                            "write .csv or .parquet instead")


@contextlib.contextmanager
def _dask_client(address: Optional[str]) -> Iterator[Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        _fail("--scheduler dask needs dask[dataframe] and distributed: pip install 'ckptplan[dask]'")
    with contextlib.ExitStack() as stack:
        try:
            if address:
                client = stack.enter_context(Client(address, timeout="20s"))
            else:
                cluster = stack.enter_context(LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1,
                                                           processes=True, dashboard_address=None))
                client = stack.enter_context(Client(cluster))
        except OSError as exc:
            _fail(f"cannot reach the Dask scheduler {address or '(local cluster)'}: {exc}")
        yield client


@contextlib.contextmanager
def _progress(total: int, label: str, deadline: bool) -> Iterator[Any]:
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    show = _cli.err_console.is_terminal and (deadline or total >= PROGRESS_FROM_ROWS)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=_cli.err_console, transient=True,
                  disable=not show) as bar:
        task = bar.add_task(label, total=total)
        yield lambda rows: bar.advance(task, rows)


def _file_error(exc: Exception) -> None:
    """Exit 2 with the message of a file-level error (nothing was written)."""
    plain = isinstance(exc, (FileExistsError, FileNotFoundError, ValueError, OutputError))
    if plain:
        _fail(str(exc), EXIT_FILE_ERROR)
    where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
    _fail(f"{where}{reason}", EXIT_FILE_ERROR)


def _stopped(exc: Terminated, output: Path) -> None:
    """Exit 128 + signal number after SIGTERM/SIGHUP (the temporary file is already removed)."""
    _fail(f"{exc}: the run was stopped; no partial file or temporary file is left at {output}", int(exc.code))


def _fail(message: str, code: int = EXIT_FILE_ERROR) -> None:
    """:func:`ckptplan.common.fail` with the batch exit code for file-level errors."""
    _cli.fail(message, code)


def _say(text: str) -> None:
    """One line of the summary, printed as written (names from files: control characters shown as codes)."""
    _cli.console.print(_cli.literal(text), emoji=False, highlight=False, soft_wrap=True)


def _print_summary(summary: "BatchSummary", output: Path, elapsed: float, as_json: bool) -> None:
    """One screen: counts, best and worst scenario by cost per useful GPU-hour, the first failures."""
    if as_json:
        data = summary.to_dict()
        data.update({"output": str(output), "seconds": round(elapsed, 3)})
        typer.echo(json.dumps(json_ready(data), indent=2, allow_nan=False))
        return
    rate = summary.rows / elapsed if elapsed > 0 else float("inf")
    _say(f"{summary.rows:,} rows: {summary.ok:,} ok, {summary.errors:,} failed -> {output} "
         f"({elapsed:.1f} s, {rate:,.0f} rows/s)")
    if summary.template:
        filled = summary.template["filled"]
        shown = ", ".join(f"{k}={_value(v)}" for k, v in filled.items())
        _say(f"Base scenario {summary.template['template']}: " + (f"filled {len(filled)} column(s) the file "
             f"omits (same value on every row): {shown}" if filled else "nothing filled (the file gives every column)"))
        for column, why in summary.template["not_taken"].items():
            _say(f"  not taken from it: {column} ({why})")
        for column, cells in summary.template.get("blank_cells", {}).items():
            _say(f"  blank cells filled from it: {column}={_value(cells['value'])} ({cells['rows']:,} row(s))")
        for name, r in summary.template.get("ranges", {}).items():
            _say(f"  input range {name}: {r['from']} on {r['rows']:,} row(s), the row's own {name}_low/_high cells "
                 f"on {r['own']:,}")
        if summary.template.get("tiers"):
            _say("Every row follows the template's checkpoint tiers: " + ", ".join(summary.template["tiers"])
                 + " (each tier's interval, times and storage bill in the tier{i}_ columns; total_cost is "
                 "compute_cost + storage_cost + spare_cost)")
    if summary.best:
        _say("Ranked by cost per useful GPU-hour (total cost = GPU time + storage + spares, over useful GPU-hours, "
             "in the row's currency; saves, rework and restarts included):")
        for label, store in (("best ", summary.best), ("worst", summary.worst)):
            for cur, rec in store.items():
                _say(f"  {label} {rec['value']:,.4f} {cur} per useful GPU-h (total cost {rec['total_cost']:,.0f} {cur}, "
                     f"goodput {rec['goodput']:.2%}): row {rec['row']}, {summary.describe_record(rec)}")
    if summary.warned:
        _say(f"Model warnings on {summary.warned:,} ok row(s) (warnings column):")
        for row, message in summary.first_warnings[:SHOWN_WARNINGS]:
            _say(f"  row {row}: {message}")
        if summary.warned > SHOWN_WARNINGS:
            _say(f"  ... and {summary.warned - SHOWN_WARNINGS:,} more: filter the warnings column in {output}")
    if summary.errors:
        shown = summary.first_errors[:5]
        _say("Failed rows (row: field=value: rule):")
        for row, message in shown:
            _say(f"  row {row}: {message}")
        more = summary.errors - len(shown)
        if more > 0:
            _say(f"  ... and {more:,} more: filter status = error in {output}")


def _value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _finish(summary: "BatchSummary", output: Path, started: float, as_json: bool) -> None:
    _print_summary(summary, output, time.perf_counter() - started, as_json)
    if summary.errors:
        raise typer.Exit(EXIT_ROW_ERRORS)


def batch(
    scenarios: Path = typer.Argument(..., help="Scenario table: .csv, .xlsx, .parquet (a header row of field names) "
                                                "or .toml (one scenario table, or an array of them)"),
    output: Path = typer.Option(..., "--output", "-o", help="Results file: .csv, .xlsx or .parquet"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Base scenario for the columns the file "
                                           "omits, and for blank cells of required columns: preset name or TOML "
                                           "file; default: seed (omitted columns only)"),
    no_template: bool = _cli.flag("--no-template", help="Fill nothing: refuse a file that omits a required "
                                     "column (all missing columns are named)"),
    design: Optional[str] = typer.Option(None, "--design", help="Apply this [[designs]] entry of the template to "
                                         "the base first (e.g. \"in-memory tier\": every row gets its tiers)"),
    force: bool = _cli.flag("--force", help="Overwrite the output file if it exists"),
    deadline: bool = _cli.flag("--deadline", help="Also simulate each row (Monte Carlo): P(finish by "
                                                            "deadline_h), wall-time percentiles, cost spread"),
    runs: int = typer.Option(DEFAULT_RUNS, "--runs", help="Simulated runs per row (with --deadline)"),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Base seed; each row's own seed derives from it and "
                             "what the row's simulation uses (not its price, name or deadline)"),
    weibull_shape: Optional[float] = typer.Option(None, "--weibull-shape", help="Weibull shape k of the time between "
                                                  "failures for --deadline (default: exponential)"),
    scheduler: str = typer.Option("local", "--scheduler", help="local (this process) or dask"),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Dask scheduler address (default with "
                                               "--scheduler dask: a local cluster, one worker per core)"),
    chunk_rows: Optional[int] = typer.Option(None, "--chunk-rows", help="Rows per chunk / Dask partition "
                                             f"(default {DEFAULT_CHUNK_ROWS:,}; {DEADLINE_CHUNK_ROWS} with --deadline)"),
    keep_extra: bool = _cli.flag("--keep-extra", help="Carry columns that are no scenario field through "
                                    "unchanged (default: refuse them, a misspelt field would be ignored)"),
    sheet: Optional[str] = typer.Option(None, "--sheet", help="Sheet of an .xlsx input (default: 'Scenarios', else the first)"),
    delimiter: Optional[str] = typer.Option(None, "--delimiter", help="Separator of a CSV input: ',', ';' or 'tab' "
                                            "(default: detected from the header row)"),
    decimal: Optional[str] = typer.Option(None, "--decimal", help="Decimal separator of a CSV input: '.' or ',' "
                                          "(default: '.' in a comma-separated file, detected in a ';' or tab one)"),
    max_rows: int = typer.Option(MAX_SWEEP_ROWS, "--max-rows", help="Refuse an input of more data rows than this, "
                                 "before any work"),
    as_json: bool = _cli.flag("--json", help="Print the summary as JSON"),
    risk_draws: int = typer.Option(1000, "--risk-draws", help="Input draws per row with input ranges "
                                   "(<field>_low/_high columns): P10/P50/P90 of total cost and wall hours"),
    strategies: bool = _cli.flag("--strategies", help="Also price each row's recovery strategies side by side, as "
                                 "`ckptplan compare` does: wait for a node, hot spares, elastic, elastic + spares "
                                 "(columns wait_*, spares_*, elastic_*, elastic_spares_* and cheapest_strategy; rows "
                                 "need nodes_per_replica and repair_h; without min_replicas the elastic floor is one "
                                 "replica fewer than the job runs; seconds per row)"),
    capacity: bool = _cli.flag("--capacity", help="Also price each spot row's capacity as `ckptplan compare` does: all "
                               "on-demand, all spot, spot with an on-demand fallback (columns on_demand_*, spot_*, "
                               "fallback_* with P(finish by deadline_h), P50/P90 wall hours and cost, mean cost, "
                               "interval; fallback_threshold_min; cheapest_capacity_on_time). Rows need "
                               "preemptions_per_h and deadline_h; others get blank columns and a capacity_note; a "
                               "changing failure rate runs on its schedules; tiers are refused; 4,000 runs, seed 0"),
) -> None:
    """Evaluate every scenario of a file; bad rows are reported per row, never dropped.

    Columns the file omits come from the base scenario (--template, default seed) and the summary
    says which; e.g. a file of name, checkpoint_stall_min, node_mtbf_h, nodes and restart_min takes
    the run length, price, deadline and the rest from the template. A template's storage and recovery
    setup fills its fields as columns (each row derives its own stall and restart), and its checkpoint
    tiers (or those of --design) plan every row: tier{i}_ columns give each tier's interval, times
    and storage bill. The results' row column is the data row of the file: 1 = the first row under
    the header (blank rows count). A warnings column says when an ok row's answer leaves its model's range.
    Columns <field>_low and <field>_high (optional <field>_dist, <field>_mode) give a row's input ranges:
    the row gains P10/P50/P90 of total cost and wall hours and the input that swings its cost most.
    With --strategies each row also gets its four recovery strategies (wait for a node, hot spares, elastic,
    elastic + spares), each as `ckptplan compare` prices it: {strategy}_spares, _interval_min, _wall_h,
    _expected_failures, _expected_stops, _mean_replicas_running, _total_cost, _cost_per_useful_gpu_hour and,
    with deadline_h, _p_finish_by_deadline, _wall_h_p50/_p90, _total_cost_p50/_p90; cheapest_strategy names the
    cheapest.
    With --capacity each spot row with a deadline also gets its three capacity policies, each as `ckptplan compare
    --json` reports that row's scenario (same runs and seed; spot_price_per_gpu_hour, else price_per_gpu_hour, which
    stays the on-demand price); cheapest_capacity_on_time is the lowest mean cost among the policies on time at least
    as often as on-demand. Other rows are answered with blank capacity columns and a capacity_note saying why.
    """
    started = time.perf_counter()
    try:
        with terminate_on_signals():  # SIGTERM/SIGHUP clean up like Ctrl-C: no temporary file is left
            summary = _batch(scenarios, output, template, no_template, force, deadline, runs, seed, weibull_shape,
                             scheduler, dask_address, chunk_rows, keep_extra, sheet, delimiter, decimal, max_rows,
                             design, risk_draws, strategies, capacity)
    except Terminated as exc:
        _stopped(exc, output)
    except (FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        _file_error(exc)
    _finish(summary, output, started, as_json)


def _batch(scenarios: Path, output: Path, template: Optional[str], no_template: bool, force: bool, deadline: bool,
           runs: int, seed: int, weibull_shape: Optional[float], scheduler: str, dask_address: Optional[str],
           chunk_rows: Optional[int], keep_extra: bool, sheet: Optional[str], delimiter: Optional[str],
           decimal: Optional[str], max_rows: int, design: Optional[str] = None,
           risk_draws: int = 1000, strategies: bool = False, capacity: bool = False) -> "BatchSummary":
    if scheduler not in ("local", "dask"):
        raise InputError("--scheduler", scheduler, "must be 'local' or 'dask'")
    if no_template and template is not None:
        raise InputError("--no-template", True, "cannot be combined with --template")
    if no_template and design is not None:
        raise InputError("--design", design, "needs a template (its [[designs]]); drop --no-template")
    if max_rows < 1:
        raise InputError("--max-rows", max_rows, "must be a whole number >= 1")
    delimiter = {"tab": "\t", "\\t": "\t"}.get(delimiter, delimiter) if delimiter is not None else None
    _check_output(output, force)
    from .engine.batch import evaluate_rows
    from .engine.batch_risk import RANGES_FROM, evaluate_ranges, range_columns
    from .engine.sweep import fill_from_template, iter_results
    from .files import load_plan
    from .files.tables import read_scenarios
    from .files.untrusted import FileInputError
    from .workbook.results import write_results

    base = None if no_template else load_plan(template or _cli.DEFAULT_TEMPLATE)
    if design is not None:
        base = base.with_design(design)
    table = read_scenarios(scenarios, sheet=sheet, delimiter=delimiter, decimal=decimal, max_rows=max_rows)
    fill = None
    if base is not None:
        table, fill = fill_from_template(table, base.scenario, template or _cli.DEFAULT_TEMPLATE, setup=base.setup,
                                         fill_blanks=template is not None)
    _check_output(output, force, rows=len(table))
    table, fill = _default_ranges(table, scenarios, base, fill)
    options = dict(deadline=deadline, runs=runs, seed=seed, failures=_failure_law(weibull_shape),
                   extra_columns="keep" if keep_extra else "error", strategies=strategies, capacity=capacity)
    if fill is not None and fill.tiers:
        options.update(tiers=fill.tiers, failure_classes=fill.failure_classes)
    ranged = [c for parts in range_columns(table.columns).values() for c in parts.values()]
    if ranged and strategies:
        raise InputError("--strategies", True, f"input range columns ({ranged[0]} ...) draw each row many times: "
                         "price the strategies of a table without ranges")
    if ranged and capacity:
        raise InputError("--capacity", True, f"input range columns ({ranged[0]} ...) draw each row many times: "
                         "price the capacities of a table without ranges")
    if ranged and scheduler == "dask":
        raise InputError("--scheduler", scheduler, f"input range columns ({ranged[0]} ...) are evaluated in this "
                         "process: drop --scheduler dask")
    try:
        evaluate_rows(table.iloc[:0].drop(columns=ranged + [c for c in (RANGES_FROM,) if c in table.columns]),
                      **options)  # file-level problems, before any work
        if ranged:
            evaluate_ranges(table.iloc[:0], risk_draws=risk_draws, **options)
    except InputError as exc:
        if exc.field != "columns":
            raise
        raise FileInputError("scenario file", scenarios, str(exc)) from None  # name the file too
    step = chunk_rows or (STRATEGY_CHUNK_ROWS if strategies else CAPACITY_CHUNK_ROWS if capacity else
                          DEADLINE_CHUNK_ROWS if deadline or ranged else DEFAULT_CHUNK_ROWS)
    source = (f"ckptplan batch {scenarios}" + (f" --template {fill.template}" if base is not None else " --no-template")
              + (f" --design {design!r}" if design is not None else "")
              + (f" --deadline --runs {runs} --seed {seed}" if deadline else "")
              + (" --strategies" if strategies else "")
              + (" --capacity" if capacity else "")
              + (f" --risk-draws {risk_draws}" + ("" if deadline else f" --seed {seed}") if ranged else ""))
    with _progress(len(table), "evaluating", deadline or bool(ranged) or strategies or capacity) as advance:
        if scheduler == "dask":
            with _dask_client(dask_address):
                import dask.dataframe as dd

                ddf = dd.from_pandas(table, chunksize=step, sort=False)
                results = evaluate_rows(ddf, cell_errors=table.attrs.get("cell_errors", {}), **options)
                summary = write_results(results, output, force=force, describe=("name",), source=source,
                                        progress=advance, expected_rows=len(table), template=fill)
        else:
            chunks = iter_results(table, chunk_rows=step, **options) if not ranged else (
                evaluate_ranges(table.iloc[a:a + step], risk_draws=risk_draws, **options)
                for a in range(0, len(table), step))
            summary = write_results(chunks, output, force=force, describe=("name",), source=source,
                                    progress=advance, expected_rows=len(table), template=fill)
    return summary


def _default_ranges(table: Any, scenarios: Path, base: Any, fill: Any) -> tuple[Any, Any]:
    """Every row's default input ranges: the batch file's own ``[uncertainty]`` table (a .toml file), then the
    template's; a row's own range cells win (:func:`ckptplan.engine.batch_risk.default_ranges`). The fill report
    gains, per field, whose ranges the rows took (``ranges``)."""
    from dataclasses import replace

    from .engine.batch_risk import default_ranges
    from .engine.template_fill import TemplateFill

    sources = [(table.attrs.pop("uncertainty", None) or {}, f"{scenarios.name}'s [uncertainty]")]
    if base is not None:
        sources.append(({u.field: u for u in base.uncertainty}, f"template {fill.template}'s [uncertainty]"))
    report: dict[str, dict] = {}
    for entries, origin in sources:
        if not entries:
            continue
        table, filled = default_ranges(table, entries, origin)
        for name, rows in filled.items():
            report.setdefault(name, {"from": origin, "rows": rows})
    if not report:
        return table, fill
    for name, r in report.items():
        r["own"] = len(table) - r["rows"]
    fill = fill if fill is not None else TemplateFill("none (--no-template)")
    return table, replace(fill, ranges=report)


def _sweep_axes(overrides: dict[str, Optional[str]], axis: list[str]) -> dict[str, Any]:
    """The axes in nesting order: the field options in the registry's order, then ``--axis`` as given."""
    from .engine.sweep import parse_axis

    axes: dict[str, Any] = {}
    for f in FIELDS:
        if overrides.get(f.name) is not None:
            axes[f.name] = parse_axis(overrides[f.name], f.option)
    for item in axis:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip():
            raise InputError("--axis", item, "must be FIELD=SPEC, e.g. domain1_mtbf_h=5000:40000:x2")
        name = name.strip()
        if name in axes:
            raise InputError("--axis", item, f"{name} is swept twice")
        axes[name] = parse_axis(spec, name)
    if not axes:
        raise InputError("axes", None, "give at least one axis, e.g. --checkpoint-stall-min 0.5,1,2 "
                         "--nodes 64:4096:x2")
    return axes


@field_options(axis=True)
def sweep(
    output: Path = typer.Option(..., "--output", "-o", help="Results file: .csv, .xlsx or .parquet"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Base scenario: preset name or TOML file; "
                                           "default: seed"),
    axis: list[str] = typer.Option([], "--axis", help="Axis on any numeric column, failure domains' included: "
                                   "FIELD=SPEC, e.g. domain1_mtbf_h=5000:40000:x2 (repeatable; nests inside the "
                                   "field options, in the order given)"),
    same_work: bool = _cli.flag("--same-work", help="Keep the useful GPU-hours fixed: useful hours scale by "
                                   "template nodes / nodes (perfect scaling)"),
    design: Optional[str] = typer.Option(None, "--design", help="Apply this [[designs]] entry of the template to "
                                         "the base first (e.g. \"in-memory tier\": every row gets its tiers)"),
    force: bool = _cli.flag("--force", help="Overwrite the output file if it exists"),
    deadline: bool = _cli.flag("--deadline", help="Also simulate each row (Monte Carlo)"),
    runs: int = typer.Option(DEFAULT_RUNS, "--runs", help="Simulated runs per row (with --deadline)"),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Base seed; each row's own seed derives from it and "
                             "what the row's simulation uses (not its price, name or deadline)"),
    weibull_shape: Optional[float] = typer.Option(None, "--weibull-shape", help="Weibull shape k for --deadline"),
    scheduler: str = typer.Option("local", "--scheduler", help="local (this process, streamed in chunks) or dask "
                                  "(grid built and evaluated on the workers)"),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Dask scheduler address (default: a local "
                                               "cluster)"),
    chunk_rows: Optional[int] = typer.Option(None, "--chunk-rows", help="Rows per chunk / Dask partition"),
    max_rows: int = typer.Option(MAX_SWEEP_ROWS, "--max-rows", help="Refuse a grid of more rows than this (the "
                                 "product of the axis lengths), before any work"),
    as_json: bool = _cli.flag("--json", help="Print the summary as JSON"),
    overrides: Optional[dict] = None,
) -> None:
    """Evaluate the grid of every combination of the given axes over a template.

    Every numeric scenario field is an axis option (--checkpoint-stall-min, --nodes, --useful-training-h,
    --price-per-gpu-hour, ...); the rest come from the template. Axis syntax: 0.5,1,2 (list) | 64:4096:x2
    (geometric) | 0.5:3:+0.5 (arithmetic), mixed with commas.

    The axes nest in the field registry's order, the order of the field options below (from
    --checkpoint-stall-min on): the first given varies slowest; then each --axis, in the order given.
    Sweeping --node-mtbf-h drops a job MTBF override and a published failure rate of the template.
    A template's storage and recovery setup is derived per row (setup fields are --axis columns too,
    e.g. --axis aggregate_write_gb_s=1000,2000,4000) and its checkpoint tiers (or those of --design)
    plan every row.
    """
    started = time.perf_counter()
    try:
        with terminate_on_signals():  # SIGTERM/SIGHUP clean up like Ctrl-C: no temporary file is left
            summary = _sweep(output, template, axis, same_work, force, deadline, runs, seed, weibull_shape, scheduler,
                             dask_address, chunk_rows, max_rows, overrides or {}, design)
    except Terminated as exc:
        _stopped(exc, output)
    except (FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        _file_error(exc)
    _finish(summary, output, started, as_json)


def _sweep(output: Path, template: Optional[str], axis: list[str], same_work: bool, force: bool, deadline: bool,
           runs: int, seed: int, weibull_shape: Optional[float], scheduler: str, dask_address: Optional[str],
           chunk_rows: Optional[int], max_rows: int, overrides: dict, design: Optional[str] = None) -> "BatchSummary":
    if scheduler not in ("local", "dask"):
        raise InputError("--scheduler", scheduler, "must be 'local' or 'dask'")
    if max_rows < 1:
        raise InputError("--max-rows", max_rows, "must be a whole number >= 1")
    axes = _sweep_axes(overrides, axis)
    lengths = [len(v) for v in axes.values()]
    rows = math.prod(lengths)
    if rows > max_rows:
        raise InputError("rows", rows, f"the axes make {' x '.join(f'{n:,}' for n in lengths)} = {rows:,} rows, "
                         f"above the limit of {max_rows:,} rows per sweep: narrow an axis, or raise the limit with "
                         "--max-rows")
    from .engine.batch import evaluate_rows
    from .engine.sweep import iter_results, sweep_dask, sweep_grid
    from .files import load_plan
    from .workbook.results import write_results

    plan = load_plan(template or _cli.DEFAULT_TEMPLATE)
    if design is not None:
        plan = plan.with_design(design)
    base = plan.scenario
    grid = sweep_grid(base, same_work=same_work, setup=plan.setup, **axes)
    _check_output(output, force, rows=grid.rows)
    options = dict(deadline=deadline, runs=runs, seed=seed, failures=_failure_law(weibull_shape))
    evaluate_rows(grid.chunk(0, 0), **options, **grid.design_options())  # option problems, before any work
    step = chunk_rows or (DEADLINE_CHUNK_ROWS if deadline else DEFAULT_CHUNK_ROWS)
    describe = tuple(axes)
    source = "ckptplan sweep" + (f" --template {template}" if template else "") + (
        f" --design {design!r}" if design is not None else "") + " " + " ".join(
        f"{k}=[{', '.join(f'{x:g}' for x in v)}]" if len(v) <= 8 else f"{k}=[{len(v)} values, {v.min():g}..{v.max():g}]"
        for k, v in axes.items())
    with _progress(grid.rows, "sweeping", deadline) as advance:
        if scheduler == "dask":
            with _dask_client(dask_address):
                results = sweep_dask(base, partition_rows=step, same_work=same_work, setup=plan.setup, **options,
                                     **axes)
                return write_results(results, output, force=force, describe=describe, source=source,
                                     progress=advance, expected_rows=grid.rows)
        return write_results(iter_results(grid, chunk_rows=step, **options), output, force=force,
                             describe=describe, source=source, progress=advance, expected_rows=grid.rows)


def _help(doc: Optional[str]) -> str:
    """A docstring as --help shows it: paragraphs reflowed (one line each), then the exit statuses."""
    paragraphs = [" ".join(p.split("\n")) for p in inspect.cleandoc(doc or "").split("\n\n")]
    return "\n\n".join(paragraphs + [_EXIT_HELP])


batch.__doc__ = _help(batch.__doc__)
sweep.__doc__ = _help(sweep.__doc__)


def register(app: typer.Typer) -> None:
    """Add the ``batch`` and ``sweep`` commands to ``app``."""
    app.command("batch")(batch)
    app.command("sweep")(sweep)
