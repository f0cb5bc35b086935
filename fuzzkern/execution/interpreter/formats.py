"""Floating-point formats in Triton's interpreter: one table of Triton and torch dtypes, exact
widening and correct rounding, and the *widened* formats that let kernels take bf16 and fp8
tensors as the user gave them (docs/interpreter.md, "Low-precision dtypes as given").

Triton's interpreter holds a bfloat16 value as its raw 16 bits and an fp8 value as its raw 8
bits, and computes on those bits as if they were integers, so ``a + b`` of two bf16 tensors is
wrong. While :func:`~fuzzkern.execution.interpreter.core.interpreter_mode` is active the patches of
:func:`widened_patches` hold such values as float32 numpy arrays under their real Triton dtype
instead: a load reads the storage's own bits and widens them exactly, every float op whose
result has a widened dtype rounds it to that dtype as the GPU does (round to nearest even),
casts round as compiled (to fp8: saturating to the largest finite value, the NVIDIA backend's
``cvt.rn.satfinite``), and a store writes the dtype's own bits. Host code (launchers, a
library's own checks, ``torch.empty_like``) sees the bf16/fp8 tensors themselves.

The float64 shadow (:mod:`fuzzkern.execution.interpreter.shadow`) is the same mechanism with
float64 for
every float dtype; both share the table, the conversions and :func:`real_dtypes`, under which
memory ops see the storage's own numpy dtypes (a widened patch then passes straight through,
so the shadow, installed above it, reads raw bits as it expects).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import triton.language as tl
import triton.runtime.interpreter as _interp

__all__ = ["FP8", "MMA_K", "MMA_K_8BIT", "THREADS", "TL_OF", "TORCH_OF", "WIDENED",
           "Unrepresentable", "bits", "is_float", "mma_dot", "mma_k", "narrow", "ordered_cumsum",
           "real_dtypes", "rounded", "tree_sum", "widen", "widened_patches"]

_Handle = _interp.TensorHandle
_Builder = _interp.InterpreterBuilder

#: Triton's float dtypes and the torch dtype of each (None: torch has no such format)
TORCH_OF: dict[Any, torch.dtype | None] = {tl.float16: torch.float16, tl.float32: torch.float32,
                                           tl.bfloat16: torch.bfloat16,
                                           tl.float64: torch.float64}
for _tl_name, _torch_name in (("float8e4nv", "float8_e4m3fn"), ("float8e5", "float8_e5m2"),
                              ("float8e4b8", "float8_e4m3fnuz"),
                              ("float8e5b16", "float8_e5m2fnuz"), ("float8e4b15", None)):
    _tl_dtype = getattr(tl, _tl_name, None)
    if _tl_dtype is not None:
        TORCH_OF[_tl_dtype] = getattr(torch, _torch_name, None) if _torch_name else None
#: and back, for the launcher's outputs
TL_OF: dict[torch.dtype, Any] = {t: d for d, t in TORCH_OF.items() if t is not None}
FP8 = frozenset(d for d in TORCH_OF if d.primitive_bitwidth == 8)
#: the dtypes the interpreter holds as float32 values rather than raw bits (those torch can
#: round to; fp8e4b15 keeps Triton's own handling)
WIDENED = frozenset({tl.bfloat16} | {d for d in FP8 if TORCH_OF[d] is not None})

_NP_OF = {tl.float16: np.float16, tl.float32: np.float32, tl.float64: np.float64}


class Unrepresentable(Exception):
    """A format torch can neither decode nor round to."""


def is_float(dtype: Any) -> bool:
    return isinstance(dtype, tl.dtype) and not isinstance(dtype, tl.pointer_type) and \
        dtype.is_floating()


def widen(data: np.ndarray, dtype: Any) -> np.ndarray:
    """Values of ``dtype`` as float64, exactly: a float array as it is, raw bits (bf16, fp8:
    how Triton's interpreter stores them) decoded."""
    if data.dtype.kind == "f":
        return data.astype(np.float64, copy=False)
    if dtype == tl.bfloat16:
        return (data.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    t = TORCH_OF.get(dtype)
    if t is None:
        raise Unrepresentable(f"{dtype} values (no float64 decoding)")
    flat = torch.from_numpy(np.ascontiguousarray(data).view(np.uint8).reshape(-1))
    return flat.view(t).to(torch.float64).numpy().reshape(data.shape)


def bits(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Float ``values`` correctly rounded to ``dtype``, as the interpreter stores them (bf16 and
    fp8 as raw bits)."""
    np_dtype = _NP_OF.get(dtype)
    if np_dtype is not None:
        return values.astype(np_dtype)
    t = TORCH_OF.get(dtype)
    if t is None:
        raise Unrepresentable(f"{dtype} values (no rounding to it)")
    flat = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64).reshape(-1)).to(t)
    raw = flat.view(torch.uint16 if t.itemsize == 2 else torch.uint8).numpy()
    return raw.reshape(np.shape(values))


def rounded(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Float ``values`` rounded to ``dtype``, as float64."""
    if dtype == tl.float64:
        return values
    return widen(bits(np.asarray(values, dtype=np.float64), dtype), dtype)


# ---------------------------------------------------------------------------------------------
# Storage formats


ORIG_NP_DTYPE = _interp._get_np_dtype
ORIG_VALIDATE = _interp._validate_np_data_size
_REAL = [0]  # > 0 while a memory op runs with the storage's own numpy dtypes


@contextlib.contextmanager
def real_dtypes() -> Iterator[None]:
    """Inside: numpy dtypes are the storage's own (bf16 and fp8 raw bits), for memory ops."""
    _REAL[0] += 1
    try:
        yield
    finally:
        _REAL[0] -= 1


def in_real_dtypes() -> bool:
    return bool(_REAL[0])


# ---------------------------------------------------------------------------------------------
# Widened formats: bf16 and fp8 values as float32


_WIDE_NAMES = frozenset(d.name for d in WIDENED)


def _wide(dtype: Any) -> bool:
    """Whether ``dtype`` (any Triton type) is one of :data:`WIDENED` (by name: asked by every
    op, and a pointer's or a block's name is never a scalar's)."""
    return getattr(dtype, "name", None) in _WIDE_NAMES


def _scalar(tt_dtype: Any) -> Any:
    return tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype


def _np_dtype(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``_get_np_dtype`` (``inner``: the one in force, perhaps memoized) with float32 for the
    widened dtypes, outside :func:`real_dtypes`."""
    f32 = np.dtype(np.float32)
    known: dict[Any, Any] = {}  # by type name, outside real_dtypes()

    def get_np_dtype(tt_dtype: Any) -> Any:
        if _REAL[0]:
            return inner(tt_dtype)
        scalar = _scalar(tt_dtype)
        name = getattr(scalar, "name", None)
        try:
            return known[name]
        except KeyError:
            found = known[name] = f32 if name in _WIDE_NAMES else inner(tt_dtype)
            return found
        except TypeError:  # no name: as it is
            return inner(tt_dtype)

    return get_np_dtype


def _validate(np_array: Any, tl_dtype: Any) -> bool:
    if not _REAL[0] and _wide(tl_dtype) and np_array.dtype == np.float32:
        return True
    return bool(ORIG_VALIDATE(np_array, tl_dtype))


_F32 = np.dtype(np.float32)


def _widened(h: Any) -> bool:
    """Whether ``h`` is a value this layer holds as float32 (not the shadow's float64)."""
    return isinstance(h, _Handle) and getattr(h.dtype, "name", None) in _WIDE_NAMES and \
        getattr(h.data, "dtype", None) == _F32


def _to_bits(h: Any) -> Any:
    """A widened value as Triton's interpreter holds it (raw bits)."""
    if _widened(h):
        return _Handle(bits(h.data, h.dtype.scalar), h.dtype.scalar)
    return h


def _to_float32(data: np.ndarray, dtype: Any) -> np.ndarray:
    return widen(data, dtype).astype(np.float32)


def _round(values: np.ndarray, dtype: Any) -> np.ndarray:
    """float32 ``values`` rounded to widened ``dtype`` (nearest even), as float32."""
    return _to_float32(bits(values, dtype), dtype)


def _saturated(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Finite ``values`` beyond an fp8 format's range (and infinities) at its largest finite
    value, NaN kept: the NVIDIA backend converts to fp8 with ``cvt.rn.satfinite``."""
    t = TORCH_OF[dtype]
    assert t is not None
    big = float(torch.finfo(t).max)
    return np.where(np.isnan(values), values, np.clip(values, -big, big))


def _wrap_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_masked_load(self: Any, ptrs: Any, mask: Any, other: Any, *rest: Any,
                           **kw: Any) -> Any:
        elem = ptrs.get_element_ty()
        if _REAL[0] or not _wide(elem):
            return orig(self, ptrs, mask, other, *rest, **kw)
        with real_dtypes():
            got = orig(self, ptrs, mask, _to_bits(other), *rest, **kw)
        return _Handle(_to_float32(got.data, elem), elem)

    return create_masked_load


def _wrap_store(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any,
                            **kw: Any) -> Any:
        if _REAL[0] or not _widened(value):
            return orig(self, ptrs, value, mask, *rest, **kw)
        with real_dtypes():
            return orig(self, ptrs, _to_bits(value), mask, *rest, **kw)

    return create_masked_store


def _cast(orig: Callable[..., Any]) -> Callable[..., Any]:
    """A conversion from or to a widened dtype: exact widening, rounding to nearest even (or
    toward zero where asked), saturating to fp8."""

    def cast(self: Any, src: Any, dst_type: Any, *rest: Any) -> Any:
        dst = dst_type.scalar
        src_ty = src.dtype.scalar
        if _REAL[0] or not (_widened(src) or _wide(dst)):
            return orig(self, src, dst_type, *rest)
        data = np.asarray(src.data)
        if not _wide(dst):  # widened -> another float, an int or a bool
            np_dtype = _NP_OF.get(dst)
            if np_dtype is not None or not is_float(dst):
                return _Handle(data.astype(np_dtype or ORIG_NP_DTYPE(dst)), dst)
            return orig(self, _to_bits(src), dst_type, *rest)
        if is_float(src_ty) and not _widened(src) and data.dtype.kind != "f":
            return orig(self, src, dst_type, *rest)  # raw bits of a format torch lacks
        values = data.astype(np.float64)
        if dst in FP8 and is_float(src_ty):
            values = _saturated(values, dst)
        mode = rest[0] if rest else None
        if mode is not None and "RTZ" in str(mode).upper():
            with real_dtypes():
                raw = _interp._convert_float(values.astype(np.float32), tl.float32, dst, mode)
            return _Handle(_to_float32(np.asarray(raw).view(ORIG_NP_DTYPE(dst)), dst), dst)
        return _Handle(_to_float32(bits(values, dst), dst), dst)

    return cast


def _bitcast(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_bitcast(self: Any, src: Any, dst_type: Any) -> Any:
        dst = dst_type.scalar
        if _REAL[0] or not (_widened(src) or _wide(dst)):
            return orig(self, src, dst_type)
        data = _to_bits(src).data if _widened(src) else src.data
        raw = np.asarray(data).view(ORIG_NP_DTYPE(dst))
        return _Handle(_to_float32(raw, dst) if _wide(dst) else raw, dst)

    return create_bitcast


def _rounding(orig: Callable[..., Any]) -> Callable[..., Any]:
    """A float-producing op: a widened result rounded to its dtype."""

    def op(self: Any, *args: Any) -> Any:
        out = orig(self, *args)
        if not _REAL[0] and _widened(out):
            return _Handle(_round(out.data, out.dtype.scalar), out.dtype.scalar, out.attr)
        return out

    return op


def _dot(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_dot(self: Any, a: Any, b: Any, d: Any, *rest: Any) -> Any:
        if not _REAL[0] and _twin_input(d):
            # a narrow accumulator: rounded per K step, as a tensor core does
            out = mma_dot(widen(a.data, a.dtype.scalar), widen(b.data, b.dtype.scalar),
                          widen(d.data, d.dtype.scalar), d.dtype.scalar,
                          mma_k(a.dtype.scalar))
            return _Handle(out.astype(d.data.dtype), d.dtype.scalar)
        if _REAL[0] or not (_widened(a) or _widened(b)):
            return _rounding(orig)(self, a, b, d, *rest)
        acc = np.asarray(d.data)
        kind = d.dtype.scalar
        # as the interpreter's own dot: products accumulated in the accumulator's dtype
        out = np.matmul(a.data, b.data, dtype=acc.dtype) + acc
        if _widened(d):
            return _Handle(_round(out, kind), kind)
        return _Handle(out, kind)

    return create_dot


#: the threads of one program that share a reduction in compiled code (4 warps of 32, Triton's
#: default): each sums its elements of the reduced axis in order (element ``t``, ``t + 128``,
#: ...: a blocked layout wraps), then the partial sums combine in a tree (warp shuffles, then
#: across warps), every add rounded in the combine's dtype
THREADS = 128
#: a tensor-core MMA adds this many products of a K step exactly before it rounds to its
#: accumulator: 16 for 16-bit operands (``mma.m16n8k16``, ``wgmma ... k16``), 32 for 8-bit
#: ones (``mma.m16n8k32``, ``wgmma ... k32``)
MMA_K = 16
MMA_K_8BIT = 32


def mma_k(operand: Any) -> int:
    """The K step of the MMA instruction for operands of Triton dtype ``operand``."""
    return MMA_K_8BIT if is_float(operand) and operand.primitive_bitwidth == 8 else MMA_K


def narrow(dtype: Any) -> bool:
    """Whether ``dtype`` is a float format narrower than float32 (fp16, bf16, fp8)."""
    return is_float(dtype) and dtype.primitive_bitwidth < 32


def tree_sum(values: np.ndarray, axis: int | None, dtype: Any) -> np.ndarray:
    """The sum of ``values`` (float64) along ``axis`` (None: all) as compiled Triton computes
    ``tl.sum`` of a ``dtype`` tensor: Triton keeps a float sum in its input's dtype
    (``_pick_sum_dtype`` widens only small integers), each thread sums its share in order,
    the partial sums combine in a tree, and every add rounds to ``dtype``. Float64."""
    x = np.asarray(values, dtype=np.float64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    x = np.moveaxis(x, axis, -1)
    n = x.shape[-1]
    if n == 0:
        return np.zeros(x.shape[:-1])
    threads = min(n, THREADS)
    runs = -(-n // threads)
    pad = runs * threads - n
    if pad:
        x = np.concatenate([x, np.zeros(x.shape[:-1] + (pad,))], axis=-1)
    x = x.reshape(x.shape[:-1] + (runs, threads))
    acc = x[..., 0, :]
    for j in range(1, runs):  # in each thread, in order
        acc = rounded(acc + x[..., j, :], dtype)
    while acc.shape[-1] > 1:  # then the tree
        if acc.shape[-1] % 2:
            acc = np.concatenate([acc, np.zeros(acc.shape[:-1] + (1,))], axis=-1)
        acc = rounded(acc[..., 0::2] + acc[..., 1::2], dtype)
    return acc[..., 0]


def ordered_cumsum(values: np.ndarray, axis: int, dtype: Any) -> np.ndarray:
    """``tl.cumsum`` of a ``dtype`` tensor as compiled (the scan's combine runs in the input's
    dtype): the axis in blocks of :data:`THREADS` lanes, each block scanned in a tree
    (Hillis-Steele: log2 steps across lanes), then the running total of the blocks before it
    added; every add rounded to ``dtype``. Float64."""
    x = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    n = x.shape[-1]
    out = np.empty_like(x)
    carry: np.ndarray | None = None
    for lo in range(0, n, THREADS):
        block = x[..., lo:lo + THREADS].copy()
        step = 1
        while step < block.shape[-1]:
            block[..., step:] = rounded(block[..., step:] + block[..., :-step], dtype)
            step *= 2
        if carry is not None:
            block = rounded(block + carry[..., None], dtype)
        out[..., lo:lo + THREADS] = block
        carry = block[..., -1]
    return np.moveaxis(out, -1, axis)


def mma_dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, dtype: Any,
            step: int = MMA_K) -> np.ndarray:
    """``tl.dot`` into a narrow accumulator (``out_dtype=tl.float16``) as a tensor core does
    it: products of each K step of ``step`` (:func:`mma_k`: 16, or 32 for fp8 operands)
    summed exactly, then added to the accumulator and rounded to ``dtype``. Float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    out = np.asarray(acc, np.float64)
    for k in range(0, a.shape[-1], step):
        out = rounded(np.matmul(a[..., k:k + step], b[..., k:k + step, :]) + out, dtype)
    return out


_F16 = np.dtype(np.float16)


def _twin_input(h: Any) -> bool:
    """Whether ``h`` holds narrow float values as this layer runs them (fp16 as numpy's
    float16, bf16 and fp8 widened): not the shadow's float64, not raw bits."""
    return isinstance(h, _Handle) and narrow(h.dtype.scalar) and \
        getattr(h.data, "dtype", None) in (_F16, _F32)


def _reduce(orig: Callable[..., Any], scan: bool) -> Callable[..., Any]:
    """``ReduceOps.sum`` / ``ScanOps.cumsum``: of an fp16 or bf16 tensor, rounded as compiled
    code rounds (:func:`tree_sum`, :func:`ordered_cumsum`): numpy would sum fp16 in float32
    and round once, and widened values sum in float32. Of fp8: refused, as compiled
    (:func:`refuse_fp8_arithmetic`)."""

    def reduce(self: Any, input: Any) -> Any:
        h = input.handle
        refuse_fp8_arithmetic("`tl.cumsum`" if scan else "`tl.sum`", h)
        if _REAL[0] or not _twin_input(h):
            return orig(self, input)
        dtype = h.dtype.scalar
        data = h.data.astype(np.float64)
        if scan:
            out = ordered_cumsum(data, self.axis, dtype)
        else:
            out = tree_sum(data, self.axis, dtype)
            if self.keep_dims:
                out = out.reshape((1,) * data.ndim) if self.axis is None else np.expand_dims(
                    out, self.axis)
        result = self.to_tensor(out.astype(h.data.dtype), input.dtype)
        return [result] if scan else result

    return reduce


#: the builder ops refused on fp8 operands: what each is, and the LLVM instruction it becomes
_FP8_REFUSED = {"create_fadd": ("an add", "llvm.fadd"),
                "create_fsub": ("a subtraction (or a negation)", "llvm.fsub"),
                "create_fmul": ("a multiplication", "llvm.fmul"),
                "create_fneg": ("a negation", "llvm.fneg")}  # (Triton 3.9; 3.6 subtracts)


def refuse_fp8_arithmetic(what: str, *operands: Any, llvm_op: str = "llvm.fadd") -> None:
    """Raise the compiler's refusal when an fp8 value reaches ``what`` (an add, subtract,
    multiply, comparison, ``tl.sum`` or ``tl.cumsum``). Triton's front end keeps arithmetic of
    two same-type fp8 values in fp8 (``computation_type_impl``), but no backend can lower it:
    fp8 is ``i8`` in LLVM, and ``llvm.fadd`` on ``i8`` fails verification ("PassManager::run
    failed"; seen on sm_90 with Triton 3.6; upstream: triton-lang/triton#11898). The
    interpreter would compute it, so an interpreted run would pass a kernel that cannot be
    compiled; refused here, the case is ``compile-error`` in both modes. Division and ``%``
    (widened to float32), ``tl.maximum``, ``tl.abs``, ``tl.where``, casts and ``tl.dot``
    compile, and run."""
    for h in operands:
        dtype = getattr(getattr(h, "dtype", None), "scalar", None)
        if dtype in FP8:
            from fuzzkern.execution.interpreter.fidelity import CompileError

            raise CompileError(
                f"{what} of {dtype} values does not compile (PassManager::run failed: "
                f"'{llvm_op}' op operand #0 must be floating point "
                "LLVM type, but got 'i8'): Triton keeps arithmetic of two same-type fp8 "
                "values in fp8, which no backend lowers; convert them to tl.float16 or "
                "tl.float32 first")


def _fp8_refused(orig: Callable[..., Any], name: str) -> Callable[..., Any]:
    what, llvm_op = _FP8_REFUSED.get(name, ("a comparison", "llvm.fcmp"))

    def op(self: Any, *args: Any) -> Any:
        refuse_fp8_arithmetic(what, *args, llvm_op=llvm_op)
        return orig(self, *args)

    return op


def _refuse_atomic(orig: Callable[..., Any], what: str) -> Callable[..., Any]:
    def atomic(self: Any, *args: Any) -> Any:
        ptr = next((a for a in args if isinstance(a, _Handle) and
                    isinstance(a.dtype.scalar, tl.pointer_type)), None)
        if not _REAL[0] and ptr is not None and _wide(ptr.get_element_ty()):
            raise NotImplementedError(
                f"{what} on {ptr.get_element_ty()} memory is not supported in the interpreter")
        return orig(self, *args)

    return atomic


#: builder ops whose float results round to their dtype
ROUNDING_OPS = ("create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem",
                "create_precise_divf", "create_fma", "create_exp", "create_exp2", "create_log",
                "create_log2", "create_sqrt", "create_precise_sqrt", "create_rsqrt",
                "create_sin", "create_cos", "create_erf", "create_extern_elementwise")
_CASTS = ("cast_impl", "create_fp_to_fp", "create_fp_ext", "create_fp_trunc", "create_si_to_fp",
          "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui")


def _bf16_constant(self: Any, value: Any) -> Any:
    """``InterpreterBuilder.get_bf16`` as Triton 3.9 has it, for 3.6's interpreter, which
    lacks it (``semantic.scalar_constant`` asks for ``get_<dtype>``): the float32 constant
    truncated to bf16."""
    return self.create_fp_trunc(self.get_fp32(value), tl.bfloat16)


def _fp8_constant(dtype: Any) -> Callable[[Any, Any], Any]:
    """``InterpreterBuilder.get_<fp8 dtype>``: Triton 3.6's ``semantic.scalar_constant`` asks
    the builder for ``get_fp8e4nv`` for a nonzero fp8 constant (``x * 2`` of an fp8 tensor,
    ``tl.full(..., 1.5, tl.float8e4nv)``), which neither its compiler's builder nor its
    interpreter's has: the compiler's error, as a compile error. (Triton 3.9 makes the
    constant in float32 and casts it, and never asks.)"""

    def constant(self: Any, value: Any) -> Any:
        from fuzzkern.execution.interpreter.fidelity import CompileError

        raise CompileError(f"an {dtype} constant ({value!r}) does not compile with this "
                           "Triton: 'triton._C.libtriton.ir.builder' object has no attribute "
                           f"'get_{dtype.name}'")

    return constant


def widened_patches() -> list[tuple[Any, str, Any]]:
    """(object, attribute, value) to set inside ``interpreter_mode``, after its own builder
    patches (the bounds-checked memory ops this wraps): bf16 and fp8 values held as float32."""
    b = vars(_Builder)
    out: list[tuple[Any, str, Any]] = [
        (_interp, "_get_np_dtype", _np_dtype(_interp._get_np_dtype)),
        (_interp, "_validate_np_data_size", _validate),
        (_Builder, "create_masked_load", _wrap_load(b["create_masked_load"])),
        (_Builder, "create_masked_store", _wrap_store(b["create_masked_store"])),
        (_Builder, "create_bitcast", _bitcast(b["create_bitcast"])),
        (_Builder, "create_dot", _dot(b["create_dot"])),
        (_interp.ReduceOps, "sum", _reduce(vars(_interp.ReduceOps)["sum"], scan=False)),
        (_interp.ScanOps, "cumsum", _reduce(vars(_interp.ScanOps)["cumsum"], scan=True)),
    ]
    for name in _CASTS:
        fn = b.get(name)
        if fn is not None:
            out.append((_Builder, name, _cast(fn)))
    for name in ROUNDING_OPS:
        fn = b.get(name)
        if fn is not None:
            fn = _rounding(fn)
            out.append((_Builder, name, _fp8_refused(fn, name) if name in _FP8_REFUSED else fn))
    for name in sorted(n for n in b if n.startswith("create_fcmp") or n == "create_fneg"):
        out.append((_Builder, name, _fp8_refused(b[name], name)))
    if "get_bf16" not in b:  # Triton 3.6: a bf16 constant (tl.full(..., 1.5, tl.bfloat16))
        out.append((_Builder, "get_bf16", _bf16_constant))
    for dtype in FP8:  # an fp8 constant (`x * 2` of fp8) on Triton 3.6
        if f"get_{dtype.name}" not in b:
            out.append((_Builder, f"get_{dtype.name}", _fp8_constant(dtype)))
    for name, what in (("create_atomic_rmw", "a float atomic"),
                       ("create_atomic_cas", "a float compare-and-swap")):
        fn = b.get(name)
        if fn is not None:
            out.append((_Builder, name, _refuse_atomic(fn, what)))
    return out
