"""Per-failure Monte Carlo of the finite job: failure gaps streamed in blocks, any failure law.

The path of :func:`engine.montecarlo.simulate` for non-exponential failure laws, for
``method="per_failure"``, and the one :func:`engine.deadline.deadline_search` uses: it draws every
inter-failure time, so intervals simulated with the same seed see identical failure histories
(common random numbers), and :func:`engine.montecarlo.reference_simulation` (the same model
walked event by event in plain Python on the same gaps) agrees with it run by run.

Model and window lengths: :mod:`engine.finite` (``full_clean``, ``full_flow``, ``last_clean``,
``last_flow``, ``last``).

* Gap stream (:class:`GapStream`): runs go in blocks of ``RUN_BLOCK``; the gaps of a block come in
  chunks of 4, 8, 16, then 32 gaps per run, chunk ``c`` of block ``b`` drawn from a generator
  seeded with ``SeedSequence(seed, spawn_key=(b, c))``. A gap depends on (law, ``M``, runs, seed)
  only, never on the interval or on how far a run got. Nothing is stored: a chunk is drawn, used by
  the runs of its block still going, and dropped, so memory is a few chunks (at most 1 MiB each)
  whatever the runs or the failures per run.
* One gap at a time, but all gaps of a chunk at once: failures are a renewal process, so each gap
  after a failure starts from a clean milestone. A gap of compute time ``x`` (the gap minus the
  restart ``R``; the first gap of a run has no restart; a gap ``<= R`` is a failed restart) takes
  the run ``ceil((x - full_clean) / full_flow)`` windows further (0 if ``x <= full_clean``), the same
  from every milestone except near the end. The milestone before each gap is therefore a cumulative
  sum along the chunk, capped at ``last``, and the run ends in the first gap whose compute time
  exceeds the failure-free time left from its milestone: ``full_clean + (last - k - 1) full_flow +
  last_flow`` (``last_clean`` at ``k = last``). Only the runs that reach the end inside a chunk need
  that check column by column.
"""

from __future__ import annotations

from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from .errors import InputError

# runs per block of the gap stream, and gaps per chunk: a chunk is at most GAP_CHUNK x RUN_BLOCK doubles (1 MiB);
# chunks grow from GAP_CHUNK_FIRST gaps (4, 8, 16, ...) so that short jobs draw few gaps they do not use
RUN_BLOCK = 4096
GAP_CHUNK = 32
GAP_CHUNK_FIRST = 4
# a run that reaches this many failures is refused (a time guard: memory does not grow with failures)
MAX_FAILURES_PER_RUN = 10**6

__all__ = ["GapStream", "simulate_per_failure"]

Draw = Callable[[np.random.Generator, tuple], np.ndarray]


