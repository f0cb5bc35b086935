"""Memory-safety and hygiene checks, on the CPU.

- poison patterns and red zones (fuzzkern.execution.hygiene) on CPU storages, with
  deliberately corrupted guard and gap bytes;
- the interpreter's view checker (reads and writes in the gaps of strided views);
- the compiled-mode protocol (``run_on_device``) driven on the CPU by launchers written in
  plain torch, which emulate a kernel's bugs: a write past the end of an output, into a gap,
  into an input, an unwritten output, a nondeterministic result, a device assert;
- verdict ordering, check options, the sanitizer's probe, log parser and worker protocol.
"""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl
from click.testing import CliRunner
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, Layout, TensorCase, Values, materialize
from fuzzkern.execution import hygiene
from fuzzkern.execution.compiled import captured_output, run_on_device
from fuzzkern.execution.hygiene import (
    as_bits,
    is_poison,
    poison_bits,
    poisoned_allocations,
)
from fuzzkern.execution.interpreter.core import OOBAccess, OOBView, interpreter_mode
from fuzzkern.execution.launching import checks_of, overflow_of
from fuzzkern.execution.runner import _Run, run_case
from fuzzkern.judge.outcome import Comparison, ModeResult, Outcome, Verdict
from fuzzkern.judge.verdict import verdict_of

pytestmark = pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")


# -- poison ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_float_poison_is_a_nan_that_computed_nans_are_not(dtype):
    with poisoned_allocations():
        t = torch.empty(4, dtype=dtype)
    assert bool(torch.isnan(t).all())
    assert bool(is_poison(t).all())
    t[1] = float("nan")  # what a kernel computes: the canonical NaN
    t[2] = torch.tensor(0.0) / 0  # a NaN from arithmetic on numbers
    assert is_poison(t).tolist() == [True, False, False, True]
    # (arithmetic on the poison itself keeps its payload on CPUs, so a value computed from an
    # unwritten element may still count as unwritten: it is garbage from the same source)


def test_int_poison_and_strided_allocations_are_poisoned_whole():
    with poisoned_allocations() as allocs:
        t = torch.empty_strided((3,), (2,), dtype=torch.int32)
    assert t.untyped_storage().nbytes() == 20
    flat = t.as_strided((5,), (1,), 0)
    assert bool((flat == poison_bits(torch.int32)).all())
    assert allocs.indices_of((t, torch.zeros(1))) == {0}


def test_as_bits_compares_bitwise():
    a = torch.tensor([0.0, float("nan"), 1.0])
    b = torch.tensor([-0.0, float("nan"), 1.0])
    assert (as_bits(a) != as_bits(b)).tolist() == [True, False, False]


# -- coverage and red zones ----------------------------------------------------------------------


def _tc(shape, dtype="float32", **kw):
    nd = len(shape)
    layout = Layout(tuple(kw.get("perm", range(nd))), tuple(kw.get("steps", [1] * nd)),
                    tuple(kw.get("starts", [0] * nd)), kw.get("offset", 0),
                    tuple(kw.get("expanded", ())))
    return TensorCase.build(tuple(shape), dtype, layout, Values(kw.get("seed", 0)))


def test_view_coverage_of_stepped_offset_and_expanded_views():
    x = materialize(_tc((3,), steps=[2], offset=1))  # storage: gap x0 gap x1 gap x2
    cov = hygiene.coverage_of(x).view(-1, 4).all(dim=1)
    assert cov.tolist() == [False, True, False, True, False, True]
    e = materialize(_tc((2, 3), expanded=[0]))
    assert bool(hygiene.coverage_of(e).all())
    assert hygiene.coverage_of(torch.zeros(0)).numel() == 0


@pytest.mark.parametrize("spec", [dict(), dict(steps=[2, 1], offset=3), dict(perm=[1, 0]),
                                  dict(expanded=[1], starts=[1, 0])])
def test_red_zone_keeps_layout_values_and_alignment(spec):
    t = materialize(_tc((3, 4), "float16", **spec))
    view, zone = hygiene.place_in_red_zone(t, "cpu", 512, name="t")
    assert view.stride() == t.stride() and view.shape == t.shape
    assert view.data_ptr() % 16 == t.data_ptr() % 16 or t.storage_offset() % 8 == 0
    assert (view.data_ptr() - zone.alloc.data_ptr()) == 512 + 2 * t.storage_offset()
    assert torch.equal(as_bits(view), as_bits(t))
    assert hygiene.check_red_zone(zone) == []


def test_red_zone_image_says_unchanged_until_any_byte_changes():
    """``unchanged`` is one comparison with the bytes placed in the zone, standing for the
    guards', gaps' and elements' checks: true only while every byte is as placed (also on the
    CPU, where the allocation must not share memory with its image)."""
    t = materialize(_tc((3,), steps=[2], offset=1))
    for byte in (0, 64 + 4, 64 + 12, 64 + 24 + 3):  # a guard, a gap, an element, the far guard
        view, zone = hygiene.place_in_red_zone(t, "cpu", 64, name="x")
        assert zone.unchanged(zone.alloc.clone())
        zone.alloc[byte] ^= 1
        assert not zone.unchanged(zone.alloc.clone())
    fresh = hygiene.place_in_red_zone(t, "cpu", 64, name="x", initial=None)[1]
    assert not fresh.unchanged(fresh.alloc.clone())  # no image kept: the checks decide


