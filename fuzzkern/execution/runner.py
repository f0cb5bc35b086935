"""Running one case inside a worker: materialize, reference, each mode, compare, verdict.

This is the worker-side half of the pipeline; the parent only ever sees the resulting
:class:`~fuzzkern.judge.outcome.Outcome`. Order of work per case:

1. build the case's CPU tensors from their recipe (exact strides, offsets, gap sentinels);
2. run the launcher in each mode on its own copy of those tensors (layouts preserved);
3. run the torch reference on float64 copies (only when a mode produced outputs);
4. compare each mode's outputs with the reference and derive the verdict.

Hygiene checks ride along (each can be turned off with ``options["checks"]``, see
:data:`fuzzkern.target.declare.DEFAULT_CHECKS`): the interpreter's bounds and view checkers,
poisoned ``torch.empty`` memory (unwritten outputs), input storages compared bytewise before and
after each launch (mutated inputs, writes into gaps), red zones around compiled-mode storages, and
optionally a repeated compiled run (``options["repeat_compiled"]``) for nondeterminism.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from fuzzkern.calls import call_with, names
from fuzzkern.case.model import Case, materialize, rebuild_like
from fuzzkern.errors import text_of
from fuzzkern.execution import hygiene
from fuzzkern.execution.hygiene import (
    Allocations,
    is_poison,
    unwritten_counts,
)
from fuzzkern.execution.launching import (
    as_outputs,
    short_traceback,
)
from fuzzkern.execution.stages import stage
from fuzzkern.gpus import assumed_gpu
from fuzzkern.judge import oracle, recheck
from fuzzkern.judge.conditioning import Evidence
from fuzzkern.judge.outcome import Comparison, ModeResult, Outcome, Verdict
from fuzzkern.judge.verdict import verdict_of
from fuzzkern.target import loader
from fuzzkern.target.declare import Target, Tolerance

_targets: dict[str, Target] = {}
#: the case's passing modes and what they compared, for the parent to compare again
#: (:mod:`fuzzkern.judge.recheck`): filled by :meth:`_Run._judge`, sent by :func:`run_case_json`
CLAIMS: dict[str, dict[str, Any]] = {}


def _target(ref: str) -> Target:
    if ref not in _targets:
        _targets[ref] = loader.load_ref(ref)
    return _targets[ref]


class _Run:
    def __init__(self, target: Target, case: Case, options: Mapping[str, Any],
                 base: Mapping[str, torch.Tensor] | None = None) -> None:
        """``base``: the case's CPU tensors, made already (a batch of value variants makes
        them together, see :func:`fuzzkern.execution.compiled.place_variants`)."""
        self.target = target
        self.case = case
        self.options = options
        storages = options.get("storages")
        self.base: Mapping[str, torch.Tensor]
        if base is not None:
            self.base = base
        elif storages:  # a corpus replay: the exact stored bytes, not the value recipe
            from fuzzkern.case.storage import tensors_from_storages

            self.base = tensors_from_storages(storages, case, options.get("case_bytes"))
        else:
            with stage("materialize"):
                self.base = {name: materialize(tc) for name, tc in case.tensors.items()}
        #: the case's tensors as placed on the device, before any launch (a batch of value
        #: variants sets them where the reference runs there, :mod:`fuzzkern.execution.
        #: references`); None: the reference runs on the CPU
        self.device_base: dict[str, torch.Tensor] | None = None
        #: the float64 reference and magnitude computed there for the batch's variants at once
        #: (:func:`fuzzkern.execution.references.batched`), where it was
        self.device_expected: tuple[tuple[Any, ...], tuple[Any, ...] | None] | None = None
        self.scalars = case.scalars
        self._expected: tuple[Any, ...] | None = None
        self._magnitude: tuple[Any, ...] | None = None
        self._reference_error: BaseException | None = None
        self._reference_done = False
        self._native: tuple[Any, ...] | None = None
        self._native_done = False
        self._exact: tuple[Any, ...] | None = None
        self._exact_done = False
        self._evidence: Evidence | None = None
        #: whether the interpreter's outputs mismatched (None: not compared, or not yet)
        self._interpret_mismatch: bool | None = None
        #: the interpreted launch's kernel coverage
        #: (fuzzkern.execution.interpreter.coverage.Recording)
        self.recorded: Any = None
        #: per mode, its outputs' bytes when its launch returned (fuzzkern.judge.recheck)
        self._snapshots: dict[str, Any] = {}

    def _tolerance(self, outputs: Sequence[Any], compiled: bool) -> Tolerance:
        """The target's tolerance; with ``follow="inputs"``, each floating-point output's made
        explicit from the case's lowest-precision floating-point input dtype (its ``dtypes``
        entry, else that dtype's default) instead of the output's own."""
        return recheck.tolerance_of(self.target, self.case, outputs, compiled)

    # -- reference ---------------------------------------------------------------------------
    def _told(self) -> dict[str, Any]:
        """What a reference may ask for by name besides the inputs: ``input_dtypes``, the
        case's own dtype of each tensor input (the reference sees float64 copies)."""
        return {"input_dtypes": {n: t.dtype for n, t in self.base.items()}}

    def _call_reference(self, values: Mapping[str, Any]) -> Any:
        # (the dtypes only for a reference that asks: reading a variant's inputs makes them)
        told = self._told() if names(self.target.reference, "input_dtypes") else {}
        return call_with(self.target.reference, values, told)

    def _reference_inputs(self, absolute: bool = False, on_device: bool = False
                          ) -> dict[str, Any]:
        """The reference's inputs: float64 copies of the case's tensors (as they are for a
        target with ``upcast=False``), on the CPU, or with ``on_device`` on the device from
        :attr:`device_base` (:func:`fuzzkern.execution.references.widened`)."""
        values: dict[str, Any] = dict(self.scalars)
        tensors: Mapping[str, torch.Tensor]
        if on_device:
            from fuzzkern.execution.references import widened

            assert self.device_base is not None
            tensors, widen = self.device_base, widened
        else:
            tensors = self.base
            widen = oracle.upcast_for_reference if self.target.upcast else rebuild_like
        for name, t in tensors.items():
            c = widen(t)
            if absolute and (c.is_floating_point() or c.is_complex()):
                c = c.abs()
            if self.options.get("flush_subnormals") and t.is_floating_point():
                c = flushed(c, t.dtype)
            values[name] = c
        return values

    def reference(self) -> tuple[Any, ...] | None:
        if not self._reference_done:
            self._reference_done = True
            # (a batch of value variants turns gradients off once for all its references)
            grad = torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext()
            with grad:
                try:
                    self._expected = as_outputs(self._call_reference(self._reference_inputs()))
                except Exception as e:
                    self._reference_error = e
                    return None
                if self.target.reduction is not None:
                    try:
                        self._magnitude = as_outputs(
                            self._call_reference(self._reference_inputs(True)))
                    except Exception:
                        self._magnitude = None
        return self._expected

    def device_reference(self) -> tuple[tuple[Any, ...], tuple[Any, ...] | None] | None:
        """The float64 reference (and, for a reduction, its magnitude) computed on the device
        from :attr:`device_base`, for the batched fast path only; None when it raises (the
        CPU's :meth:`reference` then decides). Gradients are off (the batch's scope)."""
        if self.device_expected is not None:
            return self.device_expected
        try:
            expected = as_outputs(self._call_reference(self._reference_inputs(on_device=True)))
        except Exception:
            return None
        if expected is None:
            return None
        magnitude = None
        if self.target.reduction is not None:
            try:
                magnitude = as_outputs(self._call_reference(
                    self._reference_inputs(True, on_device=True)))
            except Exception:
                return None
        return expected, magnitude

    def native_reference(self) -> tuple[Any, ...] | None:
        """The reference on the inputs' own dtypes (CPU), as a torch user computes it: used only
        for elements that fail against the float64 reference (oracle rule 7,
        :func:`fuzzkern.judge.oracle.accept_native`). None when it raises."""
        if not self._native_done:
            self._native_done = True
            values: dict[str, Any] = dict(self.scalars)
            values.update({n: rebuild_like(t, "cpu") for n, t in self.base.items()})
            try:
                with torch.no_grad():
                    self._native = as_outputs(self._call_reference(values))
            except Exception:
                self._native = None
        return self._native

    def evidence(self) -> Evidence | None:
        """What the reference says about this input's conditioning (oracle rules 8 and 9),
        computed lazily by the oracle only for a comparison that fails the plain tolerance."""
        if self._evidence is None and self.target.upcast and self._expected is not None:
            dtypes: dict[str, torch.dtype] = {n: t.dtype for n, t in self.base.items()}
            for name, v in self.scalars.items():
                if isinstance(v, float):
                    dtypes[name] = torch.float32  # a Python float reaches a kernel as fp32
            reference = self.target.reference

            def call(v: Mapping[str, Any]) -> tuple[Any, ...] | None:
                return as_outputs(call_with(reference, v, self._told()))

            reduction = (self.case.dims.get(self.target.reduction)
                         if self.target.reduction else None)
            self._evidence = Evidence(call, self._reference_inputs, dtypes,
                                      native=self.native_reference,
                                      reduction=reduction, dims=self.case.dims,
                                      expected=self._expected)
        return self._evidence

    def output_names(self) -> tuple[str | None, ...] | None:
        return recheck.output_names(self.target)

    # -- modes -------------------------------------------------------------------------------
    def interpret(self) -> ModeResult:
        from fuzzkern.execution.interpret import run_interpreted

        return run_interpreted(self)

    def storage_checks(self, storages: Mapping[str, tuple[torch.Tensor, torch.Tensor,
                                                          torch.Tensor]],
                       detail: dict[str, Any]) -> None:
        """Record changed gaps (``detail["oob_write"]``) and mutated inputs
        (``detail["mutated"]``): ``storages`` maps each input to (view, bytes before, bytes
        after), the bytes on the CPU."""
        # in-place inputs are compared as outputs, clobbered ones not at all: neither is a
        # mutation (a write outside the view still is a bug)
        inplace = set(self.target.inplace_names) | set(self.target.clobber_names)
        for name, (view, before, after) in storages.items():
            gaps, mutated = hygiene.storage_changes(name, view, before, after,
                                                    inplace=name in inplace)
            if gaps:
                detail.setdefault("oob_write", []).extend(gaps)
            if mutated is not None:
                detail.setdefault("mutated", []).append(mutated)

    def _outputs(self, result: Any, tensors: Mapping[str, torch.Tensor]) -> tuple[Any, ...] | None:
        if self.target.inplace_names:
            return tuple(tensors[n] for n in self.target.inplace_names)
        return as_outputs(result)

    def _compare(self, mode: str, outputs: tuple[Any, ...] | None, detail: dict[str, Any],
                 seconds: float, allocations: Allocations | None = None,
                 allocated: set[int] | None = None) -> ModeResult:
        # the outputs' bytes as the launch left them, before any more of the case's code
        # runs (the reference): what the parent compares again (fuzzkern.judge.recheck)
        with stage("snapshot"):
            self._snapshots[mode] = recheck.snapshot(outputs)
        with stage("reference"):
            expected = self.reference()
        with stage("compare"):
            return self._judge(mode, expected, outputs, detail, seconds, allocations,
                               allocated)

    def _judge(self, mode: str, expected: tuple[Any, ...] | None,
               outputs: tuple[Any, ...] | None, detail: dict[str, Any], seconds: float,
               allocations: Allocations | None, allocated: set[int] | None) -> ModeResult:
        if expected is None:
            if self._reference_error is not None:
                e = self._reference_error
                return ModeResult(mode, "reference-error",
                                  error=f"{type(e).__name__}: {text_of(e)}",
                                  detail={**detail, "traceback": short_traceback(e)},
                                  seconds=seconds)
            outputs_desc = "nothing" if outputs is None else f"{len(outputs)} output(s)"
            return ModeResult(mode, "mismatch", Comparison(
                ok=False, structural=f"the reference returned nothing; the launcher returned "
                f"{outputs_desc} (set inplace= for in-place kernels)"), detail=detail,
                seconds=seconds)
        if outputs is None:
            return ModeResult(mode, "mismatch", Comparison(
                ok=False, structural="the launcher returned nothing but the reference returned "
                f"{len(expected)} output(s) (set inplace= for in-place kernels)"),
                detail=detail, seconds=seconds)
        tolerance = self._tolerance(outputs, mode == "compiled")
        reduction = self.case.dims.get(self.target.reduction, 1) if self.target.reduction else 1
        masks: list[torch.Tensor] = []
        judge = functools.partial(
            oracle.compare, outputs, expected, tolerance=tolerance, magnitude=self._magnitude,
            reduction_length=max(1, reduction),
            native=self.native_reference if self.target.upcast else None,
            evidence=self.evidence(), names=self.output_names())
        comparison = judge(masks=masks, compiled=mode == "compiled")
        if mode == "interpret":
            self._interpret_mismatch = not comparison.ok
        if (mode == "compiled" and comparison.ok and comparison.structural is None
                and self._interpret_mismatch is not False
                and "interpret" in (self.options.get("modes") or ())
                and comparison.max_rel_error > oracle.default_tolerance(torch.float32)[0]):
            # Passed, but maybe only thanks to the wider float32 tolerance of compiled code
            # (oracle.COMPILED_RTOL), in a case where the interpreter mismatched (or has yet to
            # run): say so, so that verdict_of calls it a kernel bug, not an interpreter
            # divergence.
            strict = judge()
            if not strict.ok:
                detail["approx_math"] = (
                    f"{strict.mismatched} of {strict.total} elements pass only with the float32 "
                    f"tolerance for compiled code (up to {strict.max_ulp_error:.0f} ulp; "
                    f"{strict.tolerance.split(' (')[0]} otherwise)")
        status = "ok" if comparison.ok else "accuracy" if comparison.accuracy else "mismatch"
        if status == "ok":  # a pass is a claim the parent checks (fuzzkern.judge.recheck)
            with stage("snapshot"):
                CLAIMS[mode] = recheck.claim(
                    self._snapshots.pop(mode, recheck.Unpackable("no snapshot of its outputs")),
                    expected, magnitude=self._magnitude, tolerance=tolerance,
                    reduction_length=max(1, reduction), names=self.output_names(),
                    upcast=self.target.upcast, evidence=self._evidence,
                    native=self._native if self._native_done else None)
        if not comparison.ok and comparison.structural is None and self._shadows(mode):
            with stage("shadow"):
                status, comparison = self._shadow_judge(mode, outputs, comparison, tolerance,
                                                        masks)
        if not comparison.ok and allocations is not None and outputs is not None:
            if allocated is None:
                allocated = allocations.indices_of(outputs)
            unwritten = unwritten_counts(outputs, allocations, allocated)
            if unwritten:
                detail["unwritten"] = unwritten
                detail["unwritten_only"] = (comparison.structural is None
                                            and _only_unwritten(outputs, masks, allocated))
        return ModeResult(mode, status, comparison, detail=detail, seconds=seconds)

    # -- the float64 shadow ------------------------------------------------------------------
    def _shadows(self, mode: str) -> bool:
        """Whether a failed comparison of ``mode`` is judged by the float64 shadow: its
        reference takes float64 copies and it did not opt out. In every mode the run asked
        for, interpret mode or not: the shadow runs in the interpreter on the CPU, and a
        kernel that cannot run there is said in the finding (:meth:`_shadow_judge`)."""
        return (self.target.shadow and self.target.upcast
                and mode in ("interpret", "compiled")
                and bool(self.options.get("shadow", True)))

    def exact_reference(self) -> tuple[Any, ...] | None:
        """The reference on float64 copies with torch held at float64 throughout
        (:class:`~fuzzkern.execution.interpreter.shadow.ExactReference`); None when it raises."""
        from fuzzkern.execution.interpreter.shadow import ExactReference

        if not self._exact_done:
            self._exact_done = True
            try:
                with torch.no_grad(), ExactReference():
                    self._exact = as_outputs(self._call_reference(self._reference_inputs()))
            except Exception:
                self._exact = None
        return self._exact

    def _shadow_judge(self, mode: str, outputs: tuple[Any, ...], comparison: Comparison,
                      tolerance: Tolerance, masks: list[torch.Tensor]) -> tuple[str, Comparison]:
        key = self._rounding_key(mode, comparison)
        reused = _ROUNDING.reuse(key, comparison)
        if reused is not None:
            return "accuracy", reused
        status, judged = self._shadow_run(mode, outputs, comparison, tolerance, masks)
        _ROUNDING.record(key, status, judged)
        return status, judged

    def _rounding_key(self, mode: str, comparison: Comparison) -> tuple[Any, ...]:
        """What a shadow's "rounding, not logic" carries over to (:class:`_RoundingSeen`):
        the target, the mode, the kernels' specialization as drawn (dtypes, configs, compile
        options, integer meta-parameters; not the sizes or the values) and the failure's
        signature (the outputs that mismatch)."""
        case = self.case
        kinds = tuple(sorted(
            (name, t.dtype if hasattr(t, "dtype") else
             t if isinstance(t, (bool, int, str)) else type(t).__name__)
            for name, t in case.inputs.items()))
        outputs = tuple(sorted({m.output for m in comparison.first}))
        return (self.target.id, mode, kinds, tuple(sorted(case.configs.items())),
                tuple(sorted((k, repr(v)) for k, v in case.compile.items())), outputs)

    def _shadow_run(self, mode: str, outputs: tuple[Any, ...], comparison: Comparison,
                    tolerance: Tolerance, masks: list[torch.Tensor]) -> tuple[str, Comparison]:
        from fuzzkern.execution.interpreter.shadow import find_shadow
        from fuzzkern.judge.precision import judge_shadow

        if "interpret" not in self.target.modes:
            found, limits = None, [f"the target does not run in the interpreter (modes "
                                   f"{', '.join(self.target.modes)})"]
        else:
            try:
                found, limits = find_shadow(self, mode, outputs, comparison, tolerance, masks)
            except Exception as e:  # the shadow's own failure: said, and judged as before
                found, limits = None, [shadow_failure(e)]
        try:
            return judge_shadow(comparison, found, limits=limits,
                                compiled_within=None if found is None else found.compiled_within)
        except Exception as e:
            return judge_shadow(comparison, None, limits=[shadow_failure(e)])


