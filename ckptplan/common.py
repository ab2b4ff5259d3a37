"""Helpers shared by the ``ckptplan`` commands (kept apart from :mod:`ckptplan.cli` so that
subcommand modules can import them without importing the app that registers them)."""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape

from .engine.fields import FIELDS, Field
from .engine.spoken import duration  # noqa: F401  (the one time formatter; re-exported for the CLI modules)

if TYPE_CHECKING:  # the models load only when a command runs
    from .engine.scenario import Scenario

__all__ = ["DEFAULT_TEMPLATE", "ON_NODE_LOSS_HELP", "PIPED_WIDTH", "console", "duration", "emit_scenario_file", "err_console", "fail",
           "echo_json", "field_options", "fit_columns", "flag", "json_ready", "kept", "literal", "literal_help",
           "print_rows",
           "plan_from_options", "scenario_from_options"]

#: width of the output when it is piped or redirected (a terminal's own width is used on a terminal):
#: wide enough that no table truncates a figure; set COLUMNS to choose another
PIPED_WIDTH = 160


def _console(stderr: bool = False) -> Console:
    probe = Console(stderr=stderr)
    wide = not probe.is_terminal and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=PIPED_WIDTH if wide else None, emoji=False)


#: characters a terminal acts on rather than shows: C0 controls but tab and newline, DEL, C1
#: controls (ESC starts every ANSI sequence), and the bidirectional overrides that reorder text
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def literal(text: Any) -> str:
    """Text from a file, a scenario or a log, made safe to print: shown as written, never acted on.

    Console markup (``[link=...]``, ``[/]``) is escaped, and control characters (ANSI escape
    sequences, carriage returns, bidirectional overrides) are shown as ``\\xNN`` / ``\\uNNNN`` codes.
    """
    def code(m: re.Match) -> str:
        n = ord(m.group())
        return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"

    return escape(_CONTROL.sub(code, str(text)))


def _skip_coercing_absent_options() -> None:
    """Let typer leave an option that was not given as None without building its converter.

    typer builds a pydantic ``TypeAdapter`` for every option of a command when it parses the command
    line, given or not, and imports pydantic for the first (about 0.15 s with the 40-odd field
    options of ``plan``). For an absent single-valued option (None) its coercion returns None
    unchanged: this skips it and runs typer's remaining steps (the required check, the callback),
    the same answer without the cost. Given options are coerced by typer as before. If typer's
    internals differ from what this expects, nothing is changed.
    """
    from typer import core

    option = getattr(core, "TyperOption", None)
    original = getattr(option, "process_value", None)
    if original is None or getattr(original, "_ckptplan_skips_absent", False):
        return

    def process_value(self: Any, ctx: Any, value: Any) -> Any:
        if value is not None or getattr(self, "multiple", True) or getattr(self, "nargs", 0) != 1:
            return original(self, ctx, value)
        # typer's own steps for an absent single value: coercion gives None; then required, then callback
        if self.required and self.value_is_missing(value):
            from typer import _click

            raise _click.exceptions.MissingParameter(ctx=ctx, param=self)
        if self.callback is not None:
            value = self.callback(ctx, self, value)
        return value

    process_value._ckptplan_skips_absent = True  # type: ignore[attr-defined]
    option.process_value = process_value


_skip_coercing_absent_options()
console = _console()
err_console = _console(stderr=True)

DEFAULT_TEMPLATE = "seed"
#: the --on-node-loss option's help (plan, compare): the registry's label of the text field
ON_NODE_LOSS_HELP = "restart (stop, roll back, restart: today's) or continue (train on fewer replicas while the " \
    "node comes back; set nodes_per_replica and min_replicas)"


def kept(retention: int, copies: int) -> str:
    """What a tier keeps, in words: ``last 3, 1 copy each``, ``latest only, 2 copies``."""
    each = f"{copies} {'copy' if copies == 1 else 'copies'}"
    return f"latest only, {each}" if retention == 1 else f"last {retention}, {each} each"


def _plain_lines(text: str) -> list[str]:
    from rich.text import Text

    return Text.from_markup(text).plain.split("\n")


#: where a figure may break onto the next line: after " / ", "; " or ", ", before " (": never inside "3.11 min"
_FIGURE_BREAK = re.compile(r"(?<=[/;,]) | (?=\()")


