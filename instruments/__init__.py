"""ckptplan.instruments: measure a real training loop and inspect real checkpoints (probe, audit).

Instruments, not models: they produce inputs for a scenario (measured stall, write time, slowdown)
and evidence for the Readiness checklist. PyTorch is imported only when a probe runs; importing any
of these modules imports no torch, and the audit never needs it.

* :mod:`.trainer` :class:`~.trainer.ProbeConfig`, the save methods (``METHODS``) and the
  deterministic CPU training loop the probe checkpoints;
* :mod:`.probe` :func:`~.probe.run_probe`: timed saves (``torch.save``, DCP ``save`` and
  ``async_save``), the measured ``checkpoint_stall_s``, ``async_write_s`` and
  ``async_slowdown_fraction``, and :class:`~.probe.ProbeResult`;
* :mod:`.restore` restores in a fresh process and the resume verification against the
  uninterrupted run;
* :mod:`.audit` :func:`~.audit.audit_checkpoint`: which restorable-state pieces a checkpoint
  holds, read with the inert unpickler of :mod:`.inert_pickle` (nothing from the file is executed).

Submodules are not imported here: import the one you need.
"""

__all__: list[str] = []
