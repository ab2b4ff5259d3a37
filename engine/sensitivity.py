"""Which input moves the bill most (tornado) and where a design stops paying off (break-even).

Both questions re-plan the baseline and its designs at other values of one input, many times. The
plans come from the batch pipeline (:func:`engine.batch.evaluate_rows`), which plans every row of a
table exactly as :func:`engine.setup.plan_setup` plans one scenario with its storage and recovery
setup: a row's derived stall, background write and restart follow its own inputs (bandwidth,
nodes, spares ...), tiers included. All rows of a question go through one call per tier design
(:func:`evaluate_variants`), never a plan per row.

Designs follow their own rule (:class:`engine.designs.Design`): an input the design *sets* stays at
the design's value whatever the baseline's value is (its swing is zero); an input it *scales*
follows the baseline's value times the factor; any other input is the baseline's value.

Tornado (:func:`tornado`)
-------------------------
For each plan (baseline and each design) and each uncertain input (:mod:`engine.uncertainty`), the
plan with that input at its ``low`` and at its ``high``, every other input at its base value. The
swing of an output is the plan at low minus the plan at high (``at_low - at_high``); inputs are
ranked by the size of their swing, per plan and output (rank 1 moves it most). Outputs
(:data:`SWING_OUTPUTS`): ``total_cost``, ``wall_h``, ``goodput`` and ``p_finish_by_deadline``
(single-level plans: analytic; a tiered plan: the tiered Monte Carlo of
:func:`engine.setup.plan_setup` at each end, 2,000 runs with its fixed seed, one simulation per row,
so its swing carries their sampling error of up to about 1.6 percentage points; NaN without a ``deadline_h``). One-at-a-time swings show each input's own effect; they do not show interactions
(two inputs bad together), which the Monte Carlo over inputs does (:mod:`engine.risk`).

Break-even (:func:`break_even`)
-------------------------------
The saving of a design is the baseline's total cost minus the design's, both at the same value
``x`` of one input. Break-even is the ``x`` in ``[lo, hi]`` where the saving is zero: a grid of
candidates finds the sign change nearest the base value, then :func:`engine.roots.solve_rows` refines
every design's root together (one batch of plans per step) until the saving is below 1e-9 of the
baseline's cost. Whole-number inputs (nodes, spares) give the whole value at the edge of the range where the design
pays off (from it upwards, or up to it).
No sign change on the grid: the design pays off over the whole range or never, and the answer says
why (the cost parts that move most at the design's best point in the range). A saving that changes
sign twice between two grid candidates is missed (the grid has :data:`GRID_POINTS` points).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import InputError
from .fields import COST_FIELDS, SETUP_FIELD_BY_NAME, Field
from .spot_rates import replaced_preemption_rates
from .uncertainty import UncertainInput, uncertain_field

__all__ = ["BREAK_EVEN_COLUMNS", "GRID_POINTS", "SWING_OUTPUTS", "TORNADO_COLUMNS", "Variant", "break_even",
           "design_value", "evaluate_variants", "tornado", "variant_table", "variants"]

#: the outputs a tornado swings (each a column of the plan)
SWING_OUTPUTS = ("total_cost", "wall_h", "goodput", "p_finish_by_deadline")
#: candidates per range that break-even searches for a sign change before refining it
GRID_POINTS = 17

#: the columns of :func:`tornado` (name, unit, meaning), declared once
TORNADO_COLUMNS: tuple[Field, ...] = (
    Field("plan", "", "The baseline's name or the design's", "any"),
    Field("input", "", "The uncertain input swung (a scenario or setup field)", "any"),
    Field("output", "", "The plan's figure the swing is measured on", "any"),
    Field("low", "input's unit", "The input's low end", "any"),
    Field("base", "input's unit", "The input's base value (the scenario's)", "any"),
    Field("high", "input's unit", "The input's high end", "any"),
    Field("at_low", "output's unit", "The output with the input at its low end, others at base", "any"),
    Field("at_base", "output's unit", "The output with every input at base", "any"),
    Field("at_high", "output's unit", "The output with the input at its high end, others at base", "any"),
    Field("swing", "output's unit", "at_low - at_high", "any"),
    Field("rank", "", "1 = the input that moves this output most for this plan", "count"),
)
#: the columns of :func:`break_even`, declared once
BREAK_EVEN_COLUMNS: tuple[Field, ...] = (
    Field("design", "", "The design compared with the baseline", "any"),
    Field("input", "", "The input whose value is solved for", "any"),
    Field("break_even", "input's unit", "The input's value where the design's saving is zero (NaN: none in range)",
          "any"),
    Field("pays_off", "", "'below' or 'above' the break-even value, 'always' or 'never' in [lo, hi]", "any"),
    Field("lo", "input's unit", "The range searched, low end", "any"),
    Field("hi", "input's unit", "The range searched, high end", "any"),
    Field("saving_at_lo", "money", "Baseline total_cost - design total_cost with the input at lo", "any"),
    Field("saving_at_hi", "money", "Baseline total_cost - design total_cost with the input at hi", "any"),
    Field("why", "", "The answer in words (and why, when the design never or always pays off)", "any"),
)


@dataclass(frozen=True)
class Variant:
    """A plan to re-plan at other input values: the baseline (``design`` None) or a design applied to it."""

    name: str
    scenario: Any
    setup: Any
    design: Any = None


def variants(scenario: Any, setup: Any = None, designs: Sequence[Any] = ()) -> list[Variant]:
    """The baseline, then each design applied to it (:meth:`Design.apply`, :meth:`Design.apply_setup`)."""
    from .setup import RecoverySetup

    st = setup if setup is not None else RecoverySetup()
    out = [Variant(scenario.name, scenario, st)]
    for d in designs:
        out.append(Variant(d.name, d.apply(scenario), d.apply_setup(st), d))
    return out


def design_value(design: Any, field: str, x: Any) -> np.ndarray:
    """The value a design gives ``field`` when the baseline's is ``x`` (vectorised): its own if it sets it,
    ``x`` times its factor if it scales it, else ``x``."""
    x = np.asarray(x, dtype=float)
    if design is None:
        return x
    if field in design.set:
        return np.full(x.shape, float(design.set[field]))
    if field in design.times:
        return x * float(design.times[field])
    return x


def variant_table(v: Variant, values: Mapping[str, np.ndarray], n: int) -> tuple[pd.DataFrame, dict]:
    """The variant's plan as an ``n``-row scenario table with ``values`` (baseline inputs, mapped through the
    design) in their columns, and the tier options of :func:`engine.batch.evaluate_rows`."""
    from .sweep import sweep_grid

    mtbf = np.asarray(values.get("node_mtbf_h", np.nan), dtype=float).reshape(-1)
    axis = {"node_mtbf_h": [float(mtbf[~np.isnan(mtbf)][0])]} if (~np.isnan(mtbf)).any() else {
        "nodes": [v.scenario.nodes]}
    grid = sweep_grid(v.scenario, setup=v.setup, **axis)   # a swept node MTBF drops the overrides that would hide it
    cols: dict[str, Any] = {}
    for c, val in grid.base.items():
        if isinstance(val, str) or (val is None and c in ("currency", "failure_rate_source", "preemption_rate_source", "name")):
            cols[c] = np.full(n, val, dtype=object)
        else:
            cols[c] = np.full(n, np.nan if val is None else float(val))
    for other, blank in replaced_preemption_rates(values).items():   # a ranged rate: the others dropped
        if other in cols:
            cols[other] = np.full(n, blank, dtype=object) if isinstance(blank, str) else np.full(n, np.nan)
    for f, a in values.items():   # NaN: the variant's own value (a stall or restart its setup derives stays derived)
        x = np.broadcast_to(design_value(v.design, f, a), (n,)).astype(float)
        cols[f] = np.where(np.isnan(x), cols.get(f, np.full(n, np.nan)), x)
    return pd.DataFrame(cols), grid.design_options()


def _tier_key(options: dict) -> str:
    return repr((options.get("tiers"), options.get("failure_classes")))


def evaluate_variants(requests: Sequence[tuple[Variant, Mapping[str, Any]]], strict: bool = True) -> list[pd.DataFrame]:
    """The plans of many (variant, {input: baseline values}) requests, one :func:`engine.batch.evaluate_rows`
    call per tier design (requests without tiers share one call). Each result has one row per value; a NaN
    value is the variant's own (a stall, write or restart its setup derives stays derived).

    ``strict``: a row the engine refuses raises :class:`InputError` naming the plan, the input values and
    the engine's reason; else it comes back with ``status == "error"`` and NaN figures.
    """
    from .batch import evaluate_rows

    groups: dict[str, list[int]] = {}
    tables, options = [], []
    for i, (v, values) in enumerate(requests):
        n = max((np.size(a) for a in values.values()), default=1)
        table, opts = variant_table(v, {f: np.asarray(a, dtype=float) for f, a in values.items()}, n)
        tables.append(table)
        options.append(opts)
        groups.setdefault(_tier_key(opts), []).append(i)
    out: list[Any] = [None] * len(requests)
    for members in groups.values():
        sizes = [len(tables[i]) for i in members]
        joined = pd.concat([tables[i] for i in members], ignore_index=True)
        # derived from the variants' validated scenarios: only the swung cells (and what the setup derives) are checked
        made_from = [requests[i][0].scenario for i in members for _ in range(len(tables[i]))]
        result = evaluate_rows(joined, **options[members[0]], scenarios=made_from)
        starts = np.cumsum([0] + sizes)
        for i, a, b in zip(members, starts[:-1], starts[1:]):
            out[i] = result.iloc[a:b].reset_index(drop=True)
    if strict:
        for (v, values), res in zip(requests, out):
            _raise_refused(v, values, res)
    return out


def _raise_refused(v: Variant, values: Mapping[str, Any], res: pd.DataFrame) -> None:
    bad = np.flatnonzero(res["status"].to_numpy() != "ok")
    if len(bad):
        p = int(bad[0])
        at = ", ".join(f"{f} = {float(np.broadcast_to(a, (len(res),))[p]):g}" for f, a in values.items())
        raise InputError(f"plan {v.name!r} at {at}", None, f"is refused by the engine: {res['error'].iloc[p]}")


def _figure(res: pd.DataFrame, name: str) -> np.ndarray:
    return res[name].to_numpy(dtype=float) if name in res.columns else np.full(len(res), np.nan)


def _check_inputs(inputs: Sequence[UncertainInput]) -> None:
    if not inputs:
        raise InputError("uncertainty", [], "give at least one input range ([uncertainty] table: field = [low, high])")
    names = [u.field for u in inputs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError("uncertainty", dupes[0], "appears twice")


def tornado(scenario: Any, setup: Any = None, designs: Sequence[Any] = (), inputs: Sequence[UncertainInput] = (),
            outputs: Sequence[str] = SWING_OUTPUTS) -> pd.DataFrame:
    """Every input swung from low to high with the others at base, for the baseline and each design
    (module notes): a long table of :data:`TORNADO_COLUMNS`, ranked by ``|swing|`` per plan and output."""
    _check_inputs(inputs)
    k = len(inputs)
    base = {u.field: u.base for u in inputs}
    values = {}
    for j, u in enumerate(inputs):   # row 0: all at base; rows 1 + 2j, 2 + 2j: input j at low, at high
        # NaN: each plan's own value (a stall or restart its setup derives is derived, not stated at the base)
        col = np.full(2 * k + 1, np.nan)
        col[1 + 2 * j], col[2 + 2 * j] = u.low, u.high
        values[u.field] = col
    plans = variants(scenario, setup, designs)
    results = evaluate_variants([(v, values) for v in plans])
    rows = []
    for v, res in zip(plans, results):
        for out in outputs:
            y = _tiered_p_finish(v, inputs) if out == "p_finish_by_deadline" and v.setup.tiers else _figure(res, out)
            for j, u in enumerate(inputs):
                lo, hi = y[1 + 2 * j], y[2 + 2 * j]
                rows.append({"plan": v.name, "input": u.field, "output": out, "low": u.low, "base": base[u.field],
                             "high": u.high, "at_low": lo, "at_base": y[0], "at_high": hi, "swing": lo - hi})
    table = pd.DataFrame(rows, columns=[c.name for c in TORNADO_COLUMNS if c.name != "rank"])
    size = table["swing"].abs().fillna(-1.0)
    table["rank"] = size.groupby([table["plan"], table["output"]]).rank(method="first", ascending=False).astype(int)
    order = {v.name: i for i, v in enumerate(plans)}
    table["_p"], table["_o"] = table["plan"].map(order), table["output"].map({o: i for i, o in enumerate(outputs)})
    return table.sort_values(["_p", "_o", "rank"], kind="stable").drop(columns=["_p", "_o"]).reset_index(drop=True)


def _tiered_p_finish(v: Variant, inputs: Sequence[UncertainInput]) -> np.ndarray:
    """P(finish by the deadline) of a tiered variant at base (row 0) and each input at low and high (rows 1 + 2j,
    2 + 2j), each :func:`engine.setup.plan_setup`'s tiered Monte Carlo (its runs and seed, as ``ckptplan plan``
    reports it); NaN without a deadline. One simulation per row: a tiered plan's P(finish) has no formula."""
    from .setup import DERIVED, plan_setup

    out = np.full(2 * len(inputs) + 1, np.nan)
    if v.scenario.deadline_h is None:
        return out
    out[0] = plan_setup(v.scenario, v.setup).figures["p_finish_by_deadline"]
    for j, u in enumerate(inputs):
        for e, x in enumerate((u.low, u.high)):
            value = float(design_value(v.design, u.field, x))
            value = int(round(value)) if uncertain_field(u.field).integer else value
            sc, st = v.scenario, v.setup
            if u.field in SETUP_FIELD_BY_NAME:
                st = st.replace(**{u.field: value})
            elif u.field.startswith("domain"):   # a failure domain's number: the domain changed, named as before
                from .designs import Design

                sc = Design(sc.name, set={u.field: value}).apply(sc).replace(name=sc.name)
            else:
                sc = sc.replace(**{u.field: value}, **({"job_mtbf_h": None, "failure_rate_source": None}
                                                      if u.field == "node_mtbf_h" else replaced_preemption_rates([u.field])))
                if u.field in DERIVED:   # a range on a derived stall or restart states it (module notes)
                    st = st.replace(stated=frozenset(st.stated) | {u.field})
            out[1 + 2 * j + e] = plan_setup(sc, st).figures["p_finish_by_deadline"]
    return out