def _chunks(line: str, j: int) -> list[str]:
    """The unbreakable pieces of a cell line: words in the first column (names), figures in the others."""
    return line.split() if j == 0 else [c for c in _FIGURE_BREAK.split(line) if c]


def reflow(text: str, width: int) -> str:
    """A figure cell's lines re-broken at :data:`_FIGURE_BREAK` to fit ``width`` (a piece wider stays whole)."""
    out = []
    for line in text.split("\n"):
        cur = ""
        for piece in _chunks(line, 1):
            if cur and len(cur) + 1 + len(piece) > width:
                out.append(cur)
                cur = piece
            else:
                cur = f"{cur} {piece}" if cur else piece
        out.append(cur)
    return "\n".join(out)


def fit_columns(head: tuple[str, ...], rows: list[tuple[str, ...]], width: int, drop: tuple[str, ...] = (),
                wrap: tuple[str, ...] = (), edge: int = 3, extra: int = 1, first: int = 0
                ) -> Optional[tuple[list[int], list[int]]]:
    """Which columns of a table to show in ``width`` characters, and how wide, without cutting a figure.

    Each column is first as wide as its widest line (headings wrap between words); if that is too wide the
    ``wrap`` columns (names) wrap between words; then the ``drop`` columns are left out, in that order (the
    least needed first), until the table fits. Returns (indices kept, their widths), or None when even the
    narrowest table does not fit. ``edge``: characters a column costs besides its text (padding, rule);
    ``extra``: the table's own (its outer rule); ``first``: the narrowest the first column (row names) may
    wrap to before a column is left out.
    """
    words = [max([len(w) for w in h.split()] or [1]) for h in head]
    cells = [[line for row in rows for line in _plain_lines(row[j])] for j in range(len(head))]
    full = [max([words[j]] + [len(line) for line in cells[j]]) for j in range(len(head))]
    narrow = [max([words[j]] + [len(w) for line in cells[j] for w in _chunks(line, j)]) if head[j] in wrap else full[j]
              for j in range(len(head))]
    narrow[0] = max(narrow[0], min(full[0], first))
    keep = list(range(len(head)))

    def total(ws: list[int]) -> int:
        return sum(ws[j] for j in keep) + edge * len(keep) + extra

    def widened(ws: list[int]) -> tuple[list[int], list[int]]:
        """The spare room: to headings a few characters short of one line, then one character at a time to the
        wrapped column that needs the most lines, then to the headings on the most lines."""
        spare = width - (sum(ws) + edge * len(keep) + extra)
        for k in sorted(range(len(keep)), key=lambda k: len(head[keep[k]]) - ws[k]):
            need = len(head[keep[k]]) - ws[k]
            if 0 < need <= min(spare, 8):  # a heading on one line, where a few characters buy it
                ws[k] += need
                spare -= need

        def lines(k: int) -> int:  # the most lines a cell of the column wraps to, at its width
            j = keep[k]
            return max([reflow(line, ws[k]).count("\n") + 1 if j else -(-len(line) // ws[k]) for line in cells[j]]
                       or [1])

        growing = [k for k, j in enumerate(keep) if head[j] in wrap]
        while spare > 0:  # one character at a time to the wrapped column that needs the most lines
            open_ = [k for k in growing if ws[k] < full[keep[k]]]
            if not open_:
                break
            k = max(open_, key=lambda k: (lines(k), -k))
            ws[k] += 1
            spare -= 1
        while spare > 0:  # what is left: one character at a time to the heading on the most lines
            open_ = [k for k in range(len(keep)) if ws[k] < len(head[keep[k]])]
            if not open_:
                break
            k = max(open_, key=lambda k: (-(-len(head[keep[k]]) // ws[k]), -k))
            ws[k] += 1
            spare -= 1
        return keep, ws

    for name in (None,) + tuple(drop):
        if name is not None and name in head:
            keep.remove(head.index(name))
        if total(full) <= width:
            return widened([full[j] for j in keep])
        if total(narrow) <= width:  # names wrap
            return widened([narrow[j] for j in keep])
    return None


def print_rows(title: str, head: tuple[str, ...], rows: list[tuple[str, ...]], left: tuple[str, ...] = (),
               drop: tuple[str, ...] = (), wrap: tuple[str, ...] = (), box: Any = None, first: int = 0) -> list[str]:
    """A table of (already escaped) text cells that fits the terminal and never cuts a figure to ``…``.

    Each column is as wide as its widest line, headings wrapping between words; on a narrower terminal the
    ``wrap`` columns wrap and then the ``drop`` columns are left out, least needed first, and a line under the
    table names them; on a terminal too narrow even for that, one line per row (``name: heading value; ...``).
    The first column and those named in ``left`` are left-aligned, the others (figures) right-aligned.
    Returns the headings left out.
    """
    from rich.table import Table

    # rich's default box: a rule and a space either side of every column, and the outer rules; a compact ``box``
    # is drawn without outer rules (show_edge=False)
    fit = fit_columns(head, rows, console.width, drop, (head[0],) + tuple(wrap), 3, 1 if box is None else -1, first)
    if fit is None:
        console.print(title, highlight=False)
        for row in rows:
            name = " ".join(line.strip() for line in row[0].split("\n"))
            console.print(f"{name}: " + "; ".join(f"{h} {' '.join(cell.split())}" for h, cell in zip(head[1:], row[1:])),
                          highlight=False)
        return []
    keep, widths = fit
    t = Table(title=title, title_justify="left", **({} if box is None else {"box": box, "show_edge": False}))
    for j, width in zip(keep, widths):
        t.add_column(head[j], justify="left" if j == 0 or head[j] in left else "right", width=width,
                     overflow="fold")
    for row in rows:  # figures re-broken between figures, never inside one (rich would break "3.11 min")
        t.add_row(*(reflow(row[j], w) if j and head[j] in wrap and _plain_lines(row[j]) == row[j].split("\n")
                    else row[j] for j, w in zip(keep, widths)))
    console.print(t)
    dropped = [h for j, h in enumerate(head) if j not in keep]
    if dropped:
        console.print(f"left out at {console.width} columns: {', '.join(dropped)} (a wider terminal shows them; "
                      "--json gives every figure)", highlight=False)
    return dropped


def literal_help(app: typer.Typer) -> None:
    """Every help text of ``app``'s commands shown as written: typer renders help through rich's console
    markup, which would eat ``[[designs]]`` ("Apply this [] entry"); the command docstrings and each option's
    and argument's help are escaped (:func:`rich.markup.escape`) once, when the commands are registered."""
    for info in app.registered_commands:
        callback = info.callback
        if callback is None or getattr(callback, "_ckptplan_literal_help", False):
            continue
        if callback.__doc__:
            callback.__doc__ = escape(callback.__doc__)
        if info.help:
            info.help = escape(info.help)
        for param in inspect.signature(callback).parameters.values():
            help_text = getattr(param.default, "help", None)
            if isinstance(help_text, str):
                param.default.help = escape(help_text)
        callback._ckptplan_literal_help = True  # type: ignore[attr-defined]


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {literal(message)}", highlight=False, emoji=False, soft_wrap=True)
    raise typer.Exit(code)


def field_options(fields: tuple[Field, ...] = FIELDS, axis: bool = False) -> Callable[[Callable], Callable]:
    """Give a command one option per registry field (:data:`ckptplan.engine.fields.FIELDS`).

    The option is the field's name (``--checkpoint-stall-min``, with the paper's symbol as a short
    alias where the registry gives one), its help the field's label, unit and rule. The command
    receives the given values as one dict ``overrides`` (field name -> value, None when not given).
    ``axis``: the options take text (a sweep axis such as ``0.5,1,2``) instead of a number.
    """
    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        kept = [p for p in signature.parameters.values() if p.name != "overrides"]
        added = []
        for f in fields:
            kind = str if axis else (int if f.integer else float)
            what = "axis of values" if axis else f.check.noun
            added.append(inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                default=typer.Option(None, f.option, *([f.short] if f.short else []), show_default=False,
                                     help=f"{f.label} ({f.unit}): {what}")))

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            overrides = {f.name: kwargs.pop(f.name) for f in fields}
            return command(*args, overrides=overrides, **kwargs)

        run.__signature__ = signature.replace(parameters=kept + added)  # what typer reads
        run.__annotations__ = {p.name: p.annotation for p in kept + added}
        del run.__wrapped__
        return run

    return decorate


def flag(*names: str, help: str) -> Any:  # noqa: A002 - typer's own keyword
    """An on/off option (``--json``): shown in --help without a value type, since it takes none."""
    return typer.Option(False, *names, help=help, metavar="")


def scenario_from_options(template: Optional[str], overrides: dict[str, Any]) -> "Scenario":
    """A template (default: the seed case) with command-line overrides applied and validated.

    The stall, write and restart a template's storage and recovery setup derives are filled in
    (:meth:`ckptplan.files.plans.PlanFile.planned_scenario`).
    """
    from .engine.setup import plan_setup

    plan = plan_from_options(template, overrides)
    return plan_setup(plan.scenario, plan.setup).scenario if plan.setup.given() else plan.scenario


def plan_from_options(template: Optional[str], overrides: dict[str, Any]) -> Any:
    """A template's :class:`ckptplan.files.plans.PlanFile` with command-line overrides applied.

    Scenario fields go to the scenario (a stall, write or restart given here is stated: it overrides
    the setup's derived one); setup fields (:data:`ckptplan.engine.fields.SETUP_FIELDS`) go to the setup.
    """
    from dataclasses import replace

    from .engine.fields import SETUP_FIELD_BY_NAME
    from .engine.setup import DERIVED
    from .files.scenarios import load_plan

    plan = load_plan(template or DEFAULT_TEMPLATE)
    changes = {k: v for k, v in overrides.items() if v is not None and k not in SETUP_FIELD_BY_NAME}
    setup_changes = {k: v for k, v in overrides.items() if v is not None and k in SETUP_FIELD_BY_NAME}
    if ("node_mtbf_h" in changes or "failure_rate_source" in changes) and "job_mtbf_h" not in changes:
        changes["job_mtbf_h"] = None  # a node figure given on the command line wins over a preset override
    if "failure_rate_source" in changes and "node_mtbf_h" not in changes:
        changes["node_mtbf_h"] = None  # the published rate gives the node MTBF
    elif "node_mtbf_h" in changes and "failure_rate_source" not in changes:
        changes["failure_rate_source"] = ""  # ... and a node MTBF given here replaces a preset's source
    _preemption_changes(changes)
    scenario = plan.scenario.replace(**changes) if changes else plan.scenario
    stated = set(plan.setup.stated) | {k for k in changes if k in DERIVED}
    setup = plan.setup.replace(**setup_changes, stated=frozenset(stated))
    return replace(plan, scenario=scenario, setup=setup)




#: ``--preemption-rate-source``'s help (the commands that take it: plan, compare)
PREEMPTION_RATE_SOURCE_HELP = ("A published spot interruption band giving preemptions_per_node_h; the job's rate is "
                               "nodes x it (see `ckptplan preemption-rates`)")


def _preemption_changes(changes: dict[str, Any]) -> None:
    """The preemption rate given on the command line wins over the template's, as node_mtbf_h does: each rate or
    band given here drops the template's others (:func:`ckptplan.engine.spot_rates.replaced_preemption_rates`; both
    rates given here: refused by the scenario)."""
    from .engine.spot_rates import replaced_preemption_rates

    changes.update(replaced_preemption_rates(changes))


def emit_scenario_file(path: Path, write: Callable[[], Any], what: str) -> Any:
    """``--emit-scenario``: run ``write`` (which writes the scenario file through
    :mod:`ckptplan.files.scenario_toml`: atomically, checked by loading it back, never over an existing
    file without ``--force``) and return what it returns.

    Every failure exits with a readable message: the file exists, the scenario cannot be built
    (``what`` says whose: "fitted", "probed"), or the file cannot be written.
    """
    try:
        return write()
    except FileExistsError as exc:  # exists (no --force), or a pipe, device or folder (never written)
        fail(str(exc))
    except ValueError as exc:
        fail(f"cannot build the {what} scenario: {exc}")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")


def echo_json(value: Any, emitted: dict[str, Any] | None = None) -> None:
    """Print ``value`` as strict, indented JSON (:func:`json_ready`); ``emitted``: the scenario file a command
    wrote, added as ``emitted_scenario``."""
    import json

    import typer

    if emitted is not None:
        value = {**value, "emitted_scenario": emitted}
    typer.echo(json.dumps(json_ready(value), indent=2, allow_nan=False))


def json_ready(value: Any) -> Any:
    """``value`` as strict JSON takes it: NaN and infinities as null (JSON has neither), numpy scalars
    as Python numbers, tuples as lists, anything else unknown as its text."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalar
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    return str(value)
