"""Job-level reliability: from node, GPU and failure-domain figures to the job's MTBF.

A training job that spans ``nodes`` nodes is interrupted whenever any one of them fails (a
synchronous data/model-parallel job cannot continue without a member). With independent,
exponential node failures the job's failure rate is the sum of the node rates, so

    M_job = M_node / nodes.

This division is the standard first step (e.g. Daly 2006's "system MTTI"; Meta, "The Llama 3 Herd
of Models", 2024, section 3.3.4, reports 419 unexpected interruptions over a 54-day snapshot of
16,384 GPUs). It is wrong when failures are *correlated*: a rack switch, PDU or power domain takes
down many nodes in one event. Counted as node failures, such an event would be counted once per
node, which overstates the job's interruption count; left out, it is missing entirely. Model it as
a separate failure domain (:func:`job_failure_rate_per_h` with ``domains``), with node MTBF
describing only the independent failures. It is also wrong for short horizons right after
maintenance or with failure clustering (non-exponential failures): use the Monte Carlo in
:mod:`ckptplan.engine.montecarlo`.

Units: every MTBF in hours, rates per hour. Functions broadcast over scalars, arrays and Series.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .errors import InputError
from .gate import FLOAT_TINY, as_float_array, broadcast, wrapper

__all__ = ["FailureDomain", "domains_spanned", "job_failure_rate_kernel", "job_failure_rate_per_h", "job_mtbf",
           "job_mtbf_with_domains", "node_mtbf_from_gpus"]


def job_mtbf(node_mtbf, nodes):
    """Job MTBF ``node_mtbf / nodes`` for independent failures where any node stops the job.

    2,560 h per node gives 20 h at 128 nodes and 10 h at 256. Assumes independent exponential node
    failures and a job that needs every node; see the module notes for where that breaks. A result
    below the smallest normal float (``node_mtbf = 1e-300`` over ``10**10`` nodes: it would underflow
    to 0) is refused naming ``node_mtbf`` and the limit.
    """
    m = as_float_array("node_mtbf", node_mtbf, "positive")
    n = as_float_array("nodes", nodes, "count")
    wrap = wrapper(node_mtbf, nodes)
    m, n = broadcast(node_mtbf=m, nodes=n)
    with np.errstate(under="ignore"):
        out = m / n
    _check_mtbf("node_mtbf", m, out, "node_mtbf / nodes")
    return wrap(out)


def _check_mtbf(name: str, given: np.ndarray, mtbf: np.ndarray, what: str) -> None:
    """Refuse an MTBF that underflowed: below the smallest normal float it has lost its precision (or is 0)."""
    bad = ~(mtbf >= FLOAT_TINY)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else None
        value = np.broadcast_to(given, np.shape(bad))[idx or ()]
        raise InputError(name, float(value), f"{what} = {float(np.asarray(mtbf)[idx or ()]):.6g} underflows: a job "
                         f"MTBF must stay >= {FLOAT_TINY:.6g} (the smallest normal float64)", idx)


def node_mtbf_from_gpus(gpu_mtbf_h, gpus_per_node, other_mtbf_h=np.inf):
    """Node MTBF from per-GPU MTBF, GPUs per node and the rest of the node (host, NIC, memory).

    ``1 / (gpus_per_node / gpu_mtbf_h + 1 / other_mtbf_h)``; ``other_mtbf_h = inf`` counts GPU
    failures only. Assumes independent exponential component failures, any of which stops the node.
    """
    g = as_float_array("gpu_mtbf_h", gpu_mtbf_h, "positive")
    k = as_float_array("gpus_per_node", gpus_per_node, "count")
    o = as_float_array("other_mtbf_h", other_mtbf_h, "positive", allow_inf=True)
    wrap = wrapper(gpu_mtbf_h, gpus_per_node, other_mtbf_h)
    g, k, o = broadcast(gpu_mtbf_h=g, gpus_per_node=k, other_mtbf_h=o)
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        out = 1.0 / (k / g + 1.0 / o)
    _check_mtbf("gpu_mtbf_h", g, out, "1 / (gpus_per_node / gpu_mtbf_h + 1 / other_mtbf_h)")
    return wrap(out)


@dataclass(frozen=True)
class FailureDomain:
    """A correlated failure domain: one event takes down every node in it (and so the job).

    ``mtbf_h``: mean time between events of *one* domain (a rack, a power domain);
    ``nodes_per_domain``: how many nodes one domain holds. The job's nodes are assumed packed into
    as few domains as possible: it spans ``ceil(nodes / nodes_per_domain)`` domains.
    """

    name: str
    mtbf_h: Any
    nodes_per_domain: Any


def domains_spanned(nodes, nodes_per_domain):
    """Number of domains a job of ``nodes`` nodes spans when packed: ``ceil(nodes / nodes_per_domain)``."""
    n = as_float_array("nodes", nodes, "count")
    d = as_float_array("nodes_per_domain", nodes_per_domain, "count")
    wrap = wrapper(nodes, nodes_per_domain)
    n, d = broadcast(nodes=n, nodes_per_domain=d)
    return wrap(np.ceil(n / d))


def job_failure_rate_per_h(node_mtbf_h, nodes, domains: Iterable[FailureDomain] = (), nonfatal_share=0.0):
    """Rate of job-stopping failures per hour.

    ``(1 - nonfatal_share) * nodes / node_mtbf_h + sum_d ceil(nodes / nodes_per_domain_d) / mtbf_h_d``

    * ``nonfatal_share``: the share of independent node failures the job survives (in-job
      recovery, hot spares, a retried collective); they cost nothing here. Domain outages are
      always fatal: a job cannot survive losing a whole rack or power domain.
    * ``domains``: :class:`FailureDomain` records (or ``(mtbf_h, nodes_per_domain)`` pairs); each
      adds its events to the job's rate. Node MTBF must then count only the failures that are not
      domain events, or they are counted twice.

    Assumes exponential, mutually independent event streams. Adding a domain never lowers the rate.
    """
    m = as_float_array("node_mtbf_h", node_mtbf_h, "positive", allow_inf=True)
    n = as_float_array("nodes", nodes, "count")
    share = as_float_array("nonfatal_share", nonfatal_share, "fraction")
    originals = [node_mtbf_h, nodes, nonfatal_share]
    parts = {"node_mtbf_h": m, "nodes": n, "nonfatal_share": share}
    for i, dom in enumerate(domains):
        if isinstance(dom, FailureDomain):
            label, mtbf, per = dom.name or f"domains[{i}]", dom.mtbf_h, dom.nodes_per_domain
        else:
            try:
                mtbf, per = dom
            except (TypeError, ValueError):
                raise InputError(f"domains[{i}]", dom, "must be a FailureDomain or a (mtbf_h, nodes_per_domain) pair") from None
            label = f"domains[{i}]"
        parts[f"{label}.mtbf_h"] = as_float_array(f"{label}.mtbf_h", mtbf, "positive", allow_inf=True)
        parts[f"{label}.nodes_per_domain"] = as_float_array(f"{label}.nodes_per_domain", per, "count")
        originals += [mtbf, per]
    wrap = wrapper(*originals)
    arrays = broadcast(**parts)
    m, n, share = arrays[:3]
    pairs = [(arrays[k], arrays[k + 1]) for k in range(3, len(arrays), 2)]
    return wrap(job_failure_rate_kernel(m, n, share, pairs))


def job_failure_rate_kernel(m, n, share, domains):
    """:func:`job_failure_rate_per_h` on validated arrays; ``domains``: (mtbf_h, nodes_per_domain) pairs.

    Raises :class:`InputError` (on ``node_mtbf_h``) where the rate overflows: the job MTBF would be 0.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        rate = (1.0 - share) * n / m
        for mtbf, per in domains:
            rate = rate + np.ceil(n / per) / mtbf
    bad = ~np.isfinite(rate)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else None
        value = np.broadcast_to(m, np.shape(bad))[idx or ()]
        raise InputError("node_mtbf_h", float(value), f"the job's failure rate (nodes / node_mtbf_h + domains) "
                         f"overflows the float64 range: the job MTBF would underflow to 0 (below {FLOAT_TINY:.6g} h, "
                         "the smallest normal float64)", idx)
    return rate