class _RoundingSeen:
    """The float64 shadow's "rounding, not logic" (status ``accuracy``), carried over from the
    case it ran on to later cases of the same kernel, config and failure signature
    (:meth:`_Run._rounding_key`) whose errors are no larger: an accuracy-heavy target (FMA,
    approximate math, low-precision inputs: every case off the plain band) would otherwise
    run the kernel once more in the interpreter for each case, and keep a fraction of its
    throughput. Never for a failure (a failure is judged case by case) nor for a case with
    NaN/inf mismatches or errors past :data:`GROWTH` times the largest the shadow explained;
    the shadow runs again every :data:`EVERY` reuses of one key. The explanation says so."""

    #: errors (abs, rel and ulp) up to this many times the shadow's explained ones carry over
    GROWTH = 2.0
    #: the shadow runs again after this many reuses of one key
    EVERY = 16
    #: keys kept (a worker's whole life; the oldest go first)
    MOST = 4096

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], tuple[Comparison, int]] = {}

    def reuse(self, key: tuple[Any, ...], real: Comparison) -> Comparison | None:
        got = self.seen.get(key)
        if got is None or real.nonfinite_mismatches or not real.first:
            return None
        judged, uses = got
        if uses >= self.EVERY or any(
                new > self.GROWTH * old for new, old in (
                    (real.max_abs_error, judged.max_abs_error),
                    (real.max_rel_error, judged.max_rel_error),
                    (real.max_ulp_error, judged.max_ulp_error))):
            return None
        self.seen[key] = (judged, uses + 1)
        # the root cause the shadow named carries over too: one root cause, one finding
        # (fuzzkern.judge.verdict.failure_key), whichever case the shadow ran on
        root = {k: v for k, v in ((judged.condition or {}).get("shadow") or {}).items()
                if k in ("cause", "accumulates", "share")}
        words = (f"rounding, as the float64 shadow found for an earlier case of this kernel, "
                 f"config and failure with errors as large (up to {judged.max_abs_error:.3g}, "
                 f"{judged.max_ulp_error:.3g} ulp): "
                 f"{judged.explanation.split('; the kernel is off by')[0]}"
                 + (f"; most from {root['cause']}" if root.get("cause") else ""))
        condition = {**real.condition, "shadow": {**root, "reused": True,
                                                  "explained_abs": judged.max_abs_error,
                                                  "explained_ulp": judged.max_ulp_error}}
        return dataclasses.replace(real, accuracy=True, explanation=words, condition=condition)

    def record(self, key: tuple[Any, ...], status: str, judged: Comparison) -> None:
        if status != "accuracy" or judged.nonfinite_mismatches or not judged.first:
            self.seen.pop(key, None)  # what the shadow says now stands for this key
            return
        old = self.seen.get(key)
        if old is not None:  # the largest errors explained so far are the yardstick
            prev = old[0]
            judged = dataclasses.replace(
                judged, max_abs_error=max(prev.max_abs_error, judged.max_abs_error),
                max_rel_error=max(prev.max_rel_error, judged.max_rel_error),
                max_ulp_error=max(prev.max_ulp_error, judged.max_ulp_error))
        if len(self.seen) >= self.MOST and key not in self.seen:
            self.seen.pop(next(iter(self.seen)))
        self.seen[key] = (judged, 0)


