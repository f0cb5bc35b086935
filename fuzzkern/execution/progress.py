"""What a case tells the parent while it runs, from inside the worker: when a Triton
compilation starts and ends (:func:`compile_phase`), how an interpreted launch progresses
(:class:`LaunchMeter`). The parent's :class:`fuzzkern.execution.pool.CaseClock` turns these
events into ``slow`` or ``hang``; outside a worker they go nowhere.

:func:`compile_phase` is public as ``fuzzkern.compile_phase``: a launcher that compiles by
other means than Triton's JIT (ahead of time, its own cache) marks that work with it, so the
compile time does not count against the case's timeout.
"""

from __future__ import annotations

import threading
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
#: serializes the channel (the launch reporter thread sends too) and guards :data:`_live`
_lock = threading.RLock()
#: the interpreted launch running now, while a channel is set (see :class:`LaunchMeter`)
_live: LaunchMeter | None = None
_reporter: threading.Thread | None = None


def notify(*event: Any) -> None:
    """Tell the parent waiting for this case something about it (see
    :class:`fuzzkern.execution.pool.CaseClock`):
    ``("compile", True|False)``, ``("progress", done, total, seconds, slowest, age, cpu,
    cpu_at)``, ``("launch", False)``. Does nothing outside a worker."""
    if _channel is not None:
        with _lock:
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
    ``tick`` as each program starts, ``end``) and reports progress to the parent: at most
    every :data:`PROGRESS_EVERY` seconds, and within :data:`PROGRESS_EVERY` of the first
    program's end.

    A launch that ends sooner sends nothing: most cases' launches take milliseconds, and a
    message per launch (and the parent's wake-up for it) cost about a tenth of such a launch
    on a busy two-core machine. Reports that are due while a program runs (the first one,
    when a later program is stuck) come from a reporter thread of the worker, with the
    ``age`` of the state they report (seconds since the current program started), so the
    parent dates them as if sent then. ``seconds`` is what the finished programs took, from
    the first one's start (the launch's set-up before it is the case's, not its programs':
    counted in, it made a program's average exceed the slowest program).

    Each report also gives the worker's CPU time (``time.process_time()``, all its threads):
    ``cpu``, what the finished programs took of it, and ``cpu_at``, its value when the current
    program started. On a loaded machine the clock runs faster than the worker's CPU time; the
    parent measures a case's own cost in the latter (:class:`fuzzkern.execution.pool.CaseClock`),
    so that the machine's load does not make a case ``slow``."""

    def __init__(self) -> None:
        self.total = 0
        self.started = 0
        self.t0 = self.prev = self.sent = 0.0
        #: when the first program started, by the clock and the worker's CPU time
        self.first = self.cpu_first = 0.0
        self.cpu_prev = 0.0
        self.slowest = 0.0
        #: programs finished at the last report of this launch (-1: none sent)
        self.reported = -1

    def begin(self, total: int) -> None:
        global _live
        now, cpu = time.monotonic(), time.process_time()
        with _lock:
            self.total = max(0, int(total))
            self.started = 0
            self.t0 = self.prev = self.sent = now
            self.first = self.prev
            self.cpu_first = self.cpu_prev = cpu
            self.slowest = 0.0
            self.reported = -1
            if _channel is not None:
                _live = self
                _start_reporter()

    def tick(self) -> None:
        now, cpu = time.monotonic(), time.process_time()
        with _lock:
            if self.started:
                self.slowest = max(self.slowest, now - self.prev)
            else:
                self.first, self.cpu_first = now, cpu
            self.prev, self.cpu_prev = now, cpu
            self.started += 1
            if self.started >= 2 and now - self.sent >= PROGRESS_EVERY:
                self._report(now)

    def _report(self, now: float) -> None:
        """Send the state as of the latest program start (call with :data:`_lock` held)."""
        done = self.started - 1
        self.sent = now
        self.reported = done
        notify("progress", done, self.total, self.prev - self.first, self.slowest,
               now - self.prev, self.cpu_prev - self.cpu_first, self.cpu_prev)

    def due(self) -> bool:
        """Whether a finished program has not been reported yet (with :data:`_lock` held)."""
        return self.started >= 2 and self.reported != self.started - 1

    def end(self) -> None:
        global _live
        with _lock:
            if _live is self:
                _live = None
            if self.reported >= 0:  # the parent holds this launch's progress: clear it
                notify("launch", False)
                self.reported = -1


def quiet() -> None:
    """No launch runs any more (nothing more is reported for it)."""
    global _live
    with _lock:
        _live = None


def _start_reporter() -> None:
    global _reporter
    if _reporter is None:
        _reporter = threading.Thread(target=_report_loop, name="fuzzkern-progress", daemon=True)
        _reporter.start()


def _report_loop() -> None:
    while True:
        time.sleep(PROGRESS_EVERY / 2)
        with _lock:
            meter = _live
            if meter is not None and meter.due():
                meter._report(time.monotonic())
