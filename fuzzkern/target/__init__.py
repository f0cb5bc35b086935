"""Stage 3, the target: what a user hands fuzzkern.

In: the user's launcher, torch reference, input strategies (stage 2) and dims. Out: a
:class:`~fuzzkern.target.declare.Target` with its :class:`~fuzzkern.target.declare.Tolerance`
and the hygiene checks it keeps on (:data:`~fuzzkern.target.declare.DEFAULT_CHECKS`), and
:mod:`fuzzkern.target.loader`, which finds the targets in a file, a module or a folder and
names each one by a reference (``path.py::name``) that a worker process can load again.

- :mod:`fuzzkern.target.declare`: :class:`Target`, :class:`Tolerance`;
- :mod:`fuzzkern.target.loader`: target specs to loaded targets, refs back to targets.
"""
