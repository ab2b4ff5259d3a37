"""Checkpoint-interval and waste models.

Symbols (one time unit of the caller's choosing, used consistently):

* ``T``  compute interval: useful work done between two saves.
* ``C``  checkpoint stall: wall time the training step is blocked per save.
* ``M``  job-wide mean time between interruptions (exponential failures unless stated).
* ``R``  exposed restart time paid after every failure (start-up, communicator set-up, load,
  warm-up): the job holds its nodes and a failure during it starts it again.
* ``D``  unexposed downtime paid after every failure before the restart (waiting for a replacement
  node): the job holds no full set of nodes, so it cannot fail [Bougeret11]. ``D = 0``: every
  formula here is Daly's.
* ``W``  background write time of an asynchronous save (after the blocking part ``C``), during
  which training runs but loses the fraction ``slowdown`` of its throughput; the checkpoint is
  restorable only once the write is durable. ``W = 0`` is a synchronous save.
* ``work`` useful compute the job needs in total.

References
----------
* [Young74] J. W. Young, "A first order approximation to the optimum checkpoint interval",
  Communications of the ACM 17(9), 530-531, 1974.
* [Daly06] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3), 303-312, 2006 (doi:10.1016/j.future.2004.11.016):
  the complete cost function for Poisson failures (expected wall time with restart time R), its
  exact optimum through Lambert's W (solved here by a series and Newton steps), and the perturbation (higher-order) estimate of the optimum.
  Worked cases: 5-minute dump, R = 10 min: 117 min at M = 24 h, 57 min at M = 6 h, 9.1 min at
  M = 15 min (Figs. 3-5).
* [Bougeret11] M. Bougeret, H. Casanova, M. Rabie, Y. Robert, F. Vivien, "Checkpointing strategies
  for parallel jobs", SC'11: the exact optimum for exponential failures through Lambert's W, and
  the expectation with a downtime ``D`` the job cannot fail in, ``e^{R/M} (M + D) (e^{(T+C)/M} - 1)``
  per segment.

Every function broadcasts over scalars, numpy arrays and pandas Series and raises
:class:`engine.InputError` (a ``ValueError``) naming the argument, value and rule on bad input.
"""

from __future__ import annotations

import sys

import numpy as np

from .errors import NEVER_FINISHES, InputError
from .gate import check_finite_result, prepare

__all__ = ["MAX_LOG", "check_async_write", "daly_interval", "daly_interval_kernel", "effective_stall",
           "effective_stall_kernel", "exact_optimal_interval", "exact_optimal_interval_kernel", "expected_wall_time",
           "first_order_waste", "first_order_waste_kernel", "log_wall_per_work", "time_breakdown",
           "time_breakdown_kernel", "waste_fraction", "waste_fraction_kernel", "young_interval",
           "young_interval_kernel", "young_min_waste", "young_min_waste_kernel"]

#: largest exponent whose exp() is finite in float64 (log of float max is 709.78)
MAX_LOG = 709.0

# Each ``<model>_kernel`` is the model on arrays the caller has already validated and broadcast (what
# engine.evaluate runs after checking a table once): no input check, only the result's overflow check.


def young_interval(C, M):
    """Young's first-order optimum interval ``T = sqrt(2 C M)`` [Young74].

    Minimises :func:`first_order_waste`. Assumes exponential failures and ``C << T << M``; it
    ignores failures during the save and the restart time. For ``C`` approaching ``M`` the result
    exceeds ``M`` and the model no longer means anything: use :func:`exact_optimal_interval`.
    ``C = 0`` gives 0 (save continuously).
    """
    (C_, M_), wrap = prepare(("C", C, "nonnegative"), ("M", M, "positive"))
    return wrap(young_interval_kernel(C_, M_))


def young_interval_kernel(C_, M_):
    """:func:`young_interval` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        out = np.sqrt(2.0 * C_ * M_)
    check_finite_result("C", out, "Young's interval sqrt(2 C M) overflows", {"C": C_, "M": M_})
    return out


def _quiet():
    """numpy's floating-point warnings off: every kernel checks its own result (check_finite_result)."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def first_order_waste(T, C, M):
    """First-order waste ``C/T + T/(2M)`` as a fraction of useful compute time [Young74].

    ``C/T`` is the save overhead, ``T/(2M)`` the expected rework (half an interval per failure).
    Valid for ``C << T << M``; values near or above 1 mean the first-order model has broken down,
    not that the job wastes everything. Restart time is not included.
    """
    (T_, C_, M_), wrap = prepare(("T", T, "positive"), ("C", C, "nonnegative"), ("M", M, "positive"))
    return wrap(first_order_waste_kernel(T_, C_, M_))


