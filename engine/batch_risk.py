"""Input ranges in a scenario table: ``<field>_low`` / ``<field>_high`` columns and what each row's range does.

A batch planner gives one scenario per row; the row's ranges say how wrong its inputs may be, as a
scenario file's ``[uncertainty]`` table does (:mod:`engine.uncertainty`, the same model and rules):

* ``<field>_low`` and ``<field>_high`` (both, or neither) for any numeric scenario or setup field: the
  three-point estimate ``low / base / high`` around the row's own value of ``<field>`` (triangular, its
  mode the base);
* optional ``<field>_dist``: ``triangular``, ``pert``, ``uniform`` or ``lognormal`` (blank: the
  three-point range) and ``<field>_mode`` (a triangular's or PERT's mode; blank: the base).

The base is the value the row's plan uses: the row's cell, or (a stall or restart its setup derives,
a setup field left to its default) the value the batch planned with. Rows may carry different ranges
or none. A malformed range is an ``error`` row naming the cells, the values and the rule
(``node_mtbf_h_low=9000, node_mtbf_h_high=12000: must hold the row's value node_mtbf_h = 6000 (low <=
base <= high)``); its plan's columns, which are valid, are kept, its range columns are NaN.

What a row gains (:data:`RANGE_RESULT_COLUMNS`), chosen for a planner who signs off one row at a time:
how wrong its bill can be, and which assumption to pin down first.

* ``risk_total_cost_p10`` / ``_p50`` / ``_p90`` and ``risk_wall_h_p10`` / ``_p50`` / ``_p90``: input
  uncertainty and failure randomness together, exactly :func:`engine.risk.risk_percentiles` of the row's
  scenario with its ranges (the same ``risk_draws`` input draws and seed for every row: common random
  numbers, so rows compare paired, and a row's answer does not depend on the other rows);
  ``risk_p_finish_by_deadline`` the share of those runs within ``deadline_h``;
* ``top_swing_input`` and ``top_swing_total_cost``: the input whose swing from low to high moves the
  row's total cost most and that swing (at low minus at high), the first line of the row's tornado
  (:func:`engine.sensitivity.tornado`).

All draws of all rows are planned by one :func:`engine.batch.evaluate_rows` call per group of rows
(:data:`ROWS_PER_PASS` scenarios x draws at most), never a plan per row. A tiered design's rows take
input uncertainty only (their failure randomness is simulated, not analytic; :mod:`engine.risk`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from .batch import STATUS_ERROR, STATUS_OK, evaluate_rows
from .errors import InputError
from .fields import DEFAULT_SEED, Field
from .risk import draw_inputs, run_figures
from .uncertainty import RANGE_PARTS, blank_cell, entry_cells, range_column, range_from_cells, uncertain_field

__all__ = ["DEFAULT_BATCH_DRAWS", "RANGES_FROM", "RANGE_RESULT_COLUMNS", "ROWS_PER_PASS", "default_ranges",
           "evaluate_ranges", "range_columns"]

#: input draws per row when none is given (P10 and P90 to about one percentage point of probability)
DEFAULT_BATCH_DRAWS = 1000
#: planned rows (scenarios x (draws + 2 x inputs)) per evaluate_rows call
ROWS_PER_PASS = 200_000

#: the columns a table with ranges gains, declared once
RANGE_RESULT_COLUMNS: tuple[Field, ...] = (
    Field("risk_draws", "", "Input draws behind the row's percentiles (0: the row has no range)", "count"),
    *(Field(f"risk_total_cost_p{q}", "money", f"P{q} of total cost, input ranges and failure randomness together",
            "any") for q in (10, 50, 90)),
    *(Field(f"risk_wall_h_p{q}", "h", f"P{q} of wall hours, input ranges and failure randomness together", "any")
      for q in (10, 50, 90)),
    Field("risk_p_finish_by_deadline", "fraction", "Share of the drawn runs that finish within deadline_h", "any"),
    Field("top_swing_input", "", "The input whose low-to-high swing moves total cost most", "any"),
    Field("top_swing_total_cost", "money", "That input's total-cost swing: at its low minus at its high", "any"),
    Field("ranges_from", "", "The row's ranges that are defaults, and whose ('node_mtbf_h: template seed.toml's "
          "[uncertainty]'); blank: every range is the row's own cells", "any"),
)
#: the text column :func:`default_ranges` writes and the results carry (:data:`RANGE_RESULT_COLUMNS`)
RANGES_FROM = "ranges_from"
_NUMBERS = tuple(c.name for c in RANGE_RESULT_COLUMNS if c.name not in ("top_swing_input", RANGES_FROM))


def range_columns(columns: Any) -> dict[str, dict[str, Any]]:
    """``{field: {part: column}}`` of the table's range columns (``<field>_low`` ...), in the table's order."""
    out: dict[str, dict[str, Any]] = {}
    for c in columns:
        found = range_column(c)
        if found is not None:
            out.setdefault(found[0], {})[found[1]] = c
    return out


def default_ranges(table: pd.DataFrame, entries: Mapping[str, Any], origin: str) -> tuple[pd.DataFrame, dict]:
    """``table`` with the ``[uncertainty]`` ``entries`` (field -> ``[low, high]``, a distribution table or an
    :class:`engine.uncertainty.UncertainInput`) as the default range of every row: a row whose range cells for a
    field are all blank (or absent) takes the entry's cells, one that gives any keeps its own (the table wins, and a
    half-given range is refused as without a default). Filled rows are named in :data:`RANGES_FROM` (``field:
    origin``; an error of that range names it too). Call once per source, the first source winning. Returns the
    table and ``{field: rows filled}``; :class:`InputError` for an entry that is no range of a numeric field."""
    cells = {name: entry_cells(name, raw, origin) for name, raw in entries.items()}
    out = table.copy(deep=False)
    n = len(out)
    note = out[RANGES_FROM].to_numpy(dtype=object).copy() if RANGES_FROM in out.columns else np.full(n, "", object)
    refused = {c for _, c in out.attrs.get("cell_errors", {})}
    filled: dict[str, int] = {}
    for field, parts in cells.items():
        cols = [f"{field}_{p}" for p in RANGE_PARTS]
        given = np.zeros(n, dtype=bool)
        for c in cols:
            if c in out.columns:
                given |= ~np.fromiter((blank_cell(v) for v in out[c].to_numpy(dtype=object)), bool, n)
                given |= np.array([(label, c) in out.attrs.get("cell_errors", {}) for label in out.index], bool) \
                    if c in refused else False
        take = ~given
        if not take.any():
            continue
        for p, c in zip(RANGE_PARTS, cols):
            if parts[p] is None and c not in out.columns:
                continue
            old = out[c].to_numpy(dtype=object) if c in out.columns else np.full(n, None, object)
            new = np.where(take, parts[p], old)
            out[c] = pd.Series(new, index=out.index, dtype=object) if p == "dist" or any(
                isinstance(v, str) for v in new) else pd.to_numeric(pd.Series(new, index=out.index), errors="coerce")
        note = np.where(take, np.where(note == "", "", note + "; ") + f"{field}: {origin}", note)
        filled[field] = int(take.sum())
    if filled:
        out[RANGES_FROM] = pd.Series(note, index=out.index, dtype=object)
    out.attrs = dict(table.attrs)
    return out, filled


def _row_range(field: str, parts: Mapping[str, Any], row: Mapping[str, Any], base: Any) -> tuple[Any, str | None]:
    """The row's :class:`UncertainInput` for ``field`` (None: no range), or the problem naming its cells."""
    cells = {part: row[col] for part, col in parts.items()}
    u, problem = range_from_cells(field, cells, base, "row")
    if problem is None:
        return u, None
    named, rule = problem
    shown = ", ".join(f"{parts[p]}={_shown(cells[p])}" for p in named)
    return None, f"{shown}: {rule}" if shown else rule


