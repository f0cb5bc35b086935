"""Value variants of a compiled case, run in batches.

After a compiled case that had to compile, the worker runs value variants of it
(:func:`fuzzkern.execution.runner.run_variants`): new input values, the same shapes, layouts,
dtypes and configs, so nothing compiles. One by one, a variant costs what a case costs (about
1-2 ms on an H200 host for the built-in kernels), almost all of it on the host: copies, checks,
the reference and the comparison around a launch of tens of microseconds. In compiled mode
alone (no interpreter in the same case) they run in batches instead:

1. the batch's inputs are made together, in one block of red zones copied to the device at
   once (:func:`fuzzkern.execution.compiled.place_variants`: the variants share their
   layouts, so one variant's guards and gap fills are repeated and each tensor's values
   written into every variant's storage at once from the blocks they are drawn in, see
   :meth:`fuzzkern.case.model.Case.variant`; the same bytes as materializing each variant);
2. each variant is launched as a case of its own (its ``torch.empty`` allocations poisoned
   and guarded, forced configs, debug, a sync), one after the other, their device memory kept;
   the scope of poisoned allocations and forced configs is entered once for the batch
   (:func:`fuzzkern.execution.compiled.launches`), each variant keeping the allocations its
   launch made;
3. the block and every other red zone of the batch come back to the host in one copy
   (:func:`fuzzkern.execution.compiled.fetch`); when the block came back as placed (one
   comparison) no input changed, else each variant's guards, gaps and inputs are checked on
   those bytes; when a chunk of the arena holds its poison everywhere but in its zones'
   storages (one more comparison, :meth:`fuzzkern.execution.hygiene.Arena.untouched`), the
   guards of the launchers' allocations carved from it are intact, else each is checked; the
   outputs are views of those bytes;
4. each variant's float64 reference runs, and the variants without a finding are compared
   together: their outputs stacked, one pass per output (:func:`fuzzkern.judge.oracle.
   passes`, the oracle's fast path's decision in torch operations), on the GPU where the
   outputs lie when they are many (the references go over in one copy), so that its cost
   does not grow with the outputs' size;
5. a variant that path cannot clear (a NaN or inf on one side only, an element outside its
   band, a raised exception) is judged alone by the whole oracle, exactly as
   :func:`fuzzkern.execution.runner.run_case` judges it; a variant with a finding (a changed
   guard, gap or input) runs again alone, since a stray write of another variant of the batch
   could have made it, and that run decides. So every outcome and verdict is the variant's
   own; the first failing variant (lowest index) ends the variants, as one by one.

The parent's clock times each variant as a case of its own: ``("variant", k)`` is reported
before variant ``k`` launches, again before its checks and reference when the batch's checks
have run for :data:`RETIME` seconds (and during a slow preparation), and again before it is
judged alone. A device fault in variant ``k`` leaves the CUDA context unusable: the variants
launched before it in the batch cannot be copied back, so they are not counted, and variant
``k``'s crash is the outcome; so with a variant the parent stops (a hang) or a worker that dies.

Batches start at :data:`FIRST_BATCH` variants and grow by :data:`GROWTH` to
:data:`MOST_BATCH`, within the time left; their inputs take at most half of
:data:`BATCH_BYTES`, and launches stop once inputs and allocations pass it. A batch has fixed
costs (the block's copies, the stacking for the comparison, about 0.1-0.3 ms on the CPU):
batches of 8, then up to 32 and 64, cost 5-20% less per variant than 4, 8, 16, 32 where a
case has 32-64 variants, as after most compilations (2026-12-02, 2-core VM, torch launchers).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from fuzzkern.case.model import Case
from fuzzkern.errors import text_of
from fuzzkern.execution.compiled import (
    Block,
    OnDevice,
    current_gpu,
    fetch,
    guard_bytes,
    launches,
    place_inputs,
    place_variants,
    run_on_device,
)
from fuzzkern.execution.launching import checks_of
from fuzzkern.execution.references import (
    Parity,
    alone_on_device,
    batched,
    parity_of,
    twin,
    use_device,
)
from fuzzkern.execution.stages import stage
from fuzzkern.judge import oracle
from fuzzkern.judge.outcome import ModeResult, Outcome, Verdict
from fuzzkern.target.declare import Target

#: variants in the first batch (a variant may be expensive: the first batch measures it, and
#: holds fewer when the case itself took long, see ``each``)
FIRST_BATCH = 8
#: variants in a batch at most
MOST_BATCH = 64
#: each batch holds up to this many times the variants of the one before
GROWTH = 4
#: bytes of red zones (inputs and allocations) a batch keeps on the device at most
BATCH_BYTES = 256 * 2**20
#: seconds after which the checks and references of a batch restart the parent's clock at the
#: variant they reach (so a batch of slow references is never one variant's hang)
RETIME = 0.5


def batchable(target: Target, options: Mapping[str, Any]) -> bool:
    """Whether the variants of a case with these options run in batches: compiled mode alone,
    no repeats, no compute-sanitizer, and not turned off (``options["variants"]["batch"]``)."""
    plan = options.get("variants") or {}
    modes = [m for m in (options.get("modes") or ("interpret",)) if m in target.modes]
    return (modes == ["compiled"] and bool(plan.get("batch", True))
            and int(options.get("repeat_compiled", 1) or 1) <= 1
            and not options.get("sanitize"))


#: builds the runner's per-case state for a case (``fuzzkern.execution.runner._Run``), given
#: its CPU tensors where they are made already (else None)
MakeRun = Callable[[Case, Any], Any]
#: the outcome of a case from its modes' results and its start
#: (``fuzzkern.execution.runner.outcome_of``)
OutcomeOf = Callable[[dict[str, ModeResult], float], Outcome]


def run_variant_batches(target: Target, case: Case, options: Mapping[str, Any], seconds: float,
                        most: int, make_run: MakeRun, outcome_of: OutcomeOf,
                        device: Any = None, on_device: Mapping[str, Any] | None = None,
                        each: float = 0.0) -> dict[str, Any]:
    """:func:`fuzzkern.execution.runner.run_variants` in batches (see the module doc), called
    by it: the same result (``ran``, ``seconds``, ``verdicts``, ``failed``), plus ``batches``.
    ``target``: the case's (its checks are the variants'). ``each``: what one variant is
    expected to cost (the case's own time, compiling aside; 0: unknown), so that the first
    batch stays within ``seconds``. ``device`` (the current GPU by default) and ``on_device``
    (:class:`~fuzzkern.execution.compiled.OnDevice`'s keywords) let the protocol run on the CPU
    with launchers written in torch."""
    start = time.perf_counter()
    out: dict[str, Any] = {}
    if device is None:
        if not torch.cuda.is_available():
            out.update(ran=0, seconds=0.0, verdicts={})
            return out
        device, kw = current_gpu()
        on_device = {**kw, **(on_device or {})}
    checks = checks_of(options, target)  # the variants': the same options and target
    parity = parity_of(target)
    counts = parity.counts()
    parity.fresh = True  # the first variant decided with a device reference is sampled
    ran = 0
    batches = 0
    verdicts: dict[str, int] = {}
    k = 1
    # a variant as slow as the case itself: no more of them than the time allows, at least one
    size = FIRST_BATCH if each <= 0 else max(1, min(FIRST_BATCH, int(seconds / each)))
    while k <= most:
        left = seconds - (time.perf_counter() - start)
        if left <= 0:
            break
        began = time.perf_counter()
        ks = list(range(k, min(most, k + size - 1) + 1))
        passed, failed, done, last = _batch(case, ks, make_run, outcome_of, device,
                                            on_device or {}, options, checks)
        batches += 1
        ran += passed
        if passed:
            verdicts[Verdict.PASS] = verdicts.get(Verdict.PASS, 0) + passed
        for verdict, n in done.items():
            verdicts[verdict] = verdicts.get(verdict, 0) + n
            ran += n
        if failed is not None:
            out["failed"] = failed
            break
        each = (time.perf_counter() - began) / (last - k + 1)
        k = last + 1
        left = seconds - (time.perf_counter() - start)
        size = max(1, min(MOST_BATCH, GROWTH * size, int(left / each) if each > 0 else MOST_BATCH))
    out.update(ran=ran, seconds=round(time.perf_counter() - start, 6), verdicts=verdicts,
               batches=batches)
    if parity.counts() != counts or parity.off is not None:
        # device references: how many decided, judged both ways, disagreed (and why off)
        out["parity"] = parity.since(counts)
    return out


def _batch(case: Case, ks: list[int], make_run: MakeRun, outcome_of: OutcomeOf, device: Any,
           on_device: Mapping[str, Any], options: Mapping[str, Any], checks: dict[str, bool]
           ) -> tuple[int, dict[str, Any] | None, dict[str, int], int]:
    """Run variants ``ks`` (or the first of them, up to :data:`BATCH_BYTES`) as one batch: how
    many passed on the fast path, the first failure as ``{"index", "outcome"}`` or None, counts
    of the other verdicts of variants before it, and the last variant run."""
    ks = ks[:max(1, BATCH_BYTES // 2 // max(1, _input_bytes(case)))]
    block, placed, ones = _place(case, ks, make_run, device, on_device, options, checks)
    launched, stopped, arena = _launch(ones, placed, block)
    fetched, unchanged, verified = _fetch(launched, block, arena)
    results = _decide_batch(ones, launched, fetched, unchanged, verified, options, outcome_of)
    return _tally(case, launched, results, stopped, make_run, outcome_of, device, on_device)


def _place(case: Case, ks: list[int], make_run: MakeRun, device: Any,
           on_device: Mapping[str, Any], options: Mapping[str, Any], checks: dict[str, bool]
           ) -> tuple[Block | None, list[Any], list[tuple[int, OnDevice]]]:
    """The batch's inputs in one block of red zones on the device (None: each variant places
    its own, as alone), each variant's placed inputs, and its :class:`OnDevice`."""
    from fuzzkern.execution import progress

    block: Block | None = None
    bases: list[Any] = [None] * len(ks)
    placed: list[Any] = [None] * len(ks)
    guard = guard_bytes(options, checks)
    if guard and not options.get("storages"):
        try:
            # the variants' inputs made together, in their block (no materializing one by one)
            with stage("materialize"):
                made = place_variants(case, ks, device, guard)
            if made is not None:
                block, bases, inputs = made
                placed = [(block, got) for got in inputs]
        except Exception:
            block = None  # made below, one by one
    told = time.perf_counter()
    ones: list[tuple[int, OnDevice]] = []
    for k, base in zip(ks, bases, strict=True):
        if time.perf_counter() - told > RETIME:
            progress.notify("variant", k)  # a slow preparation is not the variant before's
            told = time.perf_counter()
        ones.append((k, OnDevice(make_run(case.variant(k), base), device, checks=checks,
                                 **on_device)))
    if guard and block is None:
        try:
            with stage("copy"):
                block, inputs = place_inputs([one.run.base for _, one in ones], device, guard)
            placed = [(block, got) for got in inputs]
        except Exception:
            # the block could not be placed (out of memory, say): each variant copies its own
            # inputs, as alone, and fails there as alone if it must
            block = None
    if block is not None:
        _twins(block, [inputs for _, inputs in placed], [one for _, one in ones], options,
               device)
    return block, placed, ones


def _launch(ones: list[tuple[int, OnDevice]], placed: list[Any], block: Block | None
            ) -> tuple[list[tuple[int, OnDevice, float]], tuple[int, ModeResult, float] | None,
                       Any]:
    """Launch the variants one after the other (placed inputs: in one scope of poisoned
    allocations and forced configs) until one fails to launch or the red zones held pass
    :data:`BATCH_BYTES`: those launched, the one that failed (``stopped``), the arena."""
    from fuzzkern.execution import progress

    launched: list[tuple[int, OnDevice, float]] = []
    stopped: tuple[int, ModeResult, float] | None = None
    held = block.device.numel() if block is not None else 0
    arena = None
    with launches([one for _, one in ones]) if block is not None else \
            contextlib.nullcontext() as record:
        arena = record.arena if record is not None else None
        for (k, one), where in zip(ones, placed, strict=True):
            progress.notify("variant", k)
            began = time.perf_counter()
            failure = one.launch(where)
            if failure is not None:
                stopped = (k, failure, began)
                break
            launched.append((k, one, began))
            held += sum(z.alloc.numel() for z in one.allocations.zones)
            if held > BATCH_BYTES:
                break
    if stopped is not None and stopped[1].detail.get("poisoned"):
        launched.clear()  # the context is unusable: nothing launched before can be copied back
    return launched, stopped, arena


def _fetch(launched: list[tuple[int, OnDevice, float]], block: Block | None, arena: Any
           ) -> tuple[Any, bool, set[int]]:
    """Every red zone of the launched variants copied back in one transfer, whether the block
    is unchanged, and the zones whose guards the arena's check verified at once (None fetched:
    each variant copies its own zones back, and fails alone if it must)."""
    unchanged = False
    verified: set[int] = set()
    try:
        with stage("copy"):
            fetched = fetch([z for _, one, _ in launched for z in one.allocations.zones],
                            block if launched else None, arena if launched else None)
        with stage("checks"):
            unchanged = block is not None and block.unchanged()
            # the guards of the launchers' allocations, all at once (a chunk of the arena
            # with a changed guard leaves its zones to each variant's own checks)
            if arena is not None and launched:
                verified = arena.untouched(fetched)
    except Exception:
        fetched = None
    return fetched, unchanged, verified


def _decide_batch(ones: list[tuple[int, OnDevice]], launched: list[tuple[int, OnDevice, float]],
                  fetched: Any, unchanged: bool, verified: set[int],
                  options: Mapping[str, Any], outcome_of: OutcomeOf
                  ) -> dict[int, ModeResult | None]:
    """Each launched variant's checks settled and, where they found nothing, its output
    judged with the others' by the batched oracle (references on the device where the target
    has them, :mod:`fuzzkern.execution.references`): variant -> its failing result, or None
    where it passed on the fast path (absent: judged alone afterwards)."""
    from fuzzkern.execution import progress

    results: dict[int, ModeResult | None] = {}
    pending: list[_Pending] = []
    parity = parity_of(ones[0][1].run.target)
    told = time.perf_counter()
    with torch.no_grad():
        runs = [one.run for _, one, _ in launched if one.run.device_base is not None]
        if runs and parity.stacked is not False and parity.off is None \
                and not options.get("flush_subnormals"):
            with stage("reference"):  # the batch's device references in one call
                parity.stacked = batched(runs)
        if runs and parity.stacked is False and not alone_on_device(runs[0], options):
            for run in runs:  # small inputs, one reference each: the CPU's, as before
                run.device_base = None
        for k, one, _ in launched:
            if time.perf_counter() - told > RETIME:
                # a slow batch: its checks and reference are timed as the variant's own
                progress.notify("variant", k)
                told = time.perf_counter()
            failure = one.settle(fetched, unchanged, outputs=False, verified=verified)
            if failure is not None:
                results[k] = failure
                continue
            if one.findings() or one.outs is None:
                continue  # judged alone below
            with stage("reference"):
                got = _expected(k, one, parity)
            if got is not None:
                pending.append(got)
        if pending:
            _decide_or_fall_back(pending, results, parity, outcome_of)
    return results


def _decide_or_fall_back(pending: list[_Pending], results: dict[int, ModeResult | None],
                         parity: Parity, outcome_of: OutcomeOf) -> None:
    """:func:`_decide`; where the device path fails, the batch decided as before it, with the
    CPU's references (and the target's device references off, with why)."""
    try:
        _decide(pending, results, parity, outcome_of)
    except Exception as e:
        if not any(p.device for p in pending):
            raise
        parity.off = parity.off or f"the batch's device references failed: {_said(e)}"
        for p in pending:
            results.pop(p.k, None)
        cpu = [_Pending(p.k, p.one, exp, mag, False)
               for p, (exp, mag) in zip(pending, _cpu_refs(pending), strict=True)
               if exp is not None]
        for p, ok in zip(cpu, _passes(cpu, [(p.expected, p.magnitude) for p in cpu]),
                         strict=True):
            if ok:
                results[p.k] = None


def _tally(case: Case, launched: list[tuple[int, OnDevice, float]],
           results: dict[int, ModeResult | None], stopped: tuple[int, ModeResult, float] | None,
           make_run: MakeRun, outcome_of: OutcomeOf, device: Any, on_device: Mapping[str, Any]
           ) -> tuple[int, dict[str, Any] | None, dict[str, int], int]:
    """What the batch gives :func:`_batch`'s caller: variants the fast path did not clear are
    judged alone (one with a finding run again alone: another variant's stray write could have
    made it), up to the first failure."""
    from fuzzkern.execution import progress

    passed = 0
    others: dict[str, int] = {}
    for k, one, began in launched:
        if k in results and results[k] is None:
            passed += 1
            continue
        progress.notify("variant", k)
        mode = results.get(k)
        if mode is None and one.findings():
            # a finding in a batch may come from another variant's stray write (its zones
            # lie near the others'): the variant runs again alone, and that run decides
            began = time.perf_counter()
            mode = run_on_device(make_run(case.variant(k), None), device, **on_device)
        outcome = outcome_of({"compiled": mode or one.judge()}, began)
        if outcome.failed:
            return passed, {"index": k, "outcome": outcome.to_json()}, others, k
        others[outcome.verdict] = others.get(outcome.verdict, 0) + 1
    if stopped is not None:
        k, mode, began = stopped
        outcome = outcome_of({"compiled": mode}, began)
        if outcome.failed:
            return passed, {"index": k, "outcome": outcome.to_json()}, others, k
        others[outcome.verdict] = others.get(outcome.verdict, 0) + 1
        return passed, None, others, k
    return passed, None, others, launched[-1][0]


def _twins(block: Block, placed: list[Any], ones: list[OnDevice], options: Mapping[str, Any],
           device: Any) -> None:
    """Where the batch's references run on the device (:func:`fuzzkern.execution.references.
    use_device`), give each variant its inputs there as placed, for its reference
    (:attr:`fuzzkern.execution.runner._Run.device_base`): views into one copy of the block,
    made before any launch (a launch may write into its inputs, in place or by mistake); a
    tensor outside the block (a plain copy of its own) copied alone. Anything that fails here
    (out of memory, say) leaves the batch to the CPU's references, and the target too, with
    the reason said once (``Parity.off``)."""
    target = ones[0].run.target
    parity = parity_of(target)
    try:
        if not use_device(target, options, device):
            return
        with stage("reference"):
            copy = block.device.clone()
            bases = [{name: twin(view, block.device, copy) if name in inputs.zones
                      else view.clone() for name, view in inputs.views.items()}
                     for inputs in placed]
    except Exception as e:
        parity.off = parity.off or ("the inputs could not be copied for the device's "
                                    f"references: {_said(e)}")
        return
    for one, base in zip(ones, bases, strict=True):
        one.run.device_base = base


def _said(e: BaseException) -> str:
    """An exception in one line, for :attr:`fuzzkern.execution.references.Parity.off`."""
    text = text_of(e)
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:200]


