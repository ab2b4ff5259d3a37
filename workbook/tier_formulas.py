"""The tiered plan written as Excel formulas: the exact expectation over nested tiers and its optimum, live.

:mod:`ckptplan.engine.tiers.model` evaluates the expected wall time of nested checkpoint tiers with
failure classes by a block recursion over the pattern of ``K = every_last`` saves, ``O(m^2)`` block
operations whatever ``K`` (``m`` tiers). This module writes that recursion as cells, one row of
cells per interval ``T`` evaluated (never ``K`` cells), and the optimum of ``T`` at the tiers' stated
``every`` by a fixed number of golden-section steps, as the single-level sheet solves its optimum by
fixed Newton steps (:data:`workbook.formulas.CALCS`). Symbols as in the engine's notes.

Per block (one tiered plan: the baseline's or a design's), :func:`write_tier_block` writes, in a
hidden area of the sheet:

* the design's constants: per tier (``TIER_SLOTS`` rows, a blank one is a tier that does not exist:
  no stall, no failure restored from it, ``every`` = the previous tier's, which is the same
  expectation exactly) the stall and restore (stated, else checkpoint size / the tier's bandwidth as
  :func:`engine.tiers.table.tier_times`), ``every`` and the level ratios ``r_i``; per class the tier
  it restores from (the first listed tier whose ``survives`` names it) and its normalised share;
  ``rho_i``, ``a_H``, ``b_H``, ``c = M sum_j pi_j exp(R_j / M)`` with ``R_j = R' - D + restore`` (``D``
  the downtime, the wait for a node, which the job cannot fail in: the wall time's factor is
  ``(M + D) sum_j pi_j exp(R_j / M)``, :func:`engine.tiers.tiered_wall_per_work`);
* :data:`GOLDEN_STEPS` rows of the golden-section search of :func:`engine.tiers.optimum.best_first_interval`
  over ``log T`` (same bracket: a factor 16 either side of the first-order ``T`` for these everies,
  no shorter than the write ``W (1 - slowdown)``), each row evaluating the recursion at one ``T``:
  windows ``e^{-P/M}``, ``e^{-L/M}``, ``1 - e^{-P/M}`` per end level; a level-0 block
  ``span = f_P / D``, ``first = e^{-P/M} (1 - e^{-W(1-s)/M}) / D``, ``D = a_H e^{-L/M} + b_H
  e^{-P/M}``; a level-``i`` block chains its sub-blocks with the geometric series of the middle ones
  (a Taylor series below ``(r-2) x = 1e-4``), or is its sub-block when ``r_i = 1``; the objective
  ``wall per work = c span / (K T)``;
* :data:`PARABOLA_ROWS` rows finishing the search: the recursion at the best point ``x*`` minus and plus the
  last bracket's width ``h``, and at the vertex of the parabola through the three,
  ``x* + h (f_- - f_+) / (2 (f_- - 2 f* + f_+))`` (kept within ``x* +- h``; ``x*`` itself when the three do not
  curve upward), taken when it is no worse than ``x*`` (successive parabolic interpolation, Brent,
  "Algorithms for Minimization without Derivatives", 1973, ch. 5: the golden section brackets, one
  parabola then lands where twenty-five more golden steps would);
* a row at the write constraint (taken when the optimum sits there, as the engine does), a row at
  the interval the plan uses (the stated ``interval_min``, else the optimum), and the plan's
  figures there: waste, wall hours, every failure (exposed time / ``M``), save, restart and
  rework hours (:func:`engine.tiers.tiered_breakdown`), the mean restart, every tier's interval and
  storage bill (:func:`engine.tiers.table.tiered_columns`).

Precision: the recursion's cells equal the engine's floating-point kernel to about 1e-13 (tested to
1e-9 by :mod:`workbook.evaluate` and LibreOffice). The optimum's ``T``: the objective is flat at its
minimum, so a search that compares values fixes ``T`` to about 1e-7 relative (the engine's: 22 golden steps
and a 27-step polish) and the figures that are flat there (waste, wall time, failures, GPU-hours, money) to
rounding; save and rework hours move with ``T`` itself. This search (20 golden steps to a 3.7e-4 bracket in
``log T``, then the parabola) measured 4.3e-7 at most from the engine's ``T`` over 60 random designs (45 golden
steps alone, the sheet's search until 2026-12-05: 1.0e-5) with 45 % fewer evaluation rows.
Where it stops: the engine redoes rows whose span leaves ``[1e-290, 1e290]`` in log space; the
sheet answers with a readable text there (``check``). The search bracket is not widened: an
optimum at its edge is flagged (``check``) instead of searched further, and the ``every`` are the
stated ones (the engine's ``optimal_tier_intervals`` searches them as integers; a sheet cannot).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from openpyxl.utils import get_column_letter as _letter

from ..engine.roots import INVPHI
from ..engine.storage import HOURS_PER_BILLING_MONTH

__all__ = ["FROM_BLOCK", "GENERIC", "GOLDEN_STEPS", "RESULTS", "SINGLE_LEVEL_ONLY", "block_size", "expm1", "log1p",
           "PLAN_ROWS", "named_tables", "one_minus_exp_neg", "plan_rows", "restart_other", "tiered_expr", "write_tier_block",
           "write_tier_constants", "write_tier_evaluation"]

#: golden-section steps of the optimum (bracket 2 log 16 = 5.5 -> 3.7e-4 in log T), then a parabola
GOLDEN_STEPS = 20
#: evaluation rows of the parabola: the best point minus and plus the last bracket's width, and the vertex
PARABOLA_ROWS = 3
_INVPHI = INVPHI   # the engine's golden-section ratio (engine.roots.golden_rows): the same steps as cells
_HALF = math.log(16.0)
_SERIES_BELOW = 1e-3   # below it 1 - e^-p (and e^z - 1) are written as a Taylor series: error < 1e-14 relative
_NO_FIGURE = '"n/a: see the tiered plan check"'
#: the figures a block returns (key -> label, unit), read by the sheets
RESULTS = {
    "tiered_check": ("Tiered plan check", ""),
    "tiered_optimum_interval_min": ("First tier's interval at the optimum for the stated every (golden section)", "min"),
    "chosen_interval_min": ("First tier's interval the plan uses (interval_min, else the optimum)", "min"),
    "wall_per_work": ("Expected wall time per unit of work", "ratio"),
    "waste_fraction": ("Waste (share of wall time)", "share"),
    "wall_h": ("Expected wall time", "h"),
    "expected_failures": ("Expected failures, restarts included", "failures"),
    "save_h": ("Checkpoint stalls and write slowdown", "h"),
    "restart_h": ("Restarts", "h"),
    "rework_h": ("Rework", "h"),
    "mean_restart_min": ("Mean restart (classes weighted)", "min"),
    "storage_cost": ("Storage cost, all tiers", "money"),
    "stall_derived": ("The first tier's stall is derived from the checkpoint size (not stated)", "TRUE/FALSE"),
}


def one_minus_exp_neg(p: str) -> str:
    """``1 - e^-p`` for ``p >= 0`` without cancellation (a series below 1e-3)."""
    return f"IF({p}<{_SERIES_BELOW!r},{p}*(1-{p}/2*(1-{p}/3*(1-{p}/4))),1-EXP(-{p}))"


def expm1(z: str) -> str:
    """``e^z - 1`` without cancellation (a series below 1e-3 in magnitude)."""
    return f"IF(ABS({z})<{_SERIES_BELOW!r},{z}*(1+{z}/2*(1+{z}/3*(1+{z}/4))),EXP({z})-1)"


def log1p(x: str) -> str:
    """``ln(1 + x)`` to a few ulps (Kahan's ``ln(u) x / (u - 1)``, ``u = 1 + x``)."""
    return f"IF(1+{x}=1,{x},LN(1+{x})*{x}/((1+{x})-1))"


def _geo_series(x: str, n: str) -> str:
    """``sum_{k<n} (1+x)^k`` for ``n x < 1e-4`` (the engine's Taylor form)."""
    return f"{n}*(1+({n}-1)*{x}/2*(1+({n}-2)*{x}/3*(1+({n}-3)*{x}/4)))"


def block_size(tiers: int, classes: int) -> tuple[int, int]:
    """(rows, columns) a block of ``tiers`` tier slots and ``classes`` class slots occupies (title row included)."""
    constants = 6 + 4 * tiers + (tiers - 1) + classes + 1 + 3 * tiers + (tiers - 1) + tiers + 8
    constants += tiers + 4 * tiers * classes + classes + 1 + 1      # restore outcomes (q, per class and tier), eps, work
    figures = 2 + 2 + (len(RESULTS) - 1) + 4 * tiers
    return 1 + max(constants + figures, GOLDEN_STEPS + PARABOLA_ROWS + 4), 3 + _row_width(tiers)


def _closure(m: int) -> list[tuple[int, int, int]]:
    """The blocks (level, start level, end level) the top block needs, both branches of ``r_i = 1``, lowest level first."""
    need, todo = set(), [(m - 1, m - 1, m - 1)]
    while todo:
        b = todo.pop()
        if b in need:
            continue
        need.add(b)
        i, H, g = b
        if i:
            todo += [(i - 1, H, i - 1), (i - 1, i - 1, i - 1), (i - 1, i - 1, g), (i - 1, H, g)]
    return sorted(need)


def _row_width(m: int) -> int:
    """Cells of one evaluation row: left, a, b, x, T, 4 per end level, the blocks, 3 per level's series, the
    objective and the search's state (c, d, fc, fd)."""
    return 5 + 4 * m + sum(2 if i == 0 else 4 for i, _, _ in _closure(m)) + 3 * (m - 1) + 1 + 3 + 4


class _Cells:
    """A writer of formula cells along a row (``put``) or down a column (``const``), returning references."""

    def __init__(self, ws, fmt: str = "General"):
        self.ws, self.fmt = ws, fmt

    def write(self, row: int, col: int, expr: str, absolute: bool) -> str:
        c = self.ws.cell(row=row, column=col, value="=" + expr)
        c.number_format = self.fmt
        L = _letter(col)
        return f"${L}${row}" if absolute else f"{L}{row}"


def _evaluation(put: Callable[[str], str], x: str, k: Mapping[str, str], m: int) -> str:
    """Cells of one evaluation of the recursion at ``T = EXP(x)`` (``put(expr)`` writes the next cell of the row and
    returns its reference); returns the reference of the wall time per unit of work."""
    T = put(f"EXP({x})")
    win = {}
    for g in range(m):
        p = put(f"({T}+{k[f'C{g}']}+{k['W']}*{k['s']})/{k['M']}")
        eP = put(f"EXP(-{p})")
        eL = put(f"EXP(-({T}+{k[f'C{g}']}+{k['W']})/{k['M']})")
        fP = put(one_minus_exp_neg(p))
        win[g] = eP, eL, fP
    blocks: dict[tuple[int, int, int], tuple[str, str]] = {}
    geo: dict[int, tuple[str, str]] = {}
    for i, H, g in _closure(m):
        if i == 0:
            eP, eL, fP = win[g]
            D = f"({k[f'a{H}']}*{eL}+{k[f'b{H}']}*{eP})"
            blocks[0, H, g] = put(f"{fP}/{D}"), put(f"{eP}*{k['exposed']}/{D}")
            continue
        if i not in geo:   # the level's geometric series: (1+x)^n and sum_{k<n} (1+x)^k, x = span rho_{>=i}
            n = f"MAX({k[f'ratio{i}']}-2,0)"
            xx = put(f"{blocks[i - 1, i - 1, i - 1][0]}*{k[f'up{i}']}")
            power = put(f"EXP({n}*{log1p(xx)})")
            geo[i] = power, put(f"IF({n}*{xx}<1E-4,{_geo_series(xx, n)},({expm1(f'{n}*{log1p(xx)}')})/{xx})")
        power, series = geo[i]
        s0, d0 = blocks[i - 1, H, i - 1]
        mid, last = blocks[i - 1, i - 1, i - 1][0], blocks[i - 1, i - 1, g][0]
        rho = "+".join(k[f"rho{v}"] for v in range(i, H + 1))
        w = put(f"1+({rho})*{d0}")
        s_mid = put(f"{s0}*{power}+{mid}*{w}*{series}")
        one = f"{k[f'ratio{i}']}=1"
        prev = blocks[i - 1, H, g]
        blocks[i, H, g] = (put(f"IF({one},{prev[0]},{s_mid}*(1+{last}*{k[f'up{i}']})+{last}*{w})"),
                           put(f"IF({one},{prev[1]},{d0})"))
    span = blocks[m - 1, m - 1, m - 1][0]
    # a restore failing on every tier tried sends the job back to its start: x ((1 + x)^N - 1) / (N x)
    xs = put(f"{k['eps']}*{span}")
    N = put(f"{k['work']}/({k['K']}*{T})")
    grow = put(f"IF({k['eps']}=0,1,({expm1(f'{N}*{log1p(xs)}')})/({N}*{xs}))")
    return put(f"IFERROR({k['cw']}*{span}/({k['K']}*{T})*{grow},9.9E+307)")


#: relative difference of two objective values the search treats as a tie (the first wins, as fc <= fd does)
_TIE = 1e-13


def _no_worse(fc: str, fd: str) -> str:
    """``fc <= fd`` up to :data:`_TIE`: at the flat bottom two evaluators (LibreOffice, workbook.evaluate) may round
    a tie apart, and either branch keeps ``T`` within the search's precision; the engine compares exactly. Written as
    ``fc - fd <= fd tie``: LibreOffice takes two numbers within ~4e-15 of each other as equal, so ``fc <= fd (1 + tie)``
    read TRUE there where an exact comparison reads FALSE (a tie at the tolerance's edge, seen in 2 of 40,000 cells);
    the difference of two close numbers is exact, and it sits far from ``fd tie`` unless the two truly tie."""
    return f"{fc}-{fd}<={fd}*{_TIE!r}"


def _constants(const: Callable[[str, str, str], str], x: Mapping[str, str], tiers: Sequence[Mapping[str, str]],
               classes: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The design's numbers as cells (module notes); ``x``: the column's references, ``tiers``: per slot the cells of
    the tier table (``name``, ``every``, ``survives``, ``checkpoint_stall_min`` ...), ``classes``: (name, share) cells."""
    from .design_formulas import bandwidth, either

    m, k = len(tiers), {}
    for key, label, expr in (("M", "job MTBF", x["job_mtbf_min"]), ("Rp", "restart without the load R'", x["restart_other"]),
                             ("D", "downtime: the wait for a node, the job cannot fail in it", x["downtime_min"]),
                             ("W", "background write", x["async_write_min"]), ("s", "slowdown", x["async_slowdown_fraction"]),
                             ("size", "checkpoint size", x["checkpoint_size_gb"]),
                             ("months_per_h", "billing months per wall hour", f"1/{HOURS_PER_BILLING_MONTH!r}")):
        k[key] = const(key, label, expr)
    n, size = x["writers_used"], k["size"]
    for i, t in enumerate(tiers):
        present = f'{t["name"]}<>""'
        wper, wagg = t["write_gb_s_per_writer"], t["aggregate_write_gb_s"]
        rper, ragg = either(t["read_gb_s_per_writer"], wper), either(t["aggregate_read_gb_s"], wagg)
        k[f"present{i}"] = const(f"present{i}", f"tier {i + 1} given", present)
        k[f"stall{i}"] = const(f"stall{i}", f"tier {i + 1} stall", f'IF({present},{either(t["checkpoint_stall_min"], f"{size}/{bandwidth(wper, wagg, n)}/60")},0)')
        k[f"restore{i}"] = const(f"restore{i}", f"tier {i + 1} restore", f'IF({present},{either(t["restore_min"], f"{size}/{bandwidth(rper, ragg, n)}/60")},0)')
        prev = k[f"every{i - 1}"] if i else "1"
        k[f"every{i}"] = const(f"every{i}", f"tier {i + 1} every", f"IF({present},{t['every']},{prev})")
        if i:
            k[f"ratio{i}"] = const(f"ratio{i}", f"ratio r{i}", f"{k[f'every{i}']}/{k[f'every{i - 1}']}")
    bare = lambda ref: f'SUBSTITUTE({ref}," ","")'  # noqa: E731
    for j, (name, _) in enumerate(classes):
        found = "0"
        for i in reversed(range(m)):
            found = (f'IF(AND({tiers[i]["name"]}<>"",ISNUMBER(FIND(","&{bare(name)}&",",","&{bare(tiers[i]["survives"])}'
                     f'&","))),{i + 1},{found})')
        k[f"rec{j}"] = const(f"rec{j}", f"class {j + 1} restores from tier", f'IF({name}="",0,{found})')
    k["total"] = const("total", "shares' sum", "+".join(f'IF({nm}="",0,{sh})' for nm, sh in classes))
    _outcomes(const, k, tiers, classes, m)
    for i in range(m):
        share = "+".join(k[f"o{j}_{i}"] for j in range(len(classes)))
        k[f"rho{i}"] = const(f"rho{i}", f"share restored from tier {i + 1}" + (", or back to the start" if i == m - 1
                                                                               else ""),
                             share + (f"+{k['eps']}" if i == m - 1 else ""))
    for h in range(m):
        k[f"a{h}"] = const(f"a{h}", f"rho up to tier {h + 1}", "+".join(k[f"rho{v}"] for v in range(h + 1)))
        k[f"b{h}"] = const(f"b{h}", f"rho after tier {h + 1}", "+".join(k[f"rho{v}"] for v in range(h + 1, m)) or "0")
    for i in range(1, m):
        k[f"up{i}"] = const(f"up{i}", f"rho from tier {i + 1} on", "+".join(k[f"rho{v}"] for v in range(i, m)))
    for g in range(m):
        k[f"C{g}"] = const(f"C{g}", f"stall of a save up to tier {g + 1}", "+".join(k[f"stall{v}"] for v in range(g + 1)))
    z = lambda j, i: f"({k['Rp']}-{k['D']}+{k[f'tried{j}_{i}']})/{k['M']}"  # noqa: E731   exposed restart, outcome
    k["S1"] = const("S1", "sum of outcome shares x (e^(R_o/M) - 1)", "+".join(
        f"IF({k[f'o{j}_{i}']}=0,0,{k[f'o{j}_{i}']}*{expm1(z(j, i))})" for j in range(len(classes)) for i in range(m))
        + "+" + "+".join(f"IF({k[f'e{j}']}=0,0,{k[f'e{j}']}*{expm1(z(j, m - 1))})" for j in range(len(classes))))
    k["c"] = const("c", "c = M sum pi_j e^(R_j/M)", f"{k['M']}*(1+{k['S1']})")
    k["cw"] = const("cw", "(M + D) sum pi_j e^(R_j/M): the wall time's factor", f"({k['M']}+{k['D']})*(1+{k['S1']})")
    k["K"] = const("K", "pattern length K", k[f"every{m - 1}"])
    k["work"] = const("work", "useful work (min)", f"{x['useful_training_h']}*60")
    k["exposed"] = const("exposed", "1 - e^(-W(1-s)/M)", one_minus_exp_neg(f"{k['W']}*(1-{k['s']})/{k['M']}"))
    k["floor"] = const("floor", "shortest interval W(1-s)", f"{k['W']}*(1-{k['s']})")
    cost = [f"{k['stall0']}+{k['W']}*{k['s']}"] + [k[f"stall{i}"] for i in range(1, m)]
    num = "+".join(f"({c})/{k[f'every{i}']}" for i, c in enumerate(cost))
    den = "+".join(f"{k[f'rho{i}']}*{k[f'every{i}']}" for i in range(m))
    k["guess"] = const("guess", "first-order T for these everies", f"SQRT(2*({num})/(({den})/{k['M']}))")
    k["lo"] = const("lo", "search from log T", f"IF({k['floor']}>0,MAX(LN({k['guess']})-{_HALF!r},LN({k['floor']})),"
                                              f"LN({k['guess']})-{_HALF!r})")
    k["hi"] = const("hi", "search to log T", f"MAX(LN({k['guess']})+{_HALF!r},{k['lo']}+{_HALF!r})")
    return k


def _outcomes(const: Callable[[str, str, str], str], k: dict[str, str], tiers: Sequence[Mapping[str, str]],
              classes: Sequence[tuple[str, str]], m: int) -> None:
    """The restore outcomes (:func:`engine.tiers.model.restore_outcomes`) as cells: per tier ``q{i}`` = p ** copies;
    per class ``j`` and tier ``i``: ``sv`` (the tier is given and survives the class), ``reach`` (every attempt
    before it failed), ``tried`` (the restores tried up to it) and ``o`` (the share restored from it, normalised);
    per class ``e{j}`` (every attempt failed: back to the start); ``eps`` their sum; ``work`` the useful work (min)."""
    from .design_formulas import either

    bare = lambda ref: f'SUBSTITUTE({ref}," ","")'  # noqa: E731
    for i, t in enumerate(tiers):
        k[f"q{i}"] = const(f"q{i}", f"tier {i + 1}: a restore fails (p ^ copies)",
                           f'IF({k[f"present{i}"]},{either(t["restore_failure_probability"], "0")}^'
                           f'{either(t["copies"], "1")},0)')
    for j, (name, share) in enumerate(classes):
        for i, t in enumerate(tiers):
            k[f"sv{j}_{i}"] = const(f"sv{j}_{i}", f"class {j + 1}: tier {i + 1} survives it", (
                f'IF(AND({name}<>"",{t["name"]}<>"",ISNUMBER(FIND(","&{bare(name)}&",",","&{bare(t["survives"])}'
                f'&","))),1,0)'))
            before = "1" if i == 0 else f"{k[f'reach{j}_{i - 1}']}*IF({k[f'sv{j}_{i - 1}']}=1,{k[f'q{i - 1}']},1)"
            k[f"reach{j}_{i}"] = const(f"reach{j}_{i}", f"class {j + 1}: attempts before tier {i + 1} failed", before)
            tried = f"{k[f'sv{j}_{i}']}*{k[f'restore{i}']}"
            k[f"tried{j}_{i}"] = const(f"tried{j}_{i}", f"class {j + 1}: restores tried up to tier {i + 1}",
                                       tried if i == 0 else f"{k[f'tried{j}_{i - 1}']}+{tried}")
            k[f"o{j}_{i}"] = const(f"o{j}_{i}", f"class {j + 1}: share restored from tier {i + 1}", (
                f'IF({name}="",0,{share}/{k["total"]}*{k[f"sv{j}_{i}"]}*{k[f"reach{j}_{i}"]}*(1-{k[f"q{i}"]}))'))
        k[f"e{j}"] = const(f"e{j}", f"class {j + 1}: every restore failed (back to the start)", (
            f'IF({name}="",0,{share}/{k["total"]}*{k[f"reach{j}_{m - 1}"]}*IF({k[f"sv{j}_{m - 1}"]}=1,'
            f'{k[f"q{m - 1}"]},1))'))
    k["eps"] = const("eps", "share of rollbacks back to the start", "+".join(k[f"e{j}"] for j in range(len(classes))))


def write_tier_block(ws, row: int, col: int, x: Mapping[str, str], tiers: Sequence[Mapping[str, str]],
                     classes: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Write one tiered plan's cells from ``(row, col)`` (:func:`block_size` of them; module notes).

    ``x``: references (same sheet, or defined names) of ``job_mtbf_min``, ``restart_other`` (the restart without
    the checkpoint load), ``downtime_min`` (its wait for a node), ``async_write_min``, ``async_slowdown_fraction``, ``checkpoint_size_gb`` (blank: none),
    ``writers_used``, ``interval_min`` (blank: the optimum), ``useful_training_h``; ``tiers``: per tier slot the
    cells of its table (keys of :data:`ckptplan.engine.fields.TIER_KEYS`); ``classes``: (name, share) cells per
    class slot. Returns the references of :data:`RESULTS` and ``tier<i>_interval_min``,
    ``tier<i>_checkpoint_stall_min``, ``tier<i>_restore_min``, ``tier<i>_storage_cost`` (i = 1, 2, ...).
    """
    m, cells = len(tiers), _Cells(ws)
    ws.cell(row=row, column=col, value="Tiered plan (engine.tiers, as formulas)")
    at = [row + 1]

    def const(key: str, label: str, expr: str) -> str:
        ws.cell(row=at[0], column=col, value=label)
        ref = cells.write(at[0], col + 1, expr, True)
        at[0] += 1
        return ref

    k = _constants(const, x, tiers, classes)
    first = row + 1
    ev = col + 3
    names = ["left", "a", "b", "x"]
    ws.cell(row=row, column=ev, value="Golden-section search over log T: one row per interval evaluated")
    refs: list[dict[str, str]] = []
    G = GOLDEN_STEPS
    last = first + G + 3 + PARABOLA_ROWS   # rows: 2 starts, G steps, the parabola, the write constraint, the plan's
    for r in range(first, last + 1):
        pos = [ev]

        def put(expr: str, r=r, pos=pos) -> str:
            ref = cells.write(r, pos[0], expr, False)
            pos[0] += 1
            return ref

        here = {n: f"{_letter(ev + i)}{r}" for i, n in enumerate(names)}
        step = r - first
        prev = refs[-1] if refs else None
        if step == 0:
            xs = f"{k['hi']}-{_INVPHI!r}*({k['hi']}-{k['lo']})"
            put("TRUE"), put(k["lo"]), put(k["hi"]), put(xs)
        elif step == 1:
            put("FALSE"), put(k["lo"]), put(k["hi"]), put(f"{k['lo']}+{_INVPHI!r}*({k['hi']}-{k['lo']})")
        elif step <= G + 1:
            put(_no_worse(prev["fc"], prev["fd"]))
            put(f"IF({here['left']},{prev['a']},{prev['c']})")
            put(f"IF({here['left']},{prev['d']},{prev['b']})")
            put(f"IF({here['left']},{here['b']}-{_INVPHI!r}*({here['b']}-{here['a']}),"
                f"{here['a']}+{_INVPHI!r}*({here['b']}-{here['a']}))")
        elif step <= G + 4:              # the parabola through the best point and one bracket's width either side
            _parabola_point(put, here, refs, step - G - 2)
        elif step == G + 5:   # the write constraint
            put(_no_worse(prev["fc"], prev["fd"])), put(prev["a"]), put(prev["b"])
            put(f"IF({k['floor']}>0,LN({k['floor']}),IF({here['left']},{prev['c']},{prev['d']}))")
        else:                           # the interval the plan uses
            search = refs[-2]   # the search's best (the parabola's row); prev: the row at the write constraint
            put("TRUE"), put(prev["a"]), put(prev["b"])
            best_x = f"IF({prev['left']},{search['c']},{search['d']})"
            opt = k["T_opt"] = const("T_opt", "optimum T", (   # LN(0) would be an error even inside AND
                f"IF({k['floor']}>0,IF(AND({best_x}-LN({k['floor']})<1E-6,{prev['f']}<="
                f"IF({prev['left']},{search['fc']},{search['fd']})),{k['floor']},EXP({best_x})),EXP({best_x}))"))
            k["T"] = const("T", "T the plan uses", f'IF({x["interval_min"]}<>"",{x["interval_min"]},{opt})')
            put(f"LN({k['T']})")
        f = _evaluation(put, here["x"], k, m)
        state = {"a": here["a"], "b": here["b"], "x": here["x"], "left": here["left"], "f": f}
        if step == 0:
            state.update(c=put(here["x"]), d=put('""'), fc=put(f), fd=put('""'))
        elif step == 1:
            state.update(c=put(prev["c"]), d=put(here["x"]), fc=put(prev["fc"]), fd=put(f))
        elif step <= G + 1:
            L = here["left"]
            state.update(c=put(f"IF({L},{here['x']},{prev['d']})"), d=put(f"IF({L},{prev['c']},{here['x']})"),
                         fc=put(f"IF({L},{f},{prev['fd']})"), fd=put(f"IF({L},{prev['fc']},{f})"))
        elif step == G + 4:   # the search's best: the parabola's vertex if it is no worse, else the best point
            state.update(_parabola_best(put, here, refs[G + 1], f))
        refs.append(state)
    return _figures(const, k, x, tiers, classes, refs)


def _parabola_point(put: Callable[[str], str], here: Mapping[str, str], refs: list[dict[str, str]], k: int) -> None:
    """The ``left, a, b, x`` cells of the parabola's row ``k`` (0: the best point minus the last bracket's width
    ``h``, 1: plus ``h``, 2: the vertex; ``refs[-1 - k]`` is the golden search's last row; module notes)."""
    search = refs[-1 - k]
    put(_no_worse(search["fc"], search["fd"]) if k == 0 else refs[-1]["left"])
    put(search["a"]), put(search["b"])
    best = f"IF({here['left']},{search['c']},{search['d']})"
    h = f"({here['b']}-{here['a']})"
    if k < 2:
        put(f"{best}{'-' if k == 0 else '+'}{h}")
        return
    fb = f"IF({here['left']},{search['fc']},{search['fd']})"
    fm, fp = refs[-2]["f"], refs[-1]["f"]
    curv = f"({fm}-2*{fb}+{fp})"
    put(f"IF({curv}>0,MAX({best}-{h},MIN({best}+{h},{best}+{h}*({fm}-{fp})/(2*{curv}))),{best})")


def _parabola_best(put: Callable[[str], str], here: Mapping[str, str], search: Mapping[str, str],
                   f: str) -> dict[str, str]:
    """The search's best after the parabola (its vertex ``here`` with value ``f`` if no worse than the golden
    search's best point, else that point), as the ``c, fc`` of the state and again as ``d, fd``."""
    fb = f"IF({here['left']},{search['fc']},{search['fd']})"
    best = f"IF({here['left']},{search['c']},{search['d']})"
    take = _no_worse(f, fb)
    c, fc = put(f"IF({take},{here['x']},{best})"), put(f"IF({take},{f},{fb})")
    return {"c": c, "fc": fc, "d": c, "fd": fc}


def _figures(const: Callable[[str, str, str], str], k: dict[str, str], x: Mapping[str, str],
             tiers: Sequence[Mapping[str, str]], classes: Sequence[tuple[str, str]],
             refs: list[dict[str, str]]) -> dict[str, str]:
    """The plan's figures at the interval it uses (the last evaluation row): returns their references."""
    from .design_formulas import either

    m, plan, search = len(tiers), refs[-1], refs[-3]   # the plan's row, the parabola's (the search's best)
    out: dict[str, str] = {}
    best = f"IF({refs[-2]['left']},{search['c']},{search['d']})"
    tol = f"0.01*({k['hi']}-{k['lo']})"
    edge = (f"OR({best}>{k['hi']}-{tol},AND({best}<{k['lo']}+{tol},{k['lo']}>IF({k['floor']}>0,LN({k['floor']}),"
            f"{k['lo']}-1)))")
    every = "&".join(
        f'IF(AND({k[f"present{i}"]},MOD({k[f"every{i}"]},{k[f"every{i - 1}"] if i else 1})<>0),'
        f'"tier {i + 1}\'s every must be a whole multiple of the previous tier\'s; ","")' for i in range(m))
    problems = [f'IF({tiers[0]["name"]}="","the first tier is blank; ","")',
                f'IF({k["every0"]}<>1,"the first tier\'s every must be 1; ","")', every,
                f'IF(ABS({k["total"]}-1)>1E-9,"the class shares must sum to 1; ","")',
                f'IF(ISNUMBER({plan["f"]}),IF({plan["f"]}>1E+300,"the expected wall time overflows: failures are too '
                f'frequent against the saves and restarts; ",""),"a tier\'s stall or restore is missing (give it, or '
                f'parameters_b and the tier\'s bandwidth); ")',
                f'IF(AND({x["interval_min"]}<>"",{x["interval_min"]}<{k["floor"]}),"interval_min is shorter than the '
                f'background write; ","")',
                f'IF(AND({x["interval_min"]}="",{edge}),"the optimum lies at the edge of the search (16x the first-order '
                f'interval): ckptplan searches further; ","")']
    text = const("problems", "problems", "&".join(problems))
    out["tiered_check"] = const("tiered_check", "tiered plan check", f'IF({text}="","OK",{text})')
    ok = f'{text}=""'

    def fig(key: str, label: str, expr: str) -> str:
        out[key] = const(key, label, f"IF({ok},{expr},{_NO_FIGURE})")
        return out[key]

    fig("tiered_optimum_interval_min", "optimum T", k["T_opt"])
    T = fig("chosen_interval_min", "T", k["T"])
    wpw = fig("wall_per_work", "wall per work", plan["f"])
    fig("waste_fraction", "waste", f"1-1/{wpw}")
    wall = fig("wall_h", "wall h", f"{x['useful_training_h']}*{wpw}")
    work = f"{x['useful_training_h']}*60"
    # every failure, restarts included: the exposed time wall M / (M + D) over M (Wald); rollbacks = wall / cw
    fails = fig("expected_failures", "failures, restarts included", f"{wall}*60/({k['M']}+{k['D']})")
    per_save = "+".join(f"{k[f'stall{i}']}/{k[f'every{i}']}" for i in range(m)) + f"+{k['W']}*{k['s']}"
    save = fig("save_h", "save h", f"{work}/{T}*({per_save})/60")
    fig("restart_h", "restart h", f"{wall}*{k['M']}/({k['M']}+{k['D']})*{k['S1']}/(1+{k['S1']})+{k['D']}*{fails}/60")
    fig("rework_h", "rework h", f"MAX({wall}*60/{k['cw']}*{k['M']}-{work}-{save}*60,0)/60")
    fig("mean_restart_min", "mean restart", "+".join(   # over the classes and their restore outcomes
        f"{k[f'o{j}_{i}']}*{k['total']}*({k['Rp']}+{k[f'tried{j}_{i}']})" for j in range(len(classes))
        for i in range(m)) + "+" + "+".join(f"{k[f'e{j}']}*{k['total']}*({k['Rp']}+{k[f'tried{j}_{m - 1}']})"
                                            for j in range(len(classes))))
    bills = []
    for i, t in enumerate(tiers):
        n = i + 1
        fig(f"tier{n}_interval_min", f"tier {n} interval", f"IF({k[f'present{i}']},{T}*{k[f'every{i}']},\"\")")
        fig(f"tier{n}_checkpoint_stall_min", f"tier {n} stall", f"IF({k[f'present{i}']},{k[f'stall{i}']},\"\")")
        fig(f"tier{n}_restore_min", f"tier {n} restore", f"IF({k[f'present{i}']},{k[f'restore{i}']},\"\")")
        bill = (f'IF(OR(NOT({k[f"present{i}"]}),{k["size"]}=""),0,{k["size"]}*{either(t["retention"], "1")}*'
                f'{either(t["copies"], "1")}*{wall}*{k["months_per_h"]}*{either(t["price_per_gb_month"], "0")})')
        bills.append(fig(f"tier{n}_storage_cost", f"tier {n} storage", bill))
    fig("storage_cost", "storage, all tiers", "+".join(bills))
    # as engine.tiers.table.stall_derived: a size given and no stall stated for the first tier
    out["stall_derived"] = const("stall_derived", "first stall derived",
                                 f'AND(ISNUMBER({k["size"]}),{k["size"]}>0,{tiers[0]["checkpoint_stall_min"]}="")')
    return out


# ------------------------------------------------------------------------------------ the tiered curve

def write_tier_constants(ws, row: int, col: int, x: Mapping[str, str], tiers: Sequence[Mapping[str, str]],
                         classes: Sequence[tuple[str, str]]) -> tuple[dict[str, str], int]:
    """The design's constants of :func:`write_tier_block` alone (label in ``col``, formula in ``col + 1``, one per
    row from ``row``): the recursion at a given interval needs them, not the search. Returns their references
    (keys as the block's) and the next free row."""
    cells, at = _Cells(ws), [row]

    def const(key: str, label: str, expr: str) -> str:
        ws.cell(row=at[0], column=col, value=label)
        ref = cells.write(at[0], col + 1, expr, True)
        at[0] += 1
        return ref

    return _constants(const, x, tiers, classes), at[0]


def write_tier_evaluation(ws, row: int, col: int, k: Mapping[str, str], m: int, interval: str) -> tuple[str, int]:
    """The recursion at the first tier's interval ``interval`` (a formula, min) along ``row`` from ``col``, over the
    constants ``k`` of :func:`write_tier_constants` (``m`` tier slots): the cells of one row of the block's search.
    Returns the reference of the expected wall time per unit of work (``IFERROR``: 9.9E+307 where it overflows) and
    the next free column."""
    cells, pos = _Cells(ws), [col]

    def put(expr: str) -> str:
        ref = cells.write(row, pos[0], expr, False)
        pos[0] += 1
        return ref

    x = put(f"LN({interval})")
    return _evaluation(put, x, k, m), pos[0]


# ------------------------------------------------------------------------------------ a sheet's tiered columns

#: plan rows a tiered column takes from its block
FROM_BLOCK = ("chosen_interval_min", "waste_fraction", "expected_failures", "wall_h", "save_h", "restart_h", "rework_h")
#: plan and money rows whose single-level formula (:data:`workbook.design_formulas.PLAN_CALCS`) holds for a tiered
#: column once the rows above are its own (GPUs, GPU-hours and money by category, goodput, spares, the total)
GENERIC = ("useful_h", "gpus", "job_gpu_hours", "useful_gpu_hours", "save_gpu_hours", "rework_gpu_hours",
           "restart_gpu_hours", "compute_cost", "useful_cost", "save_cost", "rework_cost", "restart_cost", "goodput",
           "billing_months", "spare_gpu_hours", "total_gpu_hours", "spare_cost", "total_cost", "cost_per_useful_gpu_hour")
#: what a tiered column shows in a single-level figure's row (Young, Daly, the analytic deadline answer ...)
SINGLE_LEVEL_ONLY = "single level only"


def tiered_expr(key: str, block: Mapping[str, str], refs: Mapping[str, str], expr: Callable[[Mapping[str, str]], str],
                never: str) -> str | None:
    """The formula of plan row ``key`` in a tiered column (``block``: its :func:`write_tier_block` references,
    ``refs``: the column's references, ``expr``: the row's single-level formula, ``never``: the text of a plan the
    model cannot answer); None for a single-level-only figure."""
    if key in FROM_BLOCK:
        return block[key]
    if key == "model_ok":
        return f'{block["tiered_check"]}="OK"'
    if key == "storage_cost":
        return f'IF(ISNUMBER({refs["wall_h"]}),{block["storage_cost"]},{never})'
    return expr(refs) if key in GENERIC else None


def restart_other(stated_restart: str, refs: Mapping[str, str]) -> str:
    """The restart without the checkpoint load, ``R'`` (:func:`engine.setup.plan_setup`'s tiered plan): a stated
    ``restart_min``, else the restart pipeline's parts but the load, else 0; each class adds its tier's restore."""
    return (f'IF({stated_restart}<>"",{stated_restart},IF({refs["parts_given"]}="yes",'
            f'{refs["restart_pipeline_min"]}-{refs["part_load_min"]},0))')


def named_tables(tier_prefix: str, class_prefix: str, tiers: int, classes: int) -> tuple[list[dict[str, str]],
                                                                                          list[tuple[str, str]]]:
    """The defined names of a tier table (``<tier_prefix><i>_<key>``) and a class table (``<class_prefix><j>_name``
    and ``_share``), i and j from 1."""
    from ..engine.fields import TIER_KEYS

    return ([{key: f"{tier_prefix}{i + 1}_{key}" for key in TIER_KEYS} for i in range(tiers)],
            [(f"{class_prefix}{j + 1}_name", f"{class_prefix}{j + 1}_share") for j in range(classes)])


#: the Plan sheet's rows of a tiered baseline's plan: key -> (label, unit, format, name of the baseline's figure on
#: the Storage & recovery sheet)
PLAN_ROWS = {
    "chosen_interval_min": ("First tier's interval: the optimum at the stated every (tiered)", "min", "#,##0.00",
                            "setup_chosen_interval_min"),
    "waste_fraction": ("Waste (tiered)", "share", "0.00%", "setup_waste_fraction"),
    "expected_failures": ("Expected failures, restarts included (tiered)", "failures", "#,##0.0",
                          "setup_expected_failures"),
    "wall_h": ("Expected wall time (tiered)", "h", "#,##0.0", "setup_wall_h"),
    "total_gpu_hours": ("GPU-hours, total = job + spares (tiered)", "GPU-h", "#,##0", "setup_total_gpu_hours"),
    "compute_cost": ("Cost of the job's GPU time (tiered)", "money", "#,##0", "setup_compute_cost"),
    "storage_cost": ("Storage, all tiers", "money", "#,##0", "setup_storage_cost"),
    "spare_cost": ("Spares", "money", "#,##0", "setup_spare_cost"),
    "total_cost": ("Total cost = job GPU time + storage + spares (tiered)", "money", "#,##0", "setup_total_cost"),
    "cost_per_useful_gpu_hour": ("Cost per useful GPU-hour (tiered)", "money/GPU-h", "#,##0.0000",
                                 "setup_cost_per_useful_gpu_hour"),
}


def plan_rows(wb, ws, row: int, currency: str) -> int:
    """The Plan sheet's rows of a baseline with checkpoint tiers, from ``row``: its tiered plan, the plan it follows
    (live: the baseline column of Storage & recovery, named ``tiered_<key>`` here), the key figures highlighted;
    returns the next free row."""
    from openpyxl.styles import Alignment, Font

    from . import style as S

    head = ws.cell(row=row, column=1, value="The plan: checkpoint tiers at their stated every (tiered model, Benoit "
                   "et al. 2017; live, from the Storage & recovery sheet)")
    head.font, head.alignment = Font(bold=True), Alignment(wrap_text=True, vertical="top")
    ws.row_dimensions[row].height = S.LINE_HEIGHT * S.text_lines(head.value, 62, bold=True)   # column A: 62 wide
    row += 1
    for key, (label, unit, fmt, source) in PLAN_ROWS.items():
        ws.cell(row=row, column=1, value=label)
        ws.cell(row=row, column=2, value=f"={source}").number_format = fmt
        ws.cell(row=row, column=3, value=S.fmt_unit(unit, currency))
        ws.cell(row=row, column=4, value=f"tiered_{key}").font = S.NOTE_FONT
        if key in _KEY_ROWS:
            for c in range(1, 4):
                ws.cell(row=row, column=c).fill = S.KEY_FILL
            ws.cell(row=row, column=1).font = Font(bold=True)
        S.name(wb, f"tiered_{key}", ws.title, f"B{row}")
        row += 1
    return row


#: the tiered rows the Plan sheet highlights (the figures a planner reads first)
_KEY_ROWS = ("chosen_interval_min", "waste_fraction", "wall_h", "total_gpu_hours", "total_cost")
