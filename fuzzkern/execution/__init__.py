"""Stage 5, execution: one case run, in a worker process, in each mode, with the hygiene checks.

In: a target (by reference), a case (as JSON) and the run's options. Out: an
:class:`~fuzzkern.judge.outcome.Outcome`: the judge's verdict over each mode's
:class:`~fuzzkern.judge.outcome.ModeResult`, or ``crash``/``hang``/``slow`` when the worker
died or ran out of time.

- :mod:`~fuzzkern.execution.pool`: worker processes, the case's clock, the stop time (parent);
- :mod:`~fuzzkern.execution.progress`: what a running case tells the parent (worker side);
- :mod:`~fuzzkern.execution.runner`: one case inside a worker: inputs, reference, each mode,
  the judge;
- :mod:`~fuzzkern.execution.interpret` and :mod:`~fuzzkern.execution.compiled`: the two modes,
  twins with one signature (``run_interpreted(run)``, ``run_compiled(run)``);
- :mod:`~fuzzkern.execution.launching`: what the two modes share around a launch;
- :mod:`~fuzzkern.execution.interpreter`: the interpreter family, what the interpreted mode
  runs on: Triton's interpreter patched in process, its bounds and view checkers, compiled
  semantics where it differs, low-precision formats, the float64 shadow, kernel coverage;
- :mod:`~fuzzkern.execution.hygiene`: poisoned allocations, red zones, mutation and
  determinism checks;
- :mod:`~fuzzkern.execution.sanitizer`: the compute-sanitizer worker;
  :mod:`~fuzzkern.execution.devices`: GPUs and worker environments.
"""
