"""The interpreter-vs-compiled self-check: one small kernel per construct whose semantics
fuzzkern's interpreter adapter fixes (fuzzkern.execution.interpreter.fidelity).

Each :class:`FidelityCase` launches its kernel on a device and returns output tensors, and
gives the compiled semantics computed in torch (``expected``). The interpreter half
(tests/fidelity/test_fidelity.py, in CI) checks the interpreter against ``expected``; the
compiled half (bench/fidelity.py --compiled, part of bench/gpu_suite.sh) runs the same kernels
compiled on a GPU and compares them with the interpreter, bitwise or to ``ulps``.
docs/interpreter.md is generated from this list (``python bench/fidelity.py --table``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

from fuzzkern.execution.interpreter.fidelity import (
    CHAINED_COMPARISON_MESSAGE,
    compiler_rejects_chained_comparisons,
)


@dataclass(frozen=True)
class FidelityCase:
    name: str
    #: the construct, as docs/interpreter.md lists it
    construct: str
    #: what Triton's own interpreter does with it
    upstream: str
    #: upstream issue or pull request, where one is known
    issue: str | None
    run: Callable[[str], list[torch.Tensor]]
    expected: Callable[[], list[torch.Tensor]]
    #: 0: bitwise; else the largest ULP distance allowed (float outputs)
    ulps: int = 0
    #: the words of the compile error this Triton's compiler raises for the construct (None:
    #: it compiles); the interpreter must then raise the same, not run it
    rejected: Callable[[], str | None] = lambda: None
    #: a known gap where compiled code on some GPUs computes otherwise, in words (the GPU half
    #: then reports a difference as that gap, an expected failure, not as a pass)
    gap: str | None = None


CASES: list[FidelityCase] = []


def case(**kw: object) -> Callable[[Callable[[str], list[torch.Tensor]]],
                                   Callable[[str], list[torch.Tensor]]]:
    def register(run: Callable[[str], list[torch.Tensor]]) -> Callable[[str], list[torch.Tensor]]:
        CASES.append(FidelityCase(run=run, **kw))  # type: ignore[arg-type]
        return run

    return register


# -- boolean operators --------------------------------------------------------------------------


@triton.jit
def _bool_ops(out_ptr, t_ptr):
    r = tl.arange(0, 2)[:, None]
    c = tl.arange(0, 2)[None, :]
    t = tl.load(t_ptr + r * 2 + c)
    m_and = r < 1 and c < 2
    m_or = r < 1 or c < 1
    m_not = not (t == -100)
    m_const = True and (c < 1)  # a constant operand drops out, as compiled
    offs = r * 2 + c
    tl.store(out_ptr + offs, m_and.to(tl.int32))
    tl.store(out_ptr + 4 + offs, m_or.to(tl.int32))
    tl.store(out_ptr + 8 + offs, m_not.to(tl.int32))
    tl.store(out_ptr + 12 + offs, m_const.to(tl.int32))


def _bool_ops_run(device: str) -> list[torch.Tensor]:
    out = torch.full((16,), -1, dtype=torch.int32, device=device)
    t = torch.tensor([-100, 3, 5, -100], dtype=torch.int32, device=device)
    _bool_ops[(1,)](out, t)
    return [out]


def _bool_ops_expected() -> list[torch.Tensor]:
    r = torch.arange(2)[:, None]
    c = torch.arange(2)[None, :]
    t = torch.tensor([-100, 3, 5, -100]).reshape(2, 2)
    parts = [(r < 1) & (c < 2), (r < 1) | (c < 1), ~(t == -100), (c < 1).expand(2, 2)]
    return [torch.cat([p.expand(2, 2).reshape(-1) for p in parts]).to(torch.int32)]


case(name="tensor_and_or_not", construct="`a and b`, `a or b`, `not t` on tensors",
     upstream="Python's operators: one operand (a 2x2 `r < 1 and c < 2` is all true), "
     "`not t` a single bool", issue="triton#6769 (compiled semantics)",
     expected=_bool_ops_expected)(_bool_ops_run)


@triton.jit
def _chained(out_ptr, n):
    x = tl.arange(0, 8)
    tl.store(out_ptr + x, (1 <= x < n).to(tl.int32))


def _chained_run(device: str) -> list[torch.Tensor]:
    out = torch.full((8,), -1, dtype=torch.int32, device=device)
    _chained[(1,)](out, 5)
    return [out]


def _chained_rejected() -> str | None:
    return CHAINED_COMPARISON_MESSAGE if compiler_rejects_chained_comparisons() else None


case(name="chained_comparison", construct="chained comparison `1 <= x < n` on tensors",
     upstream="Triton 3.6: Python's `and` of the two comparisons, where its compiler rejects "
     "the construct (3.9 compiles it as `and`)", issue=None,
     expected=lambda: [((torch.arange(8) >= 1) & (torch.arange(8) < 5)).to(torch.int32)],
     rejected=_chained_rejected)(_chained_run)


# -- scalar arguments ---------------------------------------------------------------------------


@triton.jit
def _float_arg(x_ptr, out_ptr, eps, scale):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * scale + eps.to(tl.float32))


def _float_arg_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor([1000.0, 3.0, 60000.0, 1e-3], dtype=torch.float16, device=device)
    out = torch.empty(4, dtype=torch.float32, device=device)
    _float_arg[(1,)](x, out, 1e-6, 1.1e-4)
    return [out]


def _float_arg_expected() -> list[torch.Tensor]:
    x = torch.tensor([1000.0, 3.0, 60000.0, 1e-3], dtype=torch.float16).float()
    return [x * torch.tensor(1.1e-4, dtype=torch.float32)
            + torch.tensor(1e-6, dtype=torch.float32)]


# compiled, `x * scale + eps` contracts into one fma (one rounding where the interpreter and
# torch round twice): 1 ULP apart is the compiled semantics, not a gap
case(name="float_argument", construct="Python float kernel argument (`eps.to(...)`, products)",
     upstream="a weak Python float: `eps.to` raises, products round differently",
     issue="triton#5965 (related)", expected=_float_arg_expected, ulps=1)(_float_arg_run)


@triton.jit
def _int_arg(out_ptr, n):
    tl.store(out_ptr, n * 2)
    tl.store(out_ptr + 1, n + 1)


def _int_arg_run(device: str) -> list[torch.Tensor]:
    out = torch.zeros(2, dtype=torch.int64, device=device)
    _int_arg[(1,)](out, 3_000_000_000)
    return [out]


case(name="int_argument_u32_range", construct="int argument in [2**31, 2**32)",
     upstream="uint32 (wraps at 2**32) where compiled types it int64", issue=None,
     expected=lambda: [torch.tensor([6_000_000_000, 3_000_000_001])])(_int_arg_run)


# -- dtypes in helpers --------------------------------------------------------------------------


@triton.jit
def _cast_helper(x, DT: tl.constexpr):
    return x.to(DT.value)


@triton.jit
def _dtype_helper(x_ptr, out_ptr, DT: tl.constexpr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, _cast_helper(tl.load(x_ptr + offs), DT))


def _dtype_helper_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor([1.5, -2.25, 3.0, 70000.0], device=device)
    out = torch.empty(4, dtype=torch.float16, device=device)
    _dtype_helper[(1,)](x, out, tl.float16)
    return [out]


case(name="dtype_in_helper", construct="`tl.dtype` passed into a `@jit` helper (`DT.value`)",
     upstream="the bare dtype: no `.value`", issue=None,
     expected=lambda: [torch.tensor([1.5, -2.25, 3.0, 70000.0]).half()])(_dtype_helper_run)


# -- libdevice ----------------------------------------------------------------------------------

_X = [-2.5, -0.75, -0.1, 0.0, 0.3, 0.9, 1.7, 3.2]


@triton.jit
def _libdevice_fns(x_ptr, out_ptr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, libdevice.tanh(x))
    tl.store(out_ptr + 8 + offs, libdevice.erf(x))
    tl.store(out_ptr + 16 + offs, libdevice.exp2(x))
    tl.store(out_ptr + 24 + offs, libdevice.rsqrt(x + 3.0))
    tl.store(out_ptr + 32 + offs, libdevice.pow(x + 3.0, 1.5))
    tl.store(out_ptr + 40 + offs, libdevice.log1p(x + 1.0))
    tl.store(out_ptr + 48 + offs, libdevice.expm1(x))
    tl.store(out_ptr + 56 + offs, cuda_libdevice.erfc(x))


def _libdevice_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor(_X, device=device)
    out = torch.empty(64, device=device)
    _libdevice_fns[(1,)](x, out)
    return [out]


def _libdevice_expected() -> list[torch.Tensor]:
    # the kernel's inputs are fp32 (x + 3.0 is rounded to fp32 too): exact math on those,
    # rounded once
    x32 = torch.tensor(_X)
    x, x3, x1 = x32.double(), (x32 + 3.0).double(), (x32 + 1.0).double()
    parts = [torch.tanh(x), torch.erf(x), torch.exp2(x), torch.rsqrt(x3), x3 ** 1.5,
             torch.log1p(x1), torch.expm1(x), torch.erfc(x)]
    return [torch.cat(parts).float()]


case(name="libdevice", construct="libdevice functions (tanh, erf, exp2, rsqrt, pow, log1p, "
     "expm1, erfc), generic and `extra.cuda` modules",
     upstream="the generic stub returns None; the CUDA wrapper raises \"Did you forget to add "
     "@triton.jit\"; `extern_elementwise` is not implemented", issue="triton#8825",
     expected=_libdevice_expected, ulps=2)(_libdevice_run)


@triton.jit
def _libdevice_f64(x_ptr, out_ptr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, libdevice.tanh(x))
    tl.store(out_ptr + 8 + offs, libdevice.erf(x))


def _libdevice_f64_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor(_X, dtype=torch.float64, device=device)
    out = torch.empty(16, dtype=torch.float64, device=device)
    _libdevice_f64[(1,)](x, out)
    return [out]


case(name="libdevice_fp64", construct="libdevice on fp64 (the `__nv_*` double variants)",
     upstream="as above", issue="triton#8825",
     expected=lambda: [torch.cat([torch.tanh(torch.tensor(_X, dtype=torch.float64)),
                                  torch.erf(torch.tensor(_X, dtype=torch.float64))])],
     ulps=2)(_libdevice_f64_run)


# -- NaN in reductions --------------------------------------------------------------------------


@triton.jit
def _nan_reduce(x_ptr, imax_ptr, imin_ptr, vmax_ptr, vmin_ptr):
    r = tl.arange(0, 4)[:, None]
    c = tl.arange(0, 4)[None, :]
    x = tl.load(x_ptr + r * 4 + c)
    rows = tl.arange(0, 4)
    tl.store(imax_ptr + rows, tl.argmax(x, 1))
    tl.store(imin_ptr + rows, tl.argmin(x, 1))
    tl.store(vmax_ptr + rows, tl.max(x, 1))
    tl.store(vmin_ptr + rows, tl.min(x, 1))


_NAN = float("nan")
# an all-NaN row and rows without NaN: argmax/argmin and max/min are the same in any lane order
_ROWS = [[_NAN, _NAN, _NAN, _NAN], [1.0, 5.0, -2.0, 0.5], [4.0, -3.0, 4.0, 0.0],
         [3.0, 0.5, 3.0, -1.0]]
# rows mixing NaN and numbers: max/min ignore the NaN in any order; argmax/argmin do not (the
# compiled index depends on the layout's combine order: a NaN wins as the second operand)
_MIXED = [[_NAN, 2.0, 7.0, _NAN], [3.0, _NAN, 3.0, -1.0], [_NAN, -5.0, _NAN, 1.0],
          [0.0, 0.0, _NAN, 0.0]]


def _nan_reduce_run(device: str) -> list[torch.Tensor]:
    outs = []
    for rows in (_ROWS, _MIXED):
        x = torch.tensor(rows, device=device)
        imax = torch.full((4,), -7, dtype=torch.int32, device=device)
        imin = torch.full((4,), -7, dtype=torch.int32, device=device)
        vmax = torch.empty(4, device=device)
        vmin = torch.empty(4, device=device)
        _nan_reduce[(1,)](x, imax, imin, vmax, vmin)
        outs += [imax, imin, vmax, vmin] if rows is _ROWS else [vmax, vmin]
    return outs


def _nan_reduce_expected() -> list[torch.Tensor]:
    # compiled: max/min ignore NaN (maxnumf); a NaN never wins a combine as the first operand,
    # so an all-NaN row ends on its last element; ties go to the first index
    return [torch.tensor([3, 1, 0, 0], dtype=torch.int32),
            torch.tensor([3, 2, 1, 3], dtype=torch.int32),
            torch.tensor([_NAN, 5.0, 4.0, 3.0]), torch.tensor([_NAN, -2.0, -3.0, -1.0]),
            torch.tensor([7.0, 3.0, 1.0, 0.0]), torch.tensor([2.0, -1.0, -5.0, 0.0])]


case(name="nan_reductions", construct="`tl.argmax`/`argmin`/`max`/`min` over rows with NaN "
     "(all-NaN and mixed)",
     upstream="Triton 3.9: `np.nanargmax` raises on an all-NaN row; 3.6: NaN propagates "
     "(the index over a row mixing NaN and numbers depends on the compiled layout: values "
     "only)",
     issue=None, expected=_nan_reduce_expected)(_nan_reduce_run)


# -- loop variables -----------------------------------------------------------------------------


@triton.jit
def _range_loop(x_ptr, acc_ptr, iv_ptr, NT, BT: tl.constexpr):
    offs = tl.arange(0, BT)
    acc = tl.zeros((BT,), tl.float32)
    for i_t in range(NT):
        acc += tl.load(x_ptr + i_t.to(tl.int64) * BT + offs)  # .to, as fla's chunked ops
        acc += tl.where(offs < i_t, 1.0, 0.0)  # compared with a tensor
        tl.store(iv_ptr + i_t, i_t * 1_000_000_007)  # int32 arithmetic: wraps as compiled
    k = 0
    for j in range(NT - 1, -1, -1):  # a negative constant step
        tl.store(iv_ptr + NT + k, j.cast(tl.int32) - 100)
        k += 1
    for i in tl.range(1, NT, 2, num_stages=2, loop_unroll_factor=2):  # options: scheduling only
        acc += tl.load(x_ptr + i * BT + offs) * i.to(tl.float32)
    tl.store(acc_ptr + offs, acc)


def _range_loop_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(32, dtype=torch.float32, device=device) / 8
    acc = torch.empty(8, device=device)
    iv = torch.full((8,), -1, dtype=torch.int32, device=device)
    _range_loop[(1,)](x, acc, iv, 4, BT=8)
    return [acc, iv]


def _range_loop_expected() -> list[torch.Tensor]:
    x = (torch.arange(32, dtype=torch.float32) / 8).reshape(4, 8)
    offs = torch.arange(8)
    acc = torch.zeros(8)
    for i in range(4):
        acc = acc + x[i]
        acc = acc + (offs < i).float()
    for i in (1, 3):
        acc = acc + x[i] * float(i)
    wraps = (torch.arange(4, dtype=torch.int64) * 1_000_000_007).to(torch.int32)
    down = torch.tensor([3, 2, 1, 0], dtype=torch.int32) - 100
    return [acc, torch.cat([wraps, down])]


case(name="range_loop_variable", construct="`range`/`tl.range` loop variable as a tensor "
     "(`i.to(tl.int64)`, `i.cast`, comparisons, int32 arithmetic, a negative step, `tl.range` "
     "options)", upstream="a Python int: `i_t.to` raises `AttributeError: 'int' object has no "
     "attribute 'to'`; arithmetic never wraps", issue=None,
     expected=_range_loop_expected)(_range_loop_run)


@triton.jit
def _static_loop(x_ptr, out_ptr, BT: tl.constexpr):
    offs = tl.arange(0, BT)
    acc = tl.zeros((BT,), tl.float32)
    HALF: tl.constexpr = BT // 2
    for i in tl.static_range(1, 4):
        w = i.value * HALF  # constexpr arithmetic (Triton 3.6 refuses `w: tl.constexpr` here:
        # a constexpr cannot be reassigned in a loop)
        acc += tl.load(x_ptr + i * BT + offs) * w
    WIDE: tl.constexpr = tl.constexpr(BT) * 2
    tl.store(out_ptr + tl.arange(0, WIDE), tl.join(acc, acc).reshape(WIDE))


def _static_loop_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(32, dtype=torch.float32, device=device)
    out = torch.empty(16, device=device)
    _static_loop[(1,)](x, out, BT=8)
    return [out]


def _static_loop_expected() -> list[torch.Tensor]:
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    acc = x[1] * 4 + x[2] * 8 + x[3] * 12
    return [torch.stack([acc, acc], dim=1).reshape(16)]


case(name="static_range_variable", construct="`tl.static_range` loop variable (`i.value`) and "
     "`tl.constexpr` arithmetic", upstream="a Python int: `i.value` raises", issue=None,
     expected=_static_loop_expected)(_static_loop_run)


# -- memory: block pointers and tensor descriptors ----------------------------------------------


@triton.jit
def _block_ptr(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    q = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    for _ in range(2):
        v = tl.load(p, boundary_check=(0, 1), padding_option="zero")
        tl.store(q, v * 2, boundary_check=(0, 1))
        p = tl.advance(p, (BM, 0))
        q = tl.advance(q, (BM, 0))


def _block_ptr_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(48, dtype=torch.float32, device=device)
    out = torch.full((48,), -1.0, device=device)
    _block_ptr[(1,)](x, out, 6, 8, BM=4, BN=8)
    return [out]


def _block_ptr_rejected() -> str | None:
    import inspect

    words = "Block pointers have been removed"
    return words if words in inspect.getsource(tl.make_block_ptr) else None


case(name="block_pointer", construct="block pointers (`tl.make_block_ptr`, `tl.advance`, "
     "`boundary_check`)", upstream="Triton 3.6: as compiled; 3.9 removed them (the compiler "
     "and the interpreter refuse them)", issue=None,
     expected=lambda: [torch.arange(48, dtype=torch.float32) * 2],
     rejected=_block_ptr_rejected)(_block_ptr_run)


@triton.jit
def _descriptor(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    o = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    for i in range(2):
        v = d.load([i * BM, 0])  # rows past M read as 0
        o.store([i * BM, 0], v * 2 + 1)  # and are not written


def _descriptor_run(device: str) -> list[torch.Tensor]:
    if device != "cpu":  # device-side descriptors need scratch memory compiled
        triton.set_allocator(lambda size, align, stream: torch.empty(
            size, dtype=torch.int8, device=device))
    x = torch.arange(48, dtype=torch.float32, device=device)
    out = torch.full((48,), -1.0, device=device)
    _descriptor[(1,)](x, out, 6, 8, BM=4, BN=8)
    return [out]


case(name="tensor_descriptor", construct="`tl.make_tensor_descriptor` in the kernel (load and "
     "store of blocks past the end)", upstream="as compiled", issue=None,
     expected=lambda: [torch.arange(48, dtype=torch.float32) * 2 + 1])(_descriptor_run)


@triton.jit
def _dtype_bare(x_ptr, out_ptr, DT: tl.constexpr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DT))


def _dtype_bare_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor([1.5, -2.25, 3.0, 70000.0], device=device)
    out = torch.empty(4, dtype=torch.float16, device=device)
    _dtype_bare[(1,)](x, out, tl.float16)
    return [out]


case(name="dtype_argument", construct="a `tl.dtype` passed bare as a kernel's `tl.constexpr` "
     "argument (Triton 3.6 compiled refuses one for a parameter not declared constexpr)",
     upstream="as compiled", issue=None,
     expected=lambda: [torch.tensor([1.5, -2.25, 3.0, 70000.0]).half()])(_dtype_bare_run)


# -- low-precision reductions, scans and dots ---------------------------------------------------
# Compiled Triton keeps a float sum in its input's dtype and rounds every partial result there:
# each thread sums its elements in order, then the partials combine in a tree. The data make the
# result independent of which elements a thread holds: 1024 first (thread 0's first element),
# then 0.25s, which 1024 absorbs in fp16 and bf16 but which sum exactly elsewhere (2040); summed
# in float32 and rounded once, as numpy and Triton's interpreter do, it is 2048.


@triton.jit
def _narrow_sum(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.sum(x, axis=0))


def _narrow_sum_run(dtype: torch.dtype) -> Callable[[str], list[torch.Tensor]]:
    def run(device: str) -> list[torch.Tensor]:
        x = torch.full((4096,), 0.25, dtype=dtype, device=device)
        x[0] = 1024
        out = torch.zeros(1, dtype=dtype, device=device)
        _narrow_sum[(1,)](x, out, N=4096)
        return [out]

    return run


for _dt, _name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    case(name=f"sum_{_name}", construct=f"`tl.sum` of {_name}: partial sums rounded to {_name} "
         "along the compiled tree", upstream="sums in float32 (numpy; bf16 widened) and rounds "
         "once: a low-precision reduction is more exact than compiled", issue=None,
         expected=lambda _dt=_dt: [torch.tensor([2040.0], dtype=_dt)])(_narrow_sum_run(_dt))


@triton.jit
def _narrow_cumsum(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


def _narrow_cumsum_run(dtype: torch.dtype) -> Callable[[str], list[torch.Tensor]]:
    def run(device: str) -> list[torch.Tensor]:
        x = torch.full((1024,), 1 + 2 ** -10, dtype=dtype, device=device)
        out = torch.zeros(1024, dtype=dtype, device=device)
        _narrow_cumsum[(1,)](x, out, N=1024)
        return [out]

    return run


def _narrow_cumsum_expected(dtype: torch.dtype) -> list[torch.Tensor]:
    import numpy as np

    from fuzzkern.execution.interpreter import formats

    x = np.full(1024, float(torch.tensor(1 + 2 ** -10, dtype=dtype)))
    return [torch.from_numpy(formats.ordered_cumsum(x, 0, formats.TL_OF[dtype])).to(dtype)]


# 3.6 promotes a bf16 scan to float32 (core._promote_bfloat16_to_float32); fp16 scans in fp16
case(name="cumsum_fp16", construct="`tl.cumsum` of fp16: partial sums rounded to fp16 (blocks "
     "of lanes scanned in a tree, then the running total; the GPU's own scan tree is not "
     "modelled exactly: 1 ulp apart at the tail of a 1024-long scan on an H200, 2026-12-04)",
     upstream="scans in float32 and rounds once", issue=None, ulps=1,
     expected=lambda: _narrow_cumsum_expected(torch.float16))(_narrow_cumsum_run(torch.float16))


@triton.jit
def _narrow_dot(a_ptr, b_ptr, c_ptr, K: tl.constexpr):
    r = tl.arange(0, 16)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + r[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, out_dtype=tl.float16))


def _narrow_dot_run(device: str) -> list[torch.Tensor]:
    a = torch.full((16, 64), 0.1, dtype=torch.float16, device=device)
    a[:, 0] = 1024
    b = torch.ones(64 * 16, dtype=torch.float16, device=device)
    c = torch.zeros(256, dtype=torch.float16, device=device)
    _narrow_dot[(1,)](a, b, c, K=64)
    return [c]


case(name="dot_fp16_accumulator", construct="`tl.dot(..., out_dtype=tl.float16)`: the fp16 "
     "accumulator rounded after each K step of 16 (a tensor core's)", upstream="numpy's "
     "float16 matmul", issue=None,
     expected=lambda: [torch.full((256,), 1031.0, dtype=torch.float16)])(_narrow_dot_run)


# -- fp8 reductions and dots --------------------------------------------------------------------

_FP8 = ((torch.float8_e4m3fn, "fp8e4m3"), (torch.float8_e5m2, "fp8e5m2"))


@triton.jit
def _fp8_arith(x_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if OP == "sum":
        y = tl.sum(x, axis=0)
    elif OP == "cumsum":
        y = tl.sum(tl.cumsum(x, axis=0).to(tl.float32), axis=0)
    elif OP == "add":
        y = tl.sum((x + x).to(tl.float32), axis=0)
    elif OP == "mul":
        y = tl.sum((x * 2).to(tl.float32), axis=0)
    elif OP == "neg":
        y = tl.sum((-x).to(tl.float32), axis=0)
    else:
        y = tl.sum(tl.where(x > 0, 1.0, 0.0), axis=0)
    tl.store(out_ptr, y.to(tl.float32))


def _fp8_arith_run(dtype: torch.dtype, op: str) -> Callable[[str], list[torch.Tensor]]:
    def run(device: str) -> list[torch.Tensor]:
        x = torch.full((128,), 0.25, device=device).to(dtype)
        out = torch.zeros(1, device=device)
        _fp8_arith[(1,)](x, out, N=128, OP=op)
        return [out]

    return run


#: the compiled error (its detail, "'llvm.fadd' op operand #0 must be floating point LLVM
#: type ..., but got 'i8'", goes to stderr) and so the interpreter's; Triton 3.6's front end
#: refuses some before that: a comparison with an int ("unexpected type fp8e5 and int32"), an
#: fp8 constant (`x * 2`: "object has no attribute 'get_fp8e4nv'")
_FP8_ARITH_REFUSED = "PassManager::run failed|unexpected type fp8|has no attribute 'get_fp8"
_FP8_OPS = (("sum", "`tl.sum`"), ("cumsum", "`tl.cumsum`"), ("add", "`x + x`"),
            ("mul", "`x * 2`"), ("neg", "`-x`"), ("compare", "`x > 0`"))


@triton.jit
def _fp8_dot(a_ptr, b_ptr, c_ptr, K: tl.constexpr, ACC16: tl.constexpr):
    r = tl.arange(0, 16)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + r[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + r[None, :])
    if ACC16:
        c = tl.dot(a, b, out_dtype=tl.float16).to(tl.float32)
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)


def _fp8_dot_run(dtype: torch.dtype, acc16: bool) -> Callable[[str], list[torch.Tensor]]:
    def run(device: str) -> list[torch.Tensor]:
        # rows 0-7: 256 and 63 terms of 2**-7, rows 8-15: 256 and 63 terms of 2**-8 (exact
        # in both fp8 formats); b all ones
        a = torch.full((16, 64), 2.0 ** -7)
        a[8:] = 2.0 ** -8
        a[:, 0] = 256
        b = torch.ones(64 * 16)
        c = torch.zeros(256, device=device)
        _fp8_dot[(1,)](a.to(device).to(dtype), b.to(device).to(dtype), c, K=64, ACC16=acc16)
        return [c]

    return run


def _fp8_dot_expected(acc16: bool) -> list[torch.Tensor]:
    # fp16 accumulator, rounded after each K step of 32 (an 8-bit MMA's K): 256 + 31/128 ->
    # 256.25, + 32/128 -> 256.5; 256 + 31/256 -> 256.0, + 32/256 = 256.125 -> 256.0 (a tie, to
    # even). float32 accumulator: exact, 256 + 63/128 and 256 + 63/256.
    hi, lo = (256.5, 256.0) if acc16 else (256 + 63 / 128, 256 + 63 / 256)
    return [torch.tensor([hi] * 128 + [lo] * 128)]


_TENSOR_CORE_GAP = ("on sm_90 (H100/H200) Triton's default `max_num_imprecise_acc` (2**30) "
                    "leaves fp8 products to the tensor core's own reduced-precision "
                    "accumulation, which the interpreter does not model")

for _dt, _name in _FP8:
    for _op, _words in _FP8_OPS:
        case(name=f"{_op}_{_name}", construct=f"{_words} of {_name} values: arithmetic of "
             "two same-type fp8 values stays fp8, which no backend lowers (a compile error)",
             upstream="holds fp8 as raw bits and computes on them (fuzzkern, before: "
             "computed it in float32)", issue="triton-lang/triton#11898",
             expected=lambda: [torch.zeros(1)],
             rejected=lambda: _FP8_ARITH_REFUSED)(_fp8_arith_run(_dt, _op))
    case(name=f"dot_{_name}_fp16_accumulator", construct=f"`tl.dot` of {_name} with "
         "`out_dtype=tl.float16`: the fp16 accumulator rounded after each K step of 32 (an "
         "8-bit MMA's K)", upstream="converts to float16 and takes numpy's float16 matmul",
         issue=None, gap=_TENSOR_CORE_GAP + " (on an H200 with Triton 3.6 every product "
         "below the accumulator's half ULP is lost: 256 + 63 * 2**-7 is 256)",
         expected=lambda: _fp8_dot_expected(True))(_fp8_dot_run(_dt, True))
    case(name=f"dot_{_name}", construct=f"`tl.dot` of {_name} into a float32 accumulator: "
         "exact products summed in float32", upstream="converts to float16, then numpy's "
         "float32 matmul", issue=None, gap=_TENSOR_CORE_GAP,
         expected=lambda: _fp8_dot_expected(False))(_fp8_dot_run(_dt, False))


# -- what the compiler refuses ------------------------------------------------------------------


@triton.jit
def _dot_small_k(a_ptr, b_ptr, c_ptr, K: tl.constexpr):
    r = tl.arange(0, 16)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + r[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))


def _dot_small_k_run(device: str) -> list[torch.Tensor]:
    a = torch.ones(16 * 8, dtype=torch.float16, device=device)
    b = torch.ones(8 * 16, dtype=torch.float16, device=device)
    c = torch.zeros(256, device=device)
    _dot_small_k[(1,)](a, b, c, K=8)
    return [c]


case(name="dot_below_minimum", construct="`tl.dot` with K below the compiler's minimum "
     "(fp16 K = 8)", upstream="runs (its minimum is 1): a kernel the GPU cannot compile passes",
     issue=None, expected=lambda: [torch.full((256,), 8.0)],
     rejected=lambda: "Input shapes should have M >= 1, N >= 1 and K >= 16")(_dot_small_k_run)


@triton.jit
def _arange_odd(x_ptr, out_ptr):
    offs = tl.arange(0, 5)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def _arange_odd_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(8, dtype=torch.float32, device=device)
    out = torch.zeros(8, device=device)
    _arange_odd[(1,)](x, out)
    return [out]


case(name="arange_not_power_of_2", construct="`tl.arange` of a range that is not a power of 2",
     upstream="raises the compiler's ValueError (fuzzkern: `compile-error`, not `error`)",
     issue=None, expected=lambda: [torch.zeros(8)],
     rejected=lambda: "arange's range must be a power of 2")(_arange_odd_run)


@triton.jit
def _arange_assigned(x_ptr, out_ptr, B: tl.constexpr):
    H = B // 2  # an assignment: a tensor, not a constexpr (`H: tl.constexpr = ...` is one)
    offs = tl.arange(0, H)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def _arange_assigned_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(8, dtype=torch.float32, device=device)
    out = torch.zeros(8, device=device)
    _arange_assigned[(1,)](x, out, B=8)
    return [out]


case(name="arange_assigned_bound", construct="`tl.arange(0, H)` with `H = B // 2` assigned "
     "(not declared `tl.constexpr`)", upstream="raises the compiler's ValueError "
     "(fuzzkern: `compile-error`)", issue=None, expected=lambda: [torch.zeros(8)],
     rejected=lambda: "arange's arguments must be of type tl.constexpr")(_arange_assigned_run)


@triton.jit
def _too_big(out_ptr):
    z = tl.zeros((2048, 1024), tl.float32)
    tl.store(out_ptr + tl.arange(0, 4), tl.sum(tl.sum(z, 1), 0) + tl.zeros((4,), tl.float32))


def _too_big_run(device: str) -> list[torch.Tensor]:
    out = torch.zeros(4, device=device)
    _too_big[(1,)](out)
    return [out]


case(name="block_over_numel_limit", construct="a block over the compiler's element limit "
     "(2048 x 1024)", upstream="raises the compiler's ValueError (fuzzkern: `compile-error`)",
     issue=None, expected=lambda: [torch.zeros(4)],
     # (3.6's CompilationError names the source line; its cause, the limit)
     rejected=lambda: r"exceeds triton maximum tensor numel|tl\.zeros\(\(2048, 1024\)")(
         _too_big_run)


@triton.jit
def _static_assert(out_ptr, B: tl.constexpr):
    tl.static_assert(B > 16, "B must be > 16")
    tl.store(out_ptr + tl.arange(0, 4), tl.zeros((4,), tl.float32))


def _static_assert_run(device: str) -> list[torch.Tensor]:
    out = torch.zeros(4, device=device)
    _static_assert[(1,)](out, B=8)
    return [out]


case(name="static_assert", construct="a failing `tl.static_assert`",
     upstream="a run-time `AssertionError` (compiled: a compile error)", issue=None,
     expected=lambda: [torch.zeros(4)], rejected=lambda: "B must be > 16")(_static_assert_run)


@triton.jit
def _multiple_assignment(x_ptr, out_ptr):
    offs = tl.arange(0, 4)
    a = b = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, a + b)


def _multiple_assignment_run(device: str) -> list[torch.Tensor]:
    x = torch.ones(4, device=device)
    out = torch.zeros(4, device=device)
    _multiple_assignment[(1,)](x, out)
    return [out]


case(name="multiple_assignment", construct="a multiple assignment `a = b = ...`",
     upstream="\"Multiple assignments are not supported\" (compiled: a compile error)",
     issue=None, expected=lambda: [torch.full((4,), 2.0)],
     rejected=lambda: "a = b = |Simultaneous multiple assignment")(_multiple_assignment_run)


@triton.jit
def _carried_type(x_ptr, out_ptr, n):
    offs = tl.arange(0, 4)
    acc = 0.0  # a scalar; the loop makes it a block
    for _ in range(n):
        acc += tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, acc)


def _carried_type_run(device: str) -> list[torch.Tensor]:
    x = torch.ones(4, device=device)
    out = torch.zeros(4, device=device)
    _carried_type[(1,)](x, out, 2)
    return [out]


case(name="loop_carried_type", construct="a loop-carried variable whose type the loop changes "
     "(`acc = 0.0`, then `acc += block`)", upstream="runs (Python rebinds the name)", issue=None,
     expected=lambda: [torch.full((4,), 2.0)],
     rejected=lambda: "Loop-carried variable acc has initial type fp32 but is re-assigned to",
     )(_carried_type_run)


@triton.jit
def _loop_local(x_ptr, out_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    acc = tl.zeros((B, B), tl.float32)
    for _ in range(n):
        a = tl.load(x_ptr + o)
        acc += a[:, None]
    for _ in range(n):
        a = tl.load(x_ptr + o[:, None] * 0 + o[None, :])
        acc += a
    tl.store(out_ptr + o[:, None] * B + o[None, :], acc)


def _loop_local_run(device: str) -> list[torch.Tensor]:
    x = torch.arange(4, dtype=torch.float32, device=device)
    out = torch.zeros(16, device=device)
    _loop_local[(1,)](x, out, 2, B=4)
    return [out]


case(name="loop_local_name", construct="a name bound first in one loop's body and bound again, "
     "with another type, in a later loop (a loop's body is a scope of its own compiled)",
     upstream="runs", issue=None,
     expected=lambda: [(2 * torch.arange(4.0)[:, None] + 2 * torch.arange(4.0)[None, :])
                       .reshape(16)],
     )(_loop_local_run)


# -- low-precision dtypes as given (fuzzkern.execution.interpreter.formats) ------------------------


def _bf16_values(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(31)
    x, y = (torch.randn(64, generator=g).to(torch.bfloat16) for _ in range(2))
    return x.to(device), y.to(device)


@triton.jit
def _bf16_ops(x_ptr, y_ptr, out_ptr, down_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    y = tl.load(y_ptr + i, mask=m)
    tl.store(out_ptr + i, x * y, mask=m)  # a bf16 op, rounded to bf16
    tl.store(down_ptr + i, (x.to(tl.float32) / 3.0).to(tl.bfloat16), mask=m)


def _bf16_ops_run(device: str) -> list[torch.Tensor]:
    x, y = _bf16_values(device)
    out, down = torch.empty_like(x), torch.empty_like(x)
    _bf16_ops[(1,)](x, y, out, down, 64, BLOCK=64)
    return [out, down]


def _bf16_ops_expected() -> list[torch.Tensor]:
    x, y = _bf16_values("cpu")
    return [x * y, (x.float() / 3.0).to(torch.bfloat16)]


case(name="bf16_arithmetic", construct="bf16 arithmetic and a cast to bf16 (`x * y`, "
     "`(x / 3).to(tl.bfloat16)`)", upstream="computes on the raw 16 bits as integers (`a * b` of "
     "two bf16 tensors is wrong); fuzzkern used to run bf16 as float32 copies", issue=None,
     ulps=1,  # (x * y - x was 11 ULPs off compiled on the H200: contracted into one fma)
     expected=_bf16_ops_expected)(_bf16_ops_run)

#: fp32 values for the fp8 casts: in range, ties, beyond the formats' largest finite values
_FP8_INPUTS = [0.1, 1.0, 3.3, 300.0, 500.0, -1e4, 1e6, float("inf"), float("-inf"),
               float("nan"), 2.0 ** -10, -0.0]


@triton.jit
def _to_fp8(x_ptr, e4_ptr, e5_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    tl.store(e4_ptr + i, x.to(tl.float8e4nv), mask=m)
    tl.store(e5_ptr + i, x.to(tl.float8e5), mask=m)


def _to_fp8_run(device: str) -> list[torch.Tensor]:
    x = torch.tensor(_FP8_INPUTS, device=device)
    e4 = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=device)
    e5 = torch.empty(x.shape, dtype=torch.float8_e5m2, device=device)
    _to_fp8[(1,)](x, e4, e5, x.numel(), BLOCK=16)
    return [e4.float(), e5.float()]


def _to_fp8_expected() -> list[torch.Tensor]:
    x = torch.tensor(_FP8_INPUTS)
    out = []
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        big = torch.finfo(dtype).max  # saturating: cvt.rn.satfinite
        out.append(torch.where(torch.isnan(x), x, x.clamp(-big, big)).to(dtype).float())
    return out


case(name="fp8_cast", construct="a cast from fp32 to fp8 (`x.to(tl.float8e4nv)`, "
     "`x.to(tl.float8e5)`) of values beyond the format's range",
     upstream="its own conversion; fuzzkern used to run fp8 as float32 copies", issue=None,
     expected=_to_fp8_expected)(_to_fp8_run)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> int:
    """Largest distance in units in the last place between float tensors ``a`` and ``b``
    (equal NaN positions count as 0); integers must be equal (0, else a large number)."""
    a, b = a.cpu(), b.cpu()
    if a.shape != b.shape or a.dtype != b.dtype:
        return 2**62
    if not a.dtype.is_floating_point:
        return 0 if torch.equal(a, b) else 2**62
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    if not torch.equal(nan_a, nan_b):
        return 2**62
    bits = {torch.float64: torch.int64, torch.float32: torch.int32,
            torch.float16: torch.int16, torch.bfloat16: torch.int16}[a.dtype]

    def ordered(t: torch.Tensor) -> torch.Tensor:
        i = t.view(bits).to(torch.int64)
        top = torch.iinfo(bits).min
        return torch.where(i < 0, top - i, i)

    d = (ordered(a) - ordered(b)).abs()
    d = torch.where(nan_a, torch.zeros_like(d), d)
    return int(d.max()) if d.numel() else 0
