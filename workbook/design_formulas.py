"""The storage and recovery design written as Excel formulas: the plan every sheet uses.

:data:`PLAN_CALCS` is one sequence of :class:`~workbook.formulas.Calc` (the same objects as
:data:`workbook.formulas.CALCS`): the job's failure rate, then the design (checkpoint size,
bandwidths, the stall, background write and restore they give, the restart pipeline and the spare
pool), then the single-level plan at the stall, write and restart the design gives, then the money
(job GPU time, storage, spares, one total). The Plan sheet writes it once over defined names, the
Scaling sheet once per node count, the Compare and "Storage & recovery" sheets once per design: a
design therefore gives one answer on every sheet, live after any edit.

Rule of precedence (as :func:`ckptplan.engine.setup.plan_setup`): a stall, background write or
restart the planner *states* (a non-blank value) wins over the derived one; a blank one is derived
from the design when the design gives what it needs. The ``used_*`` calcs hold the value the plan
uses and :func:`bind` makes every later formula read them.

Each formula mirrors the engine (cite in parentheses):

* size = parameters x bytes per parameter + extra state (:func:`engine.storage.checkpoint_size_gb`);
* bandwidth = MIN(per writer x writers, aggregate), a blank side no limit
  (:func:`engine.storage.effective_bandwidth_gb_s`); an async save stalls for the device-to-host
  copy and writes in the background (:func:`engine.storage.save_times`);
* restart = detection + reallocation + start-up + communicator init (fixed + per 1,000 nodes) +
  load + warm-up (:mod:`engine.recovery`); its reallocation part (the wait for a node) is the
  plan's downtime, the rest exposed (:func:`engine.waste.expected_wall_time`'s ``D`` and ``R``);
* the spare pool (:func:`engine.recovery.expected_reallocation_min`, Erlang's loss system): with
  ``mu`` nodes in repair on average (replacement share / job MTBF x repair time), ``S`` spares and
  ``B`` Erlang's loss formula (the chance a node-replacing failure finds every spare taken), the
  chance a spare is free is ``1 - B`` and ``E[wait] = (1 - B) swap + B 60 r / (S + 1)``. ``B`` is
  the recursion ``B(0) = 1, B(k) = mu B(k-1) / (k + mu B(k-1))`` the engine runs
  (:func:`engine.recovery.erlang_b`), written as a chain of :data:`POOL_TERMS`-or-more helper cells
  (:func:`pool_chain_cell`), one step each, holding still once ``k`` passes ``S``: its last cell is
  ``B(S)`` and no range or array formula is needed;
* money: storage = size x retention x billing months x price per GB-month
  (:func:`engine.storage.storage_cost`), spares = spares x GPUs per node x wall hours x price,
  total = job GPU time + storage + spares (:func:`engine.setup.plan_setup`).
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..engine.fields import SETUP_FIELDS
from ..engine.setup import DERIVED, PARTS   # the fields a design derives and the restart parts: the engine's
from ..engine.storage import HOURS_PER_BILLING_MONTH
from . import formulas as F
from .formulas import Calc

__all__ = ["DERIVED", "DESIGN_CALCS", "MONEY_CALCS", "PLAN_CALCS", "PLAN_CALC_BY_KEY", "POOL_TERMS", "PARTS", "bind",
           "bandwidth", "blank_setup_refs", "downtime_kept_share", "either", "plan_refs", "pool_chain_cell", "pool_terms", "setup_refs", "write_pool_chain"]

#: least number of steps of the spare pool's Erlang-B recursion (one helper cell per spare)
POOL_TERMS = 64
_DEFAULTS = {f.name: f.default for f in SETUP_FIELDS}


def pool_terms(max_spares: float) -> int:
    """Steps of the spare pool's chain: room for 4x the most spares the workbook was built with (>= 64)."""
    return max(POOL_TERMS, 4 * int(max_spares or 0))


def setup_refs(ref: Callable[[str], str]) -> dict[str, str]:
    """References of every setup field (``ref(name)``) and of its value with a blank read as the default."""
    out: dict[str, str] = {}
    for f in SETUP_FIELDS:
        x = out[f.name] = ref(f.name)
        out[f"{f.name}_d"] = f'IF({x}="",{_DEFAULTS[f.name] or 0!r},{x})'
    return out


def plan_refs(terms: int, erlang_b: str) -> dict[str, str]:
    """References of the plan's inputs as the Plan sheet reads them: the Inputs names, the design's
    ``setup_<field>`` names and the spare pool's chain (``terms`` cells, ``erlang_b``: its last)."""
    refs = {key: key for key in F.INPUT_KEYS}
    refs.update(setup_refs(lambda name: f"setup_{name}"))
    refs.update(pool_terms=str(terms), pool_erlang_b=erlang_b)
    return refs


