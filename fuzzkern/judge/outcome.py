"""Outcomes: what happened when one case ran, as JSON-serializable data.

The worker returns an :class:`Outcome` per case; the parent turns failing ones into Hypothesis
failures, and the corpus stores them. Verdict names are part of the public contract
(docs/verdicts.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


class Verdict:
    """Verdict names. Failures make ``fuzzkern run`` exit 1; the others are counted."""

    PASS = "pass"
    #: every mode that ran disagrees with the reference (in interpret-only runs: the interpreter,
    #: with its known divergences neutralized)
    KERNEL_BUG = "kernel-bug"
    #: only the compiled kernel disagrees (race, uninitialized read, alignment, compiler)
    COMPILED_ONLY = "compiled-only"
    #: only the interpreter disagrees: a Triton interpreter defect, not the kernel's
    INTERPRETER_DIVERGENCE = "interpreter-divergence"
    #: an access outside every live allocation (interpreter bounds checker)
    OOB = "oob"
    #: an access inside an argument's storage but outside the view passed to the kernel: a gap
    #: of a strided view, or storage before/after the view (interpreter view checker)
    OOB_VIEW = "oob-view"
    #: after the launch, bytes outside the views changed: a red-zone guard band around a
    #: storage (compiled) or a gap of an input's storage (any mode)
    OOB_WRITE = "oob-write"
    #: every mismatching element of the outputs was never written (still poisoned)
    UNWRITTEN_OUTPUT = "unwritten-output"
    #: an input not declared in-place changed during the launch
    INPUT_MUTATED = "input-mutated"
    #: the compiled kernel gave bitwise different outputs on repeated runs of the same case
    NONDETERMINISTIC = "nondeterministic"
    #: Triton's integer overflow check fired (debug mode: ``--debug-kernels``)
    OVERFLOW = "overflow"
    #: the worker process died (signal, abort) while running the case
    CRASH = "crash"
    #: the case ran past the target's timeout, and its own measured cost does not explain it
    #: (confirmed by a re-run with twice the timeout)
    HANG = "hang"
    #: the case was stopped before it finished, and its own cost explains why: its interpreted
    #: programs kept finishing but would take past the timeout, or its compilation ran past
    #: the compile limit (counted, not a failure: nothing was tested)
    SLOW = "slow"
    #: the launcher or kernel raised an exception that is not a declared precondition
    ERROR = "error"
    #: the compiler refuses the kernel for this case (a ``tl.dot`` dimension below its
    #: minimum, a ``tl.arange`` that is not a power of 2, ...); in interpreter mode, found by
    #: the interpreter with the compiler's words (docs/interpreter.md)
    COMPILE_ERROR = "compile-error"
    #: the reference raised: the target's reference cannot handle this input
    REFERENCE_ERROR = "reference-error"
    #: the values are off by more than the bound, but within a small factor of what rounding
    #: at the inputs' precision explains (oracle rule 9); a failure only with strict accuracy
    ACCURACY = "accuracy"
    #: the kernel's algorithm is right (its float64 shadow matches the reference), but it loses
    #: precision beyond what rounding at the inputs' precision explains, at a line that
    #: accumulates in a dtype narrower than float32 (docs/oracle.md, the shadow)
    PRECISION_BUG = "precision-bug"
    #: the finding needs fuzzkern's own instrumentation (a check, a forced config, fuzzkern's
    #: own code raised): it disappears as a user's plain call, so it is not the kernel's;
    #: counted and reported apart, never saved to the corpus (fuzzkern.search.confirm)
    FUZZKERN_LIMIT = "fuzzkern-limit"
    #: the launcher rejected the input with a declared precondition (counted, not a failure)
    PRECONDITION = "precondition"
    #: this mode cannot run the case (e.g. inline asm under the interpreter); counted
    UNSUPPORTED = "unsupported"

    FAILURES = frozenset(
        {KERNEL_BUG, PRECISION_BUG, COMPILED_ONLY, OOB, OOB_VIEW, OOB_WRITE, UNWRITTEN_OUTPUT,
         INPUT_MUTATED, NONDETERMINISTIC, OVERFLOW, CRASH, HANG, ERROR, COMPILE_ERROR,
         REFERENCE_ERROR}
    )
    #: counted, but nothing was tested: a run or target whose cases all end so is not green
    UNTESTED = frozenset({PRECONDITION, UNSUPPORTED, SLOW})


def tested_cases(cases: int, counts: Mapping[str, int]) -> int:
    """Of ``cases`` with verdict ``counts``, those that tested something (not
    :data:`Verdict.UNTESTED`)."""
    return int(cases - sum(counts.get(v, 0) for v in Verdict.UNTESTED))


@dataclass
class Mismatch:
    """One mismatching element."""

    output: int
    index: tuple[int, ...]
    got: float
    expected: float


def output_label(i: int, names: Sequence[str | None] | None = None, many: bool = False) -> str:
    """An output as messages name it: its declared name (``output_names``), else ``out{i}``
    (``out`` for the first, unless ``many`` says there are others).

    >>> output_label(1), output_label(1, ["dB", "dC"]), output_label(0)
    ('out1', 'dC', 'out')
    """
    if names and 0 <= i < len(names) and names[i]:
        return str(names[i])
    return f"out{i}" if i or many else "out"


@dataclass
class Comparison:
    """The comparison of one mode's outputs with the reference."""

    ok: bool
    #: number of mismatching elements and how many were compared
    mismatched: int = 0
    total: int = 0
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    max_ulp_error: float = 0.0
    #: NaN/inf positions that differ from the reference
    nonfinite_mismatches: int = 0
    first: list[Mismatch] = field(default_factory=list)
    #: "rtol=0.001 atol=1e-05 (float16 default)" and the like
    tolerance: str = ""
    #: a problem that is not about values: wrong shape, wrong dtype, wrong number of outputs
    structural: str | None = None
    #: the largest error over its element's bound (finite pairs): below 1 passes; how close to
    #: the line the kernel came; None for a comparison the oracle did not make (an old corpus
    #: entry, a hand-built one), where :func:`fuzzkern.search.engine.bound_ratio` estimates it
    bound_ratio: float | None = None
    #: the values differ beyond the bound, but within a small factor of what rounding at the
    #: inputs' precision explains (oracle rule 9): an accuracy finding, not a logic bug
    accuracy: bool = False
    #: for a failed comparison judged with the reference's conditioning: the worst element in
    #: words ("the reference itself moves by 3e-4 when x moves by one float32 rounding")
    explanation: str = ""
    #: that element's figures: error, bound, ratio, sensitivity, native error (JSON numbers)
    condition: dict[str, Any] = field(default_factory=dict)
    #: the outputs' declared names (the target's ``output_names``), for the messages
    names: list[str | None] | None = None

    def overflowed(self) -> Mismatch | None:
        """The first reported mismatch where the kernel gave inf or NaN and the reference a
        finite value: an overflow (of the result or of an intermediate)."""
        for m in self.first:
            if (isinstance(m.got, float) and not math.isfinite(m.got)
                    and isinstance(m.expected, (int, float)) and math.isfinite(m.expected)):
                return m
        return None

    def summary(self) -> str:
        if self.structural:
            return self.structural
        if self.ok:
            return f"matches within {self.tolerance}"
        what = "accuracy: " if self.accuracy else ""
        if self.nonfinite_mismatches >= self.mismatched > 0:
            # every mismatch is a NaN/inf position: no finite error to put a figure on
            figures = "each at a NaN/inf position, no finite error to measure"
        else:
            ulps = (f", max {self.max_ulp_error:.3g} ulp" if self.max_ulp_error > 0
                    or not self.max_abs_error else "")  # (none when every reference is 0)
            figures = (f"max abs {self.max_abs_error:.3g}, max rel {self.max_rel_error:.3g}"
                       + ulps + (" over the finite ones" if self.nonfinite_mismatches else ""))
        over = self.overflowed()
        if over is not None:
            overflow = math.isinf(over.got) or "overflow" in self.explanation
            said = (f"{'overflow: ' if overflow else ''}{over.got:.3g} where the exact answer "
                    "is finite")
            figures = (f"{said}, e.g. {output_label(over.output, self.names)}"
                       f"[{','.join(map(str, over.index))}] = {over.got:.3g} for "
                       f"{over.expected:.3g}; " + figures)
        lines = [f"{what}{self.mismatched}/{self.total} elements differ ({figures}; "
                 f"tolerance {self.tolerance})"]
        if self.nonfinite_mismatches:
            lines.append(f"{self.nonfinite_mismatches} NaN/inf positions differ")
        if self.explanation:
            lines.append(self.explanation)
        for m in self.first:
            idx = ",".join(str(i) for i in m.index)
            out = output_label(m.output, self.names)
            lines.append(f"  {out}[{idx}]: got {m.got!r}, expected {m.expected!r}")
        return "\n".join(lines)


