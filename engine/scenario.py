"""Scenarios: a validated record, a pandas table of them, TOML presets, and ``evaluate``.

A scenario says how a training job saves and fails and what its GPUs cost. Units are in the field
names: ``_min`` minutes, ``_h`` hours, ``_fraction``/``_share`` in [0, 1). The table form has one
column per field; correlated failure domains are flattened into ``domain1_name``,
``domain1_mtbf_h``, ``domain1_nodes_per_domain``, ``domain2_...`` columns. An optional number left
empty (NaN) in a table means "not given" (e.g. no chosen interval: use the optimum).

:func:`evaluate` turns a table into every derived figure, vectorised over rows.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from dataclasses import asdict, field as dc_field, fields, make_dataclass, replace
from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import cost, reliability, wall_distribution, waste
from .errors import BLANK, InputError
from .fields import DOMAIN_FIELDS, FIELDS, PHASE_FIELDS, RULES, TEXT_FIELDS, Field
from .frames import result_frame as _result_frame
from .gate import FLOAT_MAX, check_finite_result, to_float
from .phases import phases_from_list
from .phases_table import phase_column_specs, phase_indices, phase_row_problems, phase_schedules, scenario_phase_columns
from .elastic_table import continuing, elastic_plan, elastic_row_problems
from .preemption_table import preemption_plan, spot_price
from .reliability import FailureDomain
from .spot_rates import job_preemptions_per_h, preemption_rate_problems

__all__ = ["DOMAIN_COL", "RowProblems", "Scenario", "check_columns", "check_mapping", "check_scenario", "derived_cell_problems", "derived_columns", "derived_scenario", "domain_indices", "evaluate",
           "evaluate_each", "is_absent", "is_number", "number_column", "scenario_from_dict", "scenario_job_mtbf_h",
           "scenario_to_dict", "scenarios_job_mtbf_h",
           "table_problems", "to_table", "validate_table", "validated_copy"]


def _post_init_domains(self) -> None:
    """The scenario's ``domains`` as a tuple of :class:`FailureDomain` records (tables of the same fields allowed)."""
    if isinstance(self.domains, (str, bytes, dict)) or not hasattr(self.domains, "__iter__") or not all(
            isinstance(d, (FailureDomain, dict)) for d in self.domains):
        raise InputError("domains", self.domains, "must be a list of FailureDomain records or of tables with "
                         "name, mtbf_h and nodes_per_domain")
    try:
        doms = tuple(d if isinstance(d, FailureDomain) else FailureDomain(**d) for d in self.domains)
    except TypeError as exc:
        raise InputError("domains", self.domains, f"each domain needs name, mtbf_h and nodes_per_domain ({exc})") from None
    object.__setattr__(self, "domains", doms)


def _post_init(self) -> None:
    for name in TEXT_FIELDS:  # text is text: a list or a number here would reach hashing and formatting unchecked
        value = getattr(self, name, None)
        if value is not None and not isinstance(value, str):
            raise InputError(name, value, "must be text")
    _post_init_domains(self)
    object.__setattr__(self, "failure_phases", phases_from_list(self.failure_phases))
    if self.failure_rate_source:
        from .fleets import fleet_node_mtbf

        node_mtbf, bad = fleet_node_mtbf(pd.Series([self.failure_rate_source]), pd.Series([self.node_mtbf_h]))
        if bad:
            raise bad[0][1]
        object.__setattr__(self, "node_mtbf_h", float(node_mtbf[0]))
    if self.preemption_rate_source:   # a published spot band gives preemptions_per_node_h (engine.spot_rates)
        from .spot_rates import spot_node_rates

        node_rate, bad = spot_node_rates([self.preemption_rate_source], [self.preemptions_per_node_h])
        if bad:
            raise bad[0][1]
        object.__setattr__(self, "preemptions_per_node_h", float(node_rate[0]))
    table = to_table([self])
    check_columns(table)
    _, _, problems = table_problems(table)
    if problems.by_row:  # one scenario: name the field, not a table row
        err = problems.by_row[0][0]
        raise InputError(err.field, err.value, err.rule)


def validated_copy(scenario: Any, **changes: Any) -> Any:
    """A copy of ``scenario`` with fields changed to numbers a table pass has already validated (the plan
    pipeline, :func:`engine.pipeline.plan_table`, checks every row once at its boundary): not checked again.
    Any other change goes through ``scenario.replace``, which validates."""
    import copy

    out = copy.copy(scenario)
    for name, value in changes.items():
        object.__setattr__(out, name, value)
    return out


