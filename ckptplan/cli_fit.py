"""``ckptplan fit LOG.csv``: fit an interruption log and optionally emit a scenario from it.

Wire it into the main app with ``register(app)``. The log format is documented in
:mod:`ckptplan.files.logs`, every estimator in :mod:`ckptplan.engine.fitting`. ``--emit-scenario
OUT.toml`` writes the ``--template`` plan (default: the seed case) with the fitted
``job_mtbf_h``, ``restart_min`` and ``checkpoint_stall_min`` (those the log could estimate: stated,
so they win over what the template's setup derives); the rest of the scenario, the setup, tiers,
failure classes and designs stay as in the template (:mod:`ckptplan.files.scenario_toml`). The file is
written atomically (a temporary file in the same directory, checked by loading it, then linked or
renamed) and an existing file is replaced only with ``--force``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.table import Table

if TYPE_CHECKING:  # the fitter (numpy, pandas) loads when the command runs, not when the CLI starts
    from .engine.fitting import LogFit, MinutesSummary

# `from package import module` resolves through sys.modules, so this works even when ckptplan.cli
# imports this module while it is still initialising; names are looked up at call time.
from ckptplan import common as _cli
from ckptplan.common import duration, literal

__all__ = ["emit_fitted", "fitted_ranges", "print_fit", "register"]


def _num(x: float | None, fmt: str = ".3g", unit: str = "") -> str:
    return "n/a" if x is None else f"{x:{fmt}}{unit}"


def _summary(s: "MinutesSummary | None") -> tuple[str, str]:
    if s is None:
        return "n/a", "not in the log"
    return (duration(s.mean_min), f"median {duration(s.median_min)}, p90 {duration(s.p90_min)}, "
                                  f"max {duration(s.max_min)} (n = {s.count})")


def print_fit(fit: LogFit) -> None:
    """The fit as a table plus the scenario overrides and notes."""
    conf = f"{fit.confidence:.0%}"
    t = Table(title=f"Interruption log {literal(fit.source)}", title_justify="left")
    t.add_column("quantity")
    t.add_column("estimate", justify="right")
    t.add_column("detail")
    t.add_row("observed", duration(fit.observed_h * 60),
              literal(f"{fit.first_timestamp} .. {fit.last_timestamp}, {fit.rows} rows"))
    t.add_row("running time", duration(fit.running_h * 60),
              f"{fit.running_share:.1%} of observed, {fit.run_segments} run segments, {fit.checkpoints} checkpoints")
    causes = literal(", ".join(f"{k} {v}" for k, v in sorted(fit.failure_causes.items(), key=lambda kv: -kv[1])))
    t.add_row("interruptions", str(fit.interruptions),
              f"{fit.unplanned_failures} unplanned ({causes or 'none'}), {fit.planned_interruptions} planned")
    m = fit.mtbf
    if m.mtbf_h is not None:
        t.add_row("job MTBF", duration(m.mtbf_h * 60), f"{conf} interval {duration(m.lower_h * 60)} .. "
                                                        f"{duration(m.upper_h * 60)} (exponential, chi-square)")
    else:
        t.add_row("job MTBF", f">= {duration(m.lower_h * 60)}", f"no unplanned failures: one-sided {conf} lower bound only")
    w = fit.shape
    if w.shape is not None:
        t.add_row("Weibull shape k", f"{w.shape:.3g}",
                  f"{conf} interval {_num(w.shape_lower)} .. {_num(w.shape_upper)}, p(k = 1) = "
                  f"{w.p_value_exponential:.3g}: {w.verdict}")
    else:
        t.add_row("Weibull shape k", "n/a", f"insufficient data: {w.note}")
    t.add_row("restart time", *_summary(fit.restart))
    t.add_row("save stall", *_summary(fit.stall))
    t.add_row("checkpoint interval", *_summary(fit.checkpoint_interval))
    per_failure = "" if fit.lost_per_failure_h is None else f", {duration(fit.lost_per_failure_h * 60)} per failure"
    steps = "" if fit.lost_steps is None else f", {fit.lost_steps:,} steps"
    t.add_row("progress lost", duration(fit.lost_h * 60),
              f"{fit.lost_share:.2%} of running time{per_failure}{steps}")
    _cli.console.print(t)
    overrides = fit.scenario_overrides()
    _cli.console.print("scenario overrides: " + (", ".join(f"{k} = {v:.4g}" for k, v in overrides.items())
                                                 or "none (nothing estimable)"), highlight=False)
    for note in fit.notes:
        _cli.console.print(f"note: {literal(note)}", highlight=False)


def emit_fitted(path: Path, fit: LogFit, template: Optional[str], force: bool) -> Any:
    """Write the template's plan (default: seed) with the fit's fields in place of its own (``--emit-scenario``):
    renamed and sourced; its setup, tiers, failure classes and designs kept
    (:func:`ckptplan.files.scenario_toml.write_measured`). Returns the plan written."""
    from .files.scenario_toml import write_measured

    overrides = fit.scenario_overrides()
    base = _cli.plan_from_options(template, {})
    name, m = base.scenario.name, fit.mtbf
    parts = []
    if "job_mtbf_h" in overrides:
        parts.append(f"job MTBF {_cli.duration(m.mtbf_h * 60)} ({fit.confidence:.0%} interval "
                     f"{_cli.duration(m.lower_h * 60)}..{_cli.duration(m.upper_h * 60)}) "
                     f"from {m.failures} unplanned failures in {m.running_h:.4g} running hours")
    if "restart_min" in overrides:
        parts.append(f"mean restart {_cli.duration(fit.restart.mean_min)} (n = {fit.restart.count})")
    if "checkpoint_stall_min" in overrides:
        parts.append(f"mean stall {_cli.duration(fit.stall.mean_min)} (n = {fit.stall.count})")
    fitted = "; ".join(parts) or "nothing estimable"
    texts = {"name": f"{name}-fitted",
             "description": f"{name} with fields fitted from the interruption log {Path(fit.source).name}",
             "source": f"ckptplan fit {fit.source}: {fitted}; other fields from template "
                       f"{template or _cli.DEFAULT_TEMPLATE}" + (f" ({base.scenario.source})" if base.scenario.source else "")}
    notes = (["job_mtbf_h replaces the node-derived MTBF: the log measures every cause of job interruption."]
             if "job_mtbf_h" in overrides else []) + list(fit.notes)
    ranges = fitted_ranges(fit)
    if ranges:
        notes.append(f"[uncertainty] job_mtbf_h = the MTBF's {fit.confidence:.0%} confidence interval "
                     "(ckptplan sensitivity and risk swing and draw it).")
    return write_measured(path, base, overrides, command=f"`ckptplan fit {fit.source}`",
                          source=f"the interruption log {fit.source}", texts=texts, notes=notes, force=force,
                          ranges=ranges)


def fitted_ranges(fit: LogFit) -> dict[str, list[float]]:
    """The ``[uncertainty]`` entries a fit gives its emitted scenario: the job MTBF (the rate field the scenario
    uses: it overrides the node MTBF) from its confidence interval's lower to upper bound, a three-point
    ``[low, high]`` around ``T/n`` (:mod:`ckptplan.engine.uncertainty`); none when the log has no failure (only
    a one-sided bound exists) or the bounds do not enclose the estimate with room (a float tie)."""
    m = fit.mtbf
    if m.mtbf_h is None or m.lower_h is None or m.upper_h is None or not m.lower_h < m.mtbf_h < m.upper_h:
        return {}
    return {"job_mtbf_h": [float(m.lower_h), float(m.upper_h)]}


def register(app: typer.Typer) -> None:
    """Add the ``fit`` command to ``app``."""

    @app.command("fit")
    def fit(
        log: Path = typer.Argument(..., help="Interruption log CSV: timestamp,event,cause[,checkpoint_stall_s][,step]"),
        as_json: bool = _cli.flag("--json", help="Print JSON instead of tables"),
        template: Optional[str] = typer.Option(
            None, "--template", "-t", help="Base scenario for --emit-scenario (preset or TOML); default: seed"),
        emit_scenario: Optional[Path] = typer.Option(
            None, "--emit-scenario", help="Write the template with the fitted fields to this TOML file"),
        force: bool = _cli.flag("--force", help="Overwrite the --emit-scenario file if it exists"),
        confidence: float = typer.Option(0.9, "--confidence", help="Confidence level of the intervals"),
        phase_starts_h: Optional[str] = typer.Option(
            None, "--phase-starts-h", help="Also fit a failure rate per phase from these wall hours after the first "
            "start (e.g. 0,72), with a test of whether it changed"),
    ) -> None:
        """Fit an interruption log: job MTBF with confidence bounds, failure shape, restart, stall, progress lost."""
        try:
            from .files.logs import fit_log

            result = fit_log(log, confidence=confidence)
            phased = None
            if phase_starts_h is not None:
                from .cli_phases import fit_phases, parse_phase_starts

                phased = fit_phases(log, parse_phase_starts(phase_starts_h), confidence)
        except ValueError as exc:
            _cli.fail(str(exc))
        emitted: dict[str, Any] | None = None
        if emit_scenario is not None:
            if emit_scenario.exists() and not force:
                _cli.fail(f"{emit_scenario} exists; use --force to overwrite it")
            if not emit_scenario.parent.is_dir():
                _cli.fail(f"--emit-scenario {emit_scenario}: directory {emit_scenario.parent} does not exist")

            plan = _cli.emit_scenario_file(emit_scenario, lambda: emit_fitted(emit_scenario, result, template, force),
                                           "fitted")
            emitted = {"path": str(emit_scenario), "name": plan.scenario.name, "overrides": result.scenario_overrides()}
        if as_json:
            from .cli_phases import phase_fit_json

            _cli.echo_json({**result.to_dict(), **({"failure_phases": phase_fit_json(phased)} if phased else {})},
                           emitted)
        else:
            print_fit(result)
            if phased is not None:
                from .cli_phases import print_phase_fit

                print_phase_fit(phased)
        if emitted is not None:
            (_cli.err_console if as_json else _cli.console).print(
                f"wrote scenario {literal(repr(emitted['name']))} to {literal(emitted['path'])}", highlight=False)
            if not emitted["overrides"]:
                _cli.err_console.print("warning: nothing could be estimated from the log; the scenario equals "
                                       "the template", highlight=False)
