"""``ckptplan probe`` and ``ckptplan audit``: measure a checkpoint's real cost, check what one holds.

Wire them into the main app with ``register(app)``. ``probe`` needs PyTorch (``pip install
'ckptplan[torch]'``); ``audit`` does not (it reads the pickle stream inertly, see
:func:`instruments.audit.audit_checkpoint`). What is measured and its limits: :mod:`instruments.probe`.

``probe --emit-scenario OUT.toml`` writes the ``--template`` plan (default: the seed case) with
``checkpoint_stall_min``, ``async_write_min`` and ``async_slowdown_fraction`` replaced by the
medians measured with ``--emit-from`` (default ``dcp_async``; a synchronous method writes
``async_write_min = 0`` and ``async_slowdown_fraction = 0``): stated, so they win over what the
template's setup derives. ``restart_min`` stays the template's: the measured fresh-process restore
is only a lower bound for a restart and is written as a comment. The setup, tiers, failure classes
and designs stay the template's (:mod:`ckptplan.files.scenario_toml`). The file is written
atomically and checked by loading it; an existing file is replaced only with ``--force``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.table import Table

from .instruments import trainer as _trainer

if TYPE_CHECKING:  # the probe and the audit load when their command runs
    from .instruments import audit as _audit
    from .instruments import probe as _probe

# `from package import module` resolves through sys.modules, so this works even when ckptplan.cli
# imports this module while it is still initialising; names are looked up at call time.
from ckptplan import common as _cli
from ckptplan.common import literal

__all__ = ["audit", "emit_probed", "print_audit", "print_probe", "probe", "register"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f}"


def _mb(n: float) -> str:
    return f"{n / 1e6:,.3g}"


def _diff(x: float) -> str:
    return "n/a" if not math.isfinite(x) else ("0" if x == 0 else f"{x:.3g}")


# ------------------------------------------------------------------------------------------ probe

def print_probe(result: "_probe.ProbeResult") -> None:
    """The probe's figures as tables: save cost by method, resume verification, notes."""
    cfg = result.config
    con = _cli.console
    con.print(f"[bold]Checkpoint probe[/]  MLP {cfg.features}->{cfg.hidden}x{cfg.layers}->{cfg.classes}, "
              f"{result.parameters:,} parameters, {_mb(result.state_bytes)} MB of model + optimizer state  |  "
              f"torch {literal(result.torch_version)}, {cfg.threads} thread(s), {literal(result.platform)}  |  "
              f"baseline step {_ms(result.baseline_step_s)} ms (p90 {_ms(result.baseline_step_p90_s)} ms)",
              highlight=False)
    t = Table(title="Save cost by method (medians)", title_justify="left")
    for col in ("method", "saves", "blocking stall (ms)", "background write (ms)", "until durable (ms)",
                "slowdown during write", "size on disk (MB)", "write (MB/s)", "restore, fresh process (s)",
                "restore, state only (s)", "resumes"):
        t.add_column(col, justify="left" if col in ("method", "resumes") else "right")
    for m in result.methods.values():
        r = m.resume
        t.add_row(m.method, str(m.saves), _ms(m.checkpoint_stall_s),
                  _ms(m.async_write_s) if m.async_write_s else "-", _ms(m.total_s),
                  f"{m.async_slowdown_fraction:.1%}" if m.method == "dcp_async" else "-", _mb(m.size_bytes),
                  f"{m.write_mb_per_s:,.1f}",
                  f"{r.timing.restore_with_startup_s:.3f}" if r else "-", f"{r.timing.restore_s:.3f}" if r else "-",
                  r.verdict if r else "not verified")
    con.print(t)
    if result.resume_checks:
        v = Table(title=f"Resume verification: restore in a fresh process, continue to step {result.final_step}, "
                        "compare with the uninterrupted run", title_justify="left")
        for col in ("checkpoint", "left out", "restored at step", "steps continued", "result",
                    "max |param diff|", "max |loss diff|", "final loss (ref / resumed)"):
            v.add_column(col, justify="left" if col in ("checkpoint", "left out", "result") else "right")
        for c in result.resume_checks:
            v.add_row(c.name, ", ".join(c.missing) or "-", str(c.restored_step), str(c.steps_continued),
                      c.verdict, _diff(c.max_abs_param_diff), _diff(c.max_abs_loss_diff),
                      f"{c.final_loss_reference:.6f} / {c.final_loss_resumed:.6f}")
        con.print(v)
    for m in result.methods.values():
        if m.resume:
            tm = m.resume.timing
            con.print(f"restore {m.method}: {tm.restore_with_startup_s:.3f} s from launch = interpreter "
                      f"{tm.interpreter_start_s:.3f} + imports {tm.torch_import_s:.3f} + build {tm.build_s:.3f} + "
                      f"load {tm.load_s:.3f} (probe set-up {tm.harness_setup_s:.3f} s excluded)", highlight=False)
    for note in result.notes:
        con.print(f"note: {literal(note)}", highlight=False)


