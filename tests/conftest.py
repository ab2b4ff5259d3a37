"""Fixtures shared by the test modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from the files git knows (as from a fresh clone)."""
    out = tmp_path_factory.mktemp("wheel")
    src = out / "src"
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"], capture_output=True,
                            text=True, check=True).stdout.split()
    for name in listed:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((REPO / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(out), str(src)], check=True, capture_output=True)
    (built,) = out.glob("ckptplan-*.whl")
    return built
