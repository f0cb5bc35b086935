"""Which GPUs this machine has, and which one a parallel worker uses — without importing torch.

Under ``pytest -n N`` (pytest-xdist) every worker process runs its own fuzzkern worker pool.
With several GPUs, each xdist worker is pinned to one device by setting
``CUDA_VISIBLE_DEVICES`` in the environment of its kernel-running processes: worker ``gwK``
gets device ``K mod (number of devices)``, so the load spreads evenly and two workers share a
GPU only when there are more workers than GPUs.

The device list comes from, in order: ``CUDA_VISIBLE_DEVICES`` when it is set (the devices
this process may use, by index or UUID); ``FUZZKERN_GPUS=N`` (devices ``0..N-1``, for machines
where ``nvidia-smi`` is missing or slow); ``nvidia-smi -L``. Nothing here imports torch: the
pytest plugin calls it while the session starts.

>>> pinned_device("gw3", ["0", "1"])
'1'
>>> pinned_device(None, ["0", "1"]) is None
True
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence

_WORKER_ID = re.compile(r"gw(\d+)$")


def pinned_device(worker_id: str | None, devices: Sequence[str]) -> str | None:
    """The device an xdist worker uses: ``devices[K % len(devices)]`` for worker ``gwK``.

    ``None`` (leave ``CUDA_VISIBLE_DEVICES`` alone) outside xdist workers (``worker_id`` is
    ``None`` or ``"master"``) and when there are no devices.
    """
    if not worker_id or not devices:
        return None
    m = _WORKER_ID.match(worker_id.strip())
    if m is None:
        return None
    return devices[int(m.group(1)) % len(devices)]


def _nvidia_smi_lines() -> list[str]:
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    return proc.stdout.splitlines()


def visible_devices(env: Mapping[str, str] | None = None,
                    list_gpus: Callable[[], list[str]] = _nvidia_smi_lines) -> list[str]:
    """The devices this process may use, as ``CUDA_VISIBLE_DEVICES`` entries.

    ``list_gpus`` returns ``nvidia-smi -L``-style lines (``"GPU 0: ..."``); tests pass a fake.
    """
    env = os.environ if env is None else env
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        # CUDA stops at the first invalid entry ("-1" is the usual way to hide every GPU).
        out = []
        for d in (p.strip() for p in cvd.split(",")):
            if not d or d.startswith("-"):
                break
            out.append(d)
        return out
    forced = env.get("FUZZKERN_GPUS")
    if forced is not None and forced.strip():
        try:
            n = int(forced)
        except ValueError:
            n = -1
        if n < 0:
            from fuzzkern.errors import FuzzkernError

            raise FuzzkernError(
                f"Expected a non-negative number of GPUs but got FUZZKERN_GPUS={forced!r}. "
                "Set it to the number of GPUs, or unset it to ask nvidia-smi."
            )
        return [str(i) for i in range(n)]
    return [str(i) for i, ln in enumerate(ln for ln in list_gpus() if ln.startswith("GPU "))]


@functools.cache
def _cached_nvidia_smi() -> tuple[str, ...]:
    return tuple(_nvidia_smi_lines())


def machine_devices() -> list[str]:
    """:func:`visible_devices` of this process's environment, ``nvidia-smi`` asked once."""
    return visible_devices(os.environ, lambda: list(_cached_nvidia_smi()))


def worker_env(worker_id: str | None = None,
               devices: Sequence[str] | None = None) -> dict[str, str]:
    """Environment additions for the kernel-running processes of an xdist worker: its
    ``CUDA_VISIBLE_DEVICES``, or nothing outside xdist or without GPUs."""
    if worker_id is None:
        worker_id = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker_id:
        return {}
    dev = pinned_device(worker_id, machine_devices() if devices is None else devices)
    return {} if dev is None else {"CUDA_VISIBLE_DEVICES": dev}
