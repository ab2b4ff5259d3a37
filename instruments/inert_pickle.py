"""Reading a checkpoint's pickles without executing anything: the inert unpickler and the tensor walk.

:class:`_InertUnpickler` resolves no global at all: every global becomes an inert placeholder
(:class:`Opaque`) that only records its arguments and state. :func:`inert_load` refuses any file
that references a global outside a small allowlist of tensor, container and numpy-array rebuilders,
because ``torch.load(weights_only=False)`` would call it. :func:`walk` turns the inert object into
(key path, leaf) pairs with each tensor's declared dtype and size; :func:`read_zip` and
:func:`read_legacy` read the two ``torch.save`` formats and check that every tensor record the
structure refers to is present with its full size. No torch is imported.

:mod:`.audit` builds its report on these.
"""

from __future__ import annotations

import io
import math
import pickle
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..engine.errors import InputError

__all__ = ["DTYPE_BYTES", "MAX_PICKLE_BYTES", "Leaf", "Opaque", "inert_load", "read_legacy", "read_zip", "shape_numel",
           "walk"]

DTYPE_BYTES = {
    "float32": 4, "float": 4, "float64": 8, "double": 8, "float16": 2, "half": 2, "bfloat16": 2,
    "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "short": 2, "int8": 1, "uint8": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "complex64": 8, "cfloat": 8, "complex128": 16,
    "cdouble": 16, "complex32": 4, "chalf": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "qint8": 1, "quint8": 1, "qint32": 4,
}
_STORAGE_BYTES = {
    "FloatStorage": ("float32", 4), "DoubleStorage": ("float64", 8), "HalfStorage": ("float16", 2),
    "BFloat16Storage": ("bfloat16", 2), "LongStorage": ("int64", 8), "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2), "CharStorage": ("int8", 1), "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1), "ComplexFloatStorage": ("complex64", 8), "ComplexDoubleStorage": ("complex128", 16),
    "UntypedStorage": ("uint8", 1),
}
# globals a checkpoint may reference: what torch.load(weights_only=True) accepts for plain state dicts,
# numpy array/scalar reconstruction (numpy RNG states), and DCP's metadata records. Anything else is
# code that torch.load(weights_only=False) would run, so the audit refuses the file.
_ALLOWED_EXACT = {
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset",
    "builtins.bytearray", "builtins.slice", "builtins.complex", "_codecs.encode",
    "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_meta_tensor_no_storage", "torch._tensor._rebuild_from_type_v2",
    "torch.nn.parameter.Parameter", "torch._tensor.Tensor", "torch.Tensor", "torch.Size", "torch.device",
    "torch.serialization._get_layout", "torch.storage.UntypedStorage", "torch.storage.TypedStorage",
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
    "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "torch.distributed.checkpoint.metadata.Metadata",
    "torch.distributed.checkpoint.metadata.TensorStorageMetadata",
    "torch.distributed.checkpoint.metadata.BytesStorageMetadata",
    "torch.distributed.checkpoint.metadata.ChunkStorageMetadata",
    "torch.distributed.checkpoint.metadata.TensorProperties",
    "torch.distributed.checkpoint.metadata.MetadataIndex",
    "torch.distributed.checkpoint.metadata.StorageMeta",
    "torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING",
    "torch.distributed.checkpoint.filesystem._StorageInfo",
}
_ALLOWED_PATTERNS = (
    re.compile(r"torch\.(" + "|".join(_STORAGE_BYTES) + r")"),
    re.compile(r"torch\.(" + "|".join(DTYPE_BYTES) + r"|strided|sparse_coo|sparse_csr|sparse_csc|_mkldnn)"),
    re.compile(r"numpy\.dtypes\.(Bool|U?Int(8|16|32|64)|U?Byte|U?Short|U?Long|U?LongLong|Float(16|32|64)|"
               r"Complex(64|128)|Half|Double|Float|LongDouble|CLongDouble|CDouble|CFloat)DType"),
)
MAX_PICKLE_BYTES = 256 * 2**20
_MAX_NODES = 2_000_000


