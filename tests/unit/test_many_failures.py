"""One run reports every distinct failure of a target (verdict family and location), each
shrunk on its own and saved as its own corpus entry; known failures do not stop the search."""

import json
import os
import subprocess
import sys

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.path.join(HERE, "targets", "several_bugs.py")


def _fuzz(tmp_path, budget, **kw):
    (lt,) = loader.load(f"{TARGET}::three_bugs")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=budget, seed=0, explain=False,
                                      corpus=str(tmp_path / "corpus"), **kw)
        return engine.fuzz_target(lt, pool, opts, budget)
    finally:
        pool.close()


def _by_key(result):
    return {f.key: f for f in result.failures if not f.replayed}


def test_every_distinct_failure_is_found_shrunk_and_saved(tmp_path):
    # ended by the third failure, not the clock (the budget is a cap for a loaded machine)
    result = _fuzz(tmp_path, 300.0, max_failures=3)
    found = _by_key(result)
    keys = sorted(found)
    assert len(keys) == 3, keys
    error = next(k for k in keys if k.startswith("error @ ValueError at several_bugs.py:"))
    assert found[error].case.dims == {"N": 5}
    assert found["kernel-bug @ output 0"].case.dims == {"N": 1}
    assert found["kernel-bug @ output 1"].case.dims == {"N": 3}
    # each is its own corpus entry
    paths = {f.corpus_path for f in found.values()}
    assert len(paths) == 3 and all(p and os.path.exists(p) for p in paths)
    # and the run went on after the first failure: all three within one call, shrunk
    assert all(f.shrunk for f in found.values())


def test_the_cap_stops_after_max_failures_and_known_ones_do_not_stop_the_search(tmp_path):
    first = _fuzz(tmp_path, 300.0, max_failures=1)
    assert len(_by_key(first)) == 1
    (known,) = _by_key(first)
    # second run: the corpus entry replays (still failing: known), and the search finds others;
    # a cap of 2 new ones ends it (were the known one counted, it would stop after 1 new)
    second = _fuzz(tmp_path, 300.0, max_failures=2)
    assert [f.key for f in second.failures if f.replayed] == [known]
    new = set(_by_key(second))
    assert known not in new and len(new) == 2, new
    (folder,) = (tmp_path / "corpus").iterdir()
    assert len(list(folder.glob("*.json"))) == 3


def test_cli_max_failures_option(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "fuzzkern", "run", f"{TARGET}::three_bugs", "--budget", "300s",
           "--seed", "1", "--no-db", "--corpus", str(tmp_path / "c"), "--max-failures", "2",
           "--report", str(tmp_path / "r.json"), "-q"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (t,) = report["targets"]
    assert len(t["failures"]) == 2
    bad = subprocess.run(cmd[:-4] + ["--max-failures", "0"], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "fuzzkern: error:" in bad.stderr
