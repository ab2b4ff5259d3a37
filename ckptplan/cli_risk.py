"""``ckptplan sensitivity``, ``target`` and ``risk``: which input moves the bill most, what a goal needs, and
P10/P50/P90 in money; and the break-even section of ``ckptplan compare``.

Thin views of :mod:`ckptplan.engine.sensitivity` (tornado, break-even), :mod:`ckptplan.engine.targets`
and :mod:`ckptplan.engine.risk`. Input ranges come from the scenario file's ``[uncertainty]`` table
(:mod:`ckptplan.engine.uncertainty`) and from ``--range FIELD=LOW:HIGH`` options, which add to or replace
the file's entries. Wire the commands into the main app with ``register(app)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ckptplan import common as _cli
from ckptplan.common import literal
from ckptplan.engine.fields import FIELDS, SETUP_FIELDS

__all__ = ["break_even_answer", "break_even_range_values", "parse_ranges", "print_break_even", "register"]

_SCENARIO_HELP = "Scenario TOML file (same as --template FILE)"
_RANGE_HELP = ("An input range FIELD=LOW:HIGH (repeatable), added to the file's uncertainty table "
               "(replacing its entry for FIELD)")


def parse_ranges(ranges: list[str] | None) -> dict[str, list[float]]:
    """``["node_mtbf_h=1500:4000"]`` -> ``{"node_mtbf_h": [1500.0, 4000.0]}``; :class:`InputError` naming the
    option otherwise."""
    from .engine.errors import InputError

    out: dict[str, list[float]] = {}
    for text in ranges or []:
        name, eq, span = text.partition("=")
        low, colon, high = span.partition(":")
        try:
            if not eq or not colon:
                raise ValueError
            out[name.strip()] = [float(low), float(high)]
        except ValueError:
            raise InputError("--range", text, "must be FIELD=LOW:HIGH, e.g. node_mtbf_h=1500:4000") from None
    return out


def _plan(template: Optional[str], scenario_file: Optional[Path], ranges: list[str] | None) -> Any:
    """The plan file with the ``--range`` entries merged into its input ranges."""
    from dataclasses import replace

    from .engine.uncertainty import uncertainty_from_dict
    from .files import load_plan

    plan = load_plan(str(scenario_file) if scenario_file else template or _cli.DEFAULT_TEMPLATE)
    extra = uncertainty_from_dict(parse_ranges(ranges), plan.scenario, plan.setup, origin="--range")
    if extra:
        names = {u.field for u in extra}
        plan = replace(plan, uncertainty=tuple(u for u in plan.uncertainty if u.field not in names) + extra)
    return plan


def _swing_cells(block: Any, output: str) -> dict[str, str]:
    """Per input, the swing of ``output`` as the table shows it."""
    fmt = {"total_cost": "{:+,.0f}", "wall_h": "{:+,.1f}", "goodput": "{:+.2%}", "p_finish_by_deadline": "{:+.1%}"}
    rows = block[block["output"] == output]
    return {r.input: ("-" if r.swing != r.swing else fmt[output].format(r.swing)) for r in rows.itertuples()}


def print_tornado(table: Any, currency: str) -> None:
    """One table per plan: the inputs ranked by their total-cost swing, with every output's swing."""
    from .engine.sensitivity import SWING_OUTPUTS

    for name, block in table.groupby("plan", sort=False):
        cost = block[block["output"] == "total_cost"].sort_values("rank")
        cells = {o: _swing_cells(block, o) for o in SWING_OUTPUTS}
        rows = [(str(r.rank), literal(r.input), f"{r.low:,.6g} .. {r.high:,.6g} (base {r.base:,.6g})",
                 f"{r.at_low:,.0f}", f"{r.at_high:,.0f}", cells["total_cost"][r.input], cells["wall_h"][r.input],
                 cells["goodput"][r.input], cells["p_finish_by_deadline"][r.input]) for r in cost.itertuples()]
        base = float(cost["at_base"].iloc[0])
        _cli.print_rows(f"{literal(str(name))}: total cost {base:,.0f} {literal(currency)} at base; swing = at low - at "
                        "high, ranked by the total-cost swing",
                        ("rank", "input", "low .. high", "total cost at low", "total cost at high", "cost swing",
                         "wall h swing", "goodput swing", "P(on time) swing"), rows, left=("input", "low .. high"))


