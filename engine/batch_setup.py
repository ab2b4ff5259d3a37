"""What a batch does with a storage and recovery setup: setup columns and tier designs over whole tables.

:func:`engine.batch.evaluate_rows` calls these when a table holds setup columns
(:data:`engine.fields.SETUP_FIELDS`) or comes with a tier design:

* :func:`fill_from_setup` before validation: the stall, write and restart each row's setup derives
  (:mod:`engine.setup_table`), the first tier's stall for a tiered row that states none, and what the
  tiered plan needs of each row;
* :func:`tiered_pass` after the single-level evaluation: every row planned with the tier design
  (:func:`engine.tiers.table.tiered_columns`), the single-level-only figures withdrawn;
* :func:`setup_figures` for the output: the setup's figures at each row's wall hours, ``total_cost``
  (everything the row's plan pays: its ``compute_cost``, the job's GPU time, + storage + spares) and
  ``cost_per_useful_gpu_hour`` (total / useful GPU-hours), as :func:`engine.setup.plan_setup` gives them.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from .columns import coerce_numeric_text, real_numbers
from .errors import InputError
from .fields import FIELD_BY_NAME, SETUP_FIELD_BY_NAME
from .recovery import RESTART_PHASES
from .scenario import RowProblems
from .setup_table import blank_cells, filled_table, setup_columns, table_job_mtbf_h

__all__ = ["SETUP_RESULT_COLUMNS", "fill_from_setup", "setup_figures", "tiered_pass"]


#: what a table with storage-and-recovery setup columns adds (:mod:`engine.setup_table`), and the money it sets
#: again: ``total_cost`` (compute + storage + spares, :data:`engine.fields.COST_PARTS`) and its cost per useful
#: GPU-hour, as ``plan_setup`` and ``CKPT_TOTAL_COST`` give them (the last two: :data:`_BILL`)
SETUP_RESULT_COLUMNS = ("checkpoint_size_gb", "derived_checkpoint_stall_min", "derived_async_write_min",
                        "derived_restore_min", "restart_pipeline_min", "spare_free_probability", "pool_reallocation_min",
                        "reallocation_sd_min", "mean_nodes_in_repair", "pool_waiting_share", "storage_cost", "spare_gpu_hours", "spare_cost", "total_cost", "cost_per_useful_gpu_hour")
_BILL = ("total_cost", "cost_per_useful_gpu_hour")


def fill_from_setup(table: pd.DataFrame, design: Any = None) -> tuple[pd.DataFrame, Any, dict[str, np.ndarray]]:
    """The table with the stall, write and restart its setup columns derive (stated cells win), the rows
    whose setup cells break a rule (:func:`engine.setup_table.fill_scenario_columns`), and what a tiered
    plan needs of each row.

    ``design``: a tier design (:func:`engine.tiers.table.tier_design`) or None. With one, a blank
    ``checkpoint_stall_min`` is the first tier's stall (what ``plan_setup`` reports for a tiered plan).
    The third result, per row position: ``checkpoint_size_gb`` (NaN: no size), ``writers`` (given, else
    nodes) and ``restart_other_min``, the restart pipeline's parts without the checkpoint load where the
    row gives a pipeline and leaves ``restart_min`` blank (NaN elsewhere: ``restart_min`` is the restart
    without the load), as ``plan_setup``'s tiered plan takes them, and ``stall_derived`` (the stall the
    row's plan uses comes from the checkpoint size and a bandwidth, not from a measurement).
    """
    from .tiers.table import stall_derived

    numeric = table.copy(deep=False)
    for c in numeric.columns:
        if c in SETUP_FIELD_BY_NAME or c in FIELD_BY_NAME:
            numeric[c] = coerce_numeric_text(table[c])
    numeric = numeric.reset_index(drop=True)
    problems = RowProblems(len(table))
    job_mtbf_h = table_job_mtbf_h(numeric) if "repair_h" in numeric.columns else None
    cols = setup_columns(numeric, job_mtbf_h, problems=problems, quiet_mtbf=True)
    filled = filled_table(numeric, cols)
    stated_restart = ~blank_cells(numeric["restart_min"]) if "restart_min" in numeric.columns else np.zeros(len(table), bool)
    other = sum((np.nan_to_num(cols[f"part_{p}"], nan=0.0) for p in RESTART_PHASES if p != "load_min"), np.zeros(len(table)))
    nodes, writers = (real_numbers(numeric[c]) if c in numeric.columns else np.full(len(table), np.nan)
                      for c in ("nodes", "writers"))
    info = {"checkpoint_size_gb": cols["checkpoint_size_gb"], "writers": np.where(np.isnan(writers), nodes, writers),
            "restart_other_min": np.where(~np.isnan(cols["restart_pipeline_min"]) & ~stated_restart, other, np.nan)}
    stated_stall = ~blank_cells(numeric["checkpoint_stall_min"]) if "checkpoint_stall_min" in numeric.columns \
        else np.zeros(len(table), bool)
    if design is not None:
        from .tiers.table import tier_times

        # a row that cannot derive a tier's time is refused here, naming the tier (before "stall is required")
        stalls, _ = tier_times(design, info["checkpoint_size_gb"], info["writers"], problems=problems)
        _filled_first_tier(filled, numeric, stalls[0])
    info["stall_derived"] = stall_derived(info["checkpoint_size_gb"], cols["derived_checkpoint_stall_min"],
                                          stated_stall, design.tiers if design is not None else ())
    out = table.copy(deep=False)
    for c in ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min"):
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
                  tiered: bool = False) -> dict[str, np.ndarray]:
    """The setup's figures of every row ``problems`` has not refused (NaN elsewhere), ``total_cost`` (the row's
    ``compute_cost`` + storage + spares) and ``cost_per_useful_gpu_hour``.

    ``tiered``: the rows follow a tier design: their storage bill is the tiers' (``res["storage_cost"]``,
    :mod:`engine.tiers.table`), not the single-level one of the setup's own price and retention. A row
    whose spare money or total cost leaves the float64 range becomes a problem (its figure NaN).
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
    figures = setup_columns(sub, res["job_mtbf_h"][good], res["wall_h"][good], problems=found)
    for p, errs in found.by_row.items():
        problems.add([good[p]], lambda _p, err=errs[0]: err)
    for c in SETUP_RESULT_COLUMNS:
        if c in figures and c not in _BILL:
            out[c][good] = figures[c]
    if tiered:
        out["storage_cost"][good] = res["storage_cost"][good]
    compute = res["compute_cost"][good]
    with np.errstate(over="ignore", invalid="ignore"):
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


