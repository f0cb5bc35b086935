"""Stage 4, the judge: outputs in, verdict out. Pure functions over data; it runs nothing.

In: a kernel's outputs and the reference's (tensors), the target's tolerance, and per mode the
:class:`~fuzzkern.judge.outcome.ModeResult` an execution produced. Out: a
:class:`~fuzzkern.judge.outcome.Comparison` (:func:`fuzzkern.judge.oracle.compare`), the
case's verdict and reason (:func:`fuzzkern.judge.verdict.verdict_of`), and which failures are
one bug (:func:`fuzzkern.judge.verdict.failure_key`).

- :mod:`fuzzkern.judge.outcome`: the verdict names and the result types every later stage uses;
- :mod:`fuzzkern.judge.oracle`: the tolerance rule (docs/oracle.md);
- :mod:`fuzzkern.judge.conditioning`: how much rounding at the inputs' precision explains;
- :mod:`fuzzkern.judge.verdict`: per-mode results to one verdict; verdict families, failure keys.

The judge sits below execution: execution calls it on the outputs it just produced, in the
worker, so the parent receives a finished :class:`~fuzzkern.judge.outcome.Outcome`.
"""