def _allowed(name: str) -> bool:
    return name in _ALLOWED_EXACT or any(p.fullmatch(name) for p in _ALLOWED_PATTERNS)


class Opaque:
    """Inert stand-in for whatever a pickle global would build: records arguments and state only."""

    global_name = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> "Opaque":
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state, obj.items, obj.listitems = args, kwargs, None, {}, []
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def append(self, value: Any) -> None:
        self.listitems.append(value)

    def extend(self, values: Iterable[Any]) -> None:
        self.listitems.extend(values)

    def state_dict(self) -> dict[str, Any]:
        """Attribute dict from the pickled state (dict, or (dict, slots dict))."""
        s = self.state
        if isinstance(s, dict):
            return s
        if isinstance(s, tuple) and len(s) == 2:
            out: dict[str, Any] = {}
            for part in s:
                if isinstance(part, dict):
                    out.update(part)
            return out
        return {}


@dataclass(frozen=True)
class _StorageRef:
    key: str
    dtype: str
    itemsize: int
    numel: int


class _InertUnpickler(pickle.Unpickler):
    """Unpickler that resolves no global: each becomes an :class:`Opaque` subclass named after it."""

    def __init__(self, file: Any):
        super().__init__(file)
        self.globals_seen: set[str] = set()
        self.storages: dict[str, _StorageRef] = {}
        self._classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        self.globals_seen.add(full)
        if full not in self._classes:
            self._classes[full] = type("Opaque:" + full, (Opaque,), {"global_name": full})
        return self._classes[full]

    def persistent_load(self, pid: Any) -> Any:
        # torch.save: ('storage', storage_type, key, location, numel[, view metadata])
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            stype = getattr(pid[1], "global_name", "?").rsplit(".", 1)[-1]
            dtype, size = _STORAGE_BYTES.get(stype, ("unknown", 1))
            numel = pid[4] if isinstance(pid[4], int) and not isinstance(pid[4], bool) and pid[4] >= 0 else 0
            ref = _StorageRef(str(pid[2])[:200], dtype, size, numel)
            self.storages[ref.key] = ref
            return ref
        raise pickle.UnpicklingError(f"unsupported persistent id {str(pid)[:60]}")


def inert_load(data: bytes, what: str, path: Path) -> tuple[Any, _InertUnpickler, int]:
    """Unpickle ``data`` inertly; returns (object, unpickler, bytes consumed). Refuses unsafe globals."""
    stream = io.BytesIO(data)
    up = _InertUnpickler(stream)
    try:
        obj = up.load()
    except RecursionError:
        raise InputError("checkpoint", str(path), f"{what} nests too deeply to inspect") from None
    except Exception as exc:  # noqa: BLE001 -- any failure of the inert parse is a malformed file
        raise InputError("checkpoint", str(path),
                         f"{what} is truncated or not a valid pickle ({type(exc).__name__}: {exc}); nothing was executed"
                         ) from None
    unsafe = sorted(g for g in up.globals_seen if not _allowed(g))
    if unsafe:
        raise InputError("checkpoint", str(path),
                         f"{what} references code outside the tensor/container allowlist ({', '.join(unsafe[:6])}"
                         f"{', ...' if len(unsafe) > 6 else ''}): torch.load(weights_only=False) would run it, so "
                         "the file is treated as hostile and not inspected further; nothing was executed")
    return obj, up, stream.tell()


@dataclass(frozen=True)
class Leaf:
    kind: str        # tensor | number | bool | none | str | bytes | sequence | mapping | object
    nbytes: int = 0
    numel: int = 0
    dtype: str = ""
    value: Any = None
    storage: str = ""


