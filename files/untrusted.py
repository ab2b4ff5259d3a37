"""Reading files a user hands us, treated as untrusted: bound everything before any expensive work.

Every scenario-table and scenario-file reader of :mod:`ckptplan.files` goes through these checks,
and every refusal is an :class:`~ckptplan.engine.errors.InputError` naming the file (and the row,
column or cell, when there is one), the value and the rule. The limits:

* :data:`MAX_CELL_CHARS`: characters of one header name or text cell (10,000). A longer one is
  refused as soon as it is read, before any column-name matching ("did you mean ...?") sees it.
* :data:`MAX_INPUT_ROWS`: data rows of one table (blank rows count), the same limit as a sweep
  (:data:`ckptplan.engine.fields.MAX_SWEEP_ROWS`); ``ckptplan batch --max-rows`` raises it.
* :data:`MAX_COLUMNS`: columns of one table (1,000).
* :data:`MAX_LINE_CHARS`: bytes of one line of a CSV file (room for every column at its longest),
  checked in blocks before parsing (:func:`check_line_lengths`): a 200 MB header is refused
  without being read as one line. :func:`plain_csv_layout` counts every line's fields the same way,
  so a file without quotes goes through pandas' fast parser only when no row can shift.
* .xlsx packages (:func:`check_xlsx_package`): at most :data:`MAX_ZIP_MEMBERS` parts; the sum of the
  parts' unpacked sizes below the caller's limit; the shared-strings part (every text cell of every
  sheet, which openpyxl loads whole) at most :data:`MAX_SHARED_STRINGS_BYTES` unpacked; no part with a
  DTD or entity declaration anywhere in its prolog (Office Open XML never carries one); every defined
  name's cell references inside a sheet (rows 1..1,048,576, columns A..XFD). The unpacked sizes are
  the ones the archive declares: Python's zip reader never returns more than a member declares.
* TOML files (:func:`read_toml`): a regular file of at most :data:`MAX_TOML_BYTES`, UTF-8, nested at
  most :data:`MAX_TOML_DEPTH` tables/arrays deep (a scenario file needs 3).
"""

from __future__ import annotations

import codecs
import csv
import os
import re
import stat
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from ..engine.errors import InputError
from ..engine.fields import MAX_SWEEP_ROWS

__all__ = ["CSV_DELIMITERS", "EXCEL_MAX_COLUMNS", "EXCEL_MAX_ROWS", "FileInputError", "MAX_CELL_CHARS", "MAX_COLUMNS",
           "MAX_INPUT_ROWS", "MAX_LINE_CHARS", "MAX_SHARED_STRINGS_BYTES", "MAX_TOML_BYTES", "MAX_TOML_DEPTH",
           "MAX_ZIP_MEMBERS", "check_line_lengths", "check_regular_file", "check_text", "check_xlsx_package",
           "plain_csv_layout", "read_first_line", "read_toml", "sniff_delimiter"]

#: characters of one header name or text cell
MAX_CELL_CHARS = 10_000
#: data rows of one scenario table (``ckptplan batch --max-rows`` raises it)
MAX_INPUT_ROWS = MAX_SWEEP_ROWS
#: columns of one scenario table
MAX_COLUMNS = 1_000
#: bytes of one physical line of a CSV file
MAX_LINE_CHARS = MAX_COLUMNS * (MAX_CELL_CHARS + 3)
#: parts of an .xlsx package
MAX_ZIP_MEMBERS = 10_000
#: unpacked bytes of an .xlsx package's shared-strings part (xl/sharedStrings.xml)
MAX_SHARED_STRINGS_BYTES = 128 * 1024**2
#: bytes of a TOML scenario file
MAX_TOML_BYTES = 32 * 1024**2
#: nesting of tables and arrays in a TOML scenario file
MAX_TOML_DEPTH = 16
#: the separators of a CSV file (detected from its header row, or given)
CSV_DELIMITERS = (",", ";", "\t")
#: an Excel sheet's rows and columns (A..XFD)
EXCEL_MAX_ROWS = 1_048_576
EXCEL_MAX_COLUMNS = 16_384

