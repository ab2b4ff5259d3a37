"""Text of the Notes and Readiness sheets: each model's formula, assumptions, limits, references."""

from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Alignment
from openpyxl.worksheet.datavalidation import DataValidation

from . import style as S

__all__ = ["NOTES", "READINESS", "notes_sheet", "readiness_sheet"]

NOTES = (
    ("Symbols",
     "T interval (compute between saves), C blocking stall, W async write time, s throughput lost during the write, "
     "C_eff = C + W s, M job MTBF, R restart time, work = useful compute",
     "All times in minutes on the Plan sheet except where a label says hours.",
     ""),
    ("Job MTBF",
     "M_job = 1 / ((1 - nonfatal share) * nodes / node MTBF + sum over domains of ceil(nodes / nodes per domain) / domain MTBF)",
     "Independent exponential failures; any node failure stops the job (unless survived: the non-fatal share). Wrong for "
     "correlated failures counted as node failures (a rack or power outage is one interruption, not one per node): enter "
     "those as domains. Wrong for short horizons after maintenance or clustered failures: use the Deadline sheet.",
     "Daly 2006 (system MTTI); Meta, The Llama 3 Herd of Models, 2024, sec. 3.3.4"),
    ("Young interval and first-order waste",
     "T = sqrt(2 C_eff M); waste = C_eff/T + T/(2M); minimum sqrt(2 C_eff / M)",
     "First order in C/M: needs C << T << M. Ignores restarts and failures during saves; waste is a share of compute time. "
     "Values near 1 mean the approximation has broken down.",
     "J. W. Young, CACM 17(9):530-531, 1974"),
    ("Daly higher-order interval",
     "T = sqrt(2CM) (1 + sqrt(C/(2M))/3 + C/(18M)) - C for C < 2M; T = M for C >= 2M",
     "Perturbation solution of the complete model; C >= 2M is a valid regime (the job mostly saves and restarts), not an error.",
     "J. T. Daly, FGCS 22(3):303-312, 2006"),
    ("Exact model (wall time, waste)",
     "E = M e^(R/M) e^((T+C+W)/M) (1 - e^(-(T+C+W s)/M)) work / T; waste = 1 - work / E. With W = 0: Daly's "
     "M e^(R/M) (e^((T+C)/M) - 1) work / T",
     "Exponential failures striking compute, saves and restarts alike; a failure loses the work since the last durable "
     "checkpoint; an async checkpoint is durable only after its write, so a failure during the write falls back one "
     "checkpoint. Steady-state average over many intervals: for a deadline or a short job see the Deadline sheet.",
     "Daly 2006 (complete cost function); the async extension is ckptplan's own (see Async saves)"),
    ("Exact optimum",
     "(1 - T/M) e^((T + C_eff)/M) = 1, i.e. T = M (1 + W0(-e^(-1 - C_eff/M))); at least W (1 - s)",
     "Restart time does not move the optimum. Excel has no Lambert W: the Plan sheet takes six Newton steps on "
     "ln y - y + 1 + c = 0 (y = 1 - T/M) and a series below c = 1e-4; it matches ckptplan's own solver to about 1e-10.",
     "Daly 2006; Bougeret et al., SC'11"),
    ("Async saves",
     "C_eff = C + W s sets the interval; the durability lag W adds rework",
     "Async is not C = 0: the step still blocks for C, loses s of its throughput for W, and the newest checkpoint is "
     "not restorable until the write is durable. The write must finish before the next save: W (1 - s) <= T.",
     "ckptplan's own extension of Daly 2006; `ckptplan probe` measures C, W and s on your storage"),
    ("Cost",
     "GPU-hours = wall hours x nodes x GPUs per node; money = GPU-hours x price; goodput = useful / total",
     "GPUs are billed while held, whatever they do (computing, saving, redoing work, restarting).",
     ""),
    ("Scaling sheet",
     "useful hours = Inputs hours x Inputs nodes / nodes; exact optimum per row",
     "Perfect scaling (useful GPU-hours constant). Real jobs scale less than perfectly, so large node counts are optimistic.",
     ""),
    ("Spot sheet (preemptible capacity)",
     "per cycle: time = [(1-q)/theta + pf (D + R') + pp (k C + Wc + R')] / e, work = [q T + k pi I] / e; q = "
     "e^(-theta (T+C)), R' = (e^(theta R) - 1)(1/theta + D/(M theta) + pi Wc/theta), D the downtime after a failure "
     "(nothing strikes in it), R the rest of the restart; theta = 1/M + pi, k = 1 when the notice >= C (saved on "
     "notice); pi = preemptions_per_h / 60, else nodes x preemptions_per_node_h / 60",
     "Failures and preemptions are independent Poisson processes while GPUs are held (spot preemptions cluster in "
     "practice); the notice save always completes; no GPUs are billed while waiting for capacity. The interval: 80 "
     "golden-section steps on log T, as ckptplan. The spot / on-demand / fallback comparison on the Compare sheet is a "
     "Monte Carlo (values). A node's rate: nodes are reclaimed independently and any one stops the job (a market "
     "reclaiming many at once is overstated). A published band (preemption_rate_source): its fraction f per month "
     "read as -ln(1 - f) / 730 per node-hour, the band's upper edge (>20%: a lower bound).",
     "Daly 2006 (renewal model); AWS spot notice 2 min, GCP spot VMs 30 s; Wu et al., Can't Be Late, NSDI'24; "
     "AWS Spot Instance Advisor (https://aws.amazon.com/ec2/spot/instance-advisor/)"),
    ("Schedule sheet (failure phases)",
     "an interval per phase; exact expectation: Daly's model within a phase, the job's state at each boundary",
     "Values written by ckptplan (a boundary quadrature and a search, not formulas): the status says when an input or "
     "a phase changed since. Poisson failures within a phase; a segment straddling a boundary keeps its interval.",
     "Bougeret, Casanova, Rabie, Robert, Vivien, SC'11 (a fixed interval is optimal for a constant rate)"),
    ("Deadline sheet",
     "Monte Carlo of the finite job (values)",
     "Written by ckptplan when the workbook was generated, with runs, seed and date; does not recalculate.",
     "`ckptplan deadline` runs the same simulation (other runs, seed or failure law: see its --help)"),
    ("Elastic continuation (Plan sheet top, Compare sheet strategies)",
     "replicas out k = 0 .. n - min_replicas follow a chain: a failure takes a replica out (rate lambda (n - k)/n, pause "
     "P_s), its node is back after the spare pool's mean wait (rate k / wait, pause P_g), a failure at the floor stops "
     "and restarts the job; throughput (n - k)/n; renewal over save-to-save attempts with matrix exponentials",
     "Values written by ckptplan (no spreadsheet formula evaluates the chain): the status says when an input changed "
     "since. Exponential, independent node failures (a correlated domain is refused); returns taken as independent "
     "(exact without spares, approximate with a shared pool); synchronous saves; data parallelism. Every other sheet "
     "plans the same job stopping at every failure. With restart, or a floor at all replicas, it is today's plan.",
     "torchft (PyTorch, 2025); Oobleck, SOSP'23; ReCycle, SOSP'24; Van Loan, IEEE TAC 23(3), 1978"),
)

