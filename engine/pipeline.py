"""The plan pipeline over tables: every surface plans through :func:`plan_table`.

One sequence of vectorised passes over a scenario table (a single scenario is a one-row table),
called by ``plan``, ``compare`` and the workbook (:func:`engine.setup.plan_setups`), ``batch`` and
``sweep`` (:func:`engine.batch.evaluate_rows`) and the ``CKPT_TOTAL_COST`` function:

1. **setup** (:func:`fill_from_setup`): what each row's storage and recovery setup derives
   (:mod:`engine.setup_table`: checkpoint size, save and restore times, the restart pipeline, the
   spare pool), written into the stall, write, restart and downtime cells a row does not state; a row
   that follows a tier design gets its first tier's stall;
2. **validation**, once (:func:`validate_cells`: :func:`engine.scenario.table_problems` with the cells
   a reader refused and numbers written as text);
3. **single-level plan**: one :func:`engine.evaluate` for every valid row (refused rows isolated by
   bisection, :func:`engine.scenario.evaluate_each`);
4. **tiered plan** (:func:`tiered_pass`): the rows that follow a tier design, one
   :func:`engine.tiers.table.tiered_columns` pass per design; designs of one structure are stacked
   (:func:`engine.tiers.table.stack_designs`), so their optima are searched in one vectorised pass;
5. **money** (:func:`setup_figures`): storage and spares at each row's hours, ``total_cost`` (compute +
   storage + spares) and ``cost_per_useful_gpu_hour``: the one place a plan's money is summed.

Bad rows are recorded per row (:class:`engine.scenario.RowProblems`), never raised, so a batch answers
every good row; :func:`engine.setup.plan_setups` raises the first problem of its pairs.
"""

from __future__ import annotations

import collections
import difflib
import re
import sys
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Optional

import numpy as np
import pandas as pd

from .columns import coerce_numeric_text, column_kind, in_float_range, real_numbers
from .elastic_table import ELASTIC_COLUMNS
from .errors import BLANK, InputError
from .fields import FIELD_BY_NAME, FIELDS, SETUP_FIELD_BY_NAME, TEXT_FIELDS
from .phases_table import is_schedule_column
from .preemption_table import PREEMPTION_COLUMNS
from .recovery import RESTART_PHASES
from .scenario import RowProblems, check_columns, derived_cell_problems, derived_columns, evaluate_each, table_problems
from .scenario import is_absent as _is_absent
from .scenario import is_number as _is_number
from .setup_table import blank_cells, filled_table, money_columns, setup_columns, table_job_mtbf_h

__all__ = ["LEAD_COLUMNS", "PlannedTable", "SETUP_RESULT_COLUMNS", "STALL_HINT", "changed_cells", "check_table_columns",
           "design_positions", "fill_from_setup", "is_extra_column", "plan_table", "setup_figures", "tiered_pass",
           "validate_cells"]

#: the columns a batch's results lead with (reserved: no input column may take their names)
LEAD_COLUMNS = ("status", "error", "warnings")


# ===================================================================================== the table

def _output_names() -> set[str]:
    from .batch_mc import MONTE_CARLO_COLUMNS   # here: a plan does not load the Monte Carlo

    return {*LEAD_COLUMNS, *derived_columns(), *MONTE_CARLO_COLUMNS} - {"job_mtbf_h"}


def is_extra_column(name: str) -> bool:
    """A plan column only some tables have: a failure-phase schedule's, preemptible capacity's or elastic continuation's."""
    return is_schedule_column(name) or name in PREEMPTION_COLUMNS or name in ELASTIC_COLUMNS


