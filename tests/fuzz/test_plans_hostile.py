"""Scenario files with tiers, failure classes, designs, spot fields, failure phases and ranges through every
command that plans one (area "plans").

Each file is the seed scenario plus one hostile part: tiers (too many, nested too deep, a period too long, bad
every/stall/survives, odd types), failure classes (thousands, shares off, names not text, a class no tier
survives), designs (odd types, numbers beyond float range, a ten-digit domain index, a change a tiered plan
cannot see, unknown keys) and both at once. Every run must pass :func:`corpus.check_run` and
:func:`corpus.check_output_dir` (a clean answer or one clean refusal; no traceback, warning, abort or stray file).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_cli_hostile import run_case

from ckptplan import files

BASE = files.template_path("seed.toml").read_text(encoding="utf-8") + "\n"
BIG = "1" + "0" * 400


def _tier(name: str, every, survives='["node"]', stall="1.0", restore="2.0", extra: str = "") -> str:
    return (f'[[tiers]]\nname = "{name}"\nevery = {every}\ncheckpoint_stall_min = {stall}\nrestore_min = {restore}\n'
            f"survives = {survives}\n{extra}")


CLASSES = "[failure_classes]\nnode = 1.0\n"
TWO = _tier("memory", 1, '["process"]') + _tier("remote", 8, '["process", "node"]')
TWO_CLASSES = "[failure_classes]\nprocess = 0.3\nnode = 0.7\n"


def _design(body: str, name: str = "d") -> str:
    return f'[[designs]]\nname = "{name}"\n{body}\n'


PARTS: dict[str, str] = {
    "two tiers": TWO + TWO_CLASSES,
    "17 tiers": "".join(_tier(f"t{i}", 1) for i in range(17)) + CLASSES,
    "60 nested tiers": "".join(_tier(f"t{i}", 2 ** min(i, 59)) for i in range(60)) + CLASSES,
    "1000 tiers": "".join(_tier(f"t{i}", 1) for i in range(1000)) + CLASSES,
    "a period of 2^40 saves": _tier("a", 1) + _tier("b", 2**40) + CLASSES,
    "every not nested": _tier("a", 1) + _tier("b", 3) + _tier("c", 4) + CLASSES,
    "first every 2": _tier("a", 2) + CLASSES,
    "every 1e400": _tier("a", 1) + _tier("b", BIG) + CLASSES,
    "every text": _tier("a", 1) + _tier("b", '"ten"') + CLASSES,
    "every nan": _tier("a", 1) + _tier("b", "nan") + CLASSES,
    "stall -1": _tier("a", 1, stall="-1.0") + CLASSES,
    "stall inf": _tier("a", 1, stall="inf") + CLASSES,
    "restore array": _tier("a", 1, restore="[1, 2]") + CLASSES,
    "survives unknown": _tier("a", 1, '["cosmic"]') + CLASSES,
    "survives empty": _tier("a", 1, "[]") + CLASSES,
    "survives number": _tier("a", 1, "[1]") + CLASSES,
    "survives table": _tier("a", 1, "{ a = 1 }") + CLASSES,
    "duplicate tier names": _tier("a", 1) + _tier("a", 2) + CLASSES,
    "unknown tier key": _tier("a", 1, extra="colour = 'blue'\n") + CLASSES,
    "tier name empty": _tier("", 1) + CLASSES,
    "restore fails always": _tier("a", 1, extra="restore_failure_probability = 1.0\n") + CLASSES,
    "restore fails nan": _tier("a", 1, extra="restore_failure_probability = nan\n") + CLASSES,
    "restore fails text": _tier("a", 1, extra="restore_failure_probability = 'often'\n") + CLASSES,
    "restore fails tiny, copies huge": _tier("a", 1, extra=f"restore_failure_probability = 0.999999\ncopies = {BIG}\n")
                                       + CLASSES,
    "restore fails near 1 on every tier": (_tier("memory", 1, '["process"]', extra="restore_failure_probability = 0.99\n")
                                           + _tier("remote", 8, '["process", "node"]',
                                                   extra="restore_failure_probability = 0.99\n") + TWO_CLASSES),
    "restore fails on a single level": "restore_failure_probability = 0.2\n",
    "no classes": _tier("a", 1),
    "8000 classes": _tier("a", 1, "[" + ", ".join(f'"c{i}"' for i in range(8000)) + "]") + "[failure_classes]\n"
                    + "".join(f"c{i} = {1 / 8000!r}\n" for i in range(8000)),
    "shares off": _tier("a", 1, '["x", "y"]') + "[failure_classes]\nx = 0.5\ny = 0.6\n",
    "share zero": _tier("a", 1, '["x", "y"]') + "[failure_classes]\nx = 0.0\ny = 1.0\n",
    "share text": _tier("a", 1, '["x"]') + "[failure_classes]\nx = 'all'\n",
    "share huge int": _tier("a", 1, '["x"]') + f"[failure_classes]\nx = {BIG}\n",
    "class no tier survives": _tier("a", 1, '["x"]') + "[failure_classes]\nx = 0.5\ny = 0.5\n",
    "classes not a table": _tier("a", 1) + "failure_classes = 3\n",
    "tiers not a list": "tiers = 'fast'\n" + CLASSES,
    "design text list field": _design('set = { failure_rate_source = ["meta-rsc1"] }'),
    "design huge int": _design(f"set = {{ nodes = {BIG} }}"),
    "design huge factor": _design(f"times = {{ nodes = {BIG} }}"),
    "design ten-digit domain": _design("set = { domain9999999999_mtbf_h = 50.0, domain9999999999_nodes_per_domain = 2 }"),
    "design domain 0": _design("set = { domain0_mtbf_h = 50.0, domain0_nodes_per_domain = 2 }"),
    "design half a domain": _design("set = { domain1_mtbf_h = 50.0 }"),
    "design scales an absent value": _design("times = { job_mtbf_h = 2.0 }"),
    "design factor 0": _design("times = { restart_min = 0.0 }"),
    "design factor nan": _design("times = { restart_min = nan }"),
    "design bool": _design("set = { nodes = true }"),
    "design date": _design("set = { nodes = 1979-05-27 }"),
    "design unknown key": _design("colour = 'blue'"),
    "design set not a table": _design("set = 3"),
    "design tiers not a list": _design("tiers = 3"),
    "design name twice": _design("set = { nodes = 64 }") + _design("set = { nodes = 256 }"),
    "design named as the baseline": _design("set = { nodes = 64 }", name="seed-128-nodes"),
    "design name empty": _design("set = { nodes = 64 }", name=""),
    "design stall on a tiered plan": TWO + TWO_CLASSES + _design("times = { checkpoint_stall_min = 0.5 }"),
    "design adds 17 tiers": _design("set = { nodes = 64 }\n" + "".join(
        f'[[designs.tiers]]\nname = "t{i}"\nevery = 1\ncheckpoint_stall_min = 1.0\nrestore_min = 1.0\n'
        'survives = ["node"]\n' for i in range(17)) + "[designs.failure_classes]\nnode = 1.0"),
    "design classes without tiers": _design("failure_classes = { a = 1.0 }"),
    "designs not a list": "designs = 3\n",
    # spot fields (BASE ends inside [scenario]: these lines are scenario fields)
    "spot": "preemptions_per_h = 0.05\npreemption_notice_min = 2.0\ncapacity_wait_min = 10.0\n"
            "spot_price_per_gpu_hour = 1.0\n",
    "spot rate 1e400": f"preemptions_per_h = {BIG}.0\n",
    "spot rate 10**400": f"preemptions_per_h = {BIG}\n",
    "spot rate text": "preemptions_per_h = 'often'\n",
    "spot rate nan": "preemptions_per_h = nan\n",
    "spot notice -1": "preemptions_per_h = 0.1\npreemption_notice_min = -1.0\n",
    "spot wait inf": "preemptions_per_h = 0.1\ncapacity_wait_min = inf\n",
    "spot with async writes": "preemptions_per_h = 0.1\nasync_write_min = 3.0\n",
    "spot every minute": "preemptions_per_h = 60.0\n",
    # a node's preemption rate and published bands (engine.spot_rates)
    "spot node rate": "preemptions_per_node_h = 0.0004\npreemption_notice_min = 2.0\n",
    "spot node rate 1e308": "preemptions_per_node_h = 1e308\n",
    "spot node rate -1": "preemptions_per_node_h = -1.0\n",
    "spot both rates": "preemptions_per_h = 0.05\npreemptions_per_node_h = 0.0004\n",
    "spot band": "preemption_rate_source = 'aws-advisor-over-20pct'\n",
    "spot band unknown": "preemption_rate_source = 'aws-advisor-50pct'\n",
    "spot band list": "preemption_rate_source = ['aws-advisor-5-10pct']\n",
    "spot band and job rate": "preemption_rate_source = 'aws-advisor-5-10pct'\npreemptions_per_h = 0.1\n",
    "spot band and other node rate": "preemption_rate_source = 'aws-advisor-5-10pct'\npreemptions_per_node_h = 0.1\n",
    # failure phases
    "phases": "[[failure_phases]]\nstart_h = 0\nrate_factor = 3.0\n[[failure_phases]]\nstart_h = 48\nrate_factor = 1.0\n",
    "phase start nan": "[[failure_phases]]\nstart_h = nan\nrate_factor = 2.0\n",
    "phase rate 0": "[[failure_phases]]\nstart_h = 10\nrate_factor = 0.0\n",
    "phase rate text": "[[failure_phases]]\nstart_h = 10\nrate_factor = 'high'\n",
    "phases descending": "[[failure_phases]]\nstart_h = 50\nrate_factor = 2.0\n[[failure_phases]]\nstart_h = 10\n"
                         "rate_factor = 1.0\n",
    "phase start 10**400": f"[[failure_phases]]\nstart_h = {BIG}\nrate_factor = 2.0\n",
    "1000 phases": "".join(f"[[failure_phases]]\nstart_h = {i}\nrate_factor = {1 + i % 3}.0\n" for i in range(1000)),
    "phases not a list": "failure_phases = 3\n",
    "phases with spot": "preemptions_per_h = 0.1\n[[failure_phases]]\nstart_h = 10\nrate_factor = 2.0\n",
    # ranges ([uncertainty])
    "range": "[uncertainty]\nnode_mtbf_h = [1000, 5000]\nprice_per_gpu_hour = {dist = 'uniform', low = 2.0, high = 3.5}\n",
    "range without the base": "[uncertainty]\nnode_mtbf_h = [5000, 9000]\n",
    "range low above high": "[uncertainty]\nnode_mtbf_h = [5000, 1000]\n",
    "range unknown dist": "[uncertainty]\nnode_mtbf_h = {dist = 'cauchy', low = 1000, high = 5000}\n",
    "range lognormal low 0": "[uncertainty]\nnode_mtbf_h = {dist = 'lognormal', low = 0, high = 5000}\n",
    "range text": "[uncertainty]\nnode_mtbf_h = 'wide'\n",
    "range 10**400": f"[uncertainty]\nnode_mtbf_h = [1000, {BIG}]\n",
    "range nan": "[uncertainty]\nnode_mtbf_h = [nan, 5000]\n",
    "range unknown field": "[uncertainty]\ncolour = [1, 2]\n",
    "range of three": "[uncertainty]\nnode_mtbf_h = [1000, 2560, 5000]\n",
    "range nested table": "[uncertainty]\nnode_mtbf_h = {low = {a = 1}, high = 5000}\n",
}

#: what each file goes through; every file goes through plan and one more, in turn
READERS = [("plan", ["--template", "{f}", "--json"]), ("compare", ["--template", "{f}"]),
           ("batch", ["in.csv", "-t", "{f}", "-o", "out.csv"]),
           ("workbook", ["--template", "{f}", "-o", "out.xlsx", "--no-deadline"]),
           ("sweep", ["-t", "{f}", "-o", "out.csv", "--nodes", "64,128"])]
CASES = [(name, READERS[0]) for name in PARTS] + [(name, READERS[1 + k % (len(READERS) - 1)])
                                                   for k, name in enumerate(PARTS)]


@pytest.mark.parametrize("name, reader", CASES, ids=[f"{r[0]} {n}" for n, r in CASES])
def test_hostile_plan_files(tmp_path: Path, name: str, reader):
    command, args = reader
    path = tmp_path / "plan.toml"
    path.write_text(BASE + PARTS[name], encoding="utf-8")
    (tmp_path / "in.csv").write_text("name,checkpoint_stall_min\na,2\n", encoding="utf-8")
    out = run_case(command, [str(path) if a == "{f}" else a for a in args], tmp_path, area="plans")
    if name == "1000 phases":   # refused before any work (engine.phases.MAX_PHASES), naming the count and the rule
        assert out.code == 2 and "1000 phases" in out.stderr and "at most 16 failure phases" in out.stderr, out
    if name == "design stall on a tiered plan" and command == "compare" and out.code == 0:
        assert "not used by a tiered plan" in out.stdout, out
    if name in ("60 nested tiers", "1000 tiers", "17 tiers", "design huge int", "design ten-digit domain",
                "1000 phases", "spot rate 10**400", "phase start 10**400", "range 10**400"):
        assert out.code in (0, 2), out


#: the parts ``batch --capacity`` reads (spot fields, failure phases with spot, a tier design)
CAPACITY_PARTS = [n for n in PARTS if n.startswith("spot")] + ["phases with spot", "two tiers"]


@pytest.mark.parametrize("name", CAPACITY_PARTS)
def test_hostile_spot_templates_through_batch_capacity(tmp_path: Path, name: str):
    """A template's spot fields (hostile or not) on every row of ``batch --capacity``: the comparison or a refusal
    naming the field; failure phases with spot are compared on their schedules; tiers refuse the option."""
    path = tmp_path / "plan.toml"
    path.write_text(BASE + PARTS[name], encoding="utf-8")
    rows = ("name,useful_training_h,deadline_h,phase1_start_h,phase1_rate_factor\na,24,30,10,2\n"  # a batch's phases
            if name == "phases with spot" else "name,useful_training_h,deadline_h\na,24,30\n")   # are its columns
    (tmp_path / "in.csv").write_text(rows, encoding="utf-8")
    out = run_case("batch", ["in.csv", "-t", str(path), "-o", "out.csv", "--capacity"], tmp_path, area="plans")
    if name == "two tiers":
        assert out.code == 2 and "--capacity" in out.stderr, out
    if name == "phases with spot":                  # compared on the phases' schedules, as compare does
        assert out.code == 0, out
        got = pd.read_csv(tmp_path / "out.csv").iloc[0]
        assert got["status"] == "ok" and 0 <= got["fallback_threshold_min"] <= 30 * 60, got
    if name == "spot":
        assert out.code == 0, out
