"""A declared GPU for CPU-only runs: what ``torch.cuda`` answers host code while tensors stay
on the CPU and kernels run in Triton's interpreter (``fuzzkern run --assume-gpu H200``,
``--fuzzkern-assume-gpu``, ``Target(assume_gpu=...)``; docs/interpreter.md, "A declared GPU").

Libraries written for a GPU ask ``torch.cuda`` about it on the host before they launch: they
enter ``torch.cuda.device(x.device)``, read the SM count from ``get_device_properties``, pick a
code path by ``get_device_capability``, size caches by ``device_count()``, synchronize streams.
On a machine without CUDA each of those raises, so the kernel never runs. While a GPU is
assumed (:func:`assumed_gpu`) those queries answer as that GPU would (:data:`GPUS`: the figures
of its data sheet), device contexts, streams, events and ``synchronize`` do nothing, and
nothing else changes: ``torch.cuda.is_available()`` stays False and tensors stay on the CPU,
so nothing is ever allocated on a device that is not there. It is a description of a GPU, not
an emulation of one: timing, memory and the compiler's limits are not modelled.
Where a CUDA GPU is present the real one answers; only ``torch.cuda.device`` of a CPU device
becomes a no-op, for the CPU tensors of interpreted launches (the float64 shadow).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

from fuzzkern.errors import InvalidArgument, describe

__all__ = ["GPUS", "DeviceProperties", "assumed_gpu", "check_gpu_name", "current_assumption"]


@dataclasses.dataclass(frozen=True)
class DeviceProperties:
    """What ``torch.cuda.get_device_properties`` gives for a GPU (the fields libraries read)."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    L2_cache_size: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    max_threads_per_multi_processor: int = 2048
    max_threads_per_block: int = 1024
    regs_per_multiprocessor: int = 65536
    warp_size: int = 32
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    gcnArchName: str = "NVIDIA CUDA"  # noqa: N815 - torch's own field name
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    pci_bus_id: int = 0
    pci_device_id: int = 0
    pci_domain_id: int = 0

    @property
    def capability(self) -> tuple[int, int]:
        return (self.major, self.minor)


_GIB = 1 << 30
_MIB = 1 << 20

#: the GPUs fuzzkern can assume, by the short names ``--assume-gpu`` takes (figures from
#: NVIDIA's data sheets; total memory as the driver reports it, a little under the nominal;
#: the H200's L2 as its driver reports it, 60 MiB, checked on one on 2026-12-03)
GPUS: dict[str, DeviceProperties] = {
    "H200": DeviceProperties("NVIDIA H200", 9, 0, 140 * _GIB, 132, 60 * _MIB,
                             48 * 1024, 227 * 1024, 228 * 1024),
    "H100": DeviceProperties("NVIDIA H100 80GB HBM3", 9, 0, 79 * _GIB, 132, 50 * _MIB,
                             48 * 1024, 227 * 1024, 228 * 1024),
    "A100": DeviceProperties("NVIDIA A100-SXM4-80GB", 8, 0, 79 * _GIB, 108, 40 * _MIB,
                             48 * 1024, 163 * 1024, 164 * 1024),
}


def check_gpu_name(name: Any, what: str = "assume_gpu") -> str:
    """``name`` as a key of :data:`GPUS` (case-insensitive), or :class:`InvalidArgument`."""
    if isinstance(name, str):
        for key in GPUS:
            if key.lower() == name.strip().lower():
                return key
    raise InvalidArgument(
        f"Expected {what} to name a GPU fuzzkern can assume ({', '.join(GPUS)}) but got "
        f"{describe(what, name)}.")


class _Stream:
    """A stream that runs nothing asynchronously: everything is already done."""

    cuda_stream = 0
    device_index = 0
    priority = 0

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> _Event:
        return event if isinstance(event, _Event) else _Event()

    def query(self) -> bool:
        return True

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class _Event:
    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        pass

    def record(self, stream: Any = None) -> None:
        return None

    def wait(self, stream: Any = None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: Any) -> float:
        return 0.0


class _DeviceContext:
    """``torch.cuda.device(d)`` / ``device_of(t)``: the one assumed device is always current."""

    def __init__(self, device: Any = None) -> None:
        self.idx = 0

    def __enter__(self) -> _DeviceContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _answers(props: DeviceProperties) -> dict[str, Any]:
    """The ``torch.cuda`` attributes an assumed GPU replaces, and what they answer."""

    def get_device_properties(device: Any = None) -> DeviceProperties:
        return props

    def get_device_capability(device: Any = None) -> tuple[int, int]:
        return props.capability

    def get_device_name(device: Any = None) -> str:
        return props.name

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        return (props.total_memory, props.total_memory)

    def stream(s: Any = None) -> Any:
        return s if s is not None else contextlib.nullcontext()

    def nothing(*args: Any, **kwargs: Any) -> None:
        return None

    default = _Stream()
    return {
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": nothing,
        "synchronize": nothing,
        "empty_cache": nothing,
        "device": _DeviceContext,
        "device_of": _DeviceContext,
        "_DeviceGuard": _DeviceContext,
        "get_device_properties": get_device_properties,
        "get_device_capability": get_device_capability,
        "get_device_name": get_device_name,
        "get_arch_list": lambda: [f"sm_{props.major}{props.minor}"],
        "mem_get_info": mem_get_info,
        "current_stream": lambda device=None: default,
        "default_stream": lambda device=None: default,
        "set_stream": nothing,
        "stream": stream,
        "Stream": _Stream,
        "Event": _Event,
    }


_LOCK = threading.RLock()
_ACTIVE: list[str] = []
_MISSING = object()


def current_assumption() -> str | None:
    """The GPU assumed now (a key of :data:`GPUS`), or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def _cuda_present() -> bool:
    import torch

    return bool(torch.cuda.is_available()) and not _ACTIVE


def _cpu_tolerant(real: Any) -> dict[str, Any]:
    """Where a GPU is present: ``torch.cuda.device`` of a CPU device does nothing (as
    ``device_of`` of a CPU tensor already does), so host code that enters the device of its
    tensors runs on the CPU tensors of an interpreted launch (the float64 shadow,
    ``--modes interpret`` on a GPU machine)."""

    class device(real):  # type: ignore[misc, valid-type]
        def __init__(self, device: Any) -> None:
            kind = getattr(device, "type", device)
            super().__init__(-1 if isinstance(kind, str) and kind.split(":")[0] == "cpu"
                             else device)

    return {"device": device}


@contextlib.contextmanager
def assumed_gpu(name: str | None) -> Iterator[str | None]:
    """While active, ``torch.cuda``'s host queries answer as GPU ``name`` would (a key of
    :data:`GPUS`). Does nothing for ``name=None``; where a CUDA GPU is present the real GPU
    answers, and only ``torch.cuda.device`` of a CPU device becomes a no-op. Yields the
    name assumed, or None. Re-entrant: an inner block may assume another GPU."""
    if name is None:
        yield None
        return
    key = check_gpu_name(name)
    import torch

    cuda = torch.cuda
    with _LOCK:
        present = _cuda_present()
        answers = _cpu_tolerant(cuda.device) if present else _answers(GPUS[key])
        previous = {attr: vars(cuda).get(attr, _MISSING) for attr in answers}
        for attr, value in answers.items():
            setattr(cuda, attr, value)
        if not present:
            _ACTIVE.append(key)
    try:
        yield None if present else key
    finally:
        with _LOCK:
            if not present:
                _ACTIVE.pop()
            for attr, value in previous.items():
                if value is _MISSING:
                    delattr(cuda, attr)
                else:
                    setattr(cuda, attr, value)