def test_red_zone_guard_corrupted_after_the_end():
    t = torch.arange(6.0)
    view, zone = hygiene.place_in_red_zone(t, "cpu", 64, name="out")
    zone.alloc[64 + 24 + 5] = 0  # a byte of the 2nd element past the end
    (f,) = hygiene.check_red_zone(zone)
    assert (f["argument"], f["where"], f["bytes"], f["elements"]) == ("out", "past the end", 1,
                                                                     [2])
    assert "past the end of `out`" in f["text"]


def test_red_zone_guard_corrupted_before_the_start():
    view, zone = hygiene.place_in_red_zone(torch.arange(4, dtype=torch.int32), "cpu", 64,
                                           name="x")
    zone.alloc[60:64] = 7  # the element right before the first
    zone.alloc[0] = 1  # far before
    (f,) = hygiene.check_red_zone(zone)
    assert f["where"] == "before the start" and f["bytes"] == 5
    assert f["elements"][0] == -1 and -16 in f["elements"]


def test_red_zone_gap_write_and_intact_view_changes():
    t = materialize(_tc((3,), steps=[2]))  # x0 gap x1 gap x2
    view, zone = hygiene.place_in_red_zone(t, "cpu", 64, name="x")
    view.add_(1)  # changing the view itself is not a red-zone matter
    assert hygiene.check_red_zone(zone) == []
    zone.view().as_strided((5,), (1,), view.storage_offset())[3] = 0.0  # gap element 3
    (f,) = hygiene.check_red_zone(zone)
    assert (f["where"], f["elements"]) == ("gap", [3])


def test_red_zones_of_launcher_allocations():
    with poisoned_allocations(guard_bytes=256) as allocs:
        out = torch.empty(4)
        scratch = torch.empty_like(out)
    assert len(allocs.zones) == 2 and bool(is_poison(out).all())
    assert allocs.zone_of(out) is allocs.zones[0] and allocs.zone_of(scratch) is allocs.zones[1]
    out.as_strided((5,), (1,), out.storage_offset())[4] = 1.0  # one past the end
    (f,) = hygiene.check_guards(allocs.zones[0])
    assert f["elements"] == [1]
    assert hygiene.check_guards(allocs.zones[1]) == []


def test_red_zones_without_poison_still_guard():
    with poisoned_allocations(False, guard_bytes=64) as allocs:
        out = torch.empty(2)
    assert len(allocs.zones) == 1 and out.storage_offset() == 16


# -- mutation and determinism comparisons ------------------------------------------------------


def test_storage_changes_split_gaps_from_mutated_elements():
    t = materialize(_tc((3,), steps=[2]))
    before = hygiene.storage_bytes(t).clone()
    t[1] = 99.0
    t.as_strided((5,), (1,), 0)[1] = 5.0
    gaps, mutated = hygiene.storage_changes("x", t, before, hygiene.storage_bytes(t),
                                            inplace=False)
    assert [g["elements"] for g in gaps] == [[1]]
    assert mutated["count"] == 1 and mutated["first"][0]["index"] == [1]
    assert mutated["first"][0]["after"] == 99.0
    gaps2, mutated2 = hygiene.storage_changes("x", t, before, hygiene.storage_bytes(t),
                                              inplace=True)
    assert len(gaps2) == 1 and mutated2 is None


def test_changed_elements_count_expanded_dims_once():
    base = torch.zeros(3)
    before = base.expand(4, 3)
    after_base = base.clone()
    after_base[2] = 1.0
    f = hygiene.changed_elements(before, after_base.expand(4, 3), "b")
    assert f["count"] == 1 and f["first"][0]["index"] == [0, 2]


def test_spread_bitwise():
    a = (torch.tensor([1.0, float("nan"), 0.0]), 3)
    assert hygiene.spread(a, (a[0].clone(), 3)) is None
    b = (torch.tensor([1.5, float("nan"), -0.0]), 3)
    s = hygiene.spread(a, b)
    assert s["count"] == 2 and s["max_abs_diff"] == 0.5
    assert s["first"][0] == {"output": 0, "index": [0], "first": 1.0, "other": 1.5}
    c = (torch.tensor([1.0, 2.0, 0.0]), 3)
    assert math.isinf(hygiene.spread(a, c)["max_abs_diff"])
    assert hygiene.spread((torch.tensor([1, 2]),), (torch.tensor([1, 5]),))["max_abs_diff"] == 3


# -- the interpreter's view checker --------------------------------------------------------------


@triton.jit
def _copy(x_ptr, out_ptr, n, sx, so, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs * so, tl.load(x_ptr + offs * sx, mask=m), mask=m)


@triton.jit
def _atomic(acc_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + offs * s, 1.0, mask=offs < n)


def _view_error(*args, **kw) -> OOBView:
    with pytest.raises(OOBView) as info:
        with interpreter_mode():
            _copy[(1,)](*args, **kw)
    return info.value


