"""Memory hygiene checks that need no interpreter: red zones, storage gaps, input mutation and
run-to-run determinism. Device-agnostic: the same functions run on CUDA storages in compiled
mode and on CPU storages in interpreter mode and in the unit tests.

Red zones (compiled mode). A case's tensor is copied to the device as a view into a larger
allocation: ``guard`` bytes of the poison pattern, then the tensor's whole storage (gaps
included, as the case built them), then ``guard`` bytes again. After the launch the allocation
is copied back and compared:

* a changed guard byte is a write before the start or past the end of the storage (which the
  caching allocator's slack would have hidden, and compute-sanitizer with it);
* a changed gap byte (inside the storage, covered by no element of the view) is a write outside
  the view: it corrupts data that is not the kernel's;
* a changed byte inside the view of an input that is not declared in-place is a mutated input.

Reads outside a view are the interpreter's business (its bounds checker sees every access);
red zones see writes only, and only those that land within ``guard`` bytes.

Poisoned allocations (every mode). Memory a launcher gets from ``torch.empty*`` during a case
is filled with a poison pattern.

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
guards are checked after the launch, even though the caching allocator's slack would have
hidden it.

>>> import torch
>>> x = torch.arange(4.0)
>>> view, zone = place_in_red_zone(x, "cpu", 64, name="x")
>>> view.add_(1).tolist()
[1.0, 2.0, 3.0, 4.0]
>>> zone.alloc.view(torch.float32)[16 + 4] = 7.0  # one element past the end
>>> [f["text"] for f in check_red_zone(zone)]
['1 element (4 bytes) past the end of `x` changed (elements +1)']
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from fuzzkern.case.model import gap_fill

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


def _guarded(t: torch.Tensor, guard_bytes: int, record: Allocations,
             poison: bool, arena: Arena | None = None) -> tuple[torch.Tensor, bool]:
    """``t``'s layout again, inside an allocation with poisoned guard bands (red zones), and
    whether its elements are poisoned already (``poison``: the whole allocation filled at once
    where the guard pattern is the poison, every dtype but bool; carved from ``arena`` when
    given)."""
    if (t.is_meta or t.is_sparse or t.is_quantized or t.requires_grad or t.dtype.is_complex
            or guard_bytes % t.element_size()):
        return t, False
    whole = poison and t.dtype != torch.bool
    name = f"allocation {len(record.zones)}"
    if whole and arena is not None:
        view, zone = arena.place(t, guard_bytes, name)
    else:
        view, zone = place_in_red_zone(t, t.device, guard_bytes, name=name,
                                       initial="poison" if whole else None)
    record.zones.append(zone)
    return view, whole


class Arena:
    """Poisoned memory that the launcher allocations of a batch of value variants are carved
    from (:func:`poisoned_allocations` with ``arena=True``): one fill of a chunk per device and
    dtype instead of an allocation and a fill per red zone. Each red zone takes its own
    stretch of a chunk (guards, storage, padding to :data:`ZONE_ALIGN` bytes), never reused
    while the arena lives, so a zone starts poisoned as one of its own would; neighbours lie
    side by side as in a batch's input block (a stray write into a neighbour's guard is that
    neighbour's finding, which the batch re-runs alone)."""

    #: bytes of the smallest chunk
    CHUNK = 1 << 20
    #: a chunk holds at least this many zones of the size that asked for it (up to MOST)
    ZONES = 16
    #: bytes of the largest chunk made for small zones
    MOST = 64 << 20

    def __init__(self) -> None:
        #: the chunk zones are carved from now, per device and dtype
        self.chunks: dict[tuple[torch.device, torch.dtype], Chunk] = {}
        #: every chunk made
        self.made: list[Chunk] = []

    def untouched(self, after: dict[int, torch.Tensor]) -> set[int]:
        """The ``id`` of every zone whose guards are certainly intact: those of the chunks
        whose bytes copied back (``after``, by ``id`` of the chunk, see
        :func:`fuzzkern.execution.compiled.fetch`) still hold the poison pattern everywhere
        but in the zones' storages, as filled (one comparison per chunk instead of two per
        zone). A chunk with any other byte changed verifies none of its zones."""
        verified: set[int] = set()
        for chunk in self.made:
            got = after.get(id(chunk))
            if got is None or not chunk.zones:
                continue
            itemsize = chunk.dtype.itemsize
            changed = got.view(bits_dtype(chunk.dtype)) != poison_bits(chunk.dtype)
            inside = torch.zeros(chunk.used // itemsize, dtype=torch.bool)
            base = chunk.bytes.storage_offset()
            for z in chunk.zones:
                start = (z.alloc.storage_offset() - base + z.guard) // itemsize
                inside[start:start + z.nbytes // itemsize] = True
            if not bool((changed & ~inside).any()):
                verified.update(id(z) for z in chunk.zones)
        return verified

    def place(self, t: torch.Tensor, guard_bytes: int, name: str
              ) -> tuple[torch.Tensor, RedZone]:
        """:func:`place_in_red_zone` of ``t`` (``initial="poison"``), in the arena."""
        nbytes = t.untyped_storage().nbytes()
        size = 2 * guard_bytes + nbytes
        need = size + (-size % ZONE_ALIGN)
        key = (t.device, t.dtype)
        chunk = self.chunks.get(key)
        if chunk is None or chunk.used + need > chunk.bytes.numel():
            n = max(need, min(self.MOST, max(self.CHUNK, need * self.ZONES)))
            n += -n % ZONE_ALIGN
            itemsize = t.element_size()
            chunk = Chunk(torch.full((n // itemsize,), poison_bits(t.dtype),
                                     dtype=bits_dtype(t.dtype), device=t.device
                                     ).view(torch.uint8), t.dtype)
            self.chunks[key] = chunk
            self.made.append(chunk)
        at = chunk.used
        chunk.used = at + need
        zone = RedZone(name, chunk.bytes[at:at + size], guard_bytes, nbytes, t.dtype,
                       view_spec(t))
        chunk.zones.append(zone)
        return zone.view(), zone


@dataclass(eq=False)
class Chunk:
    """Poisoned memory of an :class:`Arena` (``bytes``, uint8, filled with ``dtype``'s poison
    pattern), its first ``used`` bytes carved into ``zones``."""

    bytes: torch.Tensor
    dtype: torch.dtype
    used: int = 0
    zones: list[RedZone] = field(default_factory=list)


#: red zones laid side by side (an :class:`Arena`'s, the inputs' block of
#: :func:`fuzzkern.execution.compiled.place_inputs`) start at multiples of this many bytes, as
#: separate allocations do (the CUDA caching allocator's granularity), so a kernel sees its
#: pointers with the same alignment, and so the same specialization, as in a case of its own
ZONE_ALIGN = 512


def zone_at(t: torch.Tensor, zones: Iterable[Any]) -> Any:
    """The red zone among ``zones`` whose allocation holds ``t``'s first element, or None (by
    address: zones side by side share a storage, so storages do not tell them apart)."""
    if t.device.type == "meta" or not t.numel():
        return None
    at = t.data_ptr()
    for z in zones:
        start = z.alloc.data_ptr()
        if start <= at < start + z.alloc.numel():
            return z
    return None


class Allocations:
    """What was allocated (and poisoned) during the ``with`` block; ``zones`` holds the red
    zones of the allocations made with guard bands."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.zones: list[Any] = []
        #: the arena the poisoned red zones were carved from (``arena=True``), else None
        self.arena: Arena | None = None

    def storage_ptrs(self) -> set[int]:
        return {t.untyped_storage().data_ptr() for t in self.tensors
                if isinstance(t, torch.Tensor)}

    def zone_of(self, t: Any) -> Any:
        """The red zone ``t`` (an allocation or a view of one) lies in, or None: the zone whose
        bytes hold ``t``'s first element (zones carved from an :class:`Arena` share a
        storage), else, for an empty ``t``, the zone of its storage."""
        if not isinstance(t, torch.Tensor):
            return None
        if t.numel() and not t.is_meta:
            return zone_at(t, self.zones)
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
def poisoned_allocations(enabled: bool = True, guard_bytes: int = 0,
                         arena: bool = False) -> Iterator[Allocations]:
    """While active, ``torch.empty``, ``torch.empty_like``, ``torch.empty_strided`` and
    ``Tensor.new_empty`` return poisoned tensors (unless ``enabled`` is False). With
    ``guard_bytes``, each lies inside a larger allocation with that many bytes of the poison
    pattern before and after it (see :func:`fuzzkern.execution.hygiene.place_in_red_zone`),
    poisoned or not; with ``arena`` too, poisoned ones are carved from an :class:`Arena` (a
    batch of value variants). Launchers that bound ``empty`` at
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
    pool = Arena() if arena and enabled and guard_bytes > 0 else None
    record.arena = pool
    originals: dict[str, Any] = {name: getattr(torch, name) for name in _FACTORIES}
    new_empty = torch.Tensor.new_empty

    def wrap(fn: Any) -> Any:
        def poisoned(*args: Any, **kwargs: Any) -> Any:
            t = fn(*args, **kwargs)
            done = False
            if guard_bytes > 0 and kwargs.get("out") is None and isinstance(t, torch.Tensor):
                t, done = _guarded(t, guard_bytes, record, enabled, pool)
            record.tensors.append(t)
            return _poison(t) if enabled and not done else t

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


#: bytes of guard band on each side of a red-zoned storage (a multiple of 512, so a view keeps
#: its alignment class relative to the allocator's)
DEFAULT_GUARD_BYTES = 4096
#: how many indices a finding lists
FIRST = 5

ViewSpec = tuple[tuple[int, ...], tuple[int, ...], int, int]  # shape, strides, offset, itemsize


# Nothing here allocates with torch.empty*: these functions also run while fuzzkern's poisoned
# allocations (which patch those factories) are active.


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """A uint8 tensor over ``t``'s whole storage, on its device (no copy)."""
    return torch.zeros(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def view_spec(t: Any) -> ViewSpec:
    return (tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), int(t.element_size()))


def view_coverage(views: Iterable[ViewSpec], nbytes: int) -> torch.Tensor:
    """Bool mask over ``nbytes`` storage bytes: True where a byte belongs to an element of one
    of ``views`` (shape, strides and offset in elements of ``itemsize`` bytes)."""
    cov = torch.zeros(nbytes, dtype=torch.bool)
    for shape, strides, offset, itemsize in views:
        if any(s == 0 for s in shape):
            continue
        # an expanded (stride-0) dim covers what its first index covers
        dense = [1 if st == 0 else s for s, st in zip(shape, strides, strict=True)]
        cov.as_strided((*dense, itemsize), (*(st * itemsize for st in strides), 1),
                       offset * itemsize).fill_(True)
    return cov


def coverage_of(t: torch.Tensor, nbytes: int | None = None) -> torch.Tensor:
    """:func:`view_coverage` of one tensor over its own storage."""
    if nbytes is None:
        nbytes = t.untyped_storage().nbytes()
    return view_coverage([view_spec(t)], nbytes)


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two CPU uint8 tensors hold the same bytes: ``torch.equal``, in numpy (a CPU
    ``torch.equal`` costs several microseconds even on a few bytes, and these comparisons run
    for every red zone of every case)."""
    x, y = a.numpy(), b.numpy()
    if x.shape != y.shape:
        return False
    return x.tobytes() == y.tobytes() if x.size <= 1 << 16 else bool((x == y).all())


@functools.lru_cache(maxsize=64)
def guard_pattern(dtype: torch.dtype, nbytes: int) -> torch.Tensor:
    """``nbytes`` (a multiple of ``dtype``'s size) of the poison pattern, as CPU uint8 (one
    tensor per dtype and size, shared: read it, never write it)."""
    if dtype == torch.bool:  # True (1) is what a kernel writes; 0xA5 is not a bool it stores
        return torch.full((nbytes,), 0xA5, dtype=torch.uint8)
    itemsize = dtype.itemsize
    fill = torch.full((nbytes // itemsize,), poison_bits(dtype), dtype=bits_dtype(dtype))
    return fill.view(torch.uint8)


_guards_on_devices: dict[tuple[torch.device, torch.dtype, int], torch.Tensor] = {}


def _guard_on(device: torch.device, dtype: torch.dtype, nbytes: int) -> torch.Tensor:
    """:func:`guard_pattern` kept on ``device`` (one host-to-device copy per dtype, not one per
    guard band)."""
    key = (device, dtype, nbytes)
    got = _guards_on_devices.get(key)
    if got is None:
        pattern = guard_pattern(dtype, nbytes)
        got = pattern.to(device) if device != pattern.device else pattern
        _guards_on_devices[key] = got
    return got


@dataclass
class RedZone:
    """One storage placed between two guard bands, and what to compare it with afterwards.

    ``alloc`` is the whole allocation (uint8, on the device); the storage starts at byte
    ``guard`` and holds ``nbytes``. ``initial`` is the storage's content before the launch (CPU
    uint8) when gaps and the view are to be checked, None when only the guards are; ``image``
    then is the whole allocation's content before the launch (guards and storage, CPU uint8):
    an allocation whose bytes still equal it has nothing to report (:meth:`unchanged`).
    """

    name: str
    alloc: torch.Tensor
    guard: int
    nbytes: int
    dtype: torch.dtype
    spec: ViewSpec
    initial: torch.Tensor | None = None
    image: torch.Tensor | None = None

    def unchanged(self, after: torch.Tensor) -> bool:
        """Whether ``after`` (the allocation's bytes on the CPU) equals the bytes placed there
        before the launch, guards, gaps and elements alike: one comparison instead of the
        guards', the gaps' and the elements' (False when no image was kept)."""
        return self.image is not None and same_bytes(after, self.image)

    @property
    def itemsize(self) -> int:
        return self.spec[3]

    def view(self, alloc: torch.Tensor | None = None) -> torch.Tensor:
        """The tensor as the kernel sees it, over ``alloc`` (default: the device allocation;
        either may be a slice of a larger buffer, see :func:`fuzzkern.execution.compiled.
        place_inputs`)."""
        shape, strides, offset, itemsize = self.spec
        base = (self.alloc if alloc is None else alloc).view(self.dtype)
        return base.as_strided(shape, strides,
                               base.storage_offset() + self.guard // itemsize + offset)


def place_in_red_zone(t: torch.Tensor, device: Any, guard_bytes: int = DEFAULT_GUARD_BYTES, *,
                      name: str, initial: str | None = "copy") -> tuple[torch.Tensor, RedZone]:
    """A copy of ``t`` on ``device`` with the same shape, strides and storage offset, whose
    storage lies between two guard bands of ``guard_bytes`` poisoned bytes.

    ``initial="copy"`` copies ``t``'s whole storage (gaps included) and remembers it, so
    :func:`check_red_zone` also reports changed gaps; ``initial=None`` leaves the storage
    uninitialized and checks only the guards (for fresh allocations, poisoned by the caller);
    ``initial="poison"`` fills guards and storage with the poison pattern in one go (a fresh
    allocation; not for bool, whose guard pattern differs from its poison).
    """
    itemsize = t.element_size()
    if guard_bytes <= 0 or guard_bytes % itemsize:
        raise ValueError(f"guard_bytes={guard_bytes} must be a positive multiple of the element "
                         f"size {itemsize} of {t.dtype}")
    nbytes = t.untyped_storage().nbytes()
    guard = guard_pattern(t.dtype, guard_bytes)
    kept = image = None
    if initial == "copy":
        image = torch.cat([guard, storage_bytes(t).cpu(), guard])  # a copy: cat never aliases
        kept = image[guard_bytes:guard_bytes + nbytes]
        alloc = image.to(device) if torch.device(device) != image.device else image.clone()
    elif initial == "poison" and t.dtype != torch.bool:
        alloc = torch.full(((2 * guard_bytes + nbytes) // itemsize,), poison_bits(t.dtype),
                           dtype=bits_dtype(t.dtype), device=device).view(torch.uint8)
    else:
        alloc = torch.zeros(2 * guard_bytes + nbytes, dtype=torch.uint8, device=device)
        on_device = _guard_on(alloc.device, t.dtype, guard_bytes)
        alloc[:guard_bytes].copy_(on_device)
        alloc[guard_bytes + nbytes:].copy_(on_device)
    zone = RedZone(name, alloc, guard_bytes, nbytes, t.dtype, view_spec(t), kept, image)
    return zone.view(), zone


def _elements(offsets: torch.Tensor, itemsize: int) -> list[int]:
    return sorted({int(o) // itemsize for o in offsets[: FIRST * itemsize]})[:FIRST]


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _guard_finding(zone: RedZone, changed: torch.Tensor, before: bool) -> dict[str, Any]:
    size = zone.itemsize
    pos = changed.nonzero()[:, 0]
    if before:
        # distance from the start: the byte right before it is 1 byte before
        dist = (zone.guard - pos).flip(0)
        elements = sorted({-((int(d) + size - 1) // size) for d in dist[: FIRST * size]},
                          reverse=True)[:FIRST]
        where = "before the start"
    else:
        elements = [e + 1 for e in _elements(pos, size)]
        where = "past the end"
    n_bytes = int(changed.sum())
    n_el = len({int(p) // size for p in pos})
    listed = ", ".join(f"{e:+d}" for e in elements)
    return {
        "argument": zone.name, "where": where, "bytes": n_bytes, "elements": elements,
        "text": f"{n_el} element{_s(n_el)} ({n_bytes} byte{_s(n_bytes)}) {where} of "
                f"`{zone.name}` changed (elements {listed})",
    }


def gap_finding(name: str, changed_gap: torch.Tensor, itemsize: int) -> dict[str, Any]:
    pos = changed_gap.nonzero()[:, 0]
    elements = _elements(pos, itemsize)
    n_bytes = int(changed_gap.sum())
    n_el = len({int(p) // itemsize for p in pos})
    listed = ", ".join(str(e) for e in elements)
    return {
        "argument": name, "where": "gap", "bytes": n_bytes, "elements": elements,
        "text": f"{n_el} storage element{_s(n_el)} of `{name}` outside its view changed "
                f"(storage indices {listed}): the kernel wrote into the gaps of a strided view",
    }


def check_guards(zone: RedZone, after: torch.Tensor | None = None) -> list[dict[str, Any]]:
    """Changed guard bytes as findings: dicts with ``argument``, ``where`` (``"before the
    start"``, ``"past the end"``), ``bytes``, ``elements`` (relative to the start or the end:
    ``-1`` is the element right before the start, ``+1`` the one right after the end) and a
    ``text`` for people. ``after`` is the allocation's bytes on the CPU (copied if None)."""
    if after is None:
        after = zone.alloc.cpu()
    g, n = zone.guard, zone.nbytes
    pattern = guard_pattern(zone.dtype, g)
    findings = []
    head, tail = after[:g], after[g + n:]
    if not same_bytes(head, pattern):
        findings.append(_guard_finding(zone, head != pattern, before=True))
    if not same_bytes(tail, pattern):
        findings.append(_guard_finding(zone, tail != pattern, before=False))
    return findings


def check_red_zone(zone: RedZone, after: torch.Tensor | None = None) -> list[dict[str, Any]]:
    """:func:`check_guards`, plus (when ``zone.initial`` is kept) changed gap bytes, as
    findings with ``where="gap"`` and ``elements`` the storage indices."""
    if after is None:
        after = zone.alloc.cpu()
    g, n = zone.guard, zone.nbytes
    findings = check_guards(zone, after)
    if zone.initial is not None:
        inner = after[g:g + n]
        if not same_bytes(inner, zone.initial):
            gap = (inner != zone.initial) & ~view_coverage([zone.spec], n)
            if bool(gap.any()):
                findings.append(gap_finding(zone.name, gap, zone.itemsize))
    return findings


def _collapse_expanded(t: torch.Tensor) -> torch.Tensor:
    for d, st in enumerate(t.stride()):
        if st == 0 and t.shape[d] > 1:
            t = t.narrow(d, 0, 1)
    return t


def changed_elements(before: torch.Tensor, after: torch.Tensor, name: str
                     ) -> dict[str, Any] | None:
    """Elements of a view that differ bitwise between ``before`` and ``after`` (same shape and
    dtype, CPU): None when none do, else a finding with ``count``, ``total``, the ``first``
    few indices with the values before and after, and a ``text``. Expanded (stride-0) dims
    count once."""
    b = _collapse_expanded(before)
    a = _collapse_expanded(after)
    diff = as_bits(b) != as_bits(a)
    count = int(diff.sum())
    if not count:
        return None
    pos = diff.reshape(-1).nonzero()[:FIRST, 0]
    if b.dim():
        coords = torch.unravel_index(pos, tuple(b.shape))
        idxs = [tuple(int(c[j]) for c in coords) for j in range(len(pos))]
    else:
        idxs = [()]
    first = [{"index": list(i), "before": b[i].item(), "after": a[i].item()} for i in idxs]
    listed = ", ".join(f"[{','.join(str(k) for k in i)}] {b[i].item()!r} -> {a[i].item()!r}"
                       for i in idxs)
    return {
        "argument": name, "count": count, "total": b.numel(), "first": first,
        "text": f"input `{name}` was changed by the launch: {count} of {b.numel()} element"
                f"{_s(b.numel())} {'differs' if count == 1 else 'differ'} ({listed}); declare "
                f"inplace={name!r} if that is intended",
    }


def storage_changes(name: str, like: torch.Tensor, before: torch.Tensor, after: torch.Tensor,
                    *, inplace: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Compare one argument's storage bytes ``before`` and ``after`` a launch (CPU uint8, same
    length). ``like`` gives the view (dtype, shape, strides, offset) over that storage. Returns
    the gap findings (bytes outside the view that changed: always a bug) and, unless the
    argument is ``inplace``, the mutation finding for the view's own elements."""
    if same_bytes(before, after):
        return [], None
    n = before.numel()
    spec = view_spec(like)
    gap = (before != after) & ~view_coverage([spec], n)
    gaps = [gap_finding(name, gap, spec[3])] if bool(gap.any()) else []
    mutated = None
    if not inplace:
        shape, strides, offset, _ = spec
        b = before.view(like.dtype).as_strided(shape, strides, offset)
        a = after.view(like.dtype).as_strided(shape, strides, offset)
        mutated = changed_elements(b, a, name)
    return gaps, mutated


def spread(first: Sequence[Any], other: Sequence[Any]) -> dict[str, Any] | None:
    """How two runs' outputs differ bitwise: None when identical (NaN equals the same NaN),
    else ``count`` (differing elements over all outputs), ``max_abs_diff`` (over pairs where
    both are finite; ``inf`` when only one side is), the ``first`` few differences and a
    ``text``. Non-tensor outputs compare with ``==``."""
    count = 0
    max_abs = 0.0
    listed: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(zip(first, other, strict=False)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            if a != b:
                count += 1
                listed.append({"output": i, "index": [], "first": repr(a), "other": repr(b)})
            continue
        a, b = a.detach().cpu(), b.detach().cpu()
        if a.shape != b.shape or a.dtype != b.dtype:
            count += max(a.numel(), b.numel())
            listed.append({"output": i, "index": [], "first": f"{a.dtype}{tuple(a.shape)}",
                           "other": f"{b.dtype}{tuple(b.shape)}"})
            continue
        diff = as_bits(a) != as_bits(b)
        n = int(diff.sum())
        if not n:
            continue
        count += n
        if a.is_floating_point():
            af, bf = a.double()[diff], b.double()[diff]
            fin = torch.isfinite(af) & torch.isfinite(bf)
            if bool(fin.any()):
                max_abs = max(max_abs, float((af[fin] - bf[fin]).abs().max()))
            if bool((torch.isfinite(af) ^ torch.isfinite(bf)).any()):
                max_abs = float("inf")
        else:
            max_abs = max(max_abs, float((a.long()[diff] - b.long()[diff]).abs().max()))
        pos = diff.reshape(-1).nonzero()[: max(0, FIRST - len(listed)), 0]
        coords = torch.unravel_index(pos, tuple(a.shape)) if a.dim() else ()
        for j in range(len(pos)):
            idx = tuple(int(c[j]) for c in coords)
            listed.append({"output": i, "index": list(idx), "first": a[idx].item(),
                           "other": b[idx].item()})
    if not count:
        return None
    shown = ", ".join(f"out{d['output']}[{','.join(str(k) for k in d['index'])}] "
                      f"{d['first']!r} vs {d['other']!r}" for d in listed[:3])
    return {"count": count, "max_abs_diff": max_abs, "first": listed[:FIRST],
            "text": f"{count} element{_s(count)} {'differs' if count == 1 else 'differ'} "
                    "between runs of the same case "
                    f"(max abs difference {max_abs:.3g}; {shown})"}
