"""``fuzzkern run --sanitize``: the compiled mode under NVIDIA compute-sanitizer (memcheck).

Why: red zones (:mod:`fuzzkern.execution.hygiene`) see writes that land within a guard band;
memcheck sees every invalid read and write, with the kernel's source line, thread and block.
It needs every tensor in its own ``cudaMalloc``: under PyTorch's caching allocator a small
overrun lands in the slack of a larger cached block and memcheck reports nothing
(docs/architecture.md, execution), so the worker runs with ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``
and without red zones (memcheck should see the exact allocation bounds).

How: the forkserver workers of :mod:`fuzzkern.execution.pool` cannot be wrapped by a tool that must
launch the process itself. A sanitized worker is a subprocess::

    compute-sanitizer --tool memcheck --log-file LOG ... python -m WORKER

(``WORKER``: :mod:`fuzzkern.execution._sanitized_worker`), which speaks the worker protocol as JSON
lines over its stdin and stdout: one ``[ref, case_json, options]`` per case, one outcome JSON per
reply, ``null`` to stop (:mod:`fuzzkern.execution._sanitized_worker`). The pool
(:class:`SanitizedWorker` as the :class:`~fuzzkern.execution.pool.WorkerPool`'s worker factory)
restarts it after a crash, a hang or a device fault like any worker; a restart costs the sanitizer's
start-up (seconds). A worker that dies during a case (freeing a tensor after a fault aborts it when
the caching allocator is off) gets its case's ``crash`` outcome completed from the log all the same
(``postmortem``).

After each reply the parent reads what memcheck appended to the worker's log. Memcheck errors
(``Invalid __global__ read of size 4 bytes ... at kernel+0xe0 in file.py:7 by thread (8,0,0)
in block (0,0,0) ... 1 bytes after the nearest allocation ... of size 32 bytes``) become the
compiled mode's ``memcheck`` detail and an ``oob`` verdict, unless the interpreter already
located the access (its verdict names the argument). A report memcheck writes late may land
with the next case: the log is read once more, briefly, when the compiled mode faulted.

Availability is probed before the campaign (:func:`probe`): compute-sanitizer must exist and
run a CUDA program. It is refused on some machines (e.g. under gVisor); then ``fuzzkern run``
says why and exits 2.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from fuzzkern.errors import FuzzkernError

#: what the sanitized worker's environment adds
SANITIZER_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}

_PROBE = (
    "import torch\n"
    "x = torch.ones(8, device='cuda')\n"
    "y = (x * 2).sum()\n"
    "torch.cuda.synchronize()\n"
    "assert float(y) == 16.0\n"
    "print('fuzzkern-probe-ok')\n"
)


class SanitizerUnavailable(FuzzkernError):
    """``--sanitize`` cannot run here: no CUDA device, no compute-sanitizer, or the sanitizer
    refused this machine. The message says which, and how to go on."""


def find_compute_sanitizer() -> str | None:
    """Path of ``compute-sanitizer``: on PATH, in ``$CUDA_HOME/bin``, or the default CUDA
    install folder."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            path = os.path.join(root, "bin", "compute-sanitizer")
            if os.access(path, os.X_OK):
                return path
    return None


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover
        return False


def probe(timeout: float = 300.0) -> str:
    """Check that memcheck can run a CUDA program here; return the sanitizer's path.

    Raises :class:`SanitizerUnavailable` with the reason (no CUDA device, no
    compute-sanitizer, or it failed on a tiny torch program: the tail of its output)."""
    if not _cuda_available():
        raise SanitizerUnavailable(
            "--sanitize runs the compiled mode under NVIDIA compute-sanitizer and needs a CUDA "
            "GPU, but torch sees none here (torch.cuda.is_available() is False). Run without "
            "--sanitize (the interpreter's bounds and view checks still apply), or on a GPU "
            "machine with the CUDA toolkit.")
    path = find_compute_sanitizer()
    if path is None:
        raise SanitizerUnavailable(
            "--sanitize needs NVIDIA compute-sanitizer (part of the CUDA toolkit), but it is "
            "not on PATH, in $CUDA_HOME/bin or in /usr/local/cuda/bin. Install the CUDA "
            "toolkit or put compute-sanitizer on PATH.")
    cmd = [path, "--tool", "memcheck", "--error-exitcode", "86", sys.executable, "-c", _PROBE]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **SANITIZER_ENV})
    except subprocess.TimeoutExpired:
        raise SanitizerUnavailable(
            f"compute-sanitizer ({path}) did not finish a tiny CUDA program within "
            f"{timeout:g} s; run without --sanitize.") from None
    except OSError as e:
        raise SanitizerUnavailable(f"compute-sanitizer ({path}) could not start: {e}") from None
    text = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0 or "fuzzkern-probe-ok" not in text:
        tail = "\n".join(text.strip().splitlines()[-8:])
        raise SanitizerUnavailable(
            f"compute-sanitizer ({path}) refused to run a tiny CUDA program on this machine "
            f"(exit code {proc.returncode}); some sandboxes (e.g. gVisor) do not allow it. "
            f"Run without --sanitize. Its output ended with:\n{tail}")
    return path


