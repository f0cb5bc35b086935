"""Poisoned allocations: memory a launcher gets from ``torch.empty*`` during a case is filled
with a poison value (NaN, or an integer sentinel), in every mode.

Without it, an output element a kernel never writes, or a workspace it reads before writing,
holds whatever the allocator returned: zeros on a fresh CPU page (the bug hides), stale data on
the GPU (the bug shows, sometimes). Poisoning makes both show, deterministically, and lets the
oracle say "never written" instead of "wrong value".
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


def poison_value(dtype: torch.dtype) -> float | int | bool:
    return gap_fill(dtype)


def _poison(t: Any) -> Any:
    if isinstance(t, torch.Tensor) and t.numel() and not t.is_meta:
        try:
            # Fill the whole storage, so strided allocations (empty_strided) are poisoned too.
            n = t.untyped_storage().nbytes() // t.element_size()
            t.as_strided((n,), (1,), 0).fill_(poison_value(t.dtype))
        except RuntimeError:
            t.fill_(poison_value(t.dtype))
    return t


class Allocations:
    """What was allocated (and poisoned) during the ``with`` block."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []


@contextlib.contextmanager
def poisoned_allocations(enabled: bool = True) -> Iterator[Allocations]:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and
    ``Tensor.new_empty`` return poisoned tensors. Launchers that bound ``empty`` at import
    (``from torch import empty``) are not seen. Blocks are serialized by a lock."""
    record = Allocations()
    if not enabled:
        yield record
        return
    originals: dict[str, Any] = {name: getattr(torch, name) for name in _FACTORIES}
    new_empty = torch.Tensor.new_empty

    def wrap(fn: Any) -> Any:
        def poisoned(*args: Any, **kwargs: Any) -> Any:
            t = fn(*args, **kwargs)
            record.tensors.append(t)
            return _poison(t)

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


def unwritten_counts(outputs: tuple[Any, ...], allocations: Allocations) -> dict[int, int]:
    """Per output index, how many elements still hold the poison value, for outputs the
    launcher allocated during the case (a correct kernel overwrites every one of them)."""
    ptrs = {t.untyped_storage().data_ptr() for t in allocations.tensors
            if isinstance(t, torch.Tensor)}
    out: dict[int, int] = {}
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor) or o.untyped_storage().data_ptr() not in ptrs:
            continue
        if o.dtype.is_floating_point:
            n = int(torch.isnan(o).sum())
        elif o.dtype == torch.bool:
            continue  # True is a legitimate value; nothing tells poison apart
        else:
            n = int((o == poison_value(o.dtype)).sum())
        if n:
            out[i] = n
    return out
