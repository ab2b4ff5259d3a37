"""Input ranges: a scenario input given as low / base / high or as a distribution, declared once.

A planner does not know the node MTBF or the storage bandwidth exactly. A scenario file's
``[uncertainty]`` table says how wrong each input may be, by field name (the registry's,
:data:`ckptplan.engine.fields.FIELDS` and :data:`~ckptplan.engine.fields.SETUP_FIELDS`)::

    [uncertainty]
    node_mtbf_h = [1500, 4000]                                   # low, high (triangular around the base)
    restart_min = {dist = "pert", low = 5, mode = 10, high = 30}
    aggregate_write_gb_s = {dist = "lognormal", low = 1000, high = 3000}

The base is the scenario's own value (the one every other command plans with). The swing of a
tornado runs from ``low`` to ``high`` (:mod:`engine.sensitivity`); a Monte Carlo over the inputs
draws each input independently from its distribution (:mod:`engine.risk`). The distributions
(:data:`DISTRIBUTIONS`, inverse CDFs in :meth:`UncertainInput.quantile`):

* ``[low, high]``: the three-point estimate ``low / base / high`` as a triangular distribution
  whose mode is the base;
* ``triangular`` (``low``, ``mode``, ``high``; ``mode`` defaults to the base): inverse CDF
  ``low + sqrt(u (high - low)(mode - low))`` below ``F(mode) = (mode - low)/(high - low)``, else
  ``high - sqrt((1 - u)(high - low)(high - mode))``;
* ``pert`` (``low``, ``mode``, ``high``): the Beta-PERT of Malcolm et al. (Operations Research
  7(5), 1959; shape 4 as Vose, "Risk Analysis", 3rd ed., 2008, sec. 9.1.4): ``low + (high - low) B``
  with ``B ~ Beta(1 + 4 (mode - low)/(high - low), 1 + 4 (high - mode)/(high - low))``;
* ``uniform`` (``low``, ``high``);
* ``lognormal`` (``low``, ``high`` its 5th and 95th percentiles, ``0 < low < high``): ``log X``
  normal with mean ``(log low + log high)/2`` and standard deviation
  ``(log high - log low)/(2 z_0.95)``. Unbounded above: the only one whose draws leave ``[low, high]``.

Rules, checked where the file is read (:func:`uncertainty_from_dict`, :class:`InputError` naming
the field, the value and the rule): the key is a numeric scenario or setup field, or a failure domain's
number (``domain1_mtbf_h``, ``domain1_nodes_per_domain``: the scenario's first ``[[scenario.domains]]``
entry), that has a base value; ``low``, ``high`` (and ``mode``) are finite numbers meeting the field's own rule;
``low <= base <= high`` with ``low < high``; ``low <= mode <= high``; whole-number fields (nodes,
spares) take whole ends and their draws are rounded to whole numbers; a lognormal needs a field
whose rule admits every positive number (not a fraction or share).

A range on a stall, background write or restart that the storage and recovery setup derives states
it (as typing it in would): the setup's parts (bandwidths, restart parts, spares) no longer move it in
the plans of that range. To let spares or a bandwidth act on the restart, give ranges on the parts
(``repair_h``, ``detection_min``, ``aggregate_read_gb_s`` ...) instead.

Assumptions: inputs vary independently (no correlation between, say, the MTBF and the restart);
a distribution is a planner's belief, not a fit (a fitted MTBF's confidence interval, from
``ckptplan fit``, can be typed in as ``[low, high]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from .errors import InputError
from .fields import DOMAIN_FIELDS, FIELD_BY_NAME, RULES, SETUP_FIELD_BY_NAME, Field, domain_field

__all__ = ["DISTRIBUTIONS", "Distribution", "RANGE_PARTS", "UncertainInput", "base_values", "blank_cell", "entry_cells",
           "range_column", "range_from_cells", "uncertain_field", "uncertainty_from_dict", "uncertainty_to_dict"]

#: the suffixes of a table's range columns: ``<field>_low``, ``<field>_high``, ``<field>_mode``, ``<field>_dist``
RANGE_PARTS = ("low", "high", "mode", "dist")

#: the standard normal quantile at 0.95: a lognormal's low and high are its 5th and 95th percentiles
Z95 = 1.6448536269514722


@dataclass(frozen=True)
class Distribution:
    """One kind of input distribution: its name (``dist = ...``), required and optional keys, meaning."""

    name: str
    keys: tuple[str, ...]
    optional: tuple[str, ...]
    text: str


#: every distribution an ``[uncertainty]`` entry may name (the ``[low, high]`` form is ``range``)
DISTRIBUTIONS: dict[str, Distribution] = {d.name: d for d in (
    Distribution("range", ("low", "high"), (), "three-point low / base / high: triangular with its mode at the base"),
    Distribution("triangular", ("low", "high"), ("mode",), "triangular from low to high, mode (default the base)"),
    Distribution("pert", ("low", "high"), ("mode",), "Beta-PERT from low to high, mode (default the base)"),
    Distribution("uniform", ("low", "high"), (), "uniform from low to high"),
    Distribution("lognormal", ("low", "high"), (), "lognormal whose 5th and 95th percentiles are low and high"),
)}


def _numeric_field(name: Any) -> Field | None:
    """The registry entry of a numeric scenario or setup field, or of a failure domain's number
    (``domain{i}_mtbf_h``, ``domain{i}_nodes_per_domain``; :data:`ckptplan.engine.fields.DOMAIN_FIELDS`)."""
    if not isinstance(name, str):
        return None
    spec = FIELD_BY_NAME.get(name) or SETUP_FIELD_BY_NAME.get(name)
    if spec is None and name.startswith("domain"):
        head, _, part = name[len("domain"):].partition("_")
        if head.isdigit() and int(head) >= 1 and not head.startswith("0") and part in {f.name for f in DOMAIN_FIELDS}:
            spec = domain_field(int(head), part)
    return spec


def uncertain_field(name: str) -> Field:
    """The registry entry of a field an ``[uncertainty]`` table may name (a numeric scenario or setup field, or a
    failure domain's ``domain{i}_mtbf_h`` / ``domain{i}_nodes_per_domain``); :class:`InputError` otherwise."""
    spec = _numeric_field(name)
    if spec is None:
        raise InputError(f"uncertainty: {name}", name, "is not a numeric scenario or setup field")
    return spec


def range_column(name: Any) -> tuple[str, str] | None:
    """``(field, part)`` of a table column that gives a range (``node_mtbf_h_low`` -> ``("node_mtbf_h", "low")``;
    :data:`RANGE_PARTS`), None for any other column."""
    if not isinstance(name, str) or _numeric_field(name) is not None:
        return None
    field, _, part = name.rpartition("_")
    if part in RANGE_PARTS and _numeric_field(field) is not None:
        return field, part
    return None


@dataclass(frozen=True)
class UncertainInput:
    """One uncertain input: ``field`` from ``low`` to ``high`` around ``base`` (the scenario's value)."""

    field: str
    dist: str
    low: float
    high: float
    base: float
    mode: float | None = None

    @property
    def peak(self) -> float:
        """The mode of a triangular or PERT (the base unless given)."""
        return self.base if self.mode is None else self.mode

    @property
    def integer(self) -> bool:
        return uncertain_field(self.field).integer

    def quantile(self, u: Any) -> np.ndarray:
        """The input's value at probability ``u`` (inverse CDF, vectorised); whole-number fields rounded."""
        u = np.asarray(u, dtype=float)
        lo, hi = self.low, self.high
        if self.dist in ("range", "triangular"):
            c = self.peak
            f = (c - lo) / (hi - lo)
            with np.errstate(invalid="ignore"):
                x = np.where(u < f, lo + np.sqrt(u * (hi - lo) * (c - lo)),
                             hi - np.sqrt((1 - u) * (hi - lo) * (hi - c)))
        elif self.dist == "pert":
            from scipy.special import betaincinv

            a = 1 + 4 * (self.peak - lo) / (hi - lo)
            b = 1 + 4 * (hi - self.peak) / (hi - lo)
            x = lo + (hi - lo) * betaincinv(a, b, u)
        elif self.dist == "uniform":
            x = lo + (hi - lo) * u
        else:  # lognormal
            from scipy.special import ndtri

            mu = 0.5 * (math.log(lo) + math.log(hi))
            sigma = (math.log(hi) - math.log(lo)) / (2 * Z95)
            x = np.exp(mu + sigma * ndtri(u))
        if self.integer:
            x = np.maximum(np.rint(x), 1.0 if uncertain_field(self.field).rule == "count" else 0.0)
        return x

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent draws (inverse CDF of uniforms from ``rng``)."""
        return self.quantile(rng.random(n))

    def to_dict(self) -> Any:
        """The entry as a scenario file writes it (``[low, high]`` or a table)."""
        if self.dist == "range":
            return [self.low, self.high]
        out: dict[str, Any] = {"dist": self.dist, "low": self.low, "high": self.high}
        if self.mode is not None:
            out["mode"] = self.mode
        return out


def _finite(value: Any) -> bool:
    """Whether a number is finite as a float (an integer beyond the float range is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(where: str, key: str, value: Any, spec: Field) -> float:
    """A finite number meeting the field's rule (whole for whole-number fields)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
        raise InputError(f"{where}.{key}", value, "must be a finite number")
    rule = RULES[spec.rule]
    if not bool(rule.predicate(np.asarray([float(value)]))[0]):
        raise InputError(f"{where}.{key}", value, f"{rule.message} (the rule of {spec.name})")
    return float(value)


def _entry(name: str, raw: Any, base: Any, origin: str) -> UncertainInput:
    """One ``[uncertainty]`` entry, checked (module notes)."""
    where = f"{origin}: uncertainty.{name}"
    spec = uncertain_field(name)
    if isinstance(raw, (list, tuple)):
        if len(raw) != 2:
            raise InputError(where, list(raw), "must be [low, high] or a table with dist, low and high")
        raw = {"dist": "range", "low": raw[0], "high": raw[1]}
    if not isinstance(raw, Mapping):
        raise InputError(where, raw, "must be [low, high] or a table with dist, low and high")
    dist = raw.get("dist")
    if dist not in DISTRIBUTIONS:
        raise InputError(f"{where}.dist", dist, "must be one of " + ", ".join(
            repr(d) for d in DISTRIBUTIONS if d != "range"))
    kind = DISTRIBUTIONS[dist]
    unknown = sorted(set(raw) - {"dist", *kind.keys, *kind.optional})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", raw[unknown[0]], f"unknown key for a {dist} distribution; it takes "
                         + ", ".join(kind.keys + kind.optional))
    missing = [k for k in kind.keys if k not in raw]
    if missing:
        raise InputError(f"{where}.{missing[0]}", None, f"is required for a {dist} distribution")
    if base is None:
        raise InputError(where, None, f"{name} has no value in the scenario to vary around: give it one in [scenario]")
    values = {k: _number(where, k, raw[k], spec) for k in (*kind.keys, *kind.optional) if k in raw}
    low, high, base = values["low"], values["high"], float(base)
    if not low < high:
        raise InputError(where, [low, high], "must have low < high")
    if not low <= base <= high:
        raise InputError(where, [low, high], f"must hold the scenario's value {name} = {base:g} (low <= base <= high)")
    mode = values.get("mode")
    if mode is not None and not low <= mode <= high:
        raise InputError(f"{where}.mode", mode, f"must lie in [low, high] = [{low:g}, {high:g}]")
    if spec.integer and not (low.is_integer() and high.is_integer()):
        raise InputError(where, [low, high], f"{name} is a whole number: give whole low and high")
    if dist == "lognormal" and spec.rule not in ("positive", "nonnegative", "count", "whole") or (
            dist == "lognormal" and low <= 0):
        raise InputError(where, [low, high], f"a lognormal needs 0 < low and a field that takes any positive number "
                         f"({name} {spec.check.message})")
    return UncertainInput(name, dist, low, high, base, mode)


def _cell_number(value: Any) -> tuple[float | None, str | None]:
    """A range cell as a number (None: blank: empty, NaN or a word for "not given") or why it is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or (
            isinstance(value, str) and value.strip().lower() in ("", "na", "n/a", "null", "none", "nan")):
        return None, None
    if isinstance(value, (bool, np.bool_)):
        return None, "must be a number"
    try:
        x = float(value.strip() if isinstance(value, str) else value)
    except OverflowError:   # a whole number beyond the float range
        return None, "must be a finite number"
    except (TypeError, ValueError):
        return None, "must be a number"
    return (x, None) if math.isfinite(x) else (None, "must be a finite number")


def blank_cell(value: Any) -> bool:
    """Whether a range cell is blank (empty, NaN or a word for "not given": na, n/a, null, none, nan)."""
    return _cell_number(value) == (None, None) and not isinstance(value, (bool, np.bool_))


def entry_cells(name: str, raw: Any, origin: str = "scenario") -> dict[str, Any]:
    """An ``[uncertainty]`` entry (``[low, high]``, a distribution table, or an :class:`UncertainInput`) as the
    cells of a table's range columns (:data:`RANGE_PARTS`; a ``dist`` of None is the three-point range), without
    the checks against a base value (each row's own, :func:`range_from_cells`). :class:`InputError` naming the
    entry when it is no numeric field's or its shape is wrong."""
    if isinstance(raw, UncertainInput):
        return {"low": raw.low, "high": raw.high, "mode": raw.mode, "dist": None if raw.dist == "range" else raw.dist}
    where = f"{origin}: uncertainty.{name}"
    try:
        uncertain_field(name)
    except InputError as exc:
        raise InputError(f"{origin}: {exc.field}", exc.value, exc.rule) from None
    if isinstance(raw, (list, tuple)) and len(raw) == 2:
        return {"low": raw[0], "high": raw[1], "mode": None, "dist": None}
    if not isinstance(raw, Mapping):
        raise InputError(where, raw, "must be [low, high] or a table with dist, low and high")
    unknown = sorted(set(raw) - {"dist", "low", "high", "mode"})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", raw[unknown[0]], "unknown key; an entry takes dist, low, high, mode")
    return {part: raw.get(part) for part in RANGE_PARTS}


def range_from_cells(field: str, cells: Mapping[str, Any], base: Any, origin: str = "row"
                     ) -> tuple[UncertainInput | None, tuple[tuple[str, ...], str] | None]:
    """One input range given as cells (a table's ``<field>_low`` / ``_high`` / ``_mode`` / ``_dist`` columns, or
    a workbook's Low / High / Shape / Mode cells): ``cells`` maps :data:`RANGE_PARTS` to the cells' values.

    Returns ``(input, None)``, ``(None, None)`` when every cell is blank (no range), or ``(None, (parts, rule))``:
    the cells at fault (parts; none when the rule names them itself) and the rule they break. The checks are
    the ``[uncertainty]`` table's (module notes); blank ``dist``: the three-point range, or a triangular when a mode is given."""
    given: dict[str, float] = {}
    for part in ("low", "high", "mode"):
        x, problem = _cell_number(cells.get(part))
        if problem:
            return None, ((part,), problem)
        if x is not None:
            given[part] = x
    dist = cells.get("dist")
    dist = None if dist is None or (isinstance(dist, float) and math.isnan(dist)) else str(dist).strip().lower() or None
    if not given and dist is None:
        return None, None
    for part, other in (("low", "high"), ("high", "low")):
        if part not in given:
            return None, ((), f"{field}_{part} is blank: a range needs {field}_low and {field}_high (given "
                              f"{field}_{other})" if other in given else
                          f"{field}_low and {field}_high are blank: a shape or mode needs a range")
    if dist is not None and dist not in DISTRIBUTIONS:
        return None, (("dist",), "must be one of " + ", ".join(d for d in DISTRIBUTIONS if d != "range"))
    raw: dict[str, Any] = {"dist": dist or ("triangular" if "mode" in given else "range"), **given}
    if raw["dist"] in ("uniform", "lognormal", "range") and "mode" in given:
        return None, (("mode",), f"a {raw['dist']} distribution takes no mode")
    try:
        return _entry(field, raw, base, origin), None
    except InputError as exc:
        one = exc.field.rpartition(".")[2]   # a rule of one cell (low, mode or high) names that cell
        named = tuple(k for k in ("low", "mode", "high") if k in given and (one not in given or k == one))
        return None, (named, exc.rule.replace("the scenario's value", f"the {origin}'s value"))


def base_values(scenario: Any, setup: Any = None, names: Any = ()) -> dict[str, Any]:
    """The value each scenario and setup field has in the plan of ``scenario`` with ``setup`` (None where it
    has none): the base an input range is drawn around. A stall, write or restart the setup derives (not
    stated) is the derived one (:func:`engine.setup.plan_setup`, single-level), computed only when ``names``
    asks for it."""
    from .designs import scenario_values
    from .setup import DERIVED, plan_setup

    values = dict(scenario_values(scenario))
    if setup is not None:
        values.update({k: getattr(setup, k) for k in SETUP_FIELD_BY_NAME})
        derived = [n for n in names if n in setup.derives()]
        if derived:
            single = plan_setup(scenario, setup.replace(tiers=(), failure_classes={})).scenario
            values.update({n: getattr(single, n) for n in DERIVED if n in derived})
    return values


def uncertainty_from_dict(data: Any, scenario: Any, setup: Any = None, origin: str = "scenario"
                          ) -> tuple[UncertainInput, ...]:
    """The checked entries of an ``[uncertainty]`` table (field -> ``[low, high]`` or a distribution table)
    around the plan of ``scenario`` with ``setup`` (:func:`base_values`). Raises :class:`InputError` naming
    the file, the field, the value and the rule (module notes).
    """
    if data is None:
        return ()
    if not isinstance(data, Mapping):
        raise InputError(f"{origin}: uncertainty", data, "must be a table of field = [low, high] or a distribution")
    for name in data:
        try:
            uncertain_field(str(name))
        except InputError as exc:
            raise InputError(f"{origin}: {exc.field}", exc.value, exc.rule) from None
    base = base_values(scenario, setup, [str(n) for n in data])
    return tuple(_entry(str(name), raw, base.get(name), origin) for name, raw in data.items())


def uncertainty_to_dict(inputs: Any) -> dict[str, Any]:
    """The ``[uncertainty]`` table of ``inputs`` (what :func:`uncertainty_from_dict` reads back)."""
    return {u.field: u.to_dict() for u in inputs}
