"""Compiled mode: the case's CPU-built tensors copied to the GPU with their exact layouts,
launched through the user's launcher, synchronized and copied back.

A device-side fault (illegal address, misaligned address, device assert) leaves the CUDA context
unusable: the mode result says ``poisoned`` and the worker pool replaces the worker before the
next case. fp32 ``tl.dot`` defaults to tf32 on the GPU while the interpreter and the reference
compute in full fp32; the worker sets ``TRITON_F32_DEFAULT=ieee`` (unless the user set it), so a
kernel that leaves ``input_precision`` unset is compared at fp32 precision. A kernel that asks
for tf32 explicitly needs a looser :class:`~fuzzkern.Tolerance`.

Hygiene (each check can be turned off, see :data:`fuzzkern.target.declare.DEFAULT_CHECKS`):

* **red zones**: every input storage, and every ``torch.empty*`` allocation the launcher makes,
  lies between two guard bands of :data:`~fuzzkern.execution.hygiene.DEFAULT_GUARD_BYTES`
  poison bytes: an allocation's in an allocation of its own (:func:`~fuzzkern.execution.
  hygiene.place_in_red_zone`), the inputs' side by side in one block copied in at once
  (:func:`place_inputs`), at the alignment of allocations of their own, so they do not
  depend on the caching allocator. After the launch a
  changed guard byte, or a changed gap byte of an input, is an ``oob_write`` finding; a changed
  element of an input not declared in-place is a ``mutated`` finding. Under compute-sanitizer
  (``options["sanitize"]``) red zones are left out: memcheck sees exact allocation bounds.
* **debug** (``options["debug"]``): ``triton.knobs.runtime.debug`` is set for the launch, the
  same as ``TRITON_DEBUG=1`` or ``debug=True`` on every launch: device asserts and the integer
  overflow check. An overflow assert is a device fault whose text the CUDA runtime prints to
  the process's stderr, not into the exception; that output is captured during the launch
  (and passed on) to name the operation.
* **compile time**: every JIT compilation runs inside
  :func:`fuzzkern.execution.progress.compile_phase` (:func:`time_compilations`): the parent stops
  the case's clock while it compiles and bounds compiling by its own, larger limit;
  ``detail["compile_seconds"]`` says how long it took.
* **repeats** (``options["repeat_compiled"]`` = N >= 2): the case runs N times on fresh copies
  and the outputs are compared bitwise with the first run's (``nondeterministic``).

:func:`run_on_device` holds all of it and takes any torch device, so the machinery is tested
on the CPU with launchers written in plain torch.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from fuzzkern.case.model import rebuild_like
from fuzzkern.errors import text_of
from fuzzkern.execution import hygiene
from fuzzkern.execution.hygiene import Allocations
from fuzzkern.execution.stages import stage
from fuzzkern.judge.outcome import ModeResult

os.environ.setdefault("TRITON_F32_DEFAULT", "ieee")

_DEVICE_FAULTS = (
    "illegal memory access",
    "illegal address",
    "misaligned address",
    "device-side assert",
    "unspecified launch failure",
    "an illegal instruction",
    "CUDA error",
    "cudaError",
)


class CompileCounter:
    """Counts real compilations and on-disk cache hits through Triton's compilation listener."""

    def __init__(self) -> None:
        self.compiles = 0
        self.cache_hits = 0
        self.kernels: dict[str, int] = {}
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        from triton import knobs

        previous = knobs.compilation.listener

        def listener(*, src: Any, metadata: Any, metadata_group: Any, times: Any,
                     cache_hit: bool, **kw: Any) -> None:
            if cache_hit:
                self.cache_hits += 1
            else:
                self.compiles += 1
                name = getattr(src, "name", None) or getattr(getattr(src, "fn", None),
                                                             "__name__", "?")
                self.kernels[str(name)] = self.kernels.get(str(name), 0) + 1
            if previous is not None:
                previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                         cache_hit=cache_hit, **kw)

        knobs.compilation.listener = listener
        self._installed = True


counter = CompileCounter()


def time_compilations() -> None:
    """Bracket every Triton JIT compilation in this process with
    :func:`fuzzkern.execution.progress.compile_phase`, so that the parent does not count compiling
    against the case's timeout (it has a compile limit of its own). Installed once, by wrapping
    ``JITFunction._do_compile`` (Triton 3.6 to 3.9: where a cache miss compiles)."""
    from triton.runtime.jit import JITFunction

    from fuzzkern.execution.progress import compile_phase

    do_compile = JITFunction.__dict__.get("_do_compile")
    if do_compile is None or getattr(do_compile, "_fuzzkern_timed", False):
        return

    @functools.wraps(do_compile)
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        with compile_phase():
            return do_compile(self, *args, **kwargs)

    timed._fuzzkern_timed = True  # type: ignore[attr-defined]
    JITFunction._do_compile = timed  # type: ignore[method-assign]


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