def emit_probed(path: Path, result: "_probe.ProbeResult", template: Optional[str], method: str, force: bool) -> Any:
    """Write the template's plan (default: seed) with the save-cost fields measured by ``method`` in place of its
    own (``--emit-scenario``): renamed and sourced; its setup, tiers, failure classes and designs kept
    (:func:`ckptplan.files.scenario_toml.write_measured`). Returns the plan written."""
    from .files.scenario_toml import write_measured

    s, cfg = result.methods[method], result.config
    base = _cli.plan_from_options(template, {})
    name = base.scenario.name
    restore = (f"; fresh-process restore {s.resume.timing.restore_with_startup_s:.3g} s "
               "(a lower bound for restart_min, not applied)") if s.resume else ""
    texts = {"name": f"{name}-probed", "description": f"{name} with save costs measured by ckptplan probe ({method})",
             "source": (f"ckptplan probe {result.date_utc}, {result.platform}, torch {result.torch_version}: {method}, "
                        f"median of {s.saves} saves of {_mb(s.size_bytes)} MB: stall {s.checkpoint_stall_s:.4g} s, "
                        f"write {s.async_write_s:.4g} s, slowdown {s.async_slowdown_fraction:.3g}{restore}; other "
                        f"fields from template {template or _cli.DEFAULT_TEMPLATE}"
                        + (f" ({base.scenario.source})" if base.scenario.source else ""))}
    notes = [f"Measured with {method} on the probe's MLP ({result.parameters:,} parameters, {_mb(result.state_bytes)} "
             f"MB of state, {_mb(s.size_bytes)} MB on disk), median of {s.saves} saves, {cfg.threads} thread(s).",
             "checkpoint_stall_min: training blocked by the save; async_write_min: background write until durable "
             "(fsynced); async_slowdown_fraction: 1 - baseline step time / step time during the write.",
             f"These are the probe model's figures on this storage ({s.write_mb_per_s:,.1f} MB/s): a real job's "
             "stall scales with its checkpoint size."]
    if s.resume:
        notes.append(f"restart_min is the template's: the measured fresh-process restore "
                     f"({s.resume.timing.restore_with_startup_s:.3g} s) is only a lower bound for a restart.")
    return write_measured(path, base, s.scenario_overrides(), force=force, texts=texts, notes=notes,
                          command=f"`ckptplan probe` on {result.date_utc} ({result.platform}, torch "
                                  f"{result.torch_version})", source=f"ckptplan probe ({method})")


# ------------------------------------------------------------------------------------------ audit

_STATUS_STYLE = {"present": "green", "missing": "bold red", "unknown": "yellow"}
#: pieces ``audit --strict`` requires (a loss scaler is needed only for fp16 training)