def shape_numel(shape: Any) -> int | None:
    """Elements of a tensor of ``shape`` as a checkpoint declares it (a tuple or list, or a ``torch.Size`` read
    inertly, of whole numbers >= 0); ``None`` for anything else (an opaque object, inf, NaN, text, a negative or
    nested dimension): the file says nothing usable about the size, and the audit reports that, never a number
    made up from it."""
    if isinstance(shape, Opaque):
        shape = shape.args[0] if shape.args else None
    if not isinstance(shape, (tuple, list)) or len(shape) > 64:  # torch allows 64 dimensions at most
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return None
    return math.prod(shape)


def _extent(args: tuple, shape: Any) -> int:
    """Storage elements a tensor view reaches: ``offset + sum((d - 1) * stride) + 1`` with the declared strides
    (whole numbers); its element count when the strides or the offset are not readable."""
    shape = tuple(shape.args[0]) if isinstance(shape, Opaque) else tuple(shape)
    offset = args[1] if len(args) > 1 else 0
    stride = args[3] if len(args) > 3 else None
    stride = stride.args[0] if isinstance(stride, Opaque) and stride.args else stride
    ints = lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0  # noqa: E731
    if ints(offset) and isinstance(stride, (tuple, list)) and len(stride) == len(shape) and all(map(ints, stride)):
        return offset + sum((d - 1) * st for d, st in zip(shape, stride)) + 1
    return math.prod(shape)


def _unreadable(shape: Any) -> Leaf:
    return Leaf("object", value=f"tensor whose shape is unreadable ({str(shape)[:60]})")


def _tensor_leaf(op: Opaque) -> Leaf | None:
    g = op.global_name
    args = op.args
    if g in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v3") \
            and args and isinstance(args[0], _StorageRef):
        ref = args[0]
        shape = args[2] if len(args) > 2 else ()
        numel = shape_numel(shape)
        if numel is None:
            return _unreadable(shape)
        if numel and _extent(args, shape) > ref.numel:
            return Leaf("object", value=f"tensor whose shape {str(shape)[:60]} reaches beyond its storage of "
                                        f"{ref.numel:,} elements")
        return Leaf("tensor", numel * ref.itemsize, numel, ref.dtype, storage=ref.key)
    if g in ("torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state") and args:
        inner = args[0]
        return _tensor_leaf(inner) if isinstance(inner, Opaque) else None
    if g == "torch._tensor._rebuild_from_type_v2" and len(args) > 2 and isinstance(args[0], type) \
            and issubclass(args[0], Opaque) and isinstance(args[2], tuple):
        inner = args[0](*args[2])  # inert: an Opaque subclass only records its arguments
        return _tensor_leaf(inner)
    return None


def walk(obj: Any, source: Path) -> list[tuple[tuple[str, ...], Leaf]]:
    """Leaves of an inertly unpickled object as (key path, leaf); mappings and lists are descended."""
    out: list[tuple[tuple[str, ...], Leaf]] = []
    seen: set[int] = set()
    stack: list[tuple[tuple[str, ...], Any]] = [((), obj)]
    while stack:
        if len(out) > _MAX_NODES:
            raise InputError("checkpoint", str(source), f"has more than {_MAX_NODES:,} entries: too large to audit")
        path, o = stack.pop()
        if len(path) > 40:
            out.append((path, Leaf("object", value="(nested too deeply)")))
            continue
        if isinstance(o, Opaque):
            leaf = _tensor_leaf(o)
            if leaf is not None:
                out.append((path, leaf))
                continue
            if o.global_name in ("collections.OrderedDict", "collections.Counter"):
                mapping: Any = dict(o.items)
                if o.args and isinstance(o.args[0], list):
                    mapping.update(p for p in o.args[0] if isinstance(p, tuple) and len(p) == 2)
                o = mapping
            else:
                out.append((path, Leaf("object", value=o.global_name)))
                continue
        if isinstance(o, (dict, list, tuple)):
            if id(o) in seen:
                out.append((path, Leaf("object", value="(shared reference)")))
                continue
            seen.add(id(o))
        if isinstance(o, dict):
            if not o:
                out.append((path, Leaf("mapping")))
            for k, v in o.items():
                stack.append((path + (_key(k),), v))
        elif isinstance(o, (list, tuple)):
            if all(isinstance(v, (int, float, bool, str, type(None))) for v in o):
                out.append((path, Leaf("sequence", numel=len(o))))
            else:
                for i, v in enumerate(o):
                    stack.append((path + (str(i),), v))
        elif isinstance(o, bool):
            out.append((path, Leaf("bool", value=o)))
        elif isinstance(o, (int, float)):
            out.append((path, Leaf("number", value=o)))
        elif o is None:
            out.append((path, Leaf("none")))
        elif isinstance(o, str):
            out.append((path, Leaf("str", value=o[:80])))
        elif isinstance(o, (bytes, bytearray)):
            out.append((path, Leaf("bytes", nbytes=len(o))))
        elif isinstance(o, _StorageRef):
            out.append((path, Leaf("tensor", o.numel * o.itemsize, o.numel, o.dtype, storage=o.key)))
        else:
            out.append((path, Leaf("object", value=type(o).__name__)))
    out.reverse()
    return out


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if isinstance(k, (int, float, bool)):
        return str(k)
    return f"<{getattr(k, 'global_name', type(k).__name__)}>"



