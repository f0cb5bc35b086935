"""In-process Triton interpreter: redirection, autotune forcing, state restore, bounds checker.

Runs on CPU with Triton 3.6 and 3.9 (see fuzzkern/execution/interpreter/core.py and
docs/architecture.md, execution).
"""

from __future__ import annotations

import pickle
import sys
import threading
from pathlib import Path

import pytest
import torch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
import triton.language.core as tl_core  # noqa: E402
import triton.language.math as tl_math  # noqa: E402
import triton.language.standard as tl_standard  # noqa: E402
import triton.runtime.interpreter as _interp  # noqa: E402
from triton.runtime.autotuner import Autotuner, Heuristics  # noqa: E402
from triton.runtime.errors import InterpreterError  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from fuzzkern.execution.interpreter import core as fki  # noqa: E402
from fuzzkern.execution.interpreter.core import (  # noqa: E402
    ForcedConfigError,
    OOBAccess,
    interpreter_mode,
    run_interpreted,
)
from fuzzkern.introspect import (  # noqa: E402
    autotuner_config_counts,
    autotuners_of,
    config_description,
    kernel_name,
)

sys.path.insert(0, str(Path(__file__).parent))
import _interp_kernels as K  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION")

FAR = 2**40


# -- helpers ---------------------------------------------------------------------------------------

_WATCHED = [tl, tl_core, tl_math, tl_standard, _interp, JITFunction, Autotuner, Heuristics,
            _interp.GridExecutor, _interp.InterpreterBuilder, _interp.InterpretedFunction,
            tl_core.tensor, tl_core.dtype]


def _snapshot() -> list[tuple[object, dict]]:
    return [(obj, dict(vars(obj))) for obj in _WATCHED]


def _assert_restored(before: list[tuple[object, dict]]) -> None:
    for obj, snap in before:
        now = vars(obj)
        changed = [k for k, v in snap.items() if now.get(k, fki._MISSING) is not v]
        assert not changed, f"{obj}: changed {changed[:10]}"
        if isinstance(obj, type):
            added = [k for k in now if k not in snap and k != "__annotations__"]
            assert not added, f"{obj}: added {added}"
    assert JITFunction.run is fki._ORIG_JIT_RUN
    assert JITFunction.__call__ is fki._ORIG_JIT_CALL
    assert "__get__" not in vars(JITFunction)
    assert Autotuner.run is fki._ORIG_AUTOTUNER_RUN
    assert _interp._patch_lang_tensor is fki._ORIG_PATCH_LANG_TENSOR
    assert fki._STATE.depth == 0 and fki._STATE.owner is None