def first_order_waste_kernel(T_, C_, M_):
    """:func:`first_order_waste` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        out = C_ / T_ + T_ / (2.0 * M_)
    check_finite_result("T", out, "the first-order waste C/T + T/(2M) overflows", {"T": T_, "C": C_, "M": M_})
    return out


def young_min_waste(C, M):
    """First-order waste at Young's optimum: ``sqrt(2C/M)`` (= ``first_order_waste(sqrt(2CM), C, M)``)."""
    (C_, M_), wrap = prepare(("C", C, "nonnegative"), ("M", M, "positive"))
    return wrap(young_min_waste_kernel(C_, M_))


def young_min_waste_kernel(C_, M_):
    """:func:`young_min_waste` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        out = np.sqrt(2.0 * C_ / M_)
    check_finite_result("M", out, "the first-order waste sqrt(2C/M) overflows", {"C": C_, "M": M_})
    return out


def daly_interval(C, M):
    """Daly's higher-order optimum interval [Daly06, perturbation solution].

    ``T = sqrt(2CM) * (1 + sqrt(C/(2M))/3 + (C/(2M))/9) - C`` for ``C < 2M``, else ``T = M``.

    Derived from a perturbation expansion of the exact exponential model (:func:`expected_wall_time`)
    in ``C/M``; it accounts for failures during the save. The ``C >= 2M`` branch is Daly's
    prescription for the regime where the expansion fails: a valid answer, not an error (the job
    spends most of its time saving and restarting there; check :func:`waste_fraction`).
    Tends to :func:`young_interval` as ``C/M -> 0``.
    """
    (C_, M_), wrap = prepare(("C", C, "nonnegative"), ("M", M, "positive"))
    return wrap(daly_interval_kernel(C_, M_))


def daly_interval_kernel(C_, M_):
    """:func:`daly_interval` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        ratio = C_ / (2.0 * M_)
        higher = np.sqrt(2.0 * C_ * M_) * (1.0 + np.sqrt(ratio) / 3.0 + ratio / 9.0) - C_
        out = np.where(C_ < 2.0 * M_, higher, M_)
    check_finite_result("C", out, "Daly's interval overflows", {"C": C_, "M": M_})
    return out


