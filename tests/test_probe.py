"""Checkpoint probe and audit (ckptplan.instruments, ckptplan probe / audit).

Runs on CPU with a tiny model: one probe run (module fixture, fresh-process restores included) serves
the measurement, resume and audit tests. Tests assert correctness and consistency, never timings.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: the probe tests need it (pip install '.[torch]', a CPU build)")

import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ckptplan import files
from ckptplan.engine.errors import InputError  # noqa: E402
from ckptplan.instruments import audit, probe, trainer  # noqa: E402
from ckptplan.instruments.audit import audit_checkpoint  # noqa: E402
from ckptplan.instruments.probe import run_probe  # noqa: E402
from ckptplan.instruments.trainer import ProbeConfig  # noqa: E402
from ckptplan import cli_probe  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CORE = ("model", "optimizer", "step", "data_position", "rng", "lr_scheduler")
TINY = dict(hidden=32, layers=2, features=16, samples=512, batch=16, baseline_steps=10, saves_per_method=2,
            gap_steps=2, resume_steps=6)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return run_probe(ProbeConfig(**TINY), directory=tmp_path_factory.mktemp("probe"), keep=True)


def _on_disk(path: Path) -> int:
    if path.is_file():
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _latest(result, method):
    return [s for s in result.saves if s.method == method][-1]


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False)
    cli_probe.register(app)
    return app


# ----------------------------------------------------------------------------------- measurement

def test_measured_figures_positive_and_consistent(result):
    assert result.baseline_step_s > 0 and result.baseline_step_p90_s >= result.baseline_step_s
    assert len(result.saves) == 2 * len(trainer.METHODS)
    for s in result.saves:
        assert s.checkpoint_stall_s > 0 and s.size_bytes > 0
        assert s.total_s == pytest.approx(s.checkpoint_stall_s + s.async_write_s, abs=1e-12)
        assert s.checkpoint_stall_s <= s.total_s
        assert 0 <= s.async_slowdown_fraction < 1
        if s.method == "dcp_async":
            assert s.async_write_s > 0  # durable only when the future completed, after the call returned
        else:
            assert s.async_write_s == 0 and s.async_slowdown_fraction == 0 and s.overlap_steps == 0
        assert s.write_mb_per_s == pytest.approx(s.size_bytes / 1e6 / s.total_s)
    steps = [s.step for s in result.saves]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)  # one checkpoint per step, in order
    for method in trainer.METHODS:
        latest = _latest(result, method)
        path = Path(latest.path)
        assert path.exists()
        assert latest.size_bytes == _on_disk(path)  # measured size = files on disk
        if method == "torch_save":
            assert path.is_file() and latest.files == 1
        else:  # DCP, one process: one data file and the .metadata written last
            assert sorted(p.name for p in path.iterdir()) == [".metadata", "__0_0.distcp"] and latest.files == 2
        older = [s for s in result.saves if s.method == method][:-1]
        assert all(not Path(s.path).exists() for s in older)  # superseded checkpoints are removed
    m = result.methods["dcp_async"]
    asyncs = [s for s in result.saves if s.method == "dcp_async"]
    assert m.checkpoint_stall_s == statistics.median(s.checkpoint_stall_s for s in asyncs)
    assert m.async_write_s == statistics.median(s.async_write_s for s in asyncs) and m.saves == 2
    assert result.scenario_overrides("dcp_async") == {
        "checkpoint_stall_min": m.checkpoint_stall_s / 60, "async_write_min": m.async_write_s / 60,
        "async_slowdown_fraction": m.async_slowdown_fraction}
    assert result.scenario_overrides("torch_save")["async_write_min"] == 0
    with pytest.raises(InputError, match="was not probed"):
        result.scenario_overrides("nonsense")


def test_state_bytes_and_parameters_match_the_model(result):
    cfg = result.config
    dims = [cfg.features] + [cfg.hidden] * cfg.layers + [cfg.classes]
    params = sum(a * b + b for a, b in zip(dims, dims[1:]))
    assert result.parameters == params
    tensors = 2 * (len(dims) - 1)
    # fp32 weights + Adam's two fp32 moments + one fp32 step counter per parameter tensor
    assert result.state_bytes == 3 * 4 * params + 4 * tensors


def test_restore_timings_are_consistent(result):
    for check in result.resume_checks:
        t = check.timing
        for part in (t.interpreter_start_s, t.torch_import_s, t.harness_setup_s, t.build_s, t.load_s):
            assert part > 0
        assert t.restore_s == pytest.approx(t.build_s + t.load_s)
        assert t.restore_with_startup_s == pytest.approx(t.interpreter_start_s + t.torch_import_s + t.restore_s)
        assert t.restore_with_startup_s > t.restore_s
        assert t.page_cache_eviction_requested


def test_probe_leaves_callers_torch_settings(tmp_path):
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    run_probe(ProbeConfig(**{**TINY, "saves_per_method": 1, "verify": False, "threads": 2}), directory=tmp_path)
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before
    assert list(tmp_path.iterdir()) == []  # without keep the probe's folder is removed


# -------------------------------------------------------------------------------- resume checks

def test_complete_checkpoints_resume_bit_identically(result):
    complete = [c for c in result.resume_checks if not c.missing]
    assert sorted(c.source for c in complete) == sorted(trainer.METHODS)
    for c in complete:
        assert c.identical and c.losses_identical and c.params_identical, c
        assert c.max_abs_param_diff == 0 and c.max_abs_loss_diff == 0 and c.first_divergent_step is None
        assert c.restored_step == _latest(result, c.source).step
        assert c.steps_continued == result.final_step - c.restored_step > 0
        assert c.final_loss_resumed == c.final_loss_reference
        assert set(c.pieces_loaded) == set(CORE)
        assert result.methods[c.source].resume is c


def test_each_missing_piece_breaks_continuation(result):
    variants = {c.name: c for c in result.resume_checks if c.missing}
    assert set(variants) == set(probe.VARIANTS)
    for name, c in variants.items():
        assert c.missing == (probe.VARIANTS[name],)
        assert probe.VARIANTS[name] not in c.pieces_loaded
        assert not c.identical and not c.params_identical and not c.losses_identical
        assert c.max_abs_param_diff > 0 and c.max_abs_loss_diff > 0
        assert c.steps_continued == TINY["resume_steps"]
    k = variants["no_rng"].restored_step
    # a different dropout mask or batch changes the very first loss after the restore
    assert variants["no_rng"].first_divergent_step == k + 1
    assert variants["no_data_position"].first_divergent_step == k + 1
    # the restored parameters give the same first loss; the fresh Adam's first update differs
    assert variants["no_optimizer"].first_divergent_step == k + 2
    # the first step uses the restored learning rate; the restarted schedule sets the second one
    assert variants["no_lr_scheduler"].first_divergent_step == k + 3


def test_probe_config_rejects_bad_input(tmp_path):
    for kwargs, field in (({"hidden": 0}, "hidden"), ({"layers": 1.5}, "layers"), ({"batch": True}, "batch"),
                          ({"dropout": 0.0}, "dropout"), ({"lr": -1.0}, "lr"), ({"methods": "torch_save,foo"}, "methods"),
                          ({"methods": ()}, "methods"), ({"methods": ("dcp_sync", "dcp_sync")}, "methods"),
                          ({"samples": 16, "batch": 16}, "samples"), ({"verify": "yes"}, "verify")):
        with pytest.raises(InputError) as info:
            ProbeConfig(**kwargs)
        assert info.value.field == field
    assert ProbeConfig(methods="dcp_async, torch_save").methods == ("dcp_async", "torch_save")
    with pytest.raises(InputError, match="existing directory"):
        run_probe(ProbeConfig(**TINY), directory=tmp_path / "nope")


# ------------------------------------------------------------------------------------------ audit

def _checkpoint(result, name):
    return Path(next(c.checkpoint for c in result.resume_checks if c.name == name))


def test_audit_full_torch_save_checkpoint(result):
    path = Path(_latest(result, "torch_save").path)
    report = audit_checkpoint(path)
    assert report.format == "torch.save (zip)" and report.complete
    assert {p.piece: p.status for p in report.pieces} == {**{p: "present" for p in CORE}, "grad_scaler": "missing"}
    assert report.missing == ("grad_scaler",)
    step = next(p for p in report.pieces if p.piece == "step")
    assert step.evidence == f"step = {_latest(result, 'torch_save').step}"
    # the inert reading agrees with torch's own weights-only load
    state = torch.load(path, weights_only=True)
    tensors = list(probe._tensors(state))
    assert report.tensors == len(tensors)
    assert report.tensor_bytes == sum(t.numel() * t.element_size() for t in tensors)
    assert report.top_level_keys == tuple(state)
    assert report.size_bytes == os.path.getsize(path)


@pytest.mark.parametrize("variant", sorted(probe.VARIANTS))
def test_audit_partial_checkpoint(result, variant):
    report = audit_checkpoint(_checkpoint(result, variant))
    gone = probe.VARIANTS[variant]
    for piece in CORE:
        assert report.status(piece) == ("missing" if piece == gone else "present"), piece


def test_audit_dcp_directory(result, tmp_path):
    for method in ("dcp_sync", "dcp_async"):
        path = Path(_latest(result, method).path)
        report = audit_checkpoint(path)
        assert report.format == "DCP directory" and report.complete, report.completeness
        assert all(report.status(p) == "present" for p in CORE)
        assert report.size_bytes == _on_disk(path) and report.files == 2
        from torch.distributed.checkpoint import FileSystemReader
        from torch.distributed.checkpoint.metadata import TensorStorageMetadata
        md = FileSystemReader(str(path)).read_metadata()  # our own, trusted checkpoint
        entries = [v for v in md.state_dict_metadata.values() if isinstance(v, TensorStorageMetadata)]
        assert report.tensors == len(entries)
        assert report.tensor_bytes == sum(math.prod(v.size) * v.properties.dtype.itemsize for v in entries)
    # a data file cut short: still readable metadata, reported incomplete with the file named
    broken = tmp_path / "dcp-truncated"
    shutil.copytree(path, broken)
    data = broken / "__0_0.distcp"
    data.write_bytes(data.read_bytes()[:100])
    report = audit_checkpoint(broken)
    assert not report.complete and "__0_0.distcp" in report.completeness
    # no .metadata: the save never finished
    (broken / ".metadata").unlink()
    with pytest.raises(InputError, match="incomplete DCP checkpoint"):
        audit_checkpoint(broken)


def test_audit_structural_and_unknown_heuristics(tmp_path):
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    scaler_state = {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                    "_growth_tracker": 0}
    f = tmp_path / "odd-names.pt"
    torch.save({"weights": model.state_dict(), "thing": opt.state_dict(), "iteration": 12,
                "sampler_state": {"offset": 3}, "mystery": scaler_state, "python_rng": [1, 2, 3],
                "warmup": {"last_epoch": 12, "base_lrs": [0.1], "_step_count": 13}}, f)
    r = audit_checkpoint(f)
    assert all(r.status(p) == "present" for p in audit.PIECES), r.pieces
    # a bare model state_dict: the model is there, everything else missing
    f = tmp_path / "bare.pt"
    torch.save(model.state_dict(), f)
    r = audit_checkpoint(f)
    assert r.status("model") == "present" and set(r.missing) == set(audit.PIECES) - {"model"}
    # unrecognised top-level keys could hold a piece under another name: unknown, not missing
    f = tmp_path / "opaque.pt"
    torch.save({"model": model.state_dict(), "trainer": {"x": 1}, "epoch": 2}, f)
    r = audit_checkpoint(f)
    assert r.status("optimizer") == "unknown" and "trainer" in next(p.evidence for p in r.pieces if p.piece == "rng")
    assert r.status("data_position") == "unknown"  # an epoch counter alone is no position
    # an optimizer that never stepped holds no state
    f = tmp_path / "fresh-opt.pt"
    torch.save({"model": model.state_dict(), "optimizer": torch.optim.Adam(model.parameters()).state_dict()}, f)
    assert audit_checkpoint(f).status("optimizer") == "unknown"
    # not a mapping at all
    f = tmp_path / "list.pt"
    torch.save([model.state_dict()], f)
    assert {p.status for p in audit_checkpoint(f).pieces} == {"unknown"}
    # legacy (pre-zip) format and numpy RNG states are read too
    import numpy as np
    f = tmp_path / "legacy.pt"
    torch.save({"model": model.state_dict(), "step": 4, "rng_state": np.random.get_state()}, f,
               _use_new_zipfile_serialization=False)
    r = audit_checkpoint(f)
    assert r.format == "torch.save (legacy)" and r.complete
    assert r.status("model") == r.status("step") == r.status("rng") == "present"
    assert any("numpy" in n for n in r.notes)


class _Payload:
    """Unpickling this creates the marker file: proof that a loader executed the file's code."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_payload_is_live_control(tmp_path):
    """Control: a plain pickle.load of the payload does run it, so the audit tests below can fail."""
    marker = tmp_path / "control-marker"
    blob = tmp_path / "payload.pkl"
    blob.write_bytes(pickle.dumps(_Payload(marker)))
    subprocess.run([sys.executable, "-c", f"import pickle; pickle.load(open({str(blob)!r}, 'rb'))"], check=True)
    assert marker.exists()


