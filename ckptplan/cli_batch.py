"""``ckptplan batch`` and ``ckptplan sweep``: many scenarios at once, from a file or a grid, to a file.

A thin front end over :mod:`engine.batch`. Wire it into the main app with ``register(app)``.

Exit status (both commands), so that pipelines notice:

* 0: every row evaluated;
* 3: the output was written, but some rows failed (``status = error`` in the file, each with its
  reason in the ``error`` column; the summary lists the first ones);
* 2: nothing was written: unreadable or empty input, a missing required column, an unknown column,
  bad range syntax or option, an output that exists (without ``--force``), more rows than an .xlsx
  sheet holds, a Dask scheduler that cannot be reached.

Sweep axes take numbers and ranges, comma-separated: ``0.5,1,2`` (a list), ``64:4096:x2``
(geometric: 64, 128, ..., 4096), ``0.5:3:+0.5`` (arithmetic: 0.5, 1.0, ..., 3.0), mixed freely
(``0.25,0.5:2:x2``). A range's end is included when the steps hit it. Rows = the product of the
axis lengths; the first axis varies slowest, in the order the options are listed in ``--help``,
then ``--axis`` options in the order given.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, List, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .engine import InputError
from .engine import batch as eb
from .engine.montecarlo import FailureLaw
from .files.atomic import OutputExistsError

# `from package import module` resolves through sys.modules, so this works even when ckptplan.cli
# imports this module while it is still initialising; names are looked up at call time.
from ckptplan import common as _cli

EXIT_ROW_ERRORS = 3
EXIT_FILE_ERROR = 2
#: rows per chunk when the Monte Carlo runs (a progress step every few seconds at 10^4 runs)
DEADLINE_CHUNK_ROWS = 64
#: show a progress bar from this many rows on (and always with --deadline), on a terminal
PROGRESS_FROM_ROWS = 100_000

_EXIT_HELP = ("Exit status: 0 all rows evaluated; 3 output written but some rows failed (status = error, "
              "reason in the error column); 2 nothing written (bad input file, missing or unknown column, "
              "bad option, output exists without --force, too many rows for .xlsx).")

_SWEEP_AXES = (  # option name -> scenario field, in the order the axes nest (first = slowest)
    ("stall_min", "checkpoint_stall_min"),
    ("async_write_min", "async_write_min"),
    ("async_slowdown", "async_slowdown_fraction"),
    ("restart_min", "restart_min"),
    ("node_mtbf_h", "node_mtbf_h"),
    ("job_mtbf_h", "job_mtbf_h"),
    ("nodes", "nodes"),
    ("gpus_per_node", "gpus_per_node"),
    ("useful_h", "useful_training_h"),
    ("price", "price_per_gpu_hour"),
    ("interval_min", "interval_min"),
    ("deadline_h", "deadline_h"),
)


def _failure_law(weibull_shape: Optional[float]) -> Any:
    return "exponential" if weibull_shape is None else FailureLaw.weibull(weibull_shape)


def _check_output(output: Path, force: bool, rows: Optional[int] = None) -> None:
    """Everything about the output that can fail, checked before any evaluation."""
    kind = eb.output_kind(output)
    if output.exists() and not force:
        raise OutputExistsError(f"{output} exists: refusing to overwrite it (use --force to replace it)")
    if not output.parent.exists():
        raise FileNotFoundError(f"{output.parent} does not exist: create the folder first")
    if kind == "xlsx" and rows is not None and rows > eb.EXCEL_MAX_DATA_ROWS:
        raise InputError("rows", rows, f"exceed Excel's limit of {eb.EXCEL_MAX_DATA_ROWS:,} data rows per sheet: "
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
    show = _cli.err_console.is_terminal and (deadline or total >= PROGRESS_FROM_ROWS)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("rows"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=_cli.err_console, transient=True,
                  disable=not show) as bar:
        task = bar.add_task(label, total=total)
        yield lambda rows: bar.advance(task, rows)


def _file_error(exc: Exception) -> None:
    """Exit 2 with the message of a file-level error (nothing was written)."""
    plain = isinstance(exc, (FileExistsError, FileNotFoundError, ValueError))
    _fail(str(exc) if plain else f"{type(exc).__name__}: {exc}", EXIT_FILE_ERROR)


def _fail(message: str, code: int = EXIT_FILE_ERROR) -> None:
    """:func:`ckptplan.common.fail` with the batch exit code for file-level errors."""
    _cli.fail(message, code)


def _say(text: str) -> None:
    _cli.console.print(text, markup=False, emoji=False, highlight=False, soft_wrap=True)


def _print_summary(summary: eb.BatchSummary, output: Path, elapsed: float, as_json: bool) -> None:
    """One screen: counts, best and worst scenario by cost per useful GPU-hour, the first failures."""
    if as_json:
        data = summary.to_dict()
        data.update({"output": str(output), "seconds": round(elapsed, 3)})
        typer.echo(json.dumps(data, indent=2, default=str))
        return
    rate = summary.rows / elapsed if elapsed > 0 else float("inf")
    _say(f"{summary.rows:,} rows: {summary.ok:,} ok, {summary.errors:,} failed -> {output} "
         f"({elapsed:.1f} s, {rate:,.0f} rows/s)")
    if summary.best:
        _say("Ranked by cost per useful GPU-hour (total cost / useful GPU-hours, in the row's currency; "
             "saves, rework and restarts included):")
        for label, store in (("best ", summary.best), ("worst", summary.worst)):
            for cur, rec in store.items():
                _say(f"  {label} {rec['value']:,.4f} {cur} per useful GPU-h (total cost {rec['total_cost']:,.0f} {cur}, "
                     f"goodput {rec['goodput']:.2%}): row {rec['row']}, {eb.BatchSummary.describe_record(rec)}")
    if summary.errors:
        shown = summary.first_errors[:5]
        _say("Failed rows (row: field=value: rule):")
        for row, message in shown:
            _say(f"  row {row}: {message}")
        more = summary.errors - len(shown)
        if more > 0:
            _say(f"  ... and {more:,} more: filter status = error in {output}")


def _finish(summary: eb.BatchSummary, output: Path, started: float, as_json: bool) -> None:
    _print_summary(summary, output, time.perf_counter() - started, as_json)
    if summary.errors:
        raise typer.Exit(EXIT_ROW_ERRORS)


def batch(
    scenarios: Path = typer.Argument(..., help="Scenario table: .csv, .xlsx, .parquet (a header row of field names) "
                                                "or .toml (one scenario table, or an array of them)"),
    output: Path = typer.Option(..., "--output", "-o", help="Results file: .csv, .xlsx or .parquet"),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists"),
    deadline: bool = typer.Option(False, "--deadline", help="Also simulate each row (Monte Carlo): P(finish by "
                                                            "deadline_h), wall-time percentiles, cost spread"),
    runs: int = typer.Option(eb.DEFAULT_RUNS, "--runs", help="Simulated runs per row (with --deadline)"),
    seed: int = typer.Option(0, "--seed", help="Base seed; each row's own seed derives from it and the row's inputs"),
    weibull_shape: Optional[float] = typer.Option(None, "--weibull-shape", help="Weibull shape k of the time between "
                                                  "failures for --deadline (default: exponential)"),
    scheduler: str = typer.Option("local", "--scheduler", help="local (this process) or dask"),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Dask scheduler address (default with "
                                               "--scheduler dask: a local cluster, one worker per core)"),
    chunk_rows: Optional[int] = typer.Option(None, "--chunk-rows", help="Rows per chunk / Dask partition "
                                             f"(default {eb.DEFAULT_CHUNK_ROWS:,}; {DEADLINE_CHUNK_ROWS} with --deadline)"),
    keep_extra: bool = typer.Option(False, "--keep-extra", help="Carry columns that are no scenario field through "
                                    "unchanged (default: refuse them, a misspelt field would be ignored)"),
    sheet: Optional[str] = typer.Option(None, "--sheet", help="Sheet of an .xlsx input (default: 'Scenarios', else the first)"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON"),
) -> None:
    """Evaluate every scenario of a file; bad rows are reported per row, never dropped."""
    started = time.perf_counter()
    try:
        if scheduler not in ("local", "dask"):
            raise InputError("--scheduler", scheduler, "must be 'local' or 'dask'")
        _check_output(output, force)
        table = eb.read_scenarios(scenarios, sheet=sheet)
        _check_output(output, force, rows=len(table))
        options = dict(deadline=deadline, runs=runs, seed=seed, failures=_failure_law(weibull_shape),
                       extra_columns="keep" if keep_extra else "error")
        eb.evaluate_rows(table.iloc[:0], **options)  # file-level problems, before any work
        step = chunk_rows or (DEADLINE_CHUNK_ROWS if deadline else eb.DEFAULT_CHUNK_ROWS)
        source = f"ckptplan batch {scenarios}" + (f" --deadline --runs {runs} --seed {seed}" if deadline else "")
        with _progress(len(table), "evaluating", deadline) as advance:
            if scheduler == "dask":
                import dask.dataframe as dd

                with _dask_client(dask_address):
                    ddf = dd.from_pandas(table, chunksize=step, sort=False)
                    results = eb.evaluate_rows(ddf, cell_errors=table.attrs.get("cell_errors", {}), **options)
                    summary = eb.write_results(results, output, force=force, describe=("name",), source=source,
                                               progress=advance, expected_rows=len(table))
            else:
                chunks = eb.iter_results(table, chunk_rows=step, **options)
                summary = eb.write_results(chunks, output, force=force, describe=("name",), source=source,
                                           progress=advance, expected_rows=len(table))
    except (FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        _file_error(exc)
    _finish(summary, output, started, as_json)


def sweep(
    output: Path = typer.Option(..., "--output", "-o", help="Results file: .csv, .xlsx or .parquet"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Base scenario: preset name or TOML file; default: seed"),
    stall_min: Optional[str] = typer.Option(None, "--stall-min", help="Axis: blocking checkpoint stall (min), e.g. 0.5,1,2"),
    async_write_min: Optional[str] = typer.Option(None, "--async-write-min", help="Axis: background write time (min)"),
    async_slowdown: Optional[str] = typer.Option(None, "--async-slowdown", help="Axis: throughput lost during the write (fraction)"),
    restart_min: Optional[str] = typer.Option(None, "--restart-min", help="Axis: restart time (min)"),
    node_mtbf_h: Optional[str] = typer.Option(None, "--node-mtbf-h", help="Axis: node MTBF (h); drops a job MTBF override of the template"),
    job_mtbf_h: Optional[str] = typer.Option(None, "--job-mtbf-h", help="Axis: job MTBF override (h)"),
    nodes: Optional[str] = typer.Option(None, "--nodes", help="Axis: nodes, e.g. 64:4096:x2"),
    gpus_per_node: Optional[str] = typer.Option(None, "--gpus-per-node", help="Axis: GPUs per node"),
    useful_h: Optional[str] = typer.Option(None, "--useful-h", help="Axis: useful training compute (wall h)"),
    price: Optional[str] = typer.Option(None, "--price", help="Axis: price per GPU-hour"),
    interval_min: Optional[str] = typer.Option(None, "--interval-min", help="Axis: chosen interval (min)"),
    deadline_h: Optional[str] = typer.Option(None, "--deadline-h", help="Axis: deadline (h), used with --deadline"),
    axis: List[str] = typer.Option([], "--axis", help="Axis on any numeric field: FIELD=SPEC, e.g. "
                                   "domain1_mtbf_h=5000:40000:x2 (repeatable)"),
    same_work: bool = typer.Option(False, "--same-work", help="Keep the useful GPU-hours fixed: useful hours scale by "
                                   "template nodes / nodes (perfect scaling)"),
    force: bool = typer.Option(False, "--force", help="Overwrite the output file if it exists"),
    deadline: bool = typer.Option(False, "--deadline", help="Also simulate each row (Monte Carlo)"),
    runs: int = typer.Option(eb.DEFAULT_RUNS, "--runs", help="Simulated runs per row (with --deadline)"),
    seed: int = typer.Option(0, "--seed", help="Base seed; each row's own seed derives from it and the row's inputs"),
    weibull_shape: Optional[float] = typer.Option(None, "--weibull-shape", help="Weibull shape k for --deadline"),
    scheduler: str = typer.Option("local", "--scheduler", help="local (this process, streamed in chunks) or dask "
                                  "(grid built and evaluated on the workers)"),
    dask_address: Optional[str] = typer.Option(None, "--dask-address", help="Dask scheduler address (default: a local cluster)"),
    chunk_rows: Optional[int] = typer.Option(None, "--chunk-rows", help="Rows per chunk / Dask partition"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON"),
) -> None:
    """Evaluate the grid of every combination of the given axes over a template.

    Axis syntax: 0.5,1,2 (list) | 64:4096:x2 (geometric) | 0.5:3:+0.5 (arithmetic), mixed with commas.
    """
    started = time.perf_counter()
    given = dict(stall_min=stall_min, async_write_min=async_write_min, async_slowdown=async_slowdown,
                 restart_min=restart_min, node_mtbf_h=node_mtbf_h, job_mtbf_h=job_mtbf_h, nodes=nodes,
                 gpus_per_node=gpus_per_node, useful_h=useful_h, price=price, interval_min=interval_min,
                 deadline_h=deadline_h)
    try:
        if scheduler not in ("local", "dask"):
            raise InputError("--scheduler", scheduler, "must be 'local' or 'dask'")
        axes: dict[str, Any] = {}
        for opt, field_name in _SWEEP_AXES:
            if given[opt] is not None:
                axes[field_name] = eb.parse_axis(given[opt], "--" + opt.replace("_", "-"))
        for item in axis:
            name, sep, spec = item.partition("=")
            if not sep or not name.strip():
                raise InputError("--axis", item, "must be FIELD=SPEC, e.g. restart_min=5:30:+5")
            name = name.strip()
            if name in axes:
                raise InputError("--axis", item, f"{name} is swept twice")
            axes[name] = eb.parse_axis(spec, name)
        if not axes:
            raise InputError("axes", None, "give at least one axis, e.g. --stall-min 0.5,1,2 --nodes 64:4096:x2")
        grid = eb.sweep_grid(template, same_work=same_work, **axes)
        _check_output(output, force, rows=grid.rows)
        options = dict(deadline=deadline, runs=runs, seed=seed, failures=_failure_law(weibull_shape))
        eb.evaluate_rows(grid.chunk(0, 0), **options)  # option problems, before any work
        step = chunk_rows or (DEADLINE_CHUNK_ROWS if deadline else eb.DEFAULT_CHUNK_ROWS)
        describe = tuple(axes)
        source = "ckptplan sweep" + (f" --template {template}" if template else "") + " " + " ".join(
            f"{k}=[{', '.join(f'{x:g}' for x in v)}]" if len(v) <= 8 else f"{k}=[{len(v)} values, {v.min():g}..{v.max():g}]"
            for k, v in axes.items())
        with _progress(grid.rows, "sweeping", deadline) as advance:
            if scheduler == "dask":
                with _dask_client(dask_address):
                    results = eb.sweep_dask(template, partition_rows=step, same_work=same_work, **options, **axes)
                    summary = eb.write_results(results, output, force=force, describe=describe, source=source,
                                               progress=advance, expected_rows=grid.rows)
            else:
                summary = eb.write_results(eb.iter_results(grid, chunk_rows=step, **options), output, force=force,
                                           describe=describe, source=source, progress=advance, expected_rows=grid.rows)
    except (FileExistsError, FileNotFoundError, ValueError, OSError) as exc:
        _file_error(exc)
    _finish(summary, output, started, as_json)


batch.__doc__ = f"{batch.__doc__}\n\n{_EXIT_HELP}"
sweep.__doc__ = f"{sweep.__doc__}\n\n{_EXIT_HELP}"


def register(app: typer.Typer) -> None:
    """Add the ``batch`` and ``sweep`` commands to ``app``."""
    app.command("batch")(batch)
    app.command("sweep")(sweep)