#: the sanitized worker's command: ``-P`` keeps the current folder off its sys.path (a
#: project's copy.py would replace the standard library's, as in the fork server)
WORKER = [sys.executable, "-P", "-m", "fuzzkern.execution._sanitized_worker"]


def memcheck_command(sanitizer: str, log_path: str) -> list[str]:
    """The command line of one sanitized worker."""
    return [sanitizer, "--tool", "memcheck", "--log-file", log_path, "--print-limit", "100",
            "--report-api-errors", "no", "--show-backtrace", "device",
            *WORKER]


# -- memcheck's report -------------------------------------------------------------------------

_PREFIX = re.compile(r"^=+ ?", re.MULTILINE)
_HEAD = re.compile(r"^(Invalid __(\w+)__ (read|write|atomic)\w* of size (\d+) bytes?"
                   r"|Misaligned .*|Out-of-range .*|Invalid .*)$")
_AT = re.compile(r"^\s*at (.+?) in (.+)$")
_THREAD = re.compile(r"^\s*by thread \(([\d,]+)\) in block \(([\d,]+)\)")
_ADDR = re.compile(r"^\s*Address (0x[0-9a-f]+)|^\s*Access to (0x[0-9a-f]+)", re.IGNORECASE)
_NEAR = re.compile(r"^\s*and is (.+)$")


def parse_memcheck(text: str) -> list[dict[str, Any]]:
    """Memcheck errors in ``text`` (compute-sanitizer's log), in order: dicts with ``error``
    (the headline), ``space``/``access``/``size`` when given, ``kernel`` and ``location``
    (``file.py:line``), ``thread`` and ``block`` (x,y,z lists), ``address`` and ``nearest``
    (e.g. ``1 bytes after the nearest allocation at 0x... of size 32 bytes``) and ``text``."""
    errors: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        if not raw.startswith("="):
            continue
        line = _PREFIX.sub("", raw, count=1).rstrip()
        head = _HEAD.match(line.strip()) if line and not line.startswith(" ") else None
        if head and not line.strip().startswith("ERROR SUMMARY"):
            current = {"error": line.strip()}
            if head.group(2):
                current.update(space=head.group(2), access=head.group(3),
                               size=int(head.group(4)))
            errors.append(current)
            continue
        if current is None:
            continue
        if (m := _AT.match(line)) and "kernel" not in current:
            current["kernel"], current["location"] = m.group(1), m.group(2).strip()
        elif m := _THREAD.match(line):
            current["thread"] = [int(v) for v in m.group(1).split(",")]
            current["block"] = [int(v) for v in m.group(2).split(",")]
        elif m := _ADDR.match(line):
            current["address"] = m.group(1) or m.group(2)
        elif m := _NEAR.match(line):
            current["nearest"] = m.group(1).strip()
        elif not line.strip():
            current = None
    for e in errors:
        parts = [e["error"]]
        if "kernel" in e:
            parts.append(f"at {e['kernel']} in {e['location']}")
        if "thread" in e:
            parts.append("by thread ({}) in block ({})".format(
                ",".join(map(str, e["thread"])), ",".join(map(str, e["block"]))))
        if "nearest" in e:
            parts.append(f"({e['nearest']})")
        e["text"] = " ".join(parts)
    return errors


def annotate(outcome: dict[str, Any], errors: list[dict[str, Any]]) -> dict[str, Any]:
    """``outcome`` (an Outcome's JSON) with memcheck's ``errors`` recorded on the compiled
    mode and the verdict made ``oob``, unless the interpreter already located the access."""
    if not errors:
        return outcome
    modes = outcome.setdefault("modes", {})
    compiled = modes.setdefault("compiled", {"mode": "compiled", "status": "crash",
                                             "detail": {}, "seconds": 0.0})
    compiled.setdefault("detail", {})["memcheck"] = errors[:10]
    first = errors[0]["text"]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    compiled["status"] = "oob"
    compiled["error"] = f"memcheck: {first}{more}"
    if outcome.get("verdict") not in ("oob", "oob-view"):
        outcome["verdict"] = "oob"
        outcome["message"] = f"compiled: memcheck: {first}{more}"
    return outcome


