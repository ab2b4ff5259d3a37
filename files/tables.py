"""Scenario tables in files: read ``.toml``, ``.csv``, ``.xlsx`` and ``.parquet`` tables, write them back.

Inputs: ``.toml`` (several ``[[scenario]]`` tables or one ``[scenario]``, each with optional
``[[scenario.domains]]``), ``.csv``, ``.xlsx``, ``.parquet`` (a header row of field names: the
names of :data:`ckptplan.engine.fields.FIELDS`, the text columns ``name``, ``description``,
``source``, ``currency``, and ``domain{i}_name``/``domain{i}_mtbf_h``/``domain{i}_nodes_per_domain``).
:func:`read_scenarios` returns the table :func:`ckptplan.engine.batch.evaluate_rows` takes, with the
cells it refused on reading (formulas, Excel error values, quoted TOML numbers) in
``attrs["cell_errors"]``: they become row errors there, never file errors.

:func:`write_scenarios` writes a table back (TOML here; CSV and Parquet through
:mod:`.results`; .xlsx through :func:`ckptplan.workbook.results.write_scenarios`), atomically and
never over an existing file without ``force``.
"""

from __future__ import annotations

import collections
import csv
import tomllib
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..engine.batch import coerce_numeric_text, column_kind, integer_typed, is_integer_column, plain_value, text_values
from ..engine.scenario import is_number
from ..engine.errors import InputError
from ..engine.scenario import DOMAIN_COL, domain_indices, is_absent
from .atomic import atomic_write
from .results import SinkFactory, file_kind, write_table
from .untrusted import check_xlsx_package

__all__ = ["INPUT_SUFFIXES", "MAX_XLSX_UNCOMPRESSED_BYTES", "input_kind", "read_scenarios", "write_scenarios"]

INPUT_SUFFIXES = (".toml", ".csv", ".xlsx", ".parquet")
#: uncompressed size above which an .xlsx input is refused (a zip bomb guard)
MAX_XLSX_UNCOMPRESSED_BYTES = 2 * 1024**3


def input_kind(path: Union[str, Path]) -> str:
    """The reader for ``path`` by its suffix: ``toml``, ``csv``, ``xlsx`` or ``parquet``."""
    return file_kind(path, INPUT_SUFFIXES, "scenario file")


# ====================================================================================== reading

def read_scenarios(path: Union[str, Path], *, sheet: Optional[str] = None) -> pd.DataFrame:
    """Read a scenario table from ``.toml``, ``.csv``, ``.xlsx`` or ``.parquet`` (see the module notes).

    The index, named ``row``, is the 1-based data row as the user counts it: the first row under
    the header is row 1 (CSV, .xlsx, Parquet; so an .xlsx sheet's row number is ``row + 1``) and,
    in TOML, the scenario's position (1, 2, ...). Wholly blank rows hold no scenario and are left
    out, but they count, so the numbers stay those of the file. Numeric cells written as text
    (``"1.5"``, as Excel and CSV often store them) become numbers; blank cells and ``NA``/``N/A``/
    ``null``/``none``/``nan`` mean "not given"; any other text stays text and becomes a row error in
    :func:`~ckptplan.engine.batch.evaluate_rows`, which keeps it in the output. TOML is typed: a
    quoted number there is a row error (in ``attrs["cell_errors"]``). Column types: a numeric
    column is float64, or pandas ``Int64`` for a whole-number field (``nodes``, ``gpus_per_node``,
    ``domain{i}_nodes_per_domain``) whose every value is whole; a column holding any cell that is
    no number is an object column (numbers as floats, the rest as read).

    ``.xlsx`` is read as untrusted data (:func:`ckptplan.files.check_xlsx_package`): openpyxl
    parses its XML through defusedxml (a dependency), no part may declare a DTD or entities, the
    archive is refused above :data:`MAX_XLSX_UNCOMPRESSED_BYTES` uncompressed, and only stored
    values are read, never formulas: a formula cell (and an Excel error value such as ``#DIV/0!``)
    is recorded in ``attrs["cell_errors"]`` and becomes a row error (the table holds its text, the
    output shows it). The sheet named ``Scenarios``
    is read if there is one, else the first (or ``sheet``). CSV: comma-separated, UTF-8 (a BOM is
    fine). Raises :class:`InputError` for an unreadable or empty file.
    """
    path = Path(path)
    kind = input_kind(path)
    if not path.exists():
        raise InputError("scenario file", str(path), "file not found")
    if not path.is_file():
        raise InputError("scenario file", str(path), "is not a file")
    reader = {"toml": _read_toml, "csv": _read_csv, "xlsx": _read_xlsx, "parquet": _read_parquet}[kind]
    if kind == "xlsx":
        table, cell_errors = reader(path, sheet)
    else:
        table, cell_errors = reader(path)
    if len(table) == 0:
        raise InputError("scenario file", str(path), "holds no scenario rows")
    table.index.name = "row"
    table.attrs["cell_errors"] = cell_errors
    table.attrs["source"] = str(path)
    return table


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


