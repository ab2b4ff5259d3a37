"""Failure rates by scale, from published figures of real training fleets.

Each :class:`FleetRate` is one published reliability figure, reduced to failures per 1,000
node-days, with its source (full citation) and, in ``note``, the figure as the source states it
and how the rate follows from it. From a rate ``r`` (failures per 1,000 node-days)::

    node MTBF [h] = 24 * 1000 / r = 24,000 / r
    job MTBF [h]  = node MTBF / nodes = 24,000 / (r * nodes)

Assumptions (those of :func:`engine.reliability.job_mtbf`): independent, exponential node
failures at the fleet's average rate, any one of which stops the job; the rate of the fleet
applies to the job's nodes. Validity limits:

* A fleet rate is an average over the fleet's hardware, age, workload and failure accounting. It
  transfers to another fleet only as a first estimate: fit your own interruption log
  (``engine.fitting``) as soon as you have one.
* The rates count different things. ``meta-rsc1``/``meta-rsc2`` count jobs on more than 128 GPUs
  that ended with a node failure or a failed critical health check (hardware and system software);
  ``llama3-405b`` counts every unexpected interruption of one job, software bugs included.
* Scaling ``1/nodes`` is the published projection's own model (it reproduces Kokolis et al.'s
  1.8 h at 16,384 GPUs and 0.23 h at 131,072 GPUs from RSC-1's rate) but not every published
  measurement: the same paper measures 7.9 h at 1,024 GPUs, about 3.7x shorter than RSC-1's rate
  gives (28.8 h). Small jobs see failures (lemon nodes, user-visible faults) that the fleet's
  large-job rate does not count.
* Correlated outages (a rack, a power domain) are inside these averages; to model them explicitly
  use :class:`engine.reliability.FailureDomain` and a node rate without them.

Not included, for want of a figure that reduces to a rate: the OPT-175B logbook (Zhang et al.,
"OPT: Open Pre-trained Transformer Language Models", arXiv:2205.01068, 2022) reports at least 35
*manual* restarts and over 100 hosts cycled in about two months on 992 A100 GPUs; automatic
restarts are not counted there, so it bounds the rate only from below.

Sources
-------
* [Kokolis25] A. Kokolis, M. Kuchnik, J. Hoffman, A. Kumar, P. Malani, F. Ma, Z. DeVito,
  S. Sengupta, K. Saladi, C.-J. Wu, "Revisiting Reliability in Large-Scale Machine Learning
  Research Clusters", IEEE HPCA 2025 (doi:10.1109/HPCA61900.2025.00096; arXiv:2410.21680).
* [Llama3] A. Dubey et al. (Llama Team, AI @ Meta), "The Llama 3 Herd of Models",
  arXiv:2407.21783, 2024, section 3.3.4.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .errors import InputError
from .gate import FLOAT_MAX, FLOAT_TINY, check_finite_result, prepare

__all__ = ["FleetRate", "HOURS_PER_1000_NODE_DAYS", "fleet_node_mtbf", "fleet_rate", "fleet_rates", "job_mtbf_h_from_fleet",
           "node_mtbf_h_from_rate"]

#: node-hours in 1,000 node-days: node MTBF [h] = this / failures per 1,000 node-days
HOURS_PER_1000_NODE_DAYS = 24_000.0

_KOKOLIS = ('A. Kokolis, M. Kuchnik, J. Hoffman, A. Kumar, P. Malani, F. Ma, Z. DeVito, S. Sengupta, K. Saladi, '
            'C.-J. Wu, "Revisiting Reliability in Large-Scale Machine Learning Research Clusters", 2025 IEEE '
            'International Symposium on High-Performance Computer Architecture (HPCA), '
            'doi:10.1109/HPCA61900.2025.00096 (arXiv:2410.21680)')
_LLAMA3 = ('A. Dubey et al. (Llama Team, AI @ Meta), "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, '
           'section 3.3.4 (Reliability and Operational Challenges)')

#: Llama 3 405B pre-training snapshot: unexpected interruptions, days, nodes (16,384 H100 GPUs / 8 per server)
_LLAMA3_UNEXPECTED, _LLAMA3_DAYS, _LLAMA3_NODES = 419, 54, 2048


@dataclass(frozen=True)
class FleetRate:
    """One published failure rate: ``failures_per_1000_node_days`` on nodes of ``gpus_per_node`` GPUs.

    ``source``: the full citation; ``note``: the figure as the source states it, how the rate
    follows from it, what it counts, and how far it was checked.
    """

    name: str
    failures_per_1000_node_days: float
    gpus_per_node: int
    source: str
    note: str

    @property
    def node_mtbf_h(self) -> float:
        """Node MTBF in hours: ``24,000 / failures_per_1000_node_days``."""
        return HOURS_PER_1000_NODE_DAYS / self.failures_per_1000_node_days

    def job_mtbf_h(self, nodes):
        """Job MTBF in hours on ``nodes`` nodes (:func:`job_mtbf_h_from_fleet`)."""
        return job_mtbf_h_from_fleet(self, nodes)

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict, with ``node_mtbf_h`` added (JSON-ready)."""
        return {**asdict(self), "node_mtbf_h": self.node_mtbf_h}


