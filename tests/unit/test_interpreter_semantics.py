"""The interpreter's loop variables, and what the compiler refuses, as compiled
(fuzzkern.execution.interpreter.fidelity; docs/interpreter.md). The kernel-by-kernel comparison
with the
GPU is tests/fidelity; here: the rules themselves and the verdicts a case gets."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.execution.interpreter.core import interpreter_mode
from fuzzkern.execution.interpreter.fidelity import CompileError, LoopRange
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.execution.runner import run_case
from fuzzkern.judge.outcome import ModeResult, Verdict
from fuzzkern.judge.verdict import failure_location, verdict_of
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.filterwarnings("ignore")

HERE = os.path.dirname(__file__)


@triton.jit
def _iv_kernel(out_ptr, lo, hi):
    for i in range(lo, hi):  # int64 bounds: an int64 induction variable, no wrap
        tl.store(out_ptr + (i - lo), i * 4)
    for j in range(3):  # int32: wraps as compiled
        tl.store(out_ptr + 2 + j, (j * 1_500_000_000).to(tl.int64))


def test_a_loop_variable_has_the_compiled_type_of_its_bounds():
    out = torch.zeros(5, dtype=torch.int64)
    lo = 2**33
    with interpreter_mode():
        _iv_kernel[(1,)](out, lo, lo + 2)
    assert out[:2].tolist() == [lo * 4, (lo + 1) * 4]
    wrapped = (torch.arange(3, dtype=torch.int64) * 1_500_000_000).to(torch.int32)
    assert out[2:].tolist() == wrapped.tolist() == [0, 1_500_000_000, -1_294_967_296]


def test_loop_range_types_and_steps():
    assert LoopRange(3).dtype == tl.int32
    assert LoopRange(2**31, 2**31 + 1).dtype == tl.uint32
    assert LoopRange(0, 2**40).dtype == tl.int64
    # a negative constant step is negated by the code generator: its type is that of -step
    assert [int(t.handle.data[0]) for t in LoopRange(10, 0, -3)] == [10, 7, 4, 1]
    with pytest.raises(TypeError, match="must all be ints"):
        LoopRange(1.5)


@triton.jit
def _list_index(a_ptr, b_ptr, out_ptr):
    ptrs = (a_ptr, b_ptr)
    for i in range(2):  # a tensor loop variable still indexes a Python tuple
        tl.store(out_ptr + i, tl.load(ptrs[i]) + i.to(tl.float32))
    for s in tl.static_range(2):
        tl.store(out_ptr + 2 + s, tl.load(ptrs[s]) * s.value)


def test_a_loop_variable_indexes_python_lists_and_static_range_has_value():
    a, b = torch.tensor([10.0]), torch.tensor([20.0])
    out = torch.zeros(4)
    with interpreter_mode() as session:
        _list_index[(1,)](a, b, out)
    assert out.tolist() == [10.0, 21.0, 0.0, 20.0]
    assert session.leaked == ()


@triton.jit
def _bad_option(out_ptr, n):
    for i in tl.range(n, num_stage=2):  # misspelt: compiled, a TypeError too
        tl.store(out_ptr + i, 1.0)


def test_an_unknown_tl_range_option_is_refused():
    with interpreter_mode(), pytest.raises(Exception, match="num_stage"):
        _bad_option[(1,)](torch.zeros(2), 2)


# -- what the compiler refuses: compile-error, with the line ------------------------------------


@triton.jit
def _odd_arange(x_ptr, out_ptr):
    offs = tl.arange(0, 5)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def _two_targets(x_ptr, out_ptr):
    offs = tl.arange(0, 4)
    a = b = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, a + b)


@triton.jit
def _runtime_arange(x_ptr, out_ptr, B: tl.constexpr):
    H = B // 2  # an assignment makes a tensor of it, compiled too: not a constexpr
    offs = tl.arange(0, H)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def _launch_runtime_arange(x):
    out = torch.empty_like(x)
    _runtime_arange[(1,)](x, out, B=8)
    return out


def _launch_odd(x):
    out = torch.empty_like(x)
    _odd_arange[(1,)](x, out)
    return out


def _launch_two(x):
    out = torch.empty_like(x)
    _two_targets[(1,)](x, out)
    return out


def _target(launcher):
    import fuzzkern
    from fuzzkern import strategies as fks

    # built on demand: a module-level Target in a test file is a fuzz item of the plugin
    return fuzzkern.Target(launcher=launcher, reference=lambda x: x * 2,
                           inputs=fks.inputs(x=fks.tensors((8,), dtypes=["float32"])))


def _case() -> Case:
    return Case({}, {"x": TensorCase.build((8,), "float32")})


@pytest.mark.parametrize("launcher, words, line", [
    (_launch_odd, "arange's range must be a power of 2", "offs = tl.arange(0, 5)"),
    (_launch_two, "simultaneous multiple assignment", "a = b = tl.load(x_ptr + offs)"),
    (_launch_runtime_arange, "arange's arguments must be of type tl.constexpr",
     "offs = tl.arange(0, H)"),
])
def test_what_the_compiler_refuses_is_a_compile_error_at_the_kernel_line(launcher, words, line):
    o = run_case(_target(launcher), _case(), {"modes": ["interpret"]})
    assert o.verdict == Verdict.COMPILE_ERROR
    m = o.modes["interpret"]
    assert m.status == "compile-error" and words in m.error
    assert m.detail["location"].startswith("test_interpreter_semantics.py:")
    assert m.detail["location"].endswith(line)
    assert failure_location(o) == f"compile error at {m.detail['location'].split(': ')[0]}"


def test_a_compile_error_only_the_interpreter_claims_is_an_interpreter_divergence():
    refused = ModeResult("interpret", "compile-error", error="compile error: K >= 16")
    ok = ModeResult("compiled", "ok")
    assert verdict_of({"interpret": refused})[0] == Verdict.COMPILE_ERROR
    assert verdict_of({"interpret": refused, "compiled": ok})[0] == \
        Verdict.INTERPRETER_DIVERGENCE
    both = ModeResult("compiled", "compile-error", error="CompilationError: ...")
    assert verdict_of({"interpret": refused, "compiled": both})[0] == Verdict.COMPILE_ERROR
    assert Verdict.COMPILE_ERROR in Verdict.FAILURES


def test_a_compile_error_raised_here_keeps_its_words():
    from fuzzkern.execution.interpreter.fidelity import compile_refusal

    assert compile_refusal(CompileError("K >= 16")) == "K >= 16"
    assert compile_refusal(ValueError("arange's range must be a power of 2")) is None  # not
    # raised by triton.language: the kernel's own ValueError stays an error


def _interpreted_campaign(name: str, max_examples: int) -> engine.TargetResult:
    """A campaign of ``name`` in tests/unit/targets/compile_refusals.py, interpreted."""
    (lt,) = loader.load(os.path.join(HERE, "targets", "compile_refusals.py") + f"::{name}")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=30.0, seed=0, max_examples=max_examples,
                                      modes=("interpret",))
        return engine.fuzz_target(lt, pool, opts, 30.0)
    finally:
        pool.close()


def test_a_head_dim_below_the_dot_minimum_is_found_and_shrunk_to_the_smallest():
    """The linear-attention case: a head dimension padded to a power of 2 below 16 compiles
    to nothing on the GPU; the interpreter (minimum 1 upstream) ran it and passed."""
    result = _interpreted_campaign("head_scores", 25)
    verdicts = [f.outcome.verdict for f in result.failures]
    assert verdicts == [Verdict.COMPILE_ERROR]
    failure = result.failures[0]
    assert failure.case.dims == {"D": 1}
    assert "K >= 16" in failure.outcome.message and "tl.dot" in failure.outcome.message
    assert result.counts.get("pass", 0) >= 1  # D > 8 compiles and is right


def test_an_fp8_sum_is_a_compile_error_as_compiled_not_a_pass():
    """``tl.sum`` of fp8 values (a dequantizing reduction that forgot to widen) fails to
    compile on every backend (``llvm.fadd`` on ``i8``); the interpreter alone sums and would
    pass every case."""
    result = _interpreted_campaign("fp8_row_sums", 10)
    assert [f.outcome.verdict for f in result.failures] == [Verdict.COMPILE_ERROR]
    failure = result.failures[0]
    assert failure.case.dims == {"M": 1, "N": 1}  # every case fails: shrunk to the smallest
    message = failure.outcome.message
    assert "`tl.sum` of fp8e4nv values does not compile" in message
    assert "convert them to tl.float16 or tl.float32 first" in message
    assert result.counts.get("pass", 0) == 0


# -- fastpath: Triton's interpreter with less work, the same results -----------------------------


@triton.jit
def _mixed_ops(a_ptr, b_ptr, h_ptr, out_ptr, q_ptr):
    offs = tl.arange(0, 4)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    h = tl.load(h_ptr + offs)
    tl.store(out_ptr + offs, a * b + a)  # one type: no promotion
    tl.store(out_ptr + 4 + offs, a + 1)  # a Python scalar: upstream's path
    tl.store(q_ptr + offs, (h / h).to(tl.float32))  # fp16 division computes in fp32
    tl.store(q_ptr + 4 + offs, tl.join(a, b).reshape(8).to(tl.float32).sum(0)
             + tl.zeros((4,), tl.float32))


def test_the_fast_paths_keep_triton_results_and_types():
    import triton.runtime.interpreter as _interp
    from triton.language.semantic import TritonSemantic

    from fuzzkern.execution.interpreter import fastpath

    a, b = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0.5, -1.0, 2.0, 0.0])
    h = torch.tensor([3.0, 7.0, 1.0, 5.0], dtype=torch.float16)
    out, q = torch.zeros(8), torch.zeros(8)
    assert fastpath.np_dtype(tl.block_type(tl.float16, [4])) == np.float16
    with interpreter_mode() as session:
        _mixed_ops[(1,)](a, b, h, out, q)
        sem = _interp.interpreter_semantic
        x16 = sem.to_tensor(2.0)
        half = sem.cast(x16, tl.float16)
        lhs, rhs = TritonSemantic.binary_op_type_checking_impl(sem, half, half,
                                                                div_or_mod=True)
        assert lhs.dtype == rhs.dtype == tl.float32  # upstream's promotion, not the fast path
        same = sem.cast(x16, tl.float32)
        assert TritonSemantic.binary_op_type_checking_impl(sem, same, same) == (same, same)
        block = tl.core.tensor(_interp.TensorHandle(np.zeros(4, np.float32), tl.float32),
                               tl.block_type(tl.float32, [4]))
        assert isinstance(block.shape, tl.core.tuple) and [int(s) for s in block.shape] == [4]
        assert int(block.numel) == 4
    assert session.leaked == ()
    assert _interp._get_np_dtype is fastpath._ORIG_NP_DTYPE  # put back
    assert TritonSemantic.binary_op_type_checking_impl is fastpath._ORIG_BINARY
    assert out.tolist() == [1.5, 0.0, 9.0, 4.0, 2.0, 3.0, 4.0, 5.0]
    assert q.tolist() == [1.0, 1.0, 1.0, 1.0] + [11.5] * 4


# -- what the interpreter cannot run: unsupported, found before the kernel runs -----------------


@triton.jit
def _asm_kernel(x_ptr, y_ptr, FAST: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if FAST:  # a branch: not every launch takes it
        x = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    tl.store(y_ptr + offs, tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x],
                                                     dtype=tl.float32, is_pure=True, pack=1))


@triton.jit
def _asm_in_branch(x_ptr, y_ptr, FAST: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if FAST:
        x = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                      is_pure=True, pack=1)
    tl.store(y_ptr + offs, x)


def test_inline_asm_on_every_path_is_unsupported_before_any_program_runs():
    from fuzzkern.execution.interpreter.fidelity import InterpreterUnsupported, static_limitation

    assert static_limitation(_asm_in_branch.fn) is None
    why = static_limitation(_asm_kernel.fn)
    assert why is not None and why.startswith("inline assembly")
    assert "test_interpreter_semantics.py:" in why and "tl.store(y_ptr + offs" in why
    x, y = torch.ones(4), torch.zeros(4)
    with interpreter_mode() as session, pytest.raises(InterpreterUnsupported) as info:
        _asm_kernel[(1,)](x, y, FAST=False)
    assert info.value.static and session.launches == 0
    with interpreter_mode():
        _asm_in_branch[(1,)](x, y, FAST=False)  # the branch not taken: runs
    assert y.tolist() == [1.0] * 4

    def launcher(x):
        out = torch.empty_like(x)
        _asm_kernel[(1,)](x, out, FAST=False)
        return out

    o = run_case(_target(launcher), _case(), {"modes": ["interpret"]})
    assert o.verdict == Verdict.UNSUPPORTED
    assert o.modes["interpret"].detail["static"] is True
    assert "inline assembly" in o.modes["interpret"].error


@triton.jit
def _carried(x_ptr, out_ptr, n, SCALAR_START: tl.constexpr):
    offs = tl.arange(0, 4)
    if SCALAR_START:
        acc = 0.0
    else:
        acc = tl.zeros((4,), tl.float32)
    k = 0
    for i in range(n):
        acc += tl.load(x_ptr + offs)
        k += i  # int32 + int32: the type stays
    tl.store(out_ptr + offs, acc + k)


@triton.jit
def _constexpr_reassigned(out_ptr, n, B: tl.constexpr):
    for _ in range(n):
        B = B + 1
    tl.store(out_ptr, B)


@triton.jit
def _loop_local(x_ptr, out_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    acc = tl.zeros((B, B), tl.float32)
    for _ in range(n):
        a = tl.load(x_ptr + o)  # a block of B: bound first in this loop's body
        acc += a[:, None]
    for _ in range(n):
        a = tl.load(x_ptr + o[:, None] * 0 + o[None, :])  # a B x B block: another `a`
        acc += a
    tl.store(out_ptr + o[:, None] * B + o[None, :], acc)


def test_a_name_an_earlier_loop_bound_is_not_carried_by_a_later_one():
    # Triton's code generator scopes a loop's body: `a` of the first loop is gone after it, so
    # the second loop's `a` is a new name there, not a loop-carried variable changing type.
    x, out = torch.arange(4, dtype=torch.float32), torch.zeros(16)
    with interpreter_mode():
        _loop_local[(1,)](x, out, 2, B=4)
    expected = 2 * x[:, None] + 2 * x[None, :]
    assert out.view(4, 4).tolist() == expected.tolist()


def test_a_loop_carried_variable_must_keep_its_type_as_compiled():
    x, out = torch.ones(4), torch.zeros(4)
    with interpreter_mode():
        _carried[(1,)](x, out, 3, SCALAR_START=False)
    assert out.tolist() == [6.0] * 4  # 3 loads, k = 0 + 1 + 2
    with interpreter_mode(), pytest.raises(Exception, match="Loop-carried variable acc has "
                                            "initial type fp32 but is re-assigned to"):
        _carried[(1,)](x, out, 3, SCALAR_START=True)
    with interpreter_mode(), pytest.raises(Exception, match="Loop carried variable B is not"):
        _constexpr_reassigned[(1,)](out, 2, B=4)