def derived_scenario(scenario: Any, **changes: Any) -> Any:
    """A copy of a validated :class:`Scenario` with fields changed by the engine (a design's changes, a job that
    stops at every failure, a chosen interval left out): the scenario was validated when it was made, so only
    the changed cells and the rules across the row are checked (:func:`derived_cell_problems`); a change that
    breaks a rule raises :class:`InputError` naming the field, the value and the rule, as ``Scenario(...)``
    does. A change of ``failure_rate_source``, or of the node MTBF a fleet's rate gives, is validated whole
    (``scenario.replace``: the scenario resolves the one from the other); so is a change of
    ``preemption_rate_source`` or of the node preemption rate a published band gives.
    """
    import copy

    check_scenario(scenario)
    if "failure_rate_source" in changes or (scenario.failure_rate_source and "node_mtbf_h" in changes
                                            and changes["node_mtbf_h"] != scenario.node_mtbf_h):
        return scenario.replace(**changes)   # the fleet's rate gives the node MTBF: Scenario resolves it
    if "preemption_rate_source" in changes or (scenario.preemption_rate_source and "preemptions_per_node_h" in changes
                                               and changes["preemptions_per_node_h"] != scenario.preemptions_per_node_h):
        return scenario.replace(**changes)   # the published band gives the node's preemption rate
    out = copy.copy(scenario)
    numbers = {f.name for f in FIELDS}
    unknown = [k for k in changes if k not in numbers and k not in TEXT_FIELDS and k not in ("domains", "failure_phases")]
    if unknown:
        raise InputError("scenario", unknown[0], "is not a scenario field")
    checked: set[str] = set()
    for name, value in changes.items():
        old = getattr(scenario, name)
        if name in TEXT_FIELDS and value is not None and not isinstance(value, str):
            raise InputError(name, value, "must be text")
        if name in numbers and not (value is old or (value is not None and old is not None and type(value) is type(old)
                                                     and value == old)):
            checked.add(name)
        object.__setattr__(out, name, value)
    if "domains" in changes:
        _post_init_domains(out)
        checked |= {f"domain{i}_{part.name}" for i in range(1, len(out.domains) + 1) for part in DOMAIN_FIELDS}
    if "failure_phases" in changes:
        object.__setattr__(out, "failure_phases", phases_from_list(out.failure_phases))
    table = to_table([out])
    if "failure_phases" in changes:
        checked |= {name for name, _ in phase_column_specs(table.columns)}
    check_columns(table)
    _, _, problems = derived_cell_problems(table, checked)
    if problems.by_row:  # one scenario: name the field, not a table row
        err = problems.by_row[0][0]
        raise InputError(err.field, err.value, err.rule)
    return out


def _replace(self, **changes: Any) -> "Scenario":
    """A copy with some fields changed (validated again)."""
    return replace(self, **changes)


def _with_nodes(self, nodes: int, scaling_efficiency: float = 1.0) -> "Scenario":
    """The same training on ``nodes`` nodes: useful hours scale by ``old/new / efficiency``.

    ``scaling_efficiency`` (0, 1]: 1 = perfect scaling (GPU-hours of useful compute unchanged).
    """
    if not (isinstance(scaling_efficiency, (int, float)) and 0 < scaling_efficiency <= 1):
        raise InputError("scaling_efficiency", scaling_efficiency, "must be in (0, 1]")
    hours = self.useful_training_h * self.nodes / (nodes * scaling_efficiency)
    return self.replace(nodes=nodes, useful_training_h=hours, name=f"{self.name} @ {nodes} nodes")


def _scenario_class() -> type:
    """The :class:`Scenario` record, generated from the registry (:data:`ckptplan.engine.fields.FIELDS`)."""
    def kind(f: Field) -> type:
        return int if f.integer else float

    spec: list[tuple] = [("name", str)]
    spec += [(f.name, kind(f)) for f in FIELDS if f.required]
    spec += [(f.name, kind(f) | None, dc_field(default=f.default)) for f in FIELDS if not f.required]
    spec += [("domains", tuple, dc_field(default=())), ("failure_phases", tuple, dc_field(default=()))]
    spec += [(name, str, dc_field(default=default)) for name, (_, default) in TEXT_FIELDS.items() if name != "name"]
    doc = ("One scenario: how a training job saves and fails and what its GPUs cost. Validated on creation.\n\n"
           "Fields (generated from the registry, ``ckptplan.engine.fields``):\n\n"
           + "\n".join(f"* ``{f.name}`` [{f.unit}]: {f.label}; {f.check.noun}"
                       + (" (required)" if f.required else f" (default {f.default})" if f.default is not None
                          else " (optional)") for f in FIELDS)
           + "\n* ``domains``: correlated failure domains (:class:`~ckptplan.engine.reliability.FailureDomain`)"
           + "\n* ``failure_phases``: a failure rate that changes over the run (:class:`~ckptplan.engine.phases."
             "FailurePhase`: ``start_h``, ``rate_factor``; :mod:`ckptplan.engine.phases`)"
           + "".join(f"\n* ``{name}``: {label}" for name, (label, _) in TEXT_FIELDS.items()))
    cls = make_dataclass("Scenario", spec, frozen=True, namespace={
        "__doc__": doc, "__post_init__": _post_init, "replace": _replace, "with_nodes": _with_nodes})
    cls.__module__ = __name__  # so it pickles (Dask workers) and reprs as ckptplan.engine.scenario.Scenario
    return cls


Scenario = _scenario_class()
_DOMAIN_COL = re.compile(r"^domain(\d+)_(name|" + "|".join(f.name for f in DOMAIN_FIELDS) + r")$")


def check_scenario(value: Any, field: str = "scenario") -> Scenario:
    """``value`` if it is a :class:`Scenario`; else :class:`InputError` naming ``field`` (None, a dict, a name)."""
    if not isinstance(value, Scenario):
        hint = " (a dict: engine.scenario_from_dict; a template name: ckptplan.files.load_scenario)" if isinstance(
            value, (dict, str)) else ""
        raise InputError(field, type(value).__name__, f"must be a Scenario{hint}")
    return value


def check_mapping(value: Any, field: str) -> Any:
    """``value`` if it is a mapping (a dict, a parsed TOML table); else :class:`InputError` naming ``field``."""
    from collections.abc import Mapping

    if not isinstance(value, Mapping):
        raise InputError(field, type(value).__name__, "must be a table (a dict of field names to values)")
    return value


def scenario_from_dict(data: dict[str, Any], origin: str = "scenario") -> Scenario:
    """Build a :class:`Scenario` from a plain dict (e.g. parsed TOML), naming unknown keys."""
    check_mapping(data, origin)
    known = {f.name for f in fields(Scenario)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"{origin}: {unknown[0]}", data[unknown[0]], f"unknown field; known fields: {', '.join(sorted(known))}")
    missing = [f.name for f in FIELDS if f.required and f.name not in data] + (["name"] if "name" not in data else [])
    if missing:
        raise InputError(f"{origin}: {missing[0]}", None, "is required")
    return Scenario(**data)


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """Plain dict (TOML-ready: optional fields left out when not given)."""
    data = asdict(check_scenario(scenario))
    data["domains"] = [asdict(d) for d in scenario.domains]
    data["failure_phases"] = [asdict(p) for p in scenario.failure_phases]
    return {k: v for k, v in data.items() if v is not None and v != []}