_FLEETS: tuple[FleetRate, ...] = (
    FleetRate(
        "meta-rsc1", 6.50, 8, _KOKOLIS,
        "Quoted: RSC-1 (about 16,000 A100 GPUs in 8-GPU nodes, 11 months of operation) failure rate "
        "r_f = 6.50 failures per 1,000 node-days; projected job mean time to failure about 1.8 h at "
        "16,384 GPUs and 0.23 h at 131,072 GPUs (24,000 / (6.50 x 2,048) = 1.80 h and "
        "24,000 / (6.50 x 16,384) = 0.225 h reproduce both). Counts jobs on more than 128 GPUs that ended "
        "with a node failure or a failed critical health check. The paper's measured MTTF at 1,024 GPUs, "
        "7.9 h, is shorter than this rate gives (28.8 h). Rate cross-checked against secondary accounts of "
        "the paper and against its own projections.",
    ),
    FleetRate(
        "meta-rsc2", 2.34, 8, _KOKOLIS,
        "Quoted: RSC-2 (about 8,000 A100 GPUs in 8-GPU nodes) failure rate r_f = 2.34 failures per 1,000 "
        "node-days, counted as for RSC-1; the paper relates the lower rate to RSC-1's heavier workload "
        "(RSC-1's GPU swap rate is about 3x RSC-2's). Rate cross-checked against three independent "
        "secondary accounts of the paper, not against the paper's own text: check it there before "
        "quoting it.",
    ),
    FleetRate(
        "llama3-405b", _LLAMA3_UNEXPECTED / (_LLAMA3_NODES * _LLAMA3_DAYS) * 1000.0, 8, _LLAMA3,
        "Quoted: during a 54-day snapshot of Llama 3 405B pre-training on 16,384 H100 GPUs there were 466 "
        "job interruptions, 47 planned and 419 unexpected; about 78 % of the unexpected ones were attributed "
        "to confirmed or suspected hardware issues; effective training time above 90 %. Rate = 419 / "
        "(2,048 servers of 8 GPUs x 54 days) x 1,000 = 3.79 failures per 1,000 node-days; job MTBF at "
        "2,048 nodes = 54 x 24 / 419 = 3.09 h. Counts every unexpected interruption of one job "
        "(software bugs included), planned ones excluded.",
    ),
)
_BY_NAME = {f.name: f for f in _FLEETS}


def fleet_rates() -> tuple[FleetRate, ...]:
    """Every published fleet rate, in the order of the ``failure-rates`` listing."""
    return _FLEETS


def fleet_rate(name: str) -> FleetRate:
    """The :class:`FleetRate` called ``name`` (case and surrounding spaces ignored)."""
    key = name.strip().lower() if isinstance(name, str) else None
    if key not in _BY_NAME:
        raise InputError("fleet", name, "must be one of the published fleets: " + ", ".join(_BY_NAME))
    return _BY_NAME[key]


