"""Poisoned allocations: memory a launcher gets from ``torch.empty*`` during a case is filled
with a poison pattern, in every mode.

Without it, an output element a kernel never writes, or a workspace it reads before writing,
holds whatever the allocator returned: zeros on a fresh CPU page (the bug hides), stale data on
the GPU (the bug shows, sometimes). Poisoning makes both show, deterministically, and lets the
oracle say "never written" instead of "wrong value".

The poison of a floating-point dtype is a quiet NaN with a payload (:func:`poison_bits`), not
the canonical NaN: an element that still holds that exact bit pattern was never written, while
a NaN the kernel computed (canonical on GPUs and in numpy) or copied from a storage gap (gaps
hold the canonical NaN) is a written, wrong value. Integer dtypes use the gap sentinel
(``iinfo.min + 0x5A``); bool has no value to spare, so unwritten bool elements are not told
apart.

In compiled mode the allocations can also be placed inside red zones (``guard_bytes``): the
tensor is a view into a larger allocation whose guard bands before and after hold the poison
pattern, so a kernel that writes past the end of an output it was given shows up when the
guards are checked after the launch (:mod:`fuzzkern.executors.hygiene`), even though the
caching allocator's slack would have hidden it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import torch

from fuzzkern.case import gap_fill

_lock = threading.Lock()

_FACTORIES = ("empty", "empty_like", "empty_strided")

#: quiet NaNs with a payload, one per float dtype, as the integer of the same width holds them
_NAN_BITS: dict[torch.dtype, int] = {
    torch.float64: 0x7FFDA5A5A5A5A5A5,
    torch.float32: 0x7FE5A5A5,
    torch.float16: 0x7E5A,
    torch.bfloat16: 0x7FE5,
}
for _name, _bits in (("float8_e4m3fn", 0x7F), ("float8_e5m2", 0x7E),  # e4m3fn: its only NaN
                     ("float8_e4m3fnuz", 0x80), ("float8_e5m2fnuz", 0x80)):  # fnuz: the only NaN
    if hasattr(torch, _name):
        _NAN_BITS[getattr(torch, _name)] = _bits

_BITS_DTYPE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def poison_value(dtype: torch.dtype) -> float | int | bool:
    """The poison as a Python value (NaN for floats: use :func:`poison_bits` to compare)."""
    return gap_fill(dtype)


def bits_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype :func:`as_bits` reinterprets ``dtype`` as (itself for integers)."""
    if dtype == torch.bool:
        return torch.uint8
    if dtype.is_floating_point or dtype.is_complex:
        return _BITS_DTYPE[dtype.itemsize]
    return dtype


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """``t`` reinterpreted as an integer tensor of the same element size (no copy), so that
    comparisons are bitwise: NaN equals the same NaN, ``-0.0`` differs from ``0.0``."""
    target = bits_dtype(t.dtype)
    if target == t.dtype:
        return t
    if t.dim() == 0:
        return t.reshape(1).view(target).reshape(())
    return t.view(target)


def poison_bits(dtype: torch.dtype) -> int:
    """The poison pattern of ``dtype`` as a value of :func:`bits_dtype` (``dtype``)."""
    if dtype in _NAN_BITS:
        return _NAN_BITS[dtype]
    if dtype == torch.bool:
        return 1
    return int(gap_fill(dtype))


def fill_poison(t: torch.Tensor) -> torch.Tensor:
    """Fill ``t``'s whole storage with the poison pattern (any layout, any device)."""
    n = t.untyped_storage().nbytes() // t.element_size()
    flat = t.as_strided((n,), (1,), 0)
    as_bits(flat).fill_(poison_bits(t.dtype))
    return t


def is_poison(t: torch.Tensor) -> torch.Tensor | None:
    """Bool mask of ``t``'s elements that hold the poison pattern; None for bool tensors."""
    if t.dtype == torch.bool:
        return None
    return as_bits(t) == poison_bits(t.dtype)


def _poison(t: Any) -> Any:
    if isinstance(t, torch.Tensor) and t.numel() and not t.is_meta:
        if t.dtype.is_complex:
            return t  # no poison pattern: left as allocated
        try:
            # Fill the whole storage, so strided allocations (empty_strided) are poisoned too.
            fill_poison(t)
        except RuntimeError:
            t.fill_(poison_value(t.dtype))
    return t