def test_read_of_a_gap_is_reported_with_location():
    base = torch.arange(10.0)
    e = _view_error(base[::2], torch.empty(5), 5, 1, 1, BLOCK=8)
    assert isinstance(e, OOBAccess)  # a kind of out-of-bounds access
    assert (e.op, e.program_id, e.lane, e.parameter, e.storage_index, e.region) == (
        "load", (0, 0, 0), 1, "x_ptr", 1, "gap")
    assert e.n_bad == 2 and "shape (5,), strides (2,), offset 0" in e.view
    assert "is not part of the view passed to the kernel" in e.describe()
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is OOBView and e2.describe() == e.describe()


def test_write_into_a_gap_is_stopped_before_it_happens():
    base = torch.zeros(10)
    e = _view_error(torch.ones(5), base[::2], 5, 1, 1, BLOCK=8)
    assert (e.op, e.region, e.parameter) == ("store", "gap", "out_ptr")
    assert float(base.sum()) == 0.0


def test_before_and_after_the_view_inside_the_storage():
    base = torch.arange(10.0)
    e = _view_error(base[3:5], torch.empty(4), 3, 1, 1, BLOCK=4)
    assert (e.region, e.storage_index, e.lane) == ("after the view", 5, 2)
    e = _view_error(base[3:5], torch.empty(4), 2, -1, 1, BLOCK=4)
    assert (e.region, e.storage_index, e.lane) == ("before the view", 2, 1)


def test_correct_strided_accesses_and_base_tensors_pass():
    base = torch.arange(10.0)
    out = torch.empty(5)
    with interpreter_mode():
        _copy[(1,)](base[::2], out, 5, 2, 1, BLOCK=8)  # the right stride
        _copy[(1,)](base, out, 5, 1, 1, BLOCK=8)  # the launcher passed the whole storage
        _copy[(1,)](base.expand(3, 10)[0], out, 5, 1, 1, BLOCK=8)
        _copy[(1,)](base[::2], base[1::2], 5, 2, 2, BLOCK=8)  # two views share a storage
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert base[1::2].tolist() == base[::2].tolist()


def test_masked_lanes_in_gaps_are_fine_and_checks_can_be_off():
    base = torch.arange(10.0)
    out = torch.empty(5)
    with interpreter_mode():
        _copy[(1,)](base[::2], out, 1, 1, 1, BLOCK=8)  # only lane 0 active
    with interpreter_mode(check_views=False):
        _copy[(1,)](base[::2], out, 5, 1, 1, BLOCK=8)
    with interpreter_mode(check_bounds=False):
        _copy[(1,)](base[::2], out, 5, 1, 1, BLOCK=8)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_atomics_into_gaps_are_reported():
    acc = torch.zeros(8)
    with pytest.raises(OOBView) as info:
        with interpreter_mode():
            _atomic[(1,)](acc[::2], 4, 1, BLOCK=4)
    assert info.value.op == "atomic_add" and info.value.region == "gap"
    with interpreter_mode():
        _atomic[(1,)](acc[::2], 4, 2, BLOCK=4)
    assert acc.tolist() == [1.0, 0.0] * 4


# -- run_case in interpreter mode: statuses and details ------------------------------------------


def _launch_copy(x, wrong_stride):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    sx = 1 if wrong_stride else x.stride(0)
    _copy[(triton.cdiv(x.shape[0], 16),)](x, out, x.shape[0], sx, 1, BLOCK=16)
    return out


def _copy_target():
    # built on demand: a module-level Target in a test file is a fuzz item of the pytest plugin
    return fuzzkern.Target(launcher=_launch_copy, reference=lambda x: x,
                           inputs=fks.inputs(x=fks.tensors(("N",)),
                                             wrong_stride=st.booleans()),
                           dims={"N": fks.sizes(max_value=8)})


def _case(wrong_stride=True, **tensor):
    return Case({"N": 3}, {"x": _tc((3,), **tensor), "wrong_stride": wrong_stride})


def test_run_case_reports_oob_view_and_the_value_verdict_without_it():
    o = run_case(_copy_target(), _case(steps=[2]), {"modes": ["interpret"]})
    assert o.verdict == Verdict.OOB_VIEW
    assert o.modes["interpret"].detail["oob"]["region"] == "gap"
    off = run_case(_copy_target(), _case(steps=[2]), {"modes": ["interpret"],
                                               "checks": {"view": False}})
    assert off.verdict == Verdict.KERNEL_BUG
    ok = run_case(_copy_target(), _case(False, steps=[2]), {"modes": ["interpret"]})
    assert ok.verdict == Verdict.PASS


@triton.jit
def _gather_rows(table_ptr, idx_ptr, out_ptr, n_idx, D, row_stride, BLOCK: tl.constexpr):
    # table_ptr is only a base pointer: rows are addressed with the table's own row stride
    i = tl.program_id(0)
    row = tl.load(idx_ptr + i)
    cols = tl.arange(0, BLOCK)
    m = cols < D
    tl.store(out_ptr + i * D + cols, tl.load(table_ptr + row * row_stride + cols, mask=m),
             mask=m)


