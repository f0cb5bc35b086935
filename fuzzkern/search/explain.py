"""Explanations: what a shrunk failure depends on, from a handful of cheap variants of it.

The shrinker makes a case minimal, but minimal is not the same as understood: a person still
wonders whether the stride matters, or the NaN, or the float16. :func:`explain` reruns the
minimal case changed in one way at a time, each from exact input bytes (so only the named
property changes, never the values):

- each non-contiguous tensor made contiguous (same values), then all of them at once;
- the special values (NaN, ±inf, -0.0, ...) left out;
- low-precision float inputs upcast to float32 (float32 ones to float64), when the target
  accepts that dtype;
- the other execution mode, when it can run here;
- each free dim at a few other sizes (:func:`_sizes`): the next multiples of 2, 4, 8, ... and
  the sizes around the failing one.

and turns the results into lines such as "fails only when `x` is non-contiguous (passes with
`x` contiguous)", "still fails with every tensor contiguous", "passes when N is a multiple of
16 (N=32 and N=48 pass; N=21 and N=33 fail)" or "fails when N >= 21 (N=20 passes; N=22 and
N=42 fail)".

Each saved failure is explained within its own time share (:data:`SHARE` seconds, also past
the end of the budget: fuzzkern.search.engine), not with whatever the budget has left.

Example::

    lines = explain(lt.ref, case, outcome, pool, {"modes": ["interpret"]}, target=lt.target)
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fuzzkern.case.model import Case, Layout, TensorCase, contiguous_strides
from fuzzkern.judge.outcome import Outcome, Verdict

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.judge.causes import Cause
    from fuzzkern.target.declare import Target

#: How many single-tensor contiguity variants are tried at most.
MAX_TENSOR_VARIANTS = 3
#: seconds each saved failure's explanation may take (its variants, its causes)
SHARE = 8.0
#: variant runs per dim for its size dependence, at most
MAX_SIZE_RUNS = 8
#: "passes when N is a multiple of m" tries powers of two m up to twice the failing size, and
#: at least up to this: a shrunk case's size is small (often 1), its kernel's block is not
MULTIPLE_MIN = 64

_SPECIAL_WORDS = {"nan": "NaN", "inf": "inf", "-inf": "-inf", "-0.0": "-0.0",
                  "subnormal": "subnormal", "max": "dtype max", "lowest": "dtype lowest",
                  "tiny": "smallest normal", "min": "dtype min", "zero": "zero",
                  "minus_one": "-1"}


def _dense(tc: TensorCase) -> bool:
    if tc.numel == 0:
        return True
    expect = 1
    for size, stride in zip(reversed(tc.shape), reversed(tc.strides), strict=True):
        if size != 1 and stride != expect:
            return False
        expect *= size
    return tc.storage_offset == 0 and tc.storage_size == tc.numel


def _how(tc: TensorCase) -> str:
    if tc.layout is not None and tc.layout.kinds():
        kinds = tc.layout.kinds()
        words = {"expanded": "expanded (stride 0)", "offset": "offset in its storage"}
        return " and ".join(words.get(k, k) for k in kinds)
    return "non-contiguous"


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _accepted_dtypes(target: Target, name: str) -> tuple[str, ...] | None:
    """Dtypes the target's strategy draws for tensor input ``name`` (None when unknown)."""
    from fuzzkern.strategies._internal.dtypes import DEFAULT_DTYPES

    tensors = target.inputs.tensors
    seen = 0
    while name in tensors and seen < 16:
        strategy = tensors[name]
        if strategy.dtype_of:
            name = strategy.dtype_of
            seen += 1
            continue
        arg = strategy._dtypes_arg
        return tuple(DEFAULT_DTYPES if arg is None else arg)
    return None


class _Variants:
    """Runs variants of one case from exact storages written to a temporary folder."""

    def __init__(self, ref: str, case: Case, pool: WorkerPool, options: Mapping[str, Any],
                 timeout: float, folder: str, deadline: float) -> None:
        from fuzzkern.case.storage import storages_of

        self.ref = ref
        self.case = case
        self.pool = pool
        self.options = dict(options)
        self.timeout = timeout
        self.folder = folder
        self.deadline = deadline
        self.base = storages_of(case)
        self.count = 0

    def view(self, name: str) -> torch.Tensor:
        tc = self.case.tensors[name]
        return self.base[name].as_strided(tc.shape, tc.strides, tc.storage_offset)

    def run(self, case: Case, storages: Mapping[str, torch.Tensor],
            modes: list[str] | None = None,
            extra: Mapping[str, Any] | None = None) -> Outcome | None:
        import safetensors.torch

        if time.monotonic() > self.deadline:
            return None
        self.count += 1
        path = os.path.join(self.folder, f"variant{self.count}.safetensors")
        safetensors.torch.save_file(
            {n: s.contiguous().clone() for n, s in storages.items()}, path)
        options = {**self.options, **(extra or {}), "storages": path}
        if modes is not None:
            options["modes"] = modes
        return self.pool.run(self.ref, case.to_json(), options, self.timeout)


