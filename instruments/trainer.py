"""The probe's toy training: its configuration and a deterministic CPU training loop (PyTorch).

:class:`ProbeConfig` says what the probe trains and how it measures; :class:`Trainer` builds the
model, optimizer, LR schedule and data stream from it, the same way in the probe's process and in
every fresh restore process (as a restarted job rebuilds from its configuration), so only the
checkpoint can carry state from one to the other.

The toy training is built so that each restorable piece matters: Adam (optimizer moments), dropout
(global RNG), a per-epoch shuffled data stream (position = epoch and batch), a warm-up + cosine LR
schedule (scheduler state). On CPU in deterministic mode (``torch.use_deterministic_algorithms``,
fixed thread count) a complete checkpoint resumes bit-identically.

``import ckptplan.instruments.trainer`` does not import torch: torch is imported when a trainer is
built (:class:`TorchMissingError` without it).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..engine.errors import InputError

__all__ = ["DCP_WARNING", "MAX_PROBE_PARAMETERS", "METHODS", "ProbeConfig", "TorchMissingError", "Trainer",
           "import_torch", "make_deterministic", "torch_available"]

METHODS: tuple[str, ...] = ("torch_save", "dcp_sync", "dcp_async")
#: DCP's single-process notice (no process group), silenced where the probe saves and restores
DCP_WARNING = "torch.distributed is disabled"


class TorchMissingError(ImportError):
    """PyTorch is needed for the probe and is not installed."""


def torch_available() -> bool:
    """Whether ``import torch`` would succeed (without importing it)."""
    import importlib.util
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # e.g. sys.modules["torch"] = None (import blocked)
        return False


def import_torch():
    try:
        import torch
    except ImportError:
        raise TorchMissingError(
            "PyTorch is not installed: the probe needs it (pip install 'ckptplan[torch]'; a CPU build is enough)"
        ) from None
    return torch


# =============================================================================== configuration

#: the largest probe model (parameters): its weights, gradients and Adam state take about 16 bytes a
#: parameter in memory, and every save method keeps checkpoints on disk
MAX_PROBE_PARAMETERS = 50_000_000


@dataclass(frozen=True)
class ProbeConfig:
    """What the probe trains and how it measures. Validated on creation (:class:`InputError`).

    Model: an MLP ``features -> hidden (x layers, GELU + dropout) -> classes``; state on disk is
    about ``3 x 4 bytes`` per parameter (fp32 weights + Adam's two moments).
    """

    hidden: int = 256             #: hidden width of the MLP
    layers: int = 2               #: hidden layers (>= 1)
    features: int = 32            #: input features of the synthetic data
    classes: int = 10             #: output classes
    batch: int = 32               #: samples per step
    samples: int = 2048           #: synthetic data set size (batches per epoch = samples // batch)
    dropout: float = 0.1          #: dropout probability (> 0: it is what makes the RNG state matter)
    lr: float = 1e-3              #: peak learning rate (Adam)
    warmup_steps: int = 5         #: linear warm-up, then cosine decay to 10 % over ``schedule_steps``
    schedule_steps: int = 1000    #: horizon of the cosine schedule
    seed: int = 0                 #: seeds the data, the initialisation, dropout and data order
    threads: int = 1              #: torch intra-op threads (fixed: part of determinism)
    burn_in_steps: int = 3        #: untimed steps before the baseline
    baseline_steps: int = 20      #: timed steps without a save: the baseline step time
    saves_per_method: int = 2     #: timed saves per method (methods interleaved)
    gap_steps: int = 3            #: steps after a save is durable before the next one
    resume_steps: int = 8         #: steps the incomplete variants continue (and the run goes on after the last save)
    methods: tuple[str, ...] = METHODS
    verify: bool = True           #: restore in fresh processes: restore time + resume verification
    variants: bool = True         #: also run the deliberately incomplete checkpoints
    evict_page_cache: bool = True  #: ask the kernel to drop the checkpoint's pages before a restore

    def __post_init__(self) -> None:
        methods = self.methods
        if isinstance(methods, str):
            methods = tuple(m.strip() for m in methods.split(",") if m.strip())
        object.__setattr__(self, "methods", tuple(methods))
        ints = {"hidden": 1, "layers": 1, "features": 1, "classes": 2, "batch": 1, "samples": 1,
                "warmup_steps": 1, "schedule_steps": 1, "seed": 0, "threads": 1, "burn_in_steps": 0,
                "baseline_steps": 2, "saves_per_method": 1, "gap_steps": 1, "resume_steps": 1}
        for name, low in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise InputError(name, v, "must be a whole number")
            if v < low:
                raise InputError(name, v, f"must be >= {low}")
        params = (self.features + 1) * self.hidden + (self.layers - 1) * (self.hidden + 1) * self.hidden \
            + (self.hidden + 1) * self.classes
        if params > MAX_PROBE_PARAMETERS:
            raise InputError("hidden", self.hidden, f"with layers = {self.layers} the probe's model has {params:,} "
                             f"parameters; at most {MAX_PROBE_PARAMETERS:,} (about 16 bytes each in memory with "
                             "Adam, several checkpoint copies on disk): the probe measures storage, not model size")
        if self.samples < 2 * self.batch:
            raise InputError("samples", self.samples, f"must be >= 2 x batch = {2 * self.batch} "
                                                      "(at least two batches per epoch, so a data position means something)")
        for name in ("dropout", "lr"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(name, v, "must be a finite number")
        if not 0 < self.dropout < 1:
            raise InputError("dropout", self.dropout, "must be in (0, 1): dropout is what makes the RNG state matter")
        if self.lr <= 0:
            raise InputError("lr", self.lr, "must be > 0")
        if not self.methods:
            raise InputError("methods", self.methods, f"give at least one of {', '.join(METHODS)}")
        for m in self.methods:
            if m not in METHODS:
                raise InputError("methods", m, f"unknown save method; known: {', '.join(METHODS)}")
        if len(set(self.methods)) != len(self.methods):
            raise InputError("methods", ",".join(self.methods), "each method at most once")
        for name in ("verify", "variants", "evict_page_cache"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(name, getattr(self, name), "must be true or false")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["methods"] = list(self.methods)
        return d


# ============================================================================ the toy training

def _lr_lambda(warmup_steps: int, schedule_steps: int) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, schedule_steps - warmup_steps))
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))
    return factor


def make_deterministic(torch: Any, cfg: ProbeConfig) -> None:
    """Deterministic CPU kernels and a fixed thread count (in 2.13 the first call imports
    ``torch._inductor``, over a second: a cost of the verification, kept out of the restore time)."""
    if not torch.are_deterministic_algorithms_enabled():
        torch.use_deterministic_algorithms(True)
    torch.set_num_threads(cfg.threads)


class Trainer:
    """Model, optimizer, LR schedule and a seeded, shuffled data stream; deterministic on CPU.

    Built the same way in the parent and in every restore child (as a restarted job rebuilds from
    its configuration), so only the checkpoint can carry state from one to the other.
    """

    def __init__(self, cfg: ProbeConfig):
        torch = import_torch()
        self.torch, self.cfg = torch, cfg
        make_deterministic(torch, cfg)
        gen = torch.Generator().manual_seed(cfg.seed)
        self.x = torch.randn(cfg.samples, cfg.features, generator=gen)
        teacher = torch.randn(cfg.features, cfg.classes, generator=gen)
        noise = 0.5 * torch.randn(cfg.samples, cfg.classes, generator=gen)
        self.y = (self.x @ teacher + noise).argmax(dim=1)
        torch.manual_seed(cfg.seed)  # the global generator: initialisation, then dropout
        nn = torch.nn
        blocks: list[Any] = []
        width = cfg.features
        for _ in range(cfg.layers):
            blocks += [nn.Linear(width, cfg.hidden), nn.GELU(), nn.Dropout(cfg.dropout)]
            width = cfg.hidden
        blocks.append(nn.Linear(width, cfg.classes))
        self.model = nn.Sequential(*blocks)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, _lr_lambda(cfg.warmup_steps, cfg.schedule_steps))
        self.step = 0
        self.epoch = 0
        self.batch_in_epoch = 0
        self.batches_per_epoch = cfg.samples // cfg.batch
        self._perm_epoch = -1
        self._perm = None
        self.losses: list[float] = []  # losses[k] = loss of the step that took the run from k to k + 1
        self.step_log: Any = None  # a .steplog.StepLogger: each finished step is logged (after its end time)

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def _order(self):
        if self._perm_epoch != self.epoch:
            g = self.torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + 7919 * (self.epoch + 1))
            self._perm = self.torch.randperm(self.cfg.samples, generator=g)
            self._perm_epoch = self.epoch
        return self._perm

    def train_step(self) -> tuple[float, float]:
        """One step; returns its (start, end) ``perf_counter`` times."""
        t0 = time.perf_counter()
        if self.batch_in_epoch >= self.batches_per_epoch:
            self.epoch += 1
            self.batch_in_epoch = 0
        b, B = self.batch_in_epoch, self.cfg.batch
        idx = self._order()[b * B:(b + 1) * B]
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        loss = self.torch.nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
        loss.backward()
        self.opt.step()
        self.sched.step()
        self.batch_in_epoch += 1
        self.step += 1
        self.losses.append(float(loss.detach()))
        t1 = time.perf_counter()
        if self.step_log is not None:
            self.step_log.step(self.step)
        return t0, t1

    def run_until(self, step: int) -> None:
        while self.step < step:
            self.train_step()

    # ---- checkpoint state
    def _common_state(self) -> dict[str, Any]:
        return {
            "lr_scheduler": self.sched.state_dict(),
            "step": self.step,
            "data_position": {"epoch": self.epoch, "batch": self.batch_in_epoch},
            "rng": {"torch": self.torch.get_rng_state()},
        }

    def state_plain(self) -> dict[str, Any]:
        """The classic ``torch.save`` layout (every value loadable with ``weights_only=True``)."""
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(), **self._common_state()}

    def state_dcp(self) -> dict[str, Any]:
        """DCP layout: model and optimizer state keyed by parameter name (``get_state_dict``)."""
        from torch.distributed.checkpoint.state_dict import get_state_dict
        model_sd, optim_sd = get_state_dict(self.model, self.opt)
        return {"model": model_sd, "optimizer": optim_sd, **self._common_state()}

    def _apply_common(self, state: dict[str, Any]) -> list[str]:
        loaded = []
        if "lr_scheduler" in state:
            self.sched.load_state_dict(state["lr_scheduler"])
            loaded.append("lr_scheduler")
        if "step" in state:
            self.step = int(state["step"])
            loaded.append("step")
        if "data_position" in state:
            self.epoch = int(state["data_position"]["epoch"])
            self.batch_in_epoch = int(state["data_position"]["batch"])
            loaded.append("data_position")
        if "rng" in state:
            self.torch.set_rng_state(state["rng"]["torch"])
            loaded.append("rng")
        return loaded

    def restore(self, path: str, fmt: str) -> list[str]:
        """Load what the checkpoint holds; pieces it lacks keep their fresh-start values."""
        if fmt == "torch":
            state = self.torch.load(path, map_location="cpu", weights_only=True)
            self.model.load_state_dict(state["model"])
            loaded = ["model"]
            if "optimizer" in state:
                self.opt.load_state_dict(state["optimizer"])
                loaded.append("optimizer")
            return loaded + self._apply_common(state)
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict
        template = self.state_dcp()
        dcp.load(template, checkpoint_id=path, no_dist=True)
        set_state_dict(self.model, self.opt, model_state_dict=template["model"], optim_state_dict=template["optimizer"])
        return ["model", "optimizer"] + self._apply_common(template)