def job_mtbf_with_domains(node_mtbf_h, nodes, domains: Iterable[FailureDomain] = (), nonfatal_share=0.0):
    """Job MTBF in hours, ``1 / job_failure_rate_per_h(...)`` (see there for the model).

    Raises when no failure can stop the job (every rate zero): the MTBF would be infinite and no
    checkpoint interval is optimal.
    """
    rate = job_failure_rate_per_h(node_mtbf_h, nodes, domains, nonfatal_share)
    if np.any(np.asarray(rate) <= 0):
        raise InputError("node_mtbf_h", node_mtbf_h,
                         "no failure can stop the job (infinite MTBF or every failure non-fatal): give a finite MTBF")
    with np.errstate(over="ignore"):
        out = 1.0 / rate
    if np.any(np.asarray(out) < FLOAT_TINY):
        raise InputError("node_mtbf_h", node_mtbf_h, f"the job MTBF 1 / failure rate underflows below {FLOAT_TINY:.6g} h "
                         "(the smallest normal float64): the job fails too often for any checkpoint plan")
    if not np.all(np.isfinite(np.asarray(out))):
        raise InputError("node_mtbf_h", node_mtbf_h, "the job's failure rate is so close to 0 that the job MTBF "
                         "1 / rate overflows the float64 range: give a finite MTBF (or a smaller nonfatal_share)")
    return out
