"""Scenario tables in files: read ``.toml``, ``.csv``, ``.xlsx`` and ``.parquet`` tables, write them back.

Inputs: ``.toml`` (several ``[[scenario]]`` tables or one ``[scenario]``, each with optional
``[[scenario.domains]]``, and an optional ``[uncertainty]`` table: every row's default input ranges, kept in
``attrs["uncertainty"]``), ``.csv``, ``.xlsx``, ``.parquet`` (a header row of field names: the
names of :data:`ckptplan.engine.fields.FIELDS`, the text columns ``name``, ``description``,
``source``, ``currency``, and ``domain{i}_name``/``domain{i}_mtbf_h``/``domain{i}_nodes_per_domain``).
:func:`read_scenarios` returns the table :func:`ckptplan.engine.batch.evaluate_rows` takes, with the
cells it refused on reading (formulas, Excel error values, quoted TOML numbers, a number that breaks
the file's decimal separator) in ``attrs["cell_errors"]``: they become row errors there, never file
errors.

CSV files are read as Excel writes them anywhere:

* **Separator**: ``,``, ``;`` or tab, detected from the header row (field names never contain one);
  a header that splits on two of them is refused (give ``delimiter``: ``ckptplan batch --delimiter``).
* **Decimal separator**: ``.`` in a comma-separated file. In a ``;``- or tab-separated file
  (Excel's CSV in much of Europe) the number columns decide: decimal commas (``1,5``, also with
  thousands points, ``1.234,5``) read as ``1.5`` and ``1234.5``; decimal points read as usual; a file
  with both, or with only ``1.234``-like numbers (thousands or decimals?), is refused with the rows
  that disagree (give ``decimal``: ``ckptplan batch --decimal``).
* **Columns never shift**: every row must have as many fields as the header (extra fields may only
  be empty). A row with more or fewer, e.g. because a decimal comma split a number in a
  comma-separated file, refuses the file, naming the row, its line and both counts; no row is ever
  evaluated with its values under the wrong columns.
* UTF-8 (a BOM is fine); every limit of :mod:`ckptplan.files.untrusted` applies (cell and line
  length, rows, columns).
* How: a file without quotes whose every line has the header's field count (counted on the bytes,
  :func:`~ckptplan.files.untrusted.plain_csv_layout`) goes through pandas' C parser; any other file
  through the csv module, record by record, each record's field count checked.

:func:`write_scenarios` writes a table back (TOML here; CSV and Parquet through
:mod:`.results`; .xlsx through :func:`ckptplan.workbook.results.write_scenarios`), atomically and
never over an existing file without ``force``.
"""

from __future__ import annotations

import collections
import csv
import json
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..engine.columns import (TEXT_DTYPE, coerce_numeric_text, column_kind, integer_typed, is_integer_column,
                              plain_value, text_values)
from ..engine.scenario import is_number
from ..engine.errors import InputError
from ..engine.scenario import DOMAIN_COL, domain_indices, is_absent
from . import untrusted
from .atomic import atomic_write
from .results import SinkFactory, file_kind, write_table
from .untrusted import CSV_DELIMITERS, FileInputError, check_text, check_xlsx_package, read_toml

__all__ = ["CSV_DECIMALS", "CSV_DELIMITERS", "INPUT_SUFFIXES", "MAX_XLSX_UNCOMPRESSED_BYTES", "input_kind",
           "read_scenarios", "write_scenarios"]

INPUT_SUFFIXES = (".toml", ".csv", ".xlsx", ".parquet")
#: uncompressed size above which an .xlsx (or Parquet) input is refused (a zip bomb guard)
MAX_XLSX_UNCOMPRESSED_BYTES = 2 * 1024**3
#: the decimal separators of a CSV file
CSV_DECIMALS = (".", ",")
_FIELD = "scenario file"


def input_kind(path: Union[str, Path]) -> str:
    """The reader for ``path`` by its suffix: ``toml``, ``csv``, ``xlsx`` or ``parquet``."""
    return file_kind(path, INPUT_SUFFIXES, "scenario file")


# ====================================================================================== reading

