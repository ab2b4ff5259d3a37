"""The tiered-baseline workbook tests' shared scaffolding: the storage template with its in-memory design's tiers
made the baseline's own (host memory every save, the remote store every 10th), the edits a planner makes to it,
and the CLI's JSON for a plan written to TOML."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

from typer.testing import CliRunner

from ckptplan import files
from ckptplan.cli import app
from ckptplan.files.scenario_toml import write_plan

#: the workbook's defined names an edit may touch, as scenario (no prefix) or setup (``setup_``) fields, and the
#: remote tier's ``every`` (``tier2_every``)
SETUP = "setup_"


def tiered_plan():
    """The storage template with its in-memory design's tiers and failure classes made the baseline's."""
    plan = files.load_plan("llama3-405b-storage")
    memory = next(d for d in plan.designs if d.tiers)
    setup = plan.setup.replace(tiers=memory.tiers, failure_classes=memory.failure_classes)
    return replace(plan, setup=setup, designs=tuple(d for d in plan.designs if d is not memory))


def edited(plan, edits: Mapping[str, Any]):
    """``plan`` with the workbook edits ``edits`` (defined name -> value) made in the engine's terms."""
    setup, fields = plan.setup, {}
    for name, value in edits.items():
        if name == "tier2_every":
            setup = setup.replace(tiers=(setup.tiers[0], dict(setup.tiers[1], every=value)))
        elif name.startswith(SETUP):
            setup = setup.replace(**{name[len(SETUP):]: value})
        else:
            fields[name] = value
    return replace(plan, scenario=plan.scenario.replace(**fields), setup=setup)


def named(wb, name: str):
    """The cell a workbook's defined name points at."""
    sheet, cell = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][cell.replace("$", "")]


def cli_json(command: str, plan, path) -> dict:
    """``ckptplan <command> -t <plan written to path> --json``, parsed."""
    write_plan(path, plan)
    res = CliRunner().invoke(app, [command, "-t", str(path), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)
