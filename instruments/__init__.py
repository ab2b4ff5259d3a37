"""ckptplan.instruments: measure a real training loop and inspect real checkpoints (probe, audit).

Instruments, not models: they produce inputs for a scenario (measured stall, write time, slowdown)
and evidence for the Readiness checklist. PyTorch is imported only when a probe runs.
"""
