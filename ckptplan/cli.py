"""``ckptplan`` command line: a thin front end over :mod:`engine` (and :mod:`workbook`).

Every command validates through the engine; bad input prints the engine's message (field, value,
rule) and exits with status 2, never a traceback.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Optional

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

import engine

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="How often should a training job checkpoint, and what does it cost?")
console = Console()
err_console = Console(stderr=True)

DEFAULT_TEMPLATE = "seed"


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def scenario_from_options(template: Optional[str], overrides: dict[str, Any]) -> engine.Scenario:
    """A template (default: the seed case) with command-line overrides applied and validated."""
    base = engine.load_scenario(template or DEFAULT_TEMPLATE)
    changes = {k: v for k, v in overrides.items() if v is not None}
    if "node_mtbf_h" in changes and "job_mtbf_h" not in changes:
        changes["job_mtbf_h"] = None  # a node figure given on the command line wins over a preset override
    return base.replace(**changes) if changes else base


def _money(x: float, currency: str) -> str:
    return f"{x:,.0f} {currency}"


def headline(row: pd.Series) -> dict[str, Any]:
    """The headline figures of one evaluated scenario, JSON-ready (units in the keys)."""
    keys = ["name", "job_mtbf_h", "effective_stall_min", "young_interval_min", "daly_interval_min",
            "exact_interval_min", "chosen_interval_min", "first_order_waste", "young_min_waste", "waste_fraction",
            "waste_fraction_at_optimum", "expected_failures", "wall_h", "useful_h", "save_h", "rework_h", "restart_h",
            "gpus", "total_gpu_hours", "useful_gpu_hours", "save_gpu_hours", "rework_gpu_hours", "restart_gpu_hours",
            "total_cost", "useful_cost", "save_cost", "rework_cost", "restart_cost", "goodput",
            "cost_per_useful_gpu_hour", "currency"]
    out: dict[str, Any] = {}
    for k in keys:
        v = row[k]
        out[k] = v if isinstance(v, str) else float(v)
    return out


def print_plan(row: pd.Series) -> None:
    cur = row["currency"]
    console.print(f"[bold]{row['name']}[/]  {row.get('description', '') or ''}", highlight=False)
    console.print(
        f"job MTBF {row['job_mtbf_h']:.2f} h  |  stall {row['checkpoint_stall_min']:g} min"
        + (f" + async write {row['async_write_min']:g} min at {row['async_slowdown_fraction']:.0%} slowdown"
           f" (effective {row['effective_stall_min']:.3g} min)" if row["async_write_min"] > 0 else "")
        + f"  |  restart {row['restart_min']:g} min  |  {int(row['gpus'])} GPUs", highlight=False)

    t = Table(title="Checkpoint interval by model", title_justify="left")
    t.add_column("model")
    t.add_column("interval (min)", justify="right")
    t.add_column("waste, exact model", justify="right")
    t.add_row("Young (first order)", f"{row['young_interval_min']:.1f}", f"{row['waste_fraction_at_young']:.2%}")
    t.add_row("Daly (higher order)", f"{row['daly_interval_min']:.1f}", f"{row['waste_fraction_at_daly']:.2%}")
    t.add_row("exact optimum", f"{row['exact_interval_min']:.1f}", f"{row['waste_fraction_at_optimum']:.2%}")
    if not math.isnan(row.get("interval_min", math.nan)):
        t.add_row("chosen", f"{row['chosen_interval_min']:.1f}", f"{row['waste_fraction']:.2%}")
    console.print(t)
    console.print(f"first-order waste at the chosen interval: {row['first_order_waste']:.2%} "
                  f"(Young minimum sqrt(2C/M) = {row['young_min_waste']:.2%}; first order leaves out restarts)",
                  highlight=False)

    c = Table(title=f"Expected run at {row['chosen_interval_min']:.1f} min interval "
                    f"({row['expected_failures']:.1f} failures expected)", title_justify="left")
    for col, just in (("where the time goes", "left"), ("wall h", "right"), ("GPU-hours", "right"),
                      (f"cost ({cur})", "right"), ("share", "right")):
        c.add_column(col, justify=just)
    for cat in ("useful", "save", "rework", "restart"):
        c.add_row(cat, f"{row[f'{cat}_h']:,.1f}", f"{row[f'{cat}_gpu_hours']:,.0f}",
                  f"{row[f'{cat}_cost']:,.0f}", f"{row[f'{cat}_h'] / row['wall_h']:.2%}")
    c.add_row("[bold]total[/]", f"{row['wall_h']:,.1f}", f"{row['total_gpu_hours']:,.0f}",
              f"{row['total_cost']:,.0f}", "100.00%")
    console.print(c)
    if row["async_write_min"] > 0:
        naive = engine.waste_fraction(row["chosen_interval_min"], 1e-9, row["job_mtbf_h"] * 60, row["restart_min"])
        console.print(f"async is not free: treating these saves as C = 0 would predict {naive:.2%} waste at this "
                      f"interval; the async model gives {row['waste_fraction']:.2%} (throughput lost during the "
                      f"{row['async_write_min']:g} min write, and rework while the checkpoint is not yet durable)",
                      highlight=False)
    console.print(f"goodput {row['goodput']:.2%}  |  {row['cost_per_useful_gpu_hour']:.3f} {cur} per useful GPU-hour "
                  f"(list price {row['price_per_gpu_hour']:g})", highlight=False)


@app.command()
def plan(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name (see `ckptplan templates`) or TOML file; default: seed"),
    stall_min: Optional[float] = typer.Option(None, "--stall-min", help="Blocking checkpoint stall per save (min)"),
    async_write_min: Optional[float] = typer.Option(None, "--async-write-min", help="Background write time until durable (min)"),
    async_slowdown: Optional[float] = typer.Option(None, "--async-slowdown", help="Throughput lost during the write (fraction)"),
    restart_min: Optional[float] = typer.Option(None, "--restart-min", help="Restart time after each failure (min)"),
    node_mtbf_h: Optional[float] = typer.Option(None, "--node-mtbf-h", help="Node MTBF (h)"),
    job_mtbf_h: Optional[float] = typer.Option(None, "--job-mtbf-h", help="Job MTBF override (h)"),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Nodes in the job"),
    gpus_per_node: Optional[int] = typer.Option(None, "--gpus-per-node", help="GPUs per node"),
    useful_h: Optional[float] = typer.Option(None, "--useful-h", help="Useful training compute (wall h)"),
    price: Optional[float] = typer.Option(None, "--price", help="Price per GPU-hour"),
    interval_min: Optional[float] = typer.Option(None, "--interval-min", help="Chosen interval (min); default: exact optimum"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables"),
) -> None:
    """Headline numbers for one scenario: intervals by model, waste, job MTBF, GPU-hours and cost."""
    try:
        sc = scenario_from_options(template, {
            "checkpoint_stall_min": stall_min, "async_write_min": async_write_min,
            "async_slowdown_fraction": async_slowdown, "restart_min": restart_min, "node_mtbf_h": node_mtbf_h,
            "job_mtbf_h": job_mtbf_h, "nodes": nodes, "gpus_per_node": gpus_per_node,
            "useful_training_h": useful_h, "price_per_gpu_hour": price, "interval_min": interval_min,
        })
        row = engine.evaluate(sc).iloc[0]
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(headline(row), indent=2))
    else:
        print_plan(row)


@app.command()
def templates() -> None:
    """List the shipped scenario presets."""
    t = Table("name", "description")
    for name in engine.list_templates():
        t.add_row(name, engine.load_scenario(name).description)
    console.print(t)


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