def _front_end(fn, signature, constexprs) -> str:
    """Run Triton's compiled front end (AST -> TTIR module) for a fake sm90 target, no GPU."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    opts = backend.parse_options({})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    src = ASTSource(fn, signature, constexprs=constexprs)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts),
                      backend.get_module_map(), ctx)
    return str(mod)


ROW_STATS_SIG = {"x_ptr": "*fp32", "out_ptr": "*fp32", "N": "i32", "BLOCK": "constexpr"}


def _compile_row_stats() -> str:
    return _front_end(K.row_stats_kernel, ROW_STATS_SIG, {"BLOCK": 16})


@pytest.fixture(autouse=True)
def _clean():
    K.HOOK_CALLS.clear()
    yield
    assert fki._STATE.depth == 0


# -- redirection -----------------------------------------------------------------------------------


def test_vector_add_host_launcher_is_correct():
    x, y = torch.randn(1000), torch.randn(1000)
    with interpreter_mode() as session:
        out = K.vector_add(x, y, BLOCK=128)
    torch.testing.assert_close(out, x + y)
    assert session.launches == 1
    assert session.leaked == ()


def test_strided_views_and_run_interpreted():
    base = torch.randn(64)
    x, y = base[1::3], base[::2][: base[1::3].numel()]
    out = run_interpreted(K.vector_add, x.contiguous(), y.contiguous(), BLOCK=8)
    torch.testing.assert_close(out, x + y)


def test_matmul_with_range_of_cdiv():
    # `for k in range(tl.cdiv(K, BK))` needs tensor.__index__: broken on 3.6 + numpy >= 2.4
    a, b = torch.randn(33, 40), torch.randn(40, 17)
    with interpreter_mode():
        c = K.matmul(a, b)
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


def test_reductions_helper_and_member_functions():
    x = torch.randn(3, 10)
    with interpreter_mode() as session:
        r = K.row_stats(x)
    torch.testing.assert_close(r[:, 0], x.sum(1))
    torch.testing.assert_close(r[:, 1], x.max(1).values)
    torch.testing.assert_close(r[:, 2], (x * x).sum(1))
    torch.testing.assert_close(r[:, 3], x.sum(1) + 5)
    assert session.leaked == ()


def test_int32_reduction_wraps_like_the_gpu():
    # Triton 3.6 raises OverflowError here under numpy >= 2 (np.array([ret], dtype=int32)); the
    # GPU, and Triton 3.9's interpreter, wrap. An int32-accumulator bug must show as a wrong
    # value, not as an interpreter error.
    x = torch.tensor([2**31 - 1, 5], dtype=torch.int32)
    with interpreter_mode() as session:
        out = K.int32_sum(x)
    assert out.item() == -(2**31) + 4
    assert session.leaked == ()
    assert _interp.ReduceScanOpInterface.to_tensor is fki._ORIG_REDUCE_TO_TENSOR  # restored


def test_nested_contexts_and_triton_restored_after_each():
    run_interpreted(K.row_stats, torch.randn(2, 4))  # warm: first-time lazy attributes
    before = _snapshot()
    with interpreter_mode(configs={"tuned_scale_kernel": 0}) as outer:
        with interpreter_mode(configs={"tuned_scale_kernel": 2}) as inner:
            _, _, blk = K.tuned_scale(torch.randn(50))
            assert int(blk) == 64
        assert fki._STATE.depth == 1 and JITFunction.run is not fki._ORIG_JIT_RUN
        _, _, blk = K.tuned_scale(torch.randn(50))
        assert int(blk) == 16
    assert inner.configs_used == {"tuned_scale_kernel": 2}
    assert outer.configs_used == {"tuned_scale_kernel": 0}
    _assert_restored(before)


# -- state restore and the compiled front end ------------------------------------------------------


def test_triton_state_restored_and_front_end_still_compiles():
    run_interpreted(K.row_stats, torch.randn(2, 4))
    before = _snapshot()
    options = _interp.interpreter_builder.options
    with interpreter_mode(debug=True) as session:
        K.row_stats(torch.randn(4, 12))
        K.matmul(torch.randn(8, 8), torch.randn(8, 8))
        assert JITFunction.run is not fki._ORIG_JIT_RUN
    assert session.leaked == ()
    assert _interp.interpreter_builder.options is options
    _assert_restored(before)
    assert "tt.func" in _compile_row_stats()


def test_front_end_check_detects_a_leaked_language_patch():
    # Control for the test above: what upstream InterpretedFunction.__call__ leaves behind
    # (a tl.standard function's patch scope, never restored) does break the front end.
    scope = _interp._patch_lang(tl_standard.sum.fn)
    try:
        with pytest.raises(Exception, match="dtype"):
            _compile_row_stats()
    finally:
        scope.restore()
    assert "tt.func" in _compile_row_stats()


def test_what_a_block_leaves_changed_is_put_back_and_reported():
    """The exit's safety net (a fast identity check of every watched namespace, then the
    name-by-name walk only where something changed): a replaced function, a class attribute
    added and a module attribute deleted inside the block are all undone and named."""
    before = _snapshot()
    original = tl_standard.sum
    with interpreter_mode() as session:
        tl_standard.sum = lambda *a, **k: None
        tl_core.tensor.fuzzkern_test_added = 1
        del tl_math.sqrt
    assert tl_standard.sum is original
    assert not hasattr(tl_core.tensor, "fuzzkern_test_added")
    assert tl_math.sqrt is dict(before)[tl_math]["sqrt"]
    assert set(session.leaked) >= {"triton.language.standard.sum", "tensor.fuzzkern_test_added "
                                   "(added)", "triton.language.math.sqrt"}
    _assert_restored(before)
    with interpreter_mode() as clean:
        pass
    assert clean.leaked == ()


def test_a_libdevice_function_added_later_is_interpreted_too():
    """The libdevice scan is cached per module and redone when the module changes."""
    from fuzzkern.execution.interpreter import fidelity

    name, module = next(iter(fidelity.libdevice_modules().items()))

    def patched() -> list[str]:
        return [attr for m, values in fidelity.grouped_patches()[1] if m is module
                for attr in values]

    first = patched()
    assert first == patched()

    def fuzzkern_test_fn(x):
        return x

    fuzzkern_test_fn.__module__ = name
    module.fuzzkern_test_fn = fuzzkern_test_fn
    try:
        again = patched()
        assert again == [*first, "fuzzkern_test_fn"]
        with interpreter_mode():
            assert module.fuzzkern_test_fn is not fuzzkern_test_fn
        assert module.fuzzkern_test_fn is fuzzkern_test_fn
    finally:
        del module.fuzzkern_test_fn
    assert patched() == first


def test_exception_inside_kernel_leaves_triton_restored():
    run_interpreted(K.row_stats, torch.randn(2, 4))
    before = _snapshot()
    with pytest.raises(OOBAccess):  # raised inside a nested @jit helper
        with interpreter_mode():
            K.oob_in_helper_kernel[(2,)](torch.randn(16), torch.zeros(16), FAR, BLOCK=8)
    _assert_restored(before)
    with pytest.raises(InterpreterError, match="non-negative"):
        with interpreter_mode(debug=True):
            K.assert_kernel[(1,)](torch.tensor([1.0, -1.0]), BLOCK=2)
    _assert_restored(before)
    with pytest.raises(ZeroDivisionError):  # raised by the host code inside the block
        with interpreter_mode():
            K.row_stats(torch.randn(2, 4))
            _ = 1 / 0
    _assert_restored(before)
    assert "tt.func" in _compile_row_stats()
    # and the interpreter still works afterwards
    torch.testing.assert_close(run_interpreted(K.vector_add, torch.ones(5), torch.ones(5)),
                               torch.full((5,), 2.0))


def test_other_threads_wait_for_the_block_then_run_normally():
    seen: list[object] = []

    def launch():
        try:
            K.add_kernel[(1,)](torch.ones(4), torch.ones(4), torch.empty(4), 4, BLOCK=4)
            seen.append("ran")
        except Exception as e:  # no GPU here: the compiled path fails, which is the point
            seen.append(e)

    with interpreter_mode():
        t = threading.Thread(target=launch)
        t.start()
        t.join(0.3)
        assert t.is_alive() and not seen  # blocked on INTERPRETER_LOCK
    t.join(30)
    assert seen and not isinstance(seen[0], (OOBAccess, InterpreterError))
    if not torch.cuda.is_available():
        assert isinstance(seen[0], Exception)


# -- autotune / heuristics -------------------------------------------------------------------------


class _NoBench:
    def __init__(self, *autotuners):
        self.calls = 0
        self.autotuners = autotuners

    def __call__(self, *a, **k):
        self.calls += 1
        raise AssertionError("benchmarked")

    def __enter__(self):
        for at in self.autotuners:
            at.__dict__["do_bench"] = self  # shadows the cached_property
        return self

    def __exit__(self, *exc):
        for at in self.autotuners:
            at.__dict__.pop("do_bench", None)


def test_forced_config_autotune_over_heuristics():
    at = K.tuned_scale_kernel
    at.cache[("sentinel",)] = at.configs[2]
    cache_before = dict(at.cache)
    best_before = getattr(at, "best_config", fki._MISSING)
    x = torch.randn(100)
    with _NoBench(at) as spy, interpreter_mode(configs={"tuned_scale_kernel": 1}) as session:
        out, acc, blk = K.tuned_scale(x)
    assert spy.calls == 0
    assert int(blk) == 32  # the forced config's BLOCK reached the kernel
    assert int(acc) == 100 + 4  # forced: like a tuning-cache hit, no reset_to_zero
    assert K.HOOK_CALLS == ["pre_hook BLOCK=32"]  # the config's pre_hook ran
    torch.testing.assert_close(out, 2 * x)
    assert session.configs_used == {"tuned_scale_kernel": 1}
    assert at.cache == cache_before
    assert getattr(at, "best_config", fki._MISSING) is best_before
    del at.cache[("sentinel",)]


@pytest.mark.parametrize("index,block", [(0, 16), (2, 64)])
def test_every_config_can_be_forced(index, block):
    x = torch.randn(64)  # n % BLOCK == 0 for all: heuristics picks the EVEN path
    with interpreter_mode(configs={"tuned_scale_kernel": index}):
        out, acc, blk = K.tuned_scale(x)
    assert int(blk) == block
    assert int(acc) == 100 + 64 // block
    torch.testing.assert_close(out, 2 * x)


def test_unforced_uses_first_pruned_config_without_benchmarking():
    x = torch.randn(50)
    with _NoBench(K.tuned_scale_kernel, K.pruned_kernel.fn) as spy, \
            interpreter_mode() as session:
        _, acc, blk = K.tuned_scale(x)
        out, blk2 = K.pruned(x)  # heuristics over autotune; early_config_prune drops config 0
        _, acc_again, _ = K.tuned_scale(x)
    assert spy.calls == 0
    assert int(blk) == 16
    assert int(acc) == 4  # cold call: reset_to_zero ran once, as after upstream benchmarking
    assert int(acc_again) == 104  # same tuning key again: no reset
    assert int(blk2) == 16
    torch.testing.assert_close(out, 3 * x)
    assert session.configs_used == {"tuned_scale_kernel": 0, "pruned_kernel": 1}


def test_forced_config_out_of_range_is_a_clear_error():
    before = _snapshot()
    with pytest.raises(ForcedConfigError, match=r"\[0, 3\).*tuned_scale_kernel"):
        with interpreter_mode(configs={"tuned_scale_kernel": 3}):
            K.tuned_scale(torch.randn(8))
    with pytest.raises(ForcedConfigError):
        with interpreter_mode(configs={"tuned_scale_kernel": "1"}):  # type: ignore[dict-item]
            pass
    _assert_restored(before)


# -- kernels.py: finding autotuners from a launcher ------------------------------------------------


def test_autotuners_of_launchers():
    assert autotuners_of(K.tuned_scale) == {"tuned_scale_kernel": K.tuned_scale_kernel}
    # reached through a plain helper; heuristics over autotune is seen through
    assert autotuners_of(K.pruned) == {"pruned_kernel": K.pruned_kernel.fn}
    assert autotuner_config_counts(K.both_tuned) == {"tuned_scale_kernel": 3, "pruned_kernel": 3}
    assert autotuners_of(K.vector_add) == {}

    def closure_launcher(x):
        return kern[(1,)](x)  # closure cell

    kern = K.tuned_scale_kernel
    assert list(autotuners_of(closure_launcher)) == ["tuned_scale_kernel"]

    def module_attr_launcher(x):
        return K.pruned_kernel[(1,)](x)  # attribute of a referenced module

    assert list(autotuners_of(module_attr_launcher)) == ["pruned_kernel"]

    def recursive(x, n=2):
        return recursive(x, n - 1) if n else K.tuned_scale(x)

    assert list(autotuners_of(recursive)) == ["tuned_scale_kernel"]

    def l4(x):
        return K.both_tuned(x)

    def l5(x):
        return l4(x)

    # both_tuned -> pruned -> _pruned_inner -> kernel is 3 levels below l4, 4 below l5
    assert set(autotuners_of(l4)) == {"tuned_scale_kernel", "pruned_kernel"}
    assert set(autotuners_of(l5)) == {"tuned_scale_kernel"}


def test_config_description_and_kernel_name():
    at = K.tuned_scale_kernel
    assert config_description(at, 0) == "BLOCK=16, num_warps=1, num_stages=3"
    assert config_description(at, 2) == "BLOCK=64, num_warps=4, num_stages=2"
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        config_description(at, 3)
    assert kernel_name(K.pruned_kernel) == "pruned_kernel"
    assert kernel_name(K.add_kernel) == "add_kernel"


# -- bounds checker --------------------------------------------------------------------------------


def _oob(kernel, *args, labels=None, grid=(2,), **meta) -> OOBAccess:
    with pytest.raises(OOBAccess) as info:
        with interpreter_mode(labels=labels):
            kernel[grid](*args, **meta)
    return info.value


def test_unmasked_near_load_past_the_end():
    x, out = torch.randn(16), torch.zeros(16)
    e = _oob(K.oob_load_kernel, x, out, 3, BLOCK=8)
    assert (e.op, e.program_id, e.lane) == ("load", (1, 0, 0), 5)
    assert (e.parameter, e.argument) == ("x_ptr", "x_ptr")
    assert (e.distance_elements, e.distance_bytes, e.before_start) == (1, 4, False)
    assert (e.n_bad, e.n_lanes) == (3, 8)
    assert e.address == x.data_ptr() + 16 * 4
    assert e.describe() == ("load from x_ptr at program (1,0,0) lane 5: 1 element (4 bytes) "
                            "past the end of `x_ptr` (3 of 8 lanes out of bounds)")


def test_unmasked_load_before_the_start():
    x, out = torch.randn(16), torch.zeros(16)
    e = _oob(K.oob_load_kernel, x, out, -20, BLOCK=8)
    assert (e.program_id, e.lane, e.parameter) == ((0, 0, 0), 0, "x_ptr")
    assert (e.distance_elements, e.distance_bytes, e.before_start) == (20, 80, True)
    assert "before the start of `x_ptr`" in e.describe()


def test_unmasked_near_store_uses_label():
    x, out = torch.randn(16), torch.zeros(16)
    labels = {out.untyped_storage().data_ptr(): "out"}
    e = _oob(K.oob_store_kernel, x, out, 7, labels=labels, BLOCK=8)
    assert (e.op, e.program_id, e.lane) == ("store", (1, 0, 0), 1)
    assert (e.parameter, e.argument) == ("out_ptr", "out")
    assert (e.distance_elements, e.distance_bytes, e.n_bad) == (1, 4, 7)
    assert e.describe() == ("store to out_ptr at program (1,0,0) lane 1: 1 element (4 bytes) "
                            "past the end of `out` (7 of 8 lanes out of bounds)")
    # program 0 stored x[0:8] into out[7:15]; program 1 was stopped before touching memory,
    # even its one in-bounds lane (out[15])
    torch.testing.assert_close(out[7:15], x[:8])
    assert float(out[15]) == 0.0


@pytest.mark.parametrize("kernel,op,param", [(K.oob_load_kernel, "load", "x_ptr"),
                                             (K.oob_store_kernel, "store", "out_ptr")])
def test_far_access_is_caught_and_the_process_survives(kernel, op, param):
    # Unchecked, a load 2**40 elements away is a SIGSEGV of this very process.
    x, out = torch.randn(16), torch.zeros(16)
    e = _oob(kernel, x, out, FAR, BLOCK=8)
    assert (e.op, e.program_id, e.lane, e.parameter) == (op, (0, 0, 0), 0, param)
    assert e.distance_elements == FAR - 16 + 1
    assert e.distance_bytes == 4 * (FAR - 16 + 1)
    assert e.n_bad == 8


def test_far_access_in_nested_helper():
    e = _oob(K.oob_in_helper_kernel, torch.randn(16), torch.zeros(16), FAR, BLOCK=8)
    assert (e.op, e.parameter, e.lane, e.distance_elements) == ("load", "x_ptr", 0, FAR - 15)


def test_atomic_out_of_bounds():
    acc = torch.zeros(16)
    e = _oob(K.oob_atomic_kernel, acc, 5, BLOCK=8)
    assert (e.op, e.program_id, e.lane, e.parameter) == ("atomic_add", (1, 0, 0), 3, "acc_ptr")
    assert e.n_bad == 5
    # program 0 (elements 5..12) ran; program 1's atomic was stopped before touching memory
    torch.testing.assert_close(acc[5:13], torch.ones(8))
    assert float(acc.sum()) == 8.0


def test_atomic_in_bounds_runs():
    acc = torch.zeros(16)
    with interpreter_mode():
        K.oob_atomic_kernel[(2,)](acc, 0, BLOCK=8)
    torch.testing.assert_close(acc, torch.ones(16))


def test_masked_off_far_lanes_are_fine():
    x, out = torch.randn(10), torch.zeros(10)
    with interpreter_mode():
        K.masked_far_kernel[(2,)](x, out, 10, FAR, BLOCK=8)
    torch.testing.assert_close(out, x)


def test_in_bounds_kernels_raise_nothing_with_checks_on():
    a, b = torch.randn(17, 33), torch.randn(33, 9)
    with interpreter_mode(check_bounds=True, debug=True):
        c = K.matmul(a, b)
        K.row_stats(torch.randn(3, 7))
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


def test_check_bounds_off_does_not_check():
    x, out = torch.randn(16), torch.zeros(16)
    with interpreter_mode(check_bounds=False):
        K.oob_load_kernel[(2,)](x, out, 1, BLOCK=8)  # 1 element past the end: heap, no crash
    torch.testing.assert_close(out[:15], x[1:])


def test_oob_access_pickles():
    e = _oob(K.oob_load_kernel, torch.randn(16), torch.zeros(16), 3, BLOCK=8)
    e2 = pickle.loads(pickle.dumps(e))
    assert isinstance(e2, OOBAccess)
    assert (e2.lane, e2.program_id, e2.describe()) == (e.lane, e.program_id, e.describe())


# -- debug -----------------------------------------------------------------------------------------


def test_debug_fires_device_assert_only_when_on():
    x = torch.tensor([1.0, -1.0])
    with interpreter_mode(debug=False):
        K.assert_kernel[(1,)](x, BLOCK=2)
    with pytest.raises(InterpreterError, match="x must be non-negative") as info:
        with interpreter_mode(debug=True):
            K.assert_kernel[(1,)](x, BLOCK=2)
    assert isinstance(info.value.__cause__, AssertionError)


def test_debug_detects_int32_overflow():
    out = torch.zeros(1, dtype=torch.int32)
    with interpreter_mode(debug=False):
        K.overflow_kernel[(1,)](2**20, 2**20, out)  # wraps silently, as compiled without debug
    assert int(out) == 0
    with pytest.raises(InterpreterError, match="int32 overflow"):
        with interpreter_mode(debug=True):
            K.overflow_kernel[(1,)](2**20, 2**20, out)
    with interpreter_mode(debug=True):
        K.overflow_kernel[(1,)](2**10, 2**10, out)
    assert int(out) == 2**20


def test_kernel_debug_flags_are_honoured_as_when_compiled():
    x = torch.tensor([1.0, -1.0])
    with pytest.raises(InterpreterError, match="declared debug"):
        with interpreter_mode(debug=False):
            K.debug_declared_assert_kernel[(1,)](x, BLOCK=2)
    with pytest.raises(InterpreterError, match="non-negative"):
        with interpreter_mode(debug=False):
            K.assert_kernel[(1,)](x, BLOCK=2, debug=True)


@triton.jit
def _int_mask_kernel(x_ptr, out_ptr, M, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < N) & (row < M)  # Triton 3.9's interpreter makes this an int32 mask
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * N + cols, x * 2, mask=mask)


def test_integer_masks_work_as_in_compiled_triton():
    x = torch.arange(12.0).reshape(3, 4)
    out = torch.zeros_like(x)
    with interpreter_mode():
        _int_mask_kernel[(3,)](x, out, 3, 4, BLOCK=8)
    assert torch.equal(out, 2 * x)


def test_autotuners_behind_a_library_wrapper_and_a_subclass_are_found_and_forced():
    counts = autotuner_config_counts(K.cached)
    assert counts == {"cached_kernel": 3}  # through the LaunchCache object's attribute
    assert autotuner_config_counts(K.subclassed) == {"subclass_kernel": 2}
    x = torch.arange(20.0)
    for index, block in [(0, 8), (2, 32)]:
        with interpreter_mode(configs={"cached_kernel": index}) as session:
            out, blk = K.cached(x)
        assert int(blk) == block and session.configs_used == {"cached_kernel": index}
        torch.testing.assert_close(out, x + 1)
    before = K.BenchingAutotuner.bench_calls
    own_run = vars(K.BenchingAutotuner)["run"]
    for index, block in [(0, 8), (1, 32)]:
        with interpreter_mode(configs={"subclass_kernel": index}) as session:
            out, blk = K.subclassed(x)
        assert int(blk) == block and session.configs_used == {"subclass_kernel": index}
        torch.testing.assert_close(out, 5 * x)
    with interpreter_mode():  # not forced: the first config, still no benchmarking
        _, blk = K.subclassed(x)
    assert int(blk) == 8
    assert K.BenchingAutotuner.bench_calls == before  # its own run never ran
    assert vars(K.BenchingAutotuner)["run"] is own_run  # and is back after the block


def test_forced_configs_in_compiled_mode_reach_autotuner_subclasses():
    from fuzzkern.introspect import forced_configs

    own_run = vars(K.BenchingAutotuner)["run"]
    with forced_configs({"subclass_kernel": 1}):
        assert vars(K.BenchingAutotuner)["run"] is not own_run
    assert vars(K.BenchingAutotuner)["run"] is own_run


# -- constexpr .value, interpreter limitations ---------------------------------------------------


@triton.jit
def _scaled_by(x, N: tl.constexpr, S: tl.constexpr):
    if N.value > 2:
        return x * S.value
    return x


@triton.jit
def _constexpr_value_kernel(x_ptr, out_ptr, N: tl.constexpr, S: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if N.value > 3:  # the kernel's own constexprs too
        x = x + 1.0
    tl.store(out_ptr + offs, _scaled_by(x, N, S=S))


@pytest.mark.parametrize("n, expected", [(4, [0.5, 1.0, 1.5, 2.0]), (3, [0.0, 0.5, 1.0, 1.5]),
                                         (2, [0.0, 1.0, 2.0, 3.0])])
def test_int_and_float_constexprs_have_value_as_compiled(n, expected):
    """Compiled, a constexpr parameter is a tl.constexpr with .value, in the kernel and in a
    @jit helper; the interpreter passes plain ints and floats (AttributeError before)."""
    x = torch.arange(4, dtype=torch.float32)
    out = torch.empty_like(x)
    with interpreter_mode():
        _constexpr_value_kernel[(1,)](x, out, n, S=0.5)
    assert out.tolist() == expected


def test_interpreter_limitations_are_told_from_kernel_errors():
    from fuzzkern.execution.interpreter.fidelity import interpreter_limitation

    builder = _interp.interpreter_builder
    try:  # what Triton's interpreter raises for an atomic it does not implement
        builder.create_atomic_rmw("no-such-op", None, None, None, None, None)
    except ValueError as e:
        assert "unsupported rmwOp" in str(e)
        assert interpreter_limitation(e)
    try:
        builder.create_no_such_op()
    except AttributeError as e:
        assert interpreter_limitation(e)
    assert interpreter_limitation(NotImplementedError("inline_asm not supported"))
    # the same words raised by the kernel's or the launcher's own code: a real error
    try:
        raise ValueError("unsupported semantic: this launcher takes 2-D inputs only")
    except ValueError as e:
        assert not interpreter_limitation(e)
    assert not interpreter_limitation(AttributeError("'Tensor' object has no attribute 'x'"))


def test_a_libdevice_name_imported_in_interpreter_mode_still_compiles(tmp_path, monkeypatch):
    """A module imported while interpreter mode is active (a launcher that imports its kernels
    lazily, as Liger-Kernel's ops do) binds ``from ...libdevice import rsqrt`` to the patched
    function for good; compiled afterwards in the same worker, the front end gets the CUDA
    extern call, not the interpreter's builder ("extern_elementwise not supported in
    interpreter mode", every Liger norm on an H200 on 2026-12-01)."""
    import importlib
    import sys

    (tmp_path / "lazy_rsqrt_kernels.py").write_text(
        "import triton\n"
        "import triton.language as tl\n"
        "from triton.language.extra.libdevice import rsqrt\n\n\n"
        "@triton.jit\n"
        "def rsqrt_kernel(x_ptr, out_ptr, eps, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs)\n"
        "    tl.store(out_ptr + offs, rsqrt(x + eps.to(tl.float32)))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("lazy_rsqrt_kernels", None)
    x = torch.rand(16) + 0.5
    out = torch.empty(16)
    with interpreter_mode():
        mod = importlib.import_module("lazy_rsqrt_kernels")
        mod.rsqrt_kernel[(1,)](x, out, 1e-6, BLOCK=16)
    torch.testing.assert_close(out, torch.rsqrt(x + 1e-6))
    assert mod.rsqrt is not importlib.import_module("triton.language.extra.libdevice").rsqrt
    ttir = _front_end(mod.rsqrt_kernel,
                      {"x_ptr": "*fp32", "out_ptr": "*fp32", "eps": "fp32", "BLOCK": "constexpr"},
                      {"BLOCK": 16})
    assert "__nv_rsqrtf" in ttir
    sys.modules.pop("lazy_rsqrt_kernels", None)


def test_language_patches_are_made_once_per_launch_not_once_per_helper_call(monkeypatch):
    """A kernel calling a @jit helper and tl.standard reductions in each of its programs:
    Triton's language patching (inspect.getmembers over triton.language, several hundred
    attributes) runs a fixed number of times per launch, whatever the number of programs;
    results are right, and every patched attribute is back afterwards."""
    calls = []
    orig = fki._ORIG_PATCH_LANG

    def counting(fn):
        calls.append(fn)
        return orig(fn)

    monkeypatch.setattr(fki, "_ORIG_PATCH_LANG", counting)
    before = {name: vars(tl_core.tensor).get(name) for name in ("__add__", "__mul__", "to")}
    per_launch = []
    for rows in (1, 4, 32):
        x = torch.randn(rows, 10)
        calls.clear()
        with interpreter_mode() as session:
            out = K.helper_rows(x)
        assert session.leaked == ()
        y = torch.clamp(x * 2.0, min=0.0)
        torch.testing.assert_close(out, y.sum(1) + y.max(1).values)
        per_launch.append(len(calls))
    assert per_launch[0] == per_launch[1] == per_launch[2], per_launch
    assert 1 <= per_launch[0] <= 3, per_launch
    assert {name: vars(tl_core.tensor).get(name) for name in before} == before
    assert fki._STATE.scopes == []