def blank_setup_refs() -> dict[str, str]:
    """Setup references of a table without a design (every field blank, no pool: every spare taken)."""
    return setup_refs(lambda name: '""') | {"pool_erlang_b": "1"}


def bind(refs: dict[str, str], key: str, ref: str) -> None:
    """Record ``ref`` as the cell of ``key``; a ``used_<field>`` calc also becomes the ``<field>`` later
    formulas read (the stated-or-derived stall, write and restart)."""
    refs[key] = ref
    if key.startswith("used_"):
        refs[key[5:]] = ref


def pool_chain_cell(n: int, prev: str | None, x: Mapping[str, str]) -> str:
    """Formula (without "=") of step ``k = n + 1`` of the Erlang-B recursion from ``prev`` (``B(k-1)``; ``B(0) = 1``):
    ``mu B / (k + mu B)`` while ``k <= S``, else ``prev`` unchanged (so the last cell is ``B(S)``)."""
    k, b = n + 1, prev or "1"
    mu = x["mean_in_repair"]
    return f'IF({x["repair_h"]}="",1,IF({k}<={x["spares_d"]},{mu}*{b}/({k}+{mu}*{b}),{b}))'


def write_pool_chain(ws, row: int, col: int, terms: int, x: Mapping[str, str], across: bool = False) -> str:
    """Write the spare pool's Erlang-B recursion (:func:`pool_chain_cell`, ``terms`` cells) from ``(row, col)`` down
    a column (``across``: along a row); returns the reference of its last cell (the ``pool_erlang_b``)."""
    from openpyxl.utils import get_column_letter

    ref = None
    for n in range(terms):
        r, c = (row, col + n) if across else (row + n, col)
        cell = ws.cell(row=r, column=c, value="=" + pool_chain_cell(n, ref, x))
        cell.number_format = "0.000000"
        ref = f"{get_column_letter(c)}{r}"
    return ref or "1"


def either(a: str, b: str) -> str:
    """``a``, or ``b`` where ``a`` is blank."""
    return f'IF({a}="",{b},{a})'


def downtime_kept_share(base_downtime: str, base_restart: str, restart: str, restart_set: str,
                        restart_times: str) -> str:
    """The downtime of a design that does not change it: the baseline's, scaled with the restart when the design
    changes the restart (a change cell given) and both baseline figures are nonzero, as
    :meth:`ckptplan.engine.designs.Design.apply` keeps its share (a restart twice as fast waits half as long)."""
    d, r = base_downtime, base_restart
    return (f'IF(OR({restart_set}<>"",{restart_times}<>""),IF(OR({d}="",{r}=""),{d},IF(OR({d}=0,{r}=0),{d},'
            f'{d}*{restart}/{r})),{d})')


def bandwidth(per: str, agg: str, n: str) -> str:
    """MIN(per x writers, aggregate), a blank side being no limit (storage.effective_bandwidth_gb_s)."""
    return f'IF({per}="",{agg},IF({agg}="",{per}*{n},MIN({per}*{n},{agg})))'


def _t(template: str) -> Callable[[Mapping[str, str]], str]:
    return lambda r: template.format_map(r)


_READ = bandwidth(either("{read_gb_s_per_writer}", "{write_gb_s_per_writer}"),
            either("{aggregate_read_gb_s}", "{aggregate_write_gb_s}"), "{writers_used}")
_PART_EXPR = {
    "detection_min": "{detection_min_d}",
    "reallocation_min": either("{reallocation_min}", 'IF({repair_h}<>"",{replacement_share_d}*{pool_reallocation_min},0)'),
    "startup_min": "{startup_min_d}",
    "init_min": "{init_min_d}+{init_per_1000_nodes_min_d}*{nodes}/1000",
    "load_min": either("{load_min}", either("{derived_restore_min}", "0")),
    "warmup_min": "{warmup_min_d}",
}
_PART_LABEL = {
    "detection_min": "detection", "reallocation_min": "waiting for a node (stated, else replacement share x the pool's)",
    "startup_min": "start-up", "init_min": "communicator set-up = fixed + per 1,000 nodes x nodes / 1,000",
    "load_min": "checkpoint load (stated, else the derived restore)", "warmup_min": "warm-up"}