# ------------------------------------------------------------------------------------------ break-even

def _grid(lo: float, hi: float, integer: bool) -> np.ndarray:
    """The candidates searched for a sign change: geometric where the range spans a factor 4 or more."""
    if lo > 0 and hi / lo >= 4:
        g = np.geomspace(lo, hi, GRID_POINTS)
    else:
        g = np.linspace(lo, hi, GRID_POINTS)
    g[0], g[-1] = lo, hi
    return np.unique(np.rint(g)) if integer else g


#: the cost parts a break-even answer names (each a :data:`engine.fields.COST_FIELDS` entry)
_PARTS = tuple(f.name for f in COST_FIELDS if f.name not in ("compute_cost", "total_cost", "cost_per_useful_gpu_hour"))


def _savings(plans: Sequence[Variant], field: str, x: np.ndarray, rows: np.ndarray,
             metric: str) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """The saving (baseline minus design ``metric``) of design ``plans[rows[i]]`` at ``x[i]``, each cost
    part's change (design minus baseline) there, and the baseline's ``metric`` at each ``x[i]``; one request
    per design, the baseline's for all ``x``."""
    designs = np.unique(rows)
    requests = [(plans[0], {field: x})] + [(plans[r], {field: x[rows == r]}) for r in designs]
    res = evaluate_variants(requests)
    baseline = _figure(res[0], metric)
    saving = baseline.copy()
    parts = {p: -_figure(res[0], p) for p in _PARTS}
    for r, out in zip(designs, res[1:]):
        at = rows == r
        saving[at] -= _figure(out, metric)
        for p in _PARTS:
            parts[p][at] += _figure(out, p)
    return saving, parts, baseline