def sensitivity(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help=_SCENARIO_HELP),
    ranges: Optional[list[str]] = typer.Option(None, "--range", help=_RANGE_HELP),
    as_json: bool = _cli.flag("--json", help="Print JSON instead of tables"),
) -> None:
    """Tornado: each input of the file's uncertainty table swung from low to high, the others at base, ranked by
    its swing of total cost (also wall hours, goodput and P(finish by the deadline)), for the baseline and
    each design."""
    from .engine.sensitivity import tornado

    try:
        plan = _plan(template, scenario_file, ranges)
        if not plan.uncertainty:
            _cli.fail(f"{plan.origin} has no input ranges: add an [uncertainty] table (field = [low, high]) or "
                      "give --range FIELD=LOW:HIGH")
        table = tornado(plan.scenario, plan.setup, plan.designs, plan.uncertainty)
    except ValueError as exc:
        _cli.fail(str(exc))
    if as_json:
        _cli.echo_json({"baseline": plan.scenario.name, "currency": plan.scenario.currency,
                        "inputs": [{"field": u.field, "dist": u.dist, "low": u.low, "base": u.base, "high": u.high}
                                   for u in plan.uncertainty],
                        "tornado": table.to_dict("records")})
        return
    print_tornado(table, plan.scenario.currency)


@_cli.field_options(FIELDS + SETUP_FIELDS)
def target(
    solve: str = typer.Option(..., "--solve", help="The input to solve for (a scenario or setup field), e.g. "
                              "aggregate_write_gb_s"),
    goodput: Optional[float] = typer.Option(None, "--goodput", help="Goal: goodput (useful share of wall time)"),
    p_finish: Optional[float] = typer.Option(None, "--p-finish", help="Goal: P(finish by the deadline)"),
    cost: Optional[float] = typer.Option(None, "--cost-per-useful-gpu-hour", help="Goal: total cost per useful "
                                         "GPU-hour"),
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help=_SCENARIO_HELP),
    as_json: bool = _cli.flag("--json", help="Print JSON instead of text"),
    overrides: Optional[dict] = None,
) -> None:
    """The value of one input (--solve FIELD) that reaches a goal: a goodput, P(finish by the deadline) or a
    cost per useful GPU-hour; or why this lever alone cannot reach it. Every scenario and setup field can
    be set here (the option is the field's name); the rest come from the template."""
    from .engine.targets import target as solve_target

    goals = {k: v for k, v in (("goodput", goodput), ("p_finish", p_finish), ("cost_per_useful_gpu_hour", cost))
             if v is not None}
    if len(goals) != 1:
        _cli.fail("give exactly one goal: --goodput, --p-finish or --cost-per-useful-gpu-hour")
    goal, value = next(iter(goals.items()))
    try:
        plan = _cli.plan_from_options(str(scenario_file) if scenario_file else template, overrides or {})
        row = solve_target(plan.scenario, plan.setup, solve, goal, value)
    except ValueError as exc:
        _cli.fail(str(exc))
    answer = {solve: row[solve], "goal": goal, "target": value, "reachable": bool(row["reachable"]),
              "achieved": row["achieved"], "base": row["base"], "why": row["why"], "scenario": plan.scenario.name}
    if as_json:
        _cli.echo_json(answer)
        return
    _cli.console.print(f"[bold]{literal(plan.scenario.name)}[/]: {literal(row['why'])} (now {solve} = "
                       f"{row['base']:,.6g})", highlight=False)


def break_even_range_values(text: Optional[str]) -> tuple[Optional[float], Optional[float]]:
    """``--break-even-range LOW:HIGH`` as two numbers ((None, None) when not given)."""
    if text is None:
        return None, None
    return tuple(parse_ranges([f"range={text}"])["range"])  # type: ignore[return-value]


def break_even_answer(plan: Any, field: str, lo: Optional[float], hi: Optional[float]) -> Any:
    """:func:`ckptplan.engine.sensitivity.break_even` of the plan's designs (the file's, else compare's
    defaults) over ``field`` in ``[lo, hi]`` (default: its ``[uncertainty]`` entry)."""
    from .engine.designs import default_designs
    from .engine.sensitivity import break_even

    designs = plan.designs or default_designs(plan.scenario)
    return break_even(plan.scenario, plan.setup, designs, field, lo, hi, plan.uncertainty)


def print_break_even(table: Any) -> None:
    """The break-even section of ``ckptplan compare``: one line per design."""
    first = table.iloc[0]
    _cli.console.print(f"Break-even over {literal(first['input'])} in [{first['lo']:,.6g}, {first['hi']:,.6g}] "
                       "(the value where the design's saving against the baseline is zero):", highlight=False)
    for r in table.itertuples():
        _cli.console.print(f"  {literal(r.why)}", highlight=False)


