"""Causes of compiled-only differences, and the verdict a failure gets once one is known.

A compiled kernel may differ from the interpreter and the reference without a logic bug, in the
ways GPU code computes by default (docs/verdicts.md, "Compiled-only differences"):

- ``fma``: Triton fuses ``a * b + c`` into one fused multiply-add (one rounding instead of two;
  ``enable_fp_fusion=True`` by default);
- ``ftz``: subnormals flushed to zero (libdevice's ``enable_reflect_ftz=True``, approximate
  ``rsqrt``/``exp2``/division, and the inputs read as zero);
- ``ordering``: another reduction order (the result moves with ``num_warps``);
- ``nondeterministic``: atomics or a race (the result moves between launches of the same binary).

Each cause is found by a re-run of the shrunk case
(:func:`fuzzkern.search.explain.compiled_causes`); :func:`attributed` gives the failure its
verdict:

- a rounding cause (fma, ftz, ordering) and finite values: ``accuracy`` (a finding; a failure
  under ``--strict-accuracy``), with the cause in the message;
- a rounding cause that turns a finite result non-finite (a variance ``E[x^2] - E[x]^2`` going
  negative into ``sqrt`` under FMA): still ``kernel-bug``, a robustness bug, and the message says
  why and what to do;
- nondeterminism: ``nondeterministic``;
- a compiled-only failure whose every mismatch is a number where the reference holds NaN:
  ``compiled-only``, naming the likely cause (``tl.maximum``/``tl.minimum`` drop NaN on the GPU
  unless ``propagate_nan=tl.PropagateNan.ALL``);
- any other compiled-only failure that none explains: ``compiled-only``, saying what was ruled
  out and, plainly, that the rest is unexplained: no race or compiler bug is named without
  proof (a race is proven only by launches of the same binary that differ: ``nondeterministic``).
  The corpus entry's reproducer (``fuzzkern repro ENTRY``) holds what an upstream issue needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fuzzkern.judge.outcome import Outcome, Verdict

ROUNDING = ("fma", "ftz", "ordering")


@dataclass(frozen=True)
class Cause:
    #: "fma", "ftz", "ordering", "nondeterministic"
    kind: str
    #: the explanation line ("caused by fused multiply-add: passes with enable_fp_fusion=False")
    line: str


def _nonfinite(outcome: Outcome) -> bool:
    c = outcome.modes.get("compiled")
    return bool(c is not None and c.comparison is not None
                and c.comparison.nonfinite_mismatches)


def _drops_nan(outcome: Outcome) -> bool:
    """Every mismatch the comparison shows is a finite value where the reference holds NaN."""
    c = outcome.modes.get("compiled")
    comparison = c.comparison if c is not None else None
    if comparison is None or not comparison.first:
        return False
    return (comparison.nonfinite_mismatches == comparison.mismatched
            and all(math.isnan(m.expected) and not math.isnan(m.got) for m in comparison.first))


def attributed(outcome: Outcome, causes: list[Cause], compiled_only: bool) -> Outcome:
    """``outcome`` with the verdict its compiled causes give (see the module doc).
    ``compiled_only``: the interpreter passes the same case; without it only a cause found
    changes the verdict (a re-run that passes compiled is evidence of its own)."""
    if outcome.verdict not in (Verdict.KERNEL_BUG, Verdict.COMPILED_ONLY):
        return outcome
    if not causes and not compiled_only:
        return outcome
    kinds = [c.kind for c in causes]
    if "nondeterministic" in kinds:
        line = next(c.line for c in causes if c.kind == "nondeterministic")
        return replace(outcome, verdict=Verdict.NONDETERMINISTIC,
                       message=f"compiled: {line}")
    rounding = [c for c in causes if c.kind in ROUNDING]
    if rounding:
        why = "; ".join(c.line for c in rounding)
        if _nonfinite(outcome) and any(c.kind != "ftz" for c in rounding):
            return replace(outcome, message=(
                f"{outcome.message}; non-finite only compiled, {why}: a finite result becomes "
                "NaN/inf when a rounding difference crosses a boundary (a variance such as "
                "E[x^2] - E[x]^2 going negative into sqrt, a denominator reaching 0): clamp "
                "that quantity"))
        evidence = ("the interpreter passes: not a logic bug" if compiled_only else
                    "the compiled re-run that passes shows it is not a logic bug")
        return replace(outcome, verdict=Verdict.ACCURACY, message=(
            f"compiled-only rounding difference, {why} ({evidence}); was: {outcome.message}"))
    if _drops_nan(outcome):
        return replace(outcome, verdict=Verdict.COMPILED_ONLY, message=(
            f"{outcome.message}; the compiled kernel returns a number where torch and the "
            "interpreter give NaN: the GPU's tl.maximum/tl.minimum return the other operand "
            "for a NaN unless propagate_nan=tl.PropagateNan.ALL (and a comparison-based "
            "select drops it the same way); the kernel drops NaN inputs"))
    return replace(outcome, verdict=Verdict.COMPILED_ONLY, message=(
        f"{outcome.message}; the interpreter passes, and neither fused multiply-add, flushed "
        "subnormals nor the reduction order explain it, and repeated launches of the same "
        "binary give the same bits: unexplained (fuzzkern repro reproduces it)"))


__all__ = ["ROUNDING", "Cause", "attributed"]