_ROUNDING = _RoundingSeen()


def shadow_failure(e: BaseException) -> str:
    """A failure of the shadow itself in words, with where it was raised: never a verdict."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = ("" if tb is None else
             f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}")
    return f"the shadow failed ({type(e).__name__}: {text_of(e)[:160]}{where})"


def flushed(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` with the values that are subnormal in ``dtype`` set to zero of their sign, as a GPU
    that flushes subnormals to zero reads them (the reference of a re-run that asks whether
    flushing explains a compiled-only difference: ``options["flush_subnormals"]``)."""
    tiny = torch.finfo(dtype).tiny
    return torch.where(t.abs() < tiny, t * 0, t)


def _only_unwritten(outputs: tuple[Any, ...], masks: list[torch.Tensor],
                    allocated: set[int]) -> bool:
    """Whether every mismatching element is a poisoned element of an output the launcher
    allocated: the kernel never wrote it (rather than wrote a wrong value)."""
    if len(masks) != len(outputs):
        return False
    any_bad = False
    for i, (o, bad) in enumerate(zip(outputs, masks, strict=True)):
        if not bool(bad.any()):
            continue
        any_bad = True
        poison = is_poison(o) if i in allocated and isinstance(o, torch.Tensor) else None
        if poison is None or bool((bad & ~poison.reshape(bad.shape)).any()):
            return False
    return any_bad


