"""Preemption rates of spot capacity: a node's rate, the job's rate from it, and published presets.

A scenario gives its preemptions either for the job (``preemptions_per_h``: preemptions of the job per hour it
holds its GPUs) or for one node (``preemptions_per_node_h``: preemptions of one node per hour it is held), or
names a published band (``preemption_rate_source``) that gives the node's rate. The job's rate is::

    preemptions_per_h = nodes * preemptions_per_node_h

Assumptions (those of :func:`engine.reliability.job_mtbf`, ``M_node / nodes``, for failures): each node is
reclaimed independently, as a Poisson process of the node's rate, and the reclaim of any one node stops the job
(it cannot train on without it). The job's rate therefore follows ``nodes``: a design, a sweep or a scaling row
with twice the nodes doubles it. Where it breaks: a spot market reclaims capacity in waves (a whole instance
pool at once, correlated across nodes), which this independence misses; a wave is then one preemption of the
job, not ``nodes`` of them, and the sum overstates the job's rate. :func:`job_preemptions_per_h` is the one
place the job's rate is resolved (the table pass of :mod:`ckptplan.engine.scenario` and every
:class:`~ckptplan.engine.scenario.Scenario` consumer through :func:`scenario_preemptions_per_h`); a scenario that
gives both rates is refused ("give the job's rate or the node's, not both").

Published presets (:func:`spot_rates`): the AWS Spot Instance Advisor publishes, per instance type and
region, a "frequency of interruption", which AWS describes as "the rate at which Spot has reclaimed capacity
during the trailing month", in the bands "< 5%, 5-10%, 10-15%, 15-20% and >20%" [AWS]. A band is a fraction ``f``
of a node's capacity reclaimed in a month. Read as an exponential per-node rate ``r`` (a node held the whole
month is reclaimed at least once with probability ``1 - exp(-r * 730 h) = f``)::

    r = -ln(1 - f) / 730   [per node-hour]        (730 h = 8,760 h / 12: the providers' billing month, engine.storage)

Assumptions of the conversion: reclaims are independent and exponential (constant rate through the month),
and the month's fraction is per node held the whole month. Where it breaks: the advisor's figure is an
average over the instance type's pool in the region over the trailing month (not a forecast), and its
exact definition (per instance, per instance-hour) is AWS's: these presets are a first estimate, to be replaced
by a rate measured on your own jobs. Each preset sits at its band's UPPER edge (a conservative figure: the
true rate of an instance type in the band is at most it), except the open band ``>20%``, which sits at 20 %:
a LOWER bound, the true rate may be much higher.

Sources
-------
* [AWS] Amazon Web Services, "Spot Instance Advisor", https://aws.amazon.com/ec2/spot/instance-advisor/ (data
  file https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .errors import InputError
from .gate import prepare
from .published import published_values
from .storage import HOURS_PER_BILLING_MONTH

__all__ = ["HOURS_PER_MONTH", "SpotRate", "job_preemptions_per_h", "node_rate_from_monthly_fraction", "on_demand_changes", "PREEMPTION_RATE_FIELDS", "replaced_preemption_rates",
           "preemption_rate_problems", "scenario_preemptions_per_h", "spot_node_rates", "spot_rate", "spot_rates"]

#: hours in the advisor's month: the cloud providers' 730 h (8,760 h / 12), as their billing month
HOURS_PER_MONTH = HOURS_PER_BILLING_MONTH

_AWS = ('Amazon Web Services, "Spot Instance Advisor", https://aws.amazon.com/ec2/spot/instance-advisor/ '
        '(data file https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json): "frequency of interruption", '
        '"the rate at which Spot has reclaimed capacity during the trailing month", in the bands '
        '"< 5%, 5-10%, 10-15%, 15-20% and >20%"')
_CONVERSION = ("r = -ln(1 - f) / 730 per node-hour: f, the fraction of a node's capacity reclaimed in a month, read "
               "as the probability that a node held the whole month (730 h = 8,760 h / 12, the providers' billing month) is reclaimed, with "
               "independent exponential reclaims at a constant rate")


def node_rate_from_monthly_fraction(fraction):
    """Preemptions per node-hour from the fraction ``f`` of a node's capacity reclaimed per month:
    ``-ln(1 - f) / 730`` (module notes: exponential, independent reclaims; ``f`` per node held the whole month).

    ``fraction`` in [0, 1) (a number, array or Series). 0.05 gives 7.03e-5 per node-hour.
    """
    (f,), wrap = prepare(("fraction", fraction, "fraction"))
    return wrap(-np.log1p(-f) / HOURS_PER_MONTH)


@dataclass(frozen=True)
class SpotRate:
    """One published preemption band: ``band`` as published, ``fraction_per_month`` the figure used (its upper
    edge, or the lower edge of the open band), ``conversion`` how the node's rate follows, ``note`` what the
    figure is (conservative or a lower bound), ``source`` the full citation."""

    name: str
    band: str
    fraction_per_month: float
    conversion: str
    note: str
    source: str

    @property
    def edge(self) -> str:
        """Which edge of its band the figure is: ``upper edge``, or ``lower bound`` for the open band (``>20%``)."""
        return "lower bound" if self.band.startswith(">") else "upper edge"

    @property
    def preemptions_per_node_h(self) -> float:
        """Preemptions per node-hour: ``-ln(1 - fraction_per_month) / 730``."""
        return float(node_rate_from_monthly_fraction(self.fraction_per_month))

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict, with ``preemptions_per_node_h`` added (JSON-ready)."""
        return {**asdict(self), "preemptions_per_node_h": self.preemptions_per_node_h}


