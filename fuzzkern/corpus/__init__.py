"""Stage 6, the corpus: failures kept as reviewed data, replayed, and turned into scripts.

In: a target, its minimal failing case and the outcome (from search or a replay). Out: an
entry on disk (``<target>/<id>.json`` and ``<id>.safetensors``), loaded back as an
:class:`~fuzzkern.corpus.store.Entry`, replayed through the worker pool with its recorded
verdict, or written as a standalone reproducer script that needs only torch and triton.

- :mod:`fuzzkern.corpus.store`: the entry format (schema, migrations), saving, loading, replay;
- :mod:`fuzzkern.corpus.repro`: the reproducer generator;
- :mod:`fuzzkern.corpus.repro_template`: the reproducer's own code, a real module.
"""