def test_audit_refuses_hostile_files_without_running_them(tmp_path):
    marker = tmp_path / "MARKER"
    model = torch.nn.Linear(2, 2)
    hostile = {
        "plain pickle": tmp_path / "evil.pkl",
        "torch.save zip": tmp_path / "evil.pt",
        "legacy torch.save": tmp_path / "evil-legacy.pt",
        "DCP .metadata": tmp_path / "evil-dcp",
    }
    hostile["plain pickle"].write_bytes(pickle.dumps({"model": model.state_dict(), "x": _Payload(marker)}))
    torch.save({"model": model.state_dict(), "x": _Payload(marker)}, hostile["torch.save zip"])
    torch.save({"model": model.state_dict(), "x": _Payload(marker)}, hostile["legacy torch.save"],
               _use_new_zipfile_serialization=False)
    hostile["DCP .metadata"].mkdir()
    (hostile["DCP .metadata"] / ".metadata").write_bytes(pickle.dumps(_Payload(marker)))
    for kind, path in hostile.items():
        with pytest.raises(InputError) as info:
            audit_checkpoint(path)
        assert info.value.field == "checkpoint"
        assert "io.open" in str(info.value) and "nothing was executed" in str(info.value), kind
        assert not marker.exists(), kind
    runner = CliRunner()
    res = runner.invoke(_app(), ["audit", str(hostile["torch.save zip"])])
    assert res.exit_code == 2 and "hostile" in res.output and not marker.exists()