_PROLOG_LIMIT = 1024**2  # bytes of XML before the first element: more is no workbook
_REF = re.compile(r"!\$?([A-Za-z]{1,4})\$?(\d{1,12})(?::\$?([A-Za-z]{1,4})\$?(\d{1,12}))?")


class FileInputError(InputError):
    """An :class:`InputError` about a file, whose message shows the whole path and the place in it.

    ``str(err)`` reads ``field='PATH', PLACE: rule``, e.g. ``scenario file='runs/q3.csv', row 4: has 8
    fields ...``: a plain :class:`InputError` cuts a long value (the path) at 60 characters, which
    would cut off the file's name. ``field``, ``value`` (the path) and ``rule`` are kept as usual;
    ``place`` is the row, column or cell (or None).
    """

    def __init__(self, field: str, path: Any, rule: str, place: str | None = None):
        super().__init__(field, str(path), rule)
        self.place = place
        self.args = (f"{field}={str(path)!r}{', ' + place if place else ''}: {rule}",)


def check_regular_file(path: str | Path, field: str) -> os.stat_result:
    """The ``stat`` of ``path`` if it is a regular file (after links); else :class:`InputError`.

    A directory, a named pipe (reading it would wait for a writer), a device (``/dev/zero`` never
    ends) or a socket is refused by name; so is a missing or unreachable file.
    """
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise FileInputError(field, path, "file not found") from None
    except OSError as exc:
        raise FileInputError(field, path, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise FileInputError(field, path, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise FileInputError(field, path, "is not a regular file (a pipe, device or socket): save the data to a file")
    return st


def check_text(value: Any, path: Any, place: str, field: str = "scenario file") -> None:
    """Refuse text longer than :data:`MAX_CELL_CHARS` (``place``: its row/column/cell in the file ``path``)."""
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        raise FileInputError(field, path, f"holds {len(value):,} characters, above the limit of {MAX_CELL_CHARS:,} "
                             f"characters per cell (starts {value[:40]!r})", place)


# ====================================================================================== CSV

def check_line_lengths(path: str | Path, field: str) -> None:
    """Refuse a file with a line longer than MAX_LINE_CHARS bytes, reading it in blocks (never a whole line at once)."""
    limit = MAX_LINE_CHARS

    def too_long(line: int) -> FileInputError:
        return FileInputError(field, path, f"is longer than {limit:,} bytes (the limit: {MAX_COLUMNS:,} columns "
                              f"of at most {MAX_CELL_CHARS:,} characters): refusing the file", f"line {line}")

    import numpy as np  # here: `ckptplan --help` loads no numpy

    line, run = 1, 0  # the line being read, and its bytes in the blocks before this one
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
            if len(ends):
                lengths = np.diff(ends, prepend=-1) - 1
                lengths[0] += run
                over = np.flatnonzero(lengths > limit)
                if len(over):
                    raise too_long(line + int(over[0]))
                line += len(ends)
                run = len(block) - 1 - int(ends[-1])
            else:
                run += len(block)
            if run > limit:
                raise too_long(line)


def read_first_line(fh: Any, path: str | Path, field: str) -> str:
    """The header line (lines are at most MAX_LINE_CHARS long: checked before)."""
    try:
        return fh.readline(MAX_LINE_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise FileInputError(field, path, f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} in the header "
                             "row): save it as CSV UTF-8") from None


def sniff_delimiter(line: str, path: str | Path, field: str) -> str:
    """The separator of a CSV file from its header row: the one of :data:`CSV_DELIMITERS` that splits it
    (field names hold none of them); a comma for a one-column file; refused when two split it."""
    counts = {d: len(next(csv.reader([line], delimiter=d), [])) for d in CSV_DELIMITERS}
    splitting = [d for d, n in counts.items() if n > 1]
    if not splitting:
        return ","
    if len(splitting) > 1:
        shown = " and ".join({",": "','", ";": "';'", "\t": "tab"}[d] for d in splitting)
        raise FileInputError(field, path, f"its header row splits on {shown}: cannot tell the separator; give it "
                             "(--delimiter ',', ';' or tab)")
    return splitting[0]


def plain_csv_layout(path: str | Path, delimiter: str, width: int) -> bool:
    """Whether every line is ``width`` fields split by ``delimiter``, with no quote, NUL or lone carriage
    return anywhere (blank lines aside): then pandas' C parser reads exactly the fields counted here."""
    import numpy as np  # here: `ckptplan --help` loads no numpy

    delim = ord(delimiter)
    carry, tail = 0, 0  # delimiters and bytes of the unfinished line
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            arr = np.frombuffer(block, dtype=np.uint8)
            if (arr == 34).any() or (arr == 0).any():
                return False
            crs = np.flatnonzero(arr == 13)
            if len(crs) and (crs[-1] == len(arr) - 1 or (arr[crs + 1 - (crs == len(arr) - 1)] != 10).any()):
                return False  # a carriage return not followed by a newline (or at a block's end: rare, be safe)
            ends = np.flatnonzero(arr == 10)
            counts = np.bincount(np.searchsorted(ends, np.flatnonzero(arr == delim)), minlength=len(ends) + 1)
            counts[0] += carry
            if len(ends):
                lengths = np.diff(ends, prepend=-1) - 1
                lengths[0] += tail
                blank = (lengths == 0) | ((lengths == 1) & (arr[np.maximum(ends - 1, 0)] == 13))
                if ((counts[:-1] != width - 1) & ~(blank & (counts[:-1] == 0))).any():
                    return False
                tail = len(arr) - 1 - int(ends[-1])
            else:
                tail += len(arr)
            carry = int(counts[-1])
        if tail and carry != width - 1:
            return False
    return True


# ====================================================================================== .xlsx

def _prolog_declares_dtd(fh: Any) -> bool:
    """Whether the XML prolog (everything before the first element) holds a DOCTYPE or ENTITY.

    Reads only the prolog, however long its comments; decodes UTF-16/32 by their byte order marks.
    """
    head = fh.read(4)
    encoding = "utf-8"
    for bom, name in ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                      (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            encoding = name
            head = head[len(bom):]
            break
    else:
        if head[:2] in (b"<\x00", b"\x00<"):  # UTF-16 without a byte order mark
            encoding = "utf-16-le" if head[:2] == b"<\x00" else "utf-16-be"
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    text = decoder.decode(head)
    read = len(head)
    while True:
        upper = text.upper()
        if "<!DOCTYPE" in upper or "<!ENTITY" in upper:
            return True
        match = re.search(r"<(?![?!])", _strip_prolog_items(text))
        if match is not None or read > _PROLOG_LIMIT:
            return read > _PROLOG_LIMIT and match is None
        chunk = fh.read(65536)
        if not chunk:
            return False
        read += len(chunk)
        text += decoder.decode(chunk)


def _strip_prolog_items(text: str) -> str:
    """The text with complete comments and processing instructions blanked (their ``<`` is no element)."""
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"<\?.*?\?>", " ", text, flags=re.S)
    # an unfinished comment or instruction at the end: not an element either
    return re.sub(r"<(!--|\?).*\Z", " ", text, flags=re.S)


def _column_number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n


def _check_defined_names(zf: zipfile.ZipFile, field: str, path: Any) -> None:
    """Every defined name's cell references must lie inside a sheet."""
    import xml.etree.ElementTree as ET

    try:
        info = zf.getinfo("xl/workbook.xml")
    except KeyError:
        return
    with zf.open(info) as fh:
        try:
            for _, elem in ET.iterparse(fh):
                if elem.tag.rsplit("}", 1)[-1] != "definedName":
                    continue
                name, text = elem.get("name", "?"), elem.text or ""
                for m in _REF.finditer(text):
                    for letters, digits in ((m.group(1), m.group(2)), (m.group(3), m.group(4))):
                        if letters is None:
                            continue
                        col, row = _column_number(letters), int(digits)
                        if not (1 <= row <= EXCEL_MAX_ROWS and 1 <= col <= EXCEL_MAX_COLUMNS):
                            raise FileInputError(field, path, f"points to {text.strip()[:80]!r}, beyond the sheet (a "
                                                 f"sheet holds rows 1..{EXCEL_MAX_ROWS:,} and columns A..XFD): the "
                                                 "workbook is damaged", f"defined name {name!r}")
                elem.clear()
        except ET.ParseError as exc:
            raise FileInputError(field, path, f"is not a readable .xlsx file: xl/workbook.xml is not XML "
                                 f"({exc})") from None


def check_xlsx_package(path: str | Path, field: str, max_bytes: int, advice: str = "", *,
                       max_shared_strings_bytes: int = MAX_SHARED_STRINGS_BYTES) -> None:
    """Refuse an untrusted .xlsx before any XML parser of openpyxl sees it.

    * not a regular file (a pipe, a device, a directory) or not a zip package -> not a readable workbook;
    * more than :data:`MAX_ZIP_MEMBERS` parts, or more than ``max_bytes`` once unpacked, or a
      shared-strings part above ``max_shared_strings_bytes`` -> a zip bomb (``advice`` is appended);
    * a ``<!DOCTYPE`` or ``<!ENTITY`` in the prolog of any XML part -> refused: Office Open XML never
      carries a DTD, and openpyxl parses some parts with lxml (entities left unresolved) and others
      with defusedxml, so this one check covers entity-expansion and external-entity attacks;
    * a defined name pointing outside the sheet's rows and columns -> a damaged workbook.

    Raises :class:`InputError` naming ``field``, the path and the rule.
    """
    check_regular_file(path, field)
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise FileInputError(field, path, f"holds {len(members):,} parts (limit {MAX_ZIP_MEMBERS:,}): "
                                     f"refusing it{advice}")
            total = sum(m.file_size for m in members)
            if total > max_bytes:
                raise FileInputError(field, path, f"unpacks to {total:,} bytes (limit {max_bytes:,}): "
                                     f"refusing it{advice}")
            for m in members:
                if m.filename.lower().endswith("sharedstrings.xml") and m.file_size > max_shared_strings_bytes:
                    raise FileInputError(field, path, f"its shared-strings part {m.filename} unpacks to "
                                         f"{m.file_size:,} bytes (limit {max_shared_strings_bytes:,}): refusing it{advice}")
            for m in members:
                if m.filename.lower().endswith((".xml", ".rels", ".vml")):
                    with zf.open(m) as fh:
                        if _prolog_declares_dtd(fh):
                            raise FileInputError(field, path, f"was refused as unsafe XML ({m.filename} declares a "
                                                 "DTD or entities, which a workbook never needs)")
            _check_defined_names(zf, field, path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        raise FileInputError(field, path, f"is not a readable .xlsx file: not an .xlsx workbook package "
                             f"({exc})") from None


# ====================================================================================== TOML

def read_toml(path: str | Path, field: str = "scenario file") -> dict:
    """Parse an untrusted TOML file: a regular file, at most :data:`MAX_TOML_BYTES`, UTF-8, nested at
    most :data:`MAX_TOML_DEPTH` deep. Raises :class:`InputError` naming the file and the rule."""
    st = check_regular_file(path, field)
    if st.st_size > MAX_TOML_BYTES:
        raise FileInputError(field, path, f"is {st.st_size:,} bytes (limit {MAX_TOML_BYTES:,} for a TOML file): "
                             "write a large table as CSV or Parquet")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TOML_BYTES + 1)
    except OSError as exc:
        raise FileInputError(field, path, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_TOML_BYTES:
        raise FileInputError(field, path, f"is more than {MAX_TOML_BYTES:,} bytes (the limit for a TOML file)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise FileInputError(field, path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}): "
                             "save it as UTF-8") from None
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FileInputError(field, path, f"is not valid TOML ({exc})") from None
    except RecursionError:
        raise FileInputError(field, path, f"nests arrays or tables too deeply (limit {MAX_TOML_DEPTH} "
                             "levels)") from None
    depth = _depth(parsed)
    if depth > MAX_TOML_DEPTH:
        raise FileInputError(field, path, f"nests tables or arrays {depth} levels deep (limit {MAX_TOML_DEPTH})")
    return parsed


def _depth(value: Any) -> int:
    """Nesting depth of dicts and lists, without recursion (a dotted key can nest arbitrarily deep)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > MAX_TOML_DEPTH:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest
