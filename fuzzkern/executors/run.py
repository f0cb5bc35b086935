"""Running one case inside a worker: materialize, reference, each mode, compare, verdict.

This is the worker-side half of the pipeline; the parent only ever sees the resulting
:class:`~fuzzkern.outcome.Outcome`. Order of work per case:

1. build the case's CPU tensors from their recipe (exact strides, offsets, gap sentinels);
2. run the launcher in each mode on its own copy of those tensors (layouts preserved);
3. run the torch reference on float64 copies (only when a mode produced outputs);
4. compare each mode's outputs with the reference and derive the verdict.

Hygiene checks ride along (each can be turned off with ``options["checks"]``, see
:data:`DEFAULT_CHECKS`): the interpreter's bounds and view checkers, poisoned ``torch.empty``
memory (unwritten outputs), input storages compared bytewise before and after each launch
(mutated inputs, writes into gaps), red zones around compiled-mode storages, and optionally a
repeated compiled run (``options["repeat_compiled"]``) for nondeterminism.
"""

from __future__ import annotations

import functools
import re
import time
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from fuzzkern import loader, oracle
from fuzzkern.case import Case, materialize, rebuild_like
from fuzzkern.conditioning import Evidence
from fuzzkern.executors import hygiene
from fuzzkern.executors.poison import (
    Allocations,
    is_poison,
    poisoned_allocations,
    unwritten_counts,
)
from fuzzkern.outcome import Comparison, ModeResult, Outcome, Verdict
from fuzzkern.target import Target, Tolerance, call_with