def _range(field: str, lo: Any, hi: Any, inputs: Sequence[UncertainInput]) -> tuple[float, float]:
    given = {u.field: u for u in inputs}
    if lo is None or hi is None:
        if field not in given:
            raise InputError("break_even", field, "needs a range: give lo and hi, or an [uncertainty] entry for it")
        lo = given[field].low if lo is None else lo
        hi = given[field].high if hi is None else hi
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"break_even: {field}", [lo, hi], "must be a finite range with lo < hi")
    return lo, hi


def break_even(scenario: Any, setup: Any = None, designs: Sequence[Any] = (), field: str = "node_mtbf_h",
               lo: Any = None, hi: Any = None, inputs: Sequence[UncertainInput] = (),
               metric: str = "total_cost") -> pd.DataFrame:
    """For each design, the value of ``field`` in ``[lo, hi]`` at which its saving against the baseline is
    zero (module notes); the range defaults to the field's ``[uncertainty]`` entry in ``inputs``. A table
    of :data:`BREAK_EVEN_COLUMNS`, one row per design."""
    spec = uncertain_field(field)
    lo, hi = _range(field, lo, hi, inputs)
    if not designs:
        raise InputError("designs", [], "break-even compares designs with the baseline: give at least one")
    plans = variants(scenario, setup, designs)
    grid = _grid(lo, hi, spec.integer)
    m = len(grid)
    nd = len(designs)
    rows = np.repeat(np.arange(1, nd + 1), m)
    s, parts, base_metric = _savings(plans, field, np.tile(grid, nd), rows, metric)
    s = s.reshape(nd, m)
    parts = {p: d.reshape(nd, m) for p, d in parts.items()}
    start = {u.field: u.base for u in inputs}.get(field, getattr(scenario, field, None))
    # the root of saving - tol/2: a saving that stays exactly 0 over part of the range (the design changes
    # nothing there) counts as not paying off; |saving| <= tol at the answer
    # (the baseline at every grid value: planned with the designs' grid above, not again)
    tol = 1e-9 * float(np.nanmax(np.abs(base_metric)))
    k, found = _first_crossing(np.tile(grid, (nd, 1)), s - tol / 2, start)

    def g(x: np.ndarray, r: np.ndarray) -> np.ndarray:
        return _savings(plans, field, x, r + 1, metric)[0] - tol / 2

    idx = np.flatnonzero(found)
    roots = np.full(nd, np.nan)
    if len(idx):
        kk = k[idx]
        roots[idx] = _solve(g, idx, grid[kk], grid[kk + 1], s[idx, kk] - tol / 2, s[idx, kk + 1] - tol / 2, 0.499 * tol,
                            spec.integer)
    out = []
    for i, d in enumerate(designs):
        out.append(_answer(d.name, field, lo, hi, grid, s[i], roots[i], {p: v[i] for p, v in parts.items()},
                           spec.integer))
    return pd.DataFrame(out, columns=[c.name for c in BREAK_EVEN_COLUMNS])


