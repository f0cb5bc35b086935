"""Sharing findings through a Redis example database, against a real redis-server on loopback:
two ``fuzzkern run`` processes (two machines, in effect), and the pytest plugin's
``--fuzzkern-db``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fuzzkern.search.database import REDIS_KEY_PREFIX, open_database

HERE = os.path.dirname(__file__)
# The buggy kernel ignores x's stride: only a non-contiguous x shows it, so the simplest case
# (contiguous) passes and a run of one case finds nothing on its own.
IGNORED_STRIDE = os.path.join(HERE, "..", "quality", "kernels", "ignored_stride.py") + "::buggy"


def _fuzzkern_run(cwd, *args):
    """``fuzzkern run`` in a process of its own, in ``cwd`` (so no two runs share a corpus:
    what they share must come through the database)."""
    os.makedirs(cwd, exist_ok=True)
    report = os.path.join(cwd, "report.json")
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", os.path.abspath(IGNORED_STRIDE), "-q",
         "--modes", "interpret", "--report", report, *args],
        cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    with open(report) as fh:
        return proc.returncode, json.load(fh)


def _no_corpus():
    help_text = subprocess.run([sys.executable, "-m", "fuzzkern", "run", "--help"],
                               capture_output=True, text=True).stdout
    return ["--no-corpus"] if "--no-corpus" in help_text else []


def test_a_failure_found_on_one_machine_replays_first_on_another(redis_url, tmp_path):
    no_corpus = _no_corpus()
    # Machine A fuzzes until it finds the bug and shrinks it; the failing case goes to Redis.
    # (Its first failure ends it: the budget is only a cap for a loaded machine.)
    rc, first = _fuzzkern_run(tmp_path / "a", "--db", redis_url, "--budget", "120s",
                              "--max-failures", "1", *no_corpus)
    assert rc == 1, first
    (failure,) = first["failures"]
    assert failure["case"]["dims"] == {"N": 2}

    # Control: one case on its own (the simplest, contiguous one) does not find it.
    rc, control = _fuzzkern_run(tmp_path / "c", "--no-db", "--max-examples", "1",
                                "--budget", "60s", *no_corpus)
    assert rc == 0 and control["failures"] == [], control

    # Machine B, allowed the same single case, replays A's failure from Redis first.
    rc, second = _fuzzkern_run(tmp_path / "b", "--db", redis_url, "--max-examples", "1",
                               "--budget", "60s", *no_corpus)
    assert rc == 1, second
    (found,) = second["failures"]
    assert found["case"] == failure["case"]
    # ... as its first case, before any case of its own (the runs after it are the
    # minimizer's, confirming nothing smaller fails)
    assert second["targets"][0]["cases"] - second["targets"][0]["minimize_runs"] <= 3


def test_an_unreachable_redis_is_a_usage_error(tmp_path):
    pytest.importorskip("redis")
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", os.path.abspath(IGNORED_STRIDE),
         "--db", "redis://127.0.0.1:1/0", "--budget", "5s"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "cannot reach the Redis database at 'redis://127.0.0.1:1/0'" in proc.stderr


TARGET = '''
import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))  # no mask


def add_bad(x, y):
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 16),)](x, y, out, x.numel(), BLOCK=16)
    return out


bad = fuzzkern.Target(launcher=add_bad, reference=lambda x, y: x + y,
                      inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                                        y=fks.tensors(("N",), dtype_of="x")),
                      dims={"N": fks.sizes(max_value=40)})
'''


def _keys(url):
    db = open_database(url)
    return db.primary.redis.keys(REDIS_KEY_PREFIX + b"*")


def test_pytest_sessions_share_the_redis_database(pytester, redis_url):
    pytester.makepyfile(test_ops=TARGET)
    # the case count binds, not the dev profile's 10 s (a loaded machine runs the same cases)
    result = pytester.runpytest("--fuzzkern-db", redis_url, "--fuzzkern-max-examples", "5",
                                "--fuzzkern-budget", "120s")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"fuzzkern: *; database {redis_url}; corpus corpus"])
    assert _keys(redis_url), "the failing case was not saved to Redis"


def test_the_ci_profile_writes_nothing_to_a_shared_database(pytester, redis_url):
    pytester.makepyfile(test_ops=TARGET)
    result = pytester.runpytest("--fuzzkern-db", redis_url, "--fuzzkern-profile", "ci",
                                "--fuzzkern-max-examples", "5")
    result.assert_outcomes(failed=1)
    assert _keys(redis_url) == []


# -- a Redis that drops mid-run ----------------------------------------------------------------


def test_a_dropped_redis_falls_back_to_the_local_database_with_one_warning(redis_server,
                                                                           tmp_path):
    from fuzzkern.search.database import DatabaseFallbackWarning, open_database

    local = tmp_path / "local"
    db = open_database(redis_server.url, fallback=str(local), connect_timeout=1)
    db.save(b"k", b"on redis")
    assert list(db.fetch(b"k")) == [b"on redis"]
    redis_server.proc.kill()
    redis_server.proc.wait()
    with pytest.warns(DatabaseFallbackWarning, match="dropped .*going on with the local "
                                                     "database") as caught:
        db.save(b"k", b"after the drop")
        assert list(db.fetch(b"k")) == [b"after the drop"]
        db.save(b"k2", b"more")
    assert len(caught) == 1  # once, not per call
    from hypothesis.database import DirectoryBasedExampleDatabase

    assert list(DirectoryBasedExampleDatabase(str(local)).fetch(b"k2")) == [b"more"]


def test_a_campaign_goes_on_when_its_redis_drops(redis_server, tmp_path):
    """`fuzzkern run --db redis://...` whose server dies mid-run: a warning, then the local
    database; the run ends normally (exit 0), not as a configuration error."""
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "fuzzkern", "run", "fuzzkern.targets.builtin:vector_add",
         "fuzzkern.targets.builtin:axpy", "--db", redis_server.url, "--budget", "12s",
         "--no-corpus", "-j", "1", "--heartbeat", "0"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()  # the run has opened the database and started
        assert first.startswith("fuzzkern: 2 target(s)"), first
        time.sleep(2)
        redis_server.proc.kill()
        rest, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = first + rest
    assert proc.returncode == 0, out
    assert "fuzzkern: warning: the example database redis://" in out
    assert "going on with the local database .hypothesis/examples" in out
    # (nothing need be written there: these targets pass, and the case the deadline cuts short
    # is not saved)


def test_a_pytest_session_goes_on_when_its_redis_drops(pytester, redis_server, monkeypatch):
    """The plugin's items after the drop use the local database under the rootdir, with a
    DatabaseFallbackWarning in pytest's warnings summary."""
    monkeypatch.setenv("FUZZKERN_TEST_REDIS_PID", str(redis_server.proc.pid))
    pytester.makeconftest('''
        import os, signal

        def pytest_runtest_setup(item):
            if item.nodeid == "test_ops.py::bad[fuzz]":  # test_first.py used the database
                os.kill(int(os.environ["FUZZKERN_TEST_REDIS_PID"]), signal.SIGKILL)
    ''')
    pytester.makepyfile(test_ops=TARGET)
    pytester.makepyfile(test_first=TARGET)
    result = pytester.runpytest("--fuzzkern-db", redis_server.url, "--fuzzkern-max-examples",
                                "5", "--fuzzkern-budget", "120s", "-p", "no:randomly",
                                "test_first.py", "test_ops.py")
    redis_server.proc.wait(10)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2, result.stdout.str()  # the bug, found both times
    assert "cannot reach the Redis database" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*DatabaseFallbackWarning: the example database redis://*"
                                 "dropped*going on with the local database*"])
    assert (pytester.path / ".hypothesis" / "examples").is_dir()