def _launch_gather(table, idx, restride):
    n, d = idx.shape[0], table.shape[1]
    out = torch.empty((n, d), dtype=table.dtype, device=table.device)
    # what a library launcher does: hand the kernel a re-strided (stride-0) view of the table
    base = table.as_strided((n, d), (0, table.stride(1))) if restride else table
    _gather_rows[(n,)](base, idx, out, n, d, table.stride(0), BLOCK=8)
    return out


def _launch_gather_wrong(table, idx):
    n, d = idx.shape[0], table.shape[1]
    out = torch.empty((n, d), dtype=table.dtype, device=table.device)
    base = table.as_strided((n, d), (0, table.stride(1)))
    _gather_rows[(n,)](base, idx, out, n, d, table.stride(0), BLOCK=8)
    return out[:, :1].expand(n, d).contiguous() if n > 0 else out


def test_a_stride0_view_used_as_a_base_pointer_is_not_oob_view():
    table = torch.arange(12.0).reshape(4, 3)
    idx = torch.tensor([3, 0, 2], dtype=torch.int32)
    with interpreter_mode(strict_views=False) as session:
        out = _launch_gather(table, idx, restride=True)
    assert torch.equal(out, table[idx.long()])
    first, count = session.view_reads  # the loads were outside the view, and recorded
    assert first.parameter == "table_ptr" and first.op == "load" and count == 2
    with pytest.raises(OOBView):  # the strict rule still reports them
        with interpreter_mode():
            _launch_gather(table, idx, restride=True)


def _run_gather(launcher, checks=None, target_checks=None):
    idx = torch.tensor([3, 0, 2], dtype=torch.int32)

    def launch(table):
        return launcher(table, idx.to(table.device))

    target = fuzzkern.Target(launcher=launch, reference=lambda table: table[idx.long()],
                             inputs=fks.inputs(table=fks.tensors(("V", "D"))),
                             dims={"V": fks.sizes(min_value=4, max_value=8),
                                   "D": fks.sizes(max_value=8)},
                             checks=target_checks or {})
    case = Case({"V": 4, "D": 3}, {"table": _tc((4, 3))})
    return run_case(target, case, {"modes": ["interpret"], **({"checks": checks} if checks
                                                             else {})})


def test_run_case_judges_loads_outside_the_view_by_the_outputs():
    ok = _run_gather(lambda t, i: _launch_gather(t, i, restride=True))
    assert ok.verdict == Verdict.PASS, ok.message
    note = ok.modes["interpret"].detail["view_reads"]
    assert note["loads"] == 2 and "base-pointer use" in note["judged"]
    bad = _run_gather(_launch_gather_wrong)  # same reads, and now an output is wrong
    assert bad.verdict == Verdict.OOB_VIEW, bad.message
    assert "an output is wrong" in bad.message and "table_ptr" in bad.message
    # the rule is explicit and configurable: strict per run or per target
    strict_target = _run_gather(lambda t, i: _launch_gather(t, i, restride=True),
                                checks={"view_strict": True})
    assert strict_target.modes["interpret"].detail["oob"]["region"] == "after the view"
    assert _run_gather(lambda t, i: _launch_gather(t, i, restride=True),
                       checks=None).verdict == Verdict.PASS


def test_target_checks_are_validated_and_applied():
    from fuzzkern.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="check names"):
        _run_gather(lambda t, i: _launch_gather(t, i, restride=True),
                    target_checks={"nope": True})
    o = _run_gather(lambda t, i: _launch_gather(t, i, restride=True),
                    target_checks={"view_strict": True})
    assert o.verdict == Verdict.OOB_VIEW
    # a run's checks apply on top of the target's
    o = _run_gather(lambda t, i: _launch_gather(t, i, restride=True), checks={"view": False},
                    target_checks={"view_strict": True})
    assert o.verdict == Verdict.PASS


def _launch_fill(x, y):
    # x.copy_(y) that ignores x's stride: writes x's gaps (x is declared in-place)
    _copy[(1,)](y, x, y.shape[0], y.stride(0), 1, BLOCK=16)


def test_gap_writes_of_an_inplace_input_without_the_view_checker_are_oob_write():
    target = fuzzkern.Target(launcher=_launch_fill, reference=lambda x, y: y.clone(),
                             inputs=fks.inputs(x=fks.tensors(("N",)),
                                               y=fks.tensors(("N",), dtype_of="x")),
                             dims={"N": fks.sizes(max_value=8)}, inplace="x")
    case = Case({"N": 3}, {"x": _tc((3,), steps=[2]), "y": _tc((3,), seed=1)})
    assert run_case(target, case, {"modes": ["interpret"]}).verdict == Verdict.OOB_VIEW
    o = run_case(target, case, {"modes": ["interpret"], "checks": {"view": False}})
    assert o.verdict == Verdict.OOB_WRITE
    (gap,) = o.modes["interpret"].detail["oob_write"]
    assert (gap["argument"], gap["where"], gap["elements"]) == ("x", "gap", [1])
    assert "mutated" not in o.modes["interpret"].detail  # x is in-place: its elements may change
    o = run_case(target, case, {"modes": ["interpret"],
                                "checks": {"view": False, "mutation": False}})
    assert o.verdict == Verdict.KERNEL_BUG