def _shown(value: Any) -> str:
    """A cell as an error names it: a number (also one a CSV reader left as text) as a number, else quoted."""
    if isinstance(value, bool):
        return repr(value)
    try:
        return f"{float(value.strip() if isinstance(value, str) else value):g}"
    except (TypeError, ValueError, OverflowError):
        text = repr(value)
        return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _base(field: str, p: int, table: pd.DataFrame, res: pd.DataFrame) -> Any:
    """The value row ``p``'s plan uses for ``field``: as planned, else its cell, else the field's default."""
    for frame in (res, table):
        if field in frame.columns:
            v = pd.to_numeric(pd.Series([frame[field].iloc[p]]), errors="coerce").iloc[0]
            if np.isfinite(v):
                return float(v)
    return uncertain_field(field).default


def _drop_cell_errors(table: pd.DataFrame, cols: list) -> dict:
    """The reader's refusals of range cells (kept to report), removed from the table's own."""
    errors = dict(table.attrs.get("cell_errors", {}))
    ours = {k: v for k, v in errors.items() if k[1] in cols}
    table.attrs["cell_errors"] = {k: v for k, v in errors.items() if k[1] not in cols}
    return ours


def evaluate_ranges(table: Any, *, risk_draws: int = DEFAULT_BATCH_DRAWS, **options: Any) -> pd.DataFrame:
    """:func:`engine.batch.evaluate_rows` of a table that may hold range columns (module notes): the plans,
    the range columns as given, then :data:`RANGE_RESULT_COLUMNS`. ``options`` go to ``evaluate_rows``
    (``seed`` also seeds the draws). A table without range columns is ``evaluate_rows`` of it, unchanged."""
    if not isinstance(table, pd.DataFrame):
        return evaluate_rows(table, **options)
    ranges = range_columns(table.columns)
    if not ranges:
        return evaluate_rows(table, **options)
    if isinstance(risk_draws, bool) or not isinstance(risk_draws, (int, np.integer)) or risk_draws < 2:
        raise InputError("risk_draws", risk_draws, "must be a whole number >= 2")
    cols = [c for parts in ranges.values() for c in parts.values()]
    sources = table[RANGES_FROM].to_numpy(dtype=object) if RANGES_FROM in table.columns else np.full(len(table), "")
    plans_table = table.drop(columns=cols + [c for c in (RANGES_FROM,) if c in table.columns])
    plans_table.attrs = dict(table.attrs)
    refused = _drop_cell_errors(plans_table, cols)
    res = evaluate_rows(plans_table, **options)
    inputs, problems = _row_inputs(table, plans_table, res, ranges, refused, sources)
    figures = _range_figures(plans_table, res, inputs, risk_draws, options)
    out = _joined(table, res, cols, problems, figures)
    out[RANGES_FROM] = pd.Series(["" if blank_cell(v) else str(v) for v in sources], index=out.index,
                                 dtype=res["error"].dtype)
    return out