class GapStream:
    """Inter-failure times of ``runs`` runs, chunk by chunk; the same for every checkpoint plan.

    ``draw(rng, shape)`` returns inter-failure times (e.g. ``FailureLaw.draw`` with ``M`` bound).
    Runs go in blocks of ``run_block``; the gaps of a block come in chunks, chunk ``c`` holding
    :meth:`size` ``(c)`` gaps per run: ``draw(default_rng(SeedSequence(seed, spawn_key=(b, c))),
    (size(c), rows))``, row ``i`` holding gap ``size(0) + .. + size(c-1) + i`` of each run of block ``b``.
    """

    def __init__(self, draw: Draw, runs: int, seed: int, run_block: Optional[int] = None,
                 gap_chunk: Optional[int] = None, first_chunk: Optional[int] = None):
        self.draw, self.runs, self.seed = draw, runs, seed
        self.run_block = run_block or RUN_BLOCK
        self.gap_chunk = gap_chunk or GAP_CHUNK
        self.first_chunk = min(first_chunk or GAP_CHUNK_FIRST, self.gap_chunk)

    def size(self, c: int) -> int:
        """Gaps per run in chunk ``c``: ``first_chunk`` doubling up to ``gap_chunk``."""
        return self.gap_chunk if c >= 30 else min(self.gap_chunk, self.first_chunk << c)

    def blocks(self) -> Iterator[tuple[int, int, int]]:
        """``(block, first run, rows)`` of each block of runs."""
        for b, lo in enumerate(range(0, self.runs, self.run_block)):
            yield b, lo, min(self.run_block, self.runs - lo)

    def chunk(self, block: int, c: int, rows: int) -> np.ndarray:
        """Chunk ``c`` of the gaps of the ``rows`` runs of ``block``, shape ``(size(c), rows)``."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(block, c)))
        return np.asarray(self.draw(rng, (self.size(c), rows)), dtype=np.float64)

    def run(self, r: int) -> Iterator[float]:
        """The gaps of run ``r`` one by one (for the per-event reference simulation)."""
        block, lo = divmod(r, self.run_block)
        rows = min(self.run_block, self.runs - block * self.run_block)
        c = 0
        while True:
            yield from (float(v) for v in self.chunk(block, c, rows)[:, lo])
            c += 1


def simulate_per_failure(geometries: Sequence[dict[str, float]], R: float, stream: GapStream,
                         max_failures: Optional[int] = None,
                         progress: Optional[Callable[[int, int], None]] = None) -> list[tuple[np.ndarray, ...]]:
    """Wall time, failures, rollbacks and restart time of every run (arrays), gap by gap, per job.

    ``geometries``: one job geometry per plan (:func:`engine.finite.job_geometry`, as floats), all
    simulated on the same gaps (each chunk is drawn once and used by every plan); ``R`` restart
    time. Exact for the model under any renewal failure law; see the module notes for the
    algorithm. :class:`InputError` (on ``failures``) if a run reaches ``max_failures`` (default
    ``MAX_FAILURES_PER_RUN``) failures. ``progress(runs done, runs)`` after each block of runs.
    """
    runs = stream.runs
    max_failures = max_failures or MAX_FAILURES_PER_RUN
    outs = [(np.empty(runs), np.empty(runs, dtype=np.int64), np.empty(runs, dtype=np.int64), np.empty(runs))
            for _ in geometries]
    for block, lo, rows in stream.blocks():
        plans = [_Runs(g, R, rows, lo, out) for g, out in zip(geometries, outs)]
        adv = np.empty((stream.gap_chunk, rows))
        c = used = 0
        while any(p.ids.size for p in plans):
            gaps = stream.chunk(block, c, rows)
            shared = _Chunk(gaps, c, R)   # what every plan reads of the chunk, computed once
            for p in plans:
                if p.ids.size:
                    p.step(gaps, c, adv, shared)
            c += 1
            used += gaps.shape[0]
            if used > max_failures and any(p.ids.size for p in plans):
                raise InputError("failures", used, "a run reached this many failures without finishing: check M, "
                                 "the interval and the failure law (the simulation would not end in useful time)")
        if progress is not None:
            progress(lo + rows, runs)
    return outs


class _Chunk:
    """What every plan reads of one chunk of gaps, the same whatever the plan, computed once, on first use: the
    failed restarts (gaps ``<= R``, not the first gap of a run) and the runs' sums of the chunk over every run of
    the block (for a plan whose runs are all still going: numpy adds a column in an order that depends on the
    array's width, so a plan summing only the runs still going sums its own columns)."""

    def __init__(self, gaps: np.ndarray, c: int, R: float):
        self.gaps, self.c, self.R = gaps, c, R
        self._failed: Optional[tuple[np.ndarray, np.ndarray]] = None
        self._sums: Optional[np.ndarray] = None

    def sums(self) -> np.ndarray:
        """Each run's sum of the chunk's gaps, every run of the block (a new array: the caller adds to it)."""
        if self._sums is None:
            self._sums = self.gaps.sum(axis=0)
        return self._sums.copy()

    def failed(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, run) of every failed restart of the chunk, row by row, runs in order within a row."""
        if self._failed is None:
            failed = self.gaps <= self.R
            if self.c == 0:
                failed[0] = False
            self._failed = np.divmod(np.flatnonzero(failed), self.gaps.shape[1])
        return self._failed


class _Runs:
    """The runs of one block under one plan: their state between chunks of gaps."""

    def __init__(self, g: dict[str, float], R: float, rows: int, lo: int, out: tuple[np.ndarray, ...]):
        self.g, self.R, self.lo, self.out = g, R, lo, out
        self.rows = rows
        self.ids = np.arange(rows)                  # runs of the block still going
        self.k = np.zeros(rows)                     # last durable milestone, capped at `last`
        self.t = np.zeros(rows)                     # wall time so far
        self.fails = np.zeros(rows, dtype=np.int64)
        self.rolls = np.zeros(rows, dtype=np.int64)
        self.rfail = np.zeros(rows)                 # time lost in failed restarts

    def step(self, gaps: np.ndarray, c: int, adv: np.ndarray, shared: _Chunk) -> None:
        """Consume chunk ``c`` (``gaps``: all runs of the block; ``shared``: what every plan reads of it); record
        the runs that finish in it."""
        g, R = self.g, self.R
        last, fc, ff = g["last"], g["full_clean"], g["full_flow"]
        B = gaps.shape[0]
        subset = self.ids.size < self.rows
        if subset:
            gaps = gaps[:, self.ids]
        n = self.ids.size
        # windows each gap completes from a clean milestone (uncapped): ceil((x - full_clean) / full_flow)
        a = adv[:B, :n]
        np.subtract(gaps, R + fc, out=a)
        if c == 0:
            a[0] += R                               # the first gap of a run follows no restart
        a *= 1.0 / ff
        np.ceil(a, out=a)
        np.maximum(a, 0.0, out=a)
        total = a.sum(axis=0)
        stop = np.full(n, B)                        # column of the gap in which each run finishes (B: none)
        left = np.zeros(n)                          # failure-free time from there to the end
        spent = gaps.sum(axis=0) if subset else shared.sums()   # time of the gaps before `stop` (all, for most runs)
        near = np.flatnonzero(self.k + total >= last)
        if near.size:                               # runs that may finish in this chunk
            mine = gaps[:, near]
            stop[near], left[near] = _finish(mine, a[:, near], self.k[near], c == 0, R, g)
            spent[near] = np.where(np.arange(B)[:, None] < stop[near], mine, 0.0).sum(axis=0)
        self.t += spent
        self.fails += stop
        self.rolls += stop
        if R > 0:                                   # failed restarts: rare, counted sparsely
            row, run = shared.failed()
            if subset and run.size:                 # the runs still going, numbered as this plan's columns
                at = np.full(self.rows, -1)
                at[self.ids] = np.arange(n)
                run = at[run]
                mine = run >= 0
                row, run = row[mine], run[mine]
            if run.size:
                if near.size:
                    keep = row < stop[run]
                    row, run = row[keep], run[keep]
                self.rolls -= np.bincount(run, minlength=n)
                self.rfail += np.bincount(run, weights=gaps[row, run], minlength=n)
        self.k = np.minimum(self.k + total, last)
        done = stop < B
        if done.any():
            wall, n_fail, n_roll, restart = self.out
            d = np.flatnonzero(done)
            first = (c == 0) & (stop[d] == 0)       # finished in the first gap: no restart before it
            dst = self.lo + self.ids[d]
            wall[dst] = self.t[d] + left[d] + np.where(first, 0.0, R)
            n_fail[dst] = self.fails[d]
            n_roll[dst] = self.rolls[d]
            restart[dst] = self.rfail[d] + R * self.rolls[d]
            keep = ~done
            self.ids, self.k, self.t = self.ids[keep], self.k[keep], self.t[keep]
            self.fails, self.rolls, self.rfail = self.fails[keep], self.rolls[keep], self.rfail[keep]


def _finish(gaps, a, k0, first_chunk, R, g):
    """Column and time left for the runs that reach the last milestone within this chunk.

    ``gaps``/``a``: their gaps and uncapped window advances (columns = runs); ``k0``: milestone at
    the chunk start. Returns (column of the finishing gap or ``len(gaps)``, failure-free time left
    from the milestone before that gap).
    """
    last, fc, ff, lc, lf = g["last"], g["full_clean"], g["full_flow"], g["last_clean"], g["last_flow"]
    B, n = gaps.shape
    j = np.arange(n)
    reach = np.empty_like(a)                            # cumulative sum down the columns (a row
    np.add(k0, a[0], out=reach[0])                      # loop: numpy's cumsum along axis 0 is slow)
    for i in range(1, B):
        np.add(reach[i - 1], a[i], out=reach[i])
    r = np.count_nonzero(reach < last, axis=0)          # first gap that reaches the last milestone
    k = np.minimum(reach[r, j] - a[r, j], last)         # milestone before that gap
    left = np.where(k == last, lc, fc + (last - k - 1.0) * ff + lf)
    x = gaps[r, j] - R
    if first_chunk:
        x = np.where(r == 0, gaps[0, j], x)        # the first gap of a run follows no restart
    ok = x > left
    stop = np.where(ok, r, B)
    left = np.where(ok, left, lc)
    # otherwise the run failed in the last window: from then on it ends in the first gap longer than
    # R + last_clean (failed restarts are shorter than R)
    late = np.flatnonzero(~ok)
    if late.size:
        hit = (gaps[:, late] > R + lc) & (np.arange(B)[:, None] > r[late])
        stop[late] = np.where(hit.any(axis=0), hit.argmax(axis=0), B)
    return stop, left
