"""Values for the formula cells of a generated workbook, so a reader that does not recalculate sees numbers.

openpyxl writes formulas without their results; pandas, previews, mail clients and Python tooling
then read blanks. :func:`cached_values` evaluates every formula cell of a workbook in memory (the
formulas are the engine's, written by :mod:`.formulas`, :mod:`.flags` and the sheet builders) and
:func:`store_cached_values` writes each result into the saved package as the cell's cached value.
Excel and LibreOffice still recalculate on open (``fullCalcOnLoad``); the tests check that the
cached values equal both the engine and LibreOffice's recalculation.

The evaluator covers the subset of Excel the generator writes: numbers, text, booleans, blank
cells, ``+ - * / ^ & = <> < > <= >=``, unary minus, same-sheet cell references (relative or
``$``-absolute), workbook-level defined names, and the functions in :data:`FUNCTIONS`, with
Excel's rules (blank = 0 or "", text sorts above numbers, lazy ``IF``, ``ISERROR`` catching its
argument's error). A cell whose formula uses anything else, or evaluates to an Excel error, is left
without a cached value (it is computed on open, as before).
"""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path
from statistics import NormalDist
from typing import Any, Callable

from openpyxl import Workbook

__all__ = ["FUNCTIONS", "MAX_CACHED_CELLS_PER_SHEET", "cached_values", "store_cached_values"]

_TOKEN = re.compile(r'''\s*(?:
    (?P<str>"(?:[^"]|"")*")
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ref>\$?[A-Z]{1,3}\$?\d+)(?![\w(.])
  | (?P<func>[A-Za-z_][\w.]*)(?=\()
  | (?P<name>[A-Za-z_][\w.]*)
  | (?P<op><>|<=|>=|[-+*/^&=<>(),])
)''', re.VERBOSE)
_REF = re.compile(r"\$?([A-Z]{1,3})\$?(\d+)")
_STRING = re.compile(r'"(?:[^"]|"")*"')
_CELL = re.compile(r'(?<![\w$.])(\$?)([A-Z]{1,3})(\$?)(\d+)(?![\w(.])')
_PLACEHOLDER = re.compile(r"__ref_([ar])(m?\d+)_([ar])(m?\d+)__")