def read_scenarios(path: Union[str, Path], *, sheet: Optional[str] = None, delimiter: Optional[str] = None,
                   decimal: Optional[str] = None, max_rows: Optional[int] = None) -> pd.DataFrame:
    """Read a scenario table from ``.toml``, ``.csv``, ``.xlsx`` or ``.parquet`` (see the module notes).

    The index, named ``row``, is the 1-based data row as the user counts it: the first row under
    the header is row 1 (CSV, .xlsx, Parquet; so an .xlsx sheet's row number is ``row + 1``) and,
    in TOML, the scenario's position (1, 2, ...). Wholly blank rows hold no scenario and are left
    out, but they count, so the numbers stay those of the file. Numeric cells written as text
    (``"1.5"``, as Excel and CSV often store them) become numbers; blank cells and ``NA``/``N/A``/
    ``null``/``none`` mean "not given" (``nan`` is a row error, as in a scenario file); any other text stays text and becomes a row error in
    :func:`~ckptplan.engine.batch.evaluate_rows`, which keeps it in the output. TOML is typed: a
    quoted number there is a row error (in ``attrs["cell_errors"]``). Column types: a numeric
    column is float64, or pandas ``Int64`` for a whole-number field (``nodes``, ``gpus_per_node``,
    ``domain{i}_nodes_per_domain``) whose every value is whole; a column holding any cell that is
    no number is an object column (numbers as floats, the rest as read).

    ``.xlsx`` is read as untrusted data (:func:`ckptplan.files.check_xlsx_package`): openpyxl
    parses its XML through defusedxml (a dependency), no part may declare a DTD or entities, the
    archive is refused above :data:`MAX_XLSX_UNCOMPRESSED_BYTES` uncompressed (its shared strings
    above :data:`~ckptplan.files.untrusted.MAX_SHARED_STRINGS_BYTES`), and only stored values are
    read, never formulas: a formula cell (and an Excel error value such as ``#DIV/0!``) is recorded
    in ``attrs["cell_errors"]`` and becomes a row error (the table holds its text, the output shows
    it). The sheet named ``Scenarios`` is read if there is one, else the first (or ``sheet``). CSV:
    see the module notes (``delimiter``: one of :data:`CSV_DELIMITERS`, ``decimal``: one of
    :data:`CSV_DECIMALS`, both detected when not given). ``max_rows``: data rows allowed
    (default :data:`~ckptplan.files.untrusted.MAX_INPUT_ROWS`). Raises :class:`InputError` naming
    the file (and the row, column or cell) for an unreadable, empty or oversized file.
    """
    path = Path(path)
    kind = input_kind(path)
    untrusted.check_regular_file(path, _FIELD)
    if delimiter is not None and delimiter not in CSV_DELIMITERS:
        raise InputError("delimiter", delimiter, "must be ',', ';' or a tab")
    if decimal is not None and decimal not in CSV_DECIMALS:
        raise InputError("decimal", decimal, "must be '.' or ','")
    if (delimiter is not None or decimal is not None) and kind != "csv":
        raise InputError("delimiter" if delimiter is not None else "decimal", delimiter or decimal,
                         f"applies to CSV files only, not {path.name}")
    limit = untrusted.MAX_INPUT_ROWS if max_rows is None else int(max_rows)
    if kind == "csv":
        table, cell_errors = _read_csv(path, delimiter, decimal, limit)
    elif kind == "xlsx":
        table, cell_errors = _read_xlsx(path, sheet, limit)
    elif kind == "toml":
        table, cell_errors = _read_toml(path, limit)
    else:
        table, cell_errors = _read_parquet(path, limit)
    if len(table) == 0:
        raise FileInputError(_FIELD, path, "holds no scenario rows")
    table.index.name = "row"
    table.attrs["cell_errors"] = cell_errors
    table.attrs["source"] = str(path)
    return table


def _too_many_rows(path: Path, limit: int) -> InputError:
    return FileInputError(_FIELD, path, f"holds more than {limit:,} data rows (the limit; ckptplan batch --max-rows "
                          "raises it)")