def test_checks_of_validates_names():
    assert checks_of({})["view"] is True
    assert checks_of({"checks": {"poison": False}})["poison"] is False
    with pytest.raises(ValueError, match="check names"):
        checks_of({"checks": {"bogus": False}})


def test_overflow_of_parses_the_assertion():
    assert overflow_of("AssertionError('int32 overflow detected for operation mul')") == {
        "dtype": "int32", "operation": "mul"}
    assert overflow_of("x.py:3: block: [0,0,0] Assertion `int16 overflow detected for "
                       "operation add` failed.")["operation"] == "add"
    assert overflow_of("some other assertion") is None


# -- the compiled-mode protocol, on the CPU ------------------------------------------------------

_INPUTS = fks.inputs(x=fks.tensors(("N",)))
_CALLS = {"n": 0}


def _past_the_end(x):
    out = torch.empty_like(x)
    out.copy_(2 * x)
    out.as_strided((x.numel() + 1,), (1,), out.storage_offset())[x.numel()] = 1.0
    return out


def _into_the_gap(x):
    x.as_strided((2,), (1,), x.storage_offset())[1] = 0.0  # the gap after x[0]
    return 2 * x


def _scribble(x):
    out = 2 * x
    x.mul_(2)
    return out


def _tail_unwritten(x):
    out = torch.empty_like(x)
    out[:-1] = 2 * x[:-1]
    return out


def _noisy(x):
    _CALLS["n"] += 1
    return 2 * x + (1e-3 if _CALLS["n"] % 2 == 0 else 0.0)


def _asserts(x):
    os.write(2, b"kernel.py:7: block: [0,0,0], thread: [5,0,0] Assertion `int32 overflow "
                b"detected for operation mul` failed.\n")
    raise RuntimeError("CUDA error: device-side assert triggered")


def _device_run(launcher, tensor=None, **options):
    target = fuzzkern.Target(launcher=launcher, reference=lambda x: 2 * x, inputs=_INPUTS,
                             dims={"N": fks.sizes(max_value=8)})
    case = Case({"N": 3}, {"x": tensor or _tc((3,))})
    run = _Run(target, case, {"modes": ["compiled"], **options})
    mode = run_on_device(run, torch.device("cpu"))
    return mode, verdict_of({"compiled": mode})


def _off_30_ulp(x):
    return (2 * x + 1000) * (1 + 30 * 2.0**-23)


def test_off_in_both_modes_but_within_the_compiled_tolerance_is_a_kernel_bug_not_a_divergence():
    """Compiled code gets a wider float32 rtol (approximate exp/div): a kernel 30 ulp off
    everywhere fails the interpreter's tight default and passes the compiled one. That is a
    kernel bug seen by both modes, not a Triton interpreter defect."""
    target = fuzzkern.Target(launcher=_off_30_ulp, reference=lambda x: 2 * x + 1000,
                             inputs=_INPUTS, dims={"N": fks.sizes(max_value=8)})
    case = Case({"N": 3}, {"x": _tc((3,))})
    run = _Run(target, case, {"modes": ["interpret", "compiled"]})
    interp = run.interpret()
    compiled = run_on_device(run, torch.device("cpu"))
    assert (interp.status, compiled.status) == ("mismatch", "ok")
    assert compiled.detail["approx_math"].startswith(
        "3 of 3 elements pass only with the float32 tolerance for compiled code")
    verdict, reason = verdict_of({"interpret": interp, "compiled": compiled})
    assert verdict == Verdict.KERNEL_BUG
    assert "compiled is off too" in reason
    # without the marker (a compiled kernel right within the tight tolerance), the same
    # interpreter mismatch is the interpreter's
    clean = ModeResult("compiled", "ok", Comparison(ok=True))
    assert verdict_of({"interpret": interp, "compiled": clean})[0] == \
        Verdict.INTERPRETER_DIVERGENCE
    # the compiled mode alone passes, and is not re-compared for a verdict it cannot change
    alone = run_on_device(_Run(target, case, {"modes": ["compiled"]}), torch.device("cpu"))
    assert alone.status == "ok" and "approx_math" not in alone.detail
    assert verdict_of({"compiled": alone})[0] == Verdict.PASS


def test_device_protocol_passes_a_correct_launcher_in_red_zones():
    mode, (verdict, _) = _device_run(lambda x: 2 * x, _tc((3,), steps=[2], offset=1))
    assert (mode.status, verdict) == ("ok", Verdict.PASS)
    assert mode.detail["guard_bytes"] == hygiene.DEFAULT_GUARD_BYTES
    assert "oob_write" not in mode.detail and "mutated" not in mode.detail


def test_device_protocol_catches_a_write_past_the_end_of_an_output():
    mode, (verdict, reason) = _device_run(_past_the_end)
    assert verdict == Verdict.OOB_WRITE
    (f,) = mode.detail["oob_write"]
    assert (f["argument"], f["where"], f["elements"]) == ("the output", "past the end", [1])
    assert "past the end of `the output`" in reason


