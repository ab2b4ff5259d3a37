"""The per-row Monte Carlo of a batch (``evaluate_rows(..., deadline=True)``) and its seeds.

Each row that evaluated is simulated on its own (:func:`engine.deadline.simulate`; with a tier design
:func:`engine.montecarlo_tiers.simulate_tiers`; a row that trains on fewer replicas,
:func:`engine.elastic_montecarlo.simulate_elastic`), ``runs`` runs seeded by :func:`row_seeds`: a hash
of what the row's simulation uses and nothing else, so a row's answer does not depend on the other
rows, their order, chunking or Dask partitions (see :mod:`engine.batch` for the columns, and
:func:`engine.batch.scenario_seeds` for every row's seed of a table).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

import numpy as np

from . import cost
from . import montecarlo as _mc
from .errors import InputError
from .gate import as_float_array
from .scenario import RowProblems

__all__ = ["MONTE_CARLO_COLUMNS", "check_mc_options", "monte_carlo_columns", "row_seeds"]

MONTE_CARLO_COLUMNS = (
    "deadline_seed", "mc_runs", "p_finish", "p_finish_low", "p_finish_high", "mc_wall_h_mean",
    "mc_wall_h_mean_se", "mc_wall_h_p50", "mc_wall_h_p90", "mc_wall_h_p99", "mc_failures_mean",
    "mc_gpu_hours_mean", "mc_gpu_hours_p90", "mc_cost_mean", "mc_cost_p90",
)


def check_mc_options(runs: Any, seed: Any, failures: Any) -> tuple[int, int, Any]:
    """The batch's Monte Carlo options checked (``runs`` a whole number >= 2 within the memory limit, ``seed`` a
    whole number >= 0, ``failures`` ``"exponential"`` or a :class:`engine.montecarlo.FailureLaw`): (runs, seed,
    failures)."""
    r = as_float_array("runs", runs, "count")
    if r.ndim or r < 2:
        raise InputError("runs", runs, "must be a single whole number >= 2")
    _mc.check_simulation_size(r)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError("seed", seed, "must be a whole number >= 0 (the base seed of every row's own seed)")
    if not (failures == "exponential" or isinstance(failures, _mc.FailureLaw)):
        raise InputError("failures", failures, "must be 'exponential' or an engine.deadline.FailureLaw")
    return int(r), int(seed), failures


#: what a row's simulation uses, in the order hashed for its seed (besides the failure law and final save)
_SIMULATION_INPUTS = ("checkpoint_stall_min", "async_write_min", "async_slowdown_fraction", "restart_min",
                      "job_mtbf_h", "useful_training_h", "chosen_interval_min")


def _law_bytes(failures: Any, final_save: bool) -> bytes:
    """The failure law and the final-save flag as bytes (an exponential law spelt either way hashes the same)."""
    law = failures if isinstance(failures, _mc.FailureLaw) else _mc.FailureLaw.exponential()
    head = f"{law.kind}|{law.shape!r}|{bool(final_save)}|".encode()
    return head + np.asarray(law.samples or (), dtype="<f8").tobytes()


def _design_bytes(design: Any) -> bytes:
    """A tier design as bytes: its names, everies, survived classes and the class shares, in order."""
    if design is None:
        return b""
    text = repr([(t["name"], int(t["every"]), list(t["survives"])) for t in design.tiers]
                + sorted((str(c), float(v).hex()) for c, v in design.classes.items()))
    return b"tiers|" + text.encode()


def _simulation_columns(design: Any) -> tuple[str, ...]:
    """The columns a row's simulation uses: :data:`_SIMULATION_INPUTS`, and with tiers each tier's times in
    place of the row's stall (its ``restart_min`` being the restart without the load, ``restart_other_min``)."""
    if design is None:
        return _SIMULATION_INPUTS
    cols = tuple("restart_other_min" if c == "restart_min" else c for c in _SIMULATION_INPUTS
                 if c != "checkpoint_stall_min")
    return cols + tuple(f"tier{i + 1}_{k}" for i in range(len(design.tiers))
                        for k in ("checkpoint_stall_min", "restore_min"))


