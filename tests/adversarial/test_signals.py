"""Signals at the worst moments: nothing found is lost, nothing outlives fuzzkern."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.adversarial.conftest import (
    KERNELS,
    corpus_entries,
    descendants,
    start,
    survivors,
    wait_for,
    worker_spinning,
)


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(KERNELS, tmp_path / "kernels.py")
    return tmp_path


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_kill_while_a_case_spins_leaves_no_process(project, sig):
    """Item 3: SIGKILL/SIGTERM of fuzzkern alone while its worker spins at 100% CPU: the
    worker, the fork server and the resource tracker go too."""
    proc = start(["run", "kernels.py::spins", "--budget", "60s", "--no-db", "-j", "1"], project)
    try:
        wait_for(lambda: worker_spinning(proc.pid), 60, "a spinning worker", proc)
        pids = descendants(proc.pid)
        assert len(pids) >= 3
        proc.send_signal(sig)
        proc.communicate(timeout=60)
        if sig == signal.SIGTERM:
            assert proc.returncode == 143
        assert survivors(pids - {proc.pid}) == []
    finally:
        proc.kill()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_to_the_whole_group_is_one_line(project, jobs):
    """Ctrl-C on a terminal sends SIGINT to every process of the group, workers and their
    watchdogs too: the run stops as on a SIGINT to fuzzkern alone (exit 130, the summary),
    with no traceback (each watchdog printed a KeyboardInterrupt one) and nothing left."""
    proc = start(["run", "kernels.py::spins", "kernels.py::wrong", "--budget", "120s",
                  "--no-db", "-j", jobs], project, start_new_session=True)
    try:
        wait_for(lambda: worker_spinning(proc.pid), 90, "a spinning worker", proc)
        pids = descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted by SIGINT" in err and "fuzzkern summary" in out
    assert survivors(pids - {proc.pid}) == []


def test_sigkill_with_two_processes_leaves_nothing_running_or_writing(project):
    """Item 3: with -j 2, SIGKILL of the parent ends both fuzzing processes and their workers
    at once: none finishes its slice or writes the corpus afterwards."""
    mark = project / "found"
    proc = start(["run", "kernels.py::spins", "kernels.py::slow_wrong", "--budget", "120s",
                  "--no-db", "-j", "2"], project,
                 {"FUZZKERN_TEST_MARK": str(mark), "FUZZKERN_TEST_SLOW": "0.5"})
    try:
        wait_for(lambda: worker_spinning(proc.pid) and mark.exists(), 90,
                 "a spinning worker and a failure being shrunk", proc)
        pids = descendants(proc.pid)
        proc.kill()
        proc.communicate(timeout=30)
        assert survivors(pids - {proc.pid}) == []
        time.sleep(2)
        assert corpus_entries(project / "corpus") == []
    finally:
        proc.kill()


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_interrupt_while_shrinking_saves_the_failure(project, sig, code, jobs):
    """Items 3 and 4: a signal while a found failure shrinks stops the run, saves the failure
    shrunk as far as it got (marked unshrunk), prints the summary and exits 128+signal; with
    --seed the example database is off, so the corpus is all there is."""
    mark = project / "found"
    targets = ["kernels.py::slow_wrong"] + (["kernels.py::spins"] if jobs == "2" else [])
    proc = start(["run", *targets, "--budget", "120s", "--seed", "3", "--no-db", "-j", jobs],
                 project, {"FUZZKERN_TEST_MARK": str(mark), "FUZZKERN_TEST_SLOW": "0.5"})
    try:
        # a second failing case has started: the first failure is recorded and Hypothesis is
        # shrinking it (each failing case takes 0.5 s; its launcher runs twice, the second
        # time under the float64 shadow that judges a failed comparison: 2 marks a case)
        wait_for(lambda: mark.exists() and mark.stat().st_size >= 3, 90, "shrinking", proc)
        pids = descendants(proc.pid)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    left = survivors(pids - {proc.pid})  # first: a failing test leaves nothing running either
    assert proc.returncode == code, out + err
    assert "fuzzkern summary" in out and "Traceback" not in err
    assert f"interrupted by {sig.name}" in err
    entries = corpus_entries(project / "corpus")
    assert len(entries) == 1, out + err
    d = json.loads(entries[0].read_text())
    assert d["verdict"] == "kernel-bug" and d["shrunk"] is False
    assert d["case"]["dims"]["N"] > 3
    assert left == []


def test_kill_loop_over_concurrent_writers(tmp_path):
    """Item 8: writers SIGKILLed at random moments mid-write: every visible entry is whole
    (loads, inputs match their checksums), and the next scan sweeps the dead writers' .tmp
    files."""
    import random
    import subprocess
    import sys

    from fuzzkern.corpus import store as corpus

    corpus_dir = tmp_path / "corpus"
    code = (
        "import sys\n"
        "from tests.unit import _corpus_writers as w\n"
        "from fuzzkern.corpus import store as corpus\n"
        "i = int(sys.argv[1])\n"
        "while True:\n"
        "    i += 1\n"
        "    corpus.save(sys.argv[2], w.TARGET_ID, w.REF, w.case_for(i, n=50_000),\n"
        "                w.outcome(), modes=('interpret',))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]),
                                         env.get("PYTHONPATH", "")])
    rng = random.Random(0)
    folder = corpus_dir / corpus.target_dirname("tests.corpus.writers")
    for rnd in range(4):
        before = len(list(folder.glob("*.json"))) if folder.exists() else 0
        procs = [subprocess.Popen([sys.executable, "-c", code, str(rnd * 100_000 + k * 10_000),
                                   str(corpus_dir)], env=env) for k in range(3)]
        try:
            wait_for(lambda b=before: folder.exists() and len(list(folder.glob("*.json"))) > b + 2,
                     120, "writers at work")
            time.sleep(rng.random())  # then kill them wherever they are
        finally:
            for p in procs:
                p.kill()
                p.wait()
    scanned = corpus.scan(corpus_dir)
    assert scanned, "no writer got an entry out"
    for _path, entry in scanned:
        assert not isinstance(entry, Exception), entry
        corpus.check_storages(entry)
    assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]


def test_a_case_that_clears_its_parent_death_signal_does_not_outlive_fuzzkern(project):
    """Issue 42: the case calls prctl(PR_SET_PDEATHSIG, 0) and spins; fuzzkern is SIGKILLed:
    the worker's watchdog (a sibling, outside the worker's reach) kills it within seconds."""
    mark = project / "worker-pid"
    proc = start(["run", "kernels.py::clears_pdeathsig", "--budget", "120s", "--no-db", "-j",
                  "1"], project, {"FUZZKERN_TEST_MARK": str(mark)})
    try:
        wait_for(lambda: mark.exists() and mark.read_text().strip(), 120, "the spinning case",
                 proc)
        worker = int(mark.read_text())
        pids = descendants(proc.pid)
        assert worker in pids
        proc.kill()
        proc.communicate(timeout=60)
        assert survivors(pids - {proc.pid}, wait=15) == []
    finally:
        proc.kill()