def check_table_columns(table: pd.DataFrame, extra_columns: str, ranged: Any = None) -> list[str]:
    """File-level checks, every problem of a kind named at once; returns the extra columns to carry."""
    if extra_columns not in ("error", "keep"):
        raise InputError("extra_columns", extra_columns, "must be 'error' or 'keep'")
    cols = list(table.columns)
    dup = [c for c, k in collections.Counter(cols).items() if k > 1]
    if dup:
        raise InputError("columns", ", ".join(map(str, dup)), "appear" + ("" if len(dup) > 1 else "s")
                         + " more than once in the header")
    missing = [f.name for f in FIELDS if f.required and f.name not in cols]
    if missing:
        raise InputError("columns", ", ".join(missing), f"missing required column{'s' if len(missing) > 1 else ''}: "
                         "add them to the table, or complete it from a base scenario (ckptplan batch --template; "
                         "engine.sweep.fill_from_template)")
    check_columns(table)
    extras = [c for c in cols if column_kind(c) is None]
    reserved = [c for c in extras if c in _output_names()]
    if reserved:
        raise InputError("columns", reserved[0], "is an output column: give the scenario table, not a results file")
    ranged = [c for c in extras if ranged is not None and ranged(c) is not None]
    if ranged and extra_columns == "error":
        raise InputError("columns", ", ".join(map(str, ranged)), "input range columns are read by "
                         "engine.batch_risk.evaluate_ranges (ckptplan batch), not by evaluate_rows")
    if extras and extra_columns == "error":
        known = [f.name for f in FIELDS] + list(TEXT_FIELDS)
        hints = []
        for c in extras:
            close = difflib.get_close_matches(str(c), known, n=1)
            hints.append(f"{c} (did you mean {close[0]}?)" if close else str(c))
        if len(extras) == 1:
            what = "is not a scenario field" + hints[0][len(str(extras[0])):]
        else:
            what = "are not scenario fields: " + "; ".join(hints)
        raise InputError("columns", ", ".join(map(str, extras)), f"{what}; fields: {', '.join(known)}, "
                         "domain{i}_name/_mtbf_h/_nodes_per_domain. Pass extra_columns='keep' (--keep-extra) to "
                         "carry them through")
    return extras


# ==================================================================================== validation

def _out_of_range_cells(name: str, values: pd.Series, problems: RowProblems, flags: np.ndarray) -> pd.Series:
    """Cells holding a number beyond the float64 range (a huge Python int): each a row problem, flagged,
    and blank in the returned column (the table checks then skip them; the output keeps the original)."""
    if values.dtype.kind != "O":
        return values
    obj = values.to_numpy(dtype=object)
    huge = np.fromiter((_is_number(v) and not in_float_range(v) for v in obj), dtype=bool, count=len(obj))
    if not huge.any():
        return values
    for p in np.flatnonzero(huge):
        digits = len(str(abs(int(obj[p]))))
        problems.add([p], lambda _p, d=digits: str(InputError(
            name, f"~1e{d - 1}", f"must be within the float64 range (|x| <= {sys.float_info.max:.6g})")))
    flags |= huge
    out = obj.copy()
    out[huge] = np.nan
    return pd.Series(out, index=values.index, name=values.name, dtype=object)


def validate_cells(table: pd.DataFrame, cell_errors: Mapping[tuple[Hashable, str], str]):
    """(given, effective, problems, bad cells) of :func:`engine.scenario.table_problems`, all problems kept.

    Numbers written as text (CSV, Excel text cells) count as numbers here; cells the reader
    already refused (``cell_errors``: a formula, a quoted TOML number) are reported first and then
    treated as blank. ``bad cells``: per number column of a non-numeric dtype, the cells that hold
    no number (text, a refused cell, a boolean): blank in the output, their text in the row's error.
    """
    n = len(table)
    problems = RowProblems(n)
    flagged: dict[str, np.ndarray] = {}
    if cell_errors:
        index = table.index
        for (label, col), message in cell_errors.items():
            pos = index.get_indexer([label]) if index.is_unique else np.flatnonzero(index == label)
            for p in np.atleast_1d(pos):
                if p >= 0:
                    flagged.setdefault(col, np.zeros(n, dtype=bool))[p] = True
                    problems.add([p], lambda _p, m=message: m)
    numeric = table.copy(deep=False)
    bad_cells: dict[str, np.ndarray] = {}
    for c in numeric.columns:
        if column_kind(c) == "number":
            numeric[c] = coerce_numeric_text(table[c])
            if numeric[c].dtype.kind == "O":
                flags = flagged.setdefault(c, np.zeros(n, dtype=bool))
                numeric[c] = _out_of_range_cells(c, numeric[c], problems, flags)
            if table[c].dtype.kind not in "iuf":
                obj = numeric[c].to_numpy(dtype=object)
                bad = np.fromiter((not (_is_number(v) or _is_absent(v)) for v in obj), dtype=bool, count=n)
                bad_cells[c] = bad | flagged.get(c, np.zeros(n, dtype=bool))
    given, eff, problems = table_problems(numeric, flagged, problems)
    return given, eff, problems, bad_cells


