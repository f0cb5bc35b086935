"""The shadow's verdict: rounding or logic, from the kernel, its float64 shadow and the exact
reference.

In: the comparison of a mode's outputs with the reference (which failed), the comparison of the
float64 shadow (the kernel's own algorithm without rounding, rounded once to the output dtype)
with the float64 reference under the plain tolerance, and what the shadow found (the line whose
rounding explains the error, whether it accumulates, what it could not shadow). Out: the mode's
status and the comparison to report (docs/oracle.md, "The shadow"):

- the shadow fails too: a logic bug (``mismatch``), in words: "computed in float64 the kernel
  is still off by ...: not rounding";
- the shadow passes: what failed is rounding. An ``accuracy`` finding with its figures and root
  line, except a loss whose root line accumulates in a dtype narrower than float32 (bug class
  8): that is a ``precision`` bug, a failure by default, whatever share of this case's error
  the line alone gives (one root cause, one class);
- compiled code: its distance from the shadow against the interpreter's, the same algorithm at
  the same precision (:func:`twin_within`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from fuzzkern.judge import oracle
from fuzzkern.judge.outcome import Comparison, output_label

__all__ = ["ShadowFindings", "judge_shadow", "twin_within", "worst_element"]


@dataclasses.dataclass
class ShadowFindings:
    """What the shadow run found, for the verdict and its message."""

    #: the shadow's outputs compared with the float64 reference, plain tolerance
    comparison: Comparison
    #: the worst element: (output, index), the kernel's error and the shadow's value there
    where: tuple[int, tuple[int, ...]] | None = None
    error: float = 0.0
    error_ulp: float = 0.0
    dtype: str = ""
    #: the root line in words, the share of the error it alone gives, whether it accumulates
    cause: str = ""
    share: float = 0.0
    accumulates: bool = False
    #: torch at the inputs' precision at that element (None: no such reference)
    native_error: float | None = None
    #: compiled mode: the interpreter's error at that element (None: not measured), and
    #: whether compiled code is within a small factor of it everywhere it failed
    twin_error: float | None = None
    compiled_within: bool | None = None
    #: compiled mode: how far compiled float32 code may move there (perturbation probes)
    gpu_level: float | None = None
    #: values host code made and rounded that the kernel read, when their rounding explains
    #: what the shadow is still off by (0: none were needed)
    host_reads: int = 0

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.error, "error_ulp": self.error_ulp,
                               "shadow_passes": self.comparison.ok}
        if self.where is not None:
            out["output"], out["index"] = self.where[0], list(self.where[1])
        if self.cause:
            out.update(cause=self.cause, share=self.share, accumulates=self.accumulates)
        if self.native_error is not None:
            out["native_error"] = self.native_error
        if self.twin_error is not None:
            out["interpreter_error"] = self.twin_error
        if self.gpu_level is not None:
            out["compiled_level"] = self.gpu_level
        if self.host_reads:
            out["host_reads"] = self.host_reads
        if not self.comparison.ok:
            out["shadow_error"] = self.comparison.max_abs_error
            out["shadow_ulp"] = self.comparison.max_ulp_error
        return out


def _at(where: tuple[int, tuple[int, ...]] | None,
        names: Sequence[str | None] | None = None) -> str:
    if where is None:
        return ""
    out, idx = where
    return f" at {output_label(out, names)}[{','.join(map(str, idx))}]"


def worst_element(outputs: Sequence[Any], shadows: Sequence[tuple[torch.Tensor, torch.Tensor]
                                                           | None],
                  masks: Sequence[torch.Tensor]) -> tuple[int, tuple[int, ...], float] | None:
    """Among the elements that failed (``masks``), the one farthest from ``shadows`` (per
    output: float64 values, and a mask the caller ignores here) relative to its dtype's plain
    band: (output, index, error)."""
    best: tuple[float, int, tuple[int, ...], float] | None = None
    for i, (o, sh) in enumerate(zip(outputs, shadows, strict=False)):
        if sh is None or i >= len(masks) or not isinstance(o, torch.Tensor):
            continue
        bad = masks[i].reshape(o.shape) if masks[i].numel() == o.numel() else None
        if bad is None or not bool(bad.any()):
            continue
        rtol, atol, _ = oracle.default_tolerance(o.dtype)
        real = o.detach().cpu().to(torch.float64)
        d = (real - sh[0]).abs()
        ratio = torch.where(bad & torch.isfinite(d), d / (atol + rtol * sh[0].abs()),
                            torch.zeros_like(d))
        flat = int(torch.argmax(ratio.reshape(-1)))
        r = float(ratio.reshape(-1)[flat])
        if best is None or r > best[0]:
            idx = tuple(int(k) for k in torch.unravel_index(torch.tensor(flat), o.shape)) \
                if o.dim() else ()
            best = (r, i, idx, float(d.reshape(-1)[flat]))
    return None if best is None else (best[1], best[2], best[3])


def explained_by(shadows: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
                 expected: Sequence[Any], level: Sequence[torch.Tensor | None],
                 masks: Sequence[torch.Tensor], tolerance: Any) -> bool:
    """Whether every element the shadow fails at is within the plain band plus
    :data:`~fuzzkern.judge.oracle.SENSITIVITY_FACTOR` times ``level`` (how far the
    shadow moves when what it could not keep exact is perturbed by its rounding)."""
    any_bad = False
    for i, sh in enumerate(shadows):
        if i >= len(masks) or not bool(masks[i].any()):
            continue
        lv = level[i] if i < len(level) else None
        if sh is None or lv is None or not isinstance(expected[i], torch.Tensor):
            return False
        any_bad = True
        bad = masks[i].cpu().reshape(sh[0].shape)
        ref = expected[i].detach().cpu().to(torch.float64).reshape(sh[0].shape)
        rtol, atol, _ = oracle.default_tolerance(expected[i].dtype if expected[i].dtype
                                                 != torch.float64 else torch.float32)
        rtol = tolerance.rtol if getattr(tolerance, "rtol", None) is not None else rtol
        atol = tolerance.atol if getattr(tolerance, "atol", None) is not None else atol
        d = (sh[0] - ref).abs()
        ok = d <= atol + rtol * ref.abs() + oracle.SENSITIVITY_FACTOR * lv
        if bool((bad & ~ok).any()):
            return False
    return any_bad


def twin_within(compiled: torch.Tensor, interpreted: torch.Tensor, shadow: torch.Tensor,
                bad: torch.Tensor, dtype: torch.dtype, level: torch.Tensor | None = None
                ) -> bool:
    """Whether compiled code is, at every failing element, within
    :data:`~fuzzkern.judge.oracle.ACCURACY_FACTOR` times the interpreter's own distance from
    the shadow plus ``level`` (how far the shadow moves when every float32 result is moved by
    what compiled code may differ by: FMA contraction, approximate exp, sqrt and division)
    plus an ulp of the output: compiled rounds differently, not worse in kind."""
    f = oracle.float_format(dtype)
    ulp = oracle.ulp(shadow.abs(), dtype) if f is not None else torch.zeros_like(shadow)
    c = (compiled.detach().cpu().to(torch.float64) - shadow).abs()
    i = (interpreted - shadow).abs()
    if level is not None:
        i = i + level
    ok = c <= oracle.ACCURACY_FACTOR * (i + ulp)
    ok |= ~bad.reshape(c.shape)
    # NaN in both only where compiled's NaN is the shadow's too (a dropped NaN is not rounding)
    same_nan = torch.isnan(compiled.detach().cpu().to(torch.float64)) == torch.isnan(shadow)
    ok |= torch.isnan(c) & torch.isnan(i) & same_nan.reshape(c.shape)
    return bool(ok.all())


def judge_shadow(real: Comparison, found: ShadowFindings | None, *, limits: Sequence[str],
                 compiled_within: bool | None = None) -> tuple[str, Comparison]:
    """The status of a mode whose comparison ``real`` failed, given the shadow's findings; the
    comparison carries the explanation. ``limits``: what the shadow could not compute (then
    ``real`` stands as judged by the outside rules, and the explanation says so)."""
    status = "accuracy" if real.accuracy else "mismatch"
    condition = dict(real.condition)
    if limits or found is None:
        note = ("the float64 shadow cannot judge this case (" + "; ".join(limits)
                + "): judged by the reference's conditioning alone")
        return status, dataclasses.replace(real, explanation=_join(note, real.explanation),
                                           condition={**condition, "shadow": {
                                               "limits": list(limits)}})
    condition["shadow"] = found.figures()
    at = _at(found.where, real.names)
    ulps = f" ({found.error_ulp:.3g} {found.dtype} ulp)" if found.dtype else ""
    if not found.comparison.ok:
        sc = found.comparison
        first = sc.first[0] if sc.first else None
        where = "" if first is None else (
            f" at {output_label(first.output, real.names)}"
            f"[{','.join(map(str, first.index))}] ({first.got!r} where the float64 reference "
            f"gives {first.expected!r})")
        size = (f"by up to {sc.max_abs_error:.3g} ({sc.max_ulp_error:.3g} ulp), "
                if sc.max_abs_error > 0 else "")
        nonfinite = (f", {sc.nonfinite_mismatches} NaN/inf positions differ"
                     if sc.nonfinite_mismatches else "")
        words = (f"computed in float64 (the kernel's own algorithm without rounding) the kernel "
                 f"is still off{where}: {size}{sc.mismatched} of {sc.total} elements outside "
                 f"{sc.tolerance}{nonfinite}: not rounding")
        condition["shadow"]["says"] = words
        return "mismatch", dataclasses.replace(real, accuracy=False, explanation=_join(
            words, real.explanation), condition=condition)
    if compiled_within is False and not found.accumulates:
        # beyond the twin's yardstick: the outside rules stand (the shadow never makes a
        # compiled verdict worse than they do)
        words = (f"the kernel's algorithm in float64 matches the reference, but compiled code "
                 f"is off by {found.error:.3g}{ulps}{at}, more than "
                 f"{oracle.ACCURACY_FACTOR:g}x the interpreter's own rounding there "
                 f"({found.twin_error:.3g}) and what GPU math may add "
                 f"({found.gpu_level or 0:.3g}): the algorithm is right and rounding as the "
                 "interpreter reproduces it does not explain the rest")
        condition["shadow"]["says"] = words
        return status, dataclasses.replace(real, explanation=_join(words, real.explanation),
                                           condition=condition)
    # a NaN/inf where the shadow is finite: say so and where, not "off by 0" or "by inf"
    nonfinite = "" if found.error and math.isfinite(found.error) else _nonfinite_at(real)
    off = nonfinite or f"off by {found.error:.3g}{ulps}{at}"
    native = ""
    if not nonfinite and found.native_error is not None:
        if found.native_error > 0:
            native = (f"; torch at the inputs' precision is off by {found.native_error:.3g} "
                      f"there: the kernel is {found.error / found.native_error:.3g}x as far")
        else:
            native = "; torch at the inputs' precision is exact there"
    cause = f"; most from {found.cause}" if found.cause else ""
    # one root cause, one class: the root line's kind decides, not the mode, the dtype, how
    # far the outside rules stretch at this input or how much of this case's error the line
    # alone gives (Liger's group_norm `dB += tl.sum(g)` in fp16 gave 70% in one case and 39%
    # in another: one precision bug, not a precision bug and an accuracy finding)
    if found.accumulates:
        words = (f"precision loss, not logic: the kernel's algorithm in float64 matches the "
                 f"reference, but it is {off}{native}{cause}: "
                 "accumulate in float32")
        return "precision", dataclasses.replace(real, accuracy=False, explanation=words,
                                                condition=condition)
    twin = (f"; compiled differs from the interpreter's rounding ({found.twin_error:.3g} "
            f"there) by no more than GPU math explains (FMA contraction, approximate exp, "
            f"sqrt and division: {found.gpu_level or 0:.3g})"
            if found.twin_error is not None else "")
    host = (f"; {found.host_reads} values host code made and rounded before the kernel read "
            "them explain what the shadow is still off by" if found.host_reads else "")
    words = (f"rounding, not logic: the kernel's algorithm computed in float64 matches the "
             f"reference within {found.comparison.tolerance}; the kernel is {off}{native}{twin}"
             f"{host}{cause}")
    return "accuracy", dataclasses.replace(real, accuracy=True, explanation=words,
                                           condition=condition)


def _nonfinite_at(real: Comparison) -> str:
    """The first NaN/inf the kernel gives where the reference is finite, in words (``NaN at
    out[0,2,0] where the reference gives -2.0``), or ``""``."""
    for m in real.first:
        if not math.isfinite(m.got) and math.isfinite(m.expected):
            where = f"{output_label(m.output, real.names)}[{','.join(map(str, m.index))}]"
            return f"{m.got!r} at {where} where the reference gives {m.expected!r}"
    return ""


def _join(first: str, then: str) -> str:
    return f"{first}; {then}" if then else first