def print_audit(report: "_audit.AuditReport") -> None:

    con = _cli.console
    con.print(f"[bold]{literal(report.path)}[/]  {report.format}, {_mb(report.size_bytes)} MB in {report.files} file(s), "
              f"{report.tensors} tensors ({_mb(report.tensor_bytes)} MB)", highlight=False)
    con.print(("[green]complete:[/] " if report.complete else "[bold red]INCOMPLETE:[/] ") + literal(report.completeness),
              highlight=False)
    t = Table(title="Restorable state", title_justify="left")
    for col in ("piece", "status", "evidence (keys found)", "why it matters"):
        t.add_column(col, overflow="fold")
    for p in report.pieces:
        style = _STATUS_STYLE.get(p.status, "")
        t.add_row(p.piece, f"[{style}]{p.status}[/]", literal(p.evidence), literal(p.why))
    con.print(t)
    con.print("top-level keys: " + (literal(", ".join(report.top_level_keys)) or "(none)"), highlight=False)
    for note in report.notes:
        con.print(f"note: {literal(note)}", highlight=False)


# -------------------------------------------------------------------------------------- commands

def probe(
    hidden: int = typer.Option(256, "--hidden", help="Hidden width of the probe's MLP"),
    layers: int = typer.Option(2, "--layers", help="Hidden layers of the MLP"),
    batch: int = typer.Option(32, "--batch", help="Samples per training step"),
    saves: int = typer.Option(2, "--saves", help="Timed saves per method (methods interleaved)"),
    resume_steps: int = typer.Option(8, "--resume-steps", help="Steps to continue after the last save"),
    methods: str = typer.Option(",".join(_trainer.METHODS), "--methods",
                                help="Comma-separated save methods: torch_save, dcp_sync, dcp_async"),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (fixed for determinism)"),
    seed: int = typer.Option(0, "--seed", help="Seed for data, initialisation, dropout and data order"),
    directory: Optional[Path] = typer.Option(
        None, "--dir", help="Write checkpoints here (the storage to measure); default: a temporary directory"),
    keep: bool = _cli.flag("--keep", help="Keep the checkpoints (in a ckptplan-probe-* folder)"),
    no_verify: bool = _cli.flag("--no-verify",
                                help="Skip the fresh-process restores (no restore time, no resume check)"),
    no_variants: bool = _cli.flag("--no-variants", help="Skip the deliberately incomplete checkpoints"),
    as_json: bool = _cli.flag("--json", help="Print JSON instead of tables"),
    emit_scenario: Optional[Path] = typer.Option(
        None, "--emit-scenario", help="Write the template with the measured save costs to this TOML file"),
    template: Optional[str] = typer.Option(
        None, "--template", "-t", help="Base scenario for --emit-scenario (preset or TOML); default: seed"),
    emit_from: str = typer.Option("dcp_async", "--emit-from", help="Method whose figures --emit-scenario uses"),
    force: bool = _cli.flag("--force", help="Overwrite the --emit-scenario file if it exists"),
) -> None:
    """Measure save stall, background write, slowdown and restore time on a real (CPU) training loop,
    and prove a checkpoint resumes training bit-identically (and what breaks when pieces are missing)."""
    try:
        cfg = _trainer.ProbeConfig(hidden=hidden, layers=layers, batch=batch, saves_per_method=saves,
                                   resume_steps=resume_steps, methods=methods, threads=threads, seed=seed,
                                   verify=not no_verify, variants=not no_variants)
    except ValueError as exc:
        _cli.fail(str(exc))
    if emit_scenario is not None:  # check everything the emission needs before spending the run
        _check_emission(cfg, emit_scenario, template, emit_from, force)
    result = _run_probe(cfg, directory, keep)
    emitted: dict[str, Any] | None = None
    if emit_scenario is not None:
        plan = _cli.emit_scenario_file(
            emit_scenario, lambda: emit_probed(emit_scenario, result, template, emit_from, force), "probed")
        emitted = {"path": str(emit_scenario), "name": plan.scenario.name, "method": emit_from,
                   "overrides": result.scenario_overrides(emit_from)}
    _show_probe(result, as_json, emitted, emit_from)
    if keep:
        _cli.err_console.print(f"checkpoints kept in {result.checkpoint_dir}", highlight=False)
    if emitted is not None:
        (_cli.err_console if as_json else _cli.console).print(
            f"wrote scenario {emitted['name']!r} to {emitted['path']}", highlight=False)
    failed = [c.name for c in result.resume_checks if not c.missing and not c.identical]
    if failed:
        _cli.err_console.print(f"[bold red]warning:[/] complete checkpoint(s) did not resume bit-identically: "
                               f"{', '.join(failed)}", highlight=False)
        raise typer.Exit(1)


