"""Checkpoint audit: which restorable-state pieces a checkpoint holds, read without executing it.

:func:`audit_checkpoint` reads a ``torch.save`` file (zip or legacy format, or a plain pickle) or a
``torch.distributed.checkpoint`` directory and reports, for each piece of :data:`PIECES`, whether it
is ``present``, ``missing`` or ``unknown`` (:class:`AuditReport`), and whether every tensor record
the structure refers to exists with its full size.

It never executes code from the file: it reads the pickle stream with an unpickler that resolves no
global at all (every global becomes an inert placeholder, see :mod:`.inert_pickle`) and refuses any file
that references a global outside a small allowlist of tensor, container and numpy-array rebuilders,
because ``torch.load(weights_only=False)`` would call it. This also avoids
``torch.distributed.checkpoint.FileSystemReader.read_metadata``, which in PyTorch 2.13 reads
``.metadata`` with a plain ``pickle.load`` (it would run a hostile payload). The audit needs no torch.
"""

from __future__ import annotations

import dataclasses
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.errors import InputError
from .disk import disk_usage
from .inert_pickle import (DTYPE_BYTES, MAX_PICKLE_BYTES, Leaf, Opaque, inert_load, read_legacy, read_zip,
                           shape_numel, walk)

__all__ = ["PIECES", "RESUME_PIECES", "WHY", "AuditReport", "PieceStatus", "audit_checkpoint"]

#: restorable-state pieces, in the order of the workbook's Readiness sheet
PIECES: tuple[str, ...] = ("model", "optimizer", "step", "data_position", "rng", "lr_scheduler", "grad_scaler")
#: the pieces a bit-identical resume needs (all but the fp16 loss scaler, which bf16/fp32 runs lack)
RESUME_PIECES: tuple[str, ...] = tuple(p for p in PIECES if p != "grad_scaler")
WHY: dict[str, str] = {
    "model": "Without the weights there is nothing to resume.",
    "optimizer": "A fresh optimizer (no moments, no step counts) changes the trajectory after restore.",
    "step": "Schedules, logging and data position key off the global step.",
    "data_position": "Without it the job re-reads or skips data: silently different training.",
    "rng": "Dropout, sampling and data order diverge from the uninterrupted run.",
    "lr_scheduler": "A restarted schedule re-warms or jumps the learning rate.",
    "grad_scaler": "fp16 loss scaling: a reset scaler can overflow or underflow the first steps "
                   "(not needed for fp32 or bf16 training).",
}


# =========================================================================== key-name heuristics
#
# Key-name heuristics (case-insensitive, matched against one component of a key path: nested dict
# keys of a torch.save file, dot-separated parts of a DCP key). A piece is "present" when a
# matching key holds something (for model/optimizer: tensors), "missing" when the checkpoint is a
# mapping whose every top-level key is accounted for and none matches, "unknown" when the file's
# root is not a mapping, or unrecognised top-level keys might hold the piece under another name.
#
#   model          model, models, model_state(_dict), state_dict, module, net, network, weights,
#                  params, parameters, ema, ema_model; or: parameter-like tensors (*.weight, *.bias,
#                  running_mean/var) outside the other pieces (a bare model state_dict)
#   optimizer      optim, optimizer(s), opt, optim_state(_dict), optimizer_state(s)(_dict), opt_state;
#                  or a mapping with 'state' and 'param_groups' (torch.optim). "unknown" when it
#                  holds no per-parameter tensors (never stepped, or a stateless optimizer)
#   step           step(s), global_step, iteration(s), iter(s), num_steps, train_step, num_updates,
#                  tokens_seen, num_tokens, total_tokens: outside optimizer/scheduler/scaler state
#   data_position  [train_](data|dataloader(s)|data_loader|loader|sampler|data_sampler|data_iter|
#                  data_iterator)[_state|_states|_position|_pos], dataset_state, batch_idx, batch_index,
#                  consumed_samples, consumed_train_samples, consumed_tokens, samples_seen,
#                  data_offset; an 'epoch' counter alone is "unknown" (no position within the epoch)
#   rng            any key containing 'rng' or 'random'; or a 5056-element uint8 tensor (the torch
#                  CPU generator state)
#   lr_scheduler   any key containing 'sched'; or a mapping with 'last_epoch' and 'base_lrs'
#   grad_scaler    any key containing 'scaler', or amp, loss_scale(r); or a mapping with 'scale' and
#                  'growth_factor' (torch.amp.GradScaler)