def test_device_protocol_catches_a_write_into_an_input_gap():
    mode, (verdict, _) = _device_run(_into_the_gap, _tc((3,), steps=[2]))
    assert verdict == Verdict.OOB_WRITE
    assert [f["where"] for f in mode.detail["oob_write"]] == ["gap"]


def test_device_protocol_catches_a_mutated_input():
    mode, (verdict, reason) = _device_run(_scribble)
    assert verdict == Verdict.INPUT_MUTATED and mode.status == "ok"
    (m,) = mode.detail["mutated"]
    assert m["argument"] == "x" and m["count"] == 3
    assert "inplace='x'" in reason
    _, (verdict_off, _) = _device_run(_scribble, checks={"mutation": False})
    assert verdict_off == Verdict.PASS


def test_device_protocol_applies_the_targets_checks():
    """A target's ``checks=`` applies in compiled mode as in the interpreter (the run's
    ``options["checks"]`` on top of it)."""
    target = fuzzkern.Target(launcher=_scribble, reference=lambda x: 2 * x, inputs=_INPUTS,
                             dims={"N": fks.sizes(max_value=8)}, checks={"mutation": False})
    case = Case({"N": 3}, {"x": _tc((3,))})
    mode = run_on_device(_Run(target, case, {"modes": ["compiled"]}), torch.device("cpu"))
    assert "mutated" not in mode.detail and verdict_of({"compiled": mode})[0] == Verdict.PASS
    mode = run_on_device(_Run(target, case, {"modes": ["compiled"],
                                             "checks": {"mutation": True}}), torch.device("cpu"))
    assert verdict_of({"compiled": mode})[0] == Verdict.INPUT_MUTATED


def test_device_protocol_tells_unwritten_outputs_apart():
    mode, (verdict, reason) = _device_run(_tail_unwritten)
    assert verdict == Verdict.UNWRITTEN_OUTPUT
    assert mode.detail["unwritten"] == {0: 1} and mode.detail["unwritten_only"] is True
    assert "never written" in reason


def test_device_protocol_repeats_and_reports_nondeterminism():
    mode, (verdict, reason) = _device_run(_noisy, repeat_compiled=3)
    assert verdict == Verdict.NONDETERMINISTIC
    spread = mode.detail["nondeterministic"]
    assert spread["count"] == 3 and spread["runs"] == 3
    assert spread["max_abs_diff"] == pytest.approx(1e-3, rel=1e-3)
    # the proof: two differing values at one element, and which launches of the one binary
    first = spread["first"][0]
    assert first["first"] != first["other"] and len(first["index"]) == 1
    element = f"out0[{first['index'][0]}] {first['first']!r} vs {first['other']!r}"
    assert element in reason and "launch" in reason and "same binary" in reason
    # and through the compiled-only attribution (fuzzkern.search.explain), the same proof
    from fuzzkern.judge.causes import Cause, attributed
    from fuzzkern.judge.outcome import Outcome
    from fuzzkern.search.explain import proven_nondeterminism

    line = proven_nondeterminism("the result changes between launches of the same binary",
                                 Outcome(verdict, reason))
    o = attributed(Outcome(Verdict.COMPILED_ONLY, "only the compiled kernel disagrees"),
                   [Cause("nondeterministic", line)], compiled_only=True)
    assert o.verdict == Verdict.NONDETERMINISTIC and element in o.message
    mode, (verdict, _) = _device_run(lambda x: 2 * x, repeat_compiled=3)
    assert verdict == Verdict.PASS and mode.detail["repeats"] == 3


def test_device_protocol_names_the_overflow_of_a_device_assert(capfd):
    mode, (verdict, reason) = _device_run(_asserts, debug=True)
    assert verdict == Verdict.OVERFLOW and mode.detail["poisoned"] is True
    assert mode.detail["overflow"] == {"dtype": "int32", "operation": "mul",
                                       "location": "kernel.py:7"}
    assert "Assertion" in capfd.readouterr().err  # passed through to the real stderr
    mode, (verdict, _) = _device_run(_asserts)  # without debug: an unexplained fault
    assert verdict == Verdict.CRASH


def test_captured_output_passes_output_through():
    with captured_output() as box:
        os.write(1, b"to stdout\n")
        os.write(2, b"to stderr\n")
    assert "to stdout" in box["text"] and "to stderr" in box["text"]


def test_debug_knob_applies_to_compiled_launches():
    from triton import knobs

    from fuzzkern.execution.compiled import debug_knob

    with debug_knob(True):
        assert knobs.runtime.debug is True
    assert knobs.runtime.debug is False


# -- verdict ordering ----------------------------------------------------------------------------


def _mr(mode, status, **detail):
    comp = Comparison(ok=status == "ok", mismatched=0 if status == "ok" else 1)
    return ModeResult(mode, status, comp, error=f"{status} error", detail=detail)


