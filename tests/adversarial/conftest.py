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


def start(args: list[str], cwd: Path, extra_env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    e = env()
    e.update(extra_env or {})
    return subprocess.Popen(fuzzkern_cmd() + args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e)


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
