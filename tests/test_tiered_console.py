"""`ckptplan workbook` on a tiered scenario prints the plan its Plan sheet shows: the tiered plan, as `ckptplan plan`
prints it for the same scenario (not the setup's single-level plan)."""

from __future__ import annotations

from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.files.scenario_toml import write_plan

from tiered_baseline import tiered_plan


def test_workbook_prints_the_tiered_plan_as_plan_does(tmp_path):
    path = tmp_path / "tiered.toml"
    write_plan(path, tiered_plan())
    runner = CliRunner()
    planned = runner.invoke(app, ["plan", "-t", str(path)], terminal_width=200)
    assert planned.exit_code == 0, planned.output
    built = runner.invoke(app, ["workbook", "-t", str(path), "-o", str(tmp_path / "t.xlsx"), "--no-deadline"],
                          terminal_width=200)
    assert built.exit_code == 0, built.output
    assert "multi-level checkpoints" in planned.stdout
    lines = built.stdout.splitlines()
    shown = lines[:next(i for i, line in enumerate(lines) if line.startswith(("wrote ", "no deadline_h")))]
    assert shown == planned.stdout.splitlines()