@pytest.mark.parametrize("interpret,compiled,verdict", [
    (_mr("interpret", "oob"), _mr("compiled", "crash"), Verdict.OOB),
    (_mr("interpret", "ok"), _mr("compiled", "crash"), Verdict.COMPILED_ONLY),
    (_mr("interpret", "mismatch"), _mr("compiled", "crash"), Verdict.CRASH),
    (_mr("interpret", "oob-view"), _mr("compiled", "mismatch"), Verdict.OOB_VIEW),
    (_mr("interpret", "overflow"), _mr("compiled", "overflow"), Verdict.OVERFLOW),
    (_mr("interpret", "ok"), _mr("compiled", "ok", oob_write=[{"text": "t"}]), Verdict.OOB_WRITE),
    (_mr("interpret", "error"), _mr("compiled", "ok", oob_write=[{"text": "t"}]),
     Verdict.OOB_WRITE),
    (_mr("interpret", "ok", mutated=[{"text": "t"}]), _mr("compiled", "mismatch"),
     Verdict.INPUT_MUTATED),
    (_mr("interpret", "ok"), _mr("compiled", "ok", nondeterministic={"text": "t"}),
     Verdict.NONDETERMINISTIC),
    (_mr("interpret", "mismatch", unwritten={0: 2}, unwritten_only=True),
     _mr("compiled", "mismatch", unwritten={0: 2}, unwritten_only=True),
     Verdict.UNWRITTEN_OUTPUT),
    (_mr("interpret", "mismatch", unwritten={0: 2}, unwritten_only=False),
     _mr("compiled", "mismatch", unwritten={0: 2}, unwritten_only=True), Verdict.KERNEL_BUG),
    (_mr("interpret", "ok"), _mr("compiled", "mismatch"), Verdict.COMPILED_ONLY),
    (_mr("interpret", "precondition"), _mr("compiled", "precondition"), Verdict.PRECONDITION),
])
def test_verdict_order(interpret, compiled, verdict):
    assert verdict_of({"interpret": interpret, "compiled": compiled})[0] == verdict


def test_new_verdicts_are_failures_and_documented():
    new = {Verdict.OOB_VIEW, Verdict.OOB_WRITE, Verdict.UNWRITTEN_OUTPUT, Verdict.INPUT_MUTATED,
           Verdict.NONDETERMINISTIC, Verdict.OVERFLOW}
    assert new <= Verdict.FAILURES
    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "verdicts.md")).read()
    for v in new:
        assert f"| `{v}` |" in page


def test_kernel_bug_reason_counts_unwritten_elements():
    v, reason = verdict_of({"interpret": _mr("interpret", "mismatch", unwritten={0: 2},
                                             unwritten_only=False)})
    assert v == Verdict.KERNEL_BUG and "2 of the mismatching elements were never written" in reason


# -- sanitizer -----------------------------------------------------------------------------------

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at copy_unmasked+0xe0 in /tmp/kern_oob.py:7
=========     by thread (8,0,0) in block (0,0,0)
=========     Address 0x7f9294800020 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f9294800000 of size 32 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========
========= Invalid __global__ write of size 2 bytes
=========     at k+0x10 in a.py:3
=========     by thread (1,0,0) in block (2,0,0)
=========     Access to 0x10 is out of bounds
=========
========= ERROR SUMMARY: 2 errors
"""


def test_parse_memcheck():
    from fuzzkern.execution.sanitizer import parse_memcheck

    first, second = parse_memcheck(MEMCHECK_LOG)
    assert (first["space"], first["access"], first["size"]) == ("global", "read", 4)
    assert (first["kernel"], first["location"]) == ("copy_unmasked+0xe0", "/tmp/kern_oob.py:7")
    assert (first["thread"], first["block"]) == ([8, 0, 0], [0, 0, 0])
    assert first["nearest"].startswith("1 bytes after the nearest allocation")
    assert "by thread (8,0,0) in block (0,0,0)" in first["text"]
    assert (second["access"], second["block"], second["address"]) == ("write", [2, 0, 0], "0x10")
    assert parse_memcheck("========= ERROR SUMMARY: 0 errors\n") == []


def test_memcheck_errors_make_the_verdict_oob_unless_the_interpreter_located_it():
    from fuzzkern.execution.sanitizer import annotate, parse_memcheck

    errors = parse_memcheck(MEMCHECK_LOG)
    crash = Outcome("crash", "compiled: device fault", {
        "compiled": ModeResult("compiled", "crash", detail={"poisoned": True})}).to_json()
    out = Outcome.from_json(annotate(crash, errors))
    assert out.verdict == "oob" and "memcheck: Invalid __global__ read" in out.message
    assert out.modes["compiled"].detail["memcheck"][0]["location"] == "/tmp/kern_oob.py:7"
    located = Outcome("oob-view", "interpret: ...", {}).to_json()
    assert Outcome.from_json(annotate(located, errors)).verdict == "oob-view"


def test_sanitize_needs_cuda_and_says_so():
    from fuzzkern.cli import main
    from fuzzkern.execution.sanitizer import SanitizerUnavailable, probe

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SanitizerUnavailable, match="needs a CUDA GPU"):
        probe()
    result = CliRunner().invoke(main, ["run", "--sanitize", "--budget", "1s"])
    assert result.exit_code == 2  # (the CPU's default modes: interpret alone)
    assert "--sanitize checks the compiled mode" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(main, ["run", "--sanitize", "--budget", "1s", "--modes",
                                       "interpret,compiled"])
    assert result.exit_code == 2
    assert "needs a CUDA GPU" in result.output and "Traceback" not in result.output


def test_repeat_compiled_needs_the_compiled_mode():
    from fuzzkern.cli import main

    result = CliRunner().invoke(main, ["run", "--repeat-compiled", "2", "--modes", "interpret",
                                       "--budget", "1s"])
    assert result.exit_code == 2 and "needs the compiled mode" in result.output


def test_sanitized_worker_protocol_without_the_sanitizer(tmp_path):
    """The subprocess worker (as compute-sanitizer would start it) speaks the pool protocol,
    keeps its protocol channel clean of a launcher's prints, and is replaced after a crash."""
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.execution.sanitizer import SanitizedWorker

    target = tmp_path / "t.py"
    target.write_text(
        "import os, torch, fuzzkern\n"
        "from fuzzkern import strategies as fks\n"
        "def launch(x):\n"
        "    print('noise from the launcher')\n"
        "    if x.shape[0] == 2:\n"
        "        os.abort()\n"
        "    return 2 * x\n"
        "t = fuzzkern.Target(launcher=launch, reference=lambda x: 2 * x,\n"
        "    inputs=fks.inputs(x=fks.tensors(('N',))), dims={'N': fks.sizes(max_value=4)})\n")
    ref = f"{target}::t"
    pool = WorkerPool(worker_factory=lambda env: SanitizedWorker(env, prefix=[]))
    try:
        ok = pool.run(ref, _case_n(3).to_json(), {"modes": ["interpret"]}, 120)
        assert ok.verdict == Verdict.PASS, ok.message
        crash = pool.run(ref, _case_n(2).to_json(), {"modes": ["interpret"]}, 120)
        assert crash.verdict == Verdict.CRASH and "SIGABRT" in crash.message
        again = pool.run(ref, _case_n(1).to_json(), {"modes": ["interpret"]}, 120)
        assert again.verdict == Verdict.PASS and pool.restarts == 1
    finally:
        pool.close()