@functools.cache
def device_label(index: int) -> str:
    """Which physical GPU ``cuda:index`` of this process is, for reports: its name, the
    ``CUDA_VISIBLE_DEVICES`` entry it was pinned by, and its PCI bus id (or UUID), e.g.
    ``"NVIDIA H200 (CUDA_VISIBLE_DEVICES=1, pci 0000:19:00.0)"``."""
    props = torch.cuda.get_device_properties(index)
    where = []
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        where.append(f"CUDA_VISIBLE_DEVICES={cvd}")
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        where.append("pci {:04x}:{:02x}:{:02x}.0".format(
            int(getattr(props, "pci_domain_id", 0) or 0), int(bus),
            int(getattr(props, "pci_device_id", 0) or 0)))
    else:
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            where.append(f"uuid {uuid}")
    return f"{props.name} ({', '.join(where)})" if where else str(props.name)


def is_device_fault(e: BaseException) -> bool:
    name = type(e).__name__
    text = text_of(e)
    return name == "AcceleratorError" or any(s in text for s in _DEVICE_FAULTS)


@contextlib.contextmanager
def debug_knob(on: bool) -> Iterator[None]:
    """``triton.knobs.runtime.debug`` set for the block (what ``TRITON_DEBUG=1`` sets): every
    launch compiles with device asserts and integer overflow checks. Part of Triton's cache
    key, so debug and non-debug variants never mix."""
    if not on:
        yield
        return
    from triton import knobs

    before = knobs.runtime.debug
    knobs.runtime.debug = True
    try:
        yield
    finally:
        knobs.runtime.debug = before


@contextlib.contextmanager
def captured_output(on: bool = True, box: dict[str, str] | None = None
                    ) -> Iterator[dict[str, str]]:
    """Capture what the process writes to file descriptors 1 and 2 during the block (the CUDA
    runtime prints device assert messages there, below Python), then write it through to the
    real descriptors. Yields ``box`` (a new dict by default) whose ``"text"`` is filled on
    exit, also when the block raised."""
    box = {"text": ""} if box is None else box
    box["text"] = ""
    if not on:
        yield box
        return
    saved: list[tuple[int, int, Any]] = []
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        try:
            stream.flush()
            tmp = tempfile.TemporaryFile()
            saved.append((fd, os.dup(fd), tmp))
            os.dup2(tmp.fileno(), fd)
        except (OSError, ValueError, AttributeError):  # no real descriptor (e.g. pytest capture)
            continue
    try:
        yield box
    finally:
        chunks = []
        for fd, orig, tmp in saved:
            with contextlib.suppress(Exception):
                (sys.stdout if fd == 1 else sys.stderr).flush()
            os.dup2(orig, fd)
            os.close(orig)
            tmp.seek(0)
            data = tmp.read()
            tmp.close()
            if data:
                os.write(fd, data)
                chunks.append(data.decode(errors="replace"))
        box["text"] = "".join(chunks)


@dataclass
class _Inputs:
    """A case's tensors on the device: the views the launcher gets and their red zones."""

    views: dict[str, torch.Tensor]
    zones: dict[str, hygiene.RedZone] = field(default_factory=dict)


def copy_inputs(base: dict[str, torch.Tensor], device: Any) -> _Inputs:
    """Each tensor with its exact layout on ``device``, a plain copy of its storage (no red
    zones: those are :func:`place_inputs`'s)."""
    return _Inputs({name: rebuild_like(t, device) for name, t in base.items()})


#: zones in a :class:`Block` start at multiples of this many bytes (see
#: :data:`fuzzkern.execution.hygiene.ZONE_ALIGN`)
BLOCK_ALIGN = hygiene.ZONE_ALIGN


@dataclass
class Block:
    """The red zones of the inputs of one case, or of a batch of value variants, in one
    allocation: placed with one host-to-device copy, copied back with the rest of the red
    zones (:func:`fetch`), and compared with what was placed in one comparison
    (:meth:`unchanged`). ``host`` is every byte as placed (CPU uint8), ``device`` the
    allocation, ``after`` its bytes once fetched."""

    host: torch.Tensor
    device: torch.Tensor
    zones: list[hygiene.RedZone] = field(default_factory=list)
    after: torch.Tensor | None = None

    @staticmethod
    def placed(host: torch.Tensor, device: Any) -> Block:
        """``host``'s bytes copied to ``device`` in one copy (a copy of its own on the CPU)."""
        on_device = host.to(device) if torch.device(device) != host.device else host.clone()
        return Block(host, on_device)

    def zone(self, inputs: _Inputs, name: str, start: int, guard: int, nbytes: int,
             dtype: torch.dtype, spec: hygiene.ViewSpec) -> None:
        """The red zone of tensor ``name`` (``nbytes`` of storage, viewed as ``spec``) at byte
        ``start`` of the block, with its view, into ``inputs``."""
        end = start + 2 * guard + nbytes
        zone = hygiene.RedZone(name, self.device[start:end], guard, nbytes, dtype, spec,
                               self.host[start + guard:start + guard + nbytes],
                               self.host[start:end])
        inputs.views[name] = zone.view()
        inputs.zones[name] = zone
        self.zones.append(zone)

    def unchanged(self) -> bool:
        """Whether every byte fetched back equals the byte placed: no guard, gap or element
        of any input changed."""
        return self.after is not None and hygiene.same_bytes(self.after, self.host)