def _upper(name: str, band: str, f: float) -> SpotRate:
    return SpotRate(name, band, f, _CONVERSION,
                    f"Published band {band}, at its upper edge f = {f:.0%}: a conservative figure (an instance type in "
                    "the band is reclaimed at most this often, by the advisor's trailing month).", _AWS)


_RATES: tuple[SpotRate, ...] = (
    _upper("aws-advisor-under-5pct", "< 5%", 0.05),
    _upper("aws-advisor-5-10pct", "5-10%", 0.10),
    _upper("aws-advisor-10-15pct", "10-15%", 0.15),
    _upper("aws-advisor-15-20pct", "15-20%", 0.20),
    SpotRate("aws-advisor-over-20pct", ">20%", 0.20, _CONVERSION,
             "Published band >20%, at 20 %: a LOWER BOUND, not an estimate. The band is open above; an instance type "
             "in it may be reclaimed far more often. Plan with your own measured rate before trusting this one.", _AWS),
)
_BY_NAME = {r.name: r for r in _RATES}


def spot_rates() -> tuple[SpotRate, ...]:
    """Every published preemption band, in the order of the ``preemption-rates`` listing."""
    return _RATES


def spot_rate(name: str) -> SpotRate:
    """The :class:`SpotRate` called ``name`` (case and surrounding spaces ignored)."""
    key = name.strip().lower() if isinstance(name, str) else None
    if key not in _BY_NAME:
        raise InputError("preemption_rate_source", name, "must be one of the published spot bands: " + ", ".join(_BY_NAME))
    return _BY_NAME[key]