def row_seeds(sim_inputs: Mapping[str, np.ndarray], positions: np.ndarray, seed: int, failures: Any,
              final_save: bool, design: Any = None) -> np.ndarray:
    """``SeedSequence([seed, blake2b-128(simulation inputs)])`` -> a 49-bit seed per row position."""
    rows = np.column_stack([np.asarray(sim_inputs[c], dtype=float)[positions] for c in _simulation_columns(design)])
    rows = rows.astype("<f8") + 0.0  # -0.0 -> 0.0
    law = _law_bytes(failures, final_save) + _design_bytes(design)
    out = np.empty(len(positions), dtype=np.int64)
    for k in range(len(positions)):
        words = np.frombuffer(hashlib.blake2b(rows[k].tobytes() + law, digest_size=16).digest(), dtype="<u4").tolist()
        state = np.random.SeedSequence([seed, *words]).generate_state(1, np.uint64)[0]
        out[k] = int(state) >> 15  # 49 bits: exact in float64 and in Excel's 15 digits
    return out


def _elastic_row(eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], p: int) -> bool:
    """Row ``p`` trains on fewer replicas (``on_node_loss = continue``, a floor below its replicas)."""
    if "on_node_loss" not in eff or not eff["on_node_loss"][p] > 0 or "replicas" not in res:
        return False
    return bool(eff["min_replicas"][p] < res["replicas"][p])   # NaN floor: every replica, today's job


def _simulate_row(p: int, eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], runs: int, row_seed: int,
                  failures: Any, final_save: bool, design: Any) -> Any:
    """The row's Monte Carlo: :func:`engine.deadline.simulate`, the tiered one for a tier design, or the elastic
    one (:func:`engine.elastic_montecarlo.simulate_elastic`) for a row that trains on fewer replicas."""
    if _elastic_row(eff, res, p):
        from .elastic_montecarlo import simulate_elastic

        down = eff["downtime_min"][p]
        return simulate_elastic(eff["useful_training_h"][p] * 60.0, res["chosen_interval_min"][p],
                                eff["checkpoint_stall_min"][p], res["job_mtbf_h"][p] * 60.0, eff["restart_min"][p] - down,
                                down, res["replicas"][p], eff["min_replicas"][p], eff["shrink_keeps_progress"][p],
                                eff["shrink_pause_min"][p], eff["regrow_pause_min"][p], runs=runs, seed=row_seed,
                                final_save=final_save)
    if design is None:
        down = eff["downtime_min"][p]   # the part of the restart the job cannot fail in (waiting for a node)
        return _mc.simulate(eff["useful_training_h"][p] * 60.0, res["chosen_interval_min"][p],
                            eff["checkpoint_stall_min"][p], res["job_mtbf_h"][p] * 60.0, eff["restart_min"][p] - down,
                            eff["async_write_min"][p], eff["async_slowdown_fraction"][p], runs, row_seed, failures,
                            final_save, D=down)
    from .montecarlo_tiers import simulate_tiers
    from .tiers import Tier

    tiers = [Tier(t["name"], res[f"tier{i + 1}_checkpoint_stall_min"][p], res[f"tier{i + 1}_restore_min"][p],
                  t["every"], t["survives"]) for i, t in enumerate(design.tiers)]
    down = eff["downtime_min"][p]
    return simulate_tiers(eff["useful_training_h"][p] * 60.0, res["chosen_interval_min"][p], res["job_mtbf_h"][p] * 60.0,
                          max(res["restart_other_min"][p] - down, 0.0), eff["async_write_min"][p],
                          eff["async_slowdown_fraction"][p], tiers=tiers, classes=design.classes, runs=runs,
                          seed=row_seed, final_save=final_save, D=down)