# ------------------------------------------------------------------------------------------ table

def to_table(scenarios: Iterable[Scenario]) -> pd.DataFrame:
    """A DataFrame with one row per scenario and flattened ``domain{i}_*`` columns."""
    if isinstance(scenarios, Scenario) or isinstance(scenarios, (str, bytes)) or not hasattr(scenarios, "__iter__"):
        raise InputError("scenarios", type(scenarios).__name__, "must be a list of Scenario")
    rows = []
    for i, sc in enumerate(scenarios):
        check_scenario(sc, f"scenarios[{i}]")
        row = {k: v for k, v in asdict(sc).items() if k not in ("domains", "failure_phases")}
        for k, v in row.items():
            if v is None:
                row[k] = np.nan
        for i, dom in enumerate(sc.domains, start=1):
            row[f"domain{i}_name"] = dom.name
            row[f"domain{i}_mtbf_h"] = dom.mtbf_h
            row[f"domain{i}_nodes_per_domain"] = dom.nodes_per_domain
        row.update(scenario_phase_columns(sc.failure_phases))
        rows.append(row)
    return pd.DataFrame(rows)


DOMAIN_COL = _DOMAIN_COL


def is_absent(v: Any) -> bool:
    """An empty cell: None, pandas NA/NaT or a float NaN."""
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


