"""Float64 shadow execution: the same kernel, in the interpreter, without rounding.

A case whose outputs fail the plain tolerance runs once more in Triton's interpreter with every
floating-point value carried in float64 (docs/oracle.md, "The shadow"): loads from fp8, fp16,
bf16 and fp32 storage widen exactly; arithmetic, ``tl.dot``, reductions, scans and libdevice
run in float64; float-to-float casts (``.to(tl.float16)``, accumulator dtypes, constants) keep
float64; a store into float storage writes the correctly rounded value to memory (so host code,
integer logic and later launches see what they would) and keeps the float64 value in a shadow
memory keyed by storage and address, which a later load of that address reads as long as memory
still holds its rounding (scratch buffers and multi-pass kernels keep their precision; memory
that host code overwrote meanwhile is read as it is). Integer, bool and pointer values, masks
and control flow are computed as always, so the shadow is the kernel's own algorithm without
rounding; the judge compares it with a float64 reference (:class:`ExactReference`).

Every float result is tagged with its *site*, the kernel source line that made it. Rounding can
be put back at chosen sites only (``round_at``): the same algorithm exact everywhere but there.
:func:`attribute` uses that to name the line whose rounding alone explains most of a kernel's
error at its worst element (Herbgrind's root cause, measured rather than estimated), and marks
*accumulations*: an add whose operand came from the same line (a loop-carried ``acc += ...``),
or a reduction, scan or dot, in a dtype narrower than float32.

What cannot be shadowed is said, never guessed (:attr:`ShadowRun.limits`): a bitcast of a
float (the bits are the kernel's logic), a cast to an fp8 dtype (quantization is the logic),
``tl.dot_scaled``, an fp8 format torch cannot decode. The run still completes (the value is
rounded first), and the judge falls back to its outside rules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import linecache
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import triton.language as tl
import triton.runtime.interpreter as _interp
from torch.overrides import TorchFunctionMode

from fuzzkern.calls import call_with
from fuzzkern.execution.interpreter import fidelity, formats

__all__ = ["ExactReference", "HostShadow", "ShadowRun", "Site", "attribute", "find_shadow",
           "launch_shadow", "shadow_mode"]

_Handle = _interp.TensorHandle
_Builder = _interp.InterpreterBuilder

_TORCH_OF = formats.TORCH_OF
_TL_OF = formats.TL_OF
_FP8 = formats.FP8
_is_float = formats.is_float
_widen = formats.widen
_bits = formats.bits
rounded = formats.rounded


def _in_range(values: np.ndarray, near: np.ndarray) -> np.ndarray:
    """``values`` with those that overflow their dtype (``near``: them rounded to it) as the
    real kernel has them, ±inf: the shadow widens precision, not range, so an overflow bug
    stays one."""
    over = np.isinf(near) & np.isfinite(values)
    if not over.any():
        return values
    return np.where(over, near, values)


#: a format the shadow can neither decode nor round to
_Unshadowable = formats.Unrepresentable


# ---------------------------------------------------------------------------------------------
# Sites


@dataclasses.dataclass
class Site:
    """One kernel source line that makes floating-point values, and what its rounding does."""

    file: str
    line: int
    #: the dtypes its results have in the real kernel (where it rounds)
    dtypes: set[str] = dataclasses.field(default_factory=set)
    #: the largest relative change rounding makes to one of its results, and that value
    worst_relative: float = 0.0
    worst_value: float = 0.0
    #: the dtypes in whose subnormal range some result it rounds lies (fp16 of a Llama
    #: RMSNorm's normalized values, not the fp32 products on the same line)
    subnormal: set[str] = dataclasses.field(default_factory=set)
    #: the bit width of each of ``dtypes``
    widths: dict[str, int] = dataclasses.field(default_factory=dict)
    #: an add fed by its own earlier result, or a reduction/scan/dot, in a dtype narrower
    #: than float32
    accumulates: bool = False
    #: how many results it made (ops, not elements)
    ops: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)

    @property
    def source(self) -> str:
        return linecache.getline(self.file, self.line).strip()

    def describe(self) -> str:
        """``ok_rmsnorm.py:14 `X = X.to(X_dtype)`` and what its rounding does."""
        where = f"{os.path.basename(self.file)}:{self.line}"
        code = f" `{self.source}`" if self.source else ""
        # the narrowest dtype first: `(xf * rstd).to(x.dtype) * w` rounds to fp16 (and its
        # product in fp32)
        order = sorted(self.dtypes, key=lambda d: (self.widths.get(d, 32), d))
        dtypes = "/".join(order) or "float"
        what = (f"accumulates in {dtypes}" if self.accumulates else f"rounds to {dtypes}")
        if self.worst_relative > 0:
            what += f", up to {_percent(self.worst_relative)} of a value"
            if self.subnormal:
                tiny = "/".join(d for d in order if d in self.subnormal)
                what += f" (values in {tiny}'s subnormal range, e.g. {self.worst_value:.3g})"
        return f"{where}{code}: {what}"


def _percent(x: float) -> str:
    return f"{100 * x:.2g}%" if x >= 1e-4 else f"{x:.2g} relative"


_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(str(m.__file__))) + os.sep for m in (tl, np, fidelity))
_TRITON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(_interp.__file__))) + os.sep
_USER_CODE: dict[Any, bool] = {}


def _user(code: Any) -> bool:
    hit = _USER_CODE.get(code)
    if hit is None:
        name = code.co_filename
        path = os.path.abspath(name)
        hit = _USER_CODE[code] = not (name.startswith("<") or path.startswith(_LIBRARY_DIRS)
                                      or path.startswith(_TRITON_DIR)
                                      or path == os.path.abspath(__file__))
    return hit


def _site_key() -> tuple[str, int] | None:
    f: Any = sys._getframe(2)
    while f is not None:
        if _user(f.f_code):
            return (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return None


def _site_op() -> tuple[str, int, int] | None:
    """The kernel instruction making the current result: its file, line and bytecode offset.
    An add whose operand the same instruction made is loop-carried (``acc += x``); an
    operand from another instruction of the same line (``(x * r).to(dt) * w``) is not."""
    f: Any = sys._getframe(2)
    while f is not None:
        if _user(f.f_code):
            return (f.f_code.co_filename, f.f_lineno, f.f_lasti)
        f = f.f_back
    return None


# ---------------------------------------------------------------------------------------------
# State of one shadow run


@dataclasses.dataclass
class ShadowRun:
    """What one shadow launch is configured with and what it saw."""

    #: sites (file, line) whose results are rounded to their real dtype; None: none (exact)
    round_at: frozenset[tuple[str, int]] | None = None
    #: record sites and their rounding (the first, exact run does; attribution runs need not)
    record: bool = True
    sites: dict[tuple[str, int], Site] = dataclasses.field(default_factory=dict)
    #: why some value could not be shadowed (the judge then falls back to its outside rules)
    limits: list[str] = dataclasses.field(default_factory=list)
    #: where a value overflowed its real dtype (the shadow keeps each dtype's range)
    overflows: list[str] = dataclasses.field(default_factory=list)
    #: storages (first byte) of the case's inputs; a float value read from any other storage
    #: that no kernel stored was made by host code, rounded outside the shadow (None: unknown)
    inputs: set[int] | None = None
    #: how many such values the launch read
    host_reads: int = 0
    #: host code's torch operations that could not run at float64 (:class:`HostShadow`)
    host_unwidened: list[str] = dataclasses.field(default_factory=list)
    #: perturbation probe (:func:`probe_level`): "host" perturbs every host-made value by a
    #: rounding of its dtype, "gpu" every float32 result by what compiled code may differ by
    #: (an FMA's rounding; approximate exp, log, sqrt and division); None: no probe
    perturb: str | None = None
    seed: int = 0
    #: (storage address, dtype name) -> (float64 values, valid mask), one slot per element
    memory: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = dataclasses.field(
        default_factory=dict)

    def overflow(self, key: tuple[str, int] | None, dtype: Any) -> None:
        where = "" if key is None else f" at {os.path.basename(key[0])}:{key[1]}"
        what = f"{dtype} overflows{where}"
        if what not in self.overflows:
            self.overflows.append(what)

    def limit(self, why: str) -> None:
        if why not in self.limits:
            self.limits.append(why)

    # -- values ---------------------------------------------------------------------------
    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def noise(self, values: np.ndarray, unit: float) -> np.ndarray:
        """``values`` each moved by about ``unit`` of itself (Gaussian, clipped at 3)."""
        g = np.clip(self._rng.standard_normal(np.shape(values)), -3, 3)
        return values * (1 + unit * g)

    def _rounding_noise(self, values: np.ndarray, dtype: Any) -> np.ndarray:
        """About one rounding of ``dtype`` at each of ``values`` (Gaussian, clipped at 3),
        absolute: half an ulp, which in the subnormal range (and at 0, where a value may have
        underflowed) is far more than a relative rounding."""
        g = np.clip(self._rng.standard_normal(np.shape(values)), -3, 3)
        t = _TORCH_OF.get(dtype)
        if t is None:
            return g * _unit(dtype) * np.maximum(np.abs(values), _tiny(dtype))
        spacing = torch.from_numpy(np.abs(values)).to(t)
        ulp = (torch.nextafter(spacing, torch.tensor(float("inf"), dtype=t)) - spacing)
        return g * ulp.to(torch.float64).numpy() / 2

    def result(self, out: Any, operands: Sequence[Any] = (), accumulation: bool = False,
               approx: bool = False) -> Any:
        """A float result of an op: tagged with its site, recorded, rounded where asked."""
        if not isinstance(out, _Handle) or not _is_float(out.dtype) or out.dtype == tl.float64:
            return out
        data = out.data
        if not (isinstance(data, np.ndarray) and data.dtype == np.float64):
            return out
        try:
            near: np.ndarray | None = rounded(data, out.dtype)
        except _Unshadowable:
            near = None
        kept = data if near is None else _in_range(data, near)
        op = _site_op()
        key = None if op is None else op[:2]
        if kept is not data:
            self.overflow(key, out.dtype)
        out = _Handle(kept, out.dtype, out.attr)
        if key is None:
            return out
        out.attr["fk_site"] = key
        if self.record:
            self._note(key, out, operands, accumulation, near, op)
        out.attr["fk_op"] = op
        if self.round_at is not None and key in self.round_at and near is not None:
            return _Handle(near, out.dtype, dict(out.attr))
        if self.perturb == "gpu" and out.dtype == tl.float32 and out.data.size:
            unit = GPU_APPROX_UNIT if approx else GPU_ROUNDING_UNIT
            return _Handle(self.noise(out.data, unit), out.dtype, dict(out.attr))
        return out

    def _note(self, key: tuple[str, int], out: Any, operands: Sequence[Any],
              accumulation: bool, near: np.ndarray | None, op: Any = None) -> None:
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = Site(key[0], key[1])
        site.ops += 1
        name = str(out.dtype)
        site.dtypes.add(name)
        site.widths[name] = out.dtype.primitive_bitwidth
        narrow = out.dtype.primitive_bitwidth < 32
        if narrow and (accumulation or any(
                isinstance(h, _Handle) and h.attr.get("fk_op") == op for h in operands)):
            site.accumulates = True
        data = out.data
        if not data.size or near is None:
            return
        with np.errstate(all="ignore"):
            rel = np.abs(near - data) / np.abs(data)
        rel = np.where(np.isfinite(rel), rel, 0.0)
        i = int(np.argmax(rel))
        if rel.flat[i] > site.worst_relative:
            site.worst_relative = float(rel.flat[i])
            site.worst_value = float(data.flat[i])
        tiny = _tiny(out.dtype)
        if tiny and bool(((np.abs(data) < tiny) & (data != 0) & (rel > 0)).any()):
            site.subnormal.add(name)

    # -- memory ---------------------------------------------------------------------------
    def _slots(self, addr: np.ndarray, dtype: Any, create: bool
               ) -> list[tuple[int, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]]:
        """Per storage that ``addr`` (uint64 addresses) falls in: (its first byte, the lanes
        inside it, their element indices, its shadow slot: float64 values and valid mask, or
        None when it has none and ``create`` is off)."""
        from fuzzkern.execution.interpreter.core import live_allocations

        size = max(1, dtype.primitive_bitwidth // 8)
        out = []
        flat = addr.reshape(-1)
        for lo, hi in live_allocations():
            inside = (flat >= np.uint64(lo)) & (flat + np.uint64(size) <= np.uint64(hi))
            if not inside.any():
                continue
            offs = flat[inside] - np.uint64(lo)
            aligned = (offs % np.uint64(size)) == 0
            lanes = np.flatnonzero(inside)[aligned]
            idx = (offs[aligned] // np.uint64(size)).astype(np.int64)
            key = (lo, str(dtype))
            slot = self.memory.get(key)
            if slot is None and create:
                n = (hi - lo) // size
                slot = self.memory[key] = (np.zeros(n, np.float64), np.zeros(n, np.bool_))
            out.append((lo, lanes, idx, slot))
        return out

    def load(self, addr: np.ndarray, mask: np.ndarray | None, dtype: Any, real: np.ndarray
             ) -> np.ndarray:
        """The float64 values at ``addr``: the shadow's where it stored them and memory still
        holds their rounding, else memory's own (``real``, widened)."""
        values = _widen(real, dtype).reshape(-1).copy()
        raw = np.ascontiguousarray(real).reshape(-1)
        active = None if mask is None else np.broadcast_to(mask, addr.shape).reshape(-1)
        for lo, lanes, idx, slot in self._slots(addr, dtype, create=False):
            if active is not None:
                keep = active[lanes]
                lanes, idx = lanes[keep], idx[keep]
            shadowed = np.zeros(lanes.shape, np.bool_)
            if slot is not None:
                vals, valid = slot
                ok = valid[idx]
                shadow = vals[idx[ok]]
                same = _bits(shadow, dtype) == raw[lanes[ok]]
                same |= np.isnan(shadow) & np.isnan(values[lanes[ok]])
                values[lanes[ok][same]] = shadow[same]
                shadowed[np.flatnonzero(ok)[same]] = True
            if self.inputs is not None and lo not in self.inputs:
                host = lanes[~shadowed]
                host = host[np.isfinite(values[host])]
                self.host_reads += int(np.count_nonzero(values[host]))
                if self.perturb == "host" and host.size:
                    values[host] += self._rounding_noise(values[host], dtype)
        return values.reshape(addr.shape)

    def store(self, addr: np.ndarray, mask: np.ndarray | None, dtype: Any, values: np.ndarray,
              keep: bool) -> None:
        """Remember float64 ``values`` stored at ``addr`` (``keep=False``: the store's own
        rounding is asked for, so memory alone holds the value)."""
        flat = np.broadcast_to(values, addr.shape).reshape(-1)
        active = None if mask is None else np.broadcast_to(mask, addr.shape).reshape(-1)
        for _lo, lanes, idx, slot in self._slots(addr, dtype, create=True):
            assert slot is not None
            if active is not None:
                on = active[lanes]
                lanes, idx = lanes[on], idx[on]
            slot[0][idx] = flat[lanes]
            slot[1][idx] = keep

    def host_result(self, t: torch.Tensor, exact: torch.Tensor, key: tuple[str, int]) -> None:
        """Keep ``exact`` (float64) as the shadow of ``t``, a result of host code at ``key``:
        a rounding site, and memory holds its correct rounding."""
        if t.dtype == torch.float64:
            if not t.requires_grad:
                t.detach().copy_(exact)
            return
        tl_dtype = _TL_OF.get(t.dtype)
        if tl_dtype is None or t.numel() == 0:
            return
        values = exact.reshape(-1).numpy()
        try:
            near = rounded(values, tl_dtype)
        except _Unshadowable:
            return
        values = _in_range(values, near)
        if self.record:
            self._note(key, _HostValue(values, tl_dtype), (), False, near)
        if self.round_at is not None and key in self.round_at:
            values = near
        if not t.requires_grad:
            t.detach().copy_(torch.from_numpy(near).reshape(t.shape).to(t.dtype))
        n = t.untyped_storage().nbytes() // t.element_size()
        index = torch.arange(n, dtype=torch.int64).as_strided(
            t.shape, t.stride(), t.storage_offset()).reshape(-1).numpy()
        lo = t.untyped_storage().data_ptr()
        slot = self.memory.get((lo, str(tl_dtype)))
        if slot is None or slot[0].size != n:
            slot = self.memory[(lo, str(tl_dtype))] = (np.zeros(n, np.float64),
                                                        np.zeros(n, np.bool_))
        slot[0][index] = values
        slot[1][index] = True

    def output(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A float output of the launcher as float64 from the shadow memory, and which of its
        elements came from there (the others are memory as it is: never stored by a kernel,
        or computed by host code)."""
        values = t.detach().to(torch.float64)
        covered = torch.zeros(t.shape, dtype=torch.bool)
        tl_dtype = _TL_OF.get(t.dtype)
        if tl_dtype is None or t.numel() == 0:
            return values, covered
        n = t.untyped_storage().nbytes() // t.element_size()
        index = torch.arange(n, dtype=torch.int64).as_strided(
            t.shape, t.stride(), t.storage_offset())
        lo = t.untyped_storage().data_ptr()
        slot = self.memory.get((lo, str(tl_dtype)))
        if slot is None:
            return values, covered
        vals, valid = torch.from_numpy(slot[0]), torch.from_numpy(slot[1])
        idx = index.reshape(-1)
        shadow = vals[idx].reshape(t.shape)
        ok = valid[idx].reshape(t.shape)
        real = t.detach().cpu()
        same = shadow.to(t.dtype) == real
        same |= torch.isnan(shadow) & torch.isnan(real.to(torch.float64))
        ok &= same
        return torch.where(ok, shadow, values), ok


#: how far compiled float32 code may be from a correctly rounded result, per op, relative:
#: an approximate exp, exp2, log, sqrt, rsqrt or division (``ex2.approx``, ``div.full``: a
#: few ulps), and any other op (one rounding, which FMA contraction removes or moves)
GPU_APPROX_UNIT = 2.0 ** -21
GPU_ROUNDING_UNIT = 2.0 ** -24


def _unit(dtype: Any) -> float:
    """A rounding of ``dtype``, relative (half its epsilon)."""
    t = _TORCH_OF.get(dtype)
    return float(torch.finfo(t).eps) / 2 if t is not None else 2.0 ** -4


def _tiny(dtype: Any) -> float:
    t = _TORCH_OF.get(dtype)
    return float(torch.finfo(t).tiny) if t is not None else 0.0

_ACTIVE: list[ShadowRun] = []


def _run() -> ShadowRun:
    return _ACTIVE[-1]


# ---------------------------------------------------------------------------------------------
# Patches: numpy dtypes of float values become float64, memory ops round and remember


_ORIG_NP_DTYPE = formats.ORIG_NP_DTYPE
_ORIG_VALIDATE = formats.ORIG_VALIDATE
#: > 0 while a memory op runs with the storage's own numpy dtypes (shared with the widened
#: formats below the shadow, which then pass raw bits through)
_REAL = formats._REAL
_real_dtypes = formats.real_dtypes


def _np_dtype(tt_dtype: Any) -> Any:
    if not _REAL[0]:
        scalar = getattr(tt_dtype, "element_ty", tt_dtype) if isinstance(
            tt_dtype, tl.block_type) else tt_dtype
        if _is_float(scalar):
            return np.dtype(np.float64)
    return _ORIG_NP_DTYPE(tt_dtype)


def _validate(np_array: Any, tl_dtype: Any) -> bool:
    if not _REAL[0] and _is_float(tl_dtype) and np_array.dtype == np.float64:
        return True
    return bool(_ORIG_VALIDATE(np_array, tl_dtype))


def _to_real(h: Any) -> Any:
    """A shadow handle as the real interpreter holds it (float64 rounded to its dtype)."""
    if isinstance(h, _Handle) and _is_float(h.dtype) and h.data.dtype == np.float64 and \
            h.dtype != tl.float64:
        return _Handle(_bits(h.data, h.dtype), h.dtype)
    return h


def _f64(h: Any) -> np.ndarray:
    data = h.data
    return data if data.dtype == np.float64 else _widen(data, h.get_element_ty())


def _wrap_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_masked_load(self: Any, ptrs: Any, mask: Any, other: Any, *rest: Any) -> Any:
        elem = ptrs.get_element_ty()
        if not _is_float(elem) or not _ACTIVE:
            return orig(self, ptrs, mask, other, *rest)
        with _real_dtypes():
            got = orig(self, ptrs, mask, _to_real(other), *rest)
        run = _run()
        try:
            values = run.load(ptrs.data, None if mask is None else mask.data, elem, got.data)
        except _Unshadowable as e:
            run.limit(f"a load of {e}")
            return got
        if other is not None and mask is not None:
            values = np.where(mask.data, values, _f64(other))
        return _Handle(values, elem)

    return create_masked_load


def _wrap_store(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
        elem = ptrs.get_element_ty()
        if not _is_float(elem) or not _ACTIVE or value.data.dtype != np.float64:
            return orig(self, ptrs, value, mask, *rest)
        run = _run()
        key = _site_key()
        try:
            real = _bits(value.data, elem)
        except _Unshadowable as e:
            # a format torch cannot round to: Triton's own conversion, and no shadow of it
            run.limit(f"a store of {e}")
            with _real_dtypes():
                bits = _interp._convert_float(value.data.astype(np.float32), tl.float32, elem,
                                              None).view(_ORIG_NP_DTYPE(elem))
                return orig(self, ptrs, _Handle(bits, elem), mask, *rest)
        with _real_dtypes():
            out = orig(self, ptrs, _Handle(real, elem), mask, *rest)
        if elem != tl.float64:
            kept = _in_range(value.data, _widen(real, elem))
            if kept is not value.data:
                run.overflow(key, elem)
            value = _Handle(kept, elem)
            if run.record and key is not None:
                run.result(_Handle(value.data, elem), ())  # the store's rounding is a site
            exact = run.round_at is None or key not in run.round_at
            run.store(ptrs.data, None if mask is None else mask.data, elem, value.data, exact)
        return out

    return create_masked_store


def _wrap_rmw(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_rmw(self: Any, rmw_op: Any, ptr: Any, val: Any, mask: Any,
                          *rest: Any) -> Any:
        elem = ptr.get_element_ty()
        if not _is_float(elem) or not _ACTIVE:
            return orig(self, rmw_op, ptr, val, mask, *rest)
        run = _run()
        name = str(getattr(rmw_op, "name", rmw_op)).split(".")[-1].upper()
        if name not in ("FADD", "XCHG"):
            run.limit(f"a float atomic {name.lower()}")
            with _real_dtypes():
                old = orig(self, rmw_op, ptr, _to_real(val), mask, *rest)
            return _Handle(_f64(old), elem)
        with _real_dtypes():
            old = orig(self, rmw_op, ptr, _to_real(val), mask, *rest)
        shape = ptr.data.shape
        on = np.broadcast_to(mask.data, shape)
        before = run.load(ptr.data, on, elem, old.data)  # the old values, as the shadow has them
        add = np.broadcast_to(_f64(val), shape).reshape(-1)
        flat_addr = ptr.data.reshape(-1)
        if name == "XCHG":
            run.store(ptr.data, on, elem, np.broadcast_to(_f64(val), shape), True)
        else:
            # several lanes adding to one address: the shadow sums them in lane order
            total: dict[int, float] = {}
            flat_before = before.reshape(-1)
            for lane in np.flatnonzero(on.reshape(-1)):
                a = int(flat_addr[lane])
                total[a] = total.get(a, float(flat_before[lane])) + float(add[lane])
            after = np.array([total.get(int(a), 0.0) for a in flat_addr], np.float64)
            run.store(ptr.data, on, elem, after.reshape(shape), True)
            try:  # memory holds the rounding of the exact total, as after a store: each
                # add's own rounding in memory would hide the shadow's value from later reads
                _interp._interpreter.store(ptr.data, _bits(after.reshape(shape), elem),
                                           np.ascontiguousarray(on))
            except (_Unshadowable, AttributeError, TypeError, ValueError):
                pass
        return _Handle(np.where(on, before, 0.0), elem)

    return create_atomic_rmw


def _wrap_cas(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, *rest: Any) -> Any:
        if _ACTIVE and _is_float(ptr.get_element_ty()):
            _run().limit("a float atomic compare-and-swap")
        with _real_dtypes():
            return orig(self, ptr, _to_real(cmp), _to_real(val), *rest)

    return create_atomic_cas


def _cast(self: Any, src: Any, dst_type: Any, *rest: Any) -> Any:
    dst = dst_type.scalar
    data = src.data
    if _is_float(dst):
        value = _f64(src) if _is_float(src.dtype.scalar) else data.astype(np.float64)
        if dst in _FP8:
            _run().limit(f"a cast to {dst} (quantization is the kernel's logic)")
        return _run().result(_Handle(value, dst))
    if _is_float(src.dtype.scalar):
        data = _f64(src)
    return _Handle(data.astype(_ORIG_NP_DTYPE(dst)), dst)


def _bitcast(self: Any, src: Any, dst_type: Any) -> Any:
    dst = dst_type.scalar
    src_ty = src.dtype.scalar
    if _is_float(src_ty) or _is_float(dst):
        _run().limit(f"a bitcast {src_ty} -> {dst} (the bits are the kernel's logic)")
    data = _to_real(src).data if _is_float(src_ty) else src.data
    out = data.view(_ORIG_NP_DTYPE(dst))
    if _is_float(dst):
        return _Handle(_widen(out, dst), dst)
    return _Handle(out, dst)


def _fabs(self: Any, arg: Any) -> Any:
    return _Handle(np.abs(_f64(arg)), arg.dtype.scalar)


def _const(dtype: Any) -> Callable[..., Any]:
    def get(self: Any, value: Any) -> Any:
        return _Handle(np.array([value], dtype=np.float64), dtype)

    return get


def _dot(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_dot(self: Any, a: Any, b: Any, d: Any, *rest: Any) -> Any:
        if not _is_float(d.dtype.scalar):
            return orig(self, a, b, d, *rest)
        out = _Handle(np.matmul(_f64(a), _f64(b)) + _f64(d), d.dtype.scalar)
        run = _run()
        if run.round_at is not None and _site_key() in run.round_at:
            # the real dot: products of the rounded operands, accumulated in its dtype (a
            # narrow accumulator per K step, as a tensor core rounds it)
            ra, rb = (rounded(_f64(h), h.dtype.scalar) for h in (a, b))
            kind = d.dtype.scalar
            acc = formats.mma_dot(ra, rb, _f64(d), kind, formats.mma_k(a.dtype.scalar)) \
                if formats.narrow(kind) else \
                rounded(np.matmul(ra, rb) + _f64(d), kind)
            out = _Handle(acc, kind)
        return run.result(out, (d,), accumulation=True)

    return create_dot


def _dot_scaled(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_dot_scaled(self: Any, lhs: Any, lhs_scale: Any, lhs_fmt: Any, rhs: Any,
                          *rest: Any) -> Any:
        _run().limit("tl.dot_scaled (microscaled formats)")
        args = [_to_real(x) for x in rest]
        with _real_dtypes():
            out = orig(self, _to_real(lhs), lhs_scale, lhs_fmt, _to_real(rhs), *args)
        return _Handle(_f64(out), out.dtype)

    return create_dot_scaled


def _keep_site(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create(self: Any, *args: Any) -> Any:
        out = orig(self, *args)
        src = next((a for a in args if isinstance(a, _Handle)), None)
        if src is not None and "fk_site" in src.attr and isinstance(out, _Handle):
            out.attr["fk_site"] = src.attr["fk_site"]
            if "fk_op" in src.attr:
                out.attr["fk_op"] = src.attr["fk_op"]
        return out

    return create


def _op(orig: Callable[..., Any], approx: bool) -> Callable[..., Any]:
    """A float-producing builder op: computed on float64 data by numpy, then tagged."""

    def op(self: Any, *args: Any) -> Any:
        out = orig(self, *args)
        if not _ACTIVE:
            return out
        return _run().result(out, args, approx=approx)

    return op


#: builder ops whose float results are rounding sites of the real kernel
_ARITH = ("create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem",
          "create_precise_divf", "create_fma", "create_exp", "create_exp2", "create_log",
          "create_log2", "create_sqrt", "create_precise_sqrt", "create_rsqrt", "create_sin",
          "create_cos", "create_erf", "create_extern_elementwise")
#: of those, what compiled code computes approximately (see GPU_APPROX_UNIT)
_APPROX = frozenset({"create_fdiv", "create_exp", "create_exp2", "create_log", "create_log2",
                     "create_sqrt", "create_rsqrt", "create_sin", "create_cos", "create_erf",
                     "create_extern_elementwise"})
#: shape ops that keep a value's site (an accumulator broadcast before its add)
_SHAPE = ("create_splat", "create_broadcast", "create_expand_dims", "create_reshape")


def _reduce_sum(orig: Callable[..., Any], scan: bool) -> Callable[..., Any]:
    """``ReduceOps.sum`` / ``ScanOps.cumsum``: a site that accumulates; rounded at it, the
    real reduction of the rounded terms in their dtype, along compiled code's tree
    (:func:`~fuzzkern.execution.interpreter.formats.tree_sum`,
    :func:`~fuzzkern.execution.interpreter.formats.
    ordered_cumsum`)."""

    def reduce(self: Any, input: Any) -> Any:
        if not _ACTIVE or not _is_float(input.dtype.scalar):
            return orig(self, input)
        run = _run()
        dtype = input.dtype.scalar
        key = _site_key()
        if run.round_at is not None and key in run.round_at and dtype != tl.float64:
            data = rounded(_f64(input.handle), dtype)
            if not formats.narrow(dtype):  # float32: numpy's, as the interpreter sums it
                f32 = data.astype(np.float32)
                out = (np.cumsum(f32, axis=self.axis) if scan else
                       np.sum(f32, axis=self.axis, keepdims=self.keep_dims))
                result = self.to_tensor(np.asarray(out, np.float64), input.dtype)
                return [result] if scan else result
            if scan:
                return [self.to_tensor(formats.ordered_cumsum(data, self.axis, dtype),
                                       input.dtype)]
            total = formats.tree_sum(data, self.axis, dtype)
            if self.keep_dims:
                total = total.reshape((1,) * data.ndim) if self.axis is None else \
                    np.expand_dims(total, self.axis)
            return self.to_tensor(total, input.dtype)
        out = orig(self, input)
        # a reduction in a narrow dtype accumulates there by construction, whatever length
        # this case gives it (one class per line: a group of one element too)
        for t in (out if isinstance(out, (list, tuple)) else [out]):
            run.result(t.handle, (), accumulation=True)
        return out

    return reduce


def _patches() -> list[tuple[Any, str, Any]]:
    b = vars(_Builder)  # inside interpreter_mode: its bounds-checked memory ops
    current = b
    out: list[tuple[Any, str, Any]] = [
        (_interp, "_get_np_dtype", _np_dtype),
        (_interp, "_validate_np_data_size", _validate),
        (_Builder, "create_masked_load", _wrap_load(current["create_masked_load"])),
        (_Builder, "create_masked_store", _wrap_store(current["create_masked_store"])),
        (_Builder, "cast_impl", _cast),
        (_Builder, "create_fp_to_fp", _cast),
        (_Builder, "create_bitcast", _bitcast),
        (_Builder, "create_fabs", _fabs),
        (_Builder, "get_fp16", _const(tl.float16)),
        (_Builder, "get_fp32", _const(tl.float32)),
        (_Builder, "get_bf16", _const(tl.bfloat16)),
        (_Builder, "create_dot", _dot(b["create_dot"])),
        (_interp.ReduceOps, "sum", _reduce_sum(vars(_interp.ReduceOps)["sum"], scan=False)),
        (_interp.ScanOps, "cumsum", _reduce_sum(vars(_interp.ScanOps)["cumsum"], scan=True)),
    ]
    for name in ("create_fp_ext", "create_fp_trunc", "create_si_to_fp", "create_ui_to_fp",
                 "create_fp_to_si", "create_fp_to_ui"):
        if name in b:
            out.append((_Builder, name, _cast))
    if "create_atomic_rmw" in current:
        out.append((_Builder, "create_atomic_rmw", _wrap_rmw(current["create_atomic_rmw"])))
    if "create_atomic_cas" in current:
        out.append((_Builder, "create_atomic_cas", _wrap_cas(current["create_atomic_cas"])))
    if "create_dot_scaled" in b:
        out.append((_Builder, "create_dot_scaled", _dot_scaled(b["create_dot_scaled"])))
    for name in _ARITH:
        fn = current.get(name) or b.get(name)
        if fn is not None:
            out.append((_Builder, name, _op(fn, name in _APPROX)))
    for name in _SHAPE:
        if name in b:
            out.append((_Builder, name, _keep_site(b[name])))
    return out


def _implicit_cvt(orig: Callable[..., Any]) -> Callable[..., Any]:
    def cvt(arg: Any) -> Any:
        if isinstance(arg, float) and _ACTIVE:
            # a Python float argument is an fp32 scalar to the kernel: exact in the shadow
            return tl.core.tensor(_Handle(np.array([arg], np.float64), tl.float32), tl.float32)
        return orig(arg)

    return cvt


@contextlib.contextmanager
def shadow_mode(run: ShadowRun) -> Iterator[ShadowRun]:
    """Inside :func:`~fuzzkern.execution.interpreter.core.interpreter_mode` (bounds checks on: the
    shadow memory is keyed by the launch's allocations), run every launch as a shadow."""
    patches = _patches() + [(_interp, "_implicit_cvt", _implicit_cvt(_interp._implicit_cvt))]
    saved = [(obj, name, vars(obj).get(name, _MISSING)) for obj, name, _ in patches]
    for obj, name, value in patches:
        setattr(obj, name, value)
    _ACTIVE.append(run)
    try:
        with np.errstate(all="ignore"):
            yield run
    finally:
        _ACTIVE.pop()
        for obj, name, value in reversed(saved):
            if value is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


_MISSING = object()


# ---------------------------------------------------------------------------------------------
# The exact reference


_DOWNCASTS = {torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16}


def _exact_dtype(v: Any) -> Any:
    if isinstance(v, torch.dtype) and v.is_floating_point and v != torch.float64:
        return torch.float64
    return v


class ExactReference(TorchFunctionMode):
    """While active, torch keeps floating-point results in float64: ``.float()``, ``.half()``,
    ``.bfloat16()``, ``.to``/``.type`` with a float dtype, and every ``dtype=`` of a float
    dtype give float64; autocast is off. A reference that downcasts itself (``x.float()``,
    ``softmax(..., dtype=torch.float32)``) then computes the exact answer, which the shadow is
    judged against."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in _DOWNCASTS:
            t = args[0]
            return t.to(torch.float64) if isinstance(t, torch.Tensor) else func(*args, **kwargs)
        if "dtype" in kwargs:
            kwargs["dtype"] = _exact_dtype(kwargs["dtype"])
        if func in (torch.Tensor.to, torch.Tensor.type):
            args = tuple(_exact_dtype(a) for a in args)
            if func is torch.Tensor.to and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                    and args[1].is_floating_point():
                args = (args[0], args[1].to(torch.float64), *args[2:])
        return func(*args, **kwargs)

    def __enter__(self) -> ExactReference:
        self._autocast = contextlib.ExitStack()
        for device in ("cpu", "cuda"):
            with contextlib.suppress(Exception):
                self._autocast.enter_context(torch.autocast(device, enabled=False))
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        self._autocast.close()


# ---------------------------------------------------------------------------------------------
# Host code in the shadow


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
#: torch functions host code calls that make no values (allocations) or draw random ones (a
#: second draw in float64 would be other numbers): run as they are
_NOT_WIDENED = ("empty", "new_empty", "rand", "dropout", "normal", "bernoulli", "multinomial",
                "uniform", "exponential", "geometric", "cauchy", "log_normal", "poisson",
                "backward", "set_", "record_stream", "data_ptr", "untyped_storage")
_INPLACE = {torch.Tensor.__setitem__}


def _host_frame() -> Any:
    """The launcher's frame calling the torch function being handled, or None when the
    caller is Triton's, numpy's or fuzzkern's own code (the interpreter moving a kernel's
    arguments is not host code)."""
    f: Any = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_TORCH_DIR):
        f = f.f_back
    return f if f is not None and _user(f.f_code) else None


def _func_name(func: Any) -> str:
    return str(getattr(func, "__name__", None) or getattr(func, "name", None) or func)


def _tensors(tree: Any) -> list[Any]:
    from torch.utils._pytree import tree_flatten

    return tree_flatten(tree)[0]


@dataclasses.dataclass
class _HostValue:
    """A host operation's float64 result as :meth:`ShadowRun._note` reads a kernel value."""

    data: np.ndarray
    dtype: Any


class HostShadow(TorchFunctionMode):
    """While a shadow launches its case (:func:`launch_shadow`), the launcher's own torch
    operations (before, between and after its kernels) run twice: as they are, and at
    float64 on the shadow's values of their float inputs, as :class:`ExactReference` holds
    the reference. The float64 result is kept in the shadow memory of the result's storage
    (a kernel that reads it, and the launcher's outputs, get the unrounded value) and memory
    holds its correct rounding; each such line of host code is a rounding site like a kernel
    line. An operation that cannot run at float64 is named (:attr:`ShadowRun.host_unwidened`)
    and its result is memory as it is."""

    def __init__(self, run: ShadowRun) -> None:
        super().__init__()
        self.run = run

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Mapping[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        name = _func_name(func)
        if any(w in name for w in _NOT_WIDENED):
            return func(*args, **kwargs)
        frame = _host_frame()
        if frame is None:
            return func(*args, **kwargs)
        key = (frame.f_code.co_filename, frame.f_lineno)
        inplace = func in _INPLACE or (name.endswith("_") and not name.endswith("__")) or (
            name.startswith("__i") and name.endswith("__"))  # x += y: __iadd__
        wide: Any = None
        if inplace:  # the shadow's values before the real operation overwrites them
            try:
                wide = self._widened(args, kwargs)
            except Exception:
                wide = None
        real = func(*args, **kwargs)
        targets = ([args[0]] if inplace and args and isinstance(args[0], torch.Tensor)
                   else [kwargs["out"]] if isinstance(kwargs.get("out"), torch.Tensor)
                   else [t for t in _tensors(real) if isinstance(t, torch.Tensor)])
        targets = [t for t in targets if t.is_floating_point() and t.device.type == "cpu"]
        if not targets:
            return real
        if not inplace:
            given = {t.untyped_storage().data_ptr() for t in _tensors((args, kwargs))
                     if isinstance(t, torch.Tensor)}
            targets = [t for t in targets if t.untyped_storage().data_ptr() not in given]
            if not targets:  # a view: the shadow memory of its storage holds it already
                return real
        where = f"host code's {name} at {os.path.basename(key[0])}:{key[1]}"
        try:
            exact = self._exact(func, wide or self._widened(args, kwargs), inplace,
                                "out" in kwargs)
        except Exception as e:
            self._unwidened(f"{where} ({type(e).__name__}: {str(e)[:80]})")
            return real
        for t, value in zip(targets, exact, strict=False):
            if isinstance(value, torch.Tensor) and value.shape == t.shape and \
                    value.is_floating_point():
                try:
                    self.run.host_result(t, value.detach().to(torch.float64), key)
                except Exception as err:  # never the launch's failure: named, memory as it is
                    self._unwidened(f"{where} ({type(err).__name__}: {str(err)[:80]})")
        return real

    def _unwidened(self, what: str) -> None:
        if what not in self.run.host_unwidened:
            self.run.host_unwidened.append(what)

    def _widened(self, args: Any, kwargs: Mapping[str, Any]) -> tuple[Any, Any]:
        """``args`` and ``kwargs`` with each float CPU tensor as the shadow has it (float64)."""
        from torch.utils._pytree import tree_map

        def wide(v: Any) -> Any:
            if isinstance(v, torch.Tensor) and v.is_floating_point() and v.device.type == "cpu":
                return self.run.output(v)[0] if v.dtype != torch.float64 else v.detach().clone()
            return v

        return tree_map(wide, (tuple(args), dict(kwargs)))

    @staticmethod
    def _exact(func: Any, wide: tuple[Any, Any], inplace: bool, out: bool) -> list[Any]:
        wargs, wkwargs = wide
        with torch.no_grad(), ExactReference():
            result = func(*wargs, **wkwargs)
        if inplace:
            return [wargs[0]]
        if out:
            return [wkwargs["out"]]
        return [t for t in _tensors(result) if isinstance(t, torch.Tensor)]


# ---------------------------------------------------------------------------------------------
# Root cause


@dataclasses.dataclass
class Attribution:
    """Which line's rounding explains a kernel's error at its worst element."""

    site: Site
    #: the error at the worst element with rounding at that line alone, over the kernel's
    share: float

    def describe(self) -> str:
        return f"line {self.site.describe()}; rounding there alone gives " \
               f"{_percent(self.share) if self.share < 10 else f'{self.share:.3g}x'} of the " \
               "error at that element"


def attribute(launch: Callable[[ShadowRun], Any], exact: ShadowRun,
              error_of: Callable[[Any], float],
              most: int = 6, enough: float = 0.9) -> Attribution | None:
    """The site whose rounding alone comes closest to the kernel's error at its worst element:
    ``launch(run)`` runs the shadow with ``run.round_at``, ``error_of(outputs)`` measures the
    distance of those outputs from the exact shadow at that element (the kernel's own error
    being 1). Sites are tried accumulations first, then by how much their rounding changes a
    value, at most ``most`` of them, until one alone gives ``enough`` of the error."""
    candidates = sorted((s for s in exact.sites.values() if s.worst_relative > 0),
                        key=lambda s: (s.accumulates, s.worst_relative), reverse=True)[:most]
    best: Attribution | None = None
    for site in candidates:
        run = ShadowRun(round_at=frozenset({site.key}), record=False)
        try:
            outputs = launch(run)
        except Exception:
            continue
        share = error_of(outputs)
        if best is None or share > best.share:
            best = Attribution(site, share)
        if share >= enough:
            break
    return best


# ---------------------------------------------------------------------------------------------
# One failed comparison, judged by the shadow


def launch_shadow(run: Any, shadow: Any = None) -> list[tuple[torch.Tensor, torch.Tensor] | None]:
    """Launch ``run``'s case once more in the interpreter, on fresh inputs: as a float64 shadow
    (``shadow``, a :class:`~fuzzkern.execution.interpreter.shadow.ShadowRun`), or plainly (None).
    Per
    output: (values as float64, which of them the shadow computed), None for a non-float
    output. Raises what the launch raises."""
    from fuzzkern.execution.interpret import _inputs
    from fuzzkern.execution.interpreter.core import interpreter_mode

    tensors = _inputs(run)
    if shadow is not None:
        shadow.inputs = {t.untyped_storage().data_ptr() for t in tensors.values()}
    with np.errstate(all="ignore"), interpreter_mode(
            check_bounds=True, check_views=False, configs=dict(run.case.configs)):
        scope = shadow_mode(shadow) if shadow is not None else contextlib.nullcontext()
        host = HostShadow(shadow) if shadow is not None else contextlib.nullcontext()
        with scope, host:  # grad as the launch had it: a launcher may run a backward pass
            result = call_with(run.target.launcher, {**run.scalars, **tensors})
    outputs = run._outputs(result, tensors) or ()
    out: list[tuple[torch.Tensor, torch.Tensor] | None] = []
    for o in outputs:
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()):
            out.append(None)
        elif shadow is None:
            out.append((o.detach().to(torch.float64), torch.ones(o.shape, dtype=torch.bool)))
        else:
            out.append(shadow.output(o))
    return out


def find_shadow(run: Any, mode: str, outputs: Sequence[Any], comparison: Any, tolerance: Any,
                masks: Sequence[torch.Tensor]) -> tuple[Any, list[str]]:
    """Run ``run``'s case (a :class:`fuzzkern.execution.runner._Run`) as a float64 shadow and
    measure what the judge needs (:class:`fuzzkern.judge.precision.ShadowFindings`) for the
    failed ``comparison`` of ``mode``'s ``outputs``; or None and why the shadow cannot judge."""
    masks = [m.detach().cpu() for m in masks]  # compiled mode's are on the device
    exact = ShadowRun()
    try:
        shadows = launch_shadow(run, exact)
    except Exception as e:
        return None, [f"the shadow launch raised {type(e).__name__}: {str(e)[:200]}"]
    limits = list(exact.limits)
    expected = run.exact_reference()
    if expected is None:
        limits.append("the reference raised with torch held at float64")
    for i, sh in enumerate(shadows):
        if sh is None or i >= len(masks) or masks[i].numel() != sh[1].numel():
            continue
        bad = masks[i].reshape(sh[1].shape)
        if bool((bad & ~sh[1]).any()):
            how = ("; " + "; ".join(exact.host_unwidened) + " cannot run in float64"
                   if exact.host_unwidened else "")
            limits.append(f"output {i} holds failing values neither a kernel nor host code "
                          f"the shadow widens made{how}")
        real = outputs[i].detach().cpu().to(torch.float64).reshape(sh[0].shape)
        if bool((bad & ~torch.isfinite(real) & torch.isfinite(sh[0])).any()):
            # a range event (an exp underflowing to 0, then 0/0) is not rounding
            limits.append(f"output {i} is NaN or inf where the float64 shadow is finite: an "
                          "underflow or overflow of the kernel's dtypes")
        if exact.host_reads:
            _host_range(shadows, expected, i)
    ranged = [i for i, why in _range_limits(limits)]
    if ranged and expected is not None and len(ranged) == len(limits):
        # NaN/inf only the kernel has: a narrow accumulation that overflows is that line's
        # precision loss, if rounding there alone gives the same non-finite values
        sites = _range_site(run, exact, outputs, shadows, masks, ranged)
        if sites:
            found, more = _findings(run, mode, outputs, shadows, expected, exact, tolerance,
                                    masks)
            if found is not None and found.comparison.ok:
                where = "; line ".join(site.describe() for site in sites)
                found.cause = (f"line {where}; rounding there alone gives the NaN/inf the "
                               "kernel's outputs hold (a sum overflowing its dtype, or "
                               "statistics such as E[x^2] - E[x]^2 going negative)")
                found.share, found.accumulates = 1.0, True
                return found, more
    if limits or expected is None:
        return None, limits
    return _findings(run, mode, outputs, shadows, expected, exact, tolerance, masks)


_RANGE = "is NaN or inf where the float64 shadow is finite"


def _range_limits(limits: Sequence[str]) -> list[tuple[int, str]]:
    return [(int(why.split()[1]), why) for why in limits
            if why.startswith("output ") and _RANGE in why]


def _range_site(run: Any, exact: ShadowRun, outputs: Sequence[Any],
                shadows: list[tuple[torch.Tensor, torch.Tensor] | None],
                masks: Sequence[torch.Tensor], ranged: Sequence[int], most: int = 4
                ) -> list[Site] | None:
    """The narrow accumulating lines (one, else all of them) whose rounding alone makes every
    element of outputs ``ranged`` that is NaN or inf in the kernel and finite in the shadow
    non-finite too."""
    candidates = sorted((s for s in exact.sites.values() if s.accumulates),
                        key=lambda s: s.ops, reverse=True)[:most]
    # each line alone, then all of them together (E[x^2] - E[x]^2 from two fp16 sums goes
    # negative into sqrt only when both round)
    tries = [[site] for site in candidates] + ([candidates] if len(candidates) > 1 else [])
    for sites in tries:
        try:
            outs = launch_shadow(run, ShadowRun(round_at=frozenset(s.key for s in sites),
                                                record=False))
        except Exception:
            continue
        if all(_nonfinite_too(outputs[i], shadows[i], masks[i], outs[i] if i < len(outs)
                              else None) for i in ranged):
            return sites
    return None


def _nonfinite_too(output: Any, shadow: tuple[torch.Tensor, torch.Tensor] | None,
                   mask: torch.Tensor, rounded_run: tuple[torch.Tensor, torch.Tensor] | None
                   ) -> bool:
    if shadow is None or rounded_run is None:
        return False
    real = output.detach().cpu().to(torch.float64).reshape(shadow[0].shape)
    odd = mask.reshape(shadow[0].shape) & ~torch.isfinite(real) & torch.isfinite(shadow[0])
    return bool(odd.any()) and bool((~torch.isfinite(rounded_run[0]) | ~odd).all())


def _host_range(shadows: list[tuple[torch.Tensor, torch.Tensor] | None],
                expected: Sequence[Any] | None, i: int) -> None:
    """Output ``i``'s shadow where it is NaN or inf and the exact reference is something else,
    in a launch that read host-made values: the range of their rounding (a softmax rounded
    to bf16 underflows to 0, and 0 * inf is NaN where the reference has inf), which the shadow
    keeps, as it keeps every dtype's range. Those elements take the reference's value, so
    the shadow judges the rest of the output (what their rounding explains is measured there
    by the host perturbation probes)."""
    sh = shadows[i]
    if sh is None or expected is None or i >= len(expected) or \
            not isinstance(expected[i], torch.Tensor):
        return
    ref = expected[i].detach().cpu().to(torch.float64)
    if ref.numel() != sh[0].numel():
        return
    ref = ref.reshape(sh[0].shape)
    same = (sh[0] == ref) | (torch.isnan(sh[0]) & torch.isnan(ref))
    odd = ~torch.isfinite(sh[0]) & ~same
    if bool(odd.any()):
        shadows[i] = (torch.where(odd, ref, sh[0]), sh[1])


def _findings(run: Any, mode: str, outputs: Sequence[Any],
              shadows: list[tuple[torch.Tensor, torch.Tensor] | None], expected: Sequence[Any],
              exact: ShadowRun, tolerance: Any, masks: Sequence[torch.Tensor]
              ) -> tuple[Any, list[str]]:
    from fuzzkern.judge import oracle
    from fuzzkern.judge.precision import ShadowFindings, explained_by, worst_element

    rounded_out = [sh[0].to(o.dtype) if sh is not None else o
                   for o, sh in zip(outputs, shadows, strict=False)]
    plain = dataclasses.replace(tolerance, adaptive=False)
    shadow_masks: list[torch.Tensor] = []
    found = ShadowFindings(oracle.compare(rounded_out, expected, tolerance=plain,
                                          names=run.output_names(), masks=shadow_masks))
    if not found.comparison.ok and exact.overflows:
        # overflow is the format's range, which the shadow keeps: rounding or logic cannot
        # be told apart by it
        return None, [f"{exact.overflows[0]}, and the shadow keeps each dtype's range"]
    if not found.comparison.ok and exact.host_reads:
        # the kernel read values host code made and rounded: what their rounding explains
        level = probe_level(run, "host", shadows)
        if explained_by(shadows, expected, level, shadow_masks, plain):
            found.host_reads = exact.host_reads
            found.comparison = dataclasses.replace(found.comparison, ok=True)
    dropped = _dropped_nan(outputs, shadows, masks)
    if dropped:
        # a number where the shadow (and the reference) hold NaN: no rounding does that
        return None, [dropped]
    refs = [(e.detach().cpu().to(torch.float64), torch.ones(e.shape, dtype=torch.bool))
            if isinstance(e, torch.Tensor) and sh is not None else None
            for e, sh in zip(expected, shadows, strict=False)]
    worst = worst_element(outputs, refs, masks)
    if worst is None or not found.comparison.ok:
        return found, []
    i, idx, error = worst
    sh = shadows[i]
    assert sh is not None
    o = outputs[i]
    found.where, found.error, found.dtype = (i, idx), error, str(o.dtype).replace("torch.", "")
    unit = float(oracle.ulp(sh[0][idx].abs().reshape(1), o.dtype)[0]) or 1.0
    found.error_ulp = error / unit
    found.native_error = _native_error(run, i, idx, float(sh[0][idx]))
    if mode == "compiled":
        _twin(run, found, outputs, shadows, masks, exact)
    own = float((o.detach().cpu().to(torch.float64)[idx] - sh[0][idx]).abs())
    _cause(run, found, exact, shadows, own)
    return found, []


def _dropped_nan(outputs: Sequence[Any], shadows: Sequence[tuple[torch.Tensor, torch.Tensor]
                                                             | None],
                 masks: Sequence[torch.Tensor]) -> str | None:
    """Where a failing output holds a number and its shadow NaN, in words (None: nowhere)."""
    for i, (o, sh) in enumerate(zip(outputs, shadows, strict=False)):
        if sh is None or not isinstance(o, torch.Tensor) or i >= len(masks):
            continue
        got = o.detach().cpu().to(torch.float64).reshape(sh[0].shape)
        bad = masks[i].reshape(sh[0].shape) & torch.isnan(sh[0]) & ~torch.isnan(got)
        if bool(bad.any()):
            where = tuple(int(v) for v in bad.nonzero()[0].tolist())
            return (f"output {i} holds {float(got[where]):.6g} at {list(where)} where the "
                    "shadow holds NaN: a NaN dropped, not rounding")
    return None


def _twin(run: Any, found: Any, outputs: Sequence[Any],
          shadows: list[tuple[torch.Tensor, torch.Tensor] | None],
          masks: Sequence[torch.Tensor], exact: ShadowRun) -> None:
    """Compiled mode: the interpreter's own distance from the shadow, and how far compiled
    float32 code may move at this input (:data:`GPU_APPROX_UNIT`), against compiled code's."""
    from fuzzkern.judge.precision import twin_within

    assert found.where is not None
    i, idx = found.where
    sh = shadows[i]
    plain_run = launch_shadow(run, None)[i]
    if sh is None or plain_run is None:
        return
    level = probe_level(run, "gpu", shadows)[i]
    assert level is not None
    if exact.host_reads:  # compiled host code rounds what it makes at the dtype itself
        host = probe_level(run, "host", shadows)[i]
        if host is not None:
            level = level + host
    found.twin_error = float((plain_run[0][idx] - sh[0][idx]).abs())
    found.gpu_level = float(level[idx])
    o = outputs[i]
    found.compiled_within = twin_within(o, plain_run[0], sh[0], masks[i].reshape(o.shape),
                                        o.dtype, level)


def _cause(run: Any, found: Any, exact: ShadowRun,
           shadows: list[tuple[torch.Tensor, torch.Tensor] | None], error: float) -> None:
    """The line whose rounding alone comes closest to ``error``, the kernel's distance from
    its shadow at the worst element."""
    assert found.where is not None
    i, idx = found.where
    sh = shadows[i]
    assert sh is not None

    def error_of(outs: Sequence[tuple[torch.Tensor, torch.Tensor] | None]) -> float:
        got = outs[i] if i < len(outs) else None
        if got is None or error == 0:
            return 0.0
        return float((got[0][idx] - sh[0][idx]).abs()) / error

    cause = attribute(lambda r: launch_shadow(run, r), exact, error_of)
    if cause is not None and cause.share > 0:
        found.cause, found.share = cause.describe(), cause.share
        found.accumulates = cause.site.accumulates


#: perturbation probes per level (:func:`probe_level`), as the outside rules' PROBES
PROBES = 3


def probe_level(run: Any, perturb: str, exact: Sequence[tuple[torch.Tensor, torch.Tensor]
                                                         | None]) -> list[torch.Tensor | None]:
    """Per output, how far the shadow moves (the largest of :data:`PROBES` runs) when it is
    perturbed by ``perturb`` (:attr:`ShadowRun.perturb`): the rounding the shadow cannot remove,
    measured where it happens rather than estimated from the inputs."""
    level: list[torch.Tensor | None] = [None if e is None else torch.zeros_like(e[0])
                                        for e in exact]
    for seed in range(PROBES):
        try:
            outs = launch_shadow(run, ShadowRun(record=False, perturb=perturb, seed=seed))
        except Exception:
            continue
        for i, (e, o) in enumerate(zip(exact, outs, strict=False)):
            current = level[i]
            if e is None or o is None or current is None:
                continue
            d = (o[0] - e[0]).abs()
            level[i] = torch.maximum(current, torch.where(torch.isfinite(d), d, 0.0))
    return level


def _native_error(run: Any, i: int, idx: tuple[int, ...], exact: float) -> float | None:
    native = run.native_reference()
    if native is None or i >= len(native) or not isinstance(native[i], torch.Tensor):
        return None
    try:
        return abs(float(native[i][idx]) - exact)
    except (IndexError, RuntimeError, TypeError):
        return None