def _judge(outcome: Outcome | None, original: Outcome, passes: str, fails: str
           ) -> str | None:
    if outcome is None:
        return None
    if outcome.verdict == Verdict.PASS:
        return passes
    if outcome.failed:
        if outcome.verdict != original.verdict:
            return f"{fails}, as {outcome.verdict} instead of {original.verdict}"
        return fails
    return None  # precondition, unsupported, divergence: says nothing either way


def explain(ref: str, case: Case, outcome: Outcome, pool: WorkerPool,
            options: Mapping[str, Any], *, target: Target | None = None,
            timeout: float | None = None, max_seconds: float = 30.0) -> list[str]:
    """Lines saying what the failure of ``case`` (with ``outcome``) depends on.

    A handful of worker runs, each of a variant that differs from ``case`` in one property.
    Hangs are not explained (every variant could run until the timeout). ``max_seconds``
    bounds the whole; variants past it are skipped.
    """
    import torch

    from fuzzkern.target import loader

    if outcome.verdict == Verdict.HANG or not outcome.failed:
        return []
    if target is None:
        target = loader.load_ref(ref)
    timeout = timeout or target.timeout
    lines: list[str] = []
    deadline = time.monotonic() + max_seconds
    with tempfile.TemporaryDirectory(prefix="fuzzkern-explain-") as folder:
        v = _Variants(ref, case, pool, options, timeout, folder, deadline)

        # 1. layouts
        strided = [n for n, tc in case.tensors.items() if not _dense(tc)]
        for name in strided[:MAX_TENSOR_VARIANTS]:
            tc = case.tensors[name]
            new = TensorCase(tc.shape, tc.dtype, contiguous_strides(tc.shape), 0, tc.numel,
                             tc.values, Layout.contiguous(len(tc.shape)))
            storages = dict(v.base)
            storages[name] = v.view(name).contiguous().reshape(-1)
            variant = replace(case, inputs={**case.inputs, name: new})
            line = _judge(v.run(variant, storages), outcome,
                          f"fails only when `{name}` is {_how(tc)} "
                          f"(passes with `{name}` contiguous)",
                          f"still fails with `{name}` contiguous")
            if line:
                lines.append(line)
        if len(strided) > 1:
            inputs = dict(case.inputs)
            storages = dict(v.base)
            for name in strided:
                tc = case.tensors[name]
                inputs[name] = TensorCase(tc.shape, tc.dtype, contiguous_strides(tc.shape), 0,
                                          tc.numel, tc.values, Layout.contiguous(len(tc.shape)))
                storages[name] = v.view(name).contiguous().reshape(-1)
            line = _judge(v.run(replace(case, inputs=inputs), storages), outcome,
                          f"fails only with non-contiguous inputs (passes with {_names(strided)} "
                          "all contiguous)",
                          "still fails with every tensor contiguous")
            if line:
                lines.append(line)

        # 2. special values
        special = {n: tc for n, tc in case.tensors.items() if tc.values.specials}
        if special:
            from fuzzkern.case.model import materialize
            from fuzzkern.case.storage import storage_of

            inputs = dict(case.inputs)
            storages = dict(v.base)
            kinds: set[str] = set()
            for name, tc in special.items():
                kinds.update(k for _, k in tc.values.specials)
                plain = replace(tc, values=replace(tc.values, specials=()))
                inputs[name] = plain
                storages[name] = storage_of(materialize(plain))
            words = sorted(_SPECIAL_WORDS.get(k, k) for k in kinds)
            where = _names(sorted(special))
            if kinds == {"nan"}:
                passes = f"fails only with NaN inputs (passes without the NaN in {where})"
            else:
                passes = (f"fails only with special values (passes without the "
                          f"{', '.join(words)} in {where})")
            line = _judge(v.run(replace(case, inputs=inputs), storages), outcome,
                          passes, f"still fails without the special values ({', '.join(words)})")
            if line:
                lines.append(line)

        # 3. precision
        floats = {n: tc for n, tc in case.tensors.items()
                  if tc.dtype.startswith(("float", "bfloat"))}
        low = {n: tc for n, tc in floats.items() if tc.dtype not in ("float32", "float64")}
        group, wider = (low, "float32") if low else (
            {n: tc for n, tc in floats.items() if tc.dtype == "float32"}, "float64")
        accepted = all(wider in (_accepted_dtypes(target, n) or ()) for n in group)
        if group and accepted:
            inputs = dict(case.inputs)
            storages = dict(v.base)
            for name, tc in group.items():
                inputs[name] = replace(tc, dtype=wider)
                storages[name] = v.base[name].to(getattr(torch, wider))
            was = "/".join(sorted({tc.dtype for tc in group.values()}))
            line = _judge(v.run(replace(case, inputs=inputs), storages), outcome,
                          f"fails only in {was} (passes with {_names(sorted(group))} upcast to "
                          f"{wider})",
                          f"still fails with {_names(sorted(group))} upcast to {wider}")
            if line:
                lines.append(line)

        # 4. the other mode
        ran = [m for m, r in outcome.modes.items() if m in ("interpret", "compiled")]
        bad = [m for m in ran if outcome.modes[m].status not in ("ok", "precondition",
                                                                   "unsupported")]
        good = [m for m in ran if outcome.modes[m].status == "ok"]
        if len(ran) == 2 and len(bad) == 1 and good:
            lines.append(f"fails only in {bad[0]} mode (passes in {good[0]} mode)")
        elif len(ran) == 1:
            other = "compiled" if ran[0] == "interpret" else "interpret"
            if other in target.modes and (other == "interpret" or _cuda()):
                line = _judge(v.run(case, v.base, [other]), outcome,
                              f"fails only in {ran[0]} mode (passes in {other} mode)",
                              f"also fails in {other} mode")
                if line:
                    lines.append(line)

        # 5. sizes
        lines.extend(_sizes(v, case, outcome, target))
    return lines


