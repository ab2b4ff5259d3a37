"""The README runs as written: every command of its examples, top to bottom, from a fresh folder.

Each ``$ `` line of the README's console blocks (a ``\\``-continued line or an open quote takes the lines after it)
runs in order through bash in one scratch folder that holds the repository's ``templates/`` and ``examples/``, as
a user who copies the commands from a fresh clone would run them (``python -m pip install -e .`` done). Each must
exit 0, and every figure the README prints under it (a number with its commas, decimals and percent sign) must be
in what it prints now: a stale figure, a file the README uses but does not ship, or a command that no longer
runs fails here. Lines under a ``# `` comment line are the README's own notes on a file's columns, not output;
times in seconds (``10.4 s``, ``rows/s``) and ``...`` are skipped. Commands run 200 columns wide, or as wide as a
``# at N columns`` comment on the command says. The layout of a table (its width, wrapping,
borders) is not compared: only the figures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: a figure as the README prints it: digits with thousands commas and decimals, a sign, a percent sign
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?")
#: a duration in seconds, which changes from run to run
SECONDS = re.compile(r"\d[\d,]*(?:\.\d+)?\s*(?:s\b|s,|s\)|rows/s)")
#: the console blocks run; ``bash`` blocks are the set-up commands at the top (run by CI itself)
LANGS = ("console", "")


def _blocks(text: str) -> list[list[str]]:
    blocks, cur, lang = [], None, None
    for line in text.splitlines():
        if line.startswith("```"):
            if cur is None:
                cur, lang = [], line[3:].strip()
            else:
                if lang in LANGS:
                    blocks.append(cur)
                cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def _open(command: str) -> bool:
    """Whether bash would read another line: a trailing backslash or an unclosed quote (a ``#`` comment outside
    quotes, after a blank, ends the line)."""
    quote = None
    for i, ch in enumerate(command):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or command[i - 1] in " \t\n"):
            command = command[:i]
            break
    return quote is not None or command.rstrip(" ").endswith("\\")


def commands(text: str) -> list[tuple[str, list[str]]]:
    """(command, the README's output lines under it) for every ``$ `` line of the console blocks, in order."""
    out = []
    for lines in _blocks(text):
        k = 0
        while k < len(lines):
            if not lines[k].startswith("$ "):
                k += 1
                continue
            command = lines[k][2:]
            k += 1
            while _open(command) and k < len(lines):
                command += "\n" + lines[k]
                k += 1
            shown = []
            while k < len(lines) and not lines[k].startswith("$ "):
                shown.append(lines[k])
                k += 1
            out.append((command, shown))
    return out


def figures(lines: list[str]) -> set[str]:
    """The figures of output lines, up to a ``# `` note line; durations left out."""
    found: set[str] = set()
    for line in lines:
        if line.startswith("# "):
            break
        found.update(NUMBER.findall(SECONDS.sub(" ", line)))
    return found


COMMANDS = commands(README.read_text())


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> list[subprocess.CompletedProcess]:
    here = tmp_path_factory.mktemp("readme")
    for folder in ("templates", "examples"):
        shutil.copytree(ROOT / folder, here / folder)
    env = dict(os.environ, COLUMNS="200", PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                                 os.environ.get("PATH", "")]))
    results = []
    for command, _ in COMMANDS:
        width = re.search(r"#\s*at (\d+) columns", command)   # a command the README shows at a terminal's width
        results.append(subprocess.run(["bash", "-c", command], cwd=here, capture_output=True, text=True, timeout=1200,
                                      env=dict(env, COLUMNS=width.group(1)) if width else env))
    return results


def test_the_readme_has_commands_and_ships_what_they_read():
    assert len(COMMANDS) > 40
    used = {m for c, _ in COMMANDS for m in re.findall(r"examples/[\w.-]+", c)}
    for path in used:
        assert (ROOT / path).is_file(), path


@pytest.mark.parametrize("k", range(len(COMMANDS)), ids=[f"{k}:{c.split()[0:3]}" for k, (c, _) in enumerate(COMMANDS)])
def test_each_readme_command_runs_and_prints_the_readmes_figures(ran, k):
    command, shown = COMMANDS[k]
    res = ran[k]
    assert res.returncode == 0, f"{command}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    got = figures((res.stdout + res.stderr).splitlines())
    missing = sorted(figures(shown) - got)
    assert not missing, f"{command}\nthe README shows {missing}, not printed now:\n{res.stdout[-3000:]}"