def test_a_worker_that_dies_on_a_fault_still_gets_memchecks_report(tmp_path):
    """Under memcheck without the caching allocator, freeing a tensor after the fault aborts
    the worker before it replies (seen on the H200): the pool completes the case's crash from
    the log (here written by the launcher, as memcheck would, before it aborts)."""
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.execution.sanitizer import SanitizedWorker

    log = tmp_path / "memcheck.log"
    target = tmp_path / "t.py"
    target.write_text(
        "import os, torch, fuzzkern\n"
        "from fuzzkern import strategies as fks\n"
        f"LOG = {str(log)!r}\n"
        f"TEXT = {MEMCHECK_LOG!r}\n"
        "def launch(x):\n"
        "    if x.shape[0] == 2:\n"
        "        with open(LOG, 'a') as f:\n"
        "            f.write(TEXT)\n"
        "        os.abort()\n"
        "    return 2 * x\n"
        "t = fuzzkern.Target(launcher=launch, reference=lambda x: 2 * x,\n"
        "    inputs=fks.inputs(x=fks.tensors(('N',))), dims={'N': fks.sizes(max_value=4)})\n")
    ref = f"{target}::t"

    def factory(env):
        worker = SanitizedWorker(env, prefix=[])
        worker.log_path = str(log)  # the file the (absent) sanitizer would write
        return worker

    pool = WorkerPool(worker_factory=factory)
    try:
        assert pool.run(ref, _case_n(3).to_json(), {"modes": ["interpret"]}, 120).verdict == "pass"
        died = pool.run(ref, _case_n(2).to_json(), {"modes": ["interpret"]}, 120)
        assert died.verdict == Verdict.OOB, died.message
        assert died.message.startswith("compiled: memcheck: Invalid __global__ read of size 4")
        assert "(and 1 more)" in died.message
        assert died.modes["worker"].detail["exit"] == "SIGABRT"
        errors = died.modes["compiled"].detail["memcheck"]
        assert [e["location"] for e in errors] == ["/tmp/kern_oob.py:7", "a.py:3"]
        log.unlink()  # the next worker's sanitizer writes its own log
        again = pool.run(ref, _case_n(1).to_json(), {"modes": ["interpret"]}, 120)
        assert again.verdict == Verdict.PASS and pool.restarts == 1
    finally:
        pool.close()


def _case_n(n):
    return Case({"N": n}, {"x": _tc((n,))})


def test_sanitized_worker_module_runs():
    proc = subprocess.run([sys.executable, "-m", "fuzzkern.execution._sanitized_worker"],
                          input="null\n", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == ""


def test_an_error_only_the_interpreter_raises_is_an_interpreter_divergence():
    ok = ModeResult("compiled", "ok", Comparison(ok=True))
    interp_error = ModeResult("interpret", "error", error="ValueError: mask has unsupported dtype")
    verdict, reason = verdict_of({"interpret": interp_error, "compiled": ok})
    assert verdict == Verdict.INTERPRETER_DIVERGENCE
    assert "only the interpreter fails" in reason and "mask" in reason
    # with no compiled run to compare, an interpreter error stays an error
    assert verdict_of({"interpret": interp_error})[0] == Verdict.ERROR