def _zone_pieces(dtype: torch.dtype, storage: torch.Tensor, guard_bytes: int
                 ) -> list[torch.Tensor]:
    """One red zone's bytes in a block: the guards around ``storage`` (uint8), then padding to
    :data:`BLOCK_ALIGN`."""
    guard = hygiene.guard_pattern(dtype, guard_bytes)
    pad = -(2 * guard_bytes + storage.numel()) % BLOCK_ALIGN
    return [guard, storage, guard, *([_padding(pad)] if pad else [])]


def place_inputs(bases: list[dict[str, torch.Tensor]], device: Any, guard_bytes: int
                 ) -> tuple[Block | None, list[_Inputs]]:
    """Every tensor of every case in ``bases`` with its exact layout on ``device``, inside a
    red zone of ``guard_bytes`` poison bytes on each side (:class:`~fuzzkern.execution.hygiene.
    RedZone`), the zones laid out in one :class:`Block` (each zone at a multiple of
    :data:`BLOCK_ALIGN`) and copied to the device at once. A tensor whose element size does
    not divide ``guard_bytes`` gets a plain copy of its storage."""
    pieces: list[torch.Tensor] = []
    placed: list[tuple[int, str, torch.Tensor, int]] = []
    out = [_Inputs({}) for _ in bases]
    at = 0
    for i, base in enumerate(bases):
        for name, t in base.items():
            if guard_bytes % t.element_size():
                out[i].views[name] = rebuild_like(t, device)
                continue
            zone = _zone_pieces(t.dtype, hygiene.storage_bytes(t), guard_bytes)
            pieces += zone
            placed.append((i, name, t, at))
            at += sum(p.numel() for p in zone)
    if not placed:
        return None, out
    # a copy: never shares memory with the cases' tensors
    block = Block.placed(torch.cat(pieces), device)
    for i, name, t, start in placed:
        block.zone(out[i], name, start, guard_bytes, t.untyped_storage().nbytes(), t.dtype,
                   hygiene.view_spec(t))
    return block, out


