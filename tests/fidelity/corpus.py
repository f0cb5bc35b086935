"""The interpreter-vs-compiled self-check: one small kernel per construct whose semantics
fuzzkern's interpreter adapter fixes (fuzzkern.execution.fidelity).

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

from fuzzkern.execution.fidelity import (
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