def _guarded(t: torch.Tensor, guard_bytes: int, record: Allocations) -> torch.Tensor:
    """``t``'s layout again, inside an allocation with poisoned guard bands (red zones)."""
    from fuzzkern.executors.hygiene import place_in_red_zone

    if (t.is_meta or t.is_sparse or t.is_quantized or t.requires_grad or t.dtype.is_complex
            or guard_bytes % t.element_size()):
        return t
    view, zone = place_in_red_zone(t, t.device, guard_bytes,
                                   name=f"allocation {len(record.zones)}", initial=None)
    record.zones.append(zone)
    return view


class Allocations:
    """What was allocated (and poisoned) during the ``with`` block; ``zones`` holds the red
    zones of the allocations made with guard bands."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.zones: list[Any] = []

    def storage_ptrs(self) -> set[int]:
        return {t.untyped_storage().data_ptr() for t in self.tensors
                if isinstance(t, torch.Tensor)}

    def zone_of(self, t: Any) -> Any:
        """The red zone ``t`` (an allocation or a view of one) lies in, or None."""
        if not isinstance(t, torch.Tensor):
            return None
        ptr = t.untyped_storage().data_ptr()
        return next((z for z in self.zones if z.alloc.untyped_storage().data_ptr() == ptr),
                    None)

    def indices_of(self, outputs: tuple[Any, ...] | None) -> set[int]:
        """Indices of ``outputs`` that are (views of) tensors allocated in the block."""
        if not outputs:
            return set()
        ptrs = self.storage_ptrs()
        return {i for i, o in enumerate(outputs)
                if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in ptrs}


@contextlib.contextmanager
def poisoned_allocations(enabled: bool = True, guard_bytes: int = 0) -> Iterator[Allocations]:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and
    ``Tensor.new_empty`` return poisoned tensors (unless ``enabled`` is False). With
    ``guard_bytes``, each lies inside a larger allocation with that many bytes of the poison
    pattern before and after it (see :func:`fuzzkern.executors.hygiene.place_in_red_zone`),
    poisoned or not. Launchers that bound ``empty`` at
    import (``from torch import empty``) are not seen. Blocks are serialized by a lock.

    >>> with poisoned_allocations() as allocs:
    ...     t = torch.empty(2)
    >>> bool(is_poison(t).all()), len(allocs.tensors)
    (True, 1)
    """
    record = Allocations()
    if not enabled and guard_bytes <= 0:
        yield record
        return
    originals: dict[str, Any] = {name: getattr(torch, name) for name in _FACTORIES}
    new_empty = torch.Tensor.new_empty

    def wrap(fn: Any) -> Any:
        def poisoned(*args: Any, **kwargs: Any) -> Any:
            t = fn(*args, **kwargs)
            if guard_bytes > 0 and kwargs.get("out") is None and isinstance(t, torch.Tensor):
                t = _guarded(t, guard_bytes, record)
            record.tensors.append(t)
            return _poison(t) if enabled else t

        poisoned.__wrapped__ = fn  # type: ignore[attr-defined]
        return poisoned

    with _lock:
        for name, fn in originals.items():
            setattr(torch, name, wrap(fn))
        torch.Tensor.new_empty = wrap(new_empty)  # type: ignore[method-assign]
        try:
            yield record
        finally:
            for name, fn in originals.items():
                setattr(torch, name, fn)
            torch.Tensor.new_empty = new_empty  # type: ignore[method-assign]


def unwritten_counts(outputs: tuple[Any, ...], allocations: Allocations,
                     allocated: set[int] | None = None) -> dict[int, int]:
    """Per output index, how many elements still hold the poison pattern, for outputs the
    launcher allocated during the case (a correct kernel overwrites every one of them).
    ``allocated`` names those outputs by index when ``outputs`` are copies (compiled mode)."""
    if allocated is None:
        allocated = allocations.indices_of(outputs)
    out: dict[int, int] = {}
    for i, o in enumerate(outputs):
        if i not in allocated or not isinstance(o, torch.Tensor):
            continue
        mask = is_poison(o)
        n = int(mask.sum()) if mask is not None else 0
        if n:
            out[i] = n
    return out