def _first_crossing(grid: np.ndarray, s: np.ndarray, start: Any) -> tuple[np.ndarray, np.ndarray]:
    from .roots import first_bracket

    return first_bracket(grid, s, np.nan if start is None else float(start))


def _solve(g: Any, idx: np.ndarray, a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray, scale: float,
           integer: bool) -> np.ndarray:
    """:func:`engine.roots.solve_rows` over the designs ``idx`` (``g`` takes positions among ``idx``)."""
    from .roots import solve_rows

    def g_sub(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return g(x, idx[rows])

    return solve_rows(g_sub, a, b, fa, fb, ftol=scale, integer=integer)


def _answer(name: str, field: str, lo: float, hi: float, grid: np.ndarray, s: np.ndarray, root: float,
            parts: dict[str, np.ndarray], integer: bool) -> dict[str, Any]:
    """One design's row of :func:`break_even`, with the answer in words."""
    row = {"design": name, "input": field, "break_even": root, "lo": lo, "hi": hi,
           "saving_at_lo": float(s[0]), "saving_at_hi": float(s[-1])}
    if not math.isnan(root):
        below = s[0] > s[-1]
        row["pays_off"] = "below" if below else "above"
        if integer:   # the whole value at the edge on the paying side
            row["why"] = f"{name} pays off {'up to' if below else 'from'} {field} = {root:,.0f}"
        else:
            row["why"] = f"{name} pays off {'while' if below else 'once'} {field} {'<' if below else '>'} {root:,.6g}"
        return row
    best = int(np.nanargmax(s))
    moved = sorted(((p, float(d[best])) for p, d in parts.items() if d[best] != 0), key=lambda t: -abs(t[1]))[:3]
    detail = ", ".join(f"{p} {d:+,.0f}" for p, d in moved)
    if np.nanmin(s) > 0 and not np.isnan(s).any():
        row["pays_off"] = "always"
        row["why"] = (f"{name} pays off over the whole range {field} in [{lo:,.6g}, {hi:,.6g}]: it saves at least "
                      f"{np.nanmin(s):,.0f} ({detail} at {field} = {grid[best]:,.6g})")
    else:
        row["pays_off"] = "never"
        row["why"] = (f"{name} never pays off in {field} in [{lo:,.6g}, {hi:,.6g}], because even at its best point "
                      f"({field} = {grid[best]:,.6g}) it costs {-s[best]:,.0f} more: {detail} against the baseline")
    return row
