"""Value variants in batches (fuzzkern.execution.batch), on the CPU: the compiled-mode protocol
takes any torch device, so launchers written in plain torch stand in for kernels (a value
bug, writes past the end and into gaps, a mutated input, non-finite values, integer outputs,
a reduction with its magnitude band, a declared precondition, an exception).

The contract: a batch says of every variant what running it alone says
(``run_on_device`` then ``verdict_of``, as :func:`fuzzkern.execution.runner.run_case`): the
same first failing variant with the same verdict and message, the same count of variants run
before it, the same verdicts for them. And the batched oracle (:func:`fuzzkern.judge.oracle.
passes`) clears a comparison only when :func:`fuzzkern.judge.oracle.compare` passes it.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.execution import batch
from fuzzkern.execution.batch import batchable
from fuzzkern.execution.compiled import fetch, run_on_device
from fuzzkern.execution.hygiene import place_in_red_zone
from fuzzkern.execution.runner import _Run, outcome_of, run_variants
from fuzzkern.judge import oracle
from fuzzkern.judge.outcome import Verdict
from fuzzkern.target.declare import Tolerance

CPU = torch.device("cpu")
OPTIONS = {"modes": ["compiled"]}


def _target(launcher, reference, dtype="float32", reduction=None, **kw):
    return fuzzkern.Target(launcher=launcher, reference=reference,
                           inputs=fks.inputs(x=fks.tensors(("N",), dtypes=[dtype])),
                           dims={"N": fks.sizes(max_value=64)}, reduction=reduction,
                           modes=("interpret", "compiled"), **kw)


def _case(n=24, dtype="float32", steps=1, distribution="normal", specials=False):
    x = TensorCase.build((n,), dtype, Layout((0,), (steps,), (0,), 1, ()),
                         Values(seed=11, distribution=distribution,
                                specials=((1, "nan"), (4, "inf"), (6, "-inf")) if specials else ()))
    return Case({"N": n}, {"x": x})


def _alone(target, case, k):
    """Variant ``k`` run by itself, as run_case runs it: its outcome."""
    import time

    start = time.perf_counter()
    run = _Run(target, case.variant(k), OPTIONS)
    return outcome_of(target, {"compiled": run_on_device(run, CPU)}, OPTIONS, start)


def _one_by_one(target, case, most):
    ran, verdicts = 0, {}
    for k in range(1, most + 1):
        outcome = _alone(target, case, k)
        if outcome.failed:
            return ran, verdicts, (k, outcome)
        ran += 1
        verdicts[outcome.verdict] = verdicts.get(outcome.verdict, 0) + 1
    return ran, verdicts, None


def _same_as_one_by_one(target, case, most=40):
    got = run_variants(target, case, OPTIONS, 1e9, most, device=CPU)
    ran, verdicts, failed = _one_by_one(target, case, most)
    assert got["ran"] == ran
    assert got["verdicts"] == verdicts
    if failed is None:
        assert "failed" not in got
    else:
        k, outcome = failed
        assert got["failed"]["index"] == k
        theirs = got["failed"]["outcome"]
        assert (theirs["verdict"], theirs["message"]) == (outcome.verdict, outcome.message)
    return got


# -- launchers that emulate kernels ----------------------------------------------------------


def _double(x):
    out = torch.empty_like(x)
    out.copy_(2 * x)
    return out


def _drops_large(x):  # wrong only where a value exceeds 2: a value bug some variants show
    out = torch.empty_like(x)
    out.copy_(torch.where(x > 2.0, 0.0, 2 * x))
    return out


def _past_the_end_if_large(x):
    out = _double(x)
    if bool((x > 2.0).any()):
        out.as_strided((x.numel() + 1,), (1,), out.storage_offset())[x.numel()] = 1.0
    return out


def _into_the_gap_if_large(x):
    if bool((x > 2.0).any()):
        x.as_strided((2,), (1,), x.storage_offset())[1] = 0.0
    return 2 * x


def _scribbles_if_large(x):
    out = 2 * x
    if bool((x > 2.0).any()):
        x.mul_(2)
    return out


def _refuses_large(x):
    if bool((x > 2.0).any()):
        raise ValueError("values above 2 are not supported")
    return _double(x)


def _raises_if_large(x):
    if bool((x > 2.5).any()):
        raise RuntimeError("bad launch")
    return _double(x)


def _sum_rows(x):
    out = torch.empty(1, dtype=x.dtype)
    out.copy_(x.to(torch.float32).sum().reshape(1).to(x.dtype))
    return out


def _sum_rows_drops_last(x):
    out = torch.empty(1, dtype=x.dtype)
    out.copy_(x[:-1].sum().reshape(1) if bool((x > 2.0).any()) else x.sum().reshape(1))
    return out


def _leaves_last_unwritten_if_large(x):
    out = torch.empty_like(x)
    n = x.numel() - 1 if bool((x > 2.0).any()) else x.numel()
    out[:n].copy_(2 * x[:n])
    return out


def _int_double(x):
    out = torch.empty_like(x)
    out.copy_(x * 2 + (1 if bool((x > 50).any()) else 0))
    return out


CORRECT = [
    (_double, lambda x: 2 * x, {}),
    (_sum_rows, lambda x: x.sum().reshape(1), {"reduction": "N"}),
]
BUGGY = [
    (_drops_large, lambda x: 2 * x, Verdict.KERNEL_BUG),
    (_past_the_end_if_large, lambda x: 2 * x, Verdict.OOB_WRITE),
    (_scribbles_if_large, lambda x: 2 * x, Verdict.INPUT_MUTATED),
    (_raises_if_large, lambda x: 2 * x, Verdict.ERROR),
    (_sum_rows_drops_last, lambda x: x.sum().reshape(1), Verdict.KERNEL_BUG),
    (_leaves_last_unwritten_if_large, lambda x: 2 * x, Verdict.UNWRITTEN_OUTPUT),
]


@pytest.mark.parametrize("launcher,reference,kw", CORRECT)
def test_a_correct_launcher_passes_every_variant_of_the_batches(launcher, reference, kw):
    got = _same_as_one_by_one(_target(launcher, reference, **kw), _case(), most=40)
    assert got["ran"] == 40 and got["verdicts"] == {Verdict.PASS: 40}
    # batches of 8 (FIRST_BATCH) and the 32 left (GROWTH: up to 4 times the one before)
    assert (batch.FIRST_BATCH, batch.GROWTH) == (8, 4)
    assert got["batches"] == 2


@pytest.mark.parametrize("launcher,reference,verdict", BUGGY)
def test_a_bug_some_variants_show_is_found_at_the_same_variant_with_the_same_verdict(
        launcher, reference, verdict):
    kw = {"reduction": "N"} if launcher is _sum_rows_drops_last else {}
    got = _same_as_one_by_one(_target(launcher, reference, **kw), _case(n=3), most=80)
    assert "failed" in got and got["failed"]["outcome"]["verdict"] == verdict
    # found after some variants passed: the bug needs values above 2, as intended
    assert got["ran"] >= 1


def test_writes_into_a_gap_of_a_strided_input_are_found_in_a_batch():
    target = _target(_into_the_gap_if_large, lambda x: 2 * x)
    got = _same_as_one_by_one(target, _case(n=3, steps=2), most=80)
    assert got["failed"]["outcome"]["verdict"] == Verdict.OOB_WRITE


def test_a_declared_precondition_is_counted_not_failed_and_the_batch_goes_on():
    target = _target(_refuses_large, lambda x: 2 * x, preconditions=(ValueError,))
    got = _same_as_one_by_one(target, _case(), most=40)
    assert "failed" not in got and got["ran"] == 40
    assert got["verdicts"][Verdict.PRECONDITION] >= 1 and got["verdicts"][Verdict.PASS] >= 1


def _faults_if_large(x):
    if bool((x > 2.0).any()):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return _double(x)


def test_a_device_fault_ends_the_batch_with_the_same_crash():
    """A device fault leaves a CUDA context unusable: the variants launched before it in the
    same batch cannot be copied back, so the batch counts fewer of them than one by one does,
    and reports the same crash of the same variant."""
    target = _target(_faults_if_large, lambda x: 2 * x)
    case = _case(n=3)
    got = run_variants(target, case, OPTIONS, 1e9, 80, device=CPU)
    ran, _, (k, outcome) = _one_by_one(target, case, 80)
    assert got["failed"]["index"] == k
    assert got["failed"]["outcome"]["verdict"] == outcome.verdict == Verdict.CRASH
    assert got["failed"]["outcome"]["modes"]["compiled"]["detail"]["poisoned"] is True
    assert ran >= 1 and got["ran"] <= ran
    # whole batches before the fault's batch were counted: 4, 8, 16, ... variants
    assert got["ran"] in {0, 4, 12, 28, 60}


def test_non_finite_values_are_judged_by_the_whole_oracle():
    # NaN and inf in the inputs: 2*x keeps them where the reference has them (rule 4, 5)
    got = _same_as_one_by_one(_target(_double, lambda x: 2 * x), _case(specials=True), most=30)
    assert got["verdicts"] == {Verdict.PASS: 30}


def test_integer_outputs_compare_exactly_in_a_batch():
    target = _target(_int_double, lambda x: x * 2, dtype="int32")
    got = _same_as_one_by_one(target, _case(dtype="int32", distribution="uniform"), most=40)
    assert got["failed"]["outcome"]["verdict"] == Verdict.KERNEL_BUG


def test_the_parent_clock_restarts_at_each_launch_and_during_slow_checks(monkeypatch):
    from fuzzkern.execution import progress

    events = []
    monkeypatch.setattr(progress, "_channel", events.append)
    # (RETIME and the references' time are far apart: a loaded machine's pauses of tens of ms
    # neither add a retime to fast checks nor one before the first slow reference)
    monkeypatch.setattr(batch, "RETIME", 0.5)
    run_variants(_target(_double, lambda x: 2 * x), _case(), OPTIONS, 1e9, 4, device=CPU)
    assert events == [["variant", k] for k in (1, 2, 3, 4)]  # fast checks: launches only

    import time

    def slow(x):
        time.sleep(0.3)
        return 2 * x

    events.clear()
    run_variants(_target(_double, slow), _case(), OPTIONS, 1e9, 4, device=CPU)
    launches, checks = events[:4], events[4:]
    assert launches == [["variant", k] for k in (1, 2, 3, 4)]
    # the references take 0.3 s each: the clock restarts at a variant every 0.5 s or so
    assert checks and all(e[0] == "variant" and 2 <= e[1] <= 4 for e in checks)


def test_batches_never_hold_more_than_the_byte_limit(monkeypatch):
    zone = 2 * 4096 + 24 * 4  # one variant's input (or output): 24 floats between two guards
    monkeypatch.setattr(batch, "BATCH_BYTES", 5 * zone)
    got = _same_as_one_by_one(_target(_double, lambda x: 2 * x), _case(), most=12)
    # the inputs of a batch take at most half the limit: batches of 2 variants (the first
    # would be 4), whose inputs and outputs stay within it
    assert got["ran"] == 12 and got["batches"] == 6
    # and launches stop once the inputs and the launchers' allocations so far pass it: with a
    # scratch allocation of 2048 floats per launch, after one variant each time
    got = _same_as_one_by_one(_target(_double_with_scratch, lambda x: 2 * x), _case(), most=12)
    assert got["ran"] == 12 and got["batches"] == 12


def test_the_first_batch_holds_no_more_variants_than_the_time_allows(monkeypatch):
    # a case that took 0.04 s (compiling aside), and 0.1 s for its variants: a first batch of
    # 2, not FIRST_BATCH
    import time

    def slow(x):
        time.sleep(0.04)
        return _double(x)

    sizes = []
    whole = batch._batch

    def recorded(case, ks, *args):
        sizes.append(len(ks))
        return whole(case, ks, *args)

    monkeypatch.setattr(batch, "_batch", recorded)
    target = _target(slow, lambda x: 2 * x)
    run_variants(target, _case(), OPTIONS, 0.1, 40, each=0.04, device=CPU)
    assert sizes[0] == 2 and sum(sizes) <= 3  # at most one more, in the time left
    # unknown cost: a first batch of FIRST_BATCH, whatever the time
    sizes.clear()
    got = run_variants(target, _case(), OPTIONS, 0.1, 40, device=CPU)
    assert sizes == [batch.FIRST_BATCH] and got["ran"] == batch.FIRST_BATCH
    # a case slower than the whole share: a first batch of one variant (then as measured)
    sizes.clear()
    run_variants(target, _case(), OPTIONS, 0.1, 40, each=5.0, device=CPU)
    assert sizes[0] == 1 and sum(sizes) <= 3


def _double_with_scratch(x):
    torch.empty(2048, device=x.device)
    return _double(x)


def test_only_compiled_mode_alone_runs_in_batches():
    target = _target(_double, lambda x: 2 * x)
    assert batchable(target, {"modes": ["compiled"]})
    assert not batchable(target, {"modes": ["interpret", "compiled"]})
    assert not batchable(target, {"modes": ["compiled"], "repeat_compiled": 3})
    assert not batchable(target, {"modes": ["compiled"], "sanitize": True})
    assert not batchable(target, {"modes": ["compiled"], "variants": {"batch": False}})


def test_fetch_brings_every_zone_back_in_one_copy_with_its_bytes():
    xs = [torch.arange(n, dtype=dt) for n, dt in ((3, torch.float32), (5, torch.uint8),
                                                    (2, torch.float64))]
    zones = [place_in_red_zone(x, CPU, 64, name=f"x{i}")[1] for i, x in enumerate(xs)]
    got = fetch(zones)
    for x, z in zip(xs, zones, strict=True):
        assert torch.equal(got[id(z)], z.alloc)
        assert got[id(z)].storage_offset() == 0  # viewable as any dtype
        assert torch.equal(z.view(got[id(z)]), x)


# -- the batched oracle against the whole one ------------------------------------------------

_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.bool]


@st.composite
def _comparisons(draw):
    dtype = draw(st.sampled_from(_DTYPES))
    n = draw(st.integers(0, 6))
    k = draw(st.integers(1, 6))
    specials = draw(st.booleans())
    floats = st.floats(allow_nan=specials, allow_infinity=specials, width=64,
                       min_value=None if specials else -1e6,
                       max_value=None if specials else 1e6)
    magnitude = dtype.is_floating_point and draw(st.booleans())
    items = []
    for _ in range(k):
        exp = torch.tensor(draw(st.lists(floats, min_size=n, max_size=n)),
                           dtype=torch.float64)
        noise = torch.tensor(draw(st.lists(st.sampled_from([0.0, 1e-7, 1e-3, 1.0, -2e-6]),
                                           min_size=n, max_size=n)), dtype=torch.float64)
        if dtype == torch.bool:
            out = (exp + noise) != 0
        elif dtype.is_floating_point:
            out = (exp * (1 + noise)).to(dtype)
        else:
            exp = exp.clamp(-1e6, 1e6).nan_to_num(0.0).trunc()
            out = (exp + noise.round()).to(dtype)
        mag = (exp.abs() * 3,) if magnitude else None
        items.append(((out,), (exp,), mag))
    return items, draw(st.integers(1, 64)), draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(_comparisons())
def test_the_batched_oracle_clears_only_what_compare_passes(drawn):
    items, r, compiled = drawn
    tolerance = Tolerance()
    clear = oracle.passes(items, tolerance=tolerance, reduction_length=r, compiled=compiled)
    for (outs, exp, mag), ok in zip(items, clear, strict=True):
        whole = oracle.compare(outs, exp, tolerance=tolerance, magnitude=mag,
                               reduction_length=r, compiled=compiled)
        if ok:
            assert whole.ok
        finite = all(bool(torch.isfinite(e.double()).all()) and
                     bool(torch.isfinite(o.double()).all()) for o, e in zip(outs, exp,
                                                                          strict=True))
        if whole.ok and finite and outs[0].dtype in (torch.float32, torch.float64):
            # all finite and representable: the fast path decides what compare decides
            assert ok


def test_the_batched_oracle_groups_by_layout_and_leaves_structural_problems_undecided():
    a = torch.ones(3)
    items = [((a,), (a.double(),), None),
             ((a,), (torch.ones(4, dtype=torch.float64),), None),  # shape mismatch
             ((torch.ones(2, 2),), (torch.ones(2, 2, dtype=torch.float64),), None),
             ((a, a), (a.double(),), None),  # count mismatch
             ((a + 1,), (a.double(),), None)]  # wrong values
    assert oracle.passes(items) == [True, False, True, False, False]


def test_a_magnitude_that_does_not_broadcast_is_left_to_compare():
    a = torch.ones(3)
    assert oracle.passes([((a,), (a.double(),), (torch.ones(2),))]) == [False]


def test_the_magnitude_band_is_applied_per_variant():
    # an error of 1e-4 on a value of 1: outside float32's default band, inside the
    # accumulation band when the terms' magnitude is 1e4 (R = 64)
    out = torch.tensor([1.0 + 1e-4])
    exp = torch.tensor([1.0], dtype=torch.float64)
    big = (torch.tensor([1e4], dtype=torch.float64),)
    small = (torch.tensor([1.0], dtype=torch.float64),)
    got = oracle.passes([((out,), (exp,), big), ((out,), (exp,), small)], reduction_length=64)
    assert got == [True, False]
    assert [oracle.compare((out,), (exp,), magnitude=m, reduction_length=64).ok
            for m in (big, small)] == [True, False]


def test_a_finding_seen_only_in_the_batch_is_decided_by_the_variant_alone(monkeypatch):
    """The variants of a batch have their red zones side by side: a stray write of one could
    land in another's guard. So a variant with a finding runs again alone, and that run
    decides. Here variant 3's finding is injected in the batch only: alone it passes, and so
    does the batch; a real finding (a write past the end) still fails at the same variant as
    one by one."""
    target = _target(_double, lambda x: 2 * x)
    case = _case()

    class Stray(batch.OnDevice):
        def settle(self, fetched, inputs_unchanged=None, outputs=True, verified=None):
            failure = super().settle(fetched, inputs_unchanged, outputs, verified)
            if self.run.case == case.variant(3):
                self.detail.setdefault("oob_write", []).append(
                    {"argument": "x", "where": "past the end", "bytes": 1, "elements": [1],
                     "text": "1 element (1 byte) past the end of `x` changed"})
            return failure

    monkeypatch.setattr(batch, "OnDevice", Stray)
    got = run_variants(target, case, OPTIONS, 1e9, 8, device=CPU)
    assert got["ran"] == 8 and "failed" not in got
    got = _same_as_one_by_one(_target(_past_the_end_if_large, lambda x: 2 * x), case, most=8)
    assert got["failed"]["outcome"]["verdict"] == Verdict.OOB_WRITE


def _double_in_place(x):
    x.mul_(2)


def _double_in_place_wrong_if_large(x):
    x.copy_(torch.where(x > 2.0, 0.0, 2 * x))


@pytest.mark.parametrize("launcher", [_double_in_place, _double_in_place_wrong_if_large])
def test_in_place_outputs_are_read_from_the_shared_block(launcher):
    # the outputs are the inputs' views, in red zones that are slices of the batch's block
    target = _target(launcher, lambda x: 2 * x, inplace="x")
    got = _same_as_one_by_one(target, _case(steps=2), most=24)
    if launcher is _double_in_place:
        assert got["ran"] == 24 and "failed" not in got
    else:
        assert got["failed"]["outcome"]["verdict"] == Verdict.KERNEL_BUG


def test_inputs_of_several_cases_share_one_block_with_their_own_alignment():
    from fuzzkern.case.model import materialize
    from fuzzkern.execution.compiled import BLOCK_ALIGN, place_inputs
    from fuzzkern.execution.hygiene import as_bits

    def tc(shape, dtype, steps, offset, seed):
        return TensorCase.build(shape, dtype, Layout((0,), (steps,), (0,), offset, ()),
                                Values(seed=seed))

    bases = [{"a": materialize(tc((5,), "int8", 1, 3, i)),
              "b": materialize(tc((3,), "float64", 2, 1, i + 10))} for i in range(3)]
    block, placed = place_inputs(bases, CPU, 64)
    assert block is not None and len(block.zones) == 6
    start = block.device.data_ptr()
    for base, got in zip(bases, placed, strict=True):
        for name, t in base.items():
            view, zone = got.views[name], got.zones[name]
            assert view.stride() == t.stride() and view.shape == t.shape
            assert torch.equal(as_bits(view), as_bits(t))
            # as in an allocation of its own: the zone at a multiple of BLOCK_ALIGN, the view
            # the guard and its storage offset into it
            assert (zone.alloc.data_ptr() - start) % BLOCK_ALIGN == 0
            assert view.data_ptr() - zone.alloc.data_ptr() == 64 + t.storage_offset() * \
                t.element_size()
    fetched = fetch([], block)
    assert block.unchanged() and set(fetched) == {id(z) for z in block.zones}
    placed[1].views["b"].add_(1)
    fetch([], block)
    assert not block.unchanged()
    assert all(z.unchanged(fetch([], block)[id(z)]) == (z is not placed[1].zones["b"])
               for z in block.zones)


def _many_layouts():
    # (not a module-level Target: the pytest plugin would fuzz it)
    return fuzzkern.Target(
        launcher=lambda a, b, c, d: None, reference=lambda a, b, c, d: None,
        inputs=fks.inputs(
            a=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16", "float32", "float64",
                                              "float8_e4m3fn", "float8_e5m2"], expand=True),
            b=fks.tensors(("N",), dtypes=["int8", "uint8", "int16", "int32", "int64", "bool"],
                          expand=True),
            c=fks.tensors(("M", "N"), dtypes=["float32"], expand=True),
            d=fks.tensors((), dtypes=["float16"])),
        dims={"M": fks.sizes(min_value=0, max_value=9), "N": fks.sizes(max_value=300)})


@settings(max_examples=60, deadline=None)
@given(_many_layouts().cases(), st.sampled_from([(1,), (1, 2, 3), tuple(range(5, 45)),
                                       tuple(range(30, 100)), (3, 70, 71)]))
def test_variants_placed_together_are_byte_for_byte_those_made_one_by_one(case, ks):
    # place_variants builds a batch's block from the value blocks: the same bytes (guards,
    # gap fills, values, padding), zones at the same places and the same CPU inputs as
    # materializing each variant and placing them with place_inputs
    from fuzzkern.case.model import materialize
    from fuzzkern.execution.compiled import place_inputs, place_variants
    from fuzzkern.execution.hygiene import DEFAULT_GUARD_BYTES, storage_bytes

    made = place_variants(case, list(ks), CPU, DEFAULT_GUARD_BYTES)
    assert made is not None
    block, bases, placed = made
    alone = [{n: materialize(tc) for n, tc in case.variant(k).tensors.items()} for k in ks]
    theirs, their_placed = place_inputs(alone, CPU, DEFAULT_GUARD_BYTES)
    assert torch.equal(block.host, theirs.host)
    assert torch.equal(block.device, theirs.device)
    assert len(block.zones) == len(theirs.zones)
    for ours, other in zip(block.zones, theirs.zones, strict=True):
        assert (ours.name, ours.spec, ours.nbytes, ours.dtype) == \
            (other.name, other.spec, other.nbytes, other.dtype)
        assert ours.alloc.storage_offset() == other.alloc.storage_offset()
        assert torch.equal(ours.image, other.image) and torch.equal(ours.initial, other.initial)
    for base, one, got, other in zip(bases, alone, placed, their_placed, strict=True):
        assert list(base) == list(one)
        for name, t in one.items():
            b = base[name]
            assert (b.shape, b.stride(), b.storage_offset(), b.dtype) == \
                (t.shape, t.stride(), t.storage_offset(), t.dtype)
            assert torch.equal(storage_bytes(b), storage_bytes(t))  # gaps too
            assert b.untyped_storage().nbytes() == t.untyped_storage().nbytes()
            v, w = got.views[name], other.views[name]
            assert (v.shape, v.stride()) == (w.shape, w.stride())
            if v.numel():  # (an empty tensor's data_ptr is 0)
                assert v.data_ptr() - block.device.data_ptr() == \
                    w.data_ptr() - theirs.device.data_ptr()


def test_variants_are_placed_one_by_one_where_an_element_size_does_not_divide_the_guard():
    from fuzzkern.execution.compiled import place_variants

    assert place_variants(_case(), [1, 2], CPU, 4) is not None
    assert place_variants(_case(dtype="float64"), [1, 2], CPU, 4) is None


def test_a_block_that_cannot_be_placed_leaves_each_variant_to_copy_its_own(monkeypatch):
    # out of memory for a batch's block is not a variant's failure: each variant places its
    # own inputs, as alone, and gets the verdict it gets alone
    def no_room(*args, **kwargs):
        raise RuntimeError("CUDA out of memory (the batch's block)")

    monkeypatch.setattr(batch, "place_inputs", no_room)
    got = _same_as_one_by_one(_target(_double, lambda x: 2 * x), _case(), most=12)
    assert got["ran"] == 12 and "failed" not in got
    got = _same_as_one_by_one(_target(_past_the_end_if_large, lambda x: 2 * x), _case(),
                              most=12)
    assert got["failed"]["outcome"]["verdict"] == Verdict.OOB_WRITE


def test_the_launches_of_a_batch_share_one_scope_and_keep_their_own_allocations():
    # one scope of poisoned allocations for the batch (compiled.launches): each variant's
    # allocations and red zones are those its own launch made, and nothing else
    from fuzzkern.execution.compiled import OnDevice, launches, place_inputs

    def two_outputs(x):
        return _double(x), torch.empty(3, dtype=x.dtype).fill_(1.0)

    target = _target(two_outputs, lambda x: (2 * x, torch.ones(3)))
    case = _case()
    ones = [OnDevice(_Run(target, case.variant(k), OPTIONS), CPU) for k in (1, 2, 3)]
    block, inputs = place_inputs([one.run.base for one in ones], CPU, ones[0].guard)
    with launches(ones):
        for one, got in zip(ones, inputs, strict=True):
            assert one.launch((block, got)) is None
    spans = []
    for one in ones:
        assert len(one.allocations.zones) == 2 and len(one.allocations.tensors) == 2
        assert one.allocated == {0, 1}  # both outputs are its own allocations
        # each output lies in its own zone, found by address (zones share the arena's storage)
        assert [one.allocations.zone_of(o) for o in one.outs] == one.allocations.zones
        for z, o in zip(one.allocations.zones, one.outs, strict=True):
            assert o.data_ptr() - z.alloc.data_ptr() == z.guard
            spans.append((z.alloc.data_ptr(), z.alloc.data_ptr() + z.alloc.numel()))
        assert one.shared is None  # the scope is closed
    # six zones, side by side in one poisoned chunk, each at a multiple of 512 bytes
    spans.sort()
    assert len(spans) == 6 and all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert all((s - spans[0][0]) % 512 == 0 for s, _ in spans)
    assert len({z.alloc.untyped_storage().data_ptr() for one in ones
                for z in one.allocations.zones}) == 1
    # the factories are torch's own again
    assert not hasattr(torch.empty, "__wrapped__")


@pytest.mark.parametrize("where", ["nowhere", "storage", "guard before", "guard after",
                                   "padding", "other chunk's guard"])
def test_the_arena_verifies_its_zones_guards_only_where_nothing_else_changed(where):
    # one comparison per chunk of the arena stands for every zone's two guard checks: it
    # verifies a chunk's zones only when no byte outside their storages changed
    from fuzzkern.execution.compiled import fetch
    from fuzzkern.execution.hygiene import (
        DEFAULT_GUARD_BYTES,
        check_guards,
        poisoned_allocations,
    )

    with poisoned_allocations(True, guard_bytes=DEFAULT_GUARD_BYTES, arena=True) as record:
        floats = [torch.empty(5) for _ in range(3)]  # 20 bytes each: 492 bytes of padding
        ints = torch.empty(7, dtype=torch.int32)
    arena = record.arena
    assert arena is not None and len(arena.made) == 2
    for t in floats:
        t.fill_(1.0)
    ints.fill_(3)
    middle = arena.made[0].zones[1]
    alloc = middle.alloc
    g, n = middle.guard, middle.nbytes
    if where == "storage":
        floats[1][4] = 2.0
    elif where == "guard before":
        alloc[g - 1] = 0
    elif where == "guard after":
        alloc[g + n] = 0
    elif where == "padding":  # past the zone's allocation, before the next zone
        chunk = arena.made[0].bytes
        chunk[alloc.storage_offset() - chunk.storage_offset() + alloc.numel() + 3] = 0
    elif where == "other chunk's guard":
        arena.made[1].zones[0].alloc[0] = 0
    fetched = fetch(list(record.zones), None, arena)
    verified = arena.untouched(fetched)
    chunk_floats = {id(z) for z in arena.made[0].zones}
    chunk_ints = {id(z) for z in arena.made[1].zones}
    expected = {"nowhere": chunk_floats | chunk_ints, "storage": chunk_floats | chunk_ints,
                "guard before": chunk_ints, "guard after": chunk_ints,
                "padding": chunk_ints, "other chunk's guard": chunk_floats}[where]
    assert verified == expected
    # what it does not verify, each zone's own checks decide: the same findings as ever
    for z in record.zones:
        found = check_guards(z, fetched[id(z)])
        assert bool(found) == (where in ("guard before", "guard after") and z is middle
                               or where == "other chunk's guard" and z is arena.made[1].zones[0])
