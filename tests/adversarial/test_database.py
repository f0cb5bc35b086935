"""Attacks through the example database (issue 42): a folder database holding a FIFO, a link
to /dev/zero or a key folder that links elsewhere; a Redis server that floods once it has
answered PING, or answers ``+OK`` to everything. Each is skipped or refused in one line and
the run goes on and finds the bug, within memory and time limits."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.adversarial.conftest import KERNELS, corpus_entries, run_limited
from tests.adversarial.test_launchers import _FakeRedis

#: no --seed: a seeded run leaves the example database alone
RUN = ["run", "kernels.py::wrong", "--budget", "120s", "-j", "1", "-q", "--max-examples", "40"]


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    return tmp_path


def _found(res, project: Path) -> None:
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert len(corpus_entries(project / "corpus")) == 1


@pytest.mark.parametrize("attack", ["fifo", "dev-zero", "key-folder-link"])
def test_a_hostile_folder_database_is_skipped(project, tmp_path, attack):
    """Every value file of a used database replaced: a FIFO (would block a read forever), a
    link to /dev/zero (endless bytes), or each key folder a link to a folder outside the
    database (once written through: Hypothesis saved the run's examples there). The run
    reads and writes none of them, finds the bug, and ends within its limits."""
    outside = tmp_path / "outside"
    outside.mkdir()
    db = project / "db"
    _found(run_limited([*RUN, "--db", str(db)], project, timeout=180), project)
    shutil.rmtree(project / "corpus")
    keys = [k for k in db.iterdir() if k.is_dir()]
    assert keys
    for key in keys:
        if attack == "key-folder-link":
            shutil.rmtree(key)
            key.symlink_to(outside)
            continue
        for value in list(key.iterdir()):
            value.unlink()
            if attack == "fifo":
                os.mkfifo(value)
            else:
                value.symlink_to("/dev/zero")
    began = time.monotonic()
    res = run_limited([*RUN, "--db", str(db)], project, timeout=180)
    _found(res, project)
    assert time.monotonic() - began < 170
    assert list(outside.iterdir()) == []


class _OddRedis(_FakeRedis):
    """A TCP server on 127.0.0.1 that answers PING with ``+PONG`` and then floods (``flood``),
    or answers ``+OK`` to every request (``ok``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.flooded = 0
        super().__init__(b"")

    def _answer(self, conn: socket.socket) -> None:
        pinged = False
        try:
            while data := conn.recv(65536):
                # one reply per command (a client may send several in one write)
                for command in data.split(b"\r\n*"):
                    if self.kind == "ok":
                        conn.sendall(b"+OK\r\n")
                    elif b"HELLO" in command:  # the handshake as Redis answers it (RESP3)
                        conn.sendall(b"%1\r\n$5\r\nproto\r\n:3\r\n")
                    elif b"PING" in command:
                        pinged = True
                        conn.sendall(b"+PONG\r\n")
                    elif not pinged:
                        conn.sendall(b"+OK\r\n")
                    else:  # an endless array of short strings: memory without end
                        self.flooded += 1
                        conn.sendall(b"*2147483647\r\n")
                        chunk = b"+x\r\n" * 65536
                        while True:
                            conn.sendall(chunk)
        except OSError:
            pass


@pytest.mark.parametrize("kind", ["flood", "ok"])
def test_an_odd_redis_is_refused_in_one_line_and_the_run_goes_on(project, kind):
    """A Redis that floods after its handshake, or says +OK to everything: one warning line
    naming it, the run goes on with the local database and finds the bug (exit 1)."""
    server = _OddRedis(kind)
    try:
        res = run_limited([*RUN, "--db", f"redis://127.0.0.1:{server.port}/0"], project,
                          timeout=180)
    finally:
        server.close()
    _found(res, project)
    warnings = [ln for ln in res.stderr.splitlines() if "example database" in ln]
    assert len(warnings) == 1, res.stderr
    assert warnings[0].startswith("fuzzkern: warning: the example database redis://127.0.0.1")
    assert ("a reply of more than" in warnings[0] if kind == "flood"
            else "refused: " in warnings[0]), warnings[0]
    if kind == "flood":
        assert server.flooded >= 1


def test_a_real_redis_still_works(project):
    """A real redis-server on 127.0.0.1: no warning, the bug found, then found again from the
    database."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        for _ in range(2):
            res = run_limited([*RUN, "--db", f"redis://127.0.0.1:{port}/0"], project,
                              timeout=180)
            _found(res, project)
            assert "example database" not in res.stderr, res.stderr
    finally:
        server.terminate()
        server.wait(10)