def run_case(target: Target, case: Case, options: Mapping[str, Any]) -> Outcome:
    with assumed_gpu(options.get("assume_gpu") or target.assume_gpu):
        return _run_modes(target, case, options)


def _run_modes(target: Target, case: Case, options: Mapping[str, Any]) -> Outcome:
    start = time.perf_counter()
    modes = tuple(options.get("modes") or ("interpret",))
    run = _Run(target, case, options)
    results: dict[str, ModeResult] = {}
    for mode in modes:
        if mode not in target.modes:
            continue
        if mode == "interpret":
            results[mode] = run.interpret()
        elif mode == "compiled":
            from fuzzkern.execution.compiled import run_compiled

            with stage("compiled"):
                results[mode] = run_compiled(run)
        else:  # pragma: no cover - validated by the CLI
            raise ValueError(f"unknown mode {mode!r}")
    if not results:
        return Outcome(Verdict.UNSUPPORTED, f"target runs in none of the modes {modes}",
                       seconds=time.perf_counter() - start)
    outcome = outcome_of(target, results, options, start)
    if run.recorded is not None and run.recorded.coverage:
        outcome.coverage = run.recorded.coverage.to_json()
    return outcome


def outcome_of(target: Target, results: dict[str, ModeResult], options: Mapping[str, Any],
               start: float) -> Outcome:
    """The case's outcome from its modes' results (``start``: its ``time.perf_counter()``)."""
    verdict, reason = verdict_of(results)
    score = max((oracle.score(r.comparison) for r in results.values() if r.comparison), default=0.0)
    strict = bool(options.get("strict_accuracy")) or target.strict_accuracy
    return Outcome(verdict, reason, results, score=score, seconds=time.perf_counter() - start,
                   strict=strict)