#: dtypes the Triton interpreter cannot compute with (bf16 arithmetic runs on raw bit patterns,
#: fp8 conversions round wrongly; notes/triton-internals.md §3.1): interpreted runs get exact
#: float32 copies instead, compared with the original dtype's tolerance.
INTERPRETER_SUBSTITUTES = {
    torch.bfloat16: torch.float32,
    torch.float8_e4m3fn: torch.float32,
    torch.float8_e5m2: torch.float32,
}
for _name in ("float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        INTERPRETER_SUBSTITUTES[getattr(torch, _name)] = torch.float32

#: Hygiene checks, on by default but ``view_strict``; a target's ``checks=`` and then
#: ``options["checks"]`` override any of them: ``bounds`` (interpreter: every access inside an
#: argument's storage), ``view`` (interpreter: inside the view passed, not a gap; a *load*
#: outside the view counts only when an output is also wrong: a kernel that uses a re-strided
#: view as a base pointer and reads its storage correctly is not reported), ``view_strict``
#: (with ``view``: every load outside the view is ``oob-view``, whatever the outputs say),
#: ``poison`` (``torch.empty`` memory poisoned, unwritten outputs told apart), ``mutation``
#: (inputs compared bytewise before/after each launch; gaps of every input too), ``redzone``
#: (compiled: guard bands around every storage).
DEFAULT_CHECKS = {"bounds": True, "view": True, "view_strict": False, "poison": True,
                  "mutation": True, "redzone": True}


def checks_of(options: Mapping[str, Any], target: Any = None) -> dict[str, bool]:
    """:data:`DEFAULT_CHECKS` updated with ``target.checks`` and then ``options["checks"]``
    (unknown names are errors)."""
    given = dict(getattr(target, "checks", None) or {})
    given.update(options.get("checks") or {})
    unknown = sorted(set(given) - set(DEFAULT_CHECKS))
    if unknown:
        raise ValueError(f"Expected check names among {sorted(DEFAULT_CHECKS)} but got "
                         f"{unknown}.")
    return {k: bool(given.get(k, v)) for k, v in DEFAULT_CHECKS.items()}


_OVERFLOW = re.compile(r"(u?int\d+) overflow detected for operation (\w+)")


def overflow_of(text: str) -> dict[str, str] | None:
    """The dtype and operation of Triton's integer overflow assertion in ``text``, if any."""
    m = _OVERFLOW.search(text)
    return {"dtype": m.group(1), "operation": m.group(2)} if m else None


_targets: dict[str, Target] = {}


def _target(ref: str) -> Target:
    if ref not in _targets:
        _targets[ref] = loader.load_ref(ref)
    return _targets[ref]


def _short_tb(e: BaseException, limit: int = 12) -> str:
    return "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-limit))


def _as_outputs(result: Any) -> tuple[Any, ...] | None:
    if result is None:
        return None
    if isinstance(result, torch.Tensor):
        return (result,)
    if isinstance(result, (tuple, list)):
        return tuple(result)
    return (result,)


def _storage_labels(tensors: Mapping[str, torch.Tensor]) -> dict[int, str]:
    return {t.untyped_storage().data_ptr(): name for name, t in tensors.items()}


def _is_precondition(target: Target, e: BaseException) -> bool:
    return bool(target.preconditions) and isinstance(e, target.preconditions)


def _unwrap(e: BaseException) -> BaseException:
    """The user's exception inside Triton's InterpreterError wrapper, when there is one."""
    seen = 0
    while seen < 5 and e.__cause__ is not None and type(e).__name__ == "InterpreterError":
        e = e.__cause__
        seen += 1
    return e


class _Run:
    def __init__(self, target: Target, case: Case, options: Mapping[str, Any]) -> None:
        self.target = target
        self.case = case
        self.options = options
        storages = options.get("storages")
        if storages:  # a corpus replay: the exact stored bytes, not the value recipe
            from fuzzkern.corpus import tensors_from_storages

            self.base = tensors_from_storages(storages, case)
        else:
            self.base = {name: materialize(tc) for name, tc in case.tensors.items()}
        self.scalars = case.scalars
        self._expected: tuple[Any, ...] | None = None
        self._magnitude: tuple[Any, ...] | None = None
        self._reference_error: BaseException | None = None
        self._reference_done = False
        self._native: tuple[Any, ...] | None = None
        self._native_done = False
        self._evidence: Evidence | None = None
        #: whether the interpreter's outputs mismatched (None: not compared, or not yet)
        self._interpret_mismatch: bool | None = None

    # -- reference ---------------------------------------------------------------------------
    def _reference_inputs(self, absolute: bool = False) -> dict[str, Any]:
        values: dict[str, Any] = dict(self.scalars)
        for name, t in self.base.items():
            c = oracle.upcast_for_reference(t) if self.target.upcast else rebuild_like(t)
            if absolute and (c.is_floating_point() or c.is_complex()):
                c = c.abs()
            values[name] = c
        return values

    def reference(self) -> tuple[Any, ...] | None:
        if not self._reference_done:
            self._reference_done = True
            try:
                with torch.no_grad():
                    self._expected = _as_outputs(call_with(self.target.reference,
                                                           self._reference_inputs()))
            except Exception as e:
                self._reference_error = e
                return None
            if self.target.reduction is not None:
                try:
                    with torch.no_grad():
                        self._magnitude = _as_outputs(
                            call_with(self.target.reference, self._reference_inputs(True))
                        )
                except Exception:
                    self._magnitude = None
        return self._expected

    def native_reference(self) -> tuple[Any, ...] | None:
        """The reference on the inputs' own dtypes (CPU), as a torch user computes it: used only
        for elements that fail against the float64 reference (oracle rule 7,
        :func:`fuzzkern.oracle.accept_native`). None when it raises."""
        if not self._native_done:
            self._native_done = True
            values: dict[str, Any] = dict(self.scalars)
            values.update({n: rebuild_like(t, "cpu") for n, t in self.base.items()})
            try:
                with torch.no_grad():
                    self._native = _as_outputs(call_with(self.target.reference, values))
            except Exception:
                self._native = None
        return self._native

    def evidence(self) -> Evidence | None:
        """What the reference says about this input's conditioning (oracle rules 8 and 9),
        computed lazily by the oracle only for a comparison that fails the plain tolerance."""
        if self._evidence is None and self.target.upcast and self._expected is not None:
            values = self._reference_inputs()
            dtypes: dict[str, torch.dtype] = {n: t.dtype for n, t in self.base.items()}
            for name, v in self.scalars.items():
                if isinstance(v, float):
                    dtypes[name] = torch.float32  # a Python float reaches a kernel as fp32
            reference = self.target.reference

            def call(v: Mapping[str, Any]) -> tuple[Any, ...] | None:
                return _as_outputs(call_with(reference, v))

            reduction = (self.case.dims.get(self.target.reduction)
                         if self.target.reduction else None)
            self._evidence = Evidence(call, values, dtypes, native=self.native_reference,
                                      reduction=reduction, dims=self.case.dims,
                                      expected=self._expected)
        return self._evidence

    def output_names(self) -> tuple[str | None, ...] | None:
        if self.target.inplace_names:
            return self.target.inplace_names
        return tuple(self.target.output_names) if self.target.output_names else None

    # -- modes -------------------------------------------------------------------------------
    def interpret(self) -> ModeResult:
        from fuzzkern.executors.interp_fidelity import interpreter_limitation
        from fuzzkern.executors.interpreter import (
            OOBAccess,
            OOBView,
            current_program_id,
            interpreter_mode,
            kernel_location,
        )

        substituted: dict[str, str] = {}
        tensors: dict[str, torch.Tensor] = {}
        for name, t in self.base.items():
            sub = INTERPRETER_SUBSTITUTES.get(t.dtype)
            c = rebuild_like(t)
            if sub is not None:
                substituted[name] = str(t.dtype).replace("torch.", "")
                c = _convert_keep_layout(c, sub)
            tensors[name] = c
        detail: dict[str, Any] = {}
        if substituted:
            detail["substituted"] = substituted
        checks = checks_of(self.options, self.target)
        before = ({name: hygiene.storage_bytes(t).clone() for name, t in tensors.items()}
                  if checks["mutation"] else None)
        start = time.perf_counter()
        try:
            # numpy warns about overflow/NaN in kernels' arithmetic; values are judged by the
            # oracle, so the warnings are noise on the terminal
            with np.errstate(all="ignore"), \
                    poisoned_allocations(checks["poison"]) as allocations, \
                    interpreter_mode(
                        check_bounds=checks["bounds"],
                        check_views=checks["view"],
                        strict_views=checks["view_strict"],
                        debug=bool(self.options.get("debug", False)),
                        configs=dict(self.case.configs),
                        labels=_storage_labels(tensors),
                    ) as session:
                result = call_with(self.target.launcher, {**self.scalars, **tensors})
        except Exception as e:
            inner = _unwrap(e)
            if isinstance(inner, OOBAccess):
                detail["oob"] = _oob_detail(inner)
                at = f"\n  at {inner.location}" if getattr(inner, "location", None) else ""
                return ModeResult("interpret", "oob-view" if isinstance(inner, OOBView) else "oob",
                                  error=inner.describe() + at, detail=detail,
                                  seconds=time.perf_counter() - start)
            found = overflow_of(str(inner)) if isinstance(inner, AssertionError) else None
            if found is not None:
                x, y, z = current_program_id()
                overflow: dict[str, Any] = {**found, "program_id": [x, y, z]}
                location = kernel_location(inner.__traceback__)
                if location:
                    overflow["location"] = location
                detail["overflow"] = overflow
                return ModeResult("interpret", "overflow",
                                  error=f"{overflow['dtype']} overflow in {overflow['operation']} "
                                  f"at program ({x},{y},{z}) (debug mode's overflow check)"
                                  + (f"\n  at {location}" if location else ""),
                                  detail={**detail, "traceback": _short_tb(e)},
                                  seconds=time.perf_counter() - start)
            status = "error"
            if _is_precondition(self.target, inner) or _is_precondition(self.target, e):
                status = "precondition"
            elif interpreter_limitation(inner) or "not supported in interpreter" in str(e):
                # Triton's interpreter, not the kernel: never an error, shrunk or saved
                status = "unsupported"
            return ModeResult("interpret", status, error=f"{type(inner).__name__}: {inner}",
                              detail={**detail, "traceback": _short_tb(e)},
                              seconds=time.perf_counter() - start)
        seconds = time.perf_counter() - start
        if before is not None:
            self.storage_checks({n: (t, before[n], hygiene.storage_bytes(t))
                                 for n, t in tensors.items()}, detail)
        outputs = self._outputs(result, tensors)
        compared = self._compare("interpret", outputs, detail, seconds, substituted, allocations)
        return _judge_view_reads(compared, session)

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
        return _as_outputs(result)

    def _compare(self, mode: str, outputs: tuple[Any, ...] | None, detail: dict[str, Any],
                 seconds: float, substituted: Mapping[str, str],
                 allocations: Allocations | None = None,
                 allocated: set[int] | None = None) -> ModeResult:
        expected = self.reference()
        if expected is None:
            if self._reference_error is not None:
                e = self._reference_error
                return ModeResult(mode, "reference-error", error=f"{type(e).__name__}: {e}",
                                  detail={**detail, "traceback": _short_tb(e)}, seconds=seconds)
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
        tolerance = self.target.tolerance
        note = ""
        if substituted:
            # Compare at the precision of the dtype the user asked for, not the float32 stand-in.
            low = max(substituted.values(),
                      key=lambda n: oracle.default_tolerance(getattr(torch, n))[0])
            rtol, atol, _ = oracle.default_tolerance(getattr(torch, low))
            tolerance = Tolerance(
                rtol=tolerance.rtol if tolerance.rtol is not None else rtol,
                atol=tolerance.atol if tolerance.atol is not None else atol,
                equal_nan=tolerance.equal_nan,
            )
            note = f" ({low} run as float32 in the interpreter)"
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
        comparison.tolerance += note
        if not comparison.ok and allocations is not None and outputs is not None:
            if allocated is None:
                allocated = allocations.indices_of(outputs)
            unwritten = unwritten_counts(outputs, allocations, allocated)
            if unwritten:
                detail["unwritten"] = unwritten
                detail["unwritten_only"] = (comparison.structural is None
                                            and _only_unwritten(outputs, masks, allocated))
        status = "ok" if comparison.ok else "accuracy" if comparison.accuracy else "mismatch"
        return ModeResult(mode, status, comparison, detail=detail, seconds=seconds)


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


def _convert_keep_layout(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` as ``dtype`` with the same strides, offset and gaps (values converted exactly)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = t.as_strided((n,), (1,), 0).to(dtype)
    return flat.as_strided(t.shape, t.stride(), t.storage_offset())


def _oob_detail(e: Any) -> dict[str, Any]:
    out = {}
    for k in ("op", "program_id", "lane", "address", "n_bad", "argument", "distance_bytes",
              "distance_elements", "storage_index", "region", "view", "location"):
        v = getattr(e, k, None)
        if v is None and k in ("storage_index", "region", "view", "location"):
            continue
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


_MODE_STATUS_VERDICT = {
    "crash": Verdict.CRASH,
    "oob": Verdict.OOB,
    "oob-view": Verdict.OOB_VIEW,
    "overflow": Verdict.OVERFLOW,
    "error": Verdict.ERROR,
    "reference-error": Verdict.REFERENCE_ERROR,
    "precondition": Verdict.PRECONDITION,
    "unsupported": Verdict.UNSUPPORTED,
}


def _more(items: list[Any]) -> str:
    return f" (and {len(items) - 1} more)" if len(items) > 1 else ""


def verdict_of(results: Mapping[str, ModeResult]) -> tuple[str, str]:
    """Combine per-mode results into one verdict and a one-line reason.

    Most specific first: a located memory error (``oob``, ``oob-view``) or an integer overflow
    explains a crash or wrong values that come with it; then a device fault (``crash``; but
    ``compiled-only`` when the interpreter ran the case clean: alignment faults and the like,
    DESIGN decision 6), writes found outside the views after the launch (``oob-write``),
    exceptions (``interpreter-divergence`` when only the interpreter raised and the compiled
    kernel ran clean), a declared
    precondition; then, for launches that completed, a mutated input, nondeterminism, and
    finally the values: ``unwritten-output`` when every mismatching element was never written,
    else ``kernel-bug``, ``compiled-only`` or ``interpreter-divergence``. When only the
    interpreter mismatches but the compiled kernel passed only with compiled code's wider float32
    tolerance (``detail["approx_math"]``), both are off: ``kernel-bug``.
    """
    statuses = {m: r.status for m, r in results.items()}
    for status in ("oob", "oob-view", "overflow"):
        for mode, s in statuses.items():
            if s == status:
                return _MODE_STATUS_VERDICT[status], f"{mode}: {results[mode].error}"
    if statuses.get("compiled") == "crash" and statuses.get("interpret") == "ok":
        # A device fault (misaligned or illegal address) the interpreter did not reproduce:
        # alignment and the like are compiled-only by DESIGN decision 6.
        return (Verdict.COMPILED_ONLY,
                f"only the compiled kernel fails: {results['compiled'].error}")
    for mode, s in statuses.items():
        if s == "crash":
            return Verdict.CRASH, f"{mode}: {results[mode].error}"
    ran = {m: s for m, s in statuses.items() if s in ("ok", "mismatch", "accuracy")}
    for mode in ran:
        writes = results[mode].detail.get("oob_write")
        if writes:
            return Verdict.OOB_WRITE, f"{mode}: {writes[0]['text']}{_more(writes)}"
    compiled = results.get("compiled")
    if (statuses.get("interpret") == "error" and compiled is not None
            and compiled.status == "ok" and not compiled.detail.get("mutated")
            and not compiled.detail.get("nondeterministic")):
        # The compiled kernel ran clean and matched; the interpreter could not run it (e.g. a
        # construct it mishandles): a Triton interpreter defect, not the kernel's.
        return (Verdict.INTERPRETER_DIVERGENCE,
                f"only the interpreter fails: {results['interpret'].error}")
    for status in ("error", "reference-error"):
        for mode, s in statuses.items():
            if s == status:
                return _MODE_STATUS_VERDICT[status], f"{mode}: {results[mode].error}"
    if any(s == "precondition" for s in statuses.values()):
        mode = next(m for m, s in statuses.items() if s == "precondition")
        return Verdict.PRECONDITION, f"launcher rejected the input: {results[mode].error}"
    for mode in ran:
        mutated = results[mode].detail.get("mutated")
        if mutated:
            return Verdict.INPUT_MUTATED, f"{mode}: {mutated[0]['text']}{_more(mutated)}"
    for mode in ran:
        spread = results[mode].detail.get("nondeterministic")
        if spread:
            return Verdict.NONDETERMINISTIC, f"{mode}: {spread['text']}"
    if not ran:
        mode = next(iter(statuses))
        return Verdict.UNSUPPORTED, f"{mode}: {results[mode].error}"
    wrong = [m for m, s in ran.items() if s == "mismatch"]
    if not wrong:
        close = [m for m, s in ran.items() if s == "accuracy"]
        if close:
            c = results[close[0]].comparison
            why = c.explanation if c is not None and c.explanation else "beyond the bound"
            return (Verdict.ACCURACY,
                    f"{' and '.join(close)}: within {oracle.ACCURACY_FACTOR:g}x of what rounding "
                    f"at the inputs' precision explains; {why}")
        return Verdict.PASS, ""
    if all(results[m].detail.get("unwritten_only") for m in wrong):
        counts = results[wrong[0]].detail["unwritten"]
        what = ", ".join(f"{n} element{'' if n == 1 else 's'} of output {i}"
                         for i, n in counts.items())
        total = sum(int(n) for n in counts.values())
        who = " and ".join(wrong)
        return (Verdict.UNWRITTEN_OUTPUT,
                f"{who}: every mismatching element was never written by the kernel ({what} "
                f"still {'holds' if total == 1 else 'hold'} the poison torch.empty was filled "
                "with)")
    unwritten = max(sum(int(n) for n in (results[m].detail.get("unwritten") or {}).values())
                    for m in wrong)
    note = (f" ({unwritten} of the mismatching elements were never written)"
            if unwritten else "")
    if len(wrong) == len(ran):
        who = " and ".join(wrong) + (" disagree" if len(wrong) > 1 else " disagrees")
        return Verdict.KERNEL_BUG, f"{who} with the reference{note}"
    if wrong == ["compiled"]:
        return (Verdict.COMPILED_ONLY,
                f"only the compiled kernel disagrees with the reference{note}")
    approx = results["compiled"].detail.get("approx_math") if "compiled" in ran else None
    if wrong == ["interpret"] and approx:
        # The compiled kernel is as far off as the interpreter shows, only within the float32
        # tolerance GPU code gets for approximate exp/div: the kernel's math, not Triton's
        # interpreter, is wrong.
        return (Verdict.KERNEL_BUG,
                f"interpret disagrees with the reference{note}; compiled is off too ({approx})")
    return (Verdict.INTERPRETER_DIVERGENCE,
            "only the interpreter disagrees with the reference (a Triton interpreter defect)")


def run_case(target: Target, case: Case, options: Mapping[str, Any]) -> Outcome:
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
            from fuzzkern.executors.compiled import run_compiled

            results[mode] = run_compiled(run)
        else:  # pragma: no cover - validated by the CLI
            raise ValueError(f"unknown mode {mode!r}")
    if not results:
        return Outcome(Verdict.UNSUPPORTED, f"target runs in none of the modes {modes}",
                       seconds=time.perf_counter() - start)
    verdict, reason = verdict_of(results)
    score = max((oracle.score(r.comparison) for r in results.values() if r.comparison), default=0.0)
    strict = bool(options.get("strict_accuracy")) or target.strict_accuracy
    return Outcome(verdict, reason, results, score=score, seconds=time.perf_counter() - start,
                   strict=strict)


def run_case_json(ref: str, case_json: Mapping[str, Any], options: Mapping[str, Any]
                  ) -> dict[str, Any]:
    target = _target(ref)
    case = Case.from_json(case_json)
    return run_case(target, case, options).to_json()


def _judge_view_reads(result: ModeResult, session: Any) -> ModeResult:
    """The view rule for loads: a load outside the views passed (inside the storage) is
    ``oob-view`` only with evidence that it mattered, an output that disagrees with the
    reference; with the outputs right it is a base-pointer use, noted in the detail."""
    seen = getattr(session, "view_reads", None)
    if seen is None:
        return result
    err, count = seen
    text = err.describe() + (f"\n  at {err.location}" if getattr(err, "location", None) else "")
    if result.status == "mismatch":
        detail = {**result.detail, "oob": _oob_detail(err), "view_reads": count}
        why = result.comparison.summary() if result.comparison is not None else ""
        return ModeResult("interpret", "oob-view",
                          error=f"{text}\n  and an output is wrong ({count} load"
                          f"{'' if count == 1 else 's'} outside the view)"
                          + (f": {why.splitlines()[0]}" if why else ""),
                          detail=detail, seconds=result.seconds)
    result.detail["view_reads"] = {"loads": count, "first": text,
                                   "judged": "outputs right: base-pointer use, not reported"}
    return result
