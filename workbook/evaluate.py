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
from openpyxl.utils.cell import SHEETRANGE_RE

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


#: a literal of a formula: text in quotes, a number, a cell reference (``$`` parts allowed) or a name (not a
#: function's), read where the token pattern would read one. Formulas that differ only in their literals (one table
#: column's formulas, a chain of rows differing in a constant, rows naming different inputs) have one shape, parsed
#: and compiled once: :func:`_shape`.
_LITERAL = re.compile(r'''(?=["\d.$A-Za-z_])("[^"]*(?:""[^"]*)*"|(?<![\w.$])(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?'''
                      r'''|\$?[A-Z]{1,3}\$?\d+(?![\w(.])|[A-Za-z_][\w.]*(?![\w.(])))''')
#: what stands for a literal in a shape: read as a name by the token pattern, spaces keep it apart from its neighbours
_SLOT = "__slot__"


def _shape(formula: str) -> tuple[str, list[str]]:
    """(shape, literals): ``formula`` with each literal replaced by :data:`_SLOT`, and the literals in order.
    One regular-expression split, no Python call per literal."""
    parts = _LITERAL.split(formula)
    return f" {_SLOT} ".join(parts[0::2]), parts[1::2]


def _literal(text: str) -> tuple:
    """A literal as a node: ``("const", value)`` for text, numbers, TRUE and FALSE, ``("ref", coordinate)`` for a
    cell, ``("name", name)`` for a defined name."""
    if text[0] == '"':
        return ("const", text[1:-1].replace('""', '"'))
    m = _REF.fullmatch(text)
    if m is not None:
        return ("ref", f"{m.group(1)}{int(m.group(2))}")
    if text[0].isdigit() or text[0] == ".":
        return ("const", float(text))
    upper = text.upper()
    if upper in ("TRUE", "FALSE"):
        return ("const", upper == "TRUE")
    return ("name", text)


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
        self.slots = 0   # literals met so far (:data:`_SLOT` names, in order)

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
        if kind == "ref":  # a reference :data:`_LITERAL` did not take as a literal
            m = _REF.fullmatch(value)
            return ("ref", f"{m.group(1)}{int(m.group(2))}")
        if kind == "name":
            if value == _SLOT:
                self.slots += 1
                return ("slot", self.slots - 1)
            upper = value.upper()
            if upper in ("TRUE", "FALSE"):
                return ("const", upper == "TRUE")
            return ("name", value)
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


# ------------------------------------------------------------------------------- evaluation

#: a sheet with more formula cells than this (a Scenarios sheet of thousands of rows) is left to
#: recalculate on open: the evaluator takes about 0.03-0.05 ms per cell (benchmarks/bench_workbook_seed.py)
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
            m = SHEETRANGE_RE.fullmatch(defn.value or "")   # one sheet's cell or range, as openpyxl reads it
            dests = [(m.group("notquoted") or m.group("quoted"), m.group("cells"))] if m is not None else \
                list(defn.destinations)                    # anything else: openpyxl's tokenizer
            if len(dests) == 1:
                self.names[name] = (dests[0][0], dests[0][1].replace("$", ""))
        self.raw: dict[tuple[str, str], Any] = {}
        self.order: list[tuple[str, str]] = []
        for ws in wb.worksheets:
            title = ws.title
            cells = ws._cells   # the cells openpyxl holds, by (row, column): iter_rows would make every blank one
            for at in sorted(cells):
                c = cells[at]
                value = c.value
                if value is not None:
                    key = (title, c.coordinate)
                    self.raw[key] = value
                    if c.data_type == "f" and isinstance(value, str) and value.startswith("="):
                        self.order.append(key)
        self.formula_keys = set(self.order)
        self.memo: dict[tuple[str, str], Any] = {}
        self.parsed: dict[str, Compiled] = {}    # shape -> its compiled formula (literals as slots)
        self.literals: dict[str, tuple] = {}     # literal text -> node
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
            shape, texts = _shape(text[1:])   # formulas differing only in literals share one shape: parsed once
            tree = self.parsed.get(shape)
            if tree is None:
                tree = self.parsed[shape] = _compile(_parse_shape(shape, len(texts)))
            known = self.literals
            slots = [known.get(t) or known.setdefault(t, _literal(t)) for t in texts]
            value = tree(self, key[0], slots)
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