def is_number(v: Any) -> bool:
    """A real number that is not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def domain_indices(columns: Iterable[Any]) -> list[int]:
    """The ``i`` of every ``domain{i}_*`` column; raises unless each has both MTBF and size columns."""
    columns = list(columns)
    found = sorted({int(m.group(1)) for c in columns if isinstance(c, str) and (m := _DOMAIN_COL.match(c))})
    for i in found:
        for part in ("mtbf_h", "nodes_per_domain"):
            if f"domain{i}_{part}" not in columns:
                raise InputError("columns", f"domain{i}_{part}",
                                 f"missing: every domain needs both domain{i}_mtbf_h and domain{i}_nodes_per_domain")
    return found


def check_columns(table: pd.DataFrame) -> list[int]:
    """Table-level rules: a DataFrame, no column twice (which of two values would be the field's?), every
    required column present, domain columns in pairs. Returns the domains."""
    if not isinstance(table, pd.DataFrame):
        raise InputError("table", type(table).__name__, "must be a pandas DataFrame (see engine.to_table)")
    twice = table.columns[table.columns.duplicated()]
    if len(twice):
        raise InputError("columns", twice[0], "appears more than once: one column per field")
    missing = [f.name for f in FIELDS if f.required and f.name not in table.columns]
    if missing:
        raise InputError("columns", missing[0], "missing required column")
    return domain_indices(table.columns)


class RowProblems:
    """Problems per row position (an :class:`InputError` or a message), in the order found."""

    def __init__(self, n: int):
        self.n = n
        self.by_row: dict[int, list[Any]] = {}

    def add(self, positions: Iterable[int], problem: Any) -> None:
        """Record ``problem(position)`` for every position."""
        for p in positions:
            self.by_row.setdefault(int(p), []).append(problem(int(p)))

    def mask(self) -> np.ndarray:
        m = np.zeros(self.n, dtype=bool)
        if self.by_row:
            m[np.fromiter(self.by_row.keys(), dtype=np.int64)] = True
        return m


def _as_numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """(float64 array, NaN where absent or not a number; mask of cells holding a non-number).

    The mask is None for a numeric dtype (every cell a number or blank). A float64 column comes
    back as a read-only view of the table's data, not a copy; an object column is sorted by the
    type of its cells (a few kinds) rather than cell by cell.
    """
    n = len(values)
    if values.dtype.kind in "iuf":
        if isinstance(values.dtype, np.dtype):  # numpy's NaN is the blank already
            return values.to_numpy(dtype=np.float64, copy=False), None
        return values.to_numpy(dtype=float, na_value=np.nan), None
    obj = values.to_numpy(dtype=object)
    arr = np.full(n, np.nan)
    bad = np.zeros(n, dtype=bool)
    if n == 0:
        return arr, bad
    kinds: dict[type, int] = {}  # by type: 1 a real number (not a bool), 0 absent (None, NA, NaT), 2 anything else

    def kind(v: Any) -> int:
        k = kinds.get(type(v))
        if k is None:
            k = kinds[type(v)] = 1 if is_number(v) else 0 if is_absent(v) else 2
        return k

    codes = np.frompyfunc(kind, 1, 1)(obj).astype(np.int8)
    numbers_ = codes == 1
    if numbers_.any():
        try:
            arr[numbers_] = obj[numbers_].astype(np.float64)
        except OverflowError:  # a Python int beyond float range: infinite, refused by the finiteness rule
            arr[numbers_] = [to_float(v) for v in obj[numbers_]]
    np.equal(codes, 2, out=bad)
    return arr, bad


def number_column(name: str, rule: str, required: bool, default: float | None, raw: pd.Series | None, n: int,
                   flagged: np.ndarray, problems: RowProblems) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check one numeric column with vectorised masks, recording every bad cell.

    Returns (given: as written, NaN where blank or not a number; effective: defaults applied;
    ok: the cell passed). ``flagged`` cells were already reported by the caller and count as blank.
    A clean column (numbers only, all finite, every rule met) costs a few passes and no copy.
    """
    if raw is None:  # read-only broadcasts of one value: no memory, nothing to check
        blank = np.broadcast_to(np.float64(np.nan), (n,))
        return blank, blank if default is None else np.broadcast_to(np.float64(default), (n,)), _all(n, True)
    given, notnum = _as_numbers(raw)
    flags = flagged if flagged.any() else None
    if notnum is not None:
        if flags is not None:
            notnum &= ~flags
        if notnum.any():
            obj = raw.to_numpy(dtype=object)
            problems.add(np.flatnonzero(notnum), lambda p: InputError(name, obj[p], "must be a number"))
        else:
            notnum = None
    if flags is not None:
        given = np.where(flags, np.nan, given)
    skipped = notnum if flags is None else flags if notnum is None else notnum | flags  # reported already
    check = RULES[rule]
    if skipped is None:  # the common cases, checked block by block: nothing to report
        if _clean(given, check.predicate):
            return given, given, _all(n, True)
        if not required and _clean(given, check.predicate, blank_ok=True):  # some cells blank, the rest valid
            if default is None:
                return given, given, _all(n, True)
            eff = np.where(np.isnan(given), default, given)
            if _clean(eff, check.predicate):
                return given, eff, _all(n, True)
    bad = [] if skipped is None else [skipped]
    eff, finite, absent = given, None, None  # finite: None when every effective value is finite
    whole_numbers = skipped is None and isinstance(raw.dtype, np.dtype) and raw.dtype.kind in "iu"
    if not (whole_numbers or bool(np.isfinite(given).all())):  # some cell blank, skipped or infinite
        blank = np.isnan(given)
        if blank.any():  # given nothing, neither a non-number nor flagged
            absent = blank if skipped is None else blank & ~skipped
        if default is not None and absent is not None:
            eff = np.where(absent, default, given)
            absent = None
        finite = np.isfinite(eff)
        if finite.all():
            finite = None
        else:
            inf = np.isinf(eff)
            if inf.any():
                problems.add(np.flatnonzero(inf), lambda p: InputError(name, float(eff[p]), "must be a finite number"))
                bad.append(inf)
    with np.errstate(invalid="ignore"):
        good = check.predicate(eff)
    fails = None if finite is None and good.all() else ~good if finite is None else ~good & finite
    if fails is not None and fails.any():
        problems.add(np.flatnonzero(fails), lambda p: InputError(name, float(eff[p]), check.message))
        bad.append(fails)
    if required and absent is not None and absent.any():
        problems.add(np.flatnonzero(absent), lambda p: InputError(name, BLANK, "is required"))
        bad.append(absent)
    if not bad:
        return given, eff, _all(n, True)
    ok = ~bad[0]
    for mask in bad[1:]:
        ok &= ~mask
    return given, eff, ok


#: rows per block of the whole-column checks: small temporaries stay in cache and are reused, not paged in
_BLOCK = 1 << 16


def _clean(values: np.ndarray, predicate: Any, blank_ok: bool = False) -> bool:
    """Every value finite and meeting the rule, or (``blank_ok``) NaN; checked block by block (no
    full-length temporaries)."""
    with np.errstate(invalid="ignore"):
        for i in range(0, len(values), _BLOCK):
            block = values[i:i + _BLOCK]
            finite = np.isfinite(block)
            if finite.all():
                if not predicate(block).all():
                    return False
            elif not (blank_ok and (finite | np.isnan(block)).all() and (predicate(block) | ~finite).all()):
                return False
    return True


def _mask_if_any(condition: Any, *arrays: np.ndarray) -> np.ndarray | None:
    """``condition(*arrays)`` (a bool mask), or None where it holds nowhere (found block by block)."""
    with np.errstate(invalid="ignore"):
        for i in range(0, len(arrays[0]), _BLOCK):
            if condition(*(a[i:i + _BLOCK] for a in arrays)).any():
                return condition(*arrays)
    return None


def _all(n: int, value: bool) -> np.ndarray:
    """``n`` times ``value``, read-only and without memory (a broadcast)."""
    return np.broadcast_to(np.bool_(value), (n,))


def _cross_field_rules(eff: dict[str, np.ndarray], ok: dict[str, np.ndarray], problems: RowProblems) -> None:
    """The rules across fields of one row (see :func:`table_problems`), on rows whose cells passed."""
    both = _mask_if_any(lambda a, b: np.isnan(a) & np.isnan(b), eff["node_mtbf_h"], eff["job_mtbf_h"])
    if both is not None:
        both &= ok["node_mtbf_h"] & ok["job_mtbf_h"]
        problems.add(np.flatnonzero(both),
                     lambda p: InputError("node_mtbf_h", None, "give node_mtbf_h (with nodes) or job_mtbf_h"))
    C, W, s, T = eff["checkpoint_stall_min"], eff["async_write_min"], eff["async_slowdown_fraction"], eff["interval_min"]
    free = _mask_if_any(lambda c, w: (c + w) <= 0, C, W)
    if free is not None:
        free &= ok["checkpoint_stall_min"] & ok["async_write_min"]
        problems.add(np.flatnonzero(free), lambda p: InputError(
            "checkpoint_stall_min", float(C[p]),
            "checkpoint_stall_min + async_write_min must be > 0: no save is free (measure it)"))
    R, D = eff["restart_min"], eff["downtime_min"]
    over = _mask_if_any(lambda r, d: d > r * (1 + 1e-12), R, D)
    if over is not None:
        over &= ok["restart_min"] & ok["downtime_min"]
        problems.add(np.flatnonzero(over), lambda p: InputError(
            "downtime_min", float(D[p]), f"must be <= restart_min = {R[p]:.6g} (it is the part of the restart the job "
            "spends waiting without its nodes)"))
    late = _mask_if_any(lambda w, s_, t: w * (1 - s_) > t, W, s, T)
    if late is not None:
        late &= ok["async_write_min"] & ok["async_slowdown_fraction"] & ok["interval_min"]
        behind = W * (1 - s)
        problems.add(np.flatnonzero(late), lambda p: InputError(
            "interval_min", float(T[p]), f"must be >= async_write_min * (1 - async_slowdown_fraction) = {behind[p]:.6g} "
            "(the write must be durable before the next save)"))


def table_problems(table: pd.DataFrame, flagged: dict[str, np.ndarray] | None = None,
                   problems: RowProblems | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], RowProblems]:
    """Every rule of a scenario table, row by row: (given, effective, problems).

    Per field (:data:`FIELDS`): a number, finite, its rule, present if required. Then, on rows
    whose fields passed: each row needs ``node_mtbf_h`` or ``job_mtbf_h``; a save must cost
    something (``checkpoint_stall_min + async_write_min > 0``: measure it, e.g. ``ckptplan
    probe``); a chosen interval must leave time for the background write; domain cells come in
    pairs; ``downtime_min`` is a part of ``restart_min`` (at most it). ``given``/``effective`` map each column to float arrays (effective: defaults applied,
    NaN for "not given"). :func:`validate_table` raises the first problem; :mod:`engine.batch`
    reports them all. The validation of a user's table: every surface calls it once per table, at its
    boundary (the plan pipeline, :func:`engine.pipeline.plan_table`, or a :class:`Scenario` when made);
    cells derived later from validated ones are checked where they are made (:func:`derived_cell_problems`).
    """
    return _checked_columns(table, flagged or {}, problems if problems is not None else RowProblems(len(table)), None)