def _sizes(v: _Variants, case: Case, outcome: Outcome, target: Target) -> list[str]:
    """What each free dim's size has to do with the failure, from a few sizes each: "passes
    when N is a multiple of 16" (the smallest power of two m whose next two multiples pass
    while the failing size and the one past a multiple fail), else "fails when N >= 21" (one
    size below passes, the next one up and the double fail). A size passes when the case
    resized to it passes and so does a value variant of it (:meth:`Case.variant`): values
    that happen to give the kernel's wrong answer are no evidence about the size."""
    from fuzzkern.case.storage import storages_of
    from fuzzkern.search.minimize import resizer

    build, ranges = resizer(target, case, outcome)
    lines = []
    for d, (lo, hi, step) in ranges.items():
        n = case.dims.get(d)
        if not isinstance(n, int) or n <= 0:
            continue
        runs: dict[int, bool | None] = {n: False}

        def at(k: int, d: str = d, lo: int = lo, hi: int | None = hi, step: int = step,
               runs: dict[int, bool | None] = runs) -> bool | None:
            """True: passes at size k; False: fails; None: not run or says nothing."""
            if k in runs:
                return runs[k]
            if (k < max(lo, 1) or (hi is not None and k > hi) or k % step
                    or len(runs) > MAX_SIZE_RUNS):
                return None
            c = build({**case.dims, d: k})
            got = None if c is None else v.run(c, storages_of(c))
            if c is not None and got is not None and got.verdict == Verdict.PASS:
                # a pass of these values or of this size? (small integers that happen to
                # sum to 0 match a loop that skips them): a value variant must pass too
                other = c.variant(1)
                got = v.run(other, storages_of(other))
            runs[k] = None if got is None else (
                True if got.verdict == Verdict.PASS else False if got.failed else None)
            return runs[k]

        line = _multiple(d, n, at, hi) or _threshold(d, n, step, at)
        if line:
            lines.append(line)
    return lines


