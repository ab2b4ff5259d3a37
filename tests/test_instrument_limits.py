"""The probe and the audit bound their work before doing it (issue 16)."""

from __future__ import annotations

import os
import resource

import pytest
from typer.testing import CliRunner

from ckptplan.cli import app
from ckptplan.engine.errors import InputError
from ckptplan.instruments import audit
from ckptplan.instruments.trainer import MAX_PROBE_PARAMETERS, ProbeConfig

runner = CliRunner()


def test_probe_refuses_a_model_too_big_for_the_machine():
    with pytest.raises(InputError, match=r"hidden=1000000000.*at most 50,000,000"):
        ProbeConfig(hidden=10**9)
    assert ProbeConfig(hidden=1024, layers=4)  # the README's largest example stays allowed
    res = runner.invoke(app, ["probe", "--hidden", str(10**9)])
    assert res.exit_code == 2 and "Traceback" not in res.output and f"{MAX_PROBE_PARAMETERS:,}" in res.output


def test_audit_checks_a_dcp_metadata_size_before_reading_it(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "__0_0.distcp").write_bytes(b"x")
    with open(ckpt / ".metadata", "wb") as fh:  # sparse: 4 GiB on paper, nothing on disk
        fh.truncate(4 * 2**30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputError, match="too large to audit"):
        audit.audit_checkpoint(ckpt)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 * 1024  # it did not read 4 GiB
    os.remove(ckpt / ".metadata")