def _schedule_field(eff: Mapping[str, np.ndarray], p: int) -> tuple[str, Any] | None:
    """(field, value) that gives row ``p`` a failure rate changing over the run (None for a constant rate)."""
    k = eff.get("weibull_shape_from_start")
    if k is not None and k[p] < 1:
        return "weibull_shape_from_start", float(k[p])
    i = 1
    while f"phase{i}_start_h" in eff:
        if not np.isnan(eff[f"phase{i}_start_h"][p]):
            return f"phase{i}_start_h", float(eff[f"phase{i}_start_h"][p])
        i += 1
    return None


def monte_carlo_columns(n: int, eff: Mapping[str, np.ndarray], res: Mapping[str, np.ndarray], positions: np.ndarray,
                        runs: int, seed: int, failures: Any, final_save: bool, problems: RowProblems,
                        design: Any = None) -> dict[str, np.ndarray]:
    """:data:`MONTE_CARLO_COLUMNS` of ``n`` rows: the rows at ``positions`` simulated (``eff``: their inputs with
    defaults, ``res``: their plan), NaN elsewhere; a row the simulator refuses becomes a problem."""
    out = {c: np.full(n, np.nan) for c in MONTE_CARLO_COLUMNS}
    if not len(positions):
        return out
    seeds = row_seeds({**eff, **res}, positions, seed, failures, final_save, design)
    useful_h, deadline_h = eff["useful_training_h"], eff["deadline_h"]
    for p, row_seed in zip(positions.tolist(), seeds.tolist()):
        dl_h = deadline_h[p]
        if not np.isnan(dl_h) and dl_h < useful_h[p]:
            problems.add([p], lambda _p: str(InputError(
                "deadline_h", float(dl_h), f"must be >= useful_training_h = {useful_h[_p]:g} h: the job needs that "
                "much compute even with no saves and no failures")))
            continue
        if _elastic_row(eff, res, p) and not (failures == "exponential" or failures.is_exponential):
            problems.add([p], lambda _p: str(InputError(
                "on_node_loss", "continue", "an elastic row's Monte Carlo draws exponential failures (the elastic "
                "model's law): leave out the failure law, or the runs for this row")))
            continue
        scheduled = _schedule_field(eff, p)
        if scheduled:
            problems.add([p], lambda _p, f=scheduled: str(InputError(
                f[0], f[1], "the one-interval Monte Carlo (--deadline) draws a failure rate that does not change "
                "over the run: this row's deadline answer is its p_finish_by_deadline and wall_h_p50/p90/p99, "
                "simulated on its schedule")))
            continue
        try:
            sim = _simulate_row(p, eff, res, runs, row_seed, failures, final_save, design)
        except ValueError as exc:
            problems.add([p], lambda _p, m=str(exc): f"Monte Carlo: {m}")
            continue
        wall_h = sim.wall / 60.0
        gpu_h = np.asarray(cost.gpu_hours(wall_h, res["gpus"][p]))
        money = np.asarray(cost.money(gpu_h, eff["price_per_gpu_hour"][p]))
        q50, q90, q99 = np.quantile(wall_h, [0.5, 0.9, 0.99])
        out["deadline_seed"][p] = row_seed
        out["mc_runs"][p] = runs
        if not np.isnan(dl_h):
            hits = int(np.count_nonzero(sim.wall <= dl_h * 60.0))
            out["p_finish"][p] = hits / runs
            out["p_finish_low"][p], out["p_finish_high"][p] = _mc.wilson_interval(hits, runs)
        out["mc_wall_h_mean"][p] = float(wall_h.mean())
        out["mc_wall_h_mean_se"][p] = _mc.standard_error(wall_h)
        out["mc_wall_h_p50"][p], out["mc_wall_h_p90"][p], out["mc_wall_h_p99"][p] = q50, q90, q99
        out["mc_failures_mean"][p] = float(sim.failures.mean())
        out["mc_gpu_hours_mean"][p] = float(gpu_h.mean())
        out["mc_gpu_hours_p90"][p] = float(np.quantile(gpu_h, 0.9))
        out["mc_cost_mean"][p] = float(money.mean())
        out["mc_cost_p90"][p] = float(np.quantile(money, 0.9))
    return out