def node_mtbf_h_from_rate(failures_per_1000_node_days):
    """Node MTBF in hours from a rate in failures per 1,000 node-days: ``24,000 / rate``.

    6.50 (Meta RSC-1) gives 3,692 h; exponential failures assumed (a rate is then a mean time).
    """
    (r,), wrap = prepare(("failures_per_1000_node_days", failures_per_1000_node_days, "positive"))
    with np.errstate(over="ignore", under="ignore"):
        out = HOURS_PER_1000_NODE_DAYS / r
    _check_mtbf(out, {"failures_per_1000_node_days": r}, "failures_per_1000_node_days", "24,000 / rate")
    return wrap(out)


def _check_mtbf(out: np.ndarray, inputs: dict[str, np.ndarray], name: str, what: str) -> None:
    """Refuse an MTBF beyond the float64 range or below the smallest normal float (lost precision, or 0)."""
    check_finite_result("failures_per_1000_node_days", out, f"{what} overflows: the rate must be >= "
                        f"{HOURS_PER_1000_NODE_DAYS / FLOAT_MAX:.6g}", inputs)
    bad = ~(out >= FLOAT_TINY)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else None
        at = {k: float(np.broadcast_to(v, np.shape(out))[idx or ()]) for k, v in inputs.items()}
        raise InputError(name, at[name], f"{what} = {float(np.asarray(out)[idx or ()]):.6g} underflows at "
                         + ", ".join(f"{k} = {v:.6g}" for k, v in at.items())
                         + f": an MTBF must stay >= {FLOAT_TINY:.6g} (the smallest normal float64)", idx)


def job_mtbf_h_from_fleet(name_or_rate, nodes):
    """Job MTBF in hours on ``nodes`` nodes at a published fleet's rate: ``24,000 / (rate * nodes)``.

    ``name_or_rate``: a fleet name (:func:`fleet_rates`), a :class:`FleetRate`, or a rate in failures
    per 1,000 node-days (number, array or Series). Broadcasts over ``nodes`` (whole numbers >= 1;
    a node holds the fleet's ``gpus_per_node`` GPUs). ``meta-rsc1`` gives 1.80 h at 2,048 nodes
    (16,384 GPUs) and 0.23 h at 16,384 nodes; ``llama3-405b`` 3.09 h at 2,048 nodes. Assumptions and
    limits: see the module notes (independent exponential node failures, any of which stops the job).
    """
    if isinstance(name_or_rate, str):
        rate: Any = fleet_rate(name_or_rate).failures_per_1000_node_days
    elif isinstance(name_or_rate, FleetRate):
        rate = name_or_rate.failures_per_1000_node_days
    else:
        rate = name_or_rate
    (r, n), wrap = prepare(("failures_per_1000_node_days", rate, "positive"), ("nodes", nodes, "count"))
    with np.errstate(over="ignore", under="ignore"):
        rn = r * n
        # where rate * nodes overflows, divide in two steps (the MTBF itself may still be a normal float)
        out = np.where(np.isfinite(rn), HOURS_PER_1000_NODE_DAYS / rn, HOURS_PER_1000_NODE_DAYS / r / n)
    _check_mtbf(out, {"failures_per_1000_node_days": r, "nodes": n}, "nodes", "24,000 / (rate * nodes)")
    return wrap(out)


def fleet_node_mtbf(sources: Any, node_mtbf_h: Any) -> tuple[Any, list[tuple[int, InputError]]]:
    """Node MTBF (hours) from each row's ``failure_rate_source`` (NaN where empty) and the bad rows.

    A source is a published fleet rate (:mod:`ckptplan.engine.fleets`); a row that also gives a
    different ``node_mtbf_h`` is refused (one figure per quantity), as is an unknown source
    (:func:`ckptplan.engine.published.published_values`).
    """
    from .published import published_values

    return published_values(sources, node_mtbf_h, lambda name: fleet_rate(name).node_mtbf_h, "failure_rate_source",
                            "node_mtbf_h")
