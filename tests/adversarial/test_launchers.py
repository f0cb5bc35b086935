"""Attacks through a target's host code and the run's surroundings (issue 35): launchers that
leave daemons behind, exit, kill their parent, move the worker elsewhere, patch the
comparison, print hundreds of megabytes or ignore signals; a full or read-only disk; markup
in an HTML report; a hostile or frozen Redis. Each ends in a clear verdict, within memory and
time limits, with nothing left running."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.adversarial.conftest import (
    KERNELS,
    corpus_entries,
    descendants,
    one_error_line,
    run_limited,
    start,
    survivors,
    tagged,
)

#: a short run (20 cases: a few seconds; the budget is for a busy CI)
RUN = ["--budget", "60s", "--seed", "1", "--no-db", "-j", "1", "-q", "--max-examples", "20"]


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    return tmp_path


def test_processes_a_case_starts_end_with_the_case(project):
    """Attack 6: a launcher that starts a process in a new session and one by a double fork
    with setsid, on every case: none outlives its case, the run is green and says how many it
    killed."""
    tag = f"fuzzkern-daemon-{uuid.uuid4().hex}"
    try:
        res = run_limited(["run", "kernels.py::daemons", *RUN, "--max-examples", "10"], project,
                          timeout=90, extra_env={"FUZZKERN_TEST_TAG": tag})
        time.sleep(1)
        left = tagged(tag)
    finally:
        for pid in tagged(tag):
            os.kill(pid, 9)
    assert res.returncode == 0, res.stdout + res.stderr
    assert left == []
    out = " ".join(res.stdout.split())
    assert "process(es) its cases started were still running when their case ended, and " \
           "were killed" in out
    killed = int(out.split("kernels::daemons: ")[-1].split(" process(es)")[0])
    assert killed >= 2 * 10  # two per case, at least


def test_a_killed_worker_takes_what_its_case_started_along(project):
    """Attack 6: when a case hangs and its worker is killed, the processes the case started
    (in a new session) go with it."""
    (project / "hangs.py").write_text(
        "import os, subprocess, sys\nimport fuzzkern\nfrom fuzzkern import strategies as fks\n"
        "def launch(x):\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # '"
        " + os.environ['FUZZKERN_TEST_TAG']], start_new_session=True)\n"
        "    while True:\n        pass\n"
        "t = fuzzkern.Target(launcher=launch, reference=lambda x: x, timeout=1.0,\n"
        "                    inputs=fks.inputs(x=fks.tensors(('N',), dtypes=['float32'])),\n"
        "                    dims={'N': fks.sizes(max_value=4)})\n")
    tag = f"fuzzkern-daemon-{uuid.uuid4().hex}"
    try:
        res = run_limited(["run", "hangs.py", *RUN, "--max-examples", "3"], project, timeout=90,
                          extra_env={"FUZZKERN_TEST_TAG": tag})
        time.sleep(1)
        left = tagged(tag)
    finally:
        for pid in tagged(tag):
            os.kill(pid, 9)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "hang" in res.stdout and left == []


@pytest.mark.parametrize("target,verdict", [
    ("exits", "error"), ("kills_parent", "crash"), ("chdirs", "kernel-bug"),
    ("monkeypatches", "kernel-bug"), ("floods", "kernel-bug"), ("ignores_signals", "hang"),
    ("raises_unprintable", "error"), ("lowers_recursion_limit", "error"),
    ("lowers_open_files", "error"), ("returns_hostile_subclass", "error")])
def test_misbehaving_launchers_end_in_a_verdict(project, target, verdict):
    """What held: launchers that exit, kill their parent (the fork server), chdir, patch
    torch's and numpy's comparisons, print 550 MB, ignore signals or raise an exception whose
    ``__str__`` recurses, lower the recursion limit or the open-file limit
    (``resource.setrlimit``, the hard one too) or return a tensor whose every torch function
    raises (each once a fuzzkern-limit, status ok: the bug missed): a failure with
    its verdict, saved where the run was started, short output, nothing left running."""
    mark = project / "mark"
    proc = start(["run", f"kernels.py::{target}", *RUN], project,
                 {"FUZZKERN_TEST_MARK": str(mark)})
    pids: set[int] = set()
    deadline = time.monotonic() + 180
    while proc.poll() is None and time.monotonic() < deadline:
        pids |= descendants(proc.pid)
        time.sleep(0.2)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, out + err
    assert f"kernels::{target}: {verdict}" in out, out
    assert len(out) + len(err) < 100_000
    (entry,) = corpus_entries(project / "corpus")
    assert json.loads(entry.read_text())["verdict"] == verdict
    assert survivors(pids - {proc.pid}) == []


@pytest.mark.parametrize("target,named", [
    ("returns_unprintable", "_Unprintable <repr() of a _Unprintable raised RecursionError>"),
    ("returns_itself", "list [tensor(")])
def test_a_launcher_returning_a_hostile_value_is_one_usage_error(project, target, named):
    """A launcher returning a value whose ``repr`` recurses without end (once a
    fuzzkern-limit, status ok, exit 0), or a list that holds itself (once flattened without
    end: the first case ran until the budget, "no case ran"): the usage error names it."""
    res = run_limited(["run", f"kernels.py::{target}", *RUN], project, timeout=180)
    assert res.returncode == 2, res.stdout + res.stderr
    out = " ".join(res.stdout.split())
    assert f"usage error: the launcher returned {named}" in out, out
    assert "fuzzkern-limit" not in out and "Traceback" not in res.stderr


def test_a_worker_that_exits_while_a_child_holds_its_pipe_is_a_crash(project, tmp_path):
    """A case that exits its worker while a process it started (a new session) holds the
    worker's pipe open: no end of file comes, and the case once waited for its 60 s timeout
    or the budget's end (a 60 s budget: the bug missed, status ok). Now a crash, found and
    saved within the case count."""
    import subprocess

    from tests.adversarial.conftest import env, fuzzkern_cmd

    mark, out = tmp_path / "children", tmp_path / "out"
    e = {**env(), "FUZZKERN_TEST_MARK": str(mark)}
    try:  # output to a file: the children hold the worker's copies of fuzzkern's stdout too
        with open(out, "w") as fh:
            rc = subprocess.run(fuzzkern_cmd() + ["run", "kernels.py::exits_leaving_a_child",
                                                  *RUN], cwd=project, stdout=fh,
                                stderr=subprocess.STDOUT, env=e, timeout=240).returncode
    finally:
        for pid in (mark.read_text().split() if mark.exists() else []):
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
    text = out.read_text()
    assert rc == 1, text
    assert "kernels::exits_leaving_a_child: crash" in text, text
    (entry,) = corpus_entries(project / "corpus")
    assert json.loads(entry.read_text())["case"]["dims"]["N"] == 4  # shrunk


def test_a_worker_that_dies_on_its_own_takes_its_cases_processes_with_it(project):
    """A worker that dies by itself (SIGKILL from within: a segfault, the OOM killer) while a
    process its case started is still running: that process, reparented away from the dead
    worker, once held fuzzkern's stdout open (a `fuzzkern run | tee` did not end) and ran on.
    The worker's process group is ended with it: a crash, found and shrunk, output that ends,
    no survivor."""
    mark = project / "mark"
    proc = start(["run", "kernels.py::dies_leaving_a_child", *RUN], project,
                 {"FUZZKERN_TEST_MARK": str(mark)})
    try:
        out, err = proc.communicate(timeout=240)  # ends once every holder of the pipes has
    finally:
        pids = [int(p) for p in (mark.read_text().split() if mark.exists() else [])]
        left = survivors(set(pids))
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
    assert proc.returncode == 1, out + err
    assert "kernels::dies_leaving_a_child: crash" in out, out
    assert pids and left == [], (pids, left)
    (entry,) = corpus_entries(project / "corpus")
    assert json.loads(entry.read_text())["case"]["dims"]["N"] == 4  # shrunk


def test_a_full_disk_is_reported_and_the_failure_kept(project):
    """What held: the corpus cannot be written (no file may grow past 2 KiB: a full disk): the
    failure is reported with the reason it was not saved, exit 1."""
    import resource

    res = run_limited(["run", "kernels.py::wrong", *RUN], project, timeout=90,
                      limits=((resource.RLIMIT_FSIZE, 2048),))
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "kernels::wrong: kernel-bug" in out and "could not save a kernel-bug case" in out
    assert "File too large" in out and corpus_entries(project / "corpus") == []
    assert "NOT SAVED: could not write it to corpus: " in out and "saved: " not in out.replace(
        "NOT SAVED: ", "")


def test_a_read_only_corpus_is_reported_and_the_failure_kept(project):
    """What held: a corpus folder that cannot be created (a read-only file system)."""
    res = run_limited(["run", "kernels.py::wrong", *RUN, "--corpus", "/sys/fuzzkern-corpus"],
                      project, timeout=90)
    out = " ".join(res.stdout.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "kernels::wrong: kernel-bug" in out and "could not save a kernel-bug case" in out


def test_markup_in_an_html_report_is_escaped(project):
    """What held: a launcher's error message with HTML in it is text in the HTML report."""
    (project / "markup.py").write_text(
        "import fuzzkern\nfrom fuzzkern import strategies as fks\n"
        "def launch(x):\n"
        "    raise RuntimeError('<script>alert(1)</script><img src=x onerror=alert(2)>')\n"
        "t = fuzzkern.Target(launcher=launch, reference=lambda x: x,\n"
        "                    inputs=fks.inputs(x=fks.tensors(('N',), dtypes=['float32'])),\n"
        "                    dims={'N': fks.sizes(max_value=4)})\n")
    res = run_limited(["run", "markup.py", *RUN, "--html", "r.html"], project, timeout=90)
    assert res.returncode == 1, res.stdout + res.stderr
    page = (project / "r.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page and "<img src=x" not in page


class _FakeRedis:
    """A TCP server on 127.0.0.1 that accepts connections and then says nothing (frozen) or
    answers every request with ``reply`` (hostile)."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.reply is not None:
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            while conn.recv(4096):
                conn.sendall(self.reply or b"")
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.parametrize("reply", [None, b"\xff\xfe garbage\r\n", b"-ERR no\r\n",
                                   b"$99999999999\r\n"])
def test_a_frozen_or_hostile_redis_is_one_usage_error(project, reply):
    """What held: --db at a server that never answers, or answers garbage: one error line,
    exit 2, within seconds."""
    server = _FakeRedis(reply)
    try:
        began = time.monotonic()
        res = run_limited(["run", "kernels.py::wrong", *RUN[:2], "-j", "1",
                           "--db", f"redis://127.0.0.1:{server.port}/0"], project, timeout=60)
        took = time.monotonic() - began
    finally:
        server.close()
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--db" in one_error_line(res.stderr) and took < 40
    assert corpus_entries(project / "corpus") == []


def test_a_launcher_that_replaces_the_comparison_is_a_failure(project):
    """Issue 42: a launcher assigning ``fuzzkern.judge.oracle.compare`` (always ok) in its
    worker: the run fails (exit 1) naming what was replaced, not 20 passing cases."""
    res = run_limited(["run", "kernels.py::replaces_compare", *RUN], project, timeout=240)
    assert res.returncode == 1, res.stdout + res.stderr
    out = " ".join(res.stdout.split())
    assert "replaced fuzzkern's own fuzzkern.judge.oracle.compare" in out, out
    assert len(corpus_entries(project / "corpus")) == 1


def test_limits_a_case_lowers_are_set_back_or_the_worker_replaced():
    """What a case lowers of its worker's process limits (the recursion limit, open files),
    in this process: each named in words and set back; a hard limit an unprivileged process
    cannot raise again says so (the pool then replaces the worker)."""
    import resource
    import subprocess
    import sys

    from fuzzkern.execution.pool import restore_limits

    before = resource.getrlimit(resource.RLIMIT_NOFILE), sys.getrecursionlimit()
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, before[0][1]))
    sys.setrecursionlimit(200)
    lowered, restored = restore_limits()
    assert (resource.getrlimit(resource.RLIMIT_NOFILE), sys.getrecursionlimit()) == before
    assert restored and lowered == ["the recursion limit to 200 (sys.setrecursionlimit)",
                                    f"resource.RLIMIT_NOFILE to (64, {before[0][1]}) "
                                    "(resource.setrlimit)"]
    assert restore_limits() == ([], True)
    # a hard limit lowered: only a process with CAP_SYS_RESOURCE raises it again (root here
    # has not); the answer says whether it did (if not, the pool starts a new worker)
    code = ("import resource; from fuzzkern.execution.pool import restore_limits; "
            "s, h = resource.getrlimit(resource.RLIMIT_NOFILE); "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 128)); "
            "print(restore_limits()[1], resource.getrlimit(resource.RLIMIT_NOFILE) == (s, h))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out[0] == out[1], out


def test_a_case_that_kills_its_process_group_is_a_crash(project):
    """`os.killpg(0, SIGKILL)` in a case (a library cleaning up "its" process group) killed
    fuzzkern with it: exit 137, the bug unsaved. Workers have process groups of their own:
    a crash, found and saved. (fuzzkern runs in a session of its own here, so that a
    regression kills it, not this test.)"""
    proc = start(["run", "kernels.py::kills_its_group", *RUN], project, start_new_session=True)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err
    assert "kernels::kills_its_group: crash" in out, out
    (entry,) = corpus_entries(project / "corpus")
    assert json.loads(entry.read_text())["case"]["dims"]["N"] == 4
