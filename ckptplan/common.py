"""Helpers shared by the ``ckptplan`` commands (kept apart from :mod:`ckptplan.cli` so that
subcommand modules can import them without importing the app that registers them)."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

import engine

console = Console()
err_console = Console(stderr=True)

DEFAULT_TEMPLATE = "seed"


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, emoji=False, soft_wrap=True)
    raise typer.Exit(code)


def scenario_from_options(template: Optional[str], overrides: dict[str, Any]) -> engine.Scenario:
    """A template (default: the seed case) with command-line overrides applied and validated."""
    base = engine.load_scenario(template or DEFAULT_TEMPLATE)
    changes = {k: v for k, v in overrides.items() if v is not None}
    if "node_mtbf_h" in changes and "job_mtbf_h" not in changes:
        changes["job_mtbf_h"] = None  # a node figure given on the command line wins over a preset override
    return base.replace(**changes) if changes else base