def risk(
    template: Optional[str] = typer.Option(None, "--template", "-t", help="Preset name or TOML file; default: seed"),
    scenario_file: Optional[Path] = typer.Option(None, "--scenario", help=_SCENARIO_HELP),
    ranges: Optional[list[str]] = typer.Option(None, "--range", help=_RANGE_HELP),
    draws: int = typer.Option(20_000, "--draws", help="Input draws of the Monte Carlo (each with one run of the job)"),
    seed: int = typer.Option(0, "--seed", help="Seed of the draws (same seed, same answer)"),
    start: Optional[str] = typer.Option(None, "--start", help="Start date of the run (YYYY-MM-DD): finish dates "
                                        "instead of days from the start"),
    percentiles: Optional[list[float]] = typer.Option(None, "--percentile", help="A percentile P to give, 0 < P < "
                                                      "100 (repeatable; default 10, 50 and 90)"),
    as_json: bool = _cli.flag("--json", help="Print JSON instead of a table"),
) -> None:
    """P10 / P50 / P90 (or any --percentile) of total cost, wall hours and finish date, combining the file's
    uncertainty table's input ranges with failure randomness, for the baseline and each design; and P(the design
    costs less than the baseline)."""
    import datetime as dt

    from .engine.risk import risk_percentiles

    try:
        begin = None if start is None else dt.datetime.fromisoformat(start)
    except ValueError:
        _cli.fail(f"--start={start!r}: must be a date, YYYY-MM-DD")
    given = list(percentiles or (10.0, 50.0, 90.0))
    bad = [p for p in given if not 0 < p < 100]
    if bad:
        _cli.fail(f"--percentile={bad[0]:g}: must be above 0 and below 100")
    names = [f"p{p:g}" for p in given]
    try:
        plan = _plan(template, scenario_file, ranges)
        if not plan.uncertainty:
            _cli.fail(f"{plan.origin} has no input ranges: add an [uncertainty] table (field = [low, high]) or "
                      "give --range FIELD=LOW:HIGH")
        table = risk_percentiles(plan.scenario, plan.setup, plan.designs, plan.uncertainty, draws=draws, seed=seed,
                                 probabilities=[p / 100 for p in given])
    except ValueError as exc:
        _cli.fail(str(exc))
    for q in names:
        table[f"finish_{q}"] = [_finish(h, begin) for h in table[f"wall_h_{q}"]]
    if as_json:
        _cli.echo_json({"baseline": plan.scenario.name, "currency": plan.scenario.currency, "draws": draws,
                        "seed": seed, "start": start, "plans": table.to_dict("records")})
        return
    _print_risk(table, plan, names, draws, seed)


def _print_risk(table: Any, plan: Any, names: list[str], draws: int, seed: int) -> None:
    """The risk table: per plan, total cost, wall hours and finish at each percentile, and its odds."""
    cur = literal(plan.scenario.currency)
    rows = []
    for r in table.to_dict("records"):
        odds = ("" if r["p_finish_by_deadline"] != r["p_finish_by_deadline"] else
                f"P(on time) {r['p_finish_by_deadline']:.1%}")
        if r["p_beats_baseline"] == r["p_beats_baseline"]:
            odds += f"{'; ' if odds else ''}P(cheaper than baseline) {r['p_beats_baseline']:.1%}"
        rows.append((literal(r["plan"]), f"total cost ({cur})", *(f"{r[f'total_cost_{q}']:,.0f}" for q in names), odds))
        rows.append(("", "wall h", *(f"{r[f'wall_h_{q}']:,.0f}" for q in names), ""))
        rows.append(("", "finish", *(r[f"finish_{q}"] for q in names), ""))
    _cli.print_rows(f"{literal(plan.scenario.name)}: {draws:,} input draws, each with one run of the job (seed {seed})",
                    ("plan", "figure", *(q.upper() for q in names), "odds"), rows, left=("figure", "odds"))
    for r in table.itertuples():
        if not r.failure_randomness:
            _cli.console.print(f"  {literal(r.plan)}: tiered plan, input uncertainty only (its failure randomness is "
                               "simulated, not analytic)", highlight=False)


def _finish(wall_h: float, begin: Any) -> str:
    """The finish as a date (with ``--start``) or as days from the start."""
    import datetime as dt

    if begin is None:
        return f"day {wall_h / 24:,.1f}"
    return (begin + dt.timedelta(hours=float(wall_h))).strftime("%Y-%m-%d %H:%M")


def register(app: typer.Typer) -> None:
    """Add ``sensitivity``, ``target`` and ``risk`` to ``app``."""
    app.command("sensitivity")(sensitivity)
    app.command("target")(target)
    app.command("risk")(risk)
