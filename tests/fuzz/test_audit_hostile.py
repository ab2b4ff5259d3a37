"""``audit`` on hostile torch structures (area "audit"): torch.save archives whose tensors declare shapes that
are opaque objects, infinite, NaN, text, negative, nested or beyond their storage, storages whose element count
or type is text or infinite, next to real checkpoints (views, expanded tensors, parameters' data). Built with
torch's own rebuild functions, so the files are what a crafted checkpoint would hold.

Each run (plain, ``--json``, ``--strict``) must pass :func:`corpus.check_run`; a tensor whose shape says
nothing usable is no tensor and counts no bytes (never a size made up from it); nothing from the file is
ever executed.
"""

from __future__ import annotations

import collections
import io
import json
import pickle
import zipfile
from pathlib import Path

import pytest
from test_cli_hostile import run_case

torch = pytest.importorskip("torch", reason="PyTorch is not installed: the hostile archives are built with it")
from torch._utils import _rebuild_tensor_v2  # noqa: E402


class _Storage:
    def __init__(self, key, numel, stype):
        self.key, self.numel, self.stype = key, numel, stype


class _Tensor:
    """Pickles as torch.save pickles a tensor: ``_rebuild_tensor_v2(storage, offset, shape, stride, ...)``."""

    def __init__(self, shape, stride=(1,), offset=0, numel=4, stype=None):
        self.args = (_Storage("0", numel, stype or torch.FloatStorage), offset, shape, stride)

    def __reduce__(self):
        return _rebuild_tensor_v2, (*self.args, False, collections.OrderedDict())


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ("storage", obj.stype, obj.key, "cpu", obj.numel) if isinstance(obj, _Storage) else None


def _archive(path: Path, obj, data_len: int = 16) -> None:
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", buf.getvalue())
        z.writestr("archive/version", "3\n")
        z.writestr("archive/data/0", b"\0" * data_len)


TENSORS = {
    "infinite dimension": _Tensor((float("inf"),)), "nan dimension": _Tensor((float("nan"), 2)),
    "text dimension": _Tensor(("abc", 2)), "opaque shape": _Tensor(torch.float32),
    "opaque dimension": _Tensor((torch.float32, 2)), "shape beyond the storage": _Tensor((10**30, 10**30)),
    "negative dimension": _Tensor((-5, 2)), "bool dimension": _Tensor((True, 2)), "nested shape": _Tensor(((2, 2), 2)),
    "shape a dict": _Tensor({"a": 1}), "shape an int": _Tensor(7), "65 dimensions": _Tensor((1,) * 65),
    "storage numel text": _Tensor((4,), numel="4"), "storage numel inf": _Tensor((4,), numel=float("inf")),
    "storage numel 10**400": _Tensor((4,), numel=10**400), "storage type text": _Tensor((4,), stype="FloatStorage"),
    "offset text": _Tensor((4,), offset="0"), "stride huge": _Tensor((2,), stride=(10**20,)),
    "fine": _Tensor((2, 2), stride=(2, 1)),
}
#: shapes that say nothing usable: the audit must not count bytes for them
UNREADABLE = {"infinite dimension", "nan dimension", "text dimension", "opaque shape", "opaque dimension",
              "shape beyond the storage", "negative dimension", "bool dimension", "nested shape", "shape a dict",
              "shape an int", "65 dimensions", "stride huge"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("audit")
    for name, tensor in TENSORS.items():
        _archive(out / f"{name}.pt", {"model": {"w": tensor}, "optimizer": {"state": {}}, "step": 3})
    _archive(out / "every kind at once.pt", {"model": dict(TENSORS), "optimizer": {}})
    real = torch.zeros(10)
    torch.save({"model": {"w": torch.zeros(3, 4), "view": real[2:5], "expanded": torch.zeros(1).expand(5),
                          "p": torch.nn.Parameter(torch.zeros(2)).data}, "optimizer": {}, "step": 1}, out / "real.pt")
    return out


NAMES = sorted(TENSORS) + ["every kind at once", "real"]


@pytest.mark.parametrize("name", NAMES)
def test_hostile_torch_structures(folder: Path, name: str):
    path = folder / f"{name}.pt"
    outs = [run_case("audit", [str(path), *extra], folder, area="audit") for extra in ([], ["--json"], ["--strict"])]
    js = outs[1]
    assert js.code == 0, js  # a structure the audit can read: a report, never a refusal or a crash
    report = json.loads(js.stdout)
    if name in UNREADABLE:
        assert report["tensor_bytes"] == report["tensors"] == 0, f"{name}: a size made up from the shape: {report}"
    if name == "real":
        assert report["tensor_bytes"] == 4 * (12 + 3 + 5 + 2) and report["complete"], report