def derived_cell_problems(table: pd.DataFrame, names: Iterable[str], problems: RowProblems | None = None
                          ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], RowProblems]:
    """:func:`table_problems` of a table whose cells were validated except the columns ``names``, derived
    from validated ones (a setup's stall and restart, a design's changes): (given, effective, problems).

    Only the ``names`` cells are checked against their fields' rules; every rule across a row's fields
    (the mtbf, a free save, the write before the next save, the downtime within the restart, domain and
    phase pairs, the elastic floor) is checked on every row, as :func:`table_problems` orders them, so a
    derived value that leaves its field's domain is refused here, naming the field, the value and the rule.
    The other cells are read as they are (a table built from validated :class:`Scenario` records).
    """
    return _checked_columns(table, {}, problems if problems is not None else RowProblems(len(table)), set(names))


def _checked_columns(table: pd.DataFrame, flagged: dict[str, np.ndarray], problems: RowProblems,
                     only: set[str] | None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], RowProblems]:
    """:func:`table_problems`' passes; ``only``: the columns whose cells are checked (None: every one)."""
    n = len(table)
    none = np.zeros(n, dtype=bool)
    given: dict[str, np.ndarray] = {}
    eff: dict[str, np.ndarray] = {}
    ok: dict[str, np.ndarray] = {}

    def column(name: str, rule: str, required: bool, default: float | None) -> None:
        raw = table[name] if name in table.columns else None
        if only is not None and name not in only and raw is not None:   # validated when it was made: read only
            given[name] = _as_numbers(raw)[0]
            eff[name] = given[name] if default is None else np.where(np.isnan(given[name]), default, given[name])
            ok[name] = _all(n, True)
            return
        given[name], eff[name], ok[name] = number_column(name, rule, required, default, raw, n,
                                                          flagged.get(name, none), problems)

    for spec in FIELDS:
        column(spec.name, spec.rule, spec.required, spec.default)
    if "failure_rate_source" in table.columns:  # a published fleet rate gives node_mtbf_h
        from .fleets import fleet_node_mtbf

        from_fleet, bad = fleet_node_mtbf(table["failure_rate_source"], eff["node_mtbf_h"])
        for p, err in bad:
            problems.add(np.array([p]), lambda _p, err=err: err)
        use = ~np.isnan(from_fleet)
        if use.any():
            eff["node_mtbf_h"] = np.where(use, from_fleet, eff["node_mtbf_h"])
            ok["node_mtbf_h"] = ok["node_mtbf_h"] | use
    # the job's preemption rate: given, or nodes x the node's (a published band's); both given is refused
    preemption_rate_problems(table, eff, ok, problems)
    # each cross-field rule: its condition first (block by block), the cells' own checks only where it holds
    with np.errstate(over="ignore", invalid="ignore"):  # huge cells are refused by their own rule, quietly
        _cross_field_rules(eff, ok, problems)
    for i in domain_indices(table.columns):
        for part in DOMAIN_FIELDS:
            column(f"domain{i}_{part.name}", part.rule, False, None)
        a, b = f"domain{i}_mtbf_h", f"domain{i}_nodes_per_domain"
        half = _mask_if_any(lambda x, y: np.isnan(x) != np.isnan(y), eff[a], eff[b])
        if half is not None:
            half &= ok[a] & ok[b]
            problems.add(np.flatnonzero(half), lambda p, i=i: InputError(
                f"domain{i}", None, f"give both domain{i}_mtbf_h and domain{i}_nodes_per_domain, or neither"))
    for name, rule in phase_column_specs(table.columns):
        column(name, rule, False, None)
    for rows, problem in phase_row_problems(eff, ok, phase_indices(table.columns)):
        problems.add(rows, problem)
    elastic_row_problems(table, eff, ok, problems)   # on_node_loss, replicas, floor (engine.elastic_table)
    return given, eff, problems