def _multiple(d: str, n: int, at: Any, hi: int | None) -> str | None:
    m = 2
    while m <= max(2 * n, MULTIPLE_MIN) and (hi is None or m <= hi):
        if n % m:
            up = -(-n // m) * m
            if at(up) and at(up + m) and at(up + 1) is False:
                return (f"passes when {d} is a multiple of {m} ({d}={up} and {d}={up + m} "
                        f"pass; {d}={n} and {d}={up + 1} fail)")
            if at(up) is None:
                return None  # out of range or out of runs: nothing more to learn
        m *= 2
    return None


def _threshold(d: str, n: int, step: int, at: Any) -> str | None:
    below, above = n - step, n + step
    if at(below) and at(above) is False and at(2 * n) is not True:
        more = f" and {d}={2 * n}" if at(2 * n) is False else ""
        return f"fails when {d} >= {n} ({d}={below} passes; {d}={above}{more} fail)"
    return None


#: the re-runs that attribute a compiled-only difference, in order: run options, what a pass
#: (or, for repeats, a nondeterministic verdict) says, and the cause
_CAUSE_RUNS: list[tuple[dict[str, Any], str, str]] = [
    ({"compile": {"enable_fp_fusion": False}}, "fma",
     "caused by fused multiply-add (Triton contracts a * b + c into one rounding by default): "
     "passes with enable_fp_fusion=False"),
    ({"flush_subnormals": True}, "ftz",
     "subnormal inputs read as zero on the GPU (flush-to-zero, the GPU default): passes "
     "against a reference that reads them as zero"),
    ({"compile": {"enable_reflect_ftz": False}}, "ftz",
     "libdevice math flushes subnormals to zero (enable_reflect_ftz, Triton's default): passes "
     "with enable_reflect_ftz=False"),
    ({"repeat_compiled": 3}, "nondeterministic",
     "the result changes between launches of the same binary (atomics or a race)"),
    ({"compile": {"num_warps": 1}}, "ordering",
     "the difference moves with the reduction order: passes with num_warps=1"),
    ({"compile": {"num_warps": 8}}, "ordering",
     "the difference moves with the reduction order: passes with num_warps=8"),
]


def _subnormal(t: torch.Tensor) -> bool:
    import torch

    if not t.is_floating_point() or t.numel() == 0:
        return False
    a = t.detach().abs().to(torch.float64)
    return bool(((a > 0) & (a < torch.finfo(t.dtype).tiny)).any())


def compiled_causes(ref: str, case: Case, outcome: Outcome, pool: WorkerPool,
                    options: Mapping[str, Any], *, target: Target,
                    timeout: float | None = None, max_seconds: float = 40.0
                    ) -> tuple[list[Cause], bool]:
    """The causes of a compiled failure's difference (:mod:`fuzzkern.judge.causes`), each from a
    compiled re-run of ``case`` (:data:`_CAUSE_RUNS`), and whether the difference is compiled-only
    (the interpreter passes the same case: from ``outcome``, else from an interpreted run).
    Nothing is tried for a failure that is not a compiled mismatch, or that the interpreter
    shares; an interpreter that cannot run the case (an error) does not stop the re-runs."""
    from fuzzkern.judge.causes import Cause

    compiled = outcome.modes.get("compiled")
    if compiled is None or compiled.status not in ("mismatch", "accuracy", "precision"):
        return [], False
    timeout = timeout or target.timeout
    deadline = time.monotonic() + max_seconds
    causes: list[Cause] = []
    only = False
    with tempfile.TemporaryDirectory(prefix="fuzzkern-causes-") as folder:
        v = _Variants(ref, case, pool, options, timeout, folder, deadline)
        interp = outcome.modes.get("interpret")
        if interp is None and "interpret" in target.modes:
            alone = v.run(case, v.base, ["interpret"])
            interp = None if alone is None else alone.modes.get("interpret")
        if interp is not None and interp.status in ("mismatch", "precision"):
            return [], False  # the interpreter disagrees too: not a compiled-only difference
        # (an interpreter that could not run the case says nothing either way: the re-runs
        # below are compiled, and a cause they find stands on its own)
        only = interp is not None and interp.status in ("ok", "accuracy")
        subnormal = any(_subnormal(v.view(n)) for n in case.tensors)
        for extra, kind, line in _CAUSE_RUNS:
            if extra.get("flush_subnormals") and not subnormal:
                continue
            if kind == "ordering" and any(c.kind in ("fma", "ftz") for c in causes):
                break  # explained already
            got = v.run(case, v.base, ["compiled"], extra)
            if got is None:
                break  # out of time
            if kind == "nondeterministic":
                if got.verdict == Verdict.NONDETERMINISTIC:
                    causes.append(Cause(kind, proven_nondeterminism(line, got)))
            elif got.verdict == Verdict.PASS:
                causes.append(Cause(kind, line))
                if kind == "ordering":
                    break
    return causes, only


def proven_nondeterminism(line: str, repeated: Outcome) -> str:
    """The nondeterminism cause in words with its proof: ``repeated`` is the re-run with
    repeated launches of one binary, whose message shows the differing values at an element
    and which launches gave them (docs/verdicts.md, ``nondeterministic``)."""
    proof = repeated.message.split(": ", 1)[-1] if repeated.message else ""
    return f"{line}: {proof}" if proof else line


def _cuda() -> bool:
    from fuzzkern.corpus.store import _cuda_available

    return _cuda_available()


__all__ = ["compiled_causes", "explain", "proven_nondeterminism"]