def test_audit_malformed_and_truncated_files(tmp_path, result):
    good = Path(_latest(result, "torch_save").path).read_bytes()
    cases = {
        "empty.pt": (b"", "empty"),
        "noise.pt": (bytes(range(7, 250)) * 3, "neither a torch.save zip archive nor a pickle"),
        "cut-zip.pt": (good[: len(good) // 2], "truncated or damaged zip"),
        "cut-pickle.pkl": (pickle.dumps({"model": list(range(100))})[:40], "truncated or not a valid pickle"),
    }
    for name, (blob, message) in cases.items():
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(InputError, match=message):
            audit_checkpoint(tmp_path / name)
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("readme.txt", "not a checkpoint")
    with pytest.raises(InputError, match="not a torch.save checkpoint"):
        audit_checkpoint(tmp_path / "other.zip")
    with pytest.raises(InputError, match="does not exist"):
        audit_checkpoint(tmp_path / "absent.pt")
    (tmp_path / "empty-dir").mkdir()
    with pytest.raises(InputError, match="without a DCP .metadata"):
        audit_checkpoint(tmp_path / "empty-dir")
    # a zip whose tensor record is shorter than the structure declares
    src = zipfile.ZipFile(Path(_latest(result, "torch_save").path))
    with zipfile.ZipFile(tmp_path / "short-record.pt", "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info.filename, data[:4] if info.filename.endswith("/data/0") else data)
    report = audit_checkpoint(tmp_path / "short-record.pt")
    assert not report.complete and "/data/0" in report.completeness


def test_engine_and_audit_work_without_torch(result):
    """`import engine` never imports torch, and the audit needs no torch (torch blocked in a subprocess)."""
    path = _latest(result, "torch_save").path
    code = ("import sys\n"
            "class NoTorch:  # behaves as if torch were not installed\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
            "sys.meta_path.insert(0, NoTorch())\n"
            "import ckptplan.engine, ckptplan.instruments.probe as p\n"
            "import ckptplan.instruments.audit as a, ckptplan.instruments.trainer as t\n"
            "assert 'torch' not in sys.modules\n"
            "assert t.torch_available() is False\n"
            f"r = a.audit_checkpoint({path!r}); print(r.status('optimizer'))\n"
            "try:\n    p.run_probe()\nexcept t.TorchMissingError as e:\n    print('missing:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert out.splitlines()[0] == "present"
    assert "pip install 'ckptplan[torch]'" in out


# -------------------------------------------------------------------------------------------- CLI

def test_cli_probe_emits_scenario_with_measured_values(tmp_path):
    out = tmp_path / "probed.toml"
    runner = CliRunner()
    args = ["probe", "--hidden", "16", "--layers", "1", "--saves", "1", "--no-verify", "--json",
            "--emit-scenario", str(out), "--dir", str(tmp_path)]
    res = runner.invoke(_app(), args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    sc = files.load_scenario(out)
    m = data["methods"]["dcp_async"]
    assert sc.checkpoint_stall_min == m["checkpoint_stall_s"] / 60 > 0
    assert sc.async_write_min == m["async_write_s"] / 60 > 0
    assert sc.async_slowdown_fraction == m["async_slowdown_fraction"]
    assert data["emitted_scenario"]["overrides"] == data["scenario_overrides"]["dcp_async"]
    seed = files.load_scenario("seed")
    assert sc.name == f"{seed.name}-probed" and sc.restart_min == seed.restart_min  # restart_min not touched
    assert "ckptplan probe" in sc.source and "dcp_async" in out.read_text()
    before = out.read_text()
    res = runner.invoke(_app(), args)  # refuses to overwrite, before running anything
    assert res.exit_code == 2 and "--force" in res.output and out.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["probed.toml"]  # no checkpoint folder left behind


def test_cli_probe_sync_method_clears_template_async_fields(tmp_path):
    out = tmp_path / "sync.toml"
    res = CliRunner().invoke(_app(), ["probe", "--hidden", "16", "--layers", "1", "--saves", "1", "--no-verify",
                                      "--methods", "torch_save", "--emit-from", "torch_save", "--template",
                                      "async-save", "--emit-scenario", str(out)])
    assert res.exit_code == 0, res.output
    sc = files.load_scenario(out)
    assert sc.async_write_min == 0 and sc.async_slowdown_fraction == 0 and sc.checkpoint_stall_min > 0
    assert files.load_scenario("async-save").async_write_min > 0


def test_cli_probe_rejects_bad_options(tmp_path, monkeypatch):
    runner = CliRunner()
    res = runner.invoke(_app(), ["probe", "--methods", "torch_save,nfs_magic"])
    assert res.exit_code == 2 and "methods" in res.output and "nfs_magic" in res.output
    res = runner.invoke(_app(), ["probe", "--methods", "torch_save", "--emit-scenario", str(tmp_path / "x.toml")])
    assert res.exit_code == 2 and "--emit-from dcp_async" in res.output
    res = runner.invoke(_app(), ["probe", "--emit-scenario", str(tmp_path / "x.toml"), "--template", "no-such"])
    assert res.exit_code == 2 and "unknown template" in res.output
    monkeypatch.setattr(trainer, "torch_available", lambda: False)
    res = runner.invoke(_app(), ["probe"])
    assert res.exit_code == 2 and "ckptplan[torch]" in res.output


def test_cli_audit_strict_and_json(result):
    runner = CliRunner()
    full = _latest(result, "torch_save").path
    res = runner.invoke(_app(), ["audit", full, "--strict"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(_app(), ["audit", str(_checkpoint(result, "no_optimizer")), "--strict"])
    assert res.exit_code == 1 and "optimizer" in res.output
    res = runner.invoke(_app(), ["audit", _latest(result, "dcp_async").path, "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == 0 and data["format"] == "DCP directory" and data["missing"] == ["grad_scaler"]