def effective_stall(C, W=0.0, slowdown=0.0):
    """Compute time lost per save: blocking stall plus throughput lost during the write.

    ``C_eff = C + W * slowdown``. An asynchronous save with ``C = 0`` still costs ``W * slowdown``
    of compute, and (see :func:`expected_wall_time`) delays the moment the checkpoint becomes
    restorable by ``W``.
    """
    (C_, W_, s_), wrap = prepare(("C", C, "nonnegative"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction"))
    return wrap(effective_stall_kernel(C_, W_, s_))


def effective_stall_kernel(C_, W_, s_):
    """:func:`effective_stall` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        out = C_ + W_ * s_
    check_finite_result("C", out, "the effective stall C + W * slowdown overflows", {"C": C_, "W": W_})
    return out


def log_wall_per_work(T_, C_, M_, R_, W_, s_, D_=0.0):
    """log of expected wall time per unit of useful work, exact exponential model (see below).

    ``D_`` (downtime, unexposed) adds ``log1p(D/M)``: the wall time is the exposed time times
    ``(M + D) / M`` (:func:`expected_wall_time`); with ``D_ = 0`` (the default) nothing is added.
    """
    out = _log_wall_exposed(T_, C_, M_, R_, W_, s_)
    if np.any(np.asarray(D_) != 0):
        out = out + np.log1p(D_ / M_)
    return out


def _log_wall_exposed(T_, C_, M_, R_, W_, s_):
    """log of the expected exposed time per unit of useful work (Daly's complete model)."""
    if not _same_shape(T_, C_, M_, R_, W_, s_):
        period = T_ + C_ + W_ * s_            # wall time between two saves in steady state
        exposed = T_ + C_ + W_                # from restore to durability of the next checkpoint
        return np.log(M_) + (R_ + exposed) / M_ + np.log(-np.expm1(-period / M_)) - np.log(T_)
    # the same operations in the same order (the same bits), with fewer temporary arrays
    lost = T_ + C_
    lost += W_ * s_
    np.negative(lost, out=lost)
    lost /= M_
    np.expm1(lost, out=lost)
    np.negative(lost, out=lost)
    np.log(lost, out=lost)
    exposed = T_ + C_
    exposed += W_
    exposed += R_
    exposed /= M_
    out = np.log(M_)
    out += exposed
    out += lost
    out -= np.log(T_)
    return out


def _same_shape(*arrays) -> bool:
    """Every argument an array of one shape (not 0-d): the kernels may then work in place."""
    shape = getattr(arrays[0], "shape", ())
    return bool(shape) and all(isinstance(a, np.ndarray) and a.shape == shape for a in arrays)


def check_async_write(T_, W_, s_):
    """Refuse a background write that is not durable before the next save: ``W (1 - slowdown) <= T``
    (:class:`InputError` on ``W``, with the first offending position)."""
    behind = W_ * (1.0 - s_)
    with np.errstate(over="ignore"):
        bad = behind > T_ * (1.0 + 1e-12)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
        raise InputError(
            "W", float(W_[idx]),
            f"the background write must be durable before the next save starts: "
            f"W * (1 - slowdown) = {float(behind[idx]):.6g} must be <= T = {float(T_[idx]):.6g}",
            tuple(int(i) for i in idx) or None,
        )


def expected_wall_time(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, D=0.0):
    """Expected wall time to finish ``work`` units of compute, exact for exponential failures.

    Synchronous saves (``W = 0``), [Daly06, complete cost function]::

        E = M * exp(R/M) * (exp((T + C)/M) - 1) * work / T

    Asynchronous saves (``W > 0``): the save blocks for ``C``, then writes for ``W`` while training
    runs at ``1 - slowdown`` of its speed; the checkpoint is restorable only once durable, so a
    failure during the write falls back to the previous checkpoint. With ``P = T + C + W*slowdown``
    (steady-state wall time per interval) and ``L = T + C + W`` (from a restore to the next durable
    checkpoint, no write pending after a restart)::

        E = M * exp(R/M) * exp(L/M) * (1 - exp(-P/M)) * work / T

    which reduces to Daly's formula at ``W = 0``. Derivation (renewal argument over durable
    checkpoints): from a durable checkpoint the next one is reached after ``P`` without failure
    (probability ``exp(-P/M)``); a failure costs the time to it, a restart (itself restarted on
    failure: ``M (exp(R/M) - 1)``), then an uninterrupted window ``L`` from the restored state.

    Downtime ``D`` (unexposed: after every failure, before the restart, the job waits without its
    nodes and cannot fail) [Bougeret11]: the exposed part of the run is the process above,
    unchanged; every failure, a restart's included, adds ``D``, and by Wald's identity the
    failures number ``exposed / M``. So ``E_D = E (M + D) / M``, i.e. ``M`` becomes ``M + D`` in
    the leading factor: ``(M + D) exp(R/M) (exp((T + C)/M) - 1) work / T`` synchronously.

    Assumptions: exponential (memoryless) failures at rate ``1/M`` that strike during compute,
    saves and restarts alike; every interval is a full ``T`` (``work/T`` need not be whole: the
    steady-state expectation per unit work is scaled); the write finishes before the next save
    (``W (1 - slowdown) <= T``). For finite jobs, deadlines or non-exponential failures use
    :mod:`ckptplan.engine.finite` (exact) and :mod:`ckptplan.engine.montecarlo`.
    """
    (work_, T_, C_, M_, R_, W_, s_, D_), wrap = prepare(
        ("work", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative"), ("M", M, "positive"),
        ("R", R, "nonnegative"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction"), ("D", D, "nonnegative"),
    )
    check_async_write(T_, W_, s_)
    return wrap(_expected_wall(work_, T_, C_, M_, R_, W_, s_, D_))


def _expected_wall(work_, T_, C_, M_, R_, W_, s_, D_=0.0):
    """:func:`expected_wall_time` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        log_total = log_wall_per_work(T_, C_, M_, R_, W_, s_, D_)
        log_total = np.add(log_total, np.log(work_), out=log_total if _same_shape(log_total, work_) else None)
    if not np.all(np.isfinite(log_total)):  # an input out of range after a unit conversion (inf), or its sum
        check_finite_result("M", log_total, "the expected wall time cannot be computed: (T + C + W + R)/M is out "
                            "of range", {"work": work_, "T": T_, "C": C_, "M": M_, "R": R_, "W": W_})
    if np.any(log_total > MAX_LOG):
        idx = tuple(np.argwhere(log_total > MAX_LOG)[0]) if log_total.ndim else ()
        at = {k: float(np.broadcast_to(v, np.shape(log_total))[idx]) for k, v in
              (("work", work_), ("T", T_), ("C", C_), ("M", M_), ("R", R_), ("W", W_))}
        ratio = (at["T"] + at["C"] + at["W"] + at["R"]) / at["M"]
        if ratio > 1.0:
            raise InputError("M", at["M"], f"{NEVER_FINISHES} (restart + interval + save = {ratio:.4g} job MTBFs: "
                             "the expected wall time overflows)", tuple(int(i) for i in idx) or None)
        raise InputError("T", at["T"], f"work / T = {at['work'] / at['T']:.4g} intervals: the expected wall time "
                         f"overflows the float64 range (|x| <= {sys.float_info.max:.6g})", tuple(int(i) for i in idx) or None)
    return np.exp(log_total, out=log_total if isinstance(log_total, np.ndarray) and log_total.ndim else None)


def waste_fraction(T, C, M, R=0.0, W=0.0, slowdown=0.0, D=0.0):
    """Share of expected wall time not spent on useful compute: ``1 - work / E``.

    ``E`` from :func:`expected_wall_time` (exact exponential model, saves, rework and restarts
    included; independent of ``work``). In ``[0, 1)``; tends to 1 when ``T + C`` or ``R`` is large
    against ``M``. Computed in log space, so it stays finite where the wall time would overflow.
    """
    (T_, C_, M_, R_, W_, s_, D_), wrap = prepare(
        ("T", T, "positive"), ("C", C, "nonnegative"), ("M", M, "positive"),
        ("R", R, "nonnegative"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction"), ("D", D, "nonnegative"),
    )
    check_async_write(T_, W_, s_)
    return wrap(waste_fraction_kernel(T_, C_, M_, R_, W_, s_, D_))


def waste_fraction_kernel(T_, C_, M_, R_, W_, s_, D_=0.0):
    """:func:`waste_fraction` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        lw = log_wall_per_work(T_, C_, M_, R_, W_, s_, D_)
        if not (isinstance(lw, np.ndarray) and lw.ndim):
            out = -np.expm1(-lw)
        else:
            np.negative(lw, out=lw)  # -expm1(-lw) in place
            np.expm1(lw, out=lw)
            out = np.negative(lw, out=lw)
    check_finite_result("M", out, "the waste fraction cannot be computed: (T + C + W + R)/M is out of range",
                        {"T": T_, "C": C_, "M": M_, "R": R_, "W": W_})
    return out


# Lambert-W series of 1 + W0(z) near the branch point z = -1/e in p = sqrt(2 (1 + e z)):
# W0 = -1 + p - p^2/3 + 11/72 p^3 - 43/540 p^4 + 769/17280 p^5 - 221/8505 p^6 + ...
_SERIES = (1.0, -1.0 / 3.0, 11.0 / 72.0, -43.0 / 540.0, 769.0 / 17280.0, -221.0 / 8505.0)
#: Newton steps on y = 1 - x: from the lower bound the error squares each step; 8 reach rounding for c in [1e-3, 700]
_NEWTON_STEPS = 8


def _exact_x(c):
    """Solve ``(1 - x) exp(x + c) = 1`` for x in [0, 1): x = 1 + W0(-exp(-1 - c)).

    Below ``c = 1e-3``: the Lambert-W series in ``p = sqrt(2 (1 - e^-c))``. Above: Newton's method
    on ``h(y) = ln y - y + 1 + c`` for ``y = 1 - x`` from ``y0 = max(1 - sqrt(2c), exp(-1 - c))``, a
    lower bound of the root; ``h`` is increasing and concave on (0, 1), so the iterates rise
    monotonically to the root, quadratically once close (the iteration the workbook's formulas
    use). Then two Newton steps on ``g(x) = x + c + log(1 - x)`` polish small ``x``.
    """
    c = np.asarray(c, dtype=np.float64)
    x = np.ones(c.shape)                       # beyond c ~ 700 the root y ~ exp(-1 - c) underflows: x = 1
    low = c < 1e-3
    newton = ~low & ~(c > 700.0)               # NaN included (it stays NaN)
    # one branch per element: the series on its elements only, Newton on the others
    if np.any(low):
        p = np.sqrt(2.0 * -np.expm1(-c[low]))
        x[low] = sum(coef * p ** (k + 1) for k, coef in enumerate(_SERIES))
    if np.any(newton):
        cn = c[newton]
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            y = np.maximum(1.0 - np.sqrt(2.0 * cn), np.exp(-1.0 - cn))
            for _ in range(_NEWTON_STEPS):
                y = y - (np.log(y) - y + 1.0 + cn) / (1.0 / y - 1.0)
        x[newton] = 1.0 - y
    # two Newton steps on g(x) = x + c + log1p(-x) polish both branches to full precision
    for _ in range(2):
        safe = (x > 0) & (x < 0.5)
        xs, cs = x[safe], c[safe]
        x[safe] = xs - (xs + cs + np.log1p(-xs)) / (-xs / (1.0 - xs))
    return np.clip(x, 0.0, 1.0)


def exact_optimal_interval(C, M, W=0.0, slowdown=0.0):
    """Interval minimising the exact expected wall time (:func:`expected_wall_time`).

    Setting the derivative of ``exp(L/M) (1 - exp(-P/M)) / T`` to zero gives
    ``(1 - T/M) exp((T + C_eff)/M) = 1`` with ``C_eff = C + W*slowdown`` (:func:`effective_stall`),
    solved in closed form [Daly06; Bougeret11]::

        T* = M * (1 + W0(-exp(-1 - C_eff/M)))

    (``W0`` the principal branch of Lambert's W; a series near the branch point and two Newton
    steps keep full precision for tiny ``C_eff/M``). ``R`` only scales the expected time, so it
    does not move the optimum; ``W`` moves it only through ``C_eff`` and the constraint
    ``T >= W (1 - slowdown)`` (the write must be durable before the next save), which binds
    when the unconstrained optimum is shorter. ``T*`` tends to Young's ``sqrt(2 C M)`` as
    ``C/M -> 0`` and to ``M`` as ``C/M`` grows. ``C_eff = 0`` with ``W = 0`` gives 0.
    """
    (C_, M_, W_, s_), wrap = prepare(
        ("C", C, "nonnegative"), ("M", M, "positive"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction"),
    )
    return wrap(exact_optimal_interval_kernel(C_, M_, W_, s_))


def exact_optimal_interval_kernel(C_, M_, W_, s_):
    """:func:`exact_optimal_interval` on validated arrays (raises only when the result overflows)."""
    with _quiet():
        out = np.maximum(M_ * _exact_x((C_ + W_ * s_) / M_), W_ * (1.0 - s_))
    check_finite_result("M", out, "the exact optimum interval cannot be computed", {"C": C_, "M": M_, "W": W_})
    return out


def time_breakdown(work, T, C, M, R=0.0, W=0.0, slowdown=0.0, D=0.0):
    """Split :func:`expected_wall_time` into where the time goes (exact exponential model).

    Returns a dict of arrays (same kind as the inputs), each in the time unit of the inputs:

    * ``useful``   ``work``: compute that survives.
    * ``save``     ``(work/T) * (C + W*slowdown)``: blocking stalls and throughput lost to writes
      on the saves that succeed.
    * ``restart``  ``rollbacks * M (exp(R/M) - 1) + D * failures``: restart time, including restarts
      that were themselves interrupted, and the downtime after every failure.
    * ``rework``   ``rollbacks * M - (work/T) * P``: compute and saves lost to failures (work since
      the last durable checkpoint, partial saves, and the redo of work done while the lost write
      was pending). Written directly rather than as ``total - the rest``, which cancels
      catastrophically when restarts dominate.
    * ``total``    :func:`expected_wall_time`.
    * ``failures`` the expected number of *all* failures, those that strike a restart included:
      exposed time ``/ M`` (Wald's identity [Wald45]: the job fails at rate ``1/M`` whenever it is
      exposed, i.e. all the time but the downtime), ``= total / (M + D) = rollbacks * exp(R/M)``.
    * ``rollbacks`` the failures outside restarts (each followed by a completed restart and a
      rollback): ``(work/T) * (1 - exp(-P/M)) * exp(L/M)`` (``= (work/T)(exp((T+C)/M) - 1)``
      synchronously). ``failures - rollbacks`` is the number of restarts that were themselves
      interrupted.

    [Wald45] A. Wald, "Sequential tests of statistical hypotheses", Annals of Mathematical
    Statistics 16(2), 117-186, 1945 (the expected number of events of a Poisson stream over a
    stopping time).

    Assumptions as :func:`expected_wall_time`.
    """
    (work_, T_, C_, M_, R_, W_, s_, D_), wrap = prepare(
        ("work", work, "positive"), ("T", T, "positive"), ("C", C, "nonnegative"), ("M", M, "positive"),
        ("R", R, "nonnegative"), ("W", W, "nonnegative"), ("slowdown", slowdown, "fraction"), ("D", D, "nonnegative"),
    )
    check_async_write(T_, W_, s_)
    return {k: wrap(v) for k, v in time_breakdown_kernel(work_, T_, C_, M_, R_, W_, s_, D_).items()}


def time_breakdown_kernel(work_, T_, C_, M_, R_, W_, s_, D_=0.0):
    """:func:`time_breakdown` on validated arrays: a dict of float arrays (raises only when a part overflows)."""
    total = _expected_wall(work_, T_, C_, M_, R_, W_, s_, D_)
    with _quiet():
        parts = _breakdown_parts(work_, T_, C_, M_, R_, W_, s_)
    rollbacks, save, rework, restart = parts
    named = {"M": M_, "T": T_, "C": C_, "W": W_, "work": work_}
    check_finite_result("M", rollbacks, "the expected number of failures overflows: (T + C + W)/M is too large", named)
    with _quiet():
        failures = rollbacks * np.exp(R_ / M_)   # every failure, restarts included (Wald: exposed time / M)
        if np.any(np.asarray(D_) != 0):
            restart = restart + D_ * failures    # the downtime after every failure
    check_finite_result("M", failures, "the expected number of failures overflows: (T + C + W + R)/M is too large",
                        named)
    check_finite_result("D", restart, "the restart time overflows", {"D": D_, **named})
    check_finite_result("T", save, "the save time (work/T) * (C + W*slowdown) overflows", named)
    check_finite_result("M", rework, "the rework time overflows", named)
    check_finite_result("R", restart, "the restart time overflows", {"R": R_, **named})
    return {"useful": work_, "save": save, "rework": rework, "restart": restart, "total": total, "failures": failures,
            "rollbacks": rollbacks}


def _breakdown_parts(work_, T_, C_, M_, R_, W_, s_):
    """(rollbacks, save, rework, restart) of :func:`time_breakdown_kernel` (``rollbacks``: failures outside restarts)."""
    segments = work_ / T_
    if _same_shape(work_, T_, C_, M_, R_, W_, s_):  # the expressions below, in place (the same bits)
        period = T_ + C_
        period += W_ * s_
        q = np.negative(period)
        q /= M_
        np.expm1(q, out=q)
        np.negative(q, out=q)
        failures = np.multiply(segments, q, out=q)
        e = T_ + C_
        e += W_
        e /= M_
        failures *= np.exp(e, out=e)
        lost = failures * M_
        restart = np.expm1(R_ / M_)
        np.multiply(lost, restart, out=restart)
        save = segments * (C_ + W_ * s_)
        period *= segments
        rework = np.subtract(lost, period, out=lost)
        np.maximum(rework, 0.0, out=rework)
    else:
        failures = segments * -np.expm1(-(T_ + C_ + W_ * s_) / M_) * np.exp((T_ + C_ + W_) / M_)
        restart = failures * M_ * np.expm1(R_ / M_)
        save = segments * (C_ + W_ * s_)
        rework = np.maximum(failures * M_ - segments * (T_ + C_ + W_ * s_), 0.0)
    return failures, save, rework, restart
