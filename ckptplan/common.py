"""Helpers shared by the ``ckptplan`` commands (kept apart from :mod:`ckptplan.cli` so that
subcommand modules can import them without importing the app that registers them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from . import engine
from . import files
from .files.atomic import atomic_write_text

console = Console()
err_console = Console(stderr=True)

DEFAULT_TEMPLATE = "seed"


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, emoji=False, soft_wrap=True)
    raise typer.Exit(code)


def scenario_from_options(template: Optional[str], overrides: dict[str, Any]) -> engine.Scenario:
    """A template (default: the seed case) with command-line overrides applied and validated."""
    base = files.load_scenario(template or DEFAULT_TEMPLATE)
    changes = {k: v for k, v in overrides.items() if v is not None}
    if "node_mtbf_h" in changes and "job_mtbf_h" not in changes:
        changes["job_mtbf_h"] = None  # a node figure given on the command line wins over a preset override
    return base.replace(**changes) if changes else base




def emit_scenario_file(path: Path, build: Callable[[], tuple[engine.Scenario, str]], force: bool,
                       what: str) -> engine.Scenario:
    """``--emit-scenario``: build (scenario, TOML text), write it atomically after checking that it
    loads (:func:`files.load_scenario`), never over an existing file without ``force``.

    Every failure exits with a readable message: the file exists, the scenario cannot be built
    (``what`` says whose: "fitted", "probed"), or the file cannot be written.
    """
    try:
        scenario, text = build()
        atomic_write_text(path, text, force=force, check=files.load_scenario)
    except FileExistsError:
        fail(f"{path} exists; use --force to overwrite it")
    except ValueError as exc:
        fail(f"cannot build the {what} scenario: {exc}")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    return scenario