READINESS = (
    ("Model weights", "Without them there is nothing to resume."),
    ("Optimizer state (moments, step counts)", "A fresh optimizer after restore changes the trajectory: loss spikes, lost progress."),
    ("Global step / tokens seen", "Schedules, logging and data position key off it."),
    ("Data loader position (epoch, shard, offset, sampler state)", "Without it the job re-reads or skips data: silently different training."),
    ("RNG states (Python, numpy, framework, per device)", "Dropout, sampling and data order diverge from the uninterrupted run."),
    ("Learning-rate scheduler state", "A restarted schedule re-warms or jumps the learning rate."),
    ("Mixed-precision loss scaler / gradient accumulation state", "A reset scaler can overflow or underflow the first steps after restore."),
    ("Checkpoint is durable and complete (all ranks, manifest written)", "A partial async write is not a checkpoint; restore must find the last complete one."),
    ("A restore test actually run (fresh process, loss trajectory compared)", "Only a resumed run that matches proves the checkpoint counts (`ckptplan probe` runs one; `ckptplan audit` lists what a checkpoint holds)."),
)


def readiness_sheet(wb: Workbook, kept: dict[str, tuple[Any, Any]] | None) -> None:
    """The Readiness sheet: what a checkpoint must hold to count, with a status and evidence per item (kept)."""
    ws = wb.create_sheet("Readiness")
    S.title(ws, "Readiness: does a checkpoint restore the full training state?",
           "A checkpoint counts only if it restores everything below; until the restore test has been run, "
           "the intervals on Plan are optimistic.")
    S.header(ws, 4, ["What the checkpoint must hold", "Why it matters", "Status", "Evidence / owner"])
    dv = DataValidation(type="list", formula1='"not checked,present,missing,restore tested"', allow_blank=True,
                        showErrorMessage=True, errorTitle="Invalid status",
                        error="Choose: not checked, present, missing, restore tested")
    ws.add_data_validation(dv)
    for i, (item, why) in enumerate(READINESS):
        r = 5 + i
        ws.cell(row=r, column=1, value=item).alignment = Alignment(wrap_text=True, vertical="top")
        ws.cell(row=r, column=2, value=why).alignment = Alignment(wrap_text=True, vertical="top")
        status, evidence = (kept or {}).get(item, ("not checked", None))
        c = ws.cell(row=r, column=3, value=status)
        c.font, c.fill = S.INPUT_FONT, S.INPUT_FILL
        c.alignment = Alignment(vertical="top")
        dv.add(c)
        e = ws.cell(row=r, column=4, value=evidence)
        e.font, e.fill = S.INPUT_FONT, S.INPUT_FILL
        e.alignment = Alignment(wrap_text=True, vertical="top")
    for col, width in zip("ABCD", (40, 70, 16, 30)):
        ws.column_dimensions[col].width = width
    S.fit_rows(ws, 5, 4 + len(READINESS))


def notes_sheet(wb: Workbook) -> None:
    """The Notes sheet: each model's formula, assumptions, validity limits and reference."""
    ws = wb.create_sheet("Notes")
    S.title(ws, "Notes: models, assumptions, validity limits and references")
    S.header(ws, 3, ["Topic", "Formula", "Assumptions and where it stops being valid", "Reference"])
    for i, note in enumerate(NOTES):
        for j, text in enumerate(note):
            c = ws.cell(row=4 + i, column=1 + j, value=text)
            c.alignment = Alignment(wrap_text=True, vertical="top")
    for col, width in zip("ABCD", (24, 46, 70, 40)):
        ws.column_dimensions[col].width = width
    S.fit_rows(ws, 4, 3 + len(NOTES))
