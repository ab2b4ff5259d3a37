"""Checkpoint probe on this machine: a small and a medium model, synchronous against asynchronous saves.

For each model, :func:`ckptplan.instruments.probe.run_probe` trains the probe's MLP on CPU (deterministic, fixed
threads), saves with ``torch.save`` (+ fsync, rename), DCP ``save`` and DCP ``async_save``
(interleaved), restores each method's latest checkpoint in a fresh process and verifies the resumed
run bit for bit, then restores the four deliberately incomplete checkpoints. Printed as Markdown
tables for ``benchmarks/RESULTS.md``:

* save cost by method (medians): blocking stall, background write until durable, total, slowdown
  during the write, size on disk, MB/s, restore in a fresh process with and without start-up;
* what each missing piece does to the resumed run (first diverging step, max |param diff|);
* the async-versus-sync comparison: how much of the synchronous stall async removes from the
  training step, and the effective stall ``C + W s`` the planner charges.

The medium model (default hidden 1024, 4 layers: about 3.2 M parameters, 38 MB of weights + Adam
state) makes the write long enough to overlap several training steps. Timings are for this machine's
CPU and local disk, single process; they drift with other load on a shared box.

    OMP_NUM_THREADS=1 python benchmarks/bench_probe.py [--saves 3] [--json-out probe.json] [--dir /path/to/storage]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

from ckptplan.instruments.probe import ProbeResult, run_probe  # noqa: E402
from ckptplan.instruments.trainer import ProbeConfig  # noqa: E402


def _ms(s: float) -> str:
    return f"{s * 1e3:,.1f}"


def report(label: str, r: ProbeResult, wall_s: float) -> str:
    cfg = r.config
    lines = [
        f"### {label}: MLP {cfg.features}->{cfg.hidden}x{cfg.layers}->{cfg.classes}, {r.parameters:,} parameters, "
        f"{r.state_bytes / 1e6:.3g} MB of model + Adam state",
        "",
        f"Batch {cfg.batch}, {cfg.threads} thread, baseline step {_ms(r.baseline_step_s)} ms "
        f"(p90 {_ms(r.baseline_step_p90_s)} ms), {cfg.saves_per_method} saves per method, whole probe "
        f"{wall_s:.1f} s wall.",
        "",
        "| method | blocking stall (ms) | background write (ms) | until durable (ms) | slowdown during write | "
        "size on disk (MB) | MB/s | restore, fresh process (s) | restore, state only (s) | resume |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in r.methods.values():
        res = m.resume
        lines.append(
            f"| {m.method} | {_ms(m.checkpoint_stall_s)} | {_ms(m.async_write_s) if m.async_write_s else '0'} | "
            f"{_ms(m.total_s)} | {f'{m.async_slowdown_fraction:.0%}' if m.method == 'dcp_async' else '-'} | "
            f"{m.size_bytes / 1e6:.3g} | "
            f"{m.write_mb_per_s:,.0f} | {res.timing.restore_with_startup_s:.2f} | {res.timing.restore_s:.3f} | "
            f"{res.verdict} |" if res else "| (not verified) |")
    per_save = [s for s in r.saves if s.method == "dcp_async"]
    lines += ["", "Async saves one by one (stall / write / overlapping steps / mean step during the write / slowdown): "
              + "; ".join(f"{_ms(s.checkpoint_stall_s)} / {_ms(s.async_write_s)} ms / {s.overlap_steps} / "
                          f"{_ms(s.step_during_write_s) if s.step_during_write_s else '-'} ms / "
                          f"{s.async_slowdown_fraction:.0%}"
                          for s in per_save) + "."]
    lines += ["", "| checkpoint | left out | restored at step | steps continued | result | max abs param diff | "
              "max abs loss diff |", "| --- | --- | ---: | ---: | --- | ---: | ---: |"]
    for c in r.resume_checks:
        lines.append(f"| {c.name} | {', '.join(c.missing) or '-'} | {c.restored_step} | {c.steps_continued} | "
                     f"{c.verdict} | {c.max_abs_param_diff:.3g} | {c.max_abs_loss_diff:.3g} |")
    if {"torch_save", "dcp_sync", "dcp_async"} <= set(r.methods):
        ts, sync, asy = (r.methods[k] for k in ("torch_save", "dcp_sync", "dcp_async"))
        eff = asy.checkpoint_stall_s + asy.async_write_s * asy.async_slowdown_fraction
        lines += ["", f"Async against sync: blocking stall {_ms(asy.checkpoint_stall_s)} ms against "
                      f"{_ms(sync.checkpoint_stall_s)} ms (DCP sync, "
                      f"{sync.checkpoint_stall_s / asy.checkpoint_stall_s:.1f}x) and {_ms(ts.checkpoint_stall_s)} ms "
                      f"(torch.save, {ts.checkpoint_stall_s / asy.checkpoint_stall_s:.1f}x); the write then runs "
                      f"{_ms(asy.async_write_s)} ms in the background at {asy.async_slowdown_fraction:.0%} slowdown, "
                      f"so the effective stall C + W s is {_ms(eff)} ms ({eff / sync.checkpoint_stall_s:.0%} of the "
                      f"DCP sync stall, {eff / ts.checkpoint_stall_s:.0%} of torch.save's), and "
                      f"the checkpoint is durable {_ms(asy.total_s)} ms after the save began."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--saves", type=int, default=3, help="timed saves per method and model")
    ap.add_argument("--small-hidden", type=int, default=256)
    ap.add_argument("--small-layers", type=int, default=2)
    ap.add_argument("--medium-hidden", type=int, default=1024)
    ap.add_argument("--medium-layers", type=int, default=4)
    ap.add_argument("--dir", default=None, help="directory on the storage to measure (default: system temp)")
    ap.add_argument("--json-out", default=None, help="also write both results as JSON here")
    args = ap.parse_args()

    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.platform()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    out = {}
    for label, hidden, layers in (("small", args.small_hidden, args.small_layers),
                                  ("medium", args.medium_hidden, args.medium_layers)):
        cfg = ProbeConfig(hidden=hidden, layers=layers, saves_per_method=args.saves)
        t0 = time.perf_counter()
        result = run_probe(cfg, directory=args.dir)
        wall = time.perf_counter() - t0
        print(f"torch {result.torch_version}, checkpoints under {args.dir or 'the system temp dir'}")
        print()
        print(report(label, result, wall))
        print()
        out[label] = result.to_dict()
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