@dataclass
class ModeResult:
    """What one execution mode did with the case."""

    mode: str
    #: "ok", "mismatch", "accuracy", "precision" (the shadow's precision bug), "oob",
    #: "oob-view", "overflow", "error", "reference-error",
    #: "precondition", "unsupported", "crash", "hang"; hygiene findings of a completed launch
    #: are in ``detail`` ("oob_write", "mutated", "nondeterministic", "unwritten")
    status: str
    comparison: Comparison | None = None
    error: str | None = None
    #: structured details (oob location, substitutions made, timings, ...)
    detail: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Outcome:
    verdict: str
    message: str = ""
    modes: dict[str, ModeResult] = field(default_factory=dict)
    #: largest ULP error seen (what ``hypothesis.target`` climbs)
    score: float = 0.0
    seconds: float = 0.0
    #: what the case printed to stdout and stderr in the worker (the first
    #: :data:`fuzzkern.execution.pool.OUTPUT_LIMIT` bytes), and how many bytes it printed in all
    output: str = ""
    output_bytes: int = 0
    #: strict accuracy (``--strict-accuracy`` or the target's ``strict_accuracy``): an
    #: ``accuracy`` verdict fails
    strict: bool = False
    #: compiled mode, value variants run after this case in the same round trip
    #: (:func:`fuzzkern.execution.runner.run_variants`): ``ran``, ``seconds``, ``verdicts``
    #: (verdict -> count) and, when one failed, ``failed``: its index and outcome (JSON)
    variants: dict[str, Any] = field(default_factory=dict)
    #: seconds per stage of the round trip that produced this outcome
    #: (:mod:`fuzzkern.execution.stages`): a measurement, not a result, so never in
    #: :meth:`to_json` (corpus entries stay as they were); a worker sends it alongside
    timings: dict[str, float] = field(default_factory=dict)
    #: the interpreted launch's kernel coverage
    #: (:class:`fuzzkern.execution.interpreter.coverage.KernelCoverage` as JSON; empty: not
    #: measured): a
    #: measurement like ``timings``, never in :meth:`to_json`; a worker sends it alongside
    coverage: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.verdict in Verdict.FAILURES or (
            self.strict and self.verdict == Verdict.ACCURACY)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        del d["timings"]
        del d["coverage"]
        if not d["variants"]:
            del d["variants"]  # the usual case; corpus entries stay as they were
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Outcome:
        modes = {}
        for k, m in d.get("modes", {}).items():
            comp = m.get("comparison")
            if comp is not None:
                comp = dict(comp)
                comp["first"] = [
                    Mismatch(x["output"], tuple(x["index"]), x["got"], x["expected"])
                    for x in comp.get("first", [])
                ]
                comp = Comparison(**comp)
            modes[k] = ModeResult(
                m["mode"], m["status"], comp, m.get("error"), m.get("detail", {}),
                m.get("seconds", 0.0),
            )
        return Outcome(
            d["verdict"], d.get("message", ""), modes, d.get("score", 0.0), d.get("seconds", 0.0),
            str(d.get("output", "") or ""), int(d.get("output_bytes", 0) or 0),
            bool(d.get("strict", False)), dict(d.get("variants") or {}),
            dict(d.get("timings") or {}), dict(d.get("coverage") or {}),
        )
