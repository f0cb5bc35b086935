"""Helpers of the adversarial suite: run the installed ``fuzzkern`` CLI in a subprocess, watch
its process tree, send it signals at chosen moments."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
KERNELS = HERE / "kernels.py"


def fuzzkern_cmd() -> list[str]:
    """The installed ``fuzzkern`` script beside this Python, else ``python -m fuzzkern``."""
    exe = Path(sys.executable).parent / "fuzzkern"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("fuzzkern")
    return [found] if found else [sys.executable, "-m", "fuzzkern"]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.pop("FUZZKERN_TEST_SLOW", None)
    e["COLUMNS"] = "200"
    return e


def run(args: list[str], cwd: Path, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(fuzzkern_cmd() + args, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=kw.pop("env", env()), **kw)


def start(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None,
          **kw) -> subprocess.Popen:
    e = env()
    e.update(extra_env or {})
    return subprocess.Popen(fuzzkern_cmd() + args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, **kw)


def descendants(root: int) -> set[int]:
    """``root`` and every process under it (from /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += children.get(p, [])
    return out


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def survivors(pids: set[int], wait: float = 10.0) -> list[str]:
    """Command lines of ``pids`` still running after up to ``wait`` seconds (then killed, so
    a failing test leaves nothing behind either)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(running(p) for p in pids):
        time.sleep(0.2)
    left = []
    for p in pids:
        if running(p):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode()
                left.append(f"{p}: {cmd[:200]}")
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    return left


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None,
             every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"fuzzkern ended before {what}: rc {proc.returncode}\n{out}\n{err}")
        time.sleep(every)
    pytest.fail(f"timed out waiting for {what}")


def worker_spinning(root: int) -> bool:
    """Whether a process under ``root`` is a worker that burns CPU (a spinning case)."""
    for p in descendants(root) - {root}:
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{p}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if b"forkserver" in cmd and fields[0] == "R":
            return True
    return False


def corpus_entries(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*.json") if not p.name.startswith("."))


def one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fuzzkern: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


#: the address space a limited fuzzkern process may take (torch and triton need about 1.5 GiB
#: of it): an attack that makes fuzzkern allocate past it fails the test rather than the machine
MEMORY_LIMIT = 3 * 2**30


def run_limited(args: list[str], cwd: Path, timeout: float = 120, memory: int = MEMORY_LIMIT,
                extra_env: dict[str, str] | None = None,
                limits: tuple[tuple[int, int], ...] = ()) -> subprocess.CompletedProcess:
    """:func:`run` with the address space of fuzzkern (and of its workers, which inherit it)
    limited to ``memory`` bytes and its wall time to ``timeout`` seconds (then the test
    fails: a hang); ``limits``: more ``(resource.RLIMIT_..., value)`` pairs."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        for which, value in limits:
            resource.setrlimit(which, (value, value))

    e = env()
    e.update(extra_env or {})
    try:
        return subprocess.run(fuzzkern_cmd() + args, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=e, preexec_fn=limit)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"fuzzkern {' '.join(args)} ran past {timeout} s (a hang): "
                    f"{(exc.stdout or b'')[-2000:]!r}")


def tagged(tag: str) -> list[int]:
    """The running processes whose command line holds ``tag``."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                if tag.encode() in fh.read() and running(int(d)):
                    found.append(int(d))
        except OSError:
            continue
    return found


def rows(stdout: str) -> dict[str, list[str]]:
    """``fuzzkern replay``'s table: entry file name -> its target, verdict, status and reason
    (cells folded over several lines joined)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) != 5:
            continue
        if cells[0] and cells[3]:  # a row's first line (a status), not a folded one
            current = out.setdefault(Path(cells[0]).name, ["", "", "", ""])
        if current is not None:
            for k, text in enumerate(cells[1:]):
                current[k] = f"{current[k]} {text}".strip() if text else current[k]
    return out
