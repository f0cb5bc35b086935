"""Quality: every planted bug's corpus entry replays as still failing, its standalone reproducer
shows the failure in a fresh process, and fixing the kernel flips the replay to passing.

For each module of ``tests/quality/kernels``: fuzz ``buggy`` through the real engine (seed 0,
no example database) with a corpus folder, so the shrunk failure is saved; replay the entry
(``still-failing``, same verdict); replay it against the module's ``correct`` twin, the fixed
kernel (``now-passing``); write its reproducer and run it with a fresh interpreter.
"""

import importlib
import os
import re
import subprocess
import sys

import pytest

from fuzzkern.corpus import store as corpus
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader
from tests import corpus_support

pytestmark = pytest.mark.slow

HERE = os.path.dirname(__file__)
KERNELS = os.path.join(HERE, "kernels")
MODULES = sorted(f[:-3] for f in os.listdir(KERNELS) if f.endswith(".py") and f != "__init__.py")


def _reproduce(entry, folder):
    script = corpus_support.write_repro(entry, os.path.join(folder, f"repro_{entry.id}.py"))
    text = open(script).read()
    assert not re.search(r"^\s*(import|from)\s+fuzzkern\b", text, re.MULTILINE)
    proc = subprocess.run([sys.executable, script, "--timeout", "3"], cwd=folder,
                          capture_output=True, text=True, timeout=180)
    shown = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 1, shown
    assert "the failure reproduces" in proc.stdout, shown
    if entry.verdict == "kernel-bug":
        assert "MISMATCH" in proc.stdout, shown
    elif entry.verdict.startswith("oob"):
        assert "OUT-OF-BOUNDS WRITE" in proc.stdout or "MISMATCH" in proc.stdout, shown
    elif entry.verdict == "hang":
        assert "HANG" in proc.stdout, shown
    elif entry.verdict == "input-mutated":
        assert "INPUT MUTATED" in proc.stdout, shown
    elif entry.verdict == "overflow":
        assert "overflow" in proc.stdout + proc.stderr, shown


@pytest.mark.parametrize("module", MODULES)
def test_entry_replays_reproduces_and_flips_when_fixed(module, tmp_path):
    path = os.path.join(KERNELS, f"{module}.py")
    (lt,) = loader.load(f"{path}::buggy")
    corpus_dir = tmp_path / "corpus"
    pool = WorkerPool()
    entries = []
    try:
        spec = importlib.import_module(f"tests.quality.kernels.{module}")
        # ended by its first failure, not the clock (the budget is a cap for a loaded machine)
        opts = engine.CampaignOptions(budget=300.0, seed=0, database=None,
                                      corpus=str(corpus_dir), max_failures=1,
                                      debug=getattr(spec, "DEBUG", False))
        result = engine.fuzz_target(lt, pool, opts, 300.0)
        assert result.error is None, result.error
        assert result.corpus_problems == []
        assert result.failures, f"{module}: nothing found"
        for failure in result.failures:
            assert failure.corpus_path is not None
            assert os.path.dirname(failure.corpus_path) == str(
                corpus_dir / f"quality.{module}.buggy")
            entry = corpus.load(failure.corpus_path)
            assert entry.case == failure.case
            assert entry.verdict == failure.outcome.verdict
            assert entry.explanations == failure.explanations
            entries.append(entry)

            again = corpus_support.replay(entry, pool)
            assert again.status == corpus.STILL_FAILING, again.reason
            assert again.outcome is not None and again.outcome.verdict == entry.verdict

            fixed = corpus_support.replay(entry, pool, ref=f"{path}::correct")
            assert fixed.status == corpus.NOW_PASSING, fixed.reason
        # the corpus holds exactly these entries, and scanning it finds them
        scanned = corpus.scan(str(corpus_dir), lt.id)
        assert sorted(p for p, _ in scanned) == sorted(e.path for e in entries)
    finally:
        pool.close()
    for entry in entries:
        _reproduce(entry, str(tmp_path))
