"""Fresh-process restore and resume verification for the probe (PyTorch).

A restore runs in a new ``python -c`` child (:data:`_CHILD_CODE`) that stamps the clock before
anything is imported, imports torch, imports this module by name, rebuilds the toy training
(:class:`.trainer.Trainer`) and restores a checkpoint into it. :class:`RestoreTiming` splits the
time: ``restore_with_startup_s`` from launching the process to the state loaded (interpreter start-up
and ``import torch`` included), ``restore_s`` without them (data, model and optimizer construction +
reading + ``load_state_dict``), and the parts; the probe's own set-up in the child (importing this
module, deterministic mode) is timed apart and left out. The child's clock and the parent's are
``time.monotonic`` (system-wide on Linux).

Resume verification: the child continues the restored run to the reference run's last step and
reports its losses and parameters; :func:`compare_resume` checks them against the uninterrupted run
exactly (:class:`ResumeCheck`).

``import ckptplan.instruments.restore`` does not import torch.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .disk import evict_page_cache
from .trainer import DCP_WARNING, ProbeConfig, Trainer, import_torch, make_deterministic

__all__ = ["RestoreTiming", "ResumeCheck", "compare_resume", "run_restore_child"]


@dataclass(frozen=True)
class RestoreTiming:
    """A restore in a fresh process (seconds).

    ``restore_s`` = ``build_s + load_s``: from the restore code's start (torch imported) to the state
    loaded. ``restore_with_startup_s`` = ``interpreter_start_s + torch_import_s + restore_s``: from
    launching the process to the state loaded. Both leave out ``harness_setup_s`` (loading the probe
    module and switching on deterministic mode for the verification), which a real restore does not pay.
    """

    interpreter_start_s: float    #: process launch to the first statement (fork/exec, interpreter, site)
    torch_import_s: float         #: ``import torch`` (+ ``torch.distributed.checkpoint`` for DCP)
    harness_setup_s: float        #: excluded from the restore figures
    build_s: float                #: building data, model, optimizer and schedule
    load_s: float                 #: reading the checkpoint and applying it (load_state_dict)
    restore_s: float
    restore_with_startup_s: float
    page_cache_eviction_requested: bool


@dataclass(frozen=True)
class ResumeCheck:
    """A checkpoint restored in a fresh process, continued to the reference run's last step and
    compared with the uninterrupted run (losses and final parameters, exactly)."""

    name: str                     #: ``complete (<method>)`` or a :data:`.probe.VARIANTS` name
    source: str                   #: save method or ``torch_save`` for the variants
    checkpoint: str               #: the restored checkpoint (kept only with ``keep``)
    missing: tuple[str, ...]      #: pieces deliberately left out
    restored_step: int
    steps_continued: int
    identical: bool               #: losses and parameters bit-identical to the uninterrupted run
    losses_identical: bool
    params_identical: bool
    max_abs_param_diff: float
    max_abs_loss_diff: float
    first_divergent_step: int | None  #: first step whose loss differs (None: none)
    final_loss_reference: float
    final_loss_resumed: float
    pieces_loaded: tuple[str, ...]
    timing: RestoreTiming

    @property
    def verdict(self) -> str:
        if self.identical:
            return "bit-identical"
        if self.losses_identical:
            return "same losses, parameters differ"
        return f"diverges from step {self.first_divergent_step}"


# The restore child: stamps the clock before anything is imported, imports torch, imports this module
# by name (ckptplan's package, error class and trainer only: no numpy, pandas or CLI), restores.
_CHILD_CODE = (
    "import time; _t0 = time.monotonic()\n"
    "import sys, importlib\n"
    "import torch; _t1 = time.monotonic()\n"
    "_mod = importlib.import_module(sys.argv[1])\n"
    "_mod._restore_child(sys.argv[2], {'python_start': _t0, 'torch_imported': _t1, 'module_ready': time.monotonic()})\n"
)


def _restore_child(spec_file: str, stamps: dict[str, float]) -> None:
    """Entry point of the restore child (see :data:`_CHILD_CODE`)."""
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    if spec["format"] == "dcp":  # library import: counted with ``import torch``, not as restore work
        import torch.distributed.checkpoint  # noqa: F401
        import torch.distributed.checkpoint.state_dict  # noqa: F401
    stamps = {**stamps, "libraries_imported": time.monotonic()}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=DCP_WARNING)
        cfg = ProbeConfig(**{**spec["config"], "methods": tuple(spec["config"]["methods"])})
        make_deterministic(import_torch(), cfg)
        t_setup = time.monotonic()
        trainer = Trainer(cfg)
        t_built = time.monotonic()
        loaded = trainer.restore(spec["checkpoint"], spec["format"])
        t_loaded = time.monotonic()
        restored_step = trainer.step
        trainer.run_until(int(spec["until_step"]))
    trainer.torch.save({
        "stamps": {**stamps, "setup": t_setup, "built": t_built, "loaded": t_loaded},
        "restored_step": restored_step,
        "loaded": loaded,
        "losses": trainer.losses,
        "model": trainer.model.state_dict(),
    }, spec["result"])


def run_restore_child(cfg: ProbeConfig, checkpoint: Path, fmt: str, until_step: int, workdir: Path, tag: str,
               evict: bool) -> tuple[dict[str, Any], RestoreTiming]:
    torch = import_torch()
    result_path = workdir / f"child-{tag}.pt"
    spec_path = workdir / f"child-{tag}.json"
    spec_path.write_text(json.dumps({"config": cfg.to_dict(), "checkpoint": str(checkpoint), "format": fmt,
                                     "until_step": until_step, "result": str(result_path)}), encoding="utf-8")
    evicted = evict_page_cache(checkpoint) if evict else False
    launch = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _CHILD_CODE, __name__, str(spec_path)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        raise RuntimeError(f"restore child for {checkpoint} failed (exit {proc.returncode}):\n{tail}")
    out = torch.load(result_path, map_location="cpu", weights_only=True)
    st = out["stamps"]
    interpreter = st["python_start"] - launch
    torch_import = (st["torch_imported"] - st["python_start"]) + (st["libraries_imported"] - st["module_ready"])
    build, load = st["built"] - st["setup"], st["loaded"] - st["built"]
    timing = RestoreTiming(
        interpreter_start_s=interpreter, torch_import_s=torch_import,
        harness_setup_s=(st["module_ready"] - st["torch_imported"]) + (st["setup"] - st["libraries_imported"]),
        build_s=build, load_s=load,
        restore_s=build + load, restore_with_startup_s=interpreter + torch_import + build + load,
        page_cache_eviction_requested=evicted,
    )
    result_path.unlink(missing_ok=True)
    spec_path.unlink(missing_ok=True)
    return out, timing


def compare_resume(name: str, source: str, checkpoint: Path, missing: tuple[str, ...], out: dict[str, Any],
             timing: RestoreTiming, ref_losses: list[float], ref_params: dict[str, Any]) -> ResumeCheck:
    torch = import_torch()
    start = int(out["restored_step"])
    resumed_tail = [float(v) for v in out["losses"]]  # the child records only the steps after its restore
    reference = ref_losses[start:]
    n = min(len(reference), len(resumed_tail))
    first = next((start + i + 1 for i in range(n) if reference[i] != resumed_tail[i]), None)
    if first is None and len(reference) != len(resumed_tail):
        first = start + n + 1
    loss_diff = max((abs(a - b) for a, b in zip(reference, resumed_tail)), default=0.0)
    if len(reference) != len(resumed_tail):
        loss_diff = math.inf
    params_identical, param_diff = True, 0.0
    model = out["model"]
    for key, ref in ref_params.items():
        got = model.get(key)
        if got is None or got.shape != ref.shape:
            params_identical, param_diff = False, math.inf
            continue
        if not torch.equal(got, ref):
            params_identical = False
            param_diff = max(param_diff, float((got.double() - ref.double()).abs().max()))
    losses_identical = first is None
    return ResumeCheck(
        name=name, source=source, checkpoint=str(checkpoint), missing=missing, restored_step=start,
        steps_continued=len(ref_losses) - start, identical=losses_identical and params_identical,
        losses_identical=losses_identical, params_identical=params_identical,
        max_abs_param_diff=param_diff, max_abs_loss_diff=loss_diff, first_divergent_step=first,
        final_loss_reference=ref_losses[-1], final_loss_resumed=resumed_tail[-1] if resumed_tail else math.nan,
        pieces_loaded=tuple(out["loaded"]), timing=timing,
    )