def _read_csv(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
        if not header:
            raise InputError("scenario file", str(path), "is empty: it needs a header row of field names")
        header = [h.strip() for h in header]
        dup = [c for c, k in collections.Counter(header).items() if k > 1]
        if dup:
            raise InputError("columns", dup[0], "appears more than once in the header")
        table = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False, encoding="utf-8-sig")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error, OSError) as exc:
        raise InputError("scenario file", str(path), f"cannot be read as CSV ({exc})") from None
    table.columns = header
    table.index = pd.RangeIndex(1, 1 + len(table))  # data rows: the first under the header is 1
    blank = table.apply(lambda col: col.astype(str).str.strip().eq("")).all(axis=1) if len(table.columns) else None
    if blank is not None and blank.any():
        table = table[~blank.to_numpy()]
    return _tidy(table.copy()), {}


def _read_parquet(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("scenario file", str(path), "Parquet needs pyarrow: pip install pyarrow") from None
    try:
        table = pq.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises ArrowInvalid / OSError for damaged files
        raise InputError("scenario file", str(path), f"cannot be read as Parquet ({exc})") from None
    table = table.reset_index(drop=True)
    table.index = pd.RangeIndex(1, 1 + len(table))
    return _tidy(table), {}


def _read_toml(path: Path) -> tuple[pd.DataFrame, dict]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("scenario file", str(path), f"is not valid TOML ({exc})") from None
    if "scenario" not in data:
        raise InputError("scenario file", str(path), "needs [[scenario]] tables (several) or one [scenario] table")
    other = sorted(set(data) - {"scenario"})
    if other:
        raise InputError("scenario file", str(path), f"unknown top-level key {other[0]!r}: only [scenario] / [[scenario]]")
    items = data["scenario"]
    items = [items] if isinstance(items, dict) else items
    if not isinstance(items, list) or not all(isinstance(it, dict) for it in items):
        raise InputError("scenario file", str(path), "[scenario] must be a table or an array of tables")
    rows = []
    cell_errors: dict[tuple[int, str], str] = {}
    for k, item in enumerate(items, start=1):
        row = {key: value for key, value in item.items() if key != "domains"}
        doms = item.get("domains", [])
        if not isinstance(doms, list) or not all(isinstance(d, dict) for d in doms):
            raise InputError(f"scenario {k}: domains", doms, "must be an array of tables [[scenario.domains]]")
        for i, d in enumerate(doms, start=1):
            unknown = sorted(set(d) - {"name", "mtbf_h", "nodes_per_domain"})
            if unknown:
                raise InputError(f"scenario {k}: domains[{i}]", unknown[0], "unknown key: use name, mtbf_h, nodes_per_domain")
            for key, value in d.items():
                row[f"domain{i}_{key}"] = value
        for key, value in row.items():
            if isinstance(value, (dict, list)):
                raise InputError(f"scenario {k}: {key}", value, "must be a single value")
            if isinstance(value, str) and column_kind(key) == "number":  # TOML is typed: "2" is text
                cell_errors[(k, key)] = str(InputError(key, value, "must be a number (TOML: write it without quotes)"))
        rows.append(row)
    table = pd.DataFrame(rows, index=pd.RangeIndex(1, 1 + len(rows)), dtype=object) if rows else pd.DataFrame()
    return _tidy(table, parse_text=False), cell_errors


def _check_zip(path: Path) -> None:
    check_xlsx_package(path, "scenario file", MAX_XLSX_UNCOMPRESSED_BYTES, "; export CSV or Parquet instead")


def _read_xlsx(path: Path, sheet: Optional[str]) -> tuple[pd.DataFrame, dict]:
    from openpyxl import load_workbook

    _check_zip(path)
    try:
        wb = load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many kinds for damaged files
        raise InputError("scenario file", str(path), f"cannot be read as .xlsx ({type(exc).__name__}: {exc})") from None
    try:
        if sheet is not None:
            if sheet not in wb.sheetnames:
                raise InputError("sheet", sheet, f"not in the workbook; sheets: {', '.join(wb.sheetnames)}")
            ws = wb[sheet]
        else:
            ws = wb["Scenarios"] if "Scenarios" in wb.sheetnames else wb.worksheets[0]
        if hasattr(ws, "reset_dimensions"):
            ws.reset_dimensions()  # do not trust the stored dimension: read every row
        rows = ws.iter_rows()
        header_cells = next(rows, None)
        if not header_cells:
            raise InputError("scenario file", str(path), f"sheet {ws.title!r} is empty: it needs a header row")
        header: list[Optional[str]] = []
        for cell in header_cells:
            v = cell.value
            header.append(None if v is None or (isinstance(v, str) and not v.strip()) else str(v).strip())
        while header and header[-1] is None:
            header.pop()
        width = len(header)
        dup = [c for c, k in collections.Counter(h for h in header if h is not None).items() if k > 1]
        if dup:
            raise InputError("columns", dup[0], "appears more than once in the header")
        records, labels = [], []
        cell_errors: dict[tuple[int, str], str] = {}
        for r, cells in enumerate(rows, start=2):
            values: list[Any] = [None] * width
            any_value = False
            for j, cell in enumerate(cells):
                v = cell.value
                if v is None:
                    continue
                if j >= width or header[j] is None:
                    raise InputError("columns", f"column {j + 1}", f"holds a value in sheet row {r} but has no header")
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