def _column(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def _letters(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


def _relative(formula: str, col: int, row: int) -> str:
    """``formula`` with each cell reference written relative to the host cell (``$`` parts kept absolute):
    the formulas of one column of a table become one text, parsed once. Text in quotes is kept as it is."""
    def ref(m: re.Match) -> str:
        letters = m.group(2)
        if letters is None:   # a string literal
            return m.group(0)
        c = _COLUMNS.get(letters) or _COLUMNS.setdefault(letters, _column(letters))
        r = int(m.group(4))
        cs = f"a{c}" if m.group(1) else f"r{c - col}"
        rs = f"a{r}" if m.group(3) else f"r{r - row}"
        return f"__ref_{cs.replace('-', 'm')}_{rs.replace('-', 'm')}__"  # m: minus (a name holds no '-')

    return _STRING_OR_CELL.sub(ref, formula)


#: column letters -> number, filled as met
_COLUMNS: dict[str, int] = {}
#: a string literal (kept) or a cell reference (group 2: its column letters), in one pass
_STRING_OR_CELL = re.compile(r'"(?:[^"]|"")*"|' + _CELL.pattern)


class _ExcelError(Exception):
    """The formula would give an Excel error value (#VALUE!, #NUM!, #DIV/0!, #NAME?)."""


def _number(v: Any) -> float:
    if v is None:
        return 0.0
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(v)
    except ValueError:
        raise _ExcelError("#VALUE!") from None


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.15g}".replace("e", "E")
    return str(v)


def _rank(v: Any) -> tuple:
    if v is None:
        v = 0.0
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (0, float(v))
    return (1, str(v).lower())


def _compare(op: str, a: Any, b: Any) -> bool:
    if a is None and isinstance(b, str):
        a = ""
    if b is None and isinstance(a, str):
        b = ""
    x, y = _rank(a), _rank(b)
    return {"=": x == y, "<>": x != y, "<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]


def _checked(x: float) -> float:
    if not math.isfinite(x):
        raise _ExcelError("#NUM!")
    return x


def _ln(x: Any) -> float:
    v = _number(x)
    if v <= 0:
        raise _ExcelError("#NUM!")
    return math.log(v)


def _sqrt(x: Any) -> float:
    v = _number(x)
    if v < 0:
        raise _ExcelError("#NUM!")
    return math.sqrt(v)


def _exp(x: Any) -> float:
    try:
        return _checked(math.exp(_number(x)))
    except OverflowError:
        raise _ExcelError("#NUM!") from None


def _ceiling(x: Any, sig: Any = 1.0) -> float:
    s = _number(sig)
    return 0.0 if s == 0 else math.ceil(_number(x) / s) * s


def _mid(s: Any, start: Any, n: Any) -> str:
    i, k = int(_number(start)), int(_number(n))
    if i < 1 or k < 0:
        raise _ExcelError("#VALUE!")
    return _text(s)[i - 1:i - 1 + k]


def _left(s: Any, n: Any = 1.0) -> str:
    k = int(_number(n))
    if k < 0:
        raise _ExcelError("#VALUE!")
    return _text(s)[:k]


def _normsinv(p: Any) -> float:
    v = _number(p)
    if not 0 < v < 1:
        raise _ExcelError("#NUM!")
    return NormalDist().inv_cdf(v)


#: the functions the evaluator knows (everything else leaves a cell uncached): name -> (eager function)
def _poisson(x: Any, mean: Any, cumulative: Any) -> float:
    """POISSON.DIST: ``x`` truncated to a whole number; the mass at ``x`` or the sum up to it (Excel's rules)."""
    n, mu = math.floor(_number(x)), _number(mean)
    if n < 0 or mu < 0:
        raise _ExcelError("#NUM!")
    if n > 1_000_000:   # a sum that long is left to the spreadsheet
        raise _ExcelError("#NUM! too many terms to cache")

    def mass(k: int) -> float:
        if mu == 0:
            return 1.0 if k == 0 else 0.0
        return math.exp(k * math.log(mu) - mu - math.lgamma(k + 1))

    if not bool(_number(cumulative)):
        return mass(n)
    return min(1.0, math.fsum(mass(k) for k in range(n + 1)))


def _find(needle: Any, hay: Any, start: Any = 1.0) -> float:
    """FIND: 1-based position of ``needle`` in ``hay`` from ``start`` (case-sensitive), else #VALUE!."""
    i = _text(hay).find(_text(needle), int(_number(start)) - 1)
    if i < 0 or _number(start) < 1:
        raise _ExcelError("#VALUE!")
    return float(i + 1)


def _mod(n: Any, d: Any) -> float:
    """MOD: ``n - d INT(n / d)`` (the sign of ``d``), #DIV/0! for ``d = 0``."""
    x, y = _number(n), _number(d)
    if y == 0:
        raise _ExcelError("#DIV/0!")
    return x - y * math.floor(x / y)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "MOD": _mod,
    "_XLFN.POISSON.DIST": _poisson, "POISSON": _poisson, "FIND": _find,
    "SUBSTITUTE": lambda text, old, new: _text(text).replace(_text(old), _text(new)) if _text(old) else _text(text),
    "EXP": _exp, "LN": _ln, "SQRT": _sqrt, "INT": lambda x: float(math.floor(_number(x))),
    "ABS": lambda x: abs(_number(x)), "CEILING": _ceiling, "MID": _mid, "LEFT": _left,
    "LEN": lambda s: float(len(_text(s))), "EXACT": lambda a, b: _text(a) == _text(b), "ISNUMBER": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
    "NOT": lambda x: not bool(_number(x)), "AND": lambda *a: all(bool(_number(x)) for x in a),
    "OR": lambda *a: any(bool(_number(x)) for x in a),
    "MAX": lambda *a: max(_number(x) for x in a), "MIN": lambda *a: min(_number(x) for x in a),
    "NORMSDIST": lambda x: NormalDist().cdf(_number(x)), "NORMSINV": _normsinv,
    "_XLFN.NORM.S.DIST": lambda x, cumulative=True: NormalDist().cdf(_number(x)),
    "_XLFN.NORM.S.INV": _normsinv,
}


# ------------------------------------------------------------------------------- parsing

def _tokens(formula: str) -> list[tuple[str, str]]:
    out = []
    text = formula.strip()
    pos, end = 0, len(text)
    for m in _TOKEN.finditer(text):
        if m.start() != pos or m.end() == pos:   # a gap: something the token pattern cannot read
            break
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    if pos < end and text[pos:].strip():
        raise _ExcelError(f"#NAME? cannot read {text[pos:].lstrip()[:20]!r}")
    return out


#: binary operators by precedence, loosest first (Excel's order; all left-associative)
_PRECEDENCE = {op: level for level, ops in enumerate((("=", "<>", "<", ">", "<=", ">="), ("&",), ("+", "-"),
                                                       ("*", "/"), ("^",)), start=1) for op in ops}


class _Parser:
    """Precedence climbing: comparison < & < + - < * / < ^ < unary minus (Excel's order)."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.t, self.i, self.n = tokens, 0, len(tokens)

    def peek(self) -> tuple[str, str] | None:
        return self.t[self.i] if self.i < self.n else None

    def take(self) -> tuple[str, str]:
        if self.i >= self.n:
            raise _ExcelError("#NAME? formula ends early")
        self.i += 1
        return self.t[self.i - 1]

    def parse(self) -> tuple:
        node = self.binary(1)
        if self.peek() is not None:
            raise _ExcelError(f"#NAME? unexpected {self.peek()[1]!r}")
        return node

    def binary(self, least: int) -> tuple:
        """An expression whose operators bind at least as tightly as level ``least``."""
        node = self.unary()
        t, n = self.t, self.n
        while self.i < n:
            kind, op = t[self.i]
            level = _PRECEDENCE.get(op, 0) if kind == "op" else 0
            if level < least or not level:
                break
            self.i += 1
            node = ("op", op, node, self.binary(level + 1))
        return node

    def unary(self) -> tuple:
        tok = self.peek()
        if tok == ("op", "-"):
            self.i += 1
            return ("neg", self.unary())
        if tok == ("op", "+"):
            self.i += 1
            return self.unary()
        return self.atom()

    def atom(self) -> tuple:
        kind, value = self.take()
        if kind == "num":
            return ("const", float(value))
        if kind == "str":
            return ("const", value[1:-1].replace('""', '"'))
        if kind == "ref":  # a reference left absolute by _relative ($A$1 with both parts fixed)
            m = _REF.fullmatch(value)
            return ("ref", f"{m.group(1)}{int(m.group(2))}")
        if kind == "name":
            upper = value.upper()
            if upper in ("TRUE", "FALSE"):
                return ("const", upper == "TRUE")
            return _reference(value) or ("name", value)
        if kind == "func":
            self.take()  # (
            args = []
            if self.peek() != ("op", ")"):
                while True:
                    args.append(self.binary(1))
                    if self.peek() == ("op", ","):
                        self.i += 1
                        continue
                    break
            if self.take() != ("op", ")"):
                raise _ExcelError("#NAME? missing )")
            return ("call", value.upper(), args)
        if (kind, value) == ("op", "("):
            node = self.binary(1)
            if self.take() != ("op", ")"):
                raise _ExcelError("#NAME? missing )")
            return node
        raise _ExcelError(f"#NAME? unexpected {value!r}")


def _reference(name: str) -> tuple | None:
    """A cell reference :func:`_relative` wrote as a name, as a node: ``("ref", coordinate)`` when both parts are
    absolute, else ``("ref", None, column, row, column relative, row relative)`` (offsets from the host cell)."""
    m = _PLACEHOLDER.fullmatch(name)
    if m is None:
        return None
    dc, dr = int(m.group(2).replace("m", "-")), int(m.group(4).replace("m", "-"))
    col_rel, row_rel = m.group(1) == "r", m.group(3) == "r"
    if not col_rel and not row_rel:
        return ("ref", f"{_letters(dc)}{dr}")
    return ("ref", None, dc, dr, col_rel, row_rel)


# ------------------------------------------------------------------------------- evaluation

#: a sheet with more formula cells than this (a Scenarios sheet of thousands of rows) is left to
#: recalculate on open: the evaluator takes about 0.1-0.2 ms per cell (benchmarks/bench_workbook.py)
MAX_CACHED_CELLS_PER_SHEET = 50_000


def cached_values(wb: Workbook, max_cells_per_sheet: int = MAX_CACHED_CELLS_PER_SHEET) -> dict[str, dict[str, Any]]:
    """sheet title -> {cell coordinate: value} for every formula cell the evaluator can compute
    (sheets holding more than ``max_cells_per_sheet`` formulas are skipped; cells they feed still
    evaluate)."""
    book = _Book(wb)
    out: dict[str, dict[str, Any]] = {ws.title: {} for ws in wb.worksheets}
    per_sheet: dict[str, int] = {}
    for sheet, _ in book.order:
        per_sheet[sheet] = per_sheet.get(sheet, 0) + 1
    for key in book.order:
        if per_sheet[key[0]] > max_cells_per_sheet:
            continue
        try:
            out[key[0]][key[1]] = book.cell(key)
        except _ExcelError:
            continue
    return out


class _Book:
    """A workbook's cells as the evaluator reads them: defined names, values and formulas (``order``: the formula
    cells, sheet by sheet), each formula's value computed once, on demand (``cell``)."""

    def __init__(self, wb: Workbook):
        self.names: dict[str, tuple[str, str]] = {}
        for name, defn in wb.defined_names.items():
            dests = list(defn.destinations)
            if len(dests) == 1:
                self.names[name] = (dests[0][0], dests[0][1].replace("$", ""))
        self.raw: dict[tuple[str, str], Any] = {}
        self.where: dict[tuple[str, str], tuple[int, int]] = {}
        self.order: list[tuple[str, str]] = []
        for ws in wb.worksheets:
            for row in ws.iter_rows():
                for c in row:
                    if c.value is not None:
                        self.raw[(ws.title, c.coordinate)] = c.value
                        self.where[(ws.title, c.coordinate)] = (c.column, c.row)
                        if c.data_type == "f" and isinstance(c.value, str) and c.value.startswith("="):
                            self.order.append((ws.title, c.coordinate))
        self.formula_keys = set(self.order)
        self.memo: dict[tuple[str, str], Any] = {}
        self.parsed: dict[str, tuple] = {}
        self.busy: set[tuple[str, str]] = set()

    def cell(self, key: tuple[str, str]) -> Any:
        """The value of the cell ``(sheet, coordinate)``: its formula's result (an :class:`_ExcelError` raised),
        or what it holds."""
        if key in self.memo:
            value = self.memo[key]
            if isinstance(value, _ExcelError):
                raise value
            return value
        text = self.raw.get(key)
        if key not in self.formula_keys:  # a value, or text that only looks like a formula (written as text)
            return text
        if key in self.busy:
            raise _ExcelError("#REF! circular")
        self.busy.add(key)
        try:
            col, row = self.where[key]
            form = _relative(text[1:], col, row)   # the formulas of one table column share one text: parsed once
            tree = self.parsed.get(form)
            if tree is None:
                tree = self.parsed[form] = _Parser(_tokens(form)).parse()
            value = self.run(tree, key[0], col, row)
            if isinstance(value, float):
                _checked(value)
            self.memo[key] = value
            return value
        except _ExcelError as exc:
            self.memo[key] = exc
            raise
        except (ZeroDivisionError, OverflowError, RecursionError):
            self.memo[key] = _ExcelError("#NUM!")
            raise self.memo[key] from None
        finally:
            self.busy.discard(key)

    def named(self, name: str) -> Any:
        """The value of the cell a defined name points at (#NAME? for a name the workbook does not define)."""
        where = self.names.get(name)
        if where is None:
            raise _ExcelError(f"#NAME? {name}")
        return self.cell(where)

    def run(self, node: tuple, sheet: str, col: int, row: int) -> Any:
        """The value of a parsed formula ``node`` in the cell at ``col``, ``row`` of ``sheet``."""
        kind = node[0]
        if kind == "const":
            return node[1]
        if kind == "ref":
            if node[1] is not None:
                return self.cell((sheet, node[1]))
            _, _, c, r, col_rel, row_rel = node
            return self.cell((sheet, f"{_letters(c + col if col_rel else c)}{r + row if row_rel else r}"))
        if kind == "name":
            return self.named(node[1])
        if kind == "neg":
            return -_number(self.run(node[1], sheet, col, row))
        if kind == "op":
            return _operate(node[1], self.run(node[2], sheet, col, row), self.run(node[3], sheet, col, row))
        if kind == "call":
            fname, args = node[1], node[2]
            if fname == "IF":
                test = _number(self.run(args[0], sheet, col, row))
                if test:
                    return self.run(args[1], sheet, col, row) if len(args) > 1 else True
                return self.run(args[2], sheet, col, row) if len(args) > 2 else False
            if fname in ("IFERROR", "ISNUMBER", "ISERROR"):   # an error is a value to these: the fallback, FALSE, TRUE
                try:
                    value = self.run(args[0], sheet, col, row)
                except (_ExcelError, ZeroDivisionError, OverflowError) as exc:
                    if fname == "ISERROR" and str(exc).startswith("#NAME?"):  # what this evaluator cannot read
                        raise
                    return self.run(args[1], sheet, col, row) if fname == "IFERROR" else fname == "ISERROR"
                return value if fname == "IFERROR" else FUNCTIONS[fname](value) if fname == "ISNUMBER" else False
            if fname not in FUNCTIONS:
                raise _ExcelError(f"#NAME? {fname}")
            return FUNCTIONS[fname](*(self.run(a, sheet, col, row) for a in args))
        raise _ExcelError(f"#NAME? {kind}")