#: the design: key, label, unit, format, formula; ``engine_key`` names the figure of the engine it equals
#: (tests map it: a ``plan_setup`` figure, a restart part ``part:<name>``, or a pool figure)
DESIGN_CALCS: tuple[Calc, ...] = (
    Calc("checkpoint_size_gb", "Checkpoint size = parameters x bytes per parameter + extra state", "GB", "#,##0.0",
         _t('IF({parameters_b}="","",{parameters_b}*{bytes_per_parameter_d}+{extra_state_gb_d})'), "checkpoint_size_gb"),
    Calc("writers_used", "Writers (empty = one per node)", "writers", "#,##0", _t(either("{writers}", "{nodes}")),
         "writers"),
    Calc("write_bandwidth_gb_s", "Write bandwidth = MIN(per writer x writers, aggregate)", "GB/s", "#,##0.00",
         _t('IF(OR({checkpoint_size_gb}="",AND({write_gb_s_per_writer}="",{aggregate_write_gb_s}="")),"",'
            + bandwidth("{write_gb_s_per_writer}", "{aggregate_write_gb_s}", "{writers_used}") + ")"), "write_bandwidth_gb_s"),
    Calc("derived_checkpoint_stall_min", "Save stall from the design: size / bandwidth (async: size / device-to-host "
         "copy)", "min", F.MINUTES, _t('IF({write_bandwidth_gb_s}="","",IF({d2h_gb_s_per_writer}="",{checkpoint_size_gb}/'
                                      '{write_bandwidth_gb_s}/60,{checkpoint_size_gb}/({d2h_gb_s_per_writer}*'
                                      '{writers_used})/60))'), "derived_checkpoint_stall_min"),
    Calc("derived_async_write_min", "Background write from the design: async size / bandwidth, sync 0", "min",
         F.MINUTES, _t('IF({write_bandwidth_gb_s}="","",IF({d2h_gb_s_per_writer}="",0,{checkpoint_size_gb}/'
                       '{write_bandwidth_gb_s}/60))'), "derived_async_write_min"),
    Calc("read_bandwidth_gb_s", "Read bandwidth (blank read figures = the write figures)", "GB/s", "#,##0.00",
         _t('IF({write_bandwidth_gb_s}="","",' + _READ + ")"), "read_bandwidth_gb_s"),
    Calc("derived_restore_min", "Restore from the design = size / read bandwidth", "min", F.MINUTES,
         _t('IF({read_bandwidth_gb_s}="","",{checkpoint_size_gb}/{read_bandwidth_gb_s}/60)'), "derived_restore_min"),
    Calc("parts_given", "Restart parts given (any part, or a repair time)", "yes/no", "General",
         _t("IF(OR(" + ",".join(f'{{{p}}}<>""' for p in PARTS + ("init_per_1000_nodes_min", "repair_h"))
            + '),"yes","no")')),
    Calc("mean_in_repair", "Spare pool: nodes in repair on average = replacement share / job MTBF x repair time",
         "nodes", "0.0000", _t('IF({repair_h}="","",{replacement_share_d}/{job_mtbf_h}*{repair_h})'), "mean_in_repair"),
    Calc("spare_free_probability", "Chance a spare is free at a node-replacing failure = 1 - Erlang B(spares, nodes "
         "in repair); 0 without spares", "share", "0.000000",
         _t('IF({repair_h}="","",IF({spares_d}>{pool_terms},"n/a: more spares than the workbook\'s pool chain holds '
            '({pool_terms}); regenerate it",1-{pool_erlang_b}))'), "spare_free_probability"),
    Calc("pool_reallocation_min", "Wait for a node per node-replacing failure = (1 - B) x swap + B x 60 x repair h "
         "/ (spares + 1)", "min", F.MINUTES,
         _t('IF({repair_h}="","",IF({spares_d}>{pool_terms},"n/a: more spares than the workbook\'s pool chain holds '
            '({pool_terms}); regenerate it",(1-{pool_erlang_b})*{swap_min_d}+{pool_erlang_b}*60*{repair_h}/'
            '({spares_d}+1)))'), "pool_reallocation_min"),
    Calc("reallocation_sd_min", "Its standard deviation (fixed repair times) = SQRT(B (1 - B) (swap - w)^2 + B V), w = "
         "60 x repair h / (spares + 1), V = (60 x repair h)^2 x spares / ((spares + 1)^2 (spares + 2))", "min",
         F.MINUTES,
         _t('IF({repair_h}="","",IF({spares_d}>{pool_terms},"n/a: more spares than the workbook\'s pool chain holds '
            '({pool_terms}); regenerate it",SQRT({pool_erlang_b}*(1-{pool_erlang_b})*({swap_min_d}-60*{repair_h}/'
            '({spares_d}+1))^2+{pool_erlang_b}*(60*{repair_h})^2*{spares_d}/(({spares_d}+1)^2*({spares_d}+2)))))'),
         "reallocation_sd_min"),
    Calc("pool_waiting_share", "Share of the time the job waits for a node = B(spares + 1) = mu B / (spares + 1 + "
         "mu B)", "share", "0.000000",
         _t('IF({repair_h}="","",IF({spares_d}>{pool_terms},"n/a: more spares than the workbook\'s pool chain holds '
            '({pool_terms}); regenerate it",{mean_in_repair}*{pool_erlang_b}/({spares_d}+1+{mean_in_repair}*'
            '{pool_erlang_b})))'), "pool_waiting_share"),
    Calc("mean_nodes_in_repair", "Nodes in repair, time-average = mu x (1 - B(spares + 1)): the waiting job sends "
         "no failures", "nodes", "0.0000",
         _t('IF({repair_h}="","",IF(ISNUMBER({pool_waiting_share}),{mean_in_repair}*(1-{pool_waiting_share}),'
            '{pool_waiting_share}))'), "mean_nodes_in_repair"),
    *(Calc(f"part_{p}", f"Restart part: {_PART_LABEL[p]}", "min", F.MINUTES,
           _t(f'IF({{parts_given}}="yes",{_PART_EXPR[p]},"")'), f"part:{p}") for p in PARTS),
    Calc("restart_pipeline_min", "Restart pipeline = the sum of the parts", "min", F.MINUTES,
         _t('IF({parts_given}="yes",' + "+".join(f"{{part_{p}}}" for p in PARTS) + ',"")'), "pipeline_min"),
    # before used_restart_min binds {restart_min}: a stated restart keeps its own downtime (0 when none is stated)
    Calc("used_downtime_min", "Downtime the plan uses (the restart's wait for a node, the job cannot fail in it): "
         "stated, else the reallocation part of a restart from the design", "min", F.MINUTES,
         _t('IF({downtime_min}<>"",{downtime_min},IF(AND({restart_min}="",{restart_pipeline_min}<>""),'
            '{part_reallocation_min},0))'), "used:downtime_min"),
    *(Calc(f"used_{n}", f"{label} the plan uses: stated, else from the design", "min", F.MINUTES,
           _t(f'IF({{{n}}}<>"",{{{n}}},IF({{{src}}}<>"",{{{src}}},{fallback}))'), f"used:{n}")
      for n, src, label, fallback in (("checkpoint_stall_min", "derived_checkpoint_stall_min", "Save stall", '""'),
                                      ("async_write_min", "derived_async_write_min", "Background write", "0"),
                                      ("restart_min", "restart_pipeline_min", "Restart", "0"))),
)