_ROW_PREFIX = re.compile(r"^row [^:]*: ")
_POSITION = re.compile(r"^([A-Za-z_][\w ]*)\[0\]=")


def _refusal_message(exc: ValueError) -> str:
    """The engine's message for a one-row table, without its "row 0: " and "[0]" (the output row is the row)."""
    return _POSITION.sub(r"\1=", _ROW_PREFIX.sub("", str(exc)), count=1)


@dataclass
class PlannedTable:
    """What :func:`plan_table` gives: the table with its setup's stall, write and restart filled in, the
    validated columns (``given``: as stated, NaN = blank; ``eff``: defaults applied), the plan's columns
    (``res``: name -> array per row, NaN on refused rows), the rows' problems, the cells that hold no number,
    what the setup derives (``setup``: :func:`fill_from_setup`'s, None without setup columns or
    designs) and ``single``, the single-level figures of the rows that follow a tier design (before the tiered
    pass replaced them; None without designs)."""

    table: pd.DataFrame
    given: Mapping[str, np.ndarray]
    eff: Mapping[str, np.ndarray]
    res: dict[str, np.ndarray]
    problems: RowProblems
    bad_cells: Mapping[str, np.ndarray]
    setup: Optional[Mapping[str, Any]]
    single: Optional[Mapping[str, np.ndarray]]


def plan_table(table: pd.DataFrame, *, designs: Any = (), design_rows: Any = None, stated: Any = None,
               extra_columns: str = "error", cell_errors: Optional[Mapping[tuple[Hashable, str], str]] = None,
               setup: bool = False, ranged: Any = None, job_mtbf_h: Any = None, scenarios: Any = None) -> PlannedTable:
    """The plan of every row of a scenario table: ONE sequence of vectorised passes that every surface calls
    (:func:`engine.batch.evaluate_rows` for ``batch`` and ``sweep``, :func:`engine.setup.plan_setups` for ``plan``, ``compare``
    and the workbook, the ``CKPT_TOTAL_COST`` function); a single scenario is a one-row table.

    1. the setup: the stall, write and restart each row's setup columns derive (a stated cell wins;
       ``stated``: column -> per-row mask of stated cells, default the cells not blank) and, for the rows that
       follow a tier design, the first tier's stall (:func:`fill_from_setup`);
    2. validation, once (:func:`engine.scenario.table_problems` with the table's own cell problems);
    3. the single-level plan, one :func:`engine.evaluate` call for every valid row;
    4. the tiered plan of the rows that follow a design, one pass per design (``designs``: validated tier
       designs, several of one structure stacked into one by :func:`engine.tiers.table.stack_designs`;
       ``design_rows``: the design of each row, -1 for none; None: every row follows ``designs[0]``);
    5. the money: storage, spares, ``total_cost`` and its cost per useful GPU-hour (:func:`setup_figures`).

    Bad rows are recorded in ``problems`` (never raised); problems of the whole table raise as
    :func:`engine.batch.evaluate_rows` says (``ranged``: the batch's test of a column holding an input
    range, refused there; ``job_mtbf_h``: each row's job MTBF when the caller knows it, for the spare pools).
    ``setup``: run the setup's passes (1 and 5) even when the table holds no setup
    column and no row follows a design (a plan reports the setup's figures and the money whatever its setup).

    ``scenarios``: the validated :class:`engine.Scenario` records the rows derive from (one for every row, or one per
    row: ``plan``, ``compare`` and the workbook through :func:`engine.setup.plan_setups`, a sensitivity's swings, a
    search's candidates, Scaling's node counts). Validated when they were made, they are not validated again: step 2
    checks only the cells that differ from them (:func:`changed_cells`), the cells the setup derives, and the rules
    across each row (:func:`engine.scenario.derived_cell_problems`), so no cell a caller writes escapes a check.
    """
    setup_info = None
    changed = None if scenarios is None else changed_cells(scenarios, table)
    if changed is not None and cell_errors:
        raise InputError("cell_errors", len(cell_errors), "a table derived from validated scenarios has no cells a "
                         "reader refused: give the table without scenarios")
    if setup or designs or any(c in SETUP_FIELD_BY_NAME for c in table.columns):  # the design as the input
        table, setup_problems, setup_info = fill_from_setup(table, designs, design_rows, stated, job_mtbf_h, changed)
    check_table_columns(table, extra_columns, ranged)
    if changed is not None or not len(table):   # validated when made: only what was derived since is checked, here
        # where it is made (a table of no rows: its columns' problems, table_problems' own, with no cell to check)
        given, eff, problems = derived_cell_problems(table, (changed or set()) | set(_DERIVABLE), RowProblems(len(table)))
        bad_cells = _no_number_cells(table)
    else:
        given, eff, problems, bad_cells = validate_cells(table, cell_errors or {})
    if setup_info is not None:
        for p, errs in setup_problems.by_row.items():   # found first: named first
            problems.by_row[p] = errs[:1] + problems.by_row.get(p, [])
        _stall_hint(problems)
    res = _evaluate_valid_rows(table, given, eff, problems)
    single = None
    if setup_info is not None:
        single = _setup_pass(table, designs, design_rows, eff, res, setup_info, problems)
    return PlannedTable(table, given, eff, res, problems, bad_cells, setup_info, single)