def _operate(op: str, a: Any, b: Any) -> Any:
    """A binary operator on two values, as Excel computes it (errors as :class:`_ExcelError`)."""
    if op == "&":
        return _text(a) + _text(b)
    if op in ("=", "<>", "<", ">", "<=", ">="):
        return _compare(op, a, b)
    x, y = _number(a), _number(b)
    if op == "+":
        return _checked(x + y)
    if op == "-":
        return _checked(x - y)
    if op == "*":
        return _checked(x * y)
    if op == "/":
        if y == 0:
            raise _ExcelError("#DIV/0!")
        return _checked(x / y)
    try:
        return _checked(float(x ** y))
    except (OverflowError, ValueError, ZeroDivisionError, TypeError):
        raise _ExcelError("#NUM!") from None


def store_cached_values(path: Path, wb: Workbook, values: dict[str, dict[str, Any]]) -> None:
    """Write ``values`` as the cached results of the formula cells of the package ``path`` saved from ``wb``.

    openpyxl saves worksheet ``i`` (in ``wb.worksheets`` order) as ``xl/worksheets/sheet{i+1}.xml``
    and each formula cell as ``<c><f>...</f><v></v></c>``; the value goes into ``<v>`` with the cell
    type Excel expects (``t="str"`` text, ``t="b"`` booleans). The package is rewritten in place.
    """
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    parts = {f"xl/worksheets/sheet{i + 1}.xml": ws.title for i, ws in enumerate(wb.worksheets)}
    tmp = path.with_name(path.name + ".cache")
    try:
        _rewrite(path, tmp, parts, values, ns)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _rewrite(path: Path, tmp: Path, parts: dict[str, str], values: dict[str, dict[str, Any]], ns: str) -> None:
    from lxml import etree

    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            sheet = parts.get(item.filename)
            if sheet is not None and values.get(sheet):
                root = etree.fromstring(data)
                wanted = values[sheet]
                for c in root.iter(f"{{{ns}}}c"):
                    ref = c.get("r")
                    if ref not in wanted or c.find(f"{{{ns}}}f") is None:
                        continue
                    value = wanted[ref]
                    if value is None:  # a formula that points at a blank cell shows 0
                        value = 0.0
                    v = c.find(f"{{{ns}}}v")
                    if v is None:
                        v = etree.SubElement(c, f"{{{ns}}}v")
                    if isinstance(value, bool):
                        c.set("t", "b")
                        v.text = "1" if value else "0"
                    elif isinstance(value, (int, float)):
                        c.attrib.pop("t", None)
                        v.text = repr(float(value))
                    else:
                        c.set("t", "str")
                        v.text = "" if value is None else str(value)
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            dst.writestr(item, data)