#: at most this many value variants follow one case (:func:`run_variants`)
MOST_VARIANTS = 1000


def compile_cost(outcome: Outcome) -> float:
    """Seconds the compiled mode spent compiling (or loading from Triton's on-disk cache) for
    this case: 0 when every kernel variant it launched was already in memory."""
    compiled = outcome.modes.get("compiled")
    if compiled is None:
        return 0.0
    return float(compiled.detail.get("compile_seconds", 0) or 0)


def run_variants(target: Target, case: Case, options: Mapping[str, Any], seconds: float,
                 most: int = MOST_VARIANTS, each: float = 0.0,
                 **on_device: Any) -> dict[str, Any]:
    """Run value variants 1, 2, ... of ``case`` (:meth:`fuzzkern.case.model.Case.variant`: new
    input values, nothing a kernel specializes on changed, so nothing compiles) for about
    ``seconds``, stopping at the first that fails. Returns ``ran`` (variants that did not
    fail), ``seconds``, ``verdicts`` (of those) and ``failed`` (index and outcome) if one
    did. The parent's clock times each variant as a case of its own (a ``("variant", k)``
    event starts it), and a variant stopped there (hang, slow) or killing the worker is
    reported as variant ``k``'s outcome. In compiled mode alone they run in batches
    (:mod:`fuzzkern.execution.batch`), with the same results; ``each`` (seconds the case itself
    took, compiling aside) keeps the first batch within ``seconds``; ``on_device``
    (``device=``, ``name=``, ``sync=``) runs those batches on another torch device than the
    current GPU.

    Why: a compiled case whose kernels had to compile costs that compilation, 0.2-3 s, where
    the launch costs microseconds; spending about as long again on variants of it makes a
    compile-heavy target test many more inputs per second while new shapes and layouts (new
    compilations) still get half the time or more."""
    from fuzzkern.execution import progress
    from fuzzkern.execution.batch import batchable, run_variant_batches

    if batchable(target, options):
        def make_run(c: Case, base: dict[str, torch.Tensor] | None) -> _Run:
            return _Run(target, c, options, base)

        return run_variant_batches(
            target, case, options, seconds, most, make_run,
            lambda results, began: outcome_of(target, results, options, began), each=each,
            **on_device)
    start = time.perf_counter()
    ran = 0
    verdicts: dict[str, int] = {}
    out: dict[str, Any] = {}
    for k in range(1, most + 1):
        if time.perf_counter() - start >= seconds:
            break
        progress.notify("variant", k)
        outcome = run_case(target, case.variant(k), options)
        if outcome.failed:
            out["failed"] = {"index": k, "outcome": outcome.to_json()}
            break
        ran += 1
        verdicts[outcome.verdict] = verdicts.get(outcome.verdict, 0) + 1
    out.update(ran=ran, seconds=round(time.perf_counter() - start, 6), verdicts=verdicts)
    return out


