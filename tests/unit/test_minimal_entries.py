"""Minimal entries (issue 32, item 7): shrinking has time of its own past the search budget
(bounded, and said in the run's first line); an entry saved unshrunk is shrunk by the next run
that replays it, and replaced; ``fuzzkern replay`` marks an entry that is not minimal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.corpus import store as corpus
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine, schedule
from fuzzkern.target import loader

HERE = os.path.dirname(os.path.abspath(__file__))
PLAIN = os.path.join(HERE, "targets", "plain_targets.py") + "::scale_target"


def test_a_failure_found_late_is_shrunk_in_time_of_its_own():
    """The search ends at the budget; the failure it found is shrunk past it, within the
    shrinking time, and saved shrunk."""
    targets = loader.load(PLAIN)
    budget = 10.0  # a few cases even at load 8 on 2 cores (3 s ran none there)
    opts = engine.CampaignOptions(budget=budget, modes=("interpret",), seed=0, shrink_time=30.0)
    start = time.monotonic()
    (r,) = schedule.run_campaign(targets, opts)
    elapsed = time.monotonic() - start
    (f,) = r.failures
    assert f.shrunk and f.case.dims == {"N": 2}, f.case.describe()
    assert elapsed < budget + 30.0 + schedule.HARD_STOP_GRACE + 10


def _unshrunk_entry(root):
    """A big strided case of the buggy scale target, saved as the budget leaves one: unshrunk."""
    (lt,) = loader.load(PLAIN)
    x = TensorCase.build((13,), "float32", Layout((0,), (3,), (0,), 2, ()),
                         Values(5, "normal", ()))
    case = Case({"N": 13}, {"x": x})
    pool = WorkerPool()
    try:
        outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 60.0)
    finally:
        pool.close()
    assert outcome.failed, outcome.message
    return corpus.save(str(root / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target, shrunk=False)


def _fuzzkern(cwd, *args):
    return subprocess.run([sys.executable, "-m", "fuzzkern", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "COLUMNS": "250"})


def test_replay_marks_an_unshrunk_entry_and_the_next_run_shrinks_it(tmp_path):
    path = _unshrunk_entry(tmp_path)
    replayed = _fuzzkern(tmp_path, "replay", "--target", PLAIN)
    assert replayed.returncode == 1, replayed.stdout
    assert "not minimal" in replayed.stdout, replayed.stdout
    # one case, then the shrink of the replayed entry: the budget (which also sets the shrink's
    # time) is for a loaded machine
    run = _fuzzkern(tmp_path, "run", PLAIN, "--budget", "120s", "--no-db", "--seed", "0",
                    "--max-examples", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "was saved unshrunk; shrunk again to x=float32[2]" in run.stdout, run.stdout
    entries = list((tmp_path / "corpus").rglob("*.json"))
    assert not os.path.exists(path) and len(entries) == 1, entries
    saved = json.loads(entries[0].read_text())
    assert saved["shrunk"] is True and saved["case"]["dims"] == {"N": 2}
    again = _fuzzkern(tmp_path, "replay", "--target", PLAIN)
    assert again.returncode == 1 and "not minimal" not in again.stdout, again.stdout


def test_the_run_says_how_long_it_may_shrink(tmp_path):
    # two counted cases; the budget leaves a loaded machine time for them (2 s could run none)
    res = _fuzzkern(tmp_path, "run", "fuzzkern.targets.builtin:axpy", "--budget", "15s",
                    "--no-db", "--no-corpus", "--max-examples", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "budget 15s (+ up to 20 s to shrink failures)" in res.stdout, res.stdout
    res = _fuzzkern(tmp_path, "run", "fuzzkern.targets.builtin:axpy", "--budget", "15s",
                    "--no-db", "--no-corpus", "--max-examples", "2", "--shrink-time", "0")
    assert "budget 15s, modes" in res.stdout, res.stdout
    res = _fuzzkern(tmp_path, "run", "fuzzkern.targets.builtin:axpy", "--budget", "15s",
                    "--shrink-time", "soon")
    assert res.returncode == 2 and "--shrink-time" in res.stderr, res.stderr
