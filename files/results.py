"""Results files: write evaluated batches to CSV or Parquet, streamed and atomic, and read them back.

:func:`write_results` takes what :func:`ckptplan.engine.batch.evaluate_rows` returns (one frame,
chunks from :func:`ckptplan.engine.sweep.iter_results`, or an evaluated dask DataFrame) and
streams it to a file chunk by chunk, folding every chunk into a
:class:`~ckptplan.engine.batch.BatchSummary`. This layer writes ``.csv`` and ``.parquet``; other
kinds come as extra sinks (``sinks={kind: factory}``): the Excel results file is
:mod:`ckptplan.workbook.results`, whose ``write_results`` adds it and is the one entry point for
every output kind. A sink is a :class:`Sink`; a factory is called as
``factory(tmp_path, sheet=..., summary_sheet=..., source=...)`` and may offer
``check_rows(rows)`` to refuse a row count before any work.

CSV: UTF-8, comma, header row, numbers in shortest round-trip form (whole numbers without ".0",
so ``nodes`` reads ``128`` and ``deadline_seed`` all its digits), blank for missing, every text
cell, header names included, neutralised against formula injection (:func:`neutralise_csv_text`). Parquet: zstd, one type per
column: whole-number columns (``Int64`` in the results: ``nodes``, ``gpus``, ``deadline_seed``, ...)
int64, other numbers float64, text string; a column that holds text as well as numbers (a column the
batch carried through unchanged, ``--keep-extra``) is a string column, numbers written as in the CSV.
Both through pyarrow (imported when a file is written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from ..engine.columns import (TEXT_DTYPE, coerce_numeric_text, column_kind, integer_typed, is_dask, is_integer_column,
                              text_values)
from ..engine.errors import InputError
from ..engine.scenario import is_absent, is_number
from ..engine.sweep import BatchSummary, iter_results
from .atomic import atomic_write

__all__ = ["CSV_INJECTION_PREFIXES", "OUTPUT_SUFFIXES", "Sink", "SinkFactory", "cell_text", "file_frame", "file_kind",
           "is_text_column", "neutralise_csv_text", "output_kind", "read_results", "write_results", "write_table"]

#: leading characters that make a spreadsheet treat a CSV text cell as a formula (OWASP)
CSV_INJECTION_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
OUTPUT_SUFFIXES = (".csv", ".xlsx", ".parquet")


def file_kind(path: Union[str, Path], suffixes: tuple[str, ...], field: str) -> str:
    """The format of ``path`` by its suffix (without the dot), refusing any suffix not in ``suffixes``."""
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        raise InputError(field, str(path), f"unsupported type {suffix or '(none)'!r}: use " + ", ".join(suffixes))
    return suffix[1:]


def output_kind(path: Union[str, Path]) -> str:
    """The writer for ``path`` by its suffix: ``csv``, ``xlsx`` or ``parquet``."""
    return file_kind(path, OUTPUT_SUFFIXES, "output file")


# ====================================================================================== reading

def read_results(path: Union[str, Path]) -> pd.DataFrame:
    """Read a results file written by :func:`write_results` (CSV, Parquet, or the xlsx ``Results`` sheet).

    The .xlsx is one ckptplan wrote (:mod:`ckptplan.workbook.results`): only stored values are read.

    Numbers come back as float64, whole-number columns (``nodes``, ``gpus``, ``deadline_seed``, ...)
    as ``Int64`` when every value is whole, text as text (a CSV text cell neutralised on writing
    keeps its leading ``'``; ``error`` and ``warnings`` as ``""`` when empty), and an input column
    that holds text among its numbers as an object column (numbers as floats, text as text). The
    ``row`` column, when present, becomes the index.
    """
    path = Path(path)
    kind = output_kind(path)
    if kind == "csv":
        table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    elif kind == "parquet":
        table = pd.read_parquet(path)
    else:
        from openpyxl import load_workbook
        wb = load_workbook(path, read_only=True, data_only=True)
        try:
            ws = wb["Results"] if "Results" in wb.sheetnames else wb["Scenarios"]
            it = ws.iter_rows(values_only=True)
            header = list(next(it))
            width = len(header)
            table = pd.DataFrame([(list(r) + [None] * width)[:width] for r in it], columns=header)
        finally:
            wb.close()
        for c in table.columns:
            if column_kind(c) == "number":
                continue
            if column_kind(c) == "text" or c in _LEAD or table[c].map(lambda v: isinstance(v, str)).any():
                table[c] = pd.Series(text_values(table[c]), dtype=TEXT_DTYPE)
            else:
                table[c] = pd.to_numeric(table[c]).astype(float)
    for c in table.columns:
        col = table[c]
        if column_kind(c) == "number" and col.dtype.kind not in "iuf":
            col = coerce_numeric_text(col)
            if col.dtype.kind == "O":  # numbers among text: floats, as the results hold them
                col = col.map(lambda v: float(v) if is_number(v) else v).astype(object)
        if is_integer_column(c):
            col = col.astype("Int64") if col.dtype.kind in "iu" else integer_typed(col)
        table[c] = col
    for c in _LEAD[1:]:
        if c in table.columns:
            table[c] = table[c].astype(object).where(table[c].notna(), "").astype(TEXT_DTYPE)
    if "row" in table.columns:
        table = table.set_index("row")
    return table


_LEAD = ("status", "error", "warnings")


# ====================================================================================== writing

def neutralise_csv_text(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells cannot run as formulas when the CSV is opened in a spreadsheet.

    OWASP "CSV Injection": a cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return
    is prefixed with a single quote, so Excel/LibreOffice show it as text. Only text cells change:
    numbers (negative ones included) stay numbers. Text columns are checked vectorised (pandas'
    string methods); a column mixing text and other values, cell by cell. Column names are text
    cells of the header row and get the same prefix (a ``--keep-extra`` column carried through from
    an input file may be named anything). Unchanged columns are shared with ``frame``, not copied
    (copy-on-write).
    """
    out = frame.copy(deep=False)
    names = [str(c) for c in out.columns]
    if any(n.startswith(CSV_INJECTION_PREFIXES) for n in names):
        out.columns = ["'" + n if n.startswith(CSV_INJECTION_PREFIXES) else c for n, c in zip(names, out.columns)]
    for j in range(out.shape[1]):  # by position: two columns may share a name
        col = out.iloc[:, j]
        if col.dtype.kind in "iufbmM":
            continue
        if isinstance(col.dtype, pd.StringDtype):  # text or missing only
            mask = col.str.startswith(CSV_INJECTION_PREFIXES).to_numpy(dtype=bool, na_value=False)
            if mask.any():
                out.isetitem(j, col.where(~mask, "'" + col))
            continue
        mask = col.map(lambda v: isinstance(v, str) and v.startswith(CSV_INJECTION_PREFIXES)).to_numpy(dtype=bool)
        if mask.any():
            vals = col.to_numpy(dtype=object).copy()
            vals[mask] = ["'" + v for v in vals[mask]]
            out.isetitem(j, pd.Series(vals, index=col.index, dtype=col.dtype if col.dtype != object else object))
    return out


def file_frame(part: pd.DataFrame) -> pd.DataFrame:
    """The frame as written: the ``row`` index as a first column when the index is named ``row``."""
    if part.index.name == "row":
        return part.reset_index()
    return part.reset_index(drop=True)


def is_text_column(series: pd.Series) -> bool:
    """A column written as text (anything but numbers, booleans and dates)."""
    return series.dtype.kind not in "iufbmM"


def _arrow_schema(frame: pd.DataFrame):
    import pyarrow as pa

    fields_ = []
    for c in frame.columns:
        s = frame[c]
        if s.dtype.kind in "iu":
            fields_.append(pa.field(str(c), pa.int64()))
        elif s.dtype.kind == "f":
            fields_.append(pa.field(str(c), pa.float64()))
        elif s.dtype.kind == "b":
            fields_.append(pa.field(str(c), pa.bool_()))
        else:
            fields_.append(pa.field(str(c), pa.string()))
    return pa.schema(fields_)


def cell_text(v: Any) -> str:
    """A cell of a text column as written: text as is, numbers in shortest round-trip form (``128``, not ``128.0``)."""
    if isinstance(v, str):
        return v
    if is_number(v):
        if isinstance(v, float) or hasattr(v, "dtype") and v.dtype.kind == "f":
            text = repr(float(v))
            return text[:-2] if text.endswith(".0") else text
        return str(int(v))
    return str(v)


def _arrow_table(frame: pd.DataFrame, schema):
    import pyarrow as pa

    arrays = []
    for f in schema:
        s = frame[f.name]
        if pa.types.is_string(f.type):
            if s.dtype.kind == "f" and s.isna().all():
                arrays.append(pa.nulls(len(s), pa.string()))
            elif isinstance(s.dtype, pd.StringDtype):  # text or missing only: converted as a whole
                arrays.append(pa.array(s, type=pa.string(), from_pandas=True))
            else:
                vals = s.to_numpy(dtype=object)
                arrays.append(pa.array([None if is_absent(v) else cell_text(v) for v in vals], type=pa.string()))
        else:
            arrays.append(pa.array(s, type=f.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


class Sink:
    """A results file being written: ``write`` chunks in order, then ``close`` (or ``abort``)."""

    writer: Any = None

    @classmethod
    def check_rows(cls, rows: int) -> None:
        """Refuse, before any work, a row count this kind of file cannot hold (default: any count)."""

    def write(self, frame: pd.DataFrame) -> None:
        raise NotImplementedError

    def close(self, summary: Optional[BatchSummary]) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # noqa: BLE001 - best effort clean-up of a file about to be deleted
                pass


class _CsvSink(Sink):
    """CSV through pyarrow's streaming writer (shortest round-trip floats, blanks for NaN)."""

    def __init__(self, path: Path):
        self.path = path
        self.writer = None
        self.schema = None

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow.csv as pacsv

        frame = neutralise_csv_text(frame)
        if self.writer is None:
            self.schema = _arrow_schema(frame)
            self.writer = pacsv.CSVWriter(str(self.path), self.schema,
                                          write_options=pacsv.WriteOptions(quoting_style="needed"))
        self.writer.write_table(_arrow_table(frame, self.schema))

    def close(self, summary: Optional[BatchSummary]) -> None:
        if self.writer is not None:
            self.writer.close()


class _ParquetSink(Sink):
    """Parquet (zstd) through pyarrow's streaming writer, one row group per chunk."""

    def __init__(self, path: Path):
        self.path = path
        self.writer = None
        self.schema = None

    def write(self, frame: pd.DataFrame) -> None:
        import pyarrow.parquet as pq

        if self.writer is None:
            import pyarrow as pa

            # pandas' own metadata too, so pandas.read_parquet gives Int64 back for a whole-number column with gaps
            pandas_meta = pa.Schema.from_pandas(frame.iloc[:0], preserve_index=False).metadata
            self.schema = _arrow_schema(frame).with_metadata(pandas_meta)
            self.writer = pq.ParquetWriter(str(self.path), self.schema, compression="zstd")
        self.writer.write_table(_arrow_table(frame, self.schema))

    def close(self, summary: Optional[BatchSummary]) -> None:
        if self.writer is not None:
            self.writer.close()


#: ``factory(tmp_path, sheet=..., summary_sheet=..., source=...)`` -> a :class:`Sink` (a Sink class itself)
SinkFactory = Callable[..., Sink]


def _csv(path: Path, **_: Any) -> Sink:
    return _CsvSink(path)


def _parquet(path: Path, **_: Any) -> Sink:
    return _ParquetSink(path)


_BUILTIN: dict[str, SinkFactory] = {"csv": _csv, "parquet": _parquet}


def _factory(kind: str, path: Path, sinks: Optional[Mapping[str, SinkFactory]]) -> SinkFactory:
    """The sink factory for ``kind``: the caller's ``sinks`` first, then CSV and Parquet."""
    factories = {**_BUILTIN, **(sinks or {})}
    if kind not in factories:
        raise InputError("output file", str(path), f"{kind} output is written by ckptplan.workbook.results."
                         "write_results (this layer writes " + ", ".join(sorted(factories)) + ")")
    if factories[kind] in (_csv, _parquet):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError("output file", str(path), f"{kind} output needs pyarrow: pip install pyarrow") from None
    return factories[kind]


def write_results(results: Any, path: Union[str, Path], *, force: bool = False, describe: Sequence[str] = ("name",),
                  source: str = "", progress: Optional[Callable[[int], None]] = None,
                  expected_rows: Optional[int] = None, template: Optional[Any] = None,
                  sinks: Optional[Mapping[str, SinkFactory]] = None) -> BatchSummary:
    """Write evaluated results to a ``.csv`` or ``.parquet`` file atomically; return the summary.

    ``results``: a DataFrame from :func:`~ckptplan.engine.batch.evaluate_rows`, an iterable of such
    chunks (e.g. :func:`~ckptplan.engine.sweep.iter_results`, evaluated lazily while writing) or an
    evaluated dask DataFrame (streamed partition by partition: see ``iter_results``).
    ``progress(rows)`` is called after each chunk with the rows it wrote. ``expected_rows``, when
    known, lets a sink refuse a row count it cannot hold before any work (``check_rows``).
    ``template``: what the table took from a base scenario (a
    :class:`~ckptplan.engine.template_fill.TemplateFill` or its ``to_dict()``), kept in the summary.
    ``sinks``: ``{kind: factory}`` for further output kinds (see the module notes); use
    :func:`ckptplan.workbook.results.write_results` for any kind, .xlsx included.

    * The file appears complete or not at all (:func:`ckptplan.files.atomic_write`); an existing
      file is replaced only with ``force``, and that is checked before any evaluation.
    * CSV: UTF-8, comma, header row, numbers in shortest round-trip form, blank for missing; text
      cells neutralised against formula injection (:func:`neutralise_csv_text`). Parquet: zstd,
      float64/int64/string columns. Both need pyarrow.
    """
    path = Path(path)
    kind = output_kind(path)
    factory = _factory(kind, path, sinks)
    if expected_rows is not None:
        getattr(factory, "check_rows", Sink.check_rows)(expected_rows)
    if isinstance(results, pd.DataFrame):
        chunks: Iterable[pd.DataFrame] = [results]
    elif is_dask(results):
        chunks = iter_results(results)
    else:
        chunks = results
    summary = BatchSummary(describe=tuple(describe),
                           template=template.to_dict() if hasattr(template, "to_dict") else template)

    def write(tmp: Path) -> None:
        sink = factory(tmp, sheet="Results", summary_sheet=True, source=source)
        try:
            for part in chunks:
                if "status" not in part.columns:
                    raise InputError("results", list(part.columns)[:3], "are not evaluated results: use evaluate_rows first")
                summary.update(part)
                sink.write(file_frame(part))
                if progress is not None:
                    progress(len(part))
        except BaseException:
            sink.abort()
            raise
        sink.close(summary)

    atomic_write(path, write, force=force)
    return summary


def write_table(table: pd.DataFrame, path: Union[str, Path], *, force: bool = False,
                sinks: Optional[Mapping[str, SinkFactory]] = None) -> Path:
    """Write a scenario table (no summary) as ``.csv``/``.parquet`` (or a kind of ``sinks``), atomically.

    Used by :func:`ckptplan.files.tables.write_scenarios`; a spreadsheet sink is asked for one
    ``Scenarios`` sheet and no summary.
    """
    path = Path(path)
    factory = _factory(output_kind(path), path, sinks)

    def write(tmp: Path) -> None:
        sink = factory(tmp, sheet="Scenarios", summary_sheet=False, source="")
        sink.write(file_frame(table))
        sink.close(None)

    return atomic_write(path, write, force=force)
