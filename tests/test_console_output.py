"""What a planner reads: the console output of plan, compare, deadline and actual, run as a planner runs
them (a separate process), piped and in a terminal (``script`` gives the command a pseudo-terminal), at 80 and
160 columns, for the seed case and the shipped templates with a storage setup.

Every output: no line wider than the terminal, no figure cut to ``…``, no Python word (``None``, ``nan``), no
time in an unnatural unit (``0.04725 min``), no ``x1`` shorthand. Per command: deadline says one P(finish) for
one interval (outlook, interval table and advice agree) and labels the analytic one; compare names every design
in full (the baseline row too) under the README's headings; actual tells jobs with the same file name apart;
plan says the stall in seconds and what a tier keeps in words.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CKPTPLAN = [sys.executable, "-m", "ckptplan"]
STEP_LOG = ROOT / "templates" / "example-step-log.csv"
#: the seed case (default) and every shipped template with a storage and recovery setup
TEMPLATES = ([], ["-t", "llama3-405b-storage"], ["-t", "dense-7b-256-gpus"])
WIDTHS = (80, 160)
MODES = ("piped", "terminal")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _storage_templates() -> list[str]:
    """The shipped templates with a storage and recovery setup (the test's TEMPLATES must cover them all)."""
    from ckptplan import files

    return sorted(name for name in files.list_templates() if files.load_plan(name).setup.given())


def test_the_storage_templates_are_all_covered():
    assert _storage_templates() == sorted(t[1] for t in TEMPLATES if t)


def run(args: list[str], width: int, mode: str) -> str:
    """The command's output as the planner sees it (stdout and stderr; a terminal's escapes removed)."""
    env = {**os.environ, "COLUMNS": str(width), "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    env.pop("NO_COLOR", None)
    if mode == "piped":
        res = subprocess.run(CKPTPLAN + args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout + res.stderr
    if shutil.which("script") is None:
        pytest.skip("no `script` command to give the CLI a terminal")
    command = " ".join(shlex.quote(a) for a in CKPTPLAN + args)
    res = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    text = _ANSI.sub("", res.stdout).replace("\r\n", "\n")
    lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]  # what a progress bar's redraws leave
    return "\n".join(lines)


def check_readable(out: str, width: int) -> None:
    lines = out.splitlines()
    assert lines, "no output"
    too_wide = [line for line in lines if len(line.rstrip()) > width]
    assert not too_wide, too_wide
    assert "…" not in out
    assert not re.search(r"\bNone\b|\bnan\b|\bNaN\b|\binf\b", out), out
    assert not re.search(r"\d\.\d{4,} (min|h|s)\b", out), out          # 0.04725 min: a time in the wrong unit
    assert not re.search(r"\b\d+ x\d+\b", out), out                    # "kept 3 x1"
    assert "Traceback" not in out


def _percent_after(text: str, marker: str) -> str:
    tail = text[text.index(marker) + len(marker):]
    return re.search(r"\d+\.\d%", tail).group()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("template", TEMPLATES, ids=["seed", "llama3-405b-storage", "dense-7b-256-gpus"])
def test_plan(template, width, mode):
    out = run(["plan", *template], width, mode)
    check_readable(out, width)
    assert "analytic (exponential failures" in out  # the deadline figure says which answer it is
    if template == ["-t", "llama3-405b-storage"]:
        assert "stall 2.83 s" in out and "last 3, 1 copy each" in out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("template", TEMPLATES, ids=["seed", "llama3-405b-storage", "dense-7b-256-gpus"])
def test_compare(template, width, mode):
    from ckptplan import files
    from ckptplan.cli_setup import COMPARE_DROP_ORDER, compare_heads
    from ckptplan.engine.designs import compare_designs

    out = run(["compare", *template], width, mode)
    check_readable(out, width)
    plan = files.load_plan(template[1] if template else "seed")
    table = compare_designs(plan.scenario, plan.setup, plan.designs or None)
    flat = " ".join(out.split())
    first_column = " ".join(re.split(r"\s{2,}", line.strip())[0] for line in out.splitlines())
    for r in table.itertuples():  # every design named in full, the baseline too; its total printed whole
        name = f"{r.name} (baseline)" if r.baseline else r.name
        assert name in first_column, name
        assert f"{r.total_cost:,.0f}" in out
    assert "analytic" in out.splitlines()[0] + out.splitlines()[1]  # the title says which P(finish) it is
    kept = [h for h in compare_heads(plan.scenario.currency) if h not in COMPARE_DROP_ORDER or width >= 160]
    for heading in kept:  # headings may wrap between words, never lose one
        assert all(word in out for word in heading.split()), heading
    if width == 80:
        assert "left out at 80 columns:" in flat


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("template", TEMPLATES, ids=["seed", "llama3-405b-storage", "dense-7b-256-gpus"])
def test_deadline_says_one_probability(template, width, mode):
    out = run(["deadline", *template, "--runs", "400"], width, mode)
    check_readable(out, width)
    assert "simulated (400 runs, seed 0)" in " ".join(out.split())
    assert "analytic" in out  # the analytic answer, side by side and labelled
    headline = _percent_after(out, "P(finish by ")
    table = out[out.index("Interval choice"):]
    assert _percent_after(table, "long-run exact optimum") == headline  # the chosen interval's row: same runs
    advice = re.search(r"P\(finish\) rises from (\d+\.\d%)", " ".join(out.split()))
    if advice:
        assert advice.group(1) == headline


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS)
def test_deadline_with_a_chosen_interval(width, mode):
    out = run(["deadline", "--interval-min", "50", "--runs", "400"], width, mode)
    check_readable(out, width)
    headline = _percent_after(out, "P(finish by ")
    assert _percent_after(out[out.index("Interval choice"):], "chosen interval") == headline


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    """Two logs with the same file name in different folders, as jobs are usually laid out."""
    base = tmp_path_factory.mktemp("jobs")
    paths = []
    for job in ("job-a", "job-b"):
        (base / job / "run").mkdir(parents=True)
        paths.append(base / job / "run" / "steps.csv")
        shutil.copy(STEP_LOG, paths[-1])
    return paths


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("template", TEMPLATES, ids=["seed", "llama3-405b-storage", "dense-7b-256-gpus"])
def test_actual(two_jobs, template, width, mode):
    out = run(["actual", *map(str, two_jobs), *template], width, mode)
    check_readable(out, width)
    flat = out.replace("\n", " ")
    assert "job-a/run/steps.csv" in flat.replace(" ", "") and "job-b/run/steps.csv" in flat.replace(" ", "")


def test_actual_output_names_each_job(two_jobs, tmp_path):
    import pandas as pd

    out = tmp_path / "jobs.csv"
    subprocess.run(CKPTPLAN + ["actual", *map(str, two_jobs), str(two_jobs[0]), "-o", str(out)], check=True,
                   capture_output=True, cwd=ROOT, env={**os.environ, "COLUMNS": "160"}, timeout=300)
    back = pd.read_csv(out)
    assert back["job"].tolist() == ["job-a/run/steps.csv", "job-b/run/steps.csv", "job-a/run/steps.csv (2nd)"]
    assert back["log"].tolist() == [str(p.resolve()) for p in (*two_jobs, two_jobs[0])]
    assert back["job"].is_unique


def test_help_texts_keep_their_brackets_and_describe_the_step_log():
    """Console markup must not eat [[designs]]; actual --help describes the format it reads."""
    env = {**os.environ, "COLUMNS": "200"}
    for command in ("batch", "sweep", "compare"):
        out = subprocess.run(CKPTPLAN + [command, "--help"], capture_output=True, text=True, env=env, cwd=ROOT).stdout
        assert "[[designs]]" in out and "[]" not in out, command
    out = subprocess.run(CKPTPLAN + ["actual", "--help"], capture_output=True, text=True, env=env, cwd=ROOT).stdout
    flat = " ".join(out.split())
    for word in ("Step log format", "timestamp", "save_start", "save_unblocked", "restart_phase", "startup_phase",
                 "checkpoint_stall_s", "JSON Lines", "step (a training step finished)"):
        assert word in flat, word
    assert "see `ckptplan fit --help`" not in flat


def test_fit_columns_wraps_names_then_leaves_columns_out_in_order():
    from ckptplan.common import fit_columns, reflow

    head = ("name", "a figure", "money (USD)", "detail")
    rows = [("a rather long design name", "769.5 h / 776.3 h / 782.3 h", "132,230,920", "1,234")]
    keep, widths = fit_columns(head, rows, 200)
    assert keep == [0, 1, 2, 3] and widths[0] == len(rows[0][0])            # room: nothing wraps
    keep, widths = fit_columns(head, rows, 60, drop=("detail",), wrap=("name", "a figure"))
    assert keep == [0, 1, 2, 3] and sum(widths) + 3 * 4 + 1 <= 60           # wrapping is enough
    assert widths[1] >= len("769.5 h /") and widths[2] == len("132,230,920")  # a figure is never split
    keep, widths = fit_columns(head, rows, 40, drop=("detail",), wrap=("name", "a figure"))
    assert keep == [0, 1, 2] and sum(widths) + 3 * 3 + 1 <= 40             # then "detail" is left out
    assert fit_columns(head, rows, 20, drop=("detail",)) is None            # too narrow: one line per row
    assert reflow("769.5 h / 776.3 h / 782.3 h", 17) == "769.5 h /\n776.3 h / 782.3 h"   # breaks between figures
    assert reflow("769.5 h / 776.3 h / 782.3 h", 10) == "769.5 h /\n776.3 h /\n782.3 h"
    assert reflow("769.7 h +- 3.11 min", 8) == "769.7 h +- 3.11 min"                       # never inside one


def test_distinct_names_of_logs():
    from ckptplan.cli_actual import distinct_names

    assert distinct_names(["/x/a/run/steps.csv", "/x/b/run/steps.csv"]) == ["a/run/steps.csv", "b/run/steps.csv"]
    assert distinct_names(["/x/a.csv", "/y/b.csv"]) == ["a.csv", "b.csv"]
    assert distinct_names(["/x/a.csv", "/x/a.csv"]) == ["a.csv", "a.csv (2nd)"]
