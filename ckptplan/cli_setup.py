"""``ckptplan compare`` and the storage-and-recovery part of ``ckptplan plan``: the design as the input.

A scenario file's setup (checkpoint size, bandwidths, tiers, restart parts, spares, storage price;
:mod:`ckptplan.engine.setup`) and its ``[[designs]]`` are planned side by side in money.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import typer

from .common import (DEFAULT_TEMPLATE, ON_NODE_LOSS_HELP, PREEMPTION_RATE_SOURCE_HELP, console, duration, echo_json, fail, field_options, flag, kept, literal, plan_from_options,
                     print_rows)
from .engine.fields import DEFAULT_RUNS, DEFAULT_SEED, FIELDS, SETUP_FIELDS

__all__ = ["COMPARE_DROP_ORDER", "compare", "compare_heads", "money_line", "print_setup", "register", "setup_json"]


def setup_json(plan: Any, headline: dict[str, Any]) -> dict[str, Any]:
    """``plan --json`` with a setup: the headline figures with the setup plan's figures over them.

    A tiered plan's single-level figures (intervals by model, first-order waste) describe a plan
    the job does not follow: they are left out, and ``tiers`` lists each tier's interval.
    """
    out = dict(headline)
    figures = plan.to_dict()
    if len(plan.tiers) > 1 or plan.tiers and plan.tiers[0]["name"] != "checkpoint":
        for key in ("young_interval_min", "daly_interval_min", "exact_interval_min", "first_order_waste",
                    "young_min_waste", "waste_fraction_at_optimum", "wall_h_p50", "wall_h_p90", "wall_h_p99"):
            out.pop(key, None)
        out["chosen_interval_min"] = figures["interval_min"]
    out.update(figures)
    out["useful_gpu_hours"] = figures["gpus"] * plan.scenario.useful_training_h
    return out


def money_line(figures: Any) -> str:
    """What a plan pays, its parts adding up: ``total cost T USD = compute C + storage S + spares P``."""
    cur = literal(str(figures["currency"]))
    return (f"[bold]total cost {figures['total_cost']:,.0f} {cur}[/] = compute {figures['compute_cost']:,.0f} "
            f"+ storage {figures['storage_cost']:,.0f} + spares {figures['spare_cost']:,.0f}")


def _every(k: int) -> str:
    """A tier's ``every``: which of the job's saves reach it (``every save``, ``every 10th save``)."""
    if k == 1:
        return "every save"
    suffix = "th" if k % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"every {k}{suffix} save"


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def print_setup(plan: Any, money: bool = True) -> None:
    """The storage and recovery part of a plan as tables (text from files printed literally); ``money``: end with
    what the plan pays (``ckptplan plan`` says it above the setup for a single-level plan)."""
    f = plan.figures
    cur = literal(str(f["currency"]))
    if f["checkpoint_size_gb"] is not None:
        line = f"checkpoint {f['checkpoint_size_gb']:,.0f} GB"
        if f["derived_checkpoint_stall_min"] is not None:
            line += (f"  |  derived save stall {duration(f['derived_checkpoint_stall_min'])}"
                     + (f", background write {duration(f['derived_async_write_min'])}"
                        if f["derived_async_write_min"] else "")
                     + f", restore {duration(f['derived_restore_min'])}")
        console.print(line, highlight=False)
    if plan.restart_parts_min:
        parts = ", ".join(f"{k[:-4]} {duration(v)}" for k, v in plan.restart_parts_min.items() if v)
        console.print(f"restart pipeline {duration(sum(plan.restart_parts_min.values()))} ({parts or 'no part given'})"
                      + (f"  |  {f['spares']} spares, a spare free at {f['spare_free_probability']:.1%} of the failures that need a node"
                         if f["spare_free_probability"] is not None else ""), highlight=False)
    if f.get("pool_reallocation_min") is not None:
        console.print(f"spare pool: wait for a node {duration(f['pool_reallocation_min'])} per failure that needs one "
                      f"(standard deviation {duration(f['reallocation_sd_min'])}, fixed repair times)  |  "
                      f"{f['mean_nodes_in_repair']:,.2f} nodes in repair on average  |  the job waits for a node "
                      f"{f['pool_waiting_share']:.2%} of the time", highlight=False)
    if f.get("failed_restores"):
        console.print(f"restores that fail: {f['failed_restores']:,.2f} failed restore attempts expected, "
                      f"{f['rollbacks_to_start']:,.3f} rollbacks to the job's start (every copy tried was bad)",
                      highlight=False)
    if f.get("best_spares") is not None:
        console.print(f"cheapest number of hot spares: {f['best_spares']} ({f['best_spares_cost_per_useful_gpu_hour']:,.3f} "
                      f"{cur} per useful GPU-hour, single-level model at each count's optimum interval)", highlight=False)
    print_rows("Checkpoint tiers", ("tier", "saved on", "interval", "save stall", "restore", "restart", "keeps",
                                    f"storage ({cur})"),
               [(literal(str(tier["name"])), _every(tier["every"]), duration(tier["interval_min"]),
                 duration(tier["checkpoint_stall_min"]), duration(tier["restore_min"]), duration(tier["restart_min"]),
                 kept(tier["retention"], tier["copies"]), f"{tier['storage_cost']:,.0f}") for tier in plan.tiers],
               left=("saved on", "keeps"), wrap=("saved on", "keeps"), drop=("restore", "restart"))
    console.print(f"waste {f['waste_fraction']:.2%}  |  wall {duration(f['wall_h'] * 60)}  |  GPU-hours "
                  f"{f['total_gpu_hours']:,.0f} = job {f['job_gpu_hours']:,.0f} + spares {f['spare_gpu_hours']:,.0f}", highlight=False)
    if money:
        console.print(f"{money_line(f)}  |  {f['cost_per_useful_gpu_hour']:,.3f} {cur} per useful GPU-hour",
                      highlight=False)
    for note in plan.notes:
        console.print(f"note: {literal(note)}", highlight=False)


@field_options(FIELDS + SETUP_FIELDS)
def compare(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help="Scenario TOML file (same as --template FILE)"),
    as_json: bool = flag("--json", help="Print JSON instead of a table"),
    break_even_field: Optional[str] = typer.Option(None, "--break-even", help="Also the value of this input at "
                                                   "which each design stops paying off (break-even)"),
    break_even_range: Optional[str] = typer.Option(None, "--break-even-range", help="LOW:HIGH searched for the "
                                                   "break-even (default: the input's range in the file's uncertainty table)"),
    preemption_rate_source: Optional[str] = typer.Option(None, "--preemption-rate-source", help=PREEMPTION_RATE_SOURCE_HELP),
    on_node_loss: Optional[str] = typer.Option(None, "--on-node-loss", help=ON_NODE_LOSS_HELP),
    overrides: Optional[dict] = None,
) -> None:
    """Compare the baseline with each design of the scenario file, in money, cheapest first.

    The designs are the file's [[designs]] tables (default: storage 4x faster, 2x nodes, restarts 2x
    faster). Every scenario and setup field can be set here for the baseline; the designs change it.
    A job made of replicas that may train on fewer (nodes_per_replica, and min_replicas or
    --on-node-loss continue) with a spare pool (repair_h) also gets its recovery strategies priced side
    by side: wait for a node, hot spares, elastic, elastic + spares (without min_replicas the elastic floor
    is one replica fewer than the job runs).
    """
    from .cli_risk import break_even_answer, break_even_range_values, print_break_even
    from .engine.designs import compared_designs

    try:
        given = dict(overrides or {}) | {k: v for k, v in (("on_node_loss", on_node_loss),
                                                            ("preemption_rate_source", preemption_rate_source)) if v is not None}
        plan = plan_from_options(str(scenario_file) if scenario_file else template or DEFAULT_TEMPLATE, given)
        table, plans = compared_designs(plan.scenario, plan.setup, plan.designs or None)
        from .engine.strategies import elastic_fields_set, recovery_strategies

        strategies = recovery_strategies(plan.scenario, plan.setup) if (
            elastic_fields_set(plan.scenario) and plan.setup.repair_h is not None
            and plan.setup.reallocation_min is None) else None
        even = None if break_even_field is None else break_even_answer(
            plan, break_even_field, *break_even_range_values(break_even_range))

        from .engine.spot import scenario_capacity

        # spot scenario with a deadline: three policies (single-level plans; a tiered baseline has none to show)
        # the baseline's plan: planned once, with the designs (PlanFile.planned_scenario without planning again)
        planned = plans[0].scenario if plan.setup.given() else plan.scenario
        capacity = scenario_capacity(planned) if not plan.setup.tiers else None
    except ValueError as exc:
        fail(str(exc))
    cur = plan.scenario.currency
    if as_json:
        rows = [{k: (None if isinstance(v, float) and not math.isfinite(v) else
                     bool(v) if k == "baseline" else v) for k, v in r.items()} for r in table.to_dict("records")]
        out = {"baseline": plan.scenario.name, "currency": cur, "designs": rows}
        if even is not None:
            out["break_even"] = even.to_dict("records")
        if capacity:
            out["capacity"] = capacity
        if strategies is not None:
            out["recovery_strategies"] = strategies.to_dict("records")
        echo_json(out)
        return
    if capacity:
        from .cli_spot import print_capacity

        print_capacity(capacity, cur)
    from rich import box

    cells = [(f"[bold]{literal(str(r.name))}[/] (baseline)" if r.baseline else literal(str(r.name)),
              literal(_intervals(r.tier_intervals)).replace(" / ", "\n"), f"{r.waste_fraction:.2%}", f"{r.wall_h:,.1f}",
              f"{r.total_gpu_hours:,.0f}", f"{r.compute_cost:,.0f}", f"{r.storage_cost:,.0f}", f"{r.spare_cost:,.0f}",
              f"[bold]{r.total_cost:,.0f}[/]", "-" if r.baseline else f"{r.total_cost_change:+,.0f}",
              f"{r.cost_per_useful_gpu_hour:,.3f}", _num(r.p_finish_by_deadline, ".1%")) for r in table.itertuples()]
    print_rows(_compare_title(plan.scenario, table), compare_heads(cur), cells, drop=COMPARE_DROP_ORDER,
               box=box.SIMPLE_HEAD)
    for r in table.itertuples():
        if not r.baseline:
            console.print(f"  {literal(str(r.name))}: {literal(str(r.changes))}", highlight=False)
    if strategies is not None:
        from .cli_elastic import print_strategies

        print_strategies(strategies, cur)
    if even is not None:
        print_break_even(even)


def _compare_title(sc: Any, table: Any) -> str:
    """The compare table's title: how its P(finish) was reached (analytic, or simulated as plan does: spot
    capacity, or an interval schedule for failure phases or a Weibull rate from the job's start)."""
    if sc.deadline_h is None:
        return f"{literal(sc.name)}: designs side by side, cheapest first"
    scheduled = table["tier_intervals"].astype(str).str.startswith("from-").any()
    from .engine.spot_rates import scenario_preemptions_per_h

    if scenario_preemptions_per_h(sc):
        how = f"simulated ({DEFAULT_RUNS:,} runs, seed {DEFAULT_SEED}, as plan: spot capacity)"
    elif sc.failure_phases or scheduled:
        how = "simulated on each schedule (as plan)"
    else:
        how = "analytic (exponential failures, as plan and the workbook)"
    return (f"{literal(sc.name)}: designs side by side, cheapest first; P(finish) by the "
            f"{duration(sc.deadline_h * 60)} deadline, " + how)


#: the compare table's columns a narrow terminal leaves out, least needed first (the README's table keeps the rest)
COMPARE_DROP_ORDER = ("compute", "storage", "spares", "GPU-hours", "interval", "per useful GPU-h")


def compare_heads(currency: str) -> tuple[str, ...]:
    """The compare table's headings (the README's worked example uses the same). ``P(finish)``: by the
    scenario's deadline, analytic (exponential failures: what plan and the workbook's Plan sheet say)."""
    cur = literal(str(currency))
    return ("design", "interval", "waste", "wall h", "GPU-hours", "compute", "storage", "spares",
            f"total cost ({cur})", "vs baseline", "per useful GPU-h", "P(finish)")


def _intervals(text: str) -> str:
    """``checkpoint 46.2 min`` -> ``46.2 min``; tiers as ``host-memory 1.43 min / remote 14.3 min``."""
    parts = [p.rsplit(" ", 2) for p in text.split(", ")]
    if len(parts) == 1 and parts[0][0] == "checkpoint":
        return duration(float(parts[0][1]))
    return " / ".join(f"{name} {duration(float(value))}" for name, value, _ in parts)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