def validate_table(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """Check every column against its rule and return the numeric columns as float arrays.

    Raises :class:`InputError` for the first bad row, naming its label, the column, the value and
    the rule (the rules: :func:`table_problems`); a missing required column or half a domain is a
    table-level error.
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError("table", type(table).__name__, "must be a pandas DataFrame (see engine.to_table)")
    check_columns(table)
    _, eff, problems = table_problems(table)
    if problems.by_row:
        p = min(problems.by_row)
        err = problems.by_row[p][0]
        raise InputError(f"row {table.index[p]}: {err.field}", err.value, err.rule)
    return eff


def evaluate(table: pd.DataFrame | Scenario | Iterable[Scenario]) -> pd.DataFrame:
    """Every derived figure of each scenario, as columns appended to the table.

    Units: minutes for ``*_min``, hours for ``*_h``, GPU-hours, money in the row's currency.
    Intervals are compute time between saves. Columns added:

    * ``job_mtbf_h`` (:func:`engine.reliability.job_mtbf_with_domains`, or the override),
      ``effective_stall_min`` (blocking stall + throughput lost to async writes);
    * ``young_interval_min``, ``daly_interval_min``, ``exact_interval_min`` (from the effective
      stall) and ``chosen_interval_min`` (``interval_min`` if given, else the exact optimum);
    * ``first_order_waste`` (at the chosen interval), ``young_min_waste``;
      ``waste_fraction`` (exact model at the chosen interval, share of wall time),
      ``waste_fraction_at_optimum``, ``waste_fraction_at_young``, ``waste_fraction_at_daly``;
    * ``expected_failures`` (every failure, restarts included: the exposed time / job MTBF); ``wall_h``
      and its split ``useful_h``, ``save_h``, ``rework_h``,
      ``restart_h``; ``gpus``; ``job_gpu_hours`` (the job's) and its parts ``{useful,save,rework,restart}_gpu_hours``,
      ``spare_gpu_hours`` (0: no setup), ``total_gpu_hours`` (job + spares, :data:`engine.fields.GPU_HOURS_PARTS`);
      ``compute_cost`` (the job's GPU time) and its parts ``{...}_cost``, ``storage_cost`` and
      ``spare_cost`` (0: no setup), ``total_cost`` (everything the plan pays: compute + storage +
      spares, :data:`engine.fields.COST_PARTS`); ``goodput`` (useful share of GPU-hours) and
      ``cost_per_useful_gpu_hour`` (total cost / useful GPU-hours);
    * the finite job's deadline answer, analytic for exponential failures at the chosen interval,
      no final save (:mod:`engine.wall_distribution`; the defaults of
      :func:`engine.deadline.deadline_report`): ``p_finish_by_deadline`` (NaN without
      ``deadline_h``), ``wall_h_p50``, ``wall_h_p90``, ``wall_h_p99`` and
      ``deadline_approximation_ok`` (False outside the approximation's validity range; all NaN
      where ``(R + T + C + W)/M > 200``).

    ``restart_min`` is the whole restart; its part ``downtime_min`` (waiting for a node) is
    unexposed: the job cannot fail in it (``D`` of :func:`engine.waste.expected_wall_time`, the rest
    ``R``).

    Long-run model for exponential failures (:func:`engine.waste.expected_wall_time`); for
    deadlines and non-exponential failures see :mod:`ckptplan.engine.deadline` (exact finite job: :mod:`ckptplan.engine.finite`; Monte Carlo: :mod:`ckptplan.engine.montecarlo`).
    """
    if isinstance(table, pd.DataFrame):
        return _evaluate_valid(table, validate_table(table))
    if not isinstance(table, Scenario) and (isinstance(table, (str, bytes)) or not hasattr(table, "__iter__")):
        raise InputError("table", table, "must be a Scenario, a list of them, or a DataFrame (see engine.to_table)")
    scenarios = [table] if isinstance(table, Scenario) else list(table)
    if not scenarios:
        raise InputError("table", "[]", "holds no scenario")
    for i, sc in enumerate(scenarios):
        if not isinstance(sc, Scenario):
            raise InputError(f"table[{i}]", type(sc).__name__,
                             "must be a Scenario, a list of them, or a DataFrame (see engine.to_table)")
    # a Scenario was validated when it was made: its numbers go to the models unchecked
    return _evaluate_valid(to_table(scenarios), _scenario_columns(scenarios))


def _scenario_columns(scenarios: list[Scenario]) -> dict[str, np.ndarray]:
    """The float columns :func:`validate_table` would return for these (already valid) scenarios."""
    def column(values: list[Any]) -> np.ndarray:
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)

    cols = {f.name: column([getattr(sc, f.name) for sc in scenarios]) for f in FIELDS}
    for i in range(1, max((len(sc.domains) for sc in scenarios), default=0) + 1):
        doms = [sc.domains[i - 1] if len(sc.domains) >= i else None for sc in scenarios]
        cols[f"domain{i}_mtbf_h"] = column([None if d is None else d.mtbf_h for d in doms])
        cols[f"domain{i}_nodes_per_domain"] = column([None if d is None else d.nodes_per_domain for d in doms])
    for i in range(1, max((len(sc.failure_phases) for sc in scenarios), default=0) + 1):
        for part in (f.name for f in PHASE_FIELDS):
            cols[f"phase{i}_{part}"] = column([getattr(sc.failure_phases[i - 1], part) if len(sc.failure_phases) >= i
                                              else None for sc in scenarios])
    cols["preemptions_per_h"] = job_preemptions_per_h(cols["preemptions_per_h"], cols["preemptions_per_node_h"],
                                                      cols["nodes"])   # the job's rate (engine.spot_rates)
    cols["on_node_loss"] = continuing([sc.on_node_loss for sc in scenarios]).astype(float)
    return cols


def _evaluate_valid(table: pd.DataFrame, cols: dict[str, np.ndarray]) -> pd.DataFrame:
    """:func:`evaluate` on a table already validated (``cols``: :func:`validate_table`'s arrays).

    The models run on the validated arrays through their unchecked kernels: each value is checked
    once, at the boundary, not again inside every model call.
    """
    job_mtbf_h = _job_mtbf_h(table.index, cols)
    M, work, deadline_min = _in_minutes(table, job_mtbf_h, cols)
    C, W, s = cols["checkpoint_stall_min"], cols["async_write_min"], cols["async_slowdown_fraction"]
    R, D = _restart_split(cols)
    intervals = _intervals(cols, M)
    preempted = preemption_plan(table, cols, M)  # None without preemptions: the on-demand plan
    if preempted is not None:
        intervals = preempted.intervals(intervals, cols["interval_min"])
    elastic = elastic_plan(table, cols, M, R, D, work)  # None without on_node_loss = continue: today's plan
    if elastic is not None:
        intervals = elastic.intervals(intervals, cols["interval_min"])
    chosen = intervals["chosen_interval_min"]
    parts = waste.time_breakdown_kernel(work, chosen, C, M, R, W, s, D)
    if preempted is not None:
        parts = preempted.parts(parts, work, chosen)
    if elastic is not None:
        parts = elastic.parts(parts, chosen)
    schedules = phase_schedules(table, cols, M, work)  # None without failure phases: the constant-rate plan
    if schedules is not None:
        parts = schedules.parts(parts)
        if preempted is not None:   # failure phases on spot capacity: the schedule's wait and preemptions
            preempted.take_schedules(schedules)
    gpus = _gpus(cols)
    new = {"job_mtbf_h": job_mtbf_h, **intervals, **_wastes(cols, M, intervals),
           "expected_failures": parts["failures"], "wall_h": parts["total"] / 60.0}
    for cat in cost.CATEGORIES:
        new[f"{cat}_h"] = parts[cat] / 60.0
    new.update(_money(table, cols, gpus, new))
    # the finite job's wall-time distribution (exponential failures, no final save): analytic deadline answer
    deadline = wall_distribution.deadline_answers_kernel(work, chosen, C, M, R, W, s, deadline_min, D=D)
    new["p_finish_by_deadline"] = deadline["p_finish_by_deadline"]
    for q in ("p50", "p90", "p99"):
        new[f"wall_h_{q}"] = deadline[f"wall_{q}"] / 60.0
    new["deadline_approximation_ok"] = deadline["ok"]
    if schedules is not None:
        new.update(schedules.columns(new, chosen, deadline_min))
    if elastic is not None:
        new.update(elastic.columns(new, intervals, parts, cols["deadline_h"]))
    if preempted is not None:
        new.update(preempted.columns(new, gpus, spot_price(cols), cols["deadline_h"]))
    return _result_frame(table, new)


def _restart_split(cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(exposed restart, downtime): ``restart_min - downtime_min`` and ``downtime_min`` (the part the job waits
    without its nodes and cannot fail in; :func:`engine.waste.expected_wall_time`'s ``R`` and ``D``)."""
    D = cols["downtime_min"]
    return np.maximum(cols["restart_min"] - D, 0.0), D


def scenario_job_mtbf_h(scenario: Scenario) -> float:
    """The job MTBF in hours that :func:`evaluate` gives a scenario (its override, else from its nodes, node
    MTBF, non-fatal share and failure domains), without planning the rest: what a setup's spare pool needs
    before the stall and restart it derives are known (:func:`engine.setup.plan_setup`)."""
    check_scenario(scenario, "scenario")
    return float(scenarios_job_mtbf_h([scenario])[0])


def scenarios_job_mtbf_h(scenarios: list[Scenario]) -> np.ndarray:
    """:func:`scenario_job_mtbf_h` of valid scenarios, one vectorised pass (the plan pipeline's spare pools)."""
    return _job_mtbf_h(pd.RangeIndex(len(scenarios)), _scenario_columns(list(scenarios)))


def _job_mtbf_h(index: pd.Index, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Each row's job MTBF in hours: its ``job_mtbf_h`` override, else from its nodes, node MTBF, non-fatal
    share and failure domains (a row without domain i, its cells empty, gets a domain that never fails).
    ``index``: the rows' labels (for the error naming a row)."""
    domains = [(np.nan_to_num(cols[f"domain{i}_mtbf_h"], nan=np.inf),
                np.nan_to_num(cols[f"domain{i}_nodes_per_domain"], nan=1.0))
               for i in domain_indices(cols)]
    node_given = ~np.isnan(cols["node_mtbf_h"])
    # rows that give only job_mtbf_h get a placeholder node MTBF; their derived value is discarded
    rate = reliability.job_failure_rate_kernel(np.where(node_given, cols["node_mtbf_h"], 1.0), cols["nodes"],
                                               cols["nonfatal_share"], domains)
    override = ~np.isnan(cols["job_mtbf_h"])
    if np.any((rate <= 0) & ~override):
        p = int(np.flatnonzero((rate <= 0) & ~override)[0])
        raise InputError(f"row {index[p]}: node_mtbf_h", float(cols["node_mtbf_h"][p]),
                         "no failure can stop the job (infinite MTBF or every failure non-fatal): give a finite MTBF")
    with np.errstate(divide="ignore"):
        return np.where(override, cols["job_mtbf_h"], 1.0 / rate)


def _in_minutes(table: pd.DataFrame, job_mtbf_h: np.ndarray, cols: dict[str, np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job MTBF, useful work, deadline) in minutes, the models' unit; a value that overflows there is refused."""
    with np.errstate(over="ignore"):
        M = job_mtbf_h * 60.0
        work = cols["useful_training_h"] * 60.0
        deadline_min = cols["deadline_h"] * 60.0
    for name, minutes, hours in (("job_mtbf_h", M, job_mtbf_h), ("useful_training_h", work, cols["useful_training_h"]),
                                 ("deadline_h", deadline_min, cols["deadline_h"])):
        if np.isinf(minutes).any():
            p = int(np.flatnonzero(np.isinf(minutes))[0])
            raise InputError(f"row {table.index[p]}: {name}", float(hours[p]),
                             f"must be at most {FLOAT_MAX / 60:.4g} h (in minutes it overflows the float64 range)")
    return M, work, deadline_min


def _intervals(cols: dict[str, np.ndarray], M: np.ndarray) -> dict[str, np.ndarray]:
    """The effective stall, then Young's, Daly's, the exact and the chosen interval (the row's own, else the exact)."""
    C, W, s = cols["checkpoint_stall_min"], cols["async_write_min"], cols["async_slowdown_fraction"]
    c_eff = waste.effective_stall_kernel(C, W, s)
    young = waste.young_interval_kernel(c_eff, M)
    daly = waste.daly_interval_kernel(c_eff, M)
    exact = waste.exact_optimal_interval_kernel(C, M, W, s)
    chosen = np.where(np.isnan(cols["interval_min"]), exact, cols["interval_min"])
    return {"effective_stall_min": c_eff, "young_interval_min": young, "daly_interval_min": daly,
            "exact_interval_min": exact, "chosen_interval_min": chosen}


def _wastes(cols: dict[str, np.ndarray], M: np.ndarray, intervals: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The first-order waste at the chosen interval and at Young's, and the exact model's waste at each interval."""
    C, W, s = cols["checkpoint_stall_min"], cols["async_write_min"], cols["async_slowdown_fraction"]
    R, D = _restart_split(cols)
    c_eff, chosen = intervals["effective_stall_min"], intervals["chosen_interval_min"]
    floor = W * (1 - s)  # Young/Daly ignore the write; never evaluate them below the durability floor
    at_chosen = waste.waste_fraction_kernel(chosen, C, M, R, W, s, D)
    # where no row chose its own interval the optimum's waste is the chosen interval's: not computed twice
    at_optimum = (at_chosen.copy() if np.isnan(cols["interval_min"]).all() else
                  waste.waste_fraction_kernel(intervals["exact_interval_min"], C, M, R, W, s, D))
    return {
        "first_order_waste": waste.first_order_waste_kernel(chosen, c_eff, M),
        "young_min_waste": waste.young_min_waste_kernel(c_eff, M),
        "waste_fraction": at_chosen,
        "waste_fraction_at_optimum": at_optimum,
        "waste_fraction_at_young": waste.waste_fraction_kernel(np.maximum(intervals["young_interval_min"], floor),
                                                               C, M, R, W, s, D),
        "waste_fraction_at_daly": waste.waste_fraction_kernel(np.maximum(intervals["daly_interval_min"], floor),
                                                              C, M, R, W, s, D),
    }


def _gpus(cols: dict[str, np.ndarray]) -> np.ndarray:
    """Nodes x GPUs per node; refused where it overflows."""
    with np.errstate(over="ignore"):
        gpus = cols["nodes"] * cols["gpus_per_node"]
    check_finite_result("gpus_per_node", gpus, "nodes x GPUs per node overflows",
                        {"nodes": cols["nodes"], "gpus_per_node": cols["gpus_per_node"]})
    return gpus


def _money(table: pd.DataFrame, cols: dict[str, np.ndarray], gpus: np.ndarray, new: dict[str, np.ndarray]
           ) -> dict[str, np.ndarray]:
    """The GPUs, GPU-hours and money in all and by category (:func:`engine.cost.plan_money`), goodput and the
    cost per useful GPU-hour, from the hours in ``new``; a price whose cost per useful GPU-hour overflows is
    refused."""
    price = cols["price_per_gpu_hour"]
    out = {"gpus": gpus}
    out.update(cost.plan_money({cat: new[f"{cat}_h"] for cat in cost.CATEGORIES}, new["wall_h"], gpus, price))
    out["goodput"] = cost.goodput_kernel(new["useful_h"], new["wall_h"])
    with np.errstate(over="ignore", invalid="ignore"):
        out["cost_per_useful_gpu_hour"] = out["total_cost"] / out["useful_gpu_hours"]
    if not np.isfinite(out["cost_per_useful_gpu_hour"]).all():
        p = int(np.flatnonzero(~np.isfinite(out["cost_per_useful_gpu_hour"]))[0])
        raise InputError(f"row {table.index[p]}: price_per_gpu_hour", float(price[p]),
                         "the cost per useful GPU-hour overflows the float64 range: a smaller price or more "
                         "useful training")
    return out


@functools.cache
def derived_columns() -> tuple[str, ...]:
    """The columns :func:`evaluate` adds to a table, in its order (``job_mtbf_h`` first)."""
    probe = pd.DataFrame({"checkpoint_stall_min": [1.0], "node_mtbf_h": [1000.0], "nodes": [1.0],
                          "useful_training_h": [10.0], "price_per_gpu_hour": [1.0]})
    return tuple(c for c in evaluate(probe).columns if c not in probe.columns)


def evaluate_each(table: pd.DataFrame, validated: dict[str, np.ndarray] | None = None
                  ) -> tuple[list[pd.DataFrame], dict[Any, ValueError]]:
    """:func:`evaluate` on every row it accepts: (results in row order, {label: why a row was refused}).

    One call when every row is valid; otherwise the refused rows are isolated by bisection (about
    ``2 k log2(n)`` calls for k refused rows). For callers that must answer every good row even
    when some rows break a rule or overflow the model (batches, spreadsheet ranges). ``validated``: the
    table's effective columns as :func:`table_problems` gave them for these rows, which had no problem
    (the plan pipeline validates once, :func:`engine.pipeline.plan_table`): the models run on them without
    a second validation; only what the models themselves refuse (an overflow) is isolated.
    """
    try:
        return [evaluate(table) if validated is None else _evaluate_valid(table, validated)], {}
    except ValueError as exc:
        if len(table) == 1:
            return [], {table.index[0]: exc}
    mid = len(table) // 2

    def half(part: slice) -> dict[str, np.ndarray] | None:
        return None if validated is None else {k: v[part] for k, v in validated.items()}

    left, e1 = evaluate_each(table.iloc[:mid], half(slice(None, mid)))
    right, e2 = evaluate_each(table.iloc[mid:], half(slice(mid, None)))
    return left + right, {**e1, **e2}
