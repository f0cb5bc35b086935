"""Where a worker's time goes, stage by stage, for each round trip.

A worker times every case it runs by stage: ``decode`` (the case's JSON), ``materialize`` (its
input tensors), ``prepare`` (the interpreter's own copies, the inputs' bytes kept for the
mutation check), ``install`` (fuzzkern's interpreter patches put in and taken out), ``launch``
(the launcher under the interpreter, bounds and view checks included), ``checks`` (storages
compared after the launch), ``reference`` (the float64 reference), ``compare`` (the oracle),
``compiled`` (the rest of the compiled mode; its ``copy`` to and from the GPU, ``launch`` with
its synchronization and ``checks`` of red zones and inputs count as those stages), ``encode``
(the outcome's JSON), ``capture`` (the output capture around the case) and ``other`` (the
rest). The parent adds ``ipc``: its round
trip less the worker's time (pickling, the pipe, waking up, reading the outcome back).

Times are exclusive (a stage entered inside another pauses it) and cost two
``time.perf_counter()`` calls per stage. They travel with the outcome
(:attr:`fuzzkern.judge.outcome.Outcome.timings`), never into a corpus entry;
``bench/throughput.py`` sums them per target.

>>> timer = begin()
>>> with stage("reference"):
...     pass
>>> sorted(finish(timer))
['other', 'reference']
"""

from __future__ import annotations

import time
from typing import Any

_clock = time.perf_counter


class Timer:
    """Seconds per stage of one round trip; ``name`` is the stage running now."""

    __slots__ = ("name", "seconds", "since")

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.name = "other"
        self.since = _clock()

    def switch(self, name: str) -> str:
        """Charge the time since the last switch to the current stage, make ``name`` current
        and return the stage it replaced."""
        now = _clock()
        self.seconds[self.name] = self.seconds.get(self.name, 0.0) + (now - self.since)
        previous, self.name, self.since = self.name, name, now
        return previous


#: the timer of the round trip running in this process (None: nothing is timed)
_current: Timer | None = None


class stage:  # noqa: N801 - used like a function: ``with stage("launch"):``
    """The block's time goes to stage ``name`` (minus the stages entered inside it)."""

    __slots__ = ("name", "previous", "timer")

    def __init__(self, name: str) -> None:
        self.name = name
        self.timer = _current
        self.previous = ""

    def __enter__(self) -> None:
        if self.timer is not None:
            self.previous = self.timer.switch(self.name)

    def __exit__(self, *exc: Any) -> None:
        if self.timer is not None:
            self.timer.switch(self.previous)


def begin() -> Timer:
    """Start timing a round trip in this process (replacing any timer running)."""
    global _current
    _current = Timer()
    return _current


def finish(timer: Timer) -> dict[str, float]:
    """Stop ``timer``: its seconds per stage, rounded to microseconds."""
    global _current
    timer.switch(timer.name)
    if _current is timer:
        _current = None
    return {k: round(v, 6) for k, v in timer.seconds.items()}