@dataclass
class _Pending:
    """A variant to decide on the batch's fast path: its reference (and magnitude), and
    whether they were computed on the device."""

    k: int
    one: OnDevice
    expected: tuple[Any, ...]
    magnitude: tuple[Any, ...] | None
    device: bool


def _expected(k: int, one: OnDevice, parity: Parity) -> _Pending | None:
    """Variant ``k``'s reference for the fast path: on the device where its inputs were
    given there (and the target's device references are on), else the CPU's; None where the
    CPU's raised (the whole oracle then says so). A device reference that raises where the
    CPU's does not turns the device references off for the target."""
    run = one.run
    if run.device_base is not None and parity.off is None:
        got = run.device_reference()
        if got is not None:
            return _Pending(k, one, got[0], got[1], True)
        if run.reference() is not None:
            parity.off = (f"the reference raised on {one.device} but not on the CPU "
                          f"(variant {k})")
    expected = run.reference()
    return None if expected is None else _Pending(k, one, expected, run._magnitude, False)


def _passes(pending: list[_Pending], refs: list[tuple[Any, Any]]) -> list[bool]:
    """The batched oracle's fast path over ``pending`` with references ``refs`` (expected,
    magnitude) each: which pass for certain (:func:`fuzzkern.judge.oracle.passes`)."""
    if not pending:
        return []
    with stage("compare"):
        first = pending[0].one.run
        target = first.target
        reduction = (first.case.dims.get(target.reduction, 1) if target.reduction else 1)
        # the outputs where the kernel left them: many (or references on the device) are
        # checked on the device, fewer on the CPU as views of the bytes fetched back (no copy)
        return oracle.passes(
            [(p.one.outs or (), expected, magnitude)
             for p, (expected, magnitude) in zip(pending, refs, strict=True)],
            tolerance=target.tolerance, reduction_length=max(1, reduction), compiled=True,
            names=first.output_names(), host=lambda j: pending[j].one.host_outputs())


