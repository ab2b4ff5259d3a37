"""Parquet scenario tables for ``batch`` with dictionary, nested, extension and large-string columns (area
"parquet").

Each file is the valid scenario table of :mod:`test_xlsx_hostile` written by pyarrow with one column (or all) of
another Arrow type: dictionary-encoded text and numbers (int and float dictionaries, a dictionary of large
strings), ``large_string`` names and numbers written as large strings, a struct column and a list column, an
extension type over float64 (registered, as a library would) and a UUID column, ``decimal128`` and ``float16``
numbers, ``uint64`` beyond float range, dates and timestamps in a number column, a null-typed column, binary
names, and a file of several row groups. Written to .csv and .xlsx results: the ``cli`` checks
(:func:`test_cli_hostile.run_case`); a row whose number cell is not a number is never evaluated as one.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from test_cli_hostile import run_case
from test_xlsx_hostile import HEAD, ROWS

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


class _Celsius(pa.ExtensionType):
    """An extension type over float64, as a library registers one."""

    def __init__(self):
        super().__init__(pa.float64(), "ckptplan.test.celsius")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return cls()


try:
    pa.register_extension_type(_Celsius())
except pa.ArrowKeyError:   # registered by an earlier import of this module
    pass


def _columns() -> dict[str, "pa.Array"]:
    cols = list(zip(*ROWS))
    return {name: pa.array(list(values)) for name, values in zip(HEAD, cols)}


def _set(name: str, array_of):
    def edit(cols):
        cols[name] = array_of(cols[name])
    return edit


EDITS = {
    "dictionary names": _set("name", lambda a: a.dictionary_encode()),
    "dictionary floats": _set("checkpoint_stall_min", lambda a: a.dictionary_encode()),
    "dictionary ints": _set("nodes", lambda a: a.dictionary_encode()),
    "dictionary of large strings": _set("name", lambda a: a.cast(pa.large_string()).dictionary_encode()),
    "every column dictionary": lambda cols: cols.update({k: v.dictionary_encode() for k, v in cols.items()}),
    "large string names": _set("name", lambda a: a.cast(pa.large_string())),
    "large string numbers": _set("node_mtbf_h", lambda a: a.cast(pa.string()).cast(pa.large_string())),
    "struct column": _set("nodes", lambda a: pa.StructArray.from_arrays([a, a], ["x", "y"])),
    "list column": _set("checkpoint_stall_min", lambda a: pa.array([[v] for v in a.to_pylist()])),
    "extension floats": _set("checkpoint_stall_min", lambda a: pa.ExtensionArray.from_storage(_Celsius(), a)),
    "uuid names": _set("name", lambda a: pa.array([b"\x01" * 16, b"\x02" * 16, b"\x03" * 16], pa.uuid())
                       if hasattr(pa, "uuid") else pa.array([b"\x01" * 16] * 3, pa.binary(16))),
    "decimal numbers": _set("price_per_gpu_hour", lambda a: pa.array([Decimal(str(v)) for v in a.to_pylist()],
                                                                     pa.decimal128(10, 3))),
    "half floats": _set("checkpoint_stall_min", lambda a: a.cast(pa.float16())),
    "uint64 beyond float range": _set("nodes", lambda a: pa.array([2 ** 64 - 1, 256, 64], pa.uint64())),
    "dates as numbers": _set("useful_training_h", lambda a: pa.array([dt.date(2024, 1, 1)] * 3)),
    "timestamps as numbers": _set("node_mtbf_h", lambda a: pa.array([dt.datetime(2024, 1, 1)] * 3,
                                                                    pa.timestamp("ns", tz="UTC"))),
    "null column": _set("price_per_gpu_hour", lambda a: pa.nulls(3)),
    "binary names": _set("name", lambda a: pa.array([b"a", b"\xff\xfe", b"c"])),
}
ROW_GROUPS = "three row groups"
CASES = [(name, out) for name in [*EDITS, ROW_GROUPS] for out in ("out.csv", "out.xlsx")]


@pytest.mark.parametrize("name, output", CASES, ids=[f"{n} -> {o}" for n, o in CASES])
def test_hostile_parquet_tables(tmp_path: Path, name: str, output: str):
    cols = _columns()
    if name in EDITS:
        EDITS[name](cols)
    path = tmp_path / "table.parquet"
    pq.write_table(pa.table(cols), path, row_group_size=1 if name == ROW_GROUPS else None)
    out = run_case("batch", [str(path), "-o", output, "--json"], tmp_path, area="parquet")
    if out.code not in (0, 3) or not output.endswith(".csv"):
        return
    import pandas as pd

    table = pd.read_csv(tmp_path / output)
    ok = table[table["status"].astype(str).str.lower().eq("ok")] if "status" in table else table
    # a cell that holds no number (a date, a list, a struct, a time) is never evaluated as one
    if name in ("dates as numbers", "timestamps as numbers", "struct column", "list column"):
        assert ok.empty or len(ok) < len(ROWS), f"{name}: every row evaluated: {ok.to_dict('records')}"