_NAME_RULES: dict[str, re.Pattern[str]] = {
    "model": re.compile(r"(model|models|model_state|model_state_dict|state_dict|module|net|network|weights|"
                        r"params|parameters|ema|ema_model)"),
    "optimizer": re.compile(r"(optim|optimizer|optimizers|opt|optim_state|optim_state_dict|optimizer_state|"
                            r"optimizer_states|optimizer_state_dict|opt_state)"),
    "step": re.compile(r"(step|steps|global_step|globalstep|iteration|iterations|iter|iters|num_steps|train_step|"
                       r"num_updates|tokens_seen|num_tokens|total_tokens)"),
    "data_position": re.compile(r"((train_)?(data|dataloader|dataloaders|data_loader|loader|sampler|data_sampler|"
                                r"data_iter|data_iterator)(_state|_states|_position|_pos)?|dataset_state|"
                                r"batch_idx|batch_index|consumed_samples|consumed_train_samples|consumed_tokens|"
                                r"samples_seen|data_offset)"),
}
_SEARCH_RULES: dict[str, re.Pattern[str]] = {
    "rng": re.compile(r"rng|random"),
    "lr_scheduler": re.compile(r"sched"),
    "grad_scaler": re.compile(r"scaler|amp_scal|^amp$|^loss_scaler?$"),
}
_PARAM_LEAVES = {"weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias"}
_BENIGN_TOP = re.compile(r"(config|cfg|args|hparams|hyper_parameters|hparams_name|hparams_type|meta|metadata|"
                         r"version|.*_version|format|format_version|epoch|epochs|best_.*|metrics|loss|val_loss|"
                         r"timestamp|time|date|name|arch|model_name|model_args|seed|world_size|git_.*|notes)")
_TORCH_CPU_RNG_BYTES = 5056


# ------------------------------------------------------------------------------------- reports

@dataclass(frozen=True)
class PieceStatus:
    """One restorable-state piece: ``present``, ``missing`` or ``unknown``, with the keys found."""

    piece: str
    status: str
    evidence: str
    why: str


@dataclass(frozen=True)
class AuditReport:
    """What a checkpoint holds, read without executing anything from it."""

    path: str
    format: str                   #: torch.save (zip) | torch.save (legacy) | pickle | DCP directory
    size_bytes: int               #: bytes on disk
    files: int
    tensors: int
    tensor_bytes: int             #: bytes of tensor data the checkpoint declares
    top_level_keys: tuple[str, ...]
    complete: bool                #: every tensor record the structure refers to exists with its full size
    completeness: str
    pieces: tuple[PieceStatus, ...]
    globals_referenced: tuple[str, ...]
    notes: tuple[str, ...]

    def status(self, piece: str) -> str:
        return next(p.status for p in self.pieces if p.piece == piece)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(p.piece for p in self.pieces if p.status == "missing")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["missing"] = list(self.missing)
        return d