def _decide(pending: list[_Pending], results: dict[int, ModeResult | None], parity: Parity,
            outcome_of: OutcomeOf) -> None:
    """Decide ``pending`` on the fast path into ``results`` (None: passed; a variant left
    out is judged alone by the whole oracle), with the parity check of the device references
    (:mod:`fuzzkern.execution.references`): a sample judged with the CPU's reference too; on
    a disagreement, the CPU's decides every variant of the batch and the target's device
    references are off from then on."""
    decided = dict(enumerate(_passes(pending, [(p.expected, p.magnitude) for p in pending])))
    sampled = [j for j, p in enumerate(pending) if p.device and parity.sampled()]
    before = parity.disagreed
    for j, ok in zip(sampled, _cpu_passes([pending[j] for j in sampled]), strict=True):
        parity.judged += 1
        if ok == decided[j]:
            continue
        # the two fast paths differ: the whole oracle (CPU reference, as a variant the fast
        # path does not clear is judged) says whether the verdicts differ
        p = pending[j]
        mode = p.one.judge()
        del decided[j]
        if outcome_of({"compiled": mode}, time.perf_counter()).verdict == Verdict.PASS:
            results[p.k] = None  # both pass it
            continue
        parity.disagreed += 1
        why = (f"variant {p.k}: the verdict with the reference on {p.one.device} differed "
               f"from the CPU's ({'pass' if ok else mode.status} on the CPU)")
        parity.off = parity.off or why
        mode.detail["reference"] = why
        results[p.k] = None if ok else mode  # the CPU's verdict
    if parity.disagreed > before:
        # every other variant decided with a device reference: decided again with the CPU's
        again = [j for j in decided if pending[j].device]
        for j, ok in zip(again, _cpu_passes([pending[j] for j in again]), strict=True):
            decided[j] = ok
    for j, ok in decided.items():
        if ok:
            results[pending[j].k] = None


def _cpu_refs(pending: list[_Pending]) -> list[tuple[Any, Any]]:
    """Each variant's CPU reference and magnitude (None, None where it raises)."""
    with stage("reference"):
        return [(p.one.run.reference(), p.one.run._magnitude) for p in pending]


def _cpu_passes(pending: list[_Pending]) -> list[bool]:
    """:func:`_passes` of ``pending`` with their CPU references (False where it raises)."""
    refs = _cpu_refs(pending)
    ok = _passes([p for p, (e, _) in zip(pending, refs, strict=True) if e is not None],
                 [r for r in refs if r[0] is not None])
    it = iter(ok)
    return [next(it) if e is not None else False for e, _ in refs]


def _input_bytes(case: Case) -> int:
    """Bytes of one variant's input red zones (its tensors' storages and their guards)."""
    from fuzzkern.case.model import torch_dtype
    from fuzzkern.execution.hygiene import DEFAULT_GUARD_BYTES

    return sum(tc.storage_size * torch_dtype(tc.dtype).itemsize + 2 * DEFAULT_GUARD_BYTES
               for tc in case.tensors.values())
