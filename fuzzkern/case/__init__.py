"""Stage 1, the case: one fuzzing case as pure data, and its inputs built from it.

In: nothing but the standard library (torch is imported when tensors are built). Out: a
:class:`~fuzzkern.case.model.Case` (per tensor input its shape, strides, storage offset,
storage size, dtype and value recipe; scalars; the autotune configs to force), its JSON form
(:mod:`fuzzkern.case.codec`, the one non-finite-aware codec), and the tensors it describes,
bit for bit on the CPU (:func:`~fuzzkern.case.model.materialize`, and
:mod:`fuzzkern.case.storage` for the exact stored bytes of a corpus entry).

- :mod:`fuzzkern.case.model`: the case, its layouts and value recipes, materialization;
- :mod:`fuzzkern.case.codec`: floats that JSON cannot hold (NaN, infinities, -0.0);
- :mod:`fuzzkern.case.storage`: whole input storages, taken and rebuilt.
"""
