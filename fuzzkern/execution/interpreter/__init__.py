"""Triton's interpreter as fuzzkern runs it: the machinery behind the interpreted mode.

The interpreted mode itself (:mod:`fuzzkern.execution.interpret`) stays beside its twin, the
compiled mode (:mod:`fuzzkern.execution.compiled`); what it runs on is here, one family that
patches Triton's interpreter in process and is only ever active inside
:func:`~fuzzkern.execution.interpreter.core.interpreter_mode`:

- :mod:`~fuzzkern.execution.interpreter.core`: the patched interpreter, its bounds and view
  checkers (``interpreter_mode``);
- :mod:`~fuzzkern.execution.interpreter.fidelity`: compiled semantics where the interpreter
  runs Python's, and what the compiler would refuse;
- :mod:`~fuzzkern.execution.interpreter.formats`: bf16/fp16/fp8 held and rounded as the GPU
  does, narrow reductions, scans and dots along the compiled order;
- :mod:`~fuzzkern.execution.interpreter.fastpath`: the interpreter without work whose result
  is known;
- :mod:`~fuzzkern.execution.interpreter.shadow`: the float64 shadow (the kernel's own
  algorithm without rounding);
- :mod:`~fuzzkern.execution.interpreter.coverage`: kernel coverage by source instrumentation.

Nothing outside :mod:`fuzzkern.execution` imports it but the front ends' reports of coverage
and fidelity.
"""