def _check_header(header: list, path: Path) -> None:
    if len(header) > untrusted.MAX_COLUMNS:
        raise FileInputError(_FIELD, path, f"has {len(header):,} columns (limit {untrusted.MAX_COLUMNS:,})")
    for j, name in enumerate(header, start=1):
        check_text(name, path, f"header of column {j}")
    dup = [c for c, k in collections.Counter(h for h in header if h is not None).items() if k > 1]
    if dup:
        raise FileInputError(_FIELD, path, f"column {dup[0]!r} appears more than once in the header", "header row")


def _tidy(table: pd.DataFrame, parse_text: bool = True) -> pd.DataFrame:
    """Numeric columns coerced from text (``parse_text``) and typed; text columns as str with None for blanks."""
    for c in table.columns:
        kind = column_kind(c)
        if kind == "number":
            col = table[c]
            if parse_text:
                col = coerce_numeric_text(col)
            elif col.dtype.kind == "O" and all(is_number(v) or is_absent(v) for v in col.to_numpy(dtype=object)):
                col = pd.Series([np.nan if is_absent(v) else float(v) for v in col], index=col.index, dtype=float)
            table[c] = integer_typed(col) if is_integer_column(c) else col
        elif kind == "text":
            vals = text_values(table[c])
            vals = np.array([None if (v is None or v.strip() == "") else v for v in vals], dtype=object)
            table[c] = pd.Series(vals, index=table.index, dtype=object)
    return table


# ------------------------------------------------------------------------------------------ CSV

_COMMA_NUMBER = r"^\s*[+-]?(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?\s*$"
_GROUPED = r"^\s*[+-]?\d{1,3}(?:\.\d{3})+(?:,\d*)?\s*$"
_POINT_NUMBER = r"^\s*[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$"


def _arrow(col: pd.Series) -> Any:
    import pyarrow as pa

    arr = pa.array(col, from_pandas=True)
    return arr if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) else arr.cast(pa.string())


def _matches(col: pd.Series, pattern: str) -> np.ndarray:
    """Which cells match ``pattern`` (pyarrow's RE2, vectorised)."""
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(pc.match_substring_regex(_arrow(col), pattern), False), dtype=bool)