def _money(template: str) -> Callable[[Mapping[str, str]], str]:
    return lambda r: f'IF(ISNUMBER({r["wall_h"]}),{template.format_map(r)},{F.NEVER})'


#: the money after the plan: storage and spares beside the job's GPU time, and one total
MONEY_CALCS: tuple[Calc, ...] = (
    Calc("billing_months", "Billing months = wall hours / 730", "months", "0.000",
         _money(f"{{wall_h}}/{HOURS_PER_BILLING_MONTH!r}")),
    Calc("storage_cost", "Storage = size x checkpoints kept x billing months x price per GB-month", "money", F.MONEY,
         _money('IF({checkpoint_size_gb}="",0,{checkpoint_size_gb}*{retention_d}*{billing_months}*'
                '{price_per_gb_month_d})'), "storage_cost"),
    Calc("spare_gpu_hours", "Spare GPU-hours = spares x GPUs per node x wall hours", "GPU-h", F.GPU_HOURS,
         _money("{spares_d}*{gpus_per_node}*{wall_h}"), "spare_gpu_hours"),
    Calc("total_gpu_hours", "GPU-hours, total = job + spares", "GPU-h", F.GPU_HOURS,
         _money("{job_gpu_hours}+{spare_gpu_hours}"), "total_gpu_hours"),
    Calc("spare_cost", "Spare cost = spare GPU-hours x price", "money", F.MONEY,
         _money("{spare_gpu_hours}*{price_per_gpu_hour}"), "spare_cost"),
    Calc("total_cost", "Total cost = job GPU time + storage + spares", "money", F.MONEY,
         _money("{compute_cost}+{storage_cost}+{spare_cost}"), "total_cost"),
    Calc("cost_per_useful_gpu_hour", "Cost per useful GPU-hour = total cost / useful GPU-hours", "money/GPU-h",
         "#,##0.0000", _money("{total_cost}/{useful_gpu_hours}"), "cost_per_useful_gpu_hour"),
)

_HEAD = ("job_failure_rate_per_h", "job_mtbf_h", "job_mtbf_min")
#: the whole plan, in the order its formulas read each other (see the module notes)
PLAN_CALCS: tuple[Calc, ...] = (tuple(c for c in F.CALCS if c.key in _HEAD) + DESIGN_CALCS
                                + tuple(c for c in F.CALCS if c.key not in _HEAD) + MONEY_CALCS)
PLAN_CALC_BY_KEY = {c.key: c for c in PLAN_CALCS}