# ------------------------------------------------------------------------------ torch.save formats

def read_zip(path: Path) -> tuple[Any, _InertUnpickler, bool, str]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError("checkpoint", str(path), f"is a damaged zip archive ({exc})") from None
    with zf:
        pkls = [i for i in zf.infolist() if i.filename.endswith("/data.pkl") and i.filename.count("/") == 1]
        if len(pkls) != 1:
            raise InputError("checkpoint", str(path), "is a zip archive but not a torch.save checkpoint "
                                                      "(expected exactly one <name>/data.pkl record)")
        info = pkls[0]
        if info.file_size > MAX_PICKLE_BYTES:
            raise InputError("checkpoint", str(path), f"declares a {info.file_size / 2**20:.0f} MiB data.pkl: too large to audit")
        try:
            with zf.open(info) as fh:
                data = fh.read(MAX_PICKLE_BYTES + 1)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError) as exc:
            raise InputError("checkpoint", str(path), f"has an unreadable data.pkl record ({exc})") from None
        obj, up, _ = inert_load(data, "data.pkl", path)
        prefix = info.filename.split("/")[0]
        sizes = {i.filename: i.file_size for i in zf.infolist()}
        problems = []
        for key, ref in sorted(up.storages.items()):
            name = f"{prefix}/data/{key}"
            need = ref.numel * ref.itemsize
            if name not in sizes:
                problems.append(f"record {name} missing")
            elif sizes[name] < need:
                problems.append(f"record {name} holds {sizes[name]} bytes, needs {need}")
    if problems:
        return obj, up, False, "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else "")
    return obj, up, True, f"all {len(up.storages)} tensor records present with their full size"


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def read_legacy(path: Path, data: bytes) -> tuple[str, Any, _InertUnpickler, bool, str]:
    first, up, used = inert_load(data, "the pickle stream", path)
    if first != _LEGACY_MAGIC:
        return "pickle", first, up, True, "plain pickle: no separate tensor records to check"
    pos = used
    for what in ("protocol version", "system info"):
        _, _, n = inert_load(data[pos:], f"the legacy header ({what})", path)
        pos += n
    obj, up2, n = inert_load(data[pos:], "the legacy object pickle", path)
    pos += n
    keys, _, n = inert_load(data[pos:], "the legacy storage-key list", path)
    pos += n
    # each storage: 8-byte element count, then the data (itemsize x count)
    need = sum(ref.numel * ref.itemsize + 8 for ref in up2.storages.values())
    have = len(data) - pos
    up2.globals_seen |= up.globals_seen
    if not isinstance(keys, list) or have < need:
        return "torch.save (legacy)", obj, up2, False, f"tensor data holds {have} bytes, the structure needs {need}"
    return "torch.save (legacy)", obj, up2, True, f"all {len(up2.storages)} storages present with their full size"