def _replaced(col: pd.Series, mask: np.ndarray, old: str, new: str) -> pd.Series:
    """``col`` with ``old`` replaced by ``new`` in the cells of ``mask``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _arrow(col)
    out = pc.if_else(pa.array(mask), pc.replace_substring(arr, old, new), arr)
    try:
        return pd.Series(pd.array(out, dtype=TEXT_DTYPE), index=col.index)
    except (TypeError, ValueError):  # pragma: no cover - pandas < 3
        return pd.Series(out.to_pylist(), index=col.index, dtype=TEXT_DTYPE)


def _decimal_commas(table: pd.DataFrame, path: Path, decimal: Optional[str], delimiter: str) -> dict:
    """Detect (unless given) the decimal separator and rewrite decimal-comma numbers; return refused cells."""
    columns = [c for c in table.columns if column_kind(c) == "number"]
    if decimal is None and delimiter == ",":
        return {}
    comma, point, grouped = {}, {}, {}
    for c in columns:
        col = table[c]
        if not (col.str.contains(",", regex=False) | col.str.contains(".", regex=False)).any():
            continue
        for store, pattern in ((comma, _COMMA_NUMBER), (grouped, _GROUPED), (point, _POINT_NUMBER)):
            mask = _matches(col, pattern)
            if mask.any():
                store[c] = mask

    def first(store: dict, exclude: Optional[dict] = None) -> Optional[tuple[Any, str, str]]:
        for c, mask in store.items():
            m = mask & ~exclude[c] if exclude and c in exclude else mask
            hits = np.flatnonzero(m)
            if len(hits):
                return table.index[hits[0]], c, table[c].iloc[hits[0]]
        return None

    if decimal is None:
        has_comma = bool(comma) or any(table[c][grouped[c]].str.contains(",", regex=False).any() for c in grouped)
        plain_point = first(point, grouped)
        if has_comma and plain_point is not None:
            c_cell = first(comma) or first(grouped)
            raise FileInputError(_FIELD, path, f"mixes decimal points (row {plain_point[0]}, {plain_point[1]} = "
                                 f"{plain_point[2]!r}) and decimal commas (row {c_cell[0]}, {c_cell[1]} = {c_cell[2]!r}): "
                                 "give the decimal separator (--decimal . or --decimal ,)")
        if not has_comma:
            only_grouped = first(grouped)
            if only_grouped is not None and plain_point is None:
                name = {";": "';'", "\t": "tab"}.get(delimiter, repr(delimiter))
                raise FileInputError(_FIELD, path, f"{only_grouped[1]} = {only_grouped[2]!r} could be written with a "
                                     f"decimal point or a thousands separator in this {name}-separated file: give the "
                                     "decimal separator (--decimal . or --decimal ,)", f"row {only_grouped[0]}")
            return {}
        decimal = ","
    if decimal == ".":
        return {}
    refused: dict = {}
    for c in columns:
        none = np.zeros(len(table), dtype=bool)
        g, k = grouped.get(c, none), comma.get(c, none)
        col = table[c]
        if g.any():
            col = _replaced(col, g, ".", "")
        if (g | k).any():
            col = _replaced(col, g | k, ",", ".")
        for n in np.flatnonzero(point.get(c, none) & ~g):
            refused[(table.index[n], c)] = str(InputError(c, table[c].iloc[n], "is not a number with a decimal "
                                                           "comma, as the rest of this file is written"))
        table[c] = col
    return refused


def _read_csv(path: Path, delimiter: Optional[str], decimal: Optional[str],
              max_rows: int) -> tuple[pd.DataFrame, dict]:
    untrusted.check_line_lengths(path, _FIELD)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            first = untrusted.read_first_line(fh, path, _FIELD)
            if not first.strip():
                raise FileInputError(_FIELD, path, "is empty: it needs a header row of field names")
        delimiter = delimiter or untrusted.sniff_delimiter(first, path, _FIELD)
        width = len(next(csv.reader([first], delimiter=delimiter)))
        if untrusted.plain_csv_layout(path, delimiter, width):
            table, header = _read_plain(path, delimiter, width, max_rows)
        else:
            table, header = _read_quoted(path, delimiter, max_rows)
    except csv.Error as exc:
        raise FileInputError(_FIELD, path, f"cannot be read as CSV ({exc})") from None
    except UnicodeDecodeError as exc:
        raise FileInputError(_FIELD, path, f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x}): save it as "
                             "CSV UTF-8") from None
    except OSError as exc:
        raise FileInputError(_FIELD, path, f"cannot be read ({exc.strerror or exc})") from None
    for c in table.columns:  # cell length, vectorised (a line is already at most MAX_LINE_CHARS)
        lengths = table[c].str.len()
        if len(lengths) and lengths.max() > untrusted.MAX_CELL_CHARS:
            k = int(np.argmax(lengths.to_numpy()))
            check_text(table[c].iloc[k], path, f"row {table.index[k]}, column {c}")
    cell_errors = _decimal_commas(table, path, decimal, delimiter) if len(table) else {}
    return _tidy(table), cell_errors


def _header(raw: list[str], path: Path) -> list[Optional[str]]:
    """Column names (None for a blank one), trailing blank names dropped, checked."""
    header: list[Optional[str]] = [h.strip() or None for h in raw]
    while header and header[-1] is None:
        header.pop()
    _check_header(header, path)
    return header


def _read_plain(path: Path, delimiter: str, width: int, max_rows: int) -> tuple[pd.DataFrame, list]:
    """A file of plain fields (:func:`_plain_layout`) through pandas' C parser."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        header = _header(next(csv.reader([fh.readline()], delimiter=delimiter)), path)
    table = pd.read_csv(path, sep=delimiter, header=None, skiprows=1, names=list(range(width)), dtype=TEXT_DTYPE,
                        keep_default_na=False, na_filter=False, skip_blank_lines=False, encoding="utf-8-sig",
                        quoting=csv.QUOTE_NONE, nrows=max_rows + 1, engine="c")
    if len(table) > max_rows:
        raise _too_many_rows(path, max_rows)
    table.index = pd.RangeIndex(1, 1 + len(table))
    if len(table):
        filled = np.zeros(len(table), dtype=bool)
        for j in range(width):
            has = table[j].str.strip().ne("").to_numpy(dtype=bool)
            if (j >= len(header) or header[j] is None) and has.any():
                row = int(table.index[int(np.argmax(has))])
                raise FileInputError(_FIELD, path, f"column {j + 1} holds a value but has no header", f"row {row}")
            filled |= has
        table = table[filled]  # blank rows hold no scenario, but they count
    table = table[[j for j in range(len(header)) if header[j] is not None]]
    table.columns = [h for h in header if h is not None]
    return table, header


