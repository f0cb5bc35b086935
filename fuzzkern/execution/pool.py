"""Worker processes: where kernels run, so that nothing a kernel does can take the fuzzer down.

Why: docs/architecture.md, execution. The parent (Hypothesis) process never runs a kernel. It sends
a case to a worker and waits for an :class:`~fuzzkern.judge.outcome.Outcome`. A worker that dies (a
signal, an abort) or runs past the case's timeout is killed and replaced, and the case gets a
``crash`` or ``hang`` outcome that shrinks like any other failure.

Workers are forked from a pre-imported server (``multiprocessing``'s forkserver with torch,
triton and fuzzkern's executors preloaded), so replacing one costs milliseconds, not an
``import torch``. The server itself never runs torch code, so forking it is safe.

**The case's clock** (:class:`CaseClock`). While a case runs, the worker tells the parent what
it is doing (:func:`fuzzkern.execution.progress.notify`): when a Triton compilation starts and ends
(compiled mode), and how an interpreted launch progresses (programs finished, of how many, in how
many seconds). The timeout covers the case's own work, not compilation: compiling is bounded by a
separate, larger compile limit, and a case stopped there is ``slow``, not ``hang``. An interpreted
launch whose programs keep finishing but would take past twice the timeout is stopped as soon as
that is known (``slow``: its own cost explains it; nothing was tested); at the timeout, a launch
whose current program runs far longer than any program before it is stuck (``hang``), one still
finishing programs is ``slow``. A case that reports nothing is a ``hang`` at the timeout.

**The stop time.** ``WorkerPool.stop_at`` (a ``time.monotonic()`` instant, e.g. the end of
``--budget``) is a hard stop: a case still running then is cut short, its worker killed, and
:class:`StopTime` raised to the caller, which keeps what it found.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from fuzzkern.errors import text_of
from fuzzkern.execution import ahead, progress, stages
from fuzzkern.execution.progress import PROGRESS_EVERY
from fuzzkern.judge.outcome import ModeResult, Outcome, Verdict

_PRELOAD = ["fuzzkern.execution._preload"]

#: seconds all the compilations of one case may take (compiled mode) before the case is
#: stopped as ``slow``; compilation does not count against the case's timeout
COMPILE_TIMEOUT = 300.0
#: an interpreted launch whose measured programs project past this many times the timeout is
#: stopped as ``slow`` at once, without waiting for the timeout
SLOW_EARLY_FACTOR = 2.0
#: while fuzzing, one interpreted case may cost at most this fraction of its target's share of
#: the budget (and at least :data:`COST_CAP_MIN` seconds): a case projected past that is
#: stopped early as ``slow``, so the budget buys many cheap cases and some expensive ones, not
#: a few that take minutes (``WorkerPool.run(cost_cap=...)``)
COST_CAP_FRACTION = 0.25
COST_CAP_MIN = 5.0
#: a case projected past its cost cap is stopped only when the programs left would take at
#: least this fraction of the cap: stopping one that is nearly done (its earlier launches
#: spent the cap, its last needs 0.08 s more) would lose what it spent and save nothing
COST_CAP_SAVING = 0.25
#: a launch whose finished programs have cost less than this fraction of the cap is a small
#: sample (its first programs carry the launch's warm-up, a loaded core's cache misses): its
#: projection stops the case only past :data:`SLOW_EARLY_FACTOR` times the cap (25 of 6666
#: programs projected a 0.4 s case at 1.01 s against a 1 s cap on a loaded machine)
COST_CAP_SAMPLE = 0.05
#: at the timeout, a launch whose current program has run longer than this many times its
#: slowest finished program (and longer than :data:`STALL_MIN` seconds or a quarter of the
#: timeout, whichever is less) is stuck: ``hang``
STALL_FACTOR = 10.0
STALL_MIN = 2.0


class StopTime(BaseException):
    """The pool's stop time (``WorkerPool.stop_at``) came: the case in flight, if any, was cut
    short and its worker killed. A BaseException: no caller mistakes it for a kernel's error,
    and Hypothesis does not catch it."""


# -- the parent side: the clock of one case ----------------------------------------------------

#: clock ticks per second of ``/proc/<pid>/stat``'s CPU times
_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
#: a launch whose worker had less than this fraction of a core while its programs ran was on a
#: loaded machine: its messages give both its CPU time and the clock's
LOADED_SHARE = 0.8
#: seconds between two checks of a case past its timeout by the clock whose own work is still
#: within it (a loaded machine)
RECHECK = 0.5


class CpuMeter:
    """A process's CPU time (all its threads, user and system: what ``time.process_time()``
    says inside it) and whether its main thread is runnable now (running, or waiting for a
    core: state ``R``), read from ``/proc/<pid>/stat``, which stays open (a read costs about
    10 us). Calling it returns ``(seconds, runnable)``, or None where that cannot be read (not
    Linux, the process gone)."""

    def __init__(self, pid: int | None) -> None:
        self.fd: int | None = None
        if pid is not None:
            with contextlib.suppress(OSError):
                self.fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)

    def __call__(self) -> tuple[float, bool] | None:
        if self.fd is None:
            return None
        try:
            fields = os.pread(self.fd, 1024, 0).rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICKS, fields[0] == b"R"
        except (OSError, IndexError, ValueError):
            return None

    def stopped(self) -> bool:
        """Whether the process is stopped (state ``T``: a SIGSTOP or SIGTSTP sent to it)."""
        if self.fd is None:
            return False
        try:
            return os.pread(self.fd, 1024, 0).rsplit(b")", 1)[1].split()[0] == b"T"
        except (OSError, IndexError):
            return False

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


#: seconds between looks at whether a case's worker died (with its pipe still open: a process
#: its case started holds it) or was stopped from outside (SIGSTOP: it is sent SIGCONT), so
#: its case does not wait, unnoticed, for its timeout or the budget's end
STOPPED_CHECK = 1.0


@dataclass
class CaseClock:
    """The parent's view of one running case: how long it has worked (compilation excluded),
    how long it has compiled, and how its interpreted launch progresses; :meth:`check` says
    when to stop it and with which verdict. Times are ``time.monotonic()`` instants.

    **Work is measured in the worker's CPU time** where it can be read (``cpu``, a
    :class:`CpuMeter` of the worker): on a loaded machine the clock runs faster than a case
    works, and a case is not ``slow`` because other processes took the cores. What a case
    has worked is the less of its clock time and its worker's CPU time since it started
    (compilations excluded from both); an interpreted launch's pace is its finished
    programs' CPU time (the worker reports it, :class:`fuzzkern.execution.progress.LaunchMeter`).
    ``slow`` (projected past twice the timeout or past the cost cap, or past the timeout
    while its programs keep finishing) is decided on that work. The clock still bounds a
    case that waits: at the timeout by the clock, a case that reported no progress is a
    ``hang`` unless its worker is computing (runnable, or its CPU time grew since the last
    look) and its CPU time is within the timeout; then it is a ``hang`` once its CPU time
    passes the timeout, or when it stops computing. A program that stops finishing is a
    ``hang`` by the clock, as before."""

    timeout: float
    compile_timeout: float = COMPILE_TIMEOUT
    start: float = 0.0
    compile_seconds: float = 0.0
    compiles: int = 0
    compiling_since: float | None = None
    #: the current launch's last report: (done, total, seconds, slowest), and when it came
    progress: tuple[int, int, float, float] | None = None
    progress_at: float = 0.0
    #: the value variant running now (:func:`fuzzkern.execution.runner.run_variants`), 0: the
    #: case itself
    variant: int = 0
    #: seconds an interpreted launch may be projected to take before it is stopped as
    #: ``slow`` (too expensive for the budget; :data:`COST_CAP_FRACTION`); None: no cap
    cost_cap: float | None = None
    #: compile seconds and compilations of this clock the pool has counted already
    #: (:meth:`WorkerPool.compile_stats`)
    counted: tuple[float, int] = (0.0, 0)
    #: reads the worker's CPU time (:class:`CpuMeter`); None: the clock alone measures work
    cpu: Callable[[], tuple[float, bool] | None] | None = None
    #: the worker's CPU seconds at the start (None: unknown), spent compiling since, and at
    #: the start of the compilation running now
    cpu0: float | None = None
    compile_cpu: float = 0.0
    compiling_cpu: float | None = None
    #: the current launch's last report in CPU time: (its finished programs' CPU seconds, the
    #: worker's CPU seconds when its current program started); None: not reported
    progress_cpu: tuple[float, float] | None = None
    #: the worker's CPU seconds at the last look past the timeout (:meth:`_computing`)
    looked_cpu: float | None = None

    def __post_init__(self) -> None:
        if self.cpu0 is None:
            self.cpu0 = self._read_cpu()

    def _computing(self, reading: tuple[float, bool]) -> bool:
        """Whether the worker computes: runnable now, or its CPU time grew since the last
        look (the first: since the start). One look may catch a worker that computes on a
        loaded machine off the run queue for a moment (a page fault, a pipe write: state D
        or S): a correct case was once a ``hang`` so. Stuck, it is one a look later."""
        last = self.looked_cpu if self.looked_cpu is not None else self.cpu0
        self.looked_cpu = reading[0]
        return reading[1] or (last is not None and reading[0] > last)

    def _read_cpu(self) -> float | None:
        reading = self.cpu() if self.cpu is not None else None
        return reading[0] if reading is not None else None

    def event(self, event: Any, now: float) -> None:
        kind = event[0] if isinstance(event, (list, tuple)) and event else None
        if kind == "variant":  # a new case starts in the same round trip: a fresh clock
            self.variant = int(event[1])
            self.start = now
            self.compile_seconds = 0.0
            self.compiles = 0
            self.counted = (0.0, 0)
            self.compiling_since = None
            self.progress = self.progress_cpu = None
            self.cpu0, self.compile_cpu, self.compiling_cpu = self._read_cpu(), 0.0, None
        elif kind == "compile":
            if event[1]:
                if self.compiling_since is None:
                    self.compiling_since = now
                    self.compiling_cpu = self._read_cpu()
            elif self.compiling_since is not None:
                self.compile_seconds += now - self.compiling_since
                self.compiles += 1
                self.compiling_since = None
                cpu = self._read_cpu()
                if cpu is not None and self.compiling_cpu is not None:
                    self.compile_cpu += cpu - self.compiling_cpu
                self.compiling_cpu = None
        elif kind == "progress":
            done, total, seconds, slowest = event[1:5]
            self.progress = (int(done), int(total), float(seconds), float(slowest))
            # a report may come late (from the worker's reporter thread): it says how long
            # ago the state it reports was reached, the start of the current program
            age = float(event[5]) if len(event) > 5 else 0.0
            self.progress_at = now - max(0.0, age)
            self.progress_cpu = (float(event[6]), float(event[7])) if len(event) > 7 else None
        elif kind == "launch":
            self.progress = self.progress_cpu = None

    def compiled(self, now: float) -> float:
        """Seconds spent compiling so far."""
        extra = now - self.compiling_since if self.compiling_since is not None else 0.0
        return self.compile_seconds + extra

    def ran(self, now: float) -> float:
        """Seconds the case has run by the clock so far, compilation excluded."""
        return max(0.0, now - self.start - self.compiled(now))

    def _cpu_worked(self, cpu: float) -> float | None:
        """The worker's CPU seconds since the start when it had spent ``cpu`` in all,
        compilations excluded; None: the start's is unknown."""
        if self.cpu0 is None:
            return None
        compiling = cpu - self.compiling_cpu if self.compiling_cpu is not None else 0.0
        return max(0.0, cpu - self.cpu0 - self.compile_cpu - max(0.0, compiling))

    def worked(self, now: float, cpu: float | None = None) -> float:
        """Seconds the case has worked by ``now``: its clock time, or its worker's CPU time
        then (``cpu``: the worker's CPU seconds in all at ``now``) where that is less."""
        ran = self.ran(now)
        mine = self._cpu_worked(cpu) if cpu is not None else None
        return ran if mine is None else min(ran, mine)

    def wait(self, now: float) -> float:
        """Seconds until :meth:`check` may have a verdict without a new event."""
        if self.compiling_since is not None:
            return max(0.0, self.compile_timeout - self.compiled(now))
        left = self.timeout - self.ran(now)
        return left if left > 0 else RECHECK

    def _launch(self) -> tuple[float, float]:
        """(seconds the current launch's finished programs took, seconds each): their CPU
        time where reported and less than the clock's."""
        assert self.progress is not None
        done, _, seconds, _ = self.progress
        if self.progress_cpu is not None:
            seconds = min(seconds, self.progress_cpu[0])
        return seconds, seconds / max(done, 1)

    def loaded(self) -> bool:
        """Whether the current launch's worker had less than :data:`LOADED_SHARE` of a core."""
        return (self.progress is not None and self.progress_cpu is not None
                and self.progress_cpu[0] < LOADED_SHARE * self.progress[2])

    def _cost(self) -> str:
        assert self.progress is not None
        done, total, seconds, slowest = self.progress
        spent, each = self._launch()
        if self.loaded():
            return (f"{done} of {total} programs in {spent:.3g} s of the worker's CPU time "
                    f"({seconds:.3g} s by the clock: the machine is loaded), {each:.3g} s each: "
                    f"about {each * total:.2f} s for the launch")
        return (f"{done} of {total} programs in {spent:.3g} s, {each:.3g} s each (slowest "
                f"{slowest:.3g} s): about {each * total:.2f} s for the launch")

    def projection(self, now: float) -> tuple[float, float, float]:
        """The case's projected cost from its launch's last report: (projected, seconds the
        case had worked when the report's state was reached, seconds its launch's programs
        left will take at the measured pace); projected = the two added."""
        assert self.progress is not None
        done, total = self.progress[:2]
        so_far = self.ran(min(now, self.progress_at))
        if self.progress_cpu is not None:
            mine = self._cpu_worked(self.progress_cpu[1])
            if mine is not None:
                so_far = min(so_far, mine)
        left = self._launch()[1] * (total - done)
        return so_far + left, so_far, left

    def _projected(self, now: float) -> str:
        """The projection in words, its figures adding up to it."""
        projected, so_far, left = self.projection(now)
        assert self.progress is not None
        done, total = self.progress[:2]
        return (f"about {projected:.2f} s: {so_far:.2f} s so far, plus {left:.2f} s for the "
                f"{total - done} programs left of its launch ({self._cost()})")

    def check(self, now: float) -> tuple[str, str, dict[str, Any]] | None:
        """(verdict, message, detail) when the case must stop now, else None."""
        detail: dict[str, Any] = {"timeout": self.timeout,
                                  "compile_seconds": round(self.compiled(now), 3)}
        if self.variant:
            detail["variant"] = self.variant
        if self.compiling_since is not None:
            if self.compiled(now) <= self.compile_timeout:
                return None
            detail["compile_timeout"] = self.compile_timeout
            return (Verdict.SLOW,
                    f"compilation ran past the compile limit of {self.compile_timeout:g} s "
                    f"({self.compiles} compilation(s) done before this one); stopped: slow, "
                    "not hung", detail)
        ran = self.ran(now)
        p = self.progress
        if p is not None and p[0] >= 1:
            return self._check_launch(now, ran, p, detail)
        if ran <= self.timeout:
            return None
        reading = self.cpu() if self.cpu is not None else None
        worked = self.worked(now, reading[0] if reading is not None else None)
        if reading is not None and self._computing(reading) and worked <= self.timeout:
            return None  # its worker computes on a loaded machine, within the timeout yet
        spent = self.compiled(now)
        note = f" (plus {spent:.1f} s compiling, not counted)" if spent >= 0.05 else ""
        if worked < LOADED_SHARE * ran:
            detail["cpu_seconds"] = round(worked, 3)
            note += f" ({worked:.1f} s of it the worker's CPU time)"
        return (Verdict.HANG,
                f"the case ran past the timeout of {self.timeout:g} s{note}; the worker was "
                "killed", detail)

    def _cap_margin(self) -> float:
        """How far past the cost cap a projection must be to stop the case: 1, or
        :data:`SLOW_EARLY_FACTOR` while the launch's sample is small (:data:`COST_CAP_SAMPLE`)."""
        assert self.cost_cap is not None
        spent = self._launch()[0]
        return 1.0 if spent >= COST_CAP_SAMPLE * self.cost_cap else SLOW_EARLY_FACTOR

    def _check_launch(self, now: float, ran: float, p: tuple[int, int, float, float],
                      detail: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
        """:meth:`check` while an interpreted launch reports its programs."""
        done, total, seconds, slowest = p
        detail["progress"] = {"done": done, "total": total, "seconds": round(seconds, 3),
                              "slowest": round(slowest, 3)}
        if self.progress_cpu is not None:
            detail["progress"]["cpu"] = round(self.progress_cpu[0], 3)
        # projected from the last report, not from now: a program that stops finishing
        # is a hang at the timeout, not a case the projection stops
        projected, so_far, left = self.projection(now)
        if projected > SLOW_EARLY_FACTOR * self.timeout:
            return (Verdict.SLOW,
                    f"the case would take past {SLOW_EARLY_FACTOR:g} times the timeout "
                    f"of {self.timeout:g} s, {self._projected(now)}; stopped after "
                    f"{ran:.1f} s: slow, not hung", detail)
        if self.cost_cap is not None and projected > self._cap_margin() * self.cost_cap \
                and left >= COST_CAP_SAVING * self.cost_cap:
            detail["cost_cap"] = round(self.cost_cap, 3)
            return (Verdict.SLOW,
                    f"the case would take past {self.cost_cap:.1f} s, the most one case "
                    f"may cost in this target's share of the budget, "
                    f"{self._projected(now)}; stopped after {ran:.1f} s: slow, too "
                    "expensive for the budget, not a failure", detail)
        if ran <= self.timeout:
            return None
        stalled = now - self.progress_at
        if stalled <= max(STALL_FACTOR * slowest, min(STALL_MIN, self.timeout / 4),
                          2 * PROGRESS_EVERY):
            # what it has worked by now: since the report, at the launch's share of a core
            share = min(1.0, self._launch()[0] / seconds) if seconds > 0 else 1.0
            if so_far + max(0.0, now - self.progress_at) * share <= self.timeout:
                return None  # past the timeout by the clock only: a loaded machine
            return (Verdict.SLOW,
                    f"the case ran past the timeout of {self.timeout:g} s while its "
                    f"programs kept finishing ({self._cost()}); stopped: slow, not hung",
                    detail)
        detail["stalled_seconds"] = round(stalled, 3)
        return (Verdict.HANG,
                f"the case ran past the timeout of {self.timeout:g} s; its current program "
                f"has run {stalled:.1f} s, where its slowest of {done} finished programs "
                f"took {slowest:.3g} s; the worker was killed", detail)


def receive(conn: Any) -> Any:
    """One message of a worker, read as plain data (:func:`fuzzkern.judge.recheck.loads`: no
    class or function is unpickled, so nothing a case's code sends runs here), at most
    :data:`~fuzzkern.judge.recheck.MESSAGE_BYTES` long. A connection that is not a
    ``multiprocessing`` one (a sanitized worker's JSON lines) reads its own way."""
    from fuzzkern.judge import recheck  # (torch: imported when the first worker answers)

    if not isinstance(conn, Connection):
        return conn.recv()
    return recheck.loads(conn.recv_bytes(recheck.MESSAGE_BYTES))


def _context() -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    _start_forkserver()
    return ctx


#: set in the fork server's environment when fuzzkern set PYTHONSAFEPATH there: its preload
#: (fuzzkern.execution._preload) takes both out again, so no worker passes them on
SAFEPATH_MARK = "FUZZKERN_SAFEPATH_SET"


def _start_forkserver() -> None:
    """Start the fork server (once) without the current folder on its ``sys.path``: it runs
    as ``python -c``, which puts the current folder first, so a project file named like a
    standard-library module (``code.py``, ``copy.py``) replaced that module in the server's
    preload and in every worker forked from it (every case a ``crash``). PYTHONSAFEPATH
    (Python 3.11) keeps the folder out."""
    from multiprocessing import forkserver

    added = "PYTHONSAFEPATH" not in os.environ
    if added:
        os.environ["PYTHONSAFEPATH"] = os.environ[SAFEPATH_MARK] = "1"
    try:
        with interrupts_held():
            forkserver.ensure_running()
    finally:
        if added:
            os.environ.pop("PYTHONSAFEPATH", None)
            os.environ.pop(SAFEPATH_MARK, None)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """SIGINT blocked in this thread while the fork server starts (or restarts: a case may
    kill it): the server inherits the blocked signal, and so do the workers and watchdogs it
    forks. Ctrl-C reaches every process of the group; the server, which imports torch before
    it ignores SIGINT, printed a KeyboardInterrupt traceback and died ("fuzzkern: aborted").
    Here a Ctrl-C meanwhile waits until the block ends, then interrupts the run as always.
    (multiprocessing's resource tracker starts its own process the same way, and unblocks
    SIGINT when it has: it is started first.)"""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def die_with_parent(parent: int | None = None) -> None:
    """Have the kernel SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``, Linux),
    and exit now if the parent already died before the request took effect (its children are
    reparented: ``getppid()`` changed). ``parent``: the pid the caller's parent must have
    (default: the parent at the time of the call, which only catches a reparenting to init)."""
    expected = os.getppid() if parent is None else parent
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - not Linux
        return
    if os.getppid() != expected or expected == 1:
        os._exit(1)


def become_subreaper() -> None:
    """Make this process the reaper of its orphaned descendants (``PR_SET_CHILD_SUBREAPER``,
    Linux): a process a case starts that double-forks or calls ``setsid`` is reparented here,
    not to init, so :func:`end_descendants` still finds it."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    except Exception:  # pragma: no cover - not Linux
        pass


def _children(pid: int) -> list[int]:
    """The live children of ``pid`` (from ``/proc/<pid>/task/*/children``; zombies left out)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return [c for c in out if _alive(c)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, parents before their children."""
    out, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        out += kids
        todo += kids
    return out


#: seconds :func:`end_descendants` keeps killing a process tree that keeps forking
END_WAIT = 5.0


def end_descendants(pid: int | None = None, *, reap: bool = False) -> int:
    """SIGKILL every process below ``pid`` (default: this one), again until none is left
    (a killed process's orphans come back to a subreaper, :func:`become_subreaper`), for at
    most :data:`END_WAIT` seconds; with ``reap`` (``pid`` is this process), reap them too.
    Returns how many were killed."""
    me = os.getpid() if pid is None else pid
    killed: set[int] = set()
    deadline = time.monotonic() + END_WAIT
    while time.monotonic() < deadline:
        found = descendants(me)
        if reap:
            _reap()
        if not found:
            break
        for p in found:
            try:
                os.kill(p, signal.SIGKILL)
                killed.add(p)
            except OSError:
                pass
        time.sleep(0.01)
    if reap:
        _reap()
    return len(killed)


def _reap() -> None:
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            return


def _has_children() -> bool:
    """Whether this process has a child, live or not yet reaped (one system call)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def end_case_processes() -> int:
    """At a case's end, in a worker: end every process the case started and left running
    (reaping those that ended by themselves); how many had to be killed."""
    if not _has_children():
        return 0
    return end_descendants(reap=True)


def unnamed_semaphores() -> None:
    """In a worker or compile process (forked from the fork server): the locks a library
    makes later (FlagGems: a ``multiprocessing.Lock`` per kernel, at import) are semaphores
    unlinked at once. Under forkserver, the start method these processes inherit, each is a
    named semaphore in ``/dev/shm`` that only an exit handler removes, so every process
    killed (a hang, a crash, the budget's end, the compile processes at ``close``) left its
    own behind until the run's resource tracker ended (or for good, when that was killed
    too). With ``fork`` as the default they never get a name; nothing here starts processes
    through the default context."""
    mp.set_start_method("fork", force=True)


def _worker_main(conn: Connection, env: dict[str, str]) -> None:
    """Loop of one worker: receive (ref, case, options), run it, send back the outcome."""
    os.environ.update(env)
    # numpy's RuntimeWarnings from kernels' arithmetic in the interpreter ("All-NaN slice",
    # overflow): the oracle judges the values; on the terminal they are noise.
    import warnings

    warnings.filterwarnings("ignore", category=RuntimeWarning)
    try:  # a kernel that aborts should not leave a core file behind for every case
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except Exception:  # pragma: no cover
        pass
    # Die with the parent (the fork server, which dies with fuzzkern) rather than linger as an
    # orphan spinning on a case or holding a GPU context.
    die_with_parent()
    # What a case starts stays below this worker, setsid or not, and ends with the case.
    become_subreaper()
    # A process group of its own: a case's `os.killpg(0, SIGKILL)` (a library's clean-up of
    # "my process group") ends this worker and what it started, not fuzzkern with its
    # findings unsaved. (Its stdin is /dev/null: a group off the terminal reads nothing.)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    # Ctrl-C reaches the whole process group: the parent decides what an interrupt means (it
    # kills this worker when it stops); a KeyboardInterrupt here would read as a kernel error.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    unnamed_semaphores()  # a worker is killed after a hang, a crash, at the budget's end
    import torch

    # One intra-op thread: cases are small, and torch's thread pool costs more than it saves
    # on them (a 64x48x80 float64 matmul: 1.9 ms with 2 threads, 0.02 ms with 1).
    torch.set_num_threads(1)
    import fuzzkern.execution.runner  # noqa: F401  (imported once, before the first case)

    progress._channel = conn.send
    try:  # a worker that cannot capture its compilations runs its cases as without
        compiling_ahead = ahead.size_of(env.get(ahead.AHEAD_ENV, "0")) > 0 and ahead.install()
    except ValueError:
        compiling_ahead = False
    judge = _judge_snapshot()  # before any case's code ran
    capture = _Capture().start()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        ref, case_json, options = msg
        if case_json is None:  # a warm-up (WorkerPool.warm): ``ref`` lists the targets
            from fuzzkern.execution.runner import warm

            try:
                conn.send(warm(ref, options))
            except Exception as e:  # never fatal: the first case meets it again
                conn.send({"warm": False, "error": f"{type(e).__name__}: {e}"})
            continue
        if compiling_ahead:
            ahead.begin_case(ref, case_json)
        timer = stages.begin()
        result = bounded(run_case_or_harness_error(ref, case_json, options))
        killed = end_case_processes()
        if killed:
            result["killed"] = killed
        with stages.stage("capture"):
            text, total = capture.case_end()
        if total:
            result["output"] = text
            result["output_bytes"] = total
        result["timings"] = stages.finish(timer)
        replaced = _judge_replaced(judge)
        if replaced:  # the verdict came from the case's own code: a failure, and a new worker
            result = bounded(Outcome(
                Verdict.ERROR,
                f"the case's host code replaced fuzzkern's own {replaced} in its worker, so "
                "its verdict cannot be trusted",
                {"worker": ModeResult("worker", "error", error=f"replaced: {replaced}")},
            ).to_json())
            result["replace_worker"] = True
        conn.send(result)


def _judge_snapshot() -> dict[str, tuple[Any, Any]]:
    """What the verdict is computed with, before any case runs: every function and class of
    fuzzkern's judge modules and of the runner that calls them, with each function's code."""
    import sys

    out = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name.startswith("fuzzkern.judge")
                                  or name == "fuzzkern.execution.runner"):
            continue
        for attr, value in list(vars(module).items()):
            if callable(value) and getattr(value, "__module__", None) == name:
                out[f"{name}.{attr}"] = (value, getattr(value, "__code__", None))
    return out


def _judge_replaced(snapshot: dict[str, tuple[Any, Any]]) -> str | None:
    """The first function or class of :func:`_judge_snapshot` a case replaced (its module's
    attribute, or a function's code), if any."""
    import sys

    for key, (value, code) in snapshot.items():
        name, _, attr = key.rpartition(".")
        now = getattr(sys.modules.get(name), attr, None)
        if now is not value or getattr(now, "__code__", None) is not code:
            return key
    return None


#: characters of any one text a case's outcome carries (an exception's message, a
#: traceback): a launcher raising a 40 MB message costs 40 MB in its worker, never in the
#: parent, the corpus or a report; the head and the tail are kept, the finding with them
MESSAGE_CHARS = 8 * 1024


def bounded(value: Any, most: int = MESSAGE_CHARS) -> Any:
    """``value`` (an outcome's JSON) with every string longer than ``most`` characters cut
    to its head and tail around a note of how much was cut. Iterative: an outcome nested
    deep (a deep output's description) costs no recursion."""
    def cut(text: str) -> str:
        if len(text) <= most:
            return text
        head, tail = text[:most * 3 // 4], text[-(most // 4):]
        return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"

    if isinstance(value, str):
        return cut(value)
    todo = [value]
    while todo:
        v = todo.pop()
        keys = v.keys() if isinstance(v, dict) else range(len(v)) if isinstance(v, list) else ()
        for k in keys:
            item = v[k]
            if isinstance(item, str):
                v[k] = cut(item)
            elif isinstance(item, (dict, list)):
                todo.append(item)
    return value


#: bytes of a case's stdout/stderr a worker keeps (the rest is counted, not kept)
OUTPUT_LIMIT = 16 * 1024
#: seconds a case's end waits for the drain thread to reach the case's end marker
_DRAIN_WAIT = 5.0


class _Capture:
    """Captures file descriptors 1 and 2 (Python's prints, C's printf, Triton's device_print)
    of a worker, case by case, through one pipe that a thread drains for the worker's whole
    life: of each case, the first :data:`OUTPUT_LIMIT` bytes are kept, the rest counted and
    dropped, so a kernel printing gigabytes neither floods the terminal nor fills a disk.

    :meth:`start` redirects both descriptors once; :meth:`case_end` flushes the buffers,
    writes an end marker (a random token of this worker) into the pipe and waits until the
    thread reaches it: every byte before the marker is the case's. Nothing starts a thread
    or reopens a pipe per case (that cost a warm worker about 0.5 ms a case). A descriptor
    the case pointed elsewhere is pointed back at the pipe."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        import threading

        self.limit = limit
        self.marker = b"\0fuzzkern-case-end-" + os.urandom(12).hex().encode() + b"\0"
        self.kept = bytearray()
        self.total = 0
        self._ended = threading.Event()
        self._result: tuple[bytes, int] = (b"", 0)
        self._write = -1
        self._pipe: tuple[int, int] = (0, 0)
        self._fflush: Any = None

    def start(self) -> _Capture:
        import ctypes
        import threading

        try:
            self._fflush = ctypes.CDLL(None).fflush  # C stdio buffers (printf from native code)
        except Exception:  # pragma: no cover
            self._fflush = None
        self._flush()
        r, w = os.pipe()
        st = os.fstat(w)
        self._pipe = (st.st_dev, st.st_ino)
        self._write = w
        os.dup2(w, 1)
        os.dup2(w, 2)
        threading.Thread(target=self._drain, args=(r,), daemon=True).start()
        return self

    def _flush(self) -> None:
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pragma: no cover
                pass
        if self._fflush is not None:
            try:
                self._fflush(None)
            except Exception:  # pragma: no cover
                pass

    def _take(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    def _drain(self, r: int) -> None:
        marker = self.marker
        pending = b""  # bytes that may begin a marker split across two reads
        try:
            while True:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    return
                data = pending + chunk if pending else chunk
                while True:
                    i = data.find(marker)
                    if i < 0:
                        break
                    self._take(data[:i])
                    self._result = (bytes(self.kept), self.total)
                    self.kept = bytearray()
                    self.total = 0
                    self._ended.set()
                    data = data[i + len(marker):]
                keep = len(marker) - 1
                self._take(data[:-keep] if len(data) > keep else b"")
                pending = data[-keep:] if len(data) > keep else data
        finally:
            os.close(r)

    def case_end(self) -> tuple[str, int]:
        """What the case that just ended printed: (the kept bytes as text, bytes in all)."""
        self._flush()
        for fd in (1, 2):
            try:
                st = os.fstat(fd)
                moved = (st.st_dev, st.st_ino) != self._pipe
            except OSError:  # the case closed it
                moved = True
            if moved:
                os.dup2(self._write, fd)
        self._ended.clear()
        os.write(self._write, self.marker)
        if self._ended.wait(_DRAIN_WAIT):
            kept, total = self._result
        else:  # pragma: no cover - the drain thread is stuck: what it saw so far
            kept, total = bytes(self.kept), self.total
        return kept.decode("utf-8", errors="replace"), total


def _watchdog_main(worker: int, owner: int) -> None:
    """Watch a worker for its owner (the fuzzkern process that runs its cases): when the owner
    dies first (SIGKILLed, an OOM kill), SIGKILL every process of the worker's tree and the
    worker. The worker's own parent-death signal does that too, unless the case it runs
    cleared it (``prctl(PR_SET_PDEATHSIG, 0)``): this process, a sibling of the worker that
    runs no case, is not in its reach. Ends when the worker does. Waits on pidfds (Linux
    5.3+), so it costs no CPU; without them there is no watchdog."""
    import select

    # Ctrl-C reaches the whole process group: this process ends with the worker, never on
    # an interrupt (a KeyboardInterrupt here printed a traceback on every Ctrl-C)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        fds = [os.pidfd_open(owner), os.pidfd_open(worker)]
    except (AttributeError, OSError):  # pragma: no cover - an old kernel, or gone already
        return
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    while True:
        ready = {fd for fd, _ in poll.poll()}
        if fds[0] in ready:
            end_descendants(worker)
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(fds[1], signal.SIGKILL)
            end_descendants(worker)
            return
        if fds[1] in ready:
            return


class Worker:
    """One worker process and the pipe to it, and its watchdog (:func:`_watchdog_main`)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        ctx = _context()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, dict(env or {})), daemon=True)
        with interrupts_held():  # (the fork server, if it must start again)
            self.process.start()
            #: ends the worker's process tree if this process dies first (:func:`_watchdog_main`)
            self.watchdog = ctx.Process(target=_watchdog_main,
                                        args=(self.process.pid, os.getpid()), daemon=True)
            self.watchdog.start()
        child.close()
        self.cases = 0
        #: the worker's CPU time, for its cases' clocks (:class:`CaseClock`)
        self.cpu = CpuMeter(self.process.pid)

    def _end_watchdog(self) -> None:
        self.watchdog.join(1)  # it ends by itself once the worker has
        if self.watchdog.is_alive():
            self.watchdog.kill()
            self.watchdog.join(1)

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> int:
        """Kill the worker and every process below it (first, while the worker, their
        subreaper, still holds them); returns how many of those there were."""
        killed = 0
        if self.process.is_alive() and self.process.pid is not None:
            killed = end_descendants(self.process.pid)
            self.process.kill()
        self.process.join(5)
        self._end_group()
        self.conn.close()
        self.cpu.close()
        self._end_watchdog()
        return killed

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self._end_group()
        self._end_watchdog()
        self.conn.close()
        self.cpu.close()

    def _end_group(self) -> None:
        """SIGKILL what is left of the worker's process group once the worker has ended: a
        worker that died on its own (a segfault, the OOM killer) left the processes its case
        started to init, where :func:`end_descendants` cannot find them, running and holding
        fuzzkern's output pipes. They kept the worker's group (a case's ``setsid`` escapes
        it). The group's id is the worker's pid, which Linux does not give a new process while
        the group has a member; an empty group is ESRCH."""
        pid = self.process.pid
        if pid is None or self.process.exitcode is None:  # (still running: not ours to end)
            return
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def _compiler_main(jobs: Any, results: Any, env: dict[str, str]) -> None:
    """Loop of one compile process: take a job, compile it into Triton's cache
    (:func:`fuzzkern.execution.ahead.compile_job`), put the result; None ends it."""
    os.environ.update(env)
    die_with_parent()
    become_subreaper()  # ptxas and the like stay below it, and end with it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    ahead.below_workers()  # never in the way of the workers and the search
    unnamed_semaphores()  # every close() kills this process
    while True:
        job = jobs.get()
        if job is None:
            return
        with ahead.compile_slot():  # the host's compile processes within the idle cores
            result = ahead.compile_job(job)
        results.put(result)


#: jobs waiting for a compile process at most (more are dropped, and counted)
AHEAD_BACKLOG = 1024


class AheadPool:
    """Processes that compile ahead (docs/scaling.md, "Compile ahead"): workers ask for jobs
    (:mod:`fuzzkern.execution.ahead`), this pool compiles each once, in up to ``size``
    processes forked from the workers' pre-imported server, one more started while more jobs
    wait than processes run (none before the first job). A thread collects
    results into the counts :meth:`stats` reports. :meth:`close` kills the processes (and what
    they started), whatever they are compiling."""

    def __init__(self, size: int, env: dict[str, str] | None = None) -> None:
        import threading

        self.size = size
        self.env = dict(env or {})
        self._ctx = _context()
        self._jobs: Any = None
        self._results: Any = None
        self._procs: list[Any] = []
        self._keys: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.submitted = self.compiled = self.cached = self.failed = self.dropped = 0
        #: the worker's compilations served from what this pool compiled (:meth:`served_one`)
        self.served = 0
        #: why it stopped submitting (a low hit rate, a failure of its own); None: it runs
        self.stopped: str | None = None
        self.seconds = 0.0
        #: the first few errors, for a report (a job that fails never touches a case)
        self.errors: list[str] = []

    def _grow(self) -> None:
        """Start the queues and the collecting thread at the first job, and one more process
        while fewer run than jobs wait (up to ``size``)."""
        import threading

        if self._jobs is None:
            self._jobs = self._ctx.Queue()
            self._results = self._ctx.Queue()
            self._thread = threading.Thread(target=self._collect, name="fuzzkern-ahead",
                                            daemon=True)
            self._thread.start()
        for p in [p for p in self._procs if not p.is_alive()]:  # died compiling (a crash)
            self._procs.remove(p)
            p.join(0)
            with self._lock:
                self.failed += 1  # the job it was compiling, if any, never reports
                if len(self.errors) < 5:
                    self.errors.append("a compile process died "
                                       f"({_signal_name(p.exitcode)}); another replaces it")
        while len(self._procs) < min(self.size, self.pending()):
            p = self._ctx.Process(target=_compiler_main, args=(self._jobs, self._results,
                                                               self.env), daemon=True)
            p.start()
            self._procs.append(p)

    def submit(self, jobs: list[dict[str, Any]]) -> int:
        """Queue the jobs not seen before; how many were queued (none once stopped, e.g. by
        a low hit rate: :meth:`paying`)."""
        if self._closed or self.size <= 0 or self.stopped:
            return 0
        why = self.paying()
        if why:
            self.stop(why)
            return 0
        queued = 0
        for job in jobs:
            key = job.get("key") if isinstance(job, dict) else None
            if not isinstance(key, str) or key in self._keys:
                continue
            self._keys.add(key)
            with self._lock:
                if self.submitted - self.compiled - self.failed >= AHEAD_BACKLOG:
                    self.dropped += 1
                    continue
                self.submitted += 1
            self._grow()
            self._jobs.put(job)
            queued += 1
        return queued

    def _collect(self) -> None:
        import queue

        while not self._closed:
            try:
                r = self._results.get(timeout=0.2)
            except queue.Empty:
                continue
            except Exception:  # closed under us
                return
            if not isinstance(r, dict):
                continue
            with self._lock:
                self.seconds += float(r.get("seconds", 0.0) or 0.0)
                if r.get("ok"):
                    self.compiled += 1
                    self.cached += bool(r.get("cached"))
                else:
                    self.failed += 1
                    if len(self.errors) < 5:
                        self.errors.append(str(r.get("error")))

    def served_one(self, n: int = 1) -> None:
        """The worker's compilation was served from what this pool compiled."""
        with self._lock:
            self.served += n

    def hit_rate(self) -> float | None:
        """Compilations served per job compiled; None before any compiled."""
        with self._lock:
            return self.served / self.compiled if self.compiled else None

    def paying(self, warmup: int | None = None, least: float | None = None) -> str | None:
        """Why compiling ahead does not pay (its hit rate below ``least``, default
        :data:`~fuzzkern.execution.ahead.MIN_HIT_RATE`, once ``warmup`` jobs compiled,
        default :data:`~fuzzkern.execution.ahead.AHEAD_WARMUP`); None while it may."""
        warmup = ahead.AHEAD_WARMUP if warmup is None else warmup
        least = ahead.MIN_HIT_RATE if least is None else least
        with self._lock:
            served, compiled = self.served, self.compiled
        if compiled < max(1, warmup) or served >= least * compiled:
            return None
        return (f"hit rate {served}/{compiled} ({100 * served / compiled:.1f}%) below "
                f"{100 * least:g}% after {compiled} jobs compiled")

    def stop(self, why: str) -> None:
        """Stop for good (the processes killed, nothing more submitted); ``stats`` says
        why."""
        if not self.stopped:
            self.stopped = why
        self.close()

    def pending(self) -> int:
        """Jobs queued or compiling now."""
        with self._lock:
            return self.submitted - self.compiled - self.failed

    def wait(self, timeout: float) -> bool:
        """Wait until no job is pending (at most ``timeout`` seconds); whether none is."""
        deadline = time.monotonic() + timeout
        while self.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.pending()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = {"processes": self.size, "submitted": self.submitted,
                                   "compiled": self.compiled, "served": self.served,
                                   "cached": self.cached, "failed": self.failed,
                                   "dropped": self.dropped, "seconds": round(self.seconds, 3),
                                   "errors": list(self.errors)}
        if self.stopped:
            out["stopped"] = self.stopped
        return out

    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.pid is not None]

    def close(self) -> None:
        """Kill the compile processes and what they started; nothing waits for a compile."""
        self._closed = True
        for p in self._procs:
            with contextlib.suppress(Exception):
                if p.is_alive() and p.pid is not None:
                    end_descendants(p.pid)
                    p.kill()
        for p in self._procs:
            with contextlib.suppress(Exception):
                p.join(5)
        self._procs = []
        for q in (self._jobs, self._results):
            if q is not None:
                with contextlib.suppress(Exception):
                    q.cancel_join_thread()
                    q.close()
        self._jobs = self._results = None
        if self._thread is not None:
            self._thread.join(2)
            self._thread = None


def _signal_name(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


class WorkerPool:
    """Runs cases in a worker, replacing it after a crash, a hang or a poisoned CUDA context.

    ``restarts`` counts replacements; ``run`` never raises for what a kernel does; it raises
    :class:`StopTime` once ``stop_at`` has come (a case in flight then is cut short).
    ``worker_factory(env)`` makes a worker (default :class:`Worker`); another kind, e.g. a
    worker under compute-sanitizer (:class:`fuzzkern.execution.sanitizer.SanitizedWorker`), offers
    the same ``conn``/``process``/``alive``/``kill``/``close``, and may offer ``postmortem``: the
    outcome JSON of a case whose worker died, completed from what the worker left behind.

    ``compile_ahead``: how many processes compile ahead what the worker's compilations say
    the search will need next (:class:`AheadPool`; a count, ``"off"``; None: the
    ``FUZZKERN_AHEAD`` variable of ``env`` or of this process's environment, else the
    host's cores but one, none on two cores or fewer). :meth:`compile_stats` says how long
    cases waited for compilations and how much compiling was done ahead.
    """

    def __init__(self, env: dict[str, str] | None = None,
                 worker_factory: Callable[[dict[str, str]], Any] | None = None,
                 compile_ahead: int | str | None = None) -> None:
        self.env = dict(env or {})
        size = ahead.size_of(compile_ahead if compile_ahead is not None
                             else self.env.get(ahead.AHEAD_ENV))
        self.env[ahead.AHEAD_ENV] = str(size)
        #: the compile-ahead processes (None: compiling ahead is off)
        self.ahead: AheadPool | None = None
        self._locks: str | None = None
        if size:
            import shutil
            import tempfile
            import weakref

            self._locks = tempfile.mkdtemp(prefix="fuzzkern-ahead-")
            # (removed by close(), or with the pool if it is never closed)
            weakref.finalize(self, shutil.rmtree, self._locks, True)
            self.env[ahead.LOCKS_ENV] = self._locks
            self.env.setdefault(ahead.HOST_ENV, ahead.host_folder())
            self.ahead = AheadPool(size, self.env)
        # this pool's worker counts against the host's compile slots (ahead.host_slots),
        # its own compile processes' and those of other fuzzkern processes
        unregister = ahead.register_pool(self.env.get(ahead.HOST_ENV))
        self._unregister: Callable[[], Any] | None = None
        if unregister is not None:
            import weakref

            self._unregister = weakref.finalize(self, unregister)  # once, here or by close()
        #: seconds cases waited while their worker compiled, and how many compilations
        #: (in-memory cache misses: some are loads from Triton's disk cache)
        self.compile_wait = 0.0
        self.compiles = 0
        #: compilations the worker found in the disk cache, compiled ahead
        self.served_ahead = 0
        #: why compiling ahead stopped, if it did (a failure of its own, never a case's)
        self.ahead_stopped: str | None = None
        self.worker_factory = worker_factory or Worker
        self._worker: Any = None
        self.restarts = 0
        self.started = 0
        #: processes the cases started that were still running when their case ended (or
        #: their worker was killed), and were killed (:func:`end_descendants`)
        self.killed = 0
        #: workers SIGKILLed mid-case whose case then ran again (:meth:`_again_if_killed`)
        self.outside_kills = 0
        #: times a worker stopped from outside was resumed (:meth:`_resume_if_stopped`)
        self.outside_stops = 0
        self._again = False
        #: a hard stop (``time.monotonic()``): a case still running then is cut short and
        #: :class:`StopTime` raised; None: none
        self.stop_at: float | None = None
        #: seconds all compilations of one case may take (see :class:`CaseClock`)
        self.compile_timeout = COMPILE_TIMEOUT
        #: this process's own targets, by ref (:meth:`_own`)
        self._targets: dict[str, Any] = {}

    def _get(self) -> Any:
        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self.killed += self._worker.kill() or 0
                self.restarts += 1
            self._worker = self.worker_factory(self.env)
            self.started += 1
        return self._worker

    def warm(self, refs: list[str], options: dict[str, Any], timeout: float = 120.0) -> float:
        """Start the worker and do its start-up work (:func:`fuzzkern.execution.runner.warm`:
        the targets' modules, CUDA, Triton's driver) now, so that no target's first case pays
        for it; returns the seconds it took. Best effort: a worker that does not answer in
        ``timeout`` seconds (or by ``stop_at``) is replaced and the cases start it again."""
        start = time.monotonic()
        worker = self._get()
        until = start + timeout
        if self.stop_at is not None:
            until = min(until, self.stop_at)
        try:
            worker.conn.send((list(refs), None, dict(options)))
            while True:
                left = until - time.monotonic()
                if left <= 0 or not worker.conn.poll(left):
                    self.replace()
                    break
                if isinstance(receive(worker.conn), dict):
                    break
        except (EOFError, OSError, pickle.UnpicklingError):
            self.replace()
        return time.monotonic() - start

    def replace(self) -> None:
        if self._worker is not None:
            self.killed += self._worker.kill() or 0
            self._worker = None
            self.restarts += 1

    def run(self, ref: str, case_json: dict[str, Any], options: dict[str, Any],
            timeout: float, cost_cap: float | None = None) -> Outcome:
        """Run one case in the worker; ``cost_cap``: stop an interpreted launch projected past
        that many seconds as ``slow`` (:attr:`CaseClock.cost_cap`)."""
        try:
            return self._run(ref, case_json, options, timeout, cost_cap)
        except StopTime:  # the worker is idle, or was killed with the case it ran
            raise
        except BaseException:
            # Interrupted (SIGINT/SIGTERM) mid-case: the worker still runs that case and its
            # answer would be read as the next case's; it goes.
            self.replace()
            raise

    def _run(self, ref: str, case_json: dict[str, Any], options: dict[str, Any],
             timeout: float, cost_cap: float | None = None) -> Outcome:
        if self.stop_at is not None and time.monotonic() >= self.stop_at:
            raise StopTime
        worker = self._get()
        start = time.monotonic()
        # (made before the case is sent: the clock reads its worker's CPU time at the start)
        clock = CaseClock(timeout, self.compile_timeout, start, cost_cap=cost_cap,
                          cpu=getattr(worker, "cpu", None))
        try:
            worker.conn.send((ref, case_json, options))
        except OSError:
            self.replace()
            worker = self._get()
            clock = CaseClock(timeout, self.compile_timeout, start, cost_cap=cost_cap,
                              cpu=getattr(worker, "cpu", None))
            worker.conn.send((ref, case_json, options))
        while True:
            now = time.monotonic()
            wait = clock.wait(now)
            if self.stop_at is not None:
                wait = min(wait, max(0.0, self.stop_at - now))
            try:
                ready = worker.conn.poll(min(wait, STOPPED_CHECK))
            except (EOFError, OSError):
                ready = True
            if not ready and not worker.alive():
                # it died, but a process its case started holds its pipe open: no EOF comes
                # (the case waited for its timeout, or the budget's end)
                return self._again_if_killed(self._died(worker, start, clock),
                                             (ref, case_json, options, timeout, cost_cap))
            if not ready:
                self._resume_if_stopped(worker)
            now = time.monotonic()
            if ready:
                try:
                    result = receive(worker.conn)
                except pickle.UnpicklingError as e:  # it sent what is not plain data
                    return self._refused(e, start, clock)
                except (EOFError, OSError) as e:
                    # a message past the size limit closes the pipe of a live worker; a
                    # worker that died (its pipe closed before it could be reaped) is not
                    # alive a moment later
                    worker.process.join(0.5)
                    if isinstance(e, OSError) and worker.alive():
                        return self._refused(e, start, clock)
                    return self._again_if_killed(self._died(worker, start, clock),
                                                 (ref, case_json, options, timeout, cost_cap))
                if isinstance(result, dict):
                    break
                self._event(result, clock, now)
            elif self.stop_at is not None and now >= self.stop_at:
                self._account(clock, now)
                self.replace()
                # what the case had compiled: the engine's note on a first case cut short
                raise StopTime(clock.compiles, round(clock.compiled(now), 3),
                               clock.compiling_since is not None)
            stop = clock.check(now)
            if stop is not None:
                verdict, message, detail = stop
                self._account(clock, now)
                self.replace()
                return Outcome(verdict, message,
                               {"worker": ModeResult("worker", verdict, detail=detail)},
                               seconds=now - start)
        self._account(clock, time.monotonic())
        worker.cases += 1
        self.killed += int(result.pop("killed", 0) or 0)
        sent = result.pop("transcript", None)
        # its case replaced the judge, or lowered a hard limit of its worker
        replace = bool(result.pop("replace_worker", False))
        try:
            outcome = Outcome.from_json(result)
        except Exception as e:  # not an outcome: what a tampered worker may send
            return self._refused(e, start, clock)
        # the verdict is computed here, every pass compared again from the bytes the worker
        # compared (fuzzkern.judge.recheck): the worker runs the case's host code
        from fuzzkern.judge import recheck

        began = time.perf_counter()
        target, case = self._own(ref, case_json)
        asked = options.get("modes") or ("interpret",)
        outcome, refused = recheck.recheck(outcome, sent, target, case,
                                           [str(m) for m in asked])
        if outcome.timings:
            outcome.timings["recheck"] = round(time.perf_counter() - began, 6)
        if replace or refused:
            self.replace()
        if outcome.timings:  # what the worker did not measure: pickling, the pipe, waking up
            outcome.timings["ipc"] = round(max(
                0.0, time.monotonic() - start - sum(outcome.timings.values())), 6)
        last = outcome
        if "failed" in outcome.variants:  # the worker's last case was that variant
            last = Outcome.from_json(outcome.variants["failed"]["outcome"])
        if last.modes.get("compiled") and last.modes["compiled"].detail.get("poisoned"):
            # A device-side fault leaves the CUDA context unusable: never run another case in it.
            self.replace()
        return outcome

    def _own(self, ref: str, case_json: dict[str, Any]) -> tuple[Any, Any]:
        """This process's own target of ``ref`` and case of ``case_json`` (None, None when
        either does not load here): what the parent's second comparison is told
        (:func:`fuzzkern.judge.recheck.recheck`), never what the worker says."""
        from fuzzkern.case.model import Case
        from fuzzkern.target import loader

        if ref not in self._targets:
            try:
                self._targets[ref] = loader.load_ref(ref)
            except Exception:
                self._targets[ref] = None
        try:
            return self._targets[ref], Case.from_json(case_json)
        except Exception:
            return None, None

    def _resume_if_stopped(self, worker: Any) -> None:
        """A worker stopped from outside (SIGSTOP: a person, a CI agent, a debugger's
        attach) is sent SIGCONT: its case goes on, neither a hang nor a budget spent waiting."""
        cpu = getattr(worker, "cpu", None)
        if cpu is None or not cpu.stopped():
            return
        with contextlib.suppress(OSError):
            os.kill(worker.process.pid, signal.SIGCONT)
            self.outside_stops += 1

    def _refused(self, e: BaseException, start: float, clock: CaseClock) -> Outcome:
        """The worker sent what is not an outcome (a class or function to unpickle, a
        message past :data:`~fuzzkern.judge.recheck.MESSAGE_BYTES`): an ``error``, and the
        worker goes. Nothing of what it sent ran."""
        self._account(clock, time.monotonic())
        self.replace()
        words = (f"the worker sent a message that is not an outcome ({type(e).__name__}: "
                 f"{str(e)[:200]}); nothing of it was run or kept")
        return Outcome(Verdict.ERROR, words,
                       {"worker": ModeResult("worker", "error", error=words)},
                       seconds=time.monotonic() - start)

    def _event(self, event: Any, clock: CaseClock, now: float) -> None:
        kind = event[0] if isinstance(event, (list, tuple)) and event else None
        if kind == "ahead":
            if self.ahead is not None and isinstance(event[1], list):
                try:
                    self.ahead.submit(event[1])
                except Exception as e:  # never a case's problem: compiling ahead stops
                    self._stop_ahead(f"{type(e).__name__}: {e}")
            return
        if kind == "ahead-served":
            with contextlib.suppress(TypeError, ValueError, IndexError):
                self.served_ahead += int(event[1])
                if self.ahead is not None:
                    self.ahead.served_one(int(event[1]))
            return
        if kind == "variant":  # the clock starts again: what the last case waited counts now
            self._account(clock, now)
        clock.event(event, now)

    def _stop_ahead(self, why: str) -> None:
        """Compiling ahead stops for the rest of the pool's life; ``compile_stats`` says why."""
        if self.ahead is not None:
            self.ahead_stopped = (f"compiling ahead stopped: {why}; cases compile in their "
                                  "worker as without it")
            with contextlib.suppress(Exception):
                self.ahead.stop(why)

    def _account(self, clock: CaseClock, now: float) -> None:
        """Count what the clock compiled since it was last counted."""
        spent = clock.compiled(now)
        n = clock.compiles + (clock.compiling_since is not None)
        self.compile_wait += spent - clock.counted[0]
        self.compiles += n - clock.counted[1]
        clock.counted = (spent, n)

    def compile_stats(self) -> dict[str, Any]:
        """Compile wait (seconds cases waited while their worker compiled) against compile
        work (seconds compiling in the worker and in the compile-ahead processes), and how
        many of the worker's compilations were served from what was compiled ahead."""
        done = self.ahead.stats() if self.ahead is not None else None
        work = self.compile_wait + (done["seconds"] if done else 0.0)
        out: dict[str, Any] = {
            "compile_wait": round(self.compile_wait, 3), "compile_work": round(work, 3),
            "compiles": self.compiles, "served_ahead": self.served_ahead, "ahead": done}
        if self.ahead_stopped:
            out["ahead_stopped"] = self.ahead_stopped
        return out

    def _died(self, worker: Any, start: float, clock: CaseClock) -> Outcome:
        self._account(clock, time.monotonic())
        worker.process.join(5)
        how = _signal_name(worker.process.exitcode)
        died = Outcome(
            Verdict.CRASH,
            f"the worker process died while running the case ({how})",
            {"worker": ModeResult("worker", "crash", detail={
                "exit": how, "compile_seconds": round(clock.compiled(time.monotonic()), 3),
                **({"variant": clock.variant} if clock.variant else {})})},
            seconds=time.monotonic() - start,
        )
        postmortem = getattr(worker, "postmortem", None)
        if postmortem is not None:  # e.g. memcheck's report of the fault that killed it
            died = Outcome.from_json(postmortem(died.to_json()))
        self.replace()
        return died

    def _again_if_killed(self, died: Outcome, call: tuple[Any, ...]) -> Outcome:
        """A worker SIGKILLed mid-case (an OOM killer, a CI agent, a person) is replaced and
        its case runs once more in the new one: only a case whose worker is killed again is a
        crash, so one kill from outside is neither a finding nor the end of the search."""
        worker = died.modes.get("worker")
        if self._again or worker is None or worker.detail.get("exit") != "SIGKILL":
            return died
        self.outside_kills += 1
        self._again = True
        try:
            return self._run(*call)
        finally:
            self._again = False

    @contextmanager
    def limits(self, *, stop_at: float | None = None,
               compile_timeout: float | None = None) -> Iterator[WorkerPool]:
        """``stop_at`` and ``compile_timeout`` set for the block (None: left as they are)."""
        saved = (self.stop_at, self.compile_timeout)
        if stop_at is not None:
            self.stop_at = stop_at
        if compile_timeout is not None:
            self.compile_timeout = compile_timeout
        try:
            yield self
        finally:
            self.stop_at, self.compile_timeout = saved

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self.ahead is not None:
            self.ahead.close()
        if self._unregister is not None:
            self._unregister()
            self._unregister = None
        if self._locks is not None:
            import shutil

            shutil.rmtree(self._locks, ignore_errors=True)
            self._locks = None


#: the ``resource`` limits a case may lower (``resource.setrlimit``) under which fuzzkern's own
#: code in its worker then fails (8 open files: the judge cannot import a module)
_RLIMITS = ("RLIMIT_NOFILE", "RLIMIT_STACK", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_FSIZE",
            "RLIMIT_NPROC", "RLIMIT_CPU")


def _process_limits() -> dict[str | None, Any]:
    """The recursion limit (key ``None``) and the :data:`_RLIMITS` (soft, hard) of this
    process."""
    import resource

    out: dict[str | None, Any] = {None: sys.getrecursionlimit()}
    for name in _RLIMITS:
        if hasattr(resource, name):
            out[name] = resource.getrlimit(getattr(resource, name))
    return out


#: the limits fuzzkern's own code runs under in a worker (a case may lower them)
PROCESS_LIMITS = _process_limits()


def restore_limits() -> tuple[list[str], bool]:
    """Each limit of :data:`PROCESS_LIMITS` a case lowered, in words (``resource.RLIMIT_NOFILE
    to (8, 8)``), each set back; and whether every one could be (a process without
    CAP_SYS_RESOURCE cannot raise a hard limit again: its worker must be replaced)."""
    import resource

    inf = resource.RLIM_INFINITY
    lowered, restored = [], True
    for name, now in _process_limits().items():
        then = PROCESS_LIMITS[name]
        if name is None:
            if now < then:
                lowered.append(f"the recursion limit to {now} (sys.setrecursionlimit)")
                sys.setrecursionlimit(then)
            continue
        if not any(n != inf and (t == inf or n < t) for n, t in zip(now, then, strict=True)):
            continue
        lowered.append(f"resource.{name} to {now} (resource.setrlimit)")
        try:
            resource.setrlimit(getattr(resource, name), then)
        except (ValueError, OSError):
            restored = False
    return lowered, restored


def run_case_or_harness_error(ref: str, case_json: Any, options: Any) -> dict[str, Any]:
    """One case's outcome as JSON; a failure of the harness itself is an ``error`` outcome
    too, never silence. Afterwards nothing reports progress on the channel any more, so the
    outcome is the next thing the parent reads. A failure of fuzzkern's code after the case
    lowered a limit of the process (the recursion limit, open files, stack, memory: see
    :func:`restore_limits`) is the case's ``error``. The limits are set back after every
    case; where one cannot be, the outcome asks for a new worker (``replace_worker``)."""
    from fuzzkern.execution.runner import run_case_json

    try:
        result = run_case_json(ref, case_json, options)
        restored = restore_limits()[1]
    except BaseException as e:
        lowered, restored = restore_limits()
        result = _harness_error(e, lowered)
    finally:
        progress.quiet()
    if not restored:
        result["replace_worker"] = True
    return result


def _harness_error(e: BaseException, lowered: list[str]) -> dict[str, Any]:
    """The outcome of a case whose run raised ``e`` out of fuzzkern's own code: the case's
    ``error`` where it had ``lowered`` limits of the process, else the harness's."""
    if lowered:  # the case's doing, not fuzzkern's: its finding
        words = (f"the case lowered {', '.join(lowered)}, under which fuzzkern could not "
                 f"judge it ({type(e).__name__}: {text_of(e)[:200]})")
        return Outcome(Verdict.ERROR, words,
                       {"worker": ModeResult("worker", "error", error=words)}).to_json()
    return Outcome(  # (called in the ``except`` block: the traceback is ``e``'s)
        Verdict.ERROR,
        f"fuzzkern worker error: {type(e).__name__}: {text_of(e)}",
        {"harness": ModeResult("harness", "error", error=traceback.format_exc())},
    ).to_json()
