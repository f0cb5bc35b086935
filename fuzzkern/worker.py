"""Worker processes: where kernels run, so that nothing a kernel does can take the fuzzer down.

DESIGN decision 4. The parent (Hypothesis) process never runs a kernel. It sends a case to a
worker and waits for an :class:`~fuzzkern.outcome.Outcome`. A worker that dies (a signal, an
abort) or runs past the case's timeout is killed and replaced, and the case gets a ``crash`` or
``hang`` outcome that shrinks like any other failure.

Workers are forked from a pre-imported server (``multiprocessing``'s forkserver with torch,
triton and fuzzkern's executors preloaded), so replacing one costs milliseconds, not an
``import torch``. The server itself never runs torch code, so forking it is safe.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from fuzzkern.outcome import ModeResult, Outcome, Verdict

_PRELOAD = ["fuzzkern._preload"]


def _context() -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


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
    # Ctrl-C reaches the whole process group: the parent decides what an interrupt means (it
    # kills this worker when it stops); a KeyboardInterrupt here would read as a kernel error.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch

    # One intra-op thread: cases are small, and torch's thread pool costs more than it saves
    # on them (a 64x48x80 float64 matmul: 1.9 ms with 2 threads, 0.02 ms with 1).
    torch.set_num_threads(1)
    import fuzzkern.executors.run  # noqa: F401  (imported once, before the first case)

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        ref, case_json, options = msg
        with _Capture() as captured:
            result = run_case_or_harness_error(ref, case_json, options)
        if captured.total:
            result["output"] = captured.text()
            result["output_bytes"] = captured.total
        conn.send(result)


#: bytes of a case's stdout/stderr a worker keeps (the rest is counted, not kept)
OUTPUT_LIMIT = 16 * 1024


class _Capture:
    """Captures file descriptors 1 and 2 (Python's prints, C's printf, Triton's device_print)
    while a case runs, through a pipe a thread drains: the first :data:`OUTPUT_LIMIT` bytes are
    kept, the rest counted and dropped, so a kernel printing gigabytes neither floods the
    terminal nor fills a disk."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    def __enter__(self) -> _Capture:
        import sys
        import threading

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pragma: no cover
                pass
        r, w = os.pipe()
        self.saved = (os.dup(1), os.dup(2))
        os.dup2(w, 1)
        os.dup2(w, 2)
        os.close(w)
        self.thread = threading.Thread(target=self._drain, args=(r,), daemon=True)
        self.thread.start()
        return self

    def _drain(self, r: int) -> None:
        try:
            while True:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    return
                self.total += len(chunk)
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        finally:
            os.close(r)

    def __exit__(self, *exc: Any) -> None:
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pragma: no cover
                pass
        try:
            import ctypes

            ctypes.CDLL(None).fflush(None)  # C stdio buffers (printf from native code)
        except Exception:  # pragma: no cover
            pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        os.close(self.saved[0])
        os.close(self.saved[1])
        # the pipe's last write end is closed now, unless the case left a process or thread
        # holding it: then what it printed so far is what there is
        self.thread.join(1.0)

    def text(self) -> str:
        return bytes(self.kept).decode("utf-8", errors="replace")


class Worker:
    """One worker process and the pipe to it."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        ctx = _context()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, dict(env or {})), daemon=True)
        self.process.start()
        child.close()
        self.cases = 0

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self.conn.close()


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

    ``restarts`` counts replacements; ``run`` never raises for what a kernel does.
    ``worker_factory(env)`` makes a worker (default :class:`Worker`); another kind, e.g. a
    worker under compute-sanitizer (:class:`fuzzkern.sanitizer.SanitizedWorker`), offers the
    same ``conn``/``process``/``alive``/``kill``/``close``, and may offer ``postmortem``:
    the outcome JSON of a case whose worker died, completed from what the worker left behind.
    """

    def __init__(self, env: dict[str, str] | None = None,
                 worker_factory: Callable[[dict[str, str]], Any] | None = None) -> None:
        self.env = dict(env or {})
        self.worker_factory = worker_factory or Worker
        self._worker: Any = None
        self.restarts = 0
        self.started = 0

    def _get(self) -> Any:
        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self._worker.kill()
                self.restarts += 1
            self._worker = self.worker_factory(self.env)
            self.started += 1
        return self._worker

    def replace(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
            self.restarts += 1

    def run(self, ref: str, case_json: dict[str, Any], options: dict[str, Any],
            timeout: float) -> Outcome:
        try:
            return self._run(ref, case_json, options, timeout)
        except BaseException:
            # Interrupted (SIGINT/SIGTERM) mid-case: the worker still runs that case and its
            # answer would be read as the next case's; it goes.
            self.replace()
            raise

    def _run(self, ref: str, case_json: dict[str, Any], options: dict[str, Any],
             timeout: float) -> Outcome:
        worker = self._get()
        start = time.monotonic()
        try:
            worker.conn.send((ref, case_json, options))
        except OSError:
            self.replace()
            worker = self._get()
            worker.conn.send((ref, case_json, options))
        try:
            ready = worker.conn.poll(timeout)
        except (EOFError, OSError):
            ready = True
        if not ready:
            self.replace()
            return Outcome(
                Verdict.HANG,
                f"the case ran past the timeout of {timeout:g} s; the worker was killed",
                {"worker": ModeResult("worker", "hang", detail={"timeout": timeout})},
                seconds=time.monotonic() - start,
            )
        try:
            result = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            how = _signal_name(worker.process.exitcode)
            died = Outcome(
                Verdict.CRASH,
                f"the worker process died while running the case ({how})",
                {"worker": ModeResult("worker", "crash", detail={"exit": how})},
                seconds=time.monotonic() - start,
            )
            postmortem = getattr(worker, "postmortem", None)
            if postmortem is not None:  # e.g. memcheck's report of the fault that killed it
                died = Outcome.from_json(postmortem(died.to_json()))
            self.replace()
            return died
        worker.cases += 1
        outcome = Outcome.from_json(result)
        if outcome.modes.get("compiled") and outcome.modes["compiled"].detail.get("poisoned"):
            # A device-side fault leaves the CUDA context unusable: never run another case in it.
            self.replace()
        return outcome

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def run_case_or_harness_error(ref: str, case_json: Any, options: Any) -> dict[str, Any]:
    """One case's outcome as JSON; a failure of the harness itself is an ``error`` outcome
    too, never silence."""
    from fuzzkern.executors.run import run_case_json

    try:
        return run_case_json(ref, case_json, options)
    except BaseException as e:
        return Outcome(
            Verdict.ERROR,
            f"fuzzkern worker error: {type(e).__name__}: {e}",
            {"harness": ModeResult("harness", "error", error=traceback.format_exc())},
        ).to_json()