def place_variants(case: Any, ks: list[int], device: Any, guard_bytes: int
                   ) -> tuple[Block, list[VariantInputs], list[_Inputs]] | None:
    """:func:`place_inputs` of value variants ``ks`` of ``case``
    (:meth:`fuzzkern.case.model.Case.variant`), without materializing them one by one: the
    variants share their layouts, so the block is one variant's bytes (guards, gap fill,
    padding; made once per layout) repeated, each tensor's values written into every
    variant's storage at once from the blocks they are drawn in
    (:func:`fuzzkern.case.model.variant_values`). Also returns each variant's inputs on the
    CPU (exact layouts, each over a storage of its own, made when first read:
    :class:`VariantInputs`), what :func:`fuzzkern.case.model.materialize` makes of them, byte
    for byte. None where a tensor's element size does not
    divide ``guard_bytes`` (:func:`place_inputs` copies such a tensor alone)."""
    from fuzzkern.case.model import torch_dtype, variant_values

    tensors = list(case.tensors.items())
    dtypes = [torch_dtype(tc.dtype) for _, tc in tensors]
    if not tensors or any(guard_bytes % d.itemsize for d in dtypes):
        return None
    layout = tuple((d, tc.storage_size) for d, (_, tc) in zip(dtypes, tensors, strict=True))
    template, starts = _variant_template(layout, guard_bytes)
    seg = template.numel()
    n = len(ks)
    host = template.repeat(n)
    positions = {name: i for i, name in enumerate(case.inputs)}
    stacks = []
    for (name, tc), dtype, start in zip(tensors, dtypes, starts, strict=True):
        size = dtype.itemsize
        dense = tuple(1 if st == 0 else d for d, st in zip(tc.shape, tc.strides, strict=True))
        values = variant_values(tc, positions[name], ks, dense)
        typed = host.view(dtype)
        at = (start + guard_bytes) // size
        if tc.numel:  # (an empty tensor with an expanded dim: nothing to write)
            typed.as_strided((n, *dense), (seg // size, *tc.strides),
                             at + tc.storage_offset).copy_(values)
        stacks.append(typed.as_strided((n, tc.storage_size), (seg // size, 1), at))
    with stage("copy"):
        block = Block.placed(host, device)
    bases: list[VariantInputs] = []
    out: list[_Inputs] = []
    rows = {name: (tc, stack) for (name, tc), stack in zip(tensors, stacks, strict=True)}
    for i in range(n):
        placed = _Inputs({})
        for (name, tc), dtype, start in zip(tensors, dtypes, starts, strict=True):
            block.zone(placed, name, i * seg + start, guard_bytes,
                       tc.storage_size * dtype.itemsize, dtype,
                       (tuple(tc.shape), tuple(tc.strides), tc.storage_offset, dtype.itemsize))
        bases.append(VariantInputs(rows, i))
        out.append(placed)
    return block, bases, out


class VariantInputs(Mapping[str, torch.Tensor]):
    """One variant's inputs on the CPU in a batch (:func:`place_variants`): row ``i`` of the
    batch's stacked storages (views of the block's host bytes, never written), each tensor
    made, over a storage of its own with its exact layout, when first read. A batch whose
    references and comparison run on the device reads none of them for a variant that passes
    (:mod:`fuzzkern.execution.references`); the CPU path reads them all, as before."""

    __slots__ = ("_rows", "_i", "_made")

    def __init__(self, rows: Mapping[str, tuple[Any, torch.Tensor]], i: int) -> None:
        self._rows = rows
        self._i = i
        self._made: dict[str, torch.Tensor] = {}

    def __getitem__(self, name: str) -> torch.Tensor:
        made = self._made.get(name)
        if made is None:
            tc, stack = self._rows[name]
            made = stack[self._i].clone().as_strided(tc.shape, tc.strides, tc.storage_offset)
            self._made[name] = made
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


@functools.lru_cache(maxsize=32)
def _variant_template(layout: tuple[tuple[torch.dtype, int], ...], guard_bytes: int
                      ) -> tuple[torch.Tensor, list[int]]:
    """One variant's bytes in a block (:func:`place_variants`): for each tensor (dtype,
    storage elements) its guards around a storage of the gap fill, padded to
    :data:`BLOCK_ALIGN`; and where each tensor's zone starts. Read it, never write it."""
    from fuzzkern.case.model import gap_fill

    pieces: list[torch.Tensor] = []
    starts = []
    at = 0
    for dtype, elements in layout:
        fill = torch.empty(elements, dtype=dtype).fill_(gap_fill(dtype))  # as materialize
        zone = _zone_pieces(dtype, fill.view(torch.uint8), guard_bytes)
        pieces += zone
        starts.append(at)
        at += sum(p.numel() for p in zone)
    return torch.cat(pieces), starts


@functools.lru_cache(maxsize=8)
def _padding(n: int) -> torch.Tensor:
    return torch.zeros(n, dtype=torch.uint8)


#: CPU bytes of red zones copied back from the device, by ``id`` of the zone
Fetched = dict[int, torch.Tensor]


def fetch(zones: list[hygiene.RedZone], block: Block | None = None,
          arena: hygiene.Arena | None = None) -> Fetched:
    """Every zone's whole allocation (guards, storage), and ``block``'s, copied to the CPU in
    one transfer: concatenated on the device, copied once, split on the host. A case's red
    zones (its inputs, its launcher's allocations) and the cases of a batch
    (:func:`fuzzkern.execution.batch.run_variant_batches`) come back together, instead of one
    synchronous copy each. ``zones`` lists the zones outside ``block``: those inside are slices
    of its bytes (``block.after``). With ``arena``, the used part of each of its chunks comes
    back whole (its zones are slices of it), also under the chunk's ``id`` (for
    :meth:`fuzzkern.execution.hygiene.Arena.untouched`)."""
    carved = [chunk for chunk in arena.made if chunk.used] if arena is not None else []
    inside = {id(z) for chunk in carved for z in chunk.zones}
    alone = [z for z in zones if id(z) not in inside]
    parts = (([block.device] if block is not None else [])
             + [chunk.bytes[:chunk.used] for chunk in carved] + [z.alloc for z in alone])
    if not parts:
        return {}
    host = parts[0].cpu() if len(parts) == 1 else torch.cat(parts).cpu()
    out: Fetched = {}
    at = 0
    if block is not None:
        # the block first: its zones' slices keep their alignment
        block.after = host[:block.device.numel()]
        for z in block.zones:
            start = z.alloc.storage_offset() - block.device.storage_offset()
            out[id(z)] = block.after[start:start + z.alloc.numel()]
        at = block.device.numel()
    for chunk in carved:
        # (at a multiple of ZONE_ALIGN: its zones' slices keep their alignment)
        after = host[at:at + chunk.used]
        out[id(chunk)] = after
        for z in chunk.zones:
            start = z.alloc.storage_offset() - chunk.bytes.storage_offset()
            out[id(z)] = after[start:start + z.alloc.numel()]
        at += chunk.used
    for z in alone:
        n = z.alloc.numel()
        # a copy of its own: a storage that starts at 0 can be viewed as any dtype
        out[id(z)] = host[at:at + n].clone() if len(parts) > 1 else host
        at += n
    return out


def _bytes_of(zone: hygiene.RedZone, fetched: Fetched | None) -> torch.Tensor:
    got = fetched.get(id(zone)) if fetched else None
    return got if got is not None else zone.alloc.cpu()


def _to_cpu(outs: tuple[Any, ...] | None, zones: list[hygiene.RedZone] | None = None,
            fetched: Fetched | None = None) -> tuple[Any, ...] | None:
    """The outputs on the CPU with their layouts: a view over the fetched bytes of the red
    zone an output lies in, else a copy of its storage."""
    if outs is None:
        return None
    cpu = []
    for o in outs:
        if not isinstance(o, torch.Tensor):
            cpu.append(o)
            continue
        if not o.numel():  # nothing to copy (its storage may be a whole block)
            cpu.append(torch.empty_strided(tuple(o.shape), o.stride(), dtype=o.dtype))
            continue
        z = hygiene.zone_at(o, zones or ())
        got = fetched.get(id(z)) if z is not None and fetched else None
        size = o.element_size()
        if z is not None and got is not None:
            # element 0 of ``o`` lies ``delta`` bytes into its zone, and as far into ``got``
            delta = got.storage_offset() + o.data_ptr() - z.alloc.data_ptr()
            if got.storage_offset() % size == 0 and got.numel() % size == 0 \
                    and delta % size == 0:
                cpu.append(got.view(o.dtype).as_strided(o.shape, o.stride(), delta // size))
                continue
        cpu.append(rebuild_like(o, "cpu"))
    return tuple(cpu)


#: Triton kernel options a re-run may set over every launch (:func:`compile_options`)
COMPILE_OPTIONS = frozenset({"enable_fp_fusion", "enable_reflect_ftz", "num_warps",
                             "num_stages"})


@contextlib.contextmanager
def compile_options(overrides: Mapping[str, Any] | None,
                    defaults: Mapping[str, Any] | None = None) -> Iterator[None]:
    """While active, every JIT launch in this process compiles with ``overrides`` (Triton's
    kernel options, :data:`COMPILE_OPTIONS`) over what the launch or its autotuner config asks:
    the re-runs that attribute a compiled-only difference (``enable_fp_fusion=False``: no
    fused multiply-add; ``enable_reflect_ftz=False``: libdevice keeps subnormals; another
    ``num_warps``: another reduction order). The options are part of Triton's cache key, so
    each set compiles a binary of its own and never replaces the usual one. ``defaults``
    (a case's drawn options, :attr:`fuzzkern.case.model.Case.compile`) apply only to launches
    that do not set the option themselves (an autotuned kernel's config does)."""
    overrides = dict(overrides or {})
    defaults = dict(defaults or {})
    if not overrides and not defaults:
        yield
        return
    unknown = sorted((set(overrides) | set(defaults)) - COMPILE_OPTIONS)
    if unknown:
        raise ValueError(f"Expected compile options among {sorted(COMPILE_OPTIONS)} but got "
                         f"{unknown}.")
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        kwargs = {**defaults, **kwargs, **overrides}
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        JITFunction.run = original  # type: ignore[method-assign]


def _caused_by(e: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``e`` or an exception it was raised from (a library's launcher may wrap what
    it caught) is a ``kind``."""
    seen: set[int] = set()
    at: BaseException | None = e
    while at is not None and id(at) not in seen and len(seen) < 8:
        if isinstance(at, kind):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


def run_compiled(run: Any) -> ModeResult:
    """Run ``run`` (an :class:`fuzzkern.execution.runner._Run`) compiled on the current GPU."""
    if not torch.cuda.is_available():
        return ModeResult("compiled", "unsupported", error="no CUDA device in this worker")
    device, kw = current_gpu()
    return run_on_device(run, device, **kw)


def current_gpu() -> tuple[torch.device, dict[str, Any]]:
    """The current GPU and the keywords :class:`OnDevice` takes for it (its name, its sync);
    installs the compile counter and timer."""
    counter.install()
    time_compilations()
    device = _device()
    return device, {"name": device_label(device.index or 0),
                    # the current device: synchronize() without an argument skips a device
                    # switch per call
                    "sync": torch.cuda.synchronize}


def run_on_device(run: Any, device: Any, *, name: str | None = None,
                  sync: Callable[[], None] | None = None) -> ModeResult:
    """The compiled-mode protocol on any torch ``device``: inputs in red zones, launch with
    forced configs (and debug), synchronize, hygiene checks, compare, repeats."""
    case = OnDevice(run, device, name=name, sync=sync)
    failure = case.launch()
    if failure is not None:
        return failure
    try:
        with stage("copy"):
            fetched = fetch(case.allocations.zones, case.block)
    except Exception as e:
        return case.failed(e, "launch")
    return case.finish(fetched)


def guard_bytes(options: Any, checks: dict[str, bool]) -> int:
    """Bytes of each guard band of a case's red zones with these options and checks (0: none;
    under compute-sanitizer, memcheck sees exact allocation bounds)."""
    return (hygiene.DEFAULT_GUARD_BYTES if checks["redzone"] and not options.get("sanitize")
            else 0)


class OnDevice:
    """One case's compiled-mode run on ``device``, in two halves: :meth:`launch` (inputs copied
    in red zones, the launch with forced configs and debug, a sync) and :meth:`finish` (red
    zones and inputs checked, outputs on the CPU, repeats, the comparison). Between the two the
    caller copies the red zones back (:func:`fetch`), for one case or for a batch of them."""

    def __init__(self, run: Any, device: Any, *, name: str | None = None,
                 sync: Callable[[], None] | None = None,
                 checks: dict[str, bool] | None = None) -> None:
        from fuzzkern.execution import progress
        from fuzzkern.execution.launching import checks_of

        self.run = run
        self.device = device
        self.sync = sync or (lambda: None)
        options = run.options
        #: the checks on (``checks``: the same run options' and target's, worked out already)
        self.checks = checks if checks is not None else checks_of(options, run.target)
        self.debug = bool(options.get("debug", False))
        self.guard = guard_bytes(options, self.checks)
        self.repeats = max(1, int(options.get("repeat_compiled", 1) or 1))
        self.detail: dict[str, Any] = {"device": name or str(device)}
        if self.guard:
            self.detail["guard_bytes"] = self.guard
        self.before = (counter.compiles, counter.cache_hits, progress.compile_seconds)
        self.captured: dict[str, str] = {"text": ""}
        self.inputs = _Inputs({})
        #: the block its inputs' red zones lie in (shared by the variants of a batch)
        self.block: Block | None = None
        self.allocations = Allocations()
        self.outs: tuple[Any, ...] | None = None
        self.outputs: tuple[Any, ...] | None = None
        #: the red zones' bytes copied back (:func:`fetch`), once the launch is settled
        self.fetched: Fetched | None = None
        self.allocated: set[int] = set()
        self.seconds = 0.0
        self.start = 0.0
        #: the record of poisoned allocations a batch's launches share (:func:`launches`)
        self.shared: Allocations | None = None

    def counts(self) -> None:
        from fuzzkern.execution import progress

        self.detail.update(compiles=counter.compiles - self.before[0],
                           cache_hits=counter.cache_hits - self.before[1])
        spent = progress.compile_seconds - self.before[2]
        if spent:
            self.detail["compile_seconds"] = round(spent, 3)

    def _launch(self, inputs: _Inputs) -> tuple[Any, Allocations]:
        from fuzzkern.calls import call_with
        from fuzzkern.execution.hygiene import poisoned_allocations
        from fuzzkern.introspect import forced_configs

        run = self.run
        shared = self.shared
        if shared is not None:  # poisoned allocations and forced configs are the batch's
            tensors, zones = len(shared.tensors), len(shared.zones)
            if self.debug:
                with captured_output(True, self.captured), debug_knob(True):
                    result = call_with(run.target.launcher, {**run.scalars, **inputs.views})
                    self.sync()
            else:  # (two context managers that do nothing cost more than a launch's Python)
                result = call_with(run.target.launcher, {**run.scalars, **inputs.views})
                self.sync()
            allocations = Allocations()
            allocations.tensors = shared.tensors[tensors:]
            allocations.zones = shared.zones[zones:]
            return result, allocations
        forced = (None if run.options.get("unforced") or run.target.autotune == "benchmark"
                  else dict(run.case.configs))
        with captured_output(self.debug, self.captured), debug_knob(self.debug), \
                poisoned_allocations(self.checks["poison"], guard_bytes=self.guard) \
                as allocations, forced_configs(forced, (self.detail,)), \
                compile_options(run.options.get("compile"), run.case.compile):
            result = call_with(run.target.launcher, {**run.scalars, **inputs.views})
            self.sync()
        return result, allocations

    def _outputs_of(self, result: Any, inputs: _Inputs) -> tuple[Any, ...] | None:
        from fuzzkern.execution.launching import as_outputs

        if self.run.target.inplace_names:
            return tuple(inputs.views[n] for n in self.run.target.inplace_names)
        return as_outputs(result)

    def failed(self, e: BaseException, stage: str, text: str | None = None) -> ModeResult:
        """The mode's result for an exception raised at ``stage``."""
        from triton.compiler.errors import CompilationError

        from fuzzkern.errors import ConfigDoesNotFit
        from fuzzkern.execution.launching import (
            exception_text,
            is_precondition,
            overflow_of,
            short_traceback,
            unwrap,
        )

        seconds = time.perf_counter() - self.start if self.start else 0.0
        text = self.captured["text"] if text is None else text
        self.counts()
        inner = unwrap(e)
        info = {**self.detail, "traceback": short_traceback(e)}
        if stage != "launch":
            info["stage"] = stage
        if is_device_fault(e):
            info["poisoned"] = True
            overflow = overflow_of(text) if self.debug else None
            if overflow is not None:
                line = next((ln for ln in text.splitlines() if "overflow detected" in ln), "")
                where = re.search(r"([^\s:]+\.py):(\d+)", line)
                if where:
                    overflow["location"] = f"{os.path.basename(where[1])}:{where[2]}"
                info["overflow"] = overflow
                return ModeResult("compiled", "overflow",
                                  error=f"{overflow['dtype']} overflow in "
                                  f"{overflow['operation']} (debug mode's overflow check; "
                                  "device-side assert)", detail=info, seconds=seconds)
            asserted = [ln.strip() for ln in text.splitlines() if "Assertion" in ln][:3]
            if asserted:
                info["device_output"] = asserted
            return ModeResult("compiled", "crash",
                              error=f"device fault: {type(e).__name__}: {text_of(e)}"
                              + "".join(f"\n{ln}" for ln in asserted),
                              detail=info, seconds=seconds)
        status = "precondition" if is_precondition(self.run.target, inner) else "error"
        if isinstance(inner, CompilationError):  # the compiler refused the kernel
            status = "compile-error"
        elif _caused_by(inner, ConfigDoesNotFit):  # its autotuner never runs that config here
            status = "unsupported"
        return ModeResult("compiled", status, error=exception_text(inner),
                          detail=info, seconds=seconds)

    def launch(self, placed: tuple[Block | None, _Inputs] | None = None) -> ModeResult | None:
        """Copy the inputs in (unless ``placed`` already, by :func:`place_inputs`), launch,
        synchronize: None, or the result of a failure."""
        try:
            with stage("copy"):
                if placed is not None:
                    self.block, self.inputs = placed
                elif self.guard:
                    self.block, (self.inputs,) = place_inputs([self.run.base], self.device,
                                                              self.guard)
                else:
                    self.inputs = copy_inputs(self.run.base, self.device)
        except Exception as e:
            poisoned = is_device_fault(e)
            return ModeResult("compiled", "crash" if poisoned else "error",
                              error=f"{type(e).__name__}: {text_of(e)}",
                              detail={**self.detail, "poisoned": poisoned,
                                      "stage": "copy to device"})
        self.start = time.perf_counter()
        try:
            with stage("launch"):
                result, self.allocations = self._launch(self.inputs)
            self.seconds = time.perf_counter() - self.start
            self.outs = self._outputs_of(result, self.inputs)
            self.allocated = self.allocations.indices_of(self.outs)
        except Exception as e:
            return self.failed(e, "launch")
        self.counts()  # now, before the next case of a batch compiles anything
        return None

    def zones(self) -> list[hygiene.RedZone]:
        """Every red zone of the case: its inputs' and its launcher's allocations'."""
        return [*self.inputs.zones.values(), *self.allocations.zones]

    def settle(self, fetched: Fetched | None, inputs_unchanged: bool | None = None,
               outputs: bool = True, verified: set[int] | None = None) -> ModeResult | None:
        """Check the red zones and inputs (from ``fetched``, the zones' bytes on the CPU, where
        given) and put the outputs on the CPU (``outputs=False``: only when :meth:`judge`
        needs them; a batch's comparison reads them on the device): None, or the result of a
        failure. ``inputs_unchanged``: whether the block of the inputs came back as placed (by
        default asked of the case's block; a batch asks its shared block once). ``verified``:
        the ``id`` of allocations' red zones whose guards are known intact (a batch's arena,
        :meth:`fuzzkern.execution.hygiene.Arena.untouched`)."""
        if inputs_unchanged is None:
            inputs_unchanged = self.block is not None and self.block.unchanged()
        self.fetched = fetched
        try:
            with stage("checks"):
                _record_hygiene(self.run, self.inputs, self.allocations, self.outs,
                                self.checks, self.detail, fetched, inputs_unchanged, verified)
            if outputs:
                self.host_outputs()
        except Exception as e:
            return self.failed(e, "launch")
        return None

    def host_outputs(self) -> tuple[Any, ...]:
        """The outputs on the CPU (views of the fetched bytes where they lie in a red zone),
        made once, when first asked for."""
        if self.outputs is None and self.outs is not None:
            with stage("copy"):
                self.outputs = _to_cpu(self.outs, self.zones(), self.fetched)
        return self.outputs or ()

    def findings(self) -> bool:
        """Whether the checks found anything (a write outside a view, a mutated input)."""
        return bool(self.detail.get("oob_write") or self.detail.get("mutated"))

    def finish(self, fetched: Fetched | None) -> ModeResult:
        """:meth:`settle`, the repeats, the comparison."""
        failure = self.settle(fetched)
        if failure is not None:
            return failure
        if self.repeats > 1 and self.outputs is not None:
            failure = self._repeat()
            if failure is not None:
                return failure
        return self.judge()

    def judge(self) -> ModeResult:
        """The comparison with the reference and the mode's result."""
        try:
            self.host_outputs()
        except Exception as e:
            return self.failed(e, "launch")
        if self.repeats > 1:
            self.counts()  # with what the repeats compiled
        return self.run._compare("compiled", self.outputs, self.detail, self.seconds,
                                 self.allocations if self.checks["poison"] else None,
                                 self.allocated)

    def _repeat(self) -> ModeResult | None:
        """Nondeterminism, proven (docs/verdicts.md): launches of the identical binary with
        the identical config on identical inputs that give different bits. A repeat that
        compiled something is another binary, and the first launch may have compiled or
        autotuned (benchmark runs on the same outputs): where two launches that compiled
        nothing exist, they are compared with each other, not with the first."""
        outputs = self.outputs or ()
        steady: list[tuple[int, tuple[Any, ...]]] = []
        for i in range(1, self.repeats):
            compiles = counter.compiles
            try:
                again = copy_inputs(self.run.base, self.device)
                result, _ = self._launch(again)
                other = _to_cpu(self._outputs_of(result, again))
            except Exception as e:
                return self.failed(e, f"repeat {i + 1} of {self.repeats}")
            if counter.compiles == compiles:
                steady.append((i + 1, other or ()))
        self.detail["repeats"] = self.repeats
        if len(steady) >= 2:
            (first_run, base), rest = steady[0], steady[1:]
        else:
            (first_run, base), rest = (1, outputs), steady
        worst: dict[str, Any] | None = None
        for run_no, other in rest:
            diff = hygiene.spread(base, other)
            if diff is not None and (worst is None or diff["count"] > worst["count"]):
                worst = {**diff, "run": run_no, "against": first_run, "runs": self.repeats}
        if worst is not None:
            self.detail["nondeterministic"] = worst
        elif first_run != 1 and hygiene.spread(outputs, base) is not None:
            self.detail["first_launch_differs"] = (
                "the first launch (which compiled or autotuned) differs from later launches "
                "of the same binary, which agree bit for bit: not nondeterminism")
        return None


@contextlib.contextmanager
def launches(ones: list[OnDevice]) -> Iterator[Allocations]:
    """The launches of a batch of value variants (the same case's configs and checks) inside
    one scope of poisoned allocations and forced configs, entered once instead of once per
    variant: each variant's allocations are the ones its launch added to the shared record,
    their red zones carved from one poisoned :class:`~fuzzkern.execution.hygiene.Arena`.
    For variants whose inputs are placed already (:func:`place_inputs`): nothing else may
    allocate with ``torch.empty*`` inside it. Yields the shared record (its ``arena``)."""
    from fuzzkern.execution.hygiene import poisoned_allocations
    from fuzzkern.introspect import forced_configs

    first = ones[0]
    with poisoned_allocations(first.checks["poison"], guard_bytes=first.guard,
                              arena=True) as record, \
            forced_configs(None if first.run.target.autotune == "benchmark"
                           else dict(first.run.case.configs), [one.detail for one in ones]), \
            compile_options(first.run.options.get("compile"), first.run.case.compile):
        for one in ones:
            one.shared = record
        try:
            yield record
        finally:
            for one in ones:
                one.shared = None


def _record_hygiene(run: Any, inputs: _Inputs, allocations: Allocations,
                    outs: tuple[Any, ...] | None, checks: dict[str, bool],
                    detail: dict[str, Any], fetched: Fetched | None = None,
                    inputs_unchanged: bool = False, verified: set[int] | None = None) -> None:
    """Guards of every red zone, and gaps and elements of every input (into ``detail``);
    ``fetched`` holds zones' bytes already on the CPU (the rest is copied here);
    ``inputs_unchanged``: the inputs' red zones all came back as placed (nothing to check for
    the inputs that lie in one); ``verified``: allocations' zones whose guards are known
    intact (not checked again)."""
    findings: list[dict[str, Any]] = []
    storages = {}
    for name in run.base:
        zone = inputs.zones.get(name)
        if zone is not None and inputs_unchanged:
            continue
        t = run.base[name]  # (a batch's variant makes its CPU inputs only when read)
        after = _bytes_of(zone, fetched) if zone is not None else None
        if zone is not None and after is not None and zone.unchanged(after):
            continue  # guards, gaps and elements as they were: nothing to find
        if zone is not None and after is not None:
            findings += hygiene.check_guards(zone, after)
        if checks["mutation"]:
            before = hygiene.storage_bytes(t)
            if zone is not None and after is not None:
                now = after[zone.guard:zone.guard + zone.nbytes]
            else:
                now = hygiene.storage_bytes(inputs.views[name]).cpu()
            storages[name] = (t, before, now)
    verified = verified or set()
    if not all(id(zone) in verified for zone in allocations.zones):
        labels = {}
        for i, o in enumerate(outs or ()):
            z = allocations.zone_of(o)
            if z is not None:
                labels[id(z)] = f"output {i}" if len(outs or ()) > 1 else "the output"
        for k, zone in enumerate(allocations.zones):
            if id(zone) in verified:
                continue
            zone.name = labels.get(id(zone), f"torch.empty allocation {k} of the launcher")
            findings += hygiene.check_guards(zone, _bytes_of(zone, fetched))
    if findings:
        detail.setdefault("oob_write", []).extend(findings)
    if storages:
        run.storage_checks(storages, detail)
