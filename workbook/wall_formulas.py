"""Excel text of the analytic deadline answer: :mod:`engine.wall_distribution` as spreadsheet formulas.

Builders of formula text over a mapping of references (defined names on the Plan sheet, cell
addresses in table rows), used by the deadline block at the end of
:data:`workbook.formulas.CALCS`. Each step mirrors one expression of
``engine/wall_distribution.py`` (same constants, same series, same order of operations where it
matters), so the recalculated cells equal :func:`engine.evaluate`'s columns
``p_finish_by_deadline``, ``wall_h_p50/p90/p99`` and ``deadline_approximation_ok`` to 1e-9.
Excel has no EXPM1: ``EXP(x)-1`` stands for it (relative difference ~1e-16/x, harmless for the
window lengths a plan has). Lengths are in units of the job MTBF, as in the engine.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..engine import wall_distribution as wd

__all__ = ["WINDOWS", "clean", "cost_ripple", "flow", "geometry", "guard", "k", "probability", "quantile", "restart",
           "total", "x"]

Refs = Mapping[str, str]

#: the attempt lengths whose truncated-exponential cumulants the sheet computes (helper cells)
WINDOWS = {"fc": "full window from a restart", "ff": "full window from a checkpoint",
           "lc": "last window from a restart", "lf": "last window from a checkpoint", "r": "restart"}


def _in(r: Refs) -> dict[str, str]:
    return {"T": r["chosen_interval_min"], "C": r["checkpoint_stall_min"], "W": r["async_write_min"],
            "s": r["async_slowdown_fraction"], "M": r["job_mtbf_min"], "R": f"({r['restart_min']}-{r['downtime_min']})",
            "work": f"{r['useful_training_h']}*60"}


def _d(r: Refs) -> str:
    """The downtime after every failure in MTBFs (the restart's wait for a node: the job cannot fail in it)."""
    return f"({r['downtime_min']}/{r['job_mtbf_min']})"


def geometry(part: str, r: Refs) -> str:
    """Segments, last segment, the skipped checkpoint and the last window (engine.finite.job_geometry, no final save)."""
    v = _in(r)
    T, C, W, s = v["T"], v["C"], v["W"], v["s"]
    n, Tn, skip = r.get("dl_segments"), r.get("dl_last_segment_min"), r.get("dl_skip_last")
    return {
        "segments": f"MAX(CEILING({v['work']}/{T}*(1-1E-14),1),1)",
        "last_segment": f"MIN({v['work']}-({n}-1)*{T},{T})",
        "skip": f"IF(AND({W}>0,{Tn}<{W}*(1-{s}),{n}>=2),1,0)",
        "last_clean": f"IF({skip}=1,{T}+{C}+{Tn}/(1-{s}),{Tn})",
        "last_flow": f"IF({skip}=1,{T}-{W}*(1-{s})+{C}+{Tn}/(1-{s}),{Tn}-{W}*(1-{s}))",
        "last": f"({n}-1-{skip})",
        "failure_free": (f"IF({n}-1-{skip}=0,{r.get('dl_last_clean_min')},{T}+{C}+{W})+MAX({n}-2-{skip},0)*"
                         f"({T}+{C}+{W}*{s})+IF({n}-1-{skip}>=1,{r.get('dl_last_flow_min')},0)"),
    }[part]


def x(window: str, r: Refs) -> str:
    """Attempt length in MTBFs: full window clean/flow, last window clean/flow, restart."""
    v = _in(r)
    return {"fc": f"({v['T']}+{v['C']}+{v['W']})/{v['M']}", "ff": f"({v['T']}+{v['C']}+{v['W']}*{v['s']})/{v['M']}",
            "lc": f"{r.get('dl_last_clean_min')}/{v['M']}", "lf": f"{r.get('dl_last_flow_min')}/{v['M']}",
            "r": f"{v['R']}/{v['M']}"}[window]


def _horner(coefs: tuple, u: str) -> str:
    text = repr(coefs[-1])
    for c in reversed(coefs[:-1]):
        text = f"{c!r}+{u}*({text})"
    return f"({text})"


def k(j: int, window: str, r: Refs) -> str:
    """Cumulant ``j`` of the time to a failure within an attempt (series below SERIES_BELOW, else closed form)."""
    xx = x(window, r)
    u = f"({xx})^2"
    B = f"({xx})/(EXP({xx})-1)"
    series = {1: f"({xx})/2+{u}*{_horner(wd.SERIES_K1, u)}", 2: f"{u}*{_horner(wd.SERIES_K2, u)}",
              3: f"{u}*{u}*{_horner(wd.SERIES_K3, u)}"}[j]
    closed = {1: f"1-{B}", 2: f"1-{B}*({B}+{xx})", 3: f"2-{B}*({B}+{xx})*(2*{B}+{xx})"}[j]
    return f"IF({xx}<{wd.SERIES_BELOW!r},{series},{closed})"


def _geometric(xx: str) -> tuple[str, str, str]:
    E = f"(EXP({xx})-1)"
    return E, f"{E}*EXP({xx})", f"{E}*EXP({xx})*(1+2*{E})"


def _random_sum(n: tuple[str, str, str], v: tuple[str, str, str], j: int) -> str:
    return {1: f"{n[0]}*{v[0]}", 2: f"{n[1]}*{v[0]}^2+{n[0]}*{v[1]}",
            3: f"{n[2]}*{v[0]}^3+3*{n[1]}*{v[0]}*{v[1]}+{n[0]}*{v[2]}"}[j]


def _k(window: str, r: Refs) -> tuple[str, str, str]:
    return tuple(r[f"dl_k{j}_{window}"] for j in (1, 2, 3))


def _D(r: Refs) -> tuple[str, str, str]:
    return tuple(r[f"dl_restart_{j}"] for j in (1, 2, 3))


def restart(j: int, r: Refs) -> str:
    """Cumulant ``j`` of a restart retried until it completes, the downtime before each try included (units of M)."""
    if j == 1:
        return f"EXP({x('r', r)})*(1+{_d(r)})-1"
    k1, k2, k3 = _k("r", r)
    return _random_sum(_geometric(x("r", r)), (f"({k1}+{_d(r)})", k2, k3), j)


def _V(window: str, r: Refs) -> tuple[str, str, str]:
    """Cumulants of the cost of one failure in a clean attempt: time to the failure plus the restart."""
    return tuple(f"({a}+{b})" for a, b in zip(_k(window, r), _D(r)))


def clean(j: int, window: str, r: Refs) -> str:
    """Cumulant ``j`` of a window started clean (window 'fc' or 'lc')."""
    if j == 1:
        return f"(EXP({x(window, r)})-1)*EXP({x('r', r)})*(1+{_d(r)})"
    return _random_sum(_geometric(x(window, r)), _V(window, r), j)


def flow(j: int, windows: str, r: Refs) -> str:
    """Cumulant ``j`` of a window started in flow ('full': fc/ff, 'last': lc/lf): a two-point mixture."""
    c, f = ("fc", "ff") if windows == "full" else ("lc", "lf")
    xc, xf = x(c, r), x(f, r)
    Q = tuple(r[f"dl_clean{i}_{c}"] for i in (1, 2, 3))
    kf, D = _k(f, r), _D(r)
    p, q = f"EXP(-{xf})", f"(1-EXP(-{xf}))"
    if j == 1:
        return f"EXP({xc})*{q}*EXP({x('r', r)})*(1+{_d(r)})"
    A2, A3 = f"({kf[1]}+{D[1]}+{Q[1]})", f"({kf[2]}+{D[2]}+{Q[2]})"
    d = f"(({Q[0]}-{xf})+{kf[0]}+{D[0]})"
    if j == 2:
        return f"{q}*{A2}+{p}*{q}*{d}^2"
    return f"{q}*{A3}+3*{p}*{q}*{A2}*{d}+{p}*{q}*({p}-{q})*{d}^3"


def total(j: int, r: Refs) -> str:
    """Cumulant ``j`` of the job (units of M^j): first window clean, the others in flow."""
    last = geometry("last", r)
    first = f"IF({last}=0,{r[f'dl_clean{j}_lc']},{r[f'dl_clean{j}_fc']})"
    return f"{first}+MAX({last}-1,0)*{r[f'dl_flow{j}_full']}+IF({last}>=1,{r[f'dl_flow{j}_last']},0)"


def cost_ripple(r: Refs) -> str:
    """The lattice indicator of the validity range (engine.wall_distribution, module notes)."""
    v, spread = _V("fc", r), r["dl_k2_fc"]
    m = r["dl_expected_failures"]
    pi = repr(math.pi)  # a literal: the cached-value evaluator (workbook/evaluate.py) has no PI()
    return f"EXP(-2*{pi}^2*{m}*{spread}/{v[0]}^2)/({pi}*SQRT(2*{pi}*{m}))"


def quantile(p: float, r: Refs) -> str:
    """Wall time (minutes) finished by with probability ``p``: translated gamma, Wilson-Hilferty, clamped."""
    h = f"({r['dl_wall_skewness']}/6)"
    v = f"(NORMSINV({p!r})-{h})"
    q = f"{r['dl_wall_mean_min']}+{r['dl_wall_sd_min']}*({v}+{h}*{v}^2+{h}^2*{v}^3/3)"
    w0, p0 = r["dl_failure_free_min"], f"EXP(-{r['dl_failure_free_min']}/{r['job_mtbf_min']})"
    return f"IF({p!r}<={p0},{w0},MAX({q},{w0}))"


def probability(r: Refs) -> str:
    """P(wall <= deadline): translated gamma, Wilson-Hilferty, with the no-failure atom and minimum."""
    d = f"{r['deadline_h']}*60"
    h = f"({r['dl_wall_skewness']}/6)"
    t = f"(({d}-{r['dl_wall_mean_min']})/{r['dl_wall_sd_min']})"
    a = f"(1+3*{h}*{t})"
    u = f"{a}^(1/3)"
    gamma = f"IF({a}>0,NORMSDIST(3*{t}/({u}^2+{u}+1)+{h}),IF({h}>0,0,1))"
    w0, p0 = r["dl_failure_free_min"], f"EXP(-{r['dl_failure_free_min']}/{r['job_mtbf_min']})"
    return f"IF({d}<{w0},0,MAX({p0},{gamma}))"


def guard(expr: str, r: Refs, never: str) -> str:
    """``expr`` where the moments are finite (``dl_in_range``), else the ``never`` text."""
    return f"IF({r['dl_in_range']},{expr},{never})"