#: the cells the setup derives into a scenario's row (:func:`fill_from_setup`)
_DERIVABLE = ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min")


def changed_cells(scenarios: Any, table: pd.DataFrame) -> set[str]:
    """The number columns of ``table`` whose cells are not those of the validated scenarios it derives from
    (``scenarios``: one :class:`engine.Scenario` for every row, or one per row): a design's changes, a swing, a
    node count, a search's candidates. :func:`plan_table` checks these (and the cells its setup derives), not the
    rest; a column the records do not give, or that holds anything but numbers, counts as changed."""
    from .scenario import Scenario, check_scenario, to_table

    n = len(table)
    if isinstance(scenarios, Scenario):
        records, which = [scenarios], np.zeros(n, dtype=np.intp)
    else:
        seq = list(scenarios)
        if len(seq) != n:
            raise InputError("scenarios", len(seq), f"must be one Scenario, or one per row of the table ({n})")
        ids: dict[int, int] = {}
        which = np.fromiter((ids.setdefault(id(sc), len(ids)) for sc in seq), dtype=np.intp, count=n)
        records = list({id(sc): sc for sc in seq}.values())
    ref = to_table([check_scenario(sc, "scenarios") for sc in records])
    changed = {c for c in table.columns if column_kind(c) == "number" and c not in ref.columns}
    for c in ref.columns:
        if column_kind(c) != "number":
            continue
        if c not in table.columns or table[c].dtype.kind not in "iuf":
            changed.add(c)
            continue
        mine = table[c].to_numpy(dtype=np.float64, na_value=np.nan)
        theirs = pd.to_numeric(ref[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)[which]
        if not np.array_equal(mine, theirs, equal_nan=True):
            changed.add(c)
    return changed


def _no_number_cells(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per number column of a non-numeric dtype, the cells holding no number (:func:`validate_cells`' ``bad cells``)."""
    out = {}
    for c in table.columns:
        if column_kind(c) == "number" and table[c].dtype.kind not in "iuf":
            obj = coerce_numeric_text(table[c]).to_numpy(dtype=object)
            out[c] = np.fromiter((not (_is_number(v) or _is_absent(v)) for v in obj), dtype=bool, count=len(obj))
    return out


def _evaluate_valid_rows(table: pd.DataFrame, given: Mapping[str, np.ndarray], eff: Mapping[str, np.ndarray],
                         problems: RowProblems) -> dict[str, np.ndarray]:
    """:func:`engine.evaluate`'s columns of every row that passed the masks (NaN elsewhere), in one engine
    call on the columns validated once (``eff``, not checked again); only if the models refuse rows (an
    overflow) are they isolated by bisection and become the rows' problems."""
    n = len(table)
    candidates = np.flatnonzero(~problems.mask())
    number_cols = [c for c in table.columns if column_kind(c) == "number" and c in given]
    derived = derived_columns()
    res = {c: np.full(n, np.nan) for c in derived}
    if len(candidates):
        sub = pd.DataFrame({c: given[c][candidates] for c in number_cols}, index=pd.RangeIndex(len(candidates)), copy=False)
        if "on_node_loss" in table.columns:   # the one text input a plan reads (engine.elastic_table)
            sub["on_node_loss"] = table["on_node_loss"].to_numpy(dtype=object)[candidates]
        parts, refused = evaluate_each(sub, {k: np.asarray(v)[candidates] for k, v in eff.items()})
        for k, exc in refused.items():
            problems.add([candidates[k]], lambda _p, m=_refusal_message(exc): m)
        for c in sorted({c for part in parts for c in part.columns if is_extra_column(c)}):
            res[c] = np.full(n, np.nan)  # a failure-phase schedule, preemptible capacity (engine.*_table)
        for part in parts:
            pos = candidates[part.index.to_numpy()]
            for c in [*derived, *(c for c in part.columns if is_extra_column(c))]:
                res[c][pos] = part[c].to_numpy(dtype=float)
    return res


#: what a row with setup columns is told when it has no stall: none stated, none derivable
STALL_HINT = "is required: give it, or parameters_b with a write bandwidth to derive it"


def _stall_hint(problems: RowProblems) -> None:
    """A blank ``checkpoint_stall_min`` of a table with a setup: the rule says how the setup would derive it."""
    for p, errs in problems.by_row.items():
        problems.by_row[p] = [InputError("checkpoint_stall_min", BLANK, STALL_HINT) if isinstance(e, InputError)
                              and e.field == "checkpoint_stall_min" and e.value is BLANK else e for e in errs]


def _setup_pass(table: pd.DataFrame, designs: Any, design_rows: Any, eff: Mapping[str, np.ndarray],
                res: dict[str, np.ndarray], setup_info: Mapping[str, Any], problems: RowProblems
                ) -> Optional[dict[str, np.ndarray]]:
    """What the rows' setup columns and tier designs add to the evaluated figures, in place: whether each
    stall was derived, the tiered plan (:func:`tiered_pass`), then the setup's figures at each
    row's wall hours and its whole bill (:func:`setup_figures`). Returns the single-level
    figures as they were before the tiered pass (None without designs)."""
    # a stall derived from the real size was not measured on a small model
    res["stall_derived"] = setup_info["stall_derived"].astype(np.float64)
    single, tiered = None, False
    if designs:
        single = {c: v.copy() for c, v in res.items()}
        tiered = tiered_pass(designs, design_rows, eff, res, setup_info, problems)
    res.update(setup_figures(table, res, problems, setup_info["setup"], eff["preemptions_per_h"], tiered=tiered))
    return single



# ===================================================================================== the setup passes

#: what a table with storage-and-recovery setup columns adds (:mod:`engine.setup_table`), and the money it sets
#: again: ``total_gpu_hours`` (job + spares, :data:`engine.fields.GPU_HOURS_PARTS`), ``total_cost`` (compute +
#: storage + spares, :data:`engine.fields.COST_PARTS`) and its cost per useful GPU-hour, as ``plan_setup`` and
#: ``CKPT_TOTAL_COST`` give them (the last three: :data:`_BILL`)
SETUP_RESULT_COLUMNS = ("checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_async_write_min",
                        "derived_restore_min", "restart_pipeline_min", "spare_free_probability", "pool_reallocation_min",
                        "reallocation_sd_min", "mean_nodes_in_repair", "pool_waiting_share", "storage_cost", "spare_gpu_hours", "spare_cost", "total_gpu_hours", "total_cost",
                        "cost_per_useful_gpu_hour")
_BILL = ("total_gpu_hours", "total_cost", "cost_per_useful_gpu_hour")



def design_positions(n: int, designs: Any, design_rows: Any = None) -> list[np.ndarray]:
    """Per design, the positions of the rows that follow it: every row follows the one design when
    ``design_rows`` is None, else row ``p`` follows ``designs[design_rows[p]]`` (-1: none, a single-level row)."""
    if not designs:
        return []
    if design_rows is None:
        return [np.arange(n)]
    rows = np.asarray(design_rows)
    return [np.flatnonzero(rows == k) for k in range(len(designs))]


def fill_from_setup(table: pd.DataFrame, designs: Any = (), design_rows: Any = None, stated: Any = None,
                    job_mtbf_h: Any = None, changed: Any = None) -> tuple[pd.DataFrame, Any, dict[str, np.ndarray]]:
    """The table with the stall, write and restart its setup columns derive (stated cells win), the rows
    whose setup cells break a rule (:func:`engine.setup_table.setup_columns`), and what a tiered plan
    needs of each row.

    ``designs``: tier designs (:func:`engine.tiers.table.tier_design`, or several of one structure stacked,
    :func:`engine.tiers.table.stack_designs`); ``design_rows``: which design each row follows
    (:func:`design_positions`). A tiered row's blank ``checkpoint_stall_min`` is its first tier's stall (what
    ``plan_setup`` reports for a tiered plan). ``stated``: column -> mask of the cells a row states
    (:func:`engine.setup_table.filled_table`; default: the cells not blank). ``job_mtbf_h``: each row's job MTBF
    for the spare pool when the caller knows it (valid scenarios); default: from the table's own cells (``changed``:
    the columns that differ from the validated scenarios the rows derive from, :func:`changed_cells`; the others
    are read unchecked).
    The third result, per row position: ``checkpoint_size_gb`` (NaN: no size), ``writers`` (given, else
    nodes) and ``restart_other_min``, the restart pipeline's parts without the checkpoint load where the
    row gives a pipeline and does not state ``restart_min`` (NaN elsewhere: ``restart_min`` is the restart
    without the load), as ``plan_setup``'s tiered plan takes them, ``stall_derived`` (the stall the
    row's plan uses comes from the checkpoint size and a bandwidth, not from a measurement) and ``setup``,
    every figure of the setup (:data:`engine.setup_table.SETUP_COLUMNS` without the money).
    """
    from .tiers.table import stall_derived, tier_times

    numeric = table.copy(deep=False)
    for c in numeric.columns:
        if c in SETUP_FIELD_BY_NAME or c in FIELD_BY_NAME:
            numeric[c] = coerce_numeric_text(table[c])
    numeric = numeric.reset_index(drop=True)
    n = len(table)
    problems = RowProblems(n)
    if job_mtbf_h is None and "repair_h" in numeric.columns:
        job_mtbf_h = table_job_mtbf_h(numeric, changed)
    cols = setup_columns(numeric, job_mtbf_h, problems=problems, quiet_mtbf=True)
    filled = filled_table(numeric, cols, stated)

    def states(name: str) -> np.ndarray:
        if stated is not None and name in stated:
            return np.asarray(stated[name], dtype=bool)
        return ~blank_cells(numeric[name]) if name in numeric.columns else np.zeros(n, bool)

    other = sum((np.nan_to_num(cols[f"part_{p}"], nan=0.0) for p in RESTART_PHASES if p != "load_min"), np.zeros(n))
    nodes, writers = (real_numbers(numeric[c]) if c in numeric.columns else np.full(n, np.nan)
                      for c in ("nodes", "writers"))
    info = {"checkpoint_size_gb": cols["checkpoint_size_gb"], "writers": np.where(np.isnan(writers), nodes, writers),
            "restart_other_min": np.where(~np.isnan(cols["restart_pipeline_min"]) & ~states("restart_min"), other,
                                          np.nan), "setup": cols}
    info["stall_derived"] = stall_derived(info["checkpoint_size_gb"], cols["derived_checkpoint_stall_min"],
                                          states("checkpoint_stall_min"))
    first_stall = np.full(n, np.nan)
    for design, at in zip(designs, design_positions(n, designs, design_rows)):
        if not at.size:
            continue
        # a row that cannot derive a tier's time is refused here, naming the tier (before "stall is required")
        stalls, _ = tier_times(design, info["checkpoint_size_gb"][at], info["writers"][at], problems=problems, rows=at)
        first_stall[at] = stalls[0]
        info["stall_derived"][at] = stall_derived(info["checkpoint_size_gb"][at], None, None, design.tiers)
    if designs:
        _filled_first_tier(filled, numeric, first_stall)
    out = table.copy(deep=False)
    for c in _DERIVABLE:
        if c in filled.columns:
            out[c] = filled[c].to_numpy()
    return out, problems, info


def _filled_first_tier(filled: pd.DataFrame, numeric: pd.DataFrame, stall: np.ndarray) -> None:
    """Blank ``checkpoint_stall_min`` cells (none stated, none derived) given the first tier's stall, in place."""
    name = "checkpoint_stall_min"
    blank = blank_cells(filled[name]) if name in filled.columns else np.ones(len(filled), dtype=bool)
    fill = blank & ~np.isnan(stall)
    if not fill.any():
        if name not in filled.columns:
            filled[name] = np.full(len(filled), np.nan)
        return
    if name not in filled.columns or filled[name].dtype.kind in "iuf":
        base = filled[name].to_numpy(dtype=np.float64) if name in filled.columns else np.full(len(filled), np.nan)
        filled[name] = np.where(fill, stall, base)
    else:
        cells = filled[name].to_numpy(dtype=object).copy()
        cells[fill] = stall[fill]
        filled[name] = pd.Series(cells, index=filled.index, dtype=object)


def setup_figures(table: pd.DataFrame, res: Mapping[str, np.ndarray], problems: RowProblems,
                  derived: Mapping[str, np.ndarray], preemptions_per_h: np.ndarray,
                  tiered: Any = False) -> dict[str, np.ndarray]:
    """The setup's figures of every row ``problems`` has not refused (NaN elsewhere), ``total_gpu_hours`` (the
    row's ``job_gpu_hours`` + the spares'), ``total_cost`` (the row's ``compute_cost`` + storage + spares) and
    ``cost_per_useful_gpu_hour``: the one place a plan's GPU-hours and money are summed.

    ``tiered`` (True, or a per-row mask): the rows that follow a tier design: their storage bill is the tiers'
    (``res["storage_cost"]``, :mod:`engine.tiers.table`), not the single-level one of the setup's own price and
    retention. The spares are billed for the hours the job holds its nodes (the wall hours less a preemptible
    plan's wait for capacity, ``capacity_wait_h``) at the price the plan pays (the spot price of a preemptible
    plan that gives one). A row whose spare money or total cost leaves the float64 range becomes a problem
    (its figure NaN). ``derived``: what the setup pass derived (:func:`fill_from_setup`'s ``setup``); only the
    money is added here (:func:`engine.setup_table.money_columns`), the setup is not derived again.
    ``preemptions_per_h``: the rows' job preemption rates as the table pass resolved them (given, or nodes x the
    node's rate: :func:`engine.spot_rates.job_preemptions_per_h`).
    """
    n = len(table)
    out = {c: np.full(n, np.nan) for c in SETUP_RESULT_COLUMNS}
    good = np.flatnonzero(~problems.mask())
    if not len(good):
        return out
    sub = table.iloc[good].reset_index(drop=True)
    for c in sub.columns:
        if c in SETUP_FIELD_BY_NAME or c in FIELD_BY_NAME:
            sub[c] = pd.to_numeric(coerce_numeric_text(sub[c]), errors="coerce")
    found = RowProblems(len(good))
    wall = res["wall_h"][good]
    held = wall - np.nan_to_num(res["capacity_wait_h"][good], nan=0.0) if "capacity_wait_h" in res else wall
    sub["price_per_gpu_hour"] = _gpu_price(sub, np.asarray(preemptions_per_h, dtype=np.float64)[good])
    figures = {k: v[good] for k, v in derived.items()}
    figures.update(money_columns(sub, figures["checkpoint_size_gb"], wall, held, problems=found))
    for p, errs in found.by_row.items():
        problems.add([good[p]], lambda _p, err=errs[0]: err)
    for c in SETUP_RESULT_COLUMNS:
        if c in figures and c not in _BILL:
            out[c][good] = figures[c]
    tiered = np.broadcast_to(np.asarray(tiered, dtype=bool), (n,))
    at = good[tiered[good]]
    out["storage_cost"][at] = res["storage_cost"][at]
    out["spare_gpu_hours"][good] = np.nan_to_num(out["spare_gpu_hours"][good], nan=0.0)   # no spares: none held
    out["spare_cost"][good] = np.nan_to_num(out["spare_cost"][good], nan=0.0)
    compute = res["compute_cost"][good]
    with np.errstate(over="ignore", invalid="ignore"):
        out["total_gpu_hours"][good] = res["job_gpu_hours"][good] + out["spare_gpu_hours"][good]
        storage, spare = (np.nan_to_num(out[k][good], nan=0.0) for k in ("storage_cost", "spare_cost"))
        total = compute + storage + spare
        per_useful = total / res["useful_gpu_hours"][good]
    broken = np.flatnonzero(~(np.isfinite(total) & np.isfinite(per_useful)) & np.isfinite(compute)
                            & ~np.isin(np.arange(len(good)), list(found.by_row)))
    price = sub["price_per_gpu_hour"].to_numpy(dtype=np.float64) if "price_per_gpu_hour" in sub.columns \
        else np.full(len(good), np.nan)
    for k in broken:
        problems.add([good[k]], lambda _p, v=float(price[k]), h=float(res["wall_h"][good[k]]): InputError(
            "price_per_gpu_hour", v, f"the total cost (GPU time + storage + spares) at {h:.3g} wall hours overflows "
            "the float64 range"))
    ok = np.isfinite(total) & np.isfinite(per_useful)
    out["total_cost"][good] = np.where(ok, total, np.nan)
    out["cost_per_useful_gpu_hour"][good] = np.where(ok, per_useful, np.nan)
    return out


def _gpu_price(sub: pd.DataFrame, rate: np.ndarray) -> np.ndarray:
    """The price per GPU-hour a row's plan pays: the spot price of a preemptible plan that gives one
    (:mod:`engine.preemption_table`), else ``price_per_gpu_hour``. ``rate``: the job's preemption rate of each row
    (the table pass's, :func:`engine.spot_rates.job_preemptions_per_h`)."""
    def column(name: str) -> np.ndarray:
        return sub[name].to_numpy(dtype=np.float64) if name in sub.columns else np.full(len(sub), np.nan)

    price, spot = column("price_per_gpu_hour"), column("spot_price_per_gpu_hour")
    with np.errstate(invalid="ignore"):
        return np.where((rate > 0) & ~np.isnan(spot), spot, price)


def tiered_pass(designs: Any, design_rows: Any, eff: Mapping[str, np.ndarray], res: dict[str, np.ndarray],
                info: Mapping[str, np.ndarray], problems: RowProblems) -> np.ndarray:
    """Every evaluated row that follows a tier design planned with it (:func:`engine.tiers.table.tiered_columns`,
    one vectorised pass per design, a stacked design's rows together), in place: ``res`` gets the tiered
    figures (the single-level-only ones NaN on those rows), refused rows go to ``problems``. Returns the mask
    of the rows that follow a design.

    The restart without the load is the pipeline's other parts (``info``), else the row's
    ``restart_min``; the spare pool and the setup's figures stay the single-level derivation's.
    """
    from .tiers.table import TIERED_COLUMNS, checked_figures, design_at, tier_columns, tiered_columns

    n = len(res["wall_h"])
    tiered = np.zeros(n, dtype=bool)
    res.setdefault("restart_other_min", np.full(n, np.nan))
    for design, at in zip(designs, design_positions(n, designs, design_rows)):
        tiered[at] = True
        keep = ~problems.mask()[at]
        good = at[keep]
        found = RowProblems(good.size)
        other = info["restart_other_min"][good]
        other = np.where(np.isnan(other), eff["restart_min"][good], other)
        cols = tiered_columns(design_at(design, np.flatnonzero(keep)), size_gb=info["checkpoint_size_gb"][good],
                              writers=info["writers"][good], job_mtbf_h=res["job_mtbf_h"][good], restart_other_min=other,
                              async_write_min=eff["async_write_min"][good],
                              async_slowdown_fraction=eff["async_slowdown_fraction"][good],
                              interval_min=eff["interval_min"][good], useful_training_h=eff["useful_training_h"][good],
                              gpus=res["gpus"][good], price_per_gpu_hour=eff["price_per_gpu_hour"][good],
                              problems=found, downtime_min=eff["downtime_min"][good])
        for p, errs in found.by_row.items():
            for err in errs:
                problems.add([good[p]], lambda _p, err=err: err)
        for c in TIERED_COLUMNS + tier_columns(len(design.tiers)):
            res.setdefault(c, np.full(n, np.nan))
            res[c][at] = np.nan
            res[c][good] = cols[c]
        res["restart_other_min"][good] = other
        for c, v in checked_figures(cols).items():   # what the model checks read, as plan_setup's tiered plan
            res.setdefault(c, np.array(eff[c], dtype=np.float64) if c in eff else np.full(n, np.nan))
            res[c][at] = np.nan
            res[c][good] = v
    return tiered