def audit_checkpoint(path: str | Path) -> AuditReport:
    """Report which restorable-state pieces a checkpoint holds (see the heuristics above).

    ``path``: a ``torch.save`` file (zip or legacy format, or a plain pickle) or a
    ``torch.distributed.checkpoint`` directory. Nothing from the file is executed or imported;
    tensor data is not read (only its declared size is checked against the records on disk).
    Raises :class:`InputError` (field ``checkpoint``) for a missing, malformed, truncated or
    hostile file, naming what is wrong.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("checkpoint", str(path), "does not exist")
    if path.is_dir():
        return _audit_dcp(path)
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):  # a pipe would wait for a writer, a device never ends: neither is a checkpoint
        kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "something else")
        raise InputError("checkpoint", str(path), f"is {kind}, not a regular file: not a checkpoint")
    size = path.stat().st_size
    if size == 0:
        raise InputError("checkpoint", str(path), "is empty (0 bytes): a save that never wrote, or a truncated file")
    notes: list[str] = []
    if zipfile.is_zipfile(path):
        fmt, (obj, up, records_ok, completeness) = "torch.save (zip)", read_zip(path)
    else:
        data = path.read_bytes() if size <= MAX_PICKLE_BYTES else None
        if data is None:
            raise InputError("checkpoint", str(path), f"is a {size / 2**20:.0f} MiB non-zip file: too large for the "
                                                      "legacy-format audit (re-save with torch.save's default zip format)")
        if data[:4] == b"PK\x03\x04":
            raise InputError("checkpoint", str(path), "is a truncated or damaged zip archive (no central directory): "
                                                      "a torch.save that did not finish")
        if data[:1] != b"\x80":
            raise InputError("checkpoint", str(path), "is neither a torch.save zip archive nor a pickle "
                                                      "(no pickle protocol header): not a checkpoint this audit reads")
        fmt, obj, up, records_ok, completeness = read_legacy(path, data)
    leaves = walk(obj, path)
    tensors = {leaf.storage or str(i): leaf for i, (p, leaf) in enumerate(leaves) if leaf.kind == "tensor"}
    pieces, top = _classify(obj, leaves)
    if any(g.startswith("numpy.") for g in up.globals_seen):
        notes.append("Holds numpy arrays (e.g. a numpy RNG state): torch.load(weights_only=True) refuses the file "
                     "unless numpy's array rebuilders are allowlisted (torch.serialization.add_safe_globals).")
    return AuditReport(
        path=str(path), format=fmt, size_bytes=size, files=1,
        tensors=sum(1 for _, leaf in leaves if leaf.kind == "tensor"),
        tensor_bytes=sum(leaf.nbytes for leaf in tensors.values()),
        top_level_keys=top, complete=records_ok, completeness=completeness, pieces=pieces,
        globals_referenced=tuple(sorted(up.globals_seen)), notes=tuple(notes))



def _audit_dcp(path: Path) -> AuditReport:
    meta = path / ".metadata"
    data_files = sorted(p.name for p in path.iterdir() if p.is_file() and p.suffix == ".distcp")
    if not meta.is_file():
        if data_files:
            raise InputError("checkpoint", str(path), f"is an incomplete DCP checkpoint: {len(data_files)} .distcp data "
                                                      "file(s) but no .metadata (the save never finished; not restorable)")
        raise InputError("checkpoint", str(path), "is a directory without a DCP .metadata file: not a checkpoint this "
                                                  "audit reads")
    size = meta.stat().st_size  # checked before reading: a hostile .metadata may be huge
    if size == 0:
        raise InputError("checkpoint", str(path), ".metadata is empty (0 bytes): the save did not finish")
    if size > MAX_PICKLE_BYTES:
        raise InputError("checkpoint", str(path), f".metadata is {size:,} bytes: too large to audit "
                                                  f"(at most {MAX_PICKLE_BYTES:,})")
    with open(meta, "rb") as fh:
        raw = fh.read(MAX_PICKLE_BYTES + 1)
    if len(raw) > MAX_PICKLE_BYTES:
        raise InputError("checkpoint", str(path), ".metadata grew while it was read: too large to audit")
    md, up, _ = inert_load(raw, ".metadata", path)
    if not (isinstance(md, Opaque) and md.global_name == "torch.distributed.checkpoint.metadata.Metadata"):
        raise InputError("checkpoint", str(path), ".metadata does not hold a DCP Metadata record")
    fields_ = md.state_dict()
    sdm = fields_.get("state_dict_metadata")
    if not isinstance(sdm, dict):
        raise InputError("checkpoint", str(path), ".metadata has no state_dict_metadata mapping")
    leaves: list[tuple[tuple[str, ...], Leaf]] = []
    for fqn, entry in sdm.items():
        keypath = tuple(str(fqn).split("."))
        g = getattr(entry, "global_name", "")
        if g.endswith("TensorStorageMetadata"):
            st = entry.state_dict()
            numel = shape_numel(st.get("size"))
            dtype = _dcp_dtype(st.get("properties"))
            leaves.append((keypath, Leaf("tensor", numel * DTYPE_BYTES.get(dtype, 1), numel, dtype) if numel is not None
                           else Leaf("object", value=f"tensor whose size is unreadable ({str(st.get('size'))[:60]})")))
        elif g.endswith("BytesStorageMetadata"):
            leaves.append((keypath, Leaf("object", value="bytes item (pickled, not read)")))
        else:
            leaves.append((keypath, Leaf("object", value=g or type(entry).__name__)))
    # completeness: every storage record must fit in its file
    storage = fields_.get("storage_data")
    problems: list[str] = []
    need: dict[str, int] = {}
    if isinstance(storage, dict):
        for info in storage.values():
            st = info.state_dict() if isinstance(info, Opaque) else {}
            rel, off, length = st.get("relative_path"), st.get("offset"), st.get("length")
            if isinstance(rel, str) and isinstance(off, int) and isinstance(length, int):
                need[rel] = max(need.get(rel, 0), off + length)
            else:
                problems.append("a storage record has no file/offset/length")
    else:
        problems.append(".metadata lists no storage records")
    for rel, n in sorted(need.items()):
        f = path / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            problems.append(f"record points outside the checkpoint ({rel})")
        elif not f.is_file():
            problems.append(f"{rel} missing")
        elif f.stat().st_size < n:
            problems.append(f"{rel} holds {f.stat().st_size} bytes, the records need {n}")
    size_on_disk, files = disk_usage(path)
    pieces, top = _classify(None, leaves)
    return AuditReport(
        path=str(path), format="DCP directory", size_bytes=size_on_disk, files=files,
        tensors=sum(1 for _, leaf in leaves if leaf.kind == "tensor"),
        tensor_bytes=sum(leaf.nbytes for _, leaf in leaves if leaf.kind == "tensor"),
        top_level_keys=top, complete=not problems,
        completeness=("; ".join(problems[:5]) if problems else
                      f"all {len(need)} data file(s) present and long enough for the {len(storage)} records"),
        pieces=pieces, globals_referenced=tuple(sorted(up.globals_seen)),
        notes=("DCP bytes items (non-tensor values) are pickles that dcp.load unpickles with "
               "weights_only=False: load DCP checkpoints only from trusted sources.",))


def _dcp_dtype(props: Any) -> str:
    if not isinstance(props, Opaque):
        return "unknown"
    st = props.state
    candidates = list(st) if isinstance(st, tuple) else list(props.state_dict().values())
    for c in candidates:
        name = getattr(c, "global_name", "")
        if name.startswith("torch.") and name[6:] in DTYPE_BYTES:
            return name[6:]
    return "unknown"


def _classify(root: Any, leaves: list[tuple[tuple[str, ...], Leaf]]) -> tuple[tuple[PieceStatus, ...], tuple[str, ...]]:
    """Apply the key-name heuristics to the leaves; returns the pieces and the top-level keys."""
    rootless = [(p, leaf) for p, leaf in leaves if p]
    if not rootless:  # the root itself is a leaf: a bare tensor, a number, an unknown object
        kind = leaves[0][1].kind if leaves else "nothing"
        what = f"the file holds a single {kind}, not a mapping of named state"
        return tuple(PieceStatus(pc, "unknown", what, WHY[pc]) for pc in PIECES), ()
    top = tuple(dict.fromkeys(p[0] for p, _ in rootless))
    if isinstance(root, (list, tuple)):
        what = "the file's root is a list, not a mapping of named state"
        return tuple(PieceStatus(pc, "unknown", what, WHY[pc]) for pc in PIECES), top
    tree = _KeyTree(rootless)
    optim = tree.outermost(tree.named("optimizer") | tree.structural(("state", "param_groups")))
    sched = tree.outermost(tree.named("lr_scheduler") | tree.structural(("last_epoch",), ("base_lrs", "_step_count")))
    scaler = tree.outermost(tree.named("grad_scaler") | tree.structural(("scale",), ("growth_factor", "_growth_tracker")))
    claimed = optim | sched | scaler
    result: dict[str, PieceStatus] = {}
    model_named = _model_piece(tree, claimed, result)
    _optimizer_piece(tree, optim, result)
    claimed_all = claimed | model_named
    steps = {r for r in tree.named("step") if not tree.under(r, claimed_all)}
    _named_piece(tree, "step", steps, result, tree.scalar_evidence)
    data = {r for r in tree.named("data_position") if not tree.under(r, claimed_all)}
    if not _named_piece(tree, "data_position", data, result, tree.scalar_evidence):
        epochs = {pre for pre in tree.prefixes if len(pre) <= 2 and pre[-1] in ("epoch", "epochs")
                  and not tree.under(pre, claimed_all)}
        if epochs:
            result["data_position"] = PieceStatus("data_position", "unknown",
                                                  f"only an epoch counter ({tree.scalar_evidence(epochs)}): a mid-epoch "
                                                  "resume also needs the position within the epoch", WHY["data_position"])
    rng = {r for r in tree.named("rng") if not tree.under(r, claimed_all)}
    if not _named_piece(tree, "rng", rng, result, _paths):
        gens = [p for p, lf in tree.leaves if lf.kind == "tensor" and lf.dtype == "uint8"
                and lf.numel == _TORCH_CPU_RNG_BYTES and not tree.under(p, claimed_all)]
        if gens:
            result["rng"] = PieceStatus("rng", "present", f"{'/'.join(gens[0])}: a {_TORCH_CPU_RNG_BYTES}-byte uint8 "
                                        "tensor (torch CPU generator state)", WHY["rng"])
    _named_piece(tree, "lr_scheduler", sched, result, _paths)
    _named_piece(tree, "grad_scaler", scaler, result, _paths)
    accounted = {r[0] for pc in (optim, sched, scaler, model_named, steps, data, rng) for r in pc if r}
    unrecognised = [k for k in top if k.lower() not in accounted and not _BENIGN_TOP.fullmatch(k.lower())]
    for pc in PIECES:
        if pc in result:
            continue
        if unrecognised:
            shown = ", ".join(unrecognised[:5]) + (" ..." if len(unrecognised) > 5 else "")
            result[pc] = PieceStatus(pc, "unknown", f"no key with a recognised name; unrecognised keys ({shown}) "
                                     "may hold it", WHY[pc])
        else:
            result[pc] = PieceStatus(pc, "missing", "no key with a recognised name", WHY[pc])
    return tuple(result[pc] for pc in PIECES), top


class _KeyTree:
    """The leaves' key paths (lower case) as the heuristics read them: every prefix, and each prefix's children."""

    def __init__(self, rootless: list[tuple[tuple[str, ...], Leaf]]):
        self.leaves = [(tuple(c.lower() for c in p), leaf) for p, leaf in rootless]
        self.prefixes: set[tuple[str, ...]] = set()
        self.children: dict[tuple[str, ...], set[str]] = {}
        for lp, _ in self.leaves:
            for i in range(1, len(lp) + 1):
                self.prefixes.add(lp[:i])
                self.children.setdefault(lp[:i - 1], set()).add(lp[i - 1])

    @staticmethod
    def under(p: tuple[str, ...], roots: set[tuple[str, ...]]) -> bool:
        return any(p[:len(r)] == r for r in roots)

    @staticmethod
    def outermost(roots: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
        return {r for r in roots if not any(r != o and r[:len(o)] == o for o in roots)}

    def named(self, piece: str, max_depth: int = 3) -> set[tuple[str, ...]]:
        """The outermost keys (at most ``max_depth`` deep) whose name matches the piece's rule."""
        out = set()
        for pre in self.prefixes:
            if len(pre) <= max_depth:
                comp = pre[-1]
                if piece in _NAME_RULES and _NAME_RULES[piece].fullmatch(comp):
                    out.add(pre)
                elif piece in _SEARCH_RULES and _SEARCH_RULES[piece].search(comp):
                    out.add(pre)
        return self.outermost(out)

    def structural(self, required: tuple[str, ...], any_of: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
        """Prefixes whose children include every ``required`` key and (if given) one of ``any_of``."""
        return {pre for pre, kids in self.children.items()
                if all(n in kids for n in required) and (not any_of or any(a in kids for a in any_of))}

    def holds_something(self, roots: set[tuple[str, ...]]) -> bool:
        return any(self.under(p, roots) and not (lf.kind in ("mapping", "none") or (lf.kind == "sequence" and
                                                                                     lf.numel == 0))
                   for p, lf in self.leaves)

    def scalar_evidence(self, roots: set[tuple[str, ...]]) -> str:
        """Key paths, with the values of numeric leaves at or just under them (at most 4)."""
        parts = []
        for r in sorted(roots):
            here = [(p, lf) for p, lf in self.leaves if p[:len(r)] == r and len(p) <= len(r) + 1]
            vals = [("/".join(p[len(r):]) or "", lf.value) for p, lf in here if lf.kind in ("number", "bool")]
            if vals and vals[0][0] == "":
                parts.append(f"{'/'.join(r)} = {vals[0][1]}")
            elif vals:
                inner = ", ".join(f"{k} = {v}" for k, v in vals[:4]) + (", ..." if len(vals) > 4 else "")
                parts.append(f"{'/'.join(r)} ({inner})")
            else:
                parts.append("/".join(r))
        return ", ".join(parts)


def _paths(roots: set[tuple[str, ...]]) -> str:
    return ", ".join(sorted("/".join(r) for r in roots))


def _model_piece(tree: _KeyTree, claimed: set[tuple[str, ...]], result: dict[str, PieceStatus]) -> set[tuple[str, ...]]:
    """The model: tensors under a key named for it (outside the other pieces), else parameter-like tensors
    (``*.weight``, ``*.bias``) outside the other pieces (a bare state_dict). Returns the keys that hold it."""
    model_named = {r for r in tree.named("model") if not tree.under(r, claimed)}
    model_tensors = [(p, lf) for p, lf in tree.leaves if lf.kind == "tensor" and tree.under(p, model_named)]
    if model_tensors:
        roots = ", ".join(sorted("/".join(r) for r in model_named if any(p[:len(r)] == r for p, _ in model_tensors)))
        result["model"] = PieceStatus("model", "present",
                                      f"{roots}: {len(model_tensors)} tensors, {_mb(sum(leaf.nbytes for _, leaf in model_tensors))}",
                                      WHY["model"])
    else:
        loose = [(p, lf) for p, lf in tree.leaves if lf.kind == "tensor" and p[-1].rsplit(".", 1)[-1] in _PARAM_LEAVES
                 and not tree.under(p, claimed)]
        if loose:
            result["model"] = PieceStatus("model", "present", f"{len(loose)} parameter-like tensors (*.weight, *.bias) "
                                          f"outside other pieces, {_mb(sum(leaf.nbytes for _, leaf in loose))}", WHY["model"])
            model_named = {p[:1] for p, _ in loose}
    return model_named


def _optimizer_piece(tree: _KeyTree, optim: set[tuple[str, ...]], result: dict[str, PieceStatus]) -> None:
    """The optimizer: present with its per-parameter state tensors, unknown without any (never stepped, or stateless)."""
    if not optim:
        return
    opt_tensors = [lf for p, lf in tree.leaves if lf.kind == "tensor" and tree.under(p, optim)]
    names = ", ".join(sorted("/".join(r) for r in optim))
    if opt_tensors:
        result["optimizer"] = PieceStatus("optimizer", "present",
                                          f"{names}: {len(opt_tensors)} state tensors, {_mb(sum(leaf.nbytes for leaf in opt_tensors))}",
                                          WHY["optimizer"])
    else:
        result["optimizer"] = PieceStatus("optimizer", "unknown", f"{names} holds no per-parameter state tensors "
                                          "(never stepped, or a stateless optimizer such as plain SGD)", WHY["optimizer"])


def _named_piece(tree: _KeyTree, piece: str, roots: set[tuple[str, ...]], result: dict[str, PieceStatus],
                 evidence: Any) -> bool:
    """``piece`` from the keys named for it: missing when they hold nothing, else present with ``evidence(roots)``.
    False when no key is named for it (the caller may look for other signs)."""
    if not roots:
        return False
    if not tree.holds_something(roots):
        result[piece] = PieceStatus(piece, "missing", f"{', '.join(sorted('/'.join(r) for r in roots))} is empty",
                                    WHY[piece])
    else:
        result[piece] = PieceStatus(piece, "present", evidence(roots), WHY[piece])
    return True


def _mb(n: int) -> str:
    return f"{n / 1e6:.3g} MB"