def tiered_pass(design: Any, eff: Mapping[str, np.ndarray], res: dict[str, np.ndarray], info: Mapping[str, np.ndarray],
            problems: RowProblems) -> None:
    """Every evaluated row planned with the tier design (:func:`engine.tiers.table.tiered_columns`), in place:
    ``res`` gets the tiered figures (the single-level-only ones NaN), refused rows go to ``problems``.

    The restart without the load is the pipeline's other parts (``info``), else the row's
    ``restart_min``; the spare pool and the setup's figures stay the single-level derivation's.
    """
    from .tiers.table import TIERED_COLUMNS, checked_figures, tier_columns, tiered_columns

    n = len(res["wall_h"])
    good = np.flatnonzero(~problems.mask())
    found = RowProblems(good.size)
    other = info["restart_other_min"][good]
    cols = tiered_columns(design, size_gb=info["checkpoint_size_gb"][good], writers=info["writers"][good],
                          job_mtbf_h=res["job_mtbf_h"][good],
                          restart_other_min=np.where(np.isnan(other), eff["restart_min"][good], other),
                          async_write_min=eff["async_write_min"][good],
                          async_slowdown_fraction=eff["async_slowdown_fraction"][good],
                          interval_min=eff["interval_min"][good], useful_training_h=eff["useful_training_h"][good],
                          gpus=res["gpus"][good], price_per_gpu_hour=eff["price_per_gpu_hour"][good], problems=found,
                          downtime_min=eff["downtime_min"][good])
    for p, errs in found.by_row.items():
        for err in errs:
            problems.add([good[p]], lambda _p, err=err: err)
    for c in TIERED_COLUMNS + tier_columns(len(design.tiers)):
        res[c] = np.full(n, np.nan)
        res[c][good] = cols[c]
    res["restart_other_min"] = np.full(n, np.nan)
    res["restart_other_min"][good] = np.where(np.isnan(other), eff["restart_min"][good], other)
    res.update(checked_figures(res))   # what the model checks read, as plan_setup's tiered plan gives them
