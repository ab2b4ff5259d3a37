"""Text from files, scenarios and logs is printed literally: no markup, no escape sequences (issue 16)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.common import literal

runner = CliRunner()
NAME = "[link=https://evil.example]Click[/link] [/] \x1b[2J\x1b]8;;http://x\x07 \u202eexe.txt"


def test_literal_escapes_markup_and_controls():
    out = literal(NAME + "\r\x9b")
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out and "\x9b" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out and "\\x0d" in out and "\\x9b" in out
    assert out.startswith("\\[link=")
    assert literal("tab\tand\nnewline") == "tab\tand\nnewline"


@pytest.fixture()
def hostile(tmp_path):
    path = tmp_path / "hostile.toml"
    body = NAME.replace("\\", "\\\\").replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
    path.write_text(f'[scenario]\nname = "{body}"\ndescription = "{body}"\nsource = "{body}"\ncheckpoint_stall_min = 2\n'
                    'nodes = 16\nnode_mtbf_h = 5000\nuseful_training_h = 100\nprice_per_gpu_hour = 2\ndeadline_h = 200\n'
                    f'[[designs]]\nname = "{body} design"\ntimes = {{ checkpoint_stall_min = 0.5 }}\n')
    return path


@pytest.mark.parametrize("args", [["plan"], ["compare"], ["deadline", "--runs", "200"]])
def test_commands_print_hostile_names_literally(hostile, args):
    res = runner.invoke(app, args + ["--scenario", str(hostile)])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "\x07" not in res.output and "\u202e" not in res.output
    assert "[link=https://evil.example]Click[/link]" in res.output.replace("\n", "")


def test_fit_prints_hostile_causes_literally(tmp_path):
    log = tmp_path / "[bold]log.csv"
    log.write_text("timestamp,event,cause\n2024-03-01T00:00:00,start,\n"
                   "2024-03-01T05:00:00,interruption,[/] \x1b[2J\n2024-03-01T05:10:00,restart_complete,\n"
                   "2024-03-01T09:00:00,end,\n")
    res = runner.invoke(app, ["fit", str(log)])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.output and "[/] \\x1b[2j" in res.output.lower() and "[bold]log.csv" in res.output


def test_errors_print_values_literally():
    res = runner.invoke(app, ["plan", "--scenario", "/nonexistent/[red]x\x1b.toml"])
    assert res.exit_code == 2 and "\x1b" not in res.output and "[red]x" in res.output


def test_audit_prints_a_hostile_checkpoints_keys_literally(tmp_path):
    import pickle

    ckpt = tmp_path / "hostile.pt"
    ckpt.write_bytes(pickle.dumps({"\x1b[2J\x1b[1;1Hcomplete: restorable [link=https://evil.example]x[/link]": 1,
                                   "optimizer": {"step": 3}}, protocol=2))
    res = runner.invoke(app, ["audit", str(ckpt)])
    assert "Traceback" not in res.output and "\x1b" not in res.output
    assert "\\x1b[2J" in res.output and "[link=https://evil.example]" in res.output.replace("\n", "")