def _row_inputs(table: pd.DataFrame, plans_table: pd.DataFrame, res: pd.DataFrame, ranges: dict, refused: dict,
                sources: np.ndarray) -> tuple[list[tuple], list[list[str]]]:
    """Each row's checked ranges and the problems of its range cells (a default range's problem says whose it is,
    from the row's :data:`RANGES_FROM` cell)."""
    inputs: list[tuple] = []
    problems: list[list[str]] = []
    labels = list(table.index)
    for p in range(len(table)):
        row = table.iloc[p]
        found, msgs = [], [m for (label, _), m in refused.items() if label == labels[p]]
        for field, parts in ranges.items():
            if any((labels[p], c) in refused for c in parts.values()):
                continue
            u, problem = _row_range(field, parts, row, _base(field, p, plans_table, res))
            if problem:
                whose = [s.partition(": ")[2] for s in str(sources[p] or "").split("; ") if s.startswith(field + ": ")]
                msgs.append(problem + (f" (the default range of {whose[0]})" if whose else ""))
            elif u is not None:
                found.append(u)
        ok = res["status"].iloc[p] == STATUS_OK
        inputs.append(tuple(found) if ok and not msgs else ())
        problems.append(msgs)
    return inputs, problems


def _range_figures(plans_table: pd.DataFrame, res: pd.DataFrame, inputs: list[tuple], draws: int,
                   options: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """:data:`RANGE_RESULT_COLUMNS` of each row with ranges (or ``{"error": ...}``), rows planned in passes."""
    seed = options.get("seed", DEFAULT_SEED)
    opts = {k: v for k, v in options.items() if k in ("tiers", "failure_classes", "extra_columns")}
    tiered = options.get("tiers") is not None
    v = np.random.default_rng([seed, 1]).random(draws)   # one run per draw, as engine.risk draws the baseline's
    rows = [p for p, u in enumerate(inputs) if u]
    out: dict[int, dict[str, Any]] = {}
    start = 0
    while start < len(rows):
        group, size = [], 0
        while start < len(rows) and (not group or size + draws + 2 * len(inputs[rows[start]]) <= ROWS_PER_PASS):
            group.append(rows[start])
            size += draws + 2 * len(inputs[rows[start]])
            start += 1
        blocks = [_row_block(plans_table, p, inputs[p], draws, seed) for p in group]
        planned = evaluate_rows(pd.concat(blocks, ignore_index=True), **opts)
        at = 0
        for p, block in zip(group, blocks):
            out[p] = _row_answer(planned.iloc[at:at + len(block)].reset_index(drop=True), inputs[p], draws, v, tiered)
            at += len(block)
    return out


def _row_block(plans_table: pd.DataFrame, p: int, inputs: tuple, draws: int, seed: int) -> pd.DataFrame:
    """Row ``p`` repeated: ``draws`` rows of drawn inputs, then each input at its low and at its high."""
    k = len(inputs)
    block = plans_table.iloc[[p] * (draws + 2 * k)].reset_index(drop=True)
    drawn = draw_inputs(inputs, draws, seed)
    for j, u in enumerate(inputs):
        col = np.full(draws + 2 * k, u.base, dtype=float)
        col[:draws] = drawn[u.field]
        col[draws + 2 * j], col[draws + 2 * j + 1] = u.low, u.high
        block[u.field] = col
    return block


def _row_answer(planned: pd.DataFrame, inputs: tuple, draws: int, v: np.ndarray, tiered: bool) -> dict[str, Any]:
    """One row's figures from its planned block (:func:`_row_block`)."""
    bad = np.flatnonzero(planned["status"].to_numpy() != STATUS_OK)
    if len(bad):
        at = ", ".join(f"{u.field} = {float(planned[u.field].iloc[bad[0]]):g}" for u in inputs)
        return {"error": f"the range reaches a plan the engine refuses (at {at}): {planned['error'].iloc[bad[0]]}"}
    run = run_figures(planned.iloc[:draws], v, tiered)
    out: dict[str, Any] = {"risk_draws": draws}
    for fig in ("total_cost", "wall_h"):
        for q, x in zip((10, 50, 90), np.quantile(run[fig], (0.1, 0.5, 0.9))):
            out[f"risk_{fig}_p{q}"] = float(x)
    deadline = planned["deadline_h"].to_numpy(dtype=float)[:draws] if "deadline_h" in planned else np.full(draws, np.nan)
    out["risk_p_finish_by_deadline"] = float(np.mean(run["wall_h"] <= deadline)) if not np.isnan(deadline).all() \
        else float("nan")
    cost = planned["total_cost"].to_numpy(dtype=float)[draws:]
    swings = cost[0::2] - cost[1::2]
    top = int(np.argmax(np.abs(swings)))
    out["top_swing_input"], out["top_swing_total_cost"] = inputs[top].field, float(swings[top])
    return out


def _joined(table: pd.DataFrame, res: pd.DataFrame, cols: list, problems: list, figures: dict) -> pd.DataFrame:
    """The plans with the range columns after the inputs, the range figures last, problems as error rows."""
    n = len(table)
    extra = {c: np.full(n, np.nan) for c in _NUMBERS}
    extra["risk_draws"] = np.zeros(n)
    top = np.full(n, "", dtype=object)
    status, error = res["status"].to_numpy(dtype=object).copy(), res["error"].to_numpy(dtype=object).copy()
    warnings = res["warnings"].to_numpy(dtype=object).copy()
    for p in range(n):
        msgs = list(problems[p]) + ([figures[p]["error"]] if "error" in figures.get(p, {}) else [])
        if msgs:
            status[p], warnings[p] = STATUS_ERROR, ""
            extra["risk_draws"][p] = np.nan
            error[p] = "; ".join([e for e in [error[p]] if e] + msgs)
        elif p in figures:
            for c, x in figures[p].items():
                if c == "top_swing_input":
                    top[p] = x
                else:
                    extra[c][p] = x
    out = res.copy()
    out["status"], out["error"], out["warnings"] = status, error, warnings
    out["status"] = out["status"].astype(res["status"].dtype)
    out["error"] = out["error"].astype(res["error"].dtype)
    out["warnings"] = out["warnings"].astype(res["warnings"].dtype)
    last = max(out.columns.get_loc(c) for c in table.columns if c in out.columns and c not in cols)
    for i, c in enumerate(cols):
        out.insert(last + 1 + i, c, table[c].to_numpy())
    for f in RANGE_RESULT_COLUMNS:
        if f.name == RANGES_FROM:   # evaluate_ranges writes it
            continue
        if f.name == "top_swing_input":
            out[f.name] = pd.Series(top, index=out.index, dtype=res["error"].dtype)
        elif f.name == "risk_draws":
            out[f.name] = pd.Series(extra[f.name], index=out.index).astype("Int64")
        else:
            out[f.name] = extra[f.name]
    return out