def _check_emission(cfg: "_trainer.ProbeConfig", emit_scenario: Path, template: Optional[str], emit_from: str,
                    force: bool) -> None:
    """Fail before the run when ``--emit-scenario`` could not be written: a method not probed, an existing file
    without ``--force``, a missing folder, a bad ``--template``."""
    if emit_from not in cfg.methods:
        _cli.fail(f"--emit-from {emit_from}: not among the probed methods ({', '.join(cfg.methods)})")
    if emit_scenario.exists() and not force:
        _cli.fail(f"{emit_scenario} exists; use --force to overwrite it")
    if not emit_scenario.parent.is_dir():
        _cli.fail(f"--emit-scenario {emit_scenario}: directory {emit_scenario.parent} does not exist")
    try:
        _cli.scenario_from_options(template, {})
    except ValueError as exc:
        _cli.fail(f"--template: {exc}")


def _run_probe(cfg: "_trainer.ProbeConfig", directory: Optional[Path], keep: bool) -> "_probe.ProbeResult":
    """The probe's run (progress on stderr); a missing PyTorch, a bad configuration or an unwritable folder fails."""
    if not _trainer.torch_available():
        _cli.fail("PyTorch is not installed: the probe needs it (pip install 'ckptplan[torch]'; "
                  "a CPU build is enough). `ckptplan audit` works without it.")
    try:
        from .instruments import probe as _probe

        return _probe.run_probe(cfg, directory=directory, keep=keep,
                                progress=lambda msg: _cli.err_console.print(f"[dim]{literal(msg)}[/]",
                                                                            highlight=False))
    except _trainer.TorchMissingError as exc:
        _cli.fail(str(exc))
    except ValueError as exc:
        _cli.fail(str(exc))
    except OSError as exc:
        _cli.fail(f"cannot write checkpoints: {exc}")


def _show_probe(result: "_probe.ProbeResult", as_json: bool, emitted: dict[str, Any] | None, emit_from: str) -> None:
    """The result as JSON (with the emitted scenario), or as tables with the scenario fields it measures."""
    if as_json:
        _cli.echo_json(result.to_dict(), emitted)
    else:
        print_probe(result)
        o = result.scenario_overrides(emit_from if emit_from in result.methods else next(iter(result.methods)))
        _cli.console.print("scenario fields: " + ", ".join(f"{k} = {v:.4g}" for k, v in o.items()), highlight=False)


def audit(
    checkpoint: Path = typer.Argument(..., help="A torch.save file or a torch.distributed.checkpoint directory"),
    as_json: bool = _cli.flag("--json", help="Print JSON instead of a table"),
    strict: bool = typer.Option(False, "--strict",
                                help="Exit 1 unless model, optimizer, step, data position, RNG and LR schedule "
                                     "are present and the checkpoint is complete"),
) -> None:
    """Which restorable-state pieces a checkpoint holds: read without executing anything from the file."""
    try:
        from .instruments import audit as _audit

        report = _audit.audit_checkpoint(checkpoint)
    except ValueError as exc:
        _cli.fail(str(exc))
    except OSError as exc:
        _cli.fail(f"cannot read {checkpoint}: {exc.strerror or exc}")
    if as_json:
        _cli.echo_json(report.to_dict())
    else:
        print_audit(report)
    if strict:
        lacking = [p for p in _audit.RESUME_PIECES if report.status(p) != "present"]
        if lacking or not report.complete:
            why = ([f"not present: {', '.join(lacking)}"] if lacking else []) + ([] if report.complete else ["incomplete"])
            _cli.err_console.print(f"[bold red]not restorable as-is:[/] {literal('; '.join(why))}", highlight=False)
            raise typer.Exit(1)


# --------------------------------------------------------------------------------------- register

def register(app: typer.Typer) -> None:
    """Add the ``probe`` and ``audit`` commands to ``app``."""
    app.command("probe")(probe)
    app.command("audit")(audit)