def _read_quoted(path: Path, delimiter: str, max_rows: int) -> tuple[pd.DataFrame, list]:
    """Any other file through the csv module, record by record, every record's field count checked."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header_raw = next(reader)
            header = _header(header_raw, path)
            width, named = len(header_raw), len(header)
            unnamed = [j for j, h in enumerate(header) if h is None]  # blank names between named columns
            records: list[list[str]] = []
            labels: list[int] = []
            row = 0
            for record in reader:
                row += 1
                if row > max_rows:
                    raise _too_many_rows(path, max_rows)
                if not (record and record[0].strip()) and not "".join(record).strip():
                    continue  # a blank row: no scenario, but it counts
                n = len(record)
                if n != named:
                    if n < named or (n > width and "".join(record[width:]).strip()):
                        raise FileInputError(_FIELD, path, _shifted(n, named if n < named else width, delimiter),
                                             f"row {row} (line {reader.line_num})")
                    _no_header(record, range(named, n), path, row, reader.line_num)
                    record = record[:named]
                if unnamed:
                    _no_header(record, unnamed, path, row, reader.line_num)
                records.append(record)
                labels.append(row)
        except csv.Error as exc:
            raise FileInputError(_FIELD, path, f"cannot be read as CSV ({exc})", f"line {reader.line_num}") from None
    columns = list(zip(*records)) if records else [()] * named
    table = pd.DataFrame({header[j]: pd.Series(columns[j], dtype=TEXT_DTYPE) for j in range(named)
                          if header[j] is not None})
    table.index = pd.Index(labels, dtype=np.int64)
    return table, header


def _no_header(record: list[str], columns: Any, path: Path, row: int, line: int) -> None:
    for j in columns:
        if j < len(record) and record[j].strip():
            raise FileInputError(_FIELD, path, f"column {j + 1} holds a value but has no header",
                                 f"row {row} (line {line})")


def _shifted(got: int, width: int, delimiter: str) -> str:
    name = {",": "','", ";": "';'", "\t": "tab"}[delimiter]
    hint = (" (a decimal comma splitting a number? quote such cells, or save the file with ';' as separator)"
            if delimiter == "," and got > width else "")
    return (f"has {got} fields but the header has {width} (separator {name}): every row needs one field per header "
            f"column; refusing the file rather than reading values under the wrong columns{hint}")


# -------------------------------------------------------------------------------------- Parquet

def _read_parquet(path: Path, max_rows: int) -> tuple[pd.DataFrame, dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise FileInputError(_FIELD, path, "Parquet needs pyarrow: pip install pyarrow") from None
    try:
        pf = pq.ParquetFile(path)
        meta = pf.metadata
        names = list(pf.schema_arrow.names)
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for damaged files
        raise FileInputError(_FIELD, path, f"cannot be read as Parquet ({exc})") from None
    _check_header(names, path)
    if meta.num_rows > max_rows:
        raise _too_many_rows(path, max_rows)
    if size > MAX_XLSX_UNCOMPRESSED_BYTES:
        raise FileInputError(_FIELD, path, f"unpacks to {size:,} bytes (limit {MAX_XLSX_UNCOMPRESSED_BYTES:,}): "
                             "refusing it")
    try:
        arrow = pq.read_table(path)
        arrow, nans = _plain_arrow(arrow)
        table = arrow.to_pandas()
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for damaged files
        raise FileInputError(_FIELD, path, f"cannot be read as Parquet ({exc})") from None
    table = table.reset_index(drop=True)
    table.index = pd.RangeIndex(1, 1 + len(table))
    cell_errors = {(int(r) + 1, c): str(InputError(c, "NaN", "must be a number: NaN is no value (leave the cell empty "
                                                   "for 'not given'), as in a scenario file"))
                   for c, rows in nans.items() for r in rows}
    for c in table.columns:
        col = table[c]
        if isinstance(col.dtype, pd.StringDtype):
            lengths = col.str.len().fillna(0)
        elif col.dtype.kind == "O":
            lengths = col.map(lambda v: len(v) if isinstance(v, str) else 0)
        else:
            continue
        if len(lengths) and lengths.max() > untrusted.MAX_CELL_CHARS:
            r = int(lengths.idxmax())
            check_text(col[r], path, f"row {r}, column {c}")
    return _tidy(table), cell_errors


def _plain_arrow(table: Any) -> tuple[Any, dict[str, list[int]]]:
    """A Parquet table in the types the scenario columns take, and the NaN cells of its number columns.

    Dictionary-encoded columns are decoded (pandas would make them Categorical, which no rule reads), extension
    types become their storage, decimals become float64, large strings plain strings; a nested column's cells
    (lists, structs, maps) become their JSON text, each a row error where a number is needed. A float NaN (not a null) in a number column is
    no blank: like ``nan`` in a scenario file it is refused, per row (``{column: [row positions]}``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    columns, nans = [], {}
    for name, col in zip(table.column_names, table.columns):
        t = col.type
        if isinstance(t, pa.ExtensionType):
            col = pa.chunked_array([c.storage for c in col.chunks], type=t.storage_type)
            t = col.type
        if pa.types.is_dictionary(t):
            col = pc.dictionary_decode(col) if hasattr(pc, "dictionary_decode") else col.cast(t.value_type)
            t = col.type
        if pa.types.is_decimal(t):
            col = col.cast(pa.float64())
        elif pa.types.is_large_string(t):
            col = col.cast(pa.string())
        elif pa.types.is_nested(t):  # a list, struct or map cell is no number nor name: its text, a row error
            col = pa.array([None if v is None else json.dumps(v, default=str) for v in col.to_pylist()], pa.string())
        if pa.types.is_floating(col.type) and column_kind(name) == "number":
            hit = pc.fill_null(pc.is_nan(col), False)
            if pc.any(hit).as_py():
                nans[name] = np.flatnonzero(np.asarray(hit)).tolist()
        columns.append(col)
    return pa.Table.from_arrays(columns, names=table.column_names, metadata=table.schema.metadata), nans


# ----------------------------------------------------------------------------------------- TOML

def _read_toml(path: Path, max_rows: int) -> tuple[pd.DataFrame, dict]:
    data = read_toml(path, _FIELD)
    if "scenario" not in data:
        raise FileInputError(_FIELD, path, "needs [[scenario]] tables (several) or one [scenario] table")
    other = sorted(set(data) - {"scenario", "uncertainty"})
    if other:
        raise FileInputError(_FIELD, path, f"unknown top-level key {other[0]!r}: only [scenario] / [[scenario]] and "
                             "[uncertainty]")
    ranges = data.get("uncertainty")
    if ranges is not None and not isinstance(ranges, dict):
        raise FileInputError(_FIELD, path, "[uncertainty] must be a table of field = [low, high] or a distribution")
    items = data["scenario"]
    items = [items] if isinstance(items, dict) else items
    if not isinstance(items, list) or not all(isinstance(it, dict) for it in items):
        raise FileInputError(_FIELD, path, "[scenario] must be a table or an array of tables")
    if len(items) > max_rows:
        raise _too_many_rows(path, max_rows)
    rows = []
    cell_errors: dict[tuple[int, str], str] = {}
    for k, item in enumerate(items, start=1):
        row = {key: value for key, value in item.items() if key != "domains"}
        doms = item.get("domains", [])
        if not isinstance(doms, list) or not all(isinstance(d, dict) for d in doms):
            raise FileInputError(_FIELD, path, "domains must be an array of tables [[scenario.domains]]",
                                 f"scenario {k}")
        for i, d in enumerate(doms, start=1):
            unknown = sorted(set(d) - {"name", "mtbf_h", "nodes_per_domain"})
            if unknown:
                check_text(unknown[0], path, f"scenario {k}, domains[{i}], a key")
                raise FileInputError(_FIELD, path, f"unknown key {unknown[0]!r} in domains[{i}]: use name, mtbf_h, "
                                     "nodes_per_domain", f"scenario {k}")
            for key, value in d.items():
                row[f"domain{i}_{key}"] = value
        for key, value in row.items():
            check_text(key, path, f"scenario {k}, a key")
            check_text(value, path, f"scenario {k}, {key}")
            if isinstance(value, (dict, list)) and key in ("tiers", "failure_classes", "designs"):
                raise FileInputError(_FIELD, path, f"{key} is a design every row of a batch follows, not a column: "
                                     "give the file as the template (ckptplan batch ROWS --template FILE; "
                                     "--design NAME for one of its [[designs]])", f"scenario {k}")
            if isinstance(value, (dict, list)):
                raise FileInputError(_FIELD, path, f"{key} must be a single value, not a "
                                     f"{'table' if isinstance(value, dict) else 'list'}", f"scenario {k}")
            if isinstance(value, str) and column_kind(key) == "number":  # TOML is typed: "2" is text
                cell_errors[(k, key)] = str(InputError(key, value, "must be a number (TOML: write it without quotes)"))
        rows.append(row)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    _check_header(columns, path)
    table = pd.DataFrame(rows, index=pd.RangeIndex(1, 1 + len(rows)), dtype=object) if rows else pd.DataFrame()
    table = _tidy(table, parse_text=False)
    if ranges is not None:   # every row's default input ranges (ckptplan batch: engine.batch_risk.default_ranges)
        table.attrs["uncertainty"] = ranges
    return table, cell_errors


# ----------------------------------------------------------------------------------------- .xlsx

def _check_zip(path: Path) -> None:
    check_xlsx_package(path, "scenario file", MAX_XLSX_UNCOMPRESSED_BYTES, "; export CSV or Parquet instead")


def _read_xlsx(path: Path, sheet: Optional[str], max_rows: int) -> tuple[pd.DataFrame, dict]:
    from openpyxl import load_workbook
    from openpyxl.utils import get_column_letter

    _check_zip(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds for damaged files
        raise FileInputError(_FIELD, path, f"cannot be read as .xlsx ({type(exc).__name__}: {exc})") from None
    r = 0  # the sheet row read last
    try:
        if sheet is not None:
            if sheet not in wb.sheetnames:
                raise FileInputError(_FIELD, path, f"has no sheet {sheet!r}; sheets: {', '.join(wb.sheetnames)}")
            ws = wb[sheet]
        else:
            ws = wb["Scenarios"] if "Scenarios" in wb.sheetnames else wb.worksheets[0]
        if hasattr(ws, "reset_dimensions"):
            ws.reset_dimensions()  # do not trust the stored dimension: read every row
        rows = ws.iter_rows()
        header_cells = next(rows, None)
        r = 1
        if not header_cells:
            raise FileInputError(_FIELD, path, f"sheet {ws.title!r} is empty: it needs a header row")
        header: list[Optional[str]] = []
        for j, cell in enumerate(header_cells, start=1):
            v = cell.value
            check_text(v, path, f"sheet {ws.title!r}, header cell {get_column_letter(j)}1")
            header.append(None if v is None or (isinstance(v, str) and not v.strip()) else str(v).strip())
        while header and header[-1] is None:
            header.pop()
        width = len(header)
        _check_header(header, path)
        records, labels = [], []
        cell_errors: dict[tuple[int, str], str] = {}
        for r, cells in enumerate(rows, start=2):
            if r - 1 > max_rows:
                raise _too_many_rows(path, max_rows)
            if r > untrusted.EXCEL_MAX_ROWS:
                raise FileInputError(_FIELD, path, f"sheet {ws.title!r} has rows beyond row {untrusted.EXCEL_MAX_ROWS:,}, "
                                     "the last row of a sheet: the workbook is damaged")
            values: list[Any] = [None] * width
            any_value = False
            for j, cell in enumerate(cells):
                v = cell.value
                if v is None:
                    continue
                if j >= width or header[j] is None:
                    raise FileInputError(_FIELD, path, f"column {j + 1} holds a value but has no header",
                                         f"sheet {ws.title!r}, row {r}")
                check_text(v, path, f"sheet {ws.title!r}, cell {get_column_letter(j + 1)}{r}")
                any_value = True
                col = header[j]
                if cell.data_type == "f":  # kept as text (the output shows it), refused as a value
                    v = v if isinstance(v, str) else getattr(v, "text", str(v))
                    cell_errors[(r - 1, col)] = str(InputError(col, v, "is a formula: formulas are not evaluated "
                                                                      "(ckptplan reads stored values only); type the value"))
                elif cell.data_type == "e":
                    cell_errors[(r - 1, col)] = str(InputError(col, v, "is an Excel error value"))
                values[j] = v
            if any_value:
                records.append(values)
                labels.append(r - 1)  # data rows: sheet row 2 (the first under the header) is 1
    except InputError:
        raise
    except Exception as exc:  # a damaged sheet: a shared string that does not exist, a bad cell reference, ...
        what = "a cell refers to a shared string the workbook does not hold" if isinstance(exc, IndexError) else \
            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        raise FileInputError(_FIELD, path, f"cannot be read at sheet row {r + 1} or near it ({what}): the workbook "
                             "is damaged") from None
    finally:
        wb.close()
    table = pd.DataFrame(records, columns=header, index=pd.Index(labels, dtype=np.int64), dtype=object)
    if None in header:
        empty_cols = [j for j, h in enumerate(header) if h is None]
        table = table.drop(columns=[table.columns[j] for j in empty_cols])
    return _tidy(table), cell_errors


# ====================================================================================== writing

def write_scenarios(table: pd.DataFrame, path: Union[str, Path], *, force: bool = False,
                    sinks: Optional[Mapping[str, SinkFactory]] = None) -> Path:
    """Write a scenario table (e.g. a grid from :func:`ckptplan.engine.sweep.sweep_grid`) as a file
    :func:`read_scenarios` reads.

    ``.toml``: ``[[scenario]]`` tables (empty cells left out, domains as ``[[scenario.domains]]``,
    whole numbers of count fields as integers); ``.csv``/``.parquet`` as in
    :func:`ckptplan.files.results.write_results`; other kinds through ``sinks`` (``{kind: factory}``,
    see :mod:`.results`): :func:`ckptplan.workbook.results.write_scenarios` adds .xlsx (one
    ``Scenarios`` sheet, an Excel Table). Atomic; no overwrite without ``force``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".toml":
        import tomli_w

        doms = domain_indices(list(table.columns))
        items = []
        for _, r in table.iterrows():
            item: dict[str, Any] = {}
            for c, v in r.items():
                if DOMAIN_COL.match(str(c)) or is_absent(v):
                    continue
                item[str(c)] = _toml_value(str(c), v)
            ds = []
            for i in doms:
                d = {k: r[f"domain{i}_{k}"] for k in ("name", "mtbf_h", "nodes_per_domain") if f"domain{i}_{k}" in r.index}
                d = {k: _toml_value(k, v) for k, v in d.items() if not is_absent(v)}
                if d:
                    ds.append(d)
            if ds:
                item["domains"] = ds
            items.append(item)
        text = tomli_w.dumps({"scenario": items})
        return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), force=force)
    return write_table(table, path, force=force, sinks=sinks)


def _toml_value(name: str, v: Any) -> Any:
    v = plain_value(v)
    if isinstance(v, float) and v.is_integer() and (is_integer_column(name) or name == "nodes_per_domain"):
        return int(v)
    return v
