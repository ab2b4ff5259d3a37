"""The failure-phase schedule's exact expectation written as Excel cells: :mod:`engine.phases` as live formulas.

:func:`ckptplan.engine.phases.schedule_expectation` carries the job across each phase boundary with the
expected potential of its state there; :func:`ckptplan.engine.phases.boundary_state_rows` integrates that state
over the time a restart ends by a fixed Gauss-Legendre rule (:data:`ckptplan.engine.phases.QUADRATURE_NODES`
nodes a piece: the two or three pieces of every phase's fold, the first restart of a phase, the restarts in
progress) and follows each node along its failure-free chain to the boundary
(:func:`ckptplan.engine.phases.chain_step`, phase by phase). This module writes the same steps as cells, one
sheet row per node, in hidden columns of the Schedule sheet:

* per schedule row (the rate before phase 1, then every phase slot; a blank slot is no phase): whether it is
  given, its start ``s`` (a blank one: :data:`NEVER_MIN`, never reached), rate ``lambda = f / M``, the
  interval used (the input cell, else the phase's own exact optimum at its rate, live: the Plan sheet's
  Newton steps at ``M / f``; the row before phase 1 takes phase 1's interval when phase 1 starts at 0, so
  that it has no effect, as the engine leaves it out), ``S = T + C``, the cumulative rate ``H`` at its start
  and Daly's constants ``n = e^{lambda S} - 1``, ``Rr``, ``a``, ``rho = a / T``;
* per boundary ``b = s_{j+1}``, in a block of columns of its own: the nodes (each: position, mass, the chain's end ``x`` and its phase, and
  the potentials of phases ``j`` and ``j + 1`` at it, summed down the rows), then ``dw`` (the work
  checkpointed in phase ``j``), whether the job goes on past ``b``, and the work left;
* per row: the expected wall time in the phase, its work, waste, failures (``lambda`` times the time) and
  compute cost, and the schedule's totals.

Every figure equals the engine's ``schedule_expectation`` of the same intervals to rounding (the test
recalculates in LibreOffice after edits and compares to 1e-9). Comparisons that decide a chain's step
carry the engine's :data:`ckptplan.engine.phases.LATTICE_TOL`, so a lattice point on a phase start (a
round interval) falls the same way in numpy, LibreOffice and Excel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from openpyxl.utils import get_column_letter as _letter

from ..engine.phases import LATTICE_TOL, QUADRATURE_NODES, gauss_nodes
from . import formulas as F
from .tier_formulas import expm1, one_minus_exp_neg

__all__ = ["NEVER_MIN", "ROW_COLUMNS", "ScheduleCells", "write_schedule_cells"]

#: the start (minutes) of a phase slot left blank: a boundary the job never reaches (finite, so no cell errs)
NEVER_MIN = 1e12
_TOL = repr(LATTICE_TOL)


@dataclass
class ScheduleCells:
    """References of the cells :func:`write_schedule_cells` wrote (absolute, on the Schedule sheet), per schedule row."""

    given: list[str] = field(default_factory=list)
    start_min: list[str] = field(default_factory=list)
    factor: list[str] = field(default_factory=list)
    own_optimum: list[str] = field(default_factory=list)
    interval: list[str] = field(default_factory=list)
    wall_min: list[str] = field(default_factory=list)
    work_min: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    total_min: str = ""


class _Writer:
    def __init__(self, ws, fmt: str = "General"):
        self.ws, self.fmt = ws, fmt

    def put(self, row: int, col: int, expr, relative: bool = False) -> str:
        c = self.ws.cell(row=row, column=col, value=expr if not isinstance(expr, str) else "=" + expr)
        c.number_format = self.fmt
        return f"{_letter(col)}{row}" if relative else f"${_letter(col)}${row}"


def _own_optimum(w: _Writer, row: int, col: int, C: str, Mj: str) -> str:
    """The phase's own exact optimum at its rate (engine.phases.per_phase_optima): formulas.py's Newton steps."""
    refs = {"stall_ratio": w.put(row, col, f"{C}/{Mj}")}
    refs["newton_y0"] = w.put(row, col + 1, f"MAX(1-SQRT(2*{refs['stall_ratio']}),EXP(-1-{refs['stall_ratio']}))")
    calcs = {c.key: c for c in F.CALCS}
    for k in range(1, F.NEWTON_STEPS + 1):
        refs[f"newton_y{k}"] = w.put(row, col + 1 + k, calcs[f"newton_y{k}"].expr(refs))
    series = calcs["exact_interval_min"].expr(refs | {"job_mtbf_min": Mj, "async_write_min": "0",
                                                      "async_slowdown_fraction": "0"})
    return w.put(row, col + 2 + F.NEWTON_STEPS, series)


def _row_constants(w: _Writer, rows: list[int], col: int, names: dict[str, str], inputs: list[str],
                   out: ScheduleCells) -> dict[str, list[str]]:
    """Per schedule row, the constants (module notes) in hidden columns from ``col``; ``inputs``: the interval cells."""
    M, C, R = names["M"], names["C"], names["R"]
    k: dict[str, list[str]] = {key: [] for key in ("given", "s", "lam", "T", "S", "H", "Rr", "a", "rho", "f")}
    P = len(rows)
    for i, r in enumerate(rows):
        if i == 0:
            given, s, f = w.put(r, col, "TRUE"), w.put(r, col + 1, 0.0), w.put(r, col + 2, 1.0)
        else:
            st, fa = f"phase{i}_start_h", f"phase{i}_rate_factor"
            given = w.put(r, col, f"AND(ISNUMBER({st}),ISNUMBER({fa}),{k['given'][-1]})")
            s = w.put(r, col + 1, f"IF({given},{st}*60,{NEVER_MIN!r})")
            f = w.put(r, col + 2, f"IF({given},{fa},1)")
        lam = w.put(r, col + 3, f"{f}/{M}")
        own = _own_optimum(w, r, col + 4, C, f"({M}/{f})")
        c0 = col + 7 + F.NEWTON_STEPS
        k["given"].append(given), k["s"].append(s), k["lam"].append(lam), k["f"].append(f)
        out.given.append(given), out.start_min.append(s), out.factor.append(f), out.own_optimum.append(own)
        k.setdefault("own", []).append(own)
        k.setdefault("c0", []).append(c0)
    for i, r in enumerate(rows):
        c0 = k["c0"][i]
        chosen = f"IF(ISNUMBER({inputs[i]}),{inputs[i]},{k['own'][i]})"
        if i == 0 and P > 1:   # phase 1 from the start: this row has no length and must change nothing
            chosen = f"IF({k['s'][1]}=0,IF(ISNUMBER({inputs[1]}),{inputs[1]},{k['own'][1]}),{chosen})"
        T = w.put(r, c0, chosen)
        S = w.put(r, c0 + 1, f"{T}+{C}")
        H = w.put(r, c0 + 2, 0.0 if i == 0 else f"{k['H'][-1]}+{k['lam'][i - 1]}*({k['s'][i]}-{k['s'][i - 1]})")
        lam = k["lam"][i]
        n = w.put(r, c0 + 3, expm1(f"{lam}*{S}"))
        Rr = w.put(r, c0 + 4, f"({expm1(f'{lam}*{R}')})/{lam}")
        a = w.put(r, c0 + 5, f"{n}*(1/{lam}+{Rr})")
        rho = w.put(r, c0 + 6, f"{a}/{T}")
        for key, ref in (("T", T), ("S", S), ("H", H), ("Rr", Rr), ("a", a), ("rho", rho)):
            k[key].append(ref)
        out.interval.append(T)
    return k


# node-row columns, relative to the block's first column
_U, _WU, _LO, _HI, _POS, _MASS, _C0, _P0, _K, _STEPS = range(10)


def _tail(P: int) -> dict[str, int]:
    """Columns after the chain steps (2 per boundary's phase: chain start, phase of its end once found)."""
    first = _STEPS + 2 * P
    return {name: first + i for i, name in enumerate(("x", "ph", "Sx", "Tx", "gE", "gS", "cumE", "cumS"))}


def _by_phase(ph: str, values: list[str]) -> str:
    """``values[ph]`` as nested IFs (the evaluator has no INDEX)."""
    text = values[-1]
    for i in range(len(values) - 2, -1, -1):
        text = f"IF({ph}={i},{values[i]},{text})"
    return text


def _phase_of(t: str, k: dict[str, list[str]], upto: int, value) -> str:
    """``value(i)`` of the phase ``i`` wall time ``t`` lies in, among phases ``0..upto`` (searchsorted right - 1)."""
    text = value(0)
    for i in range(1, upto + 1):
        text = f"IF({t}>={k['s'][i]},{value(i)},{text})"
    return text


def _potential(mass: str, x: str, Sx: str, Tx: str, b: str, q: int, k: dict[str, list[str]]) -> str:
    """mass x psi_q of a segment started at ``x`` (interval ``Tx``, segment ``Sx``) at ``b``: the time reward."""
    lam, Rr, a, T = k["lam"][q], k["Rr"][q], k["a"][q], k["T"][q]
    fail = one_minus_exp_neg(f"{lam}*MAX({Sx}-({b}-{x}),0)")
    return f"{mass}*({fail}*(1/{lam}+{Rr})-(1-{fail})*{a}*{Tx}/{T})"


def _restart_potential(mass: str, y: str, R: str, q: int, k: dict[str, list[str]]) -> str:
    lam, Rr = k["lam"][q], k["Rr"][q]
    return f"{mass}*{one_minus_exp_neg(f'{lam}*MAX({R}-{y},0)')}*(1/{lam}+{Rr})"


def _chain(w: _Writer, r: int, col: int, j: int, b: str, k: dict[str, list[str]]) -> tuple[str, str]:
    """The failure-free chain from the node's start to the segment in progress at ``b`` (engine.phases._chain_end_rows):
    per phase, the chain's start (its end once found) and the phase of its end (-1 until found)."""
    c, ph, p0 = f"{_letter(col + _C0)}{r}", "-1", f"{_letter(col + _P0)}{r}"
    for t in range(j + 1):
        end, S = f"MIN({k['s'][t + 1]},{b})", k["S"][t]
        kk = f"CEILING(({end}-{c})/{S}-{_TOL},1)"
        active = f"AND({ph}<0,{p0}<={t},{c}<{end})"
        stop = f"{kk}>({b}-{c})/{S}+{_TOL}"
        c_new = w.put(r, col + _STEPS + 2 * t, f"IF({active},IF({stop},{c}+({kk}-1)*{S},{c}+{kk}*{S}),{c})", True)
        ph = w.put(r, col + _STEPS + 2 * t + 1, f"IF(AND({active},{stop}),{t},{ph})", True)
        c = c_new
    return c, ph


def _pieces(j: int) -> list[tuple]:
    """(kind, phase, which) of every piece of boundary ``j`` (engine.phases.boundary_state_rows' pieces, in another order)."""
    out: list[tuple] = [("atom", 0, 0)]
    for p in range(j + 1):
        out += [("fold", p, which) for which in range(3)]
        if p > 0:
            out.append(("edge", p, 0))
        out.append(("restart", p, 0))
    return out


def _piece_cells(kind: str, p: int, which: int, j: int, names: dict[str, str], k: dict[str, list[str]],
                 cell) -> dict[str, str]:
    """The formulas of one node row of a piece; ``cell(c)``: the row's cell in block column ``c`` (relative)."""
    R = names["R"]
    b, Hb = k["s"][j + 1], k["H"][j + 1]
    sp, lam, S, Hs = k["s"][p], k["lam"][p], k["S"][p], k["H"][p]
    e = f"MIN({k['s'][p + 1]},{b})"
    u, wu, lo, hi, pos, K = cell(_U), cell(_WU), cell(_LO), cell(_HI), cell(_POS), cell(_K)
    width = f"MAX({hi}-{lo},0)*{wu}"
    if kind == "atom":
        return {"mass": f"EXP(-{Hb})", "c0": "0"}
    if kind == "fold":
        D = f"({e}-({sp}+{R}))"
        m = f"INT({D}/{S})"
        r = f"({D}-{m}*{S})"
        gap = f"({b}-{e})"
        land = f"({S}*CEILING({gap}/{S}-{_TOL},1)-{gap})"
        a, c = f"MIN({r},{land})", f"MAX({r},{land})"
        lo_t, hi_t, K_t = [("0", a, f"{m}+1"), (a, c, f"IF({land}<{r},{m}+1,{m})"), (c, S, m)][which]
        dens = (f"{lam}*EXP(-({Hb}-{Hs}-{lam}*({e}-{pos}-{R}-{sp})))*{one_minus_exp_neg(f'{K}*{lam}*{S}')}"
                f"/{one_minus_exp_neg(f'{lam}*{S}')}")
        return {"lo": lo_t, "hi": hi_t, "K": K_t, "pos": f"{lo}+({hi}-{lo})*{u}",
                "mass": f"IF({D}>0,{width}*{dens},0)", "c0": f"{e}-{pos}"}
    if kind == "edge":
        f = f"({pos}-{R})"
        lam_f = _phase_of(f, k, p, lambda i: k["lam"][i])
        H_f = _phase_of(f, k, p, lambda i: f"{k['H'][i]}+{k['lam'][i]}*({f}-{k['s'][i]})")
        return {"lo": f"MAX({sp},{R})", "hi": f"MIN({sp}+{R},{e})", "pos": f"{lo}+({hi}-{lo})*{u}",
                "mass": f"{width}*{lam_f}*EXP(-({Hb}-({H_f})))", "c0": pos}
    return {"lo": f"MAX(0,{b}-{e})", "hi": f"MIN({R},{b}-{sp})", "pos": f"{lo}+({hi}-{lo})*{u}",
            "mass": f"{width}*{lam}*EXP(MIN(0,-({Hb}-{Hs}-{lam}*({b}-{pos}-{sp}))))"}


def _boundary(w: _Writer, row: int, col: int, j: int, names: dict[str, str], k: dict[str, list[str]],
              P: int, nodes: int) -> tuple[int, str, str]:
    """The node rows of boundary ``j`` from ``row``; returns the next row and the potentials of phases ``j`` and
    ``j + 1`` at the boundary (the running sums' last cells)."""
    u, wu = gauss_nodes(nodes)
    tail = _tail(P)
    b = k["s"][j + 1]
    sums: dict[str, list[str]] = {"gE": [], "gS": []}
    for kind, p, which in _pieces(j):
        first = row
        for n in range(1 if kind == "atom" else nodes):
            r = row

            def cell(c: int, r: int = r) -> str:
                return f"{_letter(col + c)}{r}"

            cells = _piece_cells(kind, p, which, j, names, k, cell)
            if kind != "atom":
                w.put(r, col + _U, float(u[n])), w.put(r, col + _WU, float(wu[n]))
            for key, c in (("lo", _LO), ("hi", _HI), ("pos", _POS), ("K", _K), ("mass", _MASS), ("c0", _C0)):
                if key in cells:
                    w.put(r, col + c, cells[key], True)
            mass = cell(_MASS)
            if kind == "restart":
                gE = _restart_potential(mass, cell(_POS), names["R"], j, k)
                gS = _restart_potential(mass, cell(_POS), names["R"], j + 1, k)
            else:
                w.put(r, col + _P0, float(p))
                c, ph = _chain(w, r, col, j, b, k)
                x = w.put(r, col + tail["x"], f"IF({ph}<0,{b},{c})", True)
                phase = w.put(r, col + tail["ph"], f"IF({ph}<0,{j + 1},{ph})", True)
                Sx = w.put(r, col + tail["Sx"], _by_phase(phase, k["S"][:j + 2]), True)
                Tx = w.put(r, col + tail["Tx"], _by_phase(phase, k["T"][:j + 2]), True)
                gE = _potential(mass, x, Sx, Tx, b, j, k)
                gS = _potential(mass, x, Sx, Tx, b, j + 1, k)
            w.put(r, col + tail["gE"], gE, True)
            w.put(r, col + tail["gS"], gS, True)
            row += 1
        for key, cum in (("gE", "cumE"), ("gS", "cumS")):   # the piece's sum on its last row (no long chains)
            L = _letter(col + tail[key])
            sums[key].append(w.put(row - 1, col + tail[cum], "+".join(f"{L}{q}" for q in range(first, row))))
    cumE = w.put(row - 1, col + tail["cumE"] + 2, "+".join(sums["gE"]))
    cumS = w.put(row - 1, col + tail["cumS"] + 2, "+".join(sums["gS"]))
    return row, cumE, cumS


def _flow(w: _Writer, rows: list[int], col: int, k: dict[str, list[str]], psi: list[tuple[str, str]],
          names: dict[str, str], out: ScheduleCells) -> None:
    """Per row, the job's way through the phases (engine.phases.schedule_expectation): the work left on entering, the
    work checkpointed in the phase, whether the job goes on past its end, and the row's wall time, work, failures."""
    P = len(rows)
    w_in, psi_in, go_prev, ends = names["work"], "0", "TRUE", []
    for i, r in enumerate(rows):
        w_i = w.put(r, col, w_in)
        psiS = w.put(r, col + 1, psi_in)
        if i < P - 1:
            L = w.put(r, col + 2, f"{k['s'][i + 1]}-{k['s'][i]}")
            dw = w.put(r, col + 3, f"({L}+{psi[i][0]}-{psiS})/{k['rho'][i]}")
            go = w.put(r, col + 4, f"AND({k['given'][i + 1]},{go_prev},{dw}<{w_i}-{k['T'][i]})")
            w_in = w.put(r, col + 5, f"IF({go},{w_i}-{dw},{w_i})")
            psi_in = psi[i][1]
        else:
            L, dw, go = '""', "0", w.put(r, col + 4, "FALSE")
        end = w.put(r, col + 6, f"AND({go_prev},NOT({go}))")
        tot = w.put(r, col + 7, f"{k['s'][i]}+{k['rho'][i]}*{w_i}+{psiS}")
        out.wall_min.append(w.put(r, col + 8, f"IF({go},{L},IF({end},{tot}-{k['s'][i]},0))"))
        out.work_min.append(w.put(r, col + 9, f"IF({go},{dw},IF({end},{w_i},0))"))
        out.failures.append(w.put(r, col + 10, f"{k['lam'][i]}*{out.wall_min[-1]}"))
        ends.append(f"IF({end},{tot},0)")
        go_prev = go
    out.total_min = w.put(rows[-1] + 1, col + 7, "+".join(ends))


#: hidden columns a schedule row's cells take (constants, the own optimum's Newton steps, the flow)
ROW_COLUMNS = 7 + F.NEWTON_STEPS + 7 + 11


def write_schedule_cells(ws, rows: list[int], col: int, node_row: int, names: dict[str, str], inputs: list[str],
                         nodes: int = QUADRATURE_NODES) -> ScheduleCells:
    """Write the schedule's cells (module notes): per schedule row (sheet ``rows``, one per row of the table) in
    hidden columns from ``col``; the nodes from sheet row ``node_row`` in the columns after them. ``names``: ``M``,
    ``C``, ``R`` (minutes), ``work`` (minutes); ``inputs``: each row's interval cell (blank: its own optimum)."""
    w = _Writer(ws)
    out = ScheduleCells()
    k = _row_constants(w, rows, col, names, inputs, out)
    flow_col = col + 7 + F.NEWTON_STEPS + 7
    node_col = col + ROW_COLUMNS + 1
    block = _STEPS + 2 * len(rows) + 11       # each boundary's nodes in a block of columns of its own, from node_row
    psi = []
    for j in range(len(rows) - 1):
        _, cumE, cumS = _boundary(w, node_row, node_col + j * block, j, names, k, len(rows), nodes)
        psi.append((cumE, cumS))
    _flow(w, rows, flow_col, k, psi, names, out)
    for c in range(col, node_col + (len(rows) - 1) * block):
        ws.column_dimensions[_letter(c)].hidden = True
    return out