def job_preemptions_per_h(preemptions_per_h, preemptions_per_node_h, nodes):
    """The job's preemptions per hour: ``preemptions_per_h`` where given (not NaN), else
    ``nodes * preemptions_per_node_h`` (NaN where neither is given). The one place the job's rate is resolved
    (module notes: independent node reclaims, any of which stops the job). Arrays of the table pass, already
    validated: broadcasts, checks nothing."""
    job = np.asarray(preemptions_per_h, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        from_nodes = np.asarray(nodes, dtype=np.float64) * np.asarray(preemptions_per_node_h, dtype=np.float64)
    return np.where(np.isnan(job), from_nodes, job)


def scenario_preemptions_per_h(scenario: Any) -> float | None:
    """A :class:`~ckptplan.engine.scenario.Scenario`'s job preemption rate (per hour; None: on-demand capacity):
    its ``preemptions_per_h``, else ``nodes`` x its ``preemptions_per_node_h`` (a published source was resolved
    into that when the scenario was made), by :func:`job_preemptions_per_h`."""
    job, node = getattr(scenario, "preemptions_per_h", None), getattr(scenario, "preemptions_per_node_h", None)
    if job is None and node is None:
        return None
    return float(job_preemptions_per_h(np.nan if job is None else job, np.nan if node is None else node,
                                       scenario.nodes))


#: one preemption rate per row: each preemption-rate field and the others a value of it replaces (a command line's
#: option over the template's, a swept or ranged rate over the base's, a file's column over the template's)
PREEMPTION_RATE_FIELDS: dict[str, tuple[str, ...]] = {
    "preemptions_per_h": ("preemptions_per_node_h", "preemption_rate_source"),
    "preemptions_per_node_h": ("preemptions_per_h", "preemption_rate_source"),
    "preemption_rate_source": ("preemptions_per_h", "preemptions_per_node_h"),
}


def replaced_preemption_rates(given: Any) -> dict[str, Any]:
    """The preemption-rate fields the fields ``given`` (names) replace, blank (``""`` the band, None a rate), those
    given themselves left out: :data:`PREEMPTION_RATE_FIELDS`. Nothing for fields that are not preemption rates."""
    given = set(given)
    out: dict[str, Any] = {}
    for name in PREEMPTION_RATE_FIELDS:
        if name not in given and any(name in PREEMPTION_RATE_FIELDS.get(g, ()) for g in given):
            out[name] = "" if name == "preemption_rate_source" else None
    return out


def on_demand_changes(scenario: Any) -> dict[str, Any]:
    """The changes that put a scenario on on-demand capacity (no preemption rate of any kind): for
    ``scenario.replace`` or :func:`engine.scenario.derived_scenario`."""
    out: dict[str, Any] = {"preemptions_per_h": None, "preemptions_per_node_h": None}
    if getattr(scenario, "preemption_rate_source", None):
        out["preemption_rate_source"] = ""
    return out


def spot_node_rates(sources: Any, node_rates: Any) -> tuple[np.ndarray, list[tuple[int, InputError]]]:
    """Preemptions per node-hour from each row's ``preemption_rate_source`` (NaN where empty) and the bad rows.

    A source is a published band (:func:`spot_rates`); a row that also gives a different
    ``preemptions_per_node_h`` is refused (one figure per quantity, the rule of ``failure_rate_source``), as is
    an unknown source (:func:`ckptplan.engine.published.published_values`).
    """
    return published_values(sources, node_rates, lambda name: spot_rate(name).preemptions_per_node_h,
                            "preemption_rate_source", "preemptions_per_node_h")


#: the rule of a row that gives both rates
BOTH_RULE = "give the job's rate or the node's, not both"


def preemption_rate_problems(table: Any, eff: dict[str, np.ndarray], ok: dict[str, np.ndarray], problems: Any) -> None:
    """The table pass's preemption rates, in place: a row's ``preemption_rate_source`` gives its
    ``preemptions_per_node_h`` (:func:`spot_node_rates`); a row that gives the job's rate and the node's (or a
    band) is refused naming both; then ``eff["preemptions_per_h"]`` becomes the job's rate,
    :func:`job_preemptions_per_h` of the row's ``nodes``. ``problems``: a
    :class:`~ckptplan.engine.scenario.RowProblems`."""
    node, banded = eff["preemptions_per_node_h"], np.zeros(len(table), dtype=bool)
    if "preemption_rate_source" in table.columns:
        from_band, bad = spot_node_rates(table["preemption_rate_source"], node)
        for p, err in bad:
            problems.add(np.array([p]), lambda _p, err=err: err)
        banded = ~np.isnan(from_band)
        if banded.any():
            node = eff["preemptions_per_node_h"] = np.where(banded, from_band, node)
            ok["preemptions_per_node_h"] = ok["preemptions_per_node_h"] | banded
    job = eff["preemptions_per_h"]
    both = ~np.isnan(job) & ~np.isnan(node)
    if both.any():
        both &= ok["preemptions_per_h"] & ok["preemptions_per_node_h"]
        problems.add(np.flatnonzero(both), lambda p: InputError(
            "preemptions_per_h", float(job[p]), f"{BOTH_RULE}: the row also gives "
            + ("preemption_rate_source" if banded[p] else "preemptions_per_node_h")
            + f" (preemptions_per_node_h = {float(node[p]):g})"))
    if not np.isnan(node).all():
        eff["preemptions_per_h"] = rate = job_preemptions_per_h(job, node, eff["nodes"])
        huge = np.isinf(rate)
        if huge.any():
            problems.add(np.flatnonzero(huge), lambda p: InputError(
                "preemptions_per_node_h", float(node[p]), f"nodes x preemptions_per_node_h (the job's rate) "
                f"overflows at nodes = {float(eff['nodes'][p]):g}: it must stay within the float64 range"))