# -- the sanitized worker, parent side ---------------------------------------------------------


class _Process:
    """What :class:`~fuzzkern.execution.pool.WorkerPool` asks of a worker's process."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen

    def join(self, timeout: float | None = None) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()


class _Conn:
    """JSON lines over the worker's stdin/stdout, with a ``multiprocessing`` Connection's
    ``send``/``poll``/``recv``/``close``. ``recv`` hands each reply to ``on_reply``."""

    def __init__(self, popen: subprocess.Popen[bytes], on_reply: Any = None) -> None:
        self.popen = popen
        self.on_reply = on_reply
        self._buffer = b""

    def send(self, msg: Any) -> None:
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            raise OSError("the sanitized worker's stdin is closed")
        try:
            stdin.write((json.dumps(msg) + "\n").encode())
            stdin.flush()
        except (BrokenPipeError, ValueError) as e:
            raise OSError(str(e)) from e

    def poll(self, timeout: float | None = None) -> bool:
        if b"\n" in self._buffer:
            return True
        stdout = self.popen.stdout
        if stdout is None:
            raise EOFError
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([stdout], [], [], left)
            if not ready:
                return False
            chunk = os.read(stdout.fileno(), 1 << 16)
            if not chunk:
                return True  # EOF: recv raises
            self._buffer += chunk
            if b"\n" in self._buffer:
                return True

    def recv(self) -> Any:
        while b"\n" not in self._buffer:
            if not self.poll(None) or b"\n" not in self._buffer:
                raise EOFError("the sanitized worker closed its output")
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply = json.loads(line)
        return self.on_reply(reply) if self.on_reply is not None else reply

    def close(self) -> None:
        for f in (self.popen.stdin, self.popen.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


class SanitizedWorker:
    """One worker under compute-sanitizer (or under ``prefix``, e.g. nothing, in tests),
    usable as :class:`~fuzzkern.execution.pool.WorkerPool`'s ``worker_factory``."""

    def __init__(self, env: dict[str, str] | None = None, *, sanitizer: str | None = None,
                 prefix: list[str] | None = None, late_report_wait: float = 2.0) -> None:
        self.log_dir = tempfile.mkdtemp(prefix="fuzzkern-memcheck-")
        self.log_path = os.path.join(self.log_dir, "memcheck.log")
        if prefix is None:
            if sanitizer is None:
                raise ValueError("pass sanitizer= (the compute-sanitizer path) or prefix=")
            cmd = memcheck_command(sanitizer, self.log_path)
        else:
            cmd = [*prefix, *WORKER]
        self._log_offset = 0
        self.late_report_wait = late_report_wait
        popen = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env={**os.environ, **SANITIZER_ENV, **(env or {})})
        self.process = _Process(popen)
        self.conn = _Conn(popen, self._annotate)
        self.cases = 0

    def _read_log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                data = f.read()
        except OSError:
            return ""
        self._log_offset += len(data)
        return data.decode(errors="replace")

    def _annotate(self, reply: Any) -> Any:
        # an event of the running case (fuzzkern.execution.progress.notify)
        if not isinstance(reply, dict):
            return reply
        text = self._read_log()
        compiled = reply.get("modes", {}).get("compiled") or {}
        faulted = compiled.get("status") in ("crash", "overflow") or bool(
            compiled.get("detail", {}).get("poisoned"))
        deadline = time.monotonic() + self.late_report_wait
        while faulted and not parse_memcheck(text) and time.monotonic() < deadline:
            time.sleep(0.1)
            text += self._read_log()
        return annotate(reply, parse_memcheck(text))

    def postmortem(self, outcome: dict[str, Any]) -> dict[str, Any]:
        """The outcome of a case during which this worker died, with memcheck's report.

        Without the caching allocator, freeing a tensor after the kernel's fault raises inside
        a destructor and aborts the worker before it replies; memcheck has logged the invalid
        access by then (the sanitizer, the process waited on, has exited)."""
        return annotate(outcome, parse_memcheck(self._read_log()))

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)


def sanitized_pool(sanitizer: str, env: dict[str, str] | None = None) -> Any:
    """A :class:`~fuzzkern.execution.pool.WorkerPool` whose workers run under memcheck."""
    from fuzzkern.execution.pool import WorkerPool

    return WorkerPool(env, worker_factory=lambda e: SanitizedWorker(e, sanitizer=sanitizer))
