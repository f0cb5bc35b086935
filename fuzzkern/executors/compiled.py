"""Compiled mode: the case's CPU-built tensors copied to the GPU with their exact layouts,
launched through the user's launcher, synchronized and copied back.

A device-side fault (illegal address, misaligned address, device assert) leaves the CUDA context
unusable: the mode result says ``poisoned`` and the worker pool replaces the worker before the
next case. fp32 ``tl.dot`` defaults to tf32 on the GPU while the interpreter and the reference
compute in full fp32; the worker sets ``TRITON_F32_DEFAULT=ieee`` (unless the user set it), so a
kernel that leaves ``input_precision`` unset is compared at fp32 precision. A kernel that asks
for tf32 explicitly needs a looser :class:`~fuzzkern.Tolerance`.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from fuzzkern.case import rebuild_like
from fuzzkern.outcome import ModeResult

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


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


def is_device_fault(e: BaseException) -> bool:
    name = type(e).__name__
    text = str(e)
    return name == "AcceleratorError" or any(s in text for s in _DEVICE_FAULTS)


def run_compiled(run: Any) -> ModeResult:
    """Run ``run`` (an :class:`fuzzkern.executors.run._Run`) compiled on the current GPU."""
    from fuzzkern.executors.kernels import forced_configs
    from fuzzkern.executors.poison import poisoned_allocations
    from fuzzkern.executors.run import _as_outputs, _is_precondition, _short_tb, _unwrap
    from fuzzkern.target import call_with

    if not torch.cuda.is_available():
        return ModeResult("compiled", "unsupported", error="no CUDA device in this worker")
    counter.install()
    device = _device()
    detail: dict[str, Any] = {"device": torch.cuda.get_device_name(device)}
    before = (counter.compiles, counter.cache_hits)
    try:
        tensors = {name: rebuild_like(t, device) for name, t in run.base.items()}
        torch.cuda.synchronize(device)
    except Exception as e:
        poisoned = is_device_fault(e)
        return ModeResult("compiled", "crash" if poisoned else "error",
                          error=f"{type(e).__name__}: {e}",
                          detail={**detail, "poisoned": poisoned, "stage": "copy to device"})
    start = time.perf_counter()
    try:
        with poisoned_allocations() as allocations, forced_configs(dict(run.case.configs)):
            result = call_with(run.target.launcher, {**run.scalars, **tensors})
        torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        if run.target.inplace_names:
            outs = tuple(tensors[n] for n in run.target.inplace_names)
        else:
            outs = _as_outputs(result)
        outputs = None if outs is None else tuple(
            rebuild_like(o, "cpu") if isinstance(o, torch.Tensor) else o for o in outs
        )
    except Exception as e:
        seconds = time.perf_counter() - start
        inner = _unwrap(e)
        detail.update(compiles=counter.compiles - before[0],
                      cache_hits=counter.cache_hits - before[1])
        if is_device_fault(e):
            detail["poisoned"] = True
            return ModeResult("compiled", "crash", error=f"device fault: {type(e).__name__}: {e}",
                              detail={**detail, "traceback": _short_tb(e)}, seconds=seconds)
        status = "precondition" if _is_precondition(run.target, inner) else "error"
        return ModeResult("compiled", status, error=f"{type(inner).__name__}: {inner}",
                          detail={**detail, "traceback": _short_tb(e)}, seconds=seconds)
    detail.update(compiles=counter.compiles - before[0], cache_hits=counter.cache_hits - before[1])
    return run._compare("compiled", outputs, detail, seconds, {}, allocations)