def warm(refs: Sequence[str], options: Mapping[str, Any]) -> dict[str, Any]:
    """A worker's start-up work, done before its first case is timed
    (:meth:`fuzzkern.execution.pool.WorkerPool.warm`): the targets' modules imported and, for
    compiled mode on a GPU, CUDA's context and Triton's driver started. Best effort: a target
    that does not load says so in its first case, as without a warm-up."""
    loaded = 0
    with assumed_gpu(options.get("assume_gpu")):
        for ref in refs:
            try:
                _target(ref)
                loaded += 1
            except Exception:
                pass
    cuda = False
    if "compiled" in tuple(options.get("modes") or ()) and torch.cuda.is_available():
        try:
            import triton

            torch.empty(1, device="cuda").add_(1)
            torch.cuda.synchronize()
            triton.runtime.driver.active.get_current_device()
            cuda = True
        except Exception:  # the first case meets the same problem and reports it
            pass
    return {"warm": True, "loaded": loaded, "cuda": cuda}


def run_case_json(ref: str, case_json: Mapping[str, Any], options: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """Run one case; with ``options["variants"]`` (``{"share": F, "until": T}``) and a case
    that passed after compiling for C seconds, also its value variants for ``F * C`` seconds
    (never past the ``time.monotonic()`` instant ``T``), in the same round trip."""
    with stage("decode"), assumed_gpu(options.get("assume_gpu")):
        target = _target(ref)
        case = Case.from_json(case_json)
    CLAIMS.clear()
    outcome = run_case(target, case, options)
    sent = recheck.transcript(CLAIMS)  # the case's own, before any variant's
    CLAIMS.clear()
    plan = options.get("variants")
    if plan and not outcome.failed:
        seconds = float(plan.get("share", 0)) * compile_cost(outcome)
        until = plan.get("until")
        if until is not None:
            seconds = min(seconds, float(until) - time.monotonic())
        if seconds > 0:
            outcome.variants = run_variants(
                target, case, options, seconds, int(plan.get("most", MOST_VARIANTS)),
                each=max(0.0, outcome.seconds - compile_cost(outcome)))
    with stage("encode"):
        out = outcome.to_json()
        if outcome.coverage:  # a measurement, sent alongside (never in a corpus entry)
            out["coverage"] = outcome.coverage
        out["transcript"] = sent
        return out