def _parse_shape(shape: str, literals: int) -> tuple:
    """The parsed tree of a shape of ``literals`` literals; #NAME? when the shape holds another :data:`_SLOT` (the
    formula's own text held the name outside a literal, where it cannot be read anyway)."""
    parser = _Parser(_tokens(shape))
    tree = parser.parse()
    if parser.slots != literals:
        raise _ExcelError(f"#NAME? {_SLOT}")
    return tree


#: a compiled formula: (book, sheet, the cell's literals as nodes) -> value
Compiled = Callable[["_Book", str, list], Any]


def _compile(node: tuple) -> Compiled:
    """A parsed formula ``node`` as nested Python closures, built once per shape and called for every cell of that
    shape: the tree is not walked again. Excel's rules as :func:`_operate` and :data:`FUNCTIONS` state them; operands
    are evaluated left to right before an operator applies, ``IF`` and the error functions evaluate lazily."""
    kind = node[0]
    if kind == "slot":
        i = node[1]

        def slot(book: _Book, sheet: str, slots: list) -> Any:
            kind, value = slots[i]
            if kind == "const":
                return value
            return book.cell((sheet, value)) if kind == "ref" else book.named(value)
        return slot
    if kind == "const":
        value = node[1]
        return lambda book, sheet, slots: value
    if kind == "ref":
        coordinate = node[1]
        return lambda book, sheet, slots: book.cell((sheet, coordinate))
    if kind == "name":
        name = node[1]
        return lambda book, sheet, slots: book.named(name)
    if kind == "neg":
        inner = _compile(node[1])
        return lambda book, sheet, slots: -_number(inner(book, sheet, slots))
    if kind == "op":
        op, left, right = node[1], _compile(node[2]), _compile(node[3])

        def operate(book: _Book, sheet: str, slots: list) -> Any:
            a = left(book, sheet, slots)
            return _operate(op, a, right(book, sheet, slots))
        return operate
    if kind == "call":
        return _compile_call(node[1], [_compile(a) for a in node[2]])

    def unknown(book: _Book, sheet: str, slots: list) -> Any:
        raise _ExcelError(f"#NAME? {kind}")
    return unknown


def _compile_call(fname: str, args: list[Compiled]) -> Compiled:
    """A function call of :func:`_compile`: ``IF`` and ``IFERROR``/``ISNUMBER``/``ISERROR`` lazily (an error is a
    value to the latter: the fallback, FALSE, TRUE), the others from :data:`FUNCTIONS` (#NAME? when unknown, raised
    only if the call is reached)."""
    if fname == "IF":
        def if_(book: _Book, sheet: str, slots: list) -> Any:
            if _number(args[0](book, sheet, slots)):
                return args[1](book, sheet, slots) if len(args) > 1 else True
            return args[2](book, sheet, slots) if len(args) > 2 else False
        return if_
    if fname in ("IFERROR", "ISNUMBER", "ISERROR"):
        def guarded(book: _Book, sheet: str, slots: list) -> Any:
            try:
                value = args[0](book, sheet, slots)
            except (_ExcelError, ZeroDivisionError, OverflowError) as exc:
                if fname == "ISERROR" and str(exc).startswith("#NAME?"):  # what this evaluator cannot read
                    raise
                return args[1](book, sheet, slots) if fname == "IFERROR" else fname == "ISERROR"
            return value if fname == "IFERROR" else FUNCTIONS[fname](value) if fname == "ISNUMBER" else False
        return guarded
    function = FUNCTIONS.get(fname)
    if function is None:
        def unknown(book: _Book, sheet: str, slots: list) -> Any:
            raise _ExcelError(f"#NAME? {fname}")
        return unknown
    return lambda book, sheet, slots: function(*(a(book, sheet, slots) for a in args))


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
