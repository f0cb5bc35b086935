"""What a case tells the parent while it runs, from inside the worker: when a Triton
compilation starts and ends (:func:`compile_phase`), how an interpreted launch progresses
(:class:`LaunchMeter`). The parent's :class:`fuzzkern.execution.pool.CaseClock` turns these
events into ``slow`` or ``hang``; outside a worker they go nowhere.

:func:`compile_phase` is public as ``fuzzkern.compile_phase``: a launcher that compiles by
other means than Triton's JIT (ahead of time, its own cache) marks that work with it, so the
compile time does not count against the case's timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: seconds between two progress reports of one interpreted launch
PROGRESS_EVERY = 0.25

#: sends one event to the parent while a case runs (set in a worker process; None elsewhere)
_channel: Callable[[Any], None] | None = None
#: seconds spent compiling in this process (compile_phase), for the compiled mode's detail
compile_seconds = 0.0
_compiling = 0


def notify(*event: Any) -> None:
    """Tell the parent waiting for this case something about it (see
    :class:`fuzzkern.execution.pool.CaseClock`):
    ``("compile", True|False)``, ``("progress", done, total, seconds, slowest)``,
    ``("launch", False)``. Does nothing outside a worker."""
    if _channel is not None:
        try:
            _channel(list(event))
        except Exception:  # pragma: no cover - the parent is gone; the case's result will say
            pass


@contextmanager
def compile_phase() -> Iterator[None]:
    """A Triton compilation: time in it does not count against the case's timeout (the
    parent bounds it by the compile limit instead). Re-entrant: only the outermost counts."""
    global _compiling, compile_seconds
    _compiling += 1
    start = time.monotonic()
    if _compiling == 1:
        notify("compile", True)
    try:
        yield
    finally:
        _compiling -= 1
        if _compiling == 0:
            compile_seconds += time.monotonic() - start
            notify("compile", False)


class LaunchMeter:
    """Measures an interpreted launch program by program (``begin`` at the grid's start,
    ``tick`` as each program starts, ``end``) and reports progress to the parent at most every
    :data:`PROGRESS_EVERY` seconds, and as soon as the first program finished."""

    def __init__(self) -> None:
        self.total = 0
        self.started = 0
        self.t0 = self.prev = self.sent = 0.0
        self.slowest = 0.0

    def begin(self, total: int) -> None:
        self.total = max(0, int(total))
        self.started = 0
        self.t0 = self.prev = time.monotonic()
        self.sent = 0.0
        self.slowest = 0.0

    def tick(self) -> None:
        now = time.monotonic()
        if self.started:
            self.slowest = max(self.slowest, now - self.prev)
        self.prev = now
        self.started += 1
        done = self.started - 1
        if done >= 1 and (done == 1 or now - self.sent >= PROGRESS_EVERY):
            self.sent = now
            notify("progress", done, self.total, now - self.t0, self.slowest)

    def end(self) -> None:
        notify("launch", False)
