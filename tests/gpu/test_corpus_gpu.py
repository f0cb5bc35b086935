"""The corpus on a GPU: entries found in both modes replay compiled, compiled-only entries say
why they cannot replay without a GPU, and reproducers show the failure with ``--mode compiled``.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with ``bench/gpu_suite.sh``.
"""

import os
import subprocess
import sys

import pytest

from fuzzkern.corpus import store as corpus
from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader
from tests import corpus_support

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(__file__)
PLANTED = os.path.join(HERE, "planted_compiled.py")
QUALITY = os.path.join(HERE, "..", "quality", "kernels")
MODES = ("interpret", "compiled")


def _found(spec, tmp_path, budget=60.0):
    (lt,) = loader.load(spec)
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=budget, modes=MODES, seed=0, database=None,
                                      corpus=str(tmp_path / "corpus"), max_failures=1)
        result = engine.fuzz_target(lt, pool, opts, budget)
    finally:
        pool.close()
    assert result.failures, result.error
    return [corpus.load(f.corpus_path) for f in result.failures]


def _repro(entry, tmp_path, *args):
    script = corpus_support.write_repro(entry, str(tmp_path / f"repro_{entry.id}.py"))
    return subprocess.run([sys.executable, script, *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("module", ["floor_grid", "persistent_tiles", "reduction_padding"])
def test_kernel_bug_entry_replays_compiled_and_reproduces_on_the_gpu(module, tmp_path):
    path = os.path.join(QUALITY, f"{module}.py")
    entries = _found(f"{path}::buggy", tmp_path)
    pool = WorkerPool(env=worker_env())
    try:
        for entry in entries:
            assert entry.modes == MODES
            assert entry.environment["gpu"]  # the GPU the compiled mode ran on
            r = corpus_support.replay(entry, pool, modes=("compiled",))
            assert r.status == corpus.STILL_FAILING, r.reason
            fixed = corpus_support.replay(entry, pool, ref=f"{path}::correct")
            assert fixed.status == corpus.NOW_PASSING, fixed.reason
    finally:
        pool.close()
    for entry in entries:
        if entry.outcome.modes["compiled"].status == "ok":
            continue
        proc = _repro(entry, tmp_path, "--mode", "compiled")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "mode: compiled" in proc.stdout
        assert "the failure reproduces" in proc.stdout


def test_compiled_only_entry_replays_on_the_gpu_and_not_in_the_interpreter(tmp_path):
    (entry,) = _found(f"{PLANTED}::lying_hint", tmp_path)
    assert entry.verdict == "compiled-only" and entry.failing_modes == ["compiled"]
    pool = WorkerPool(env=worker_env())
    try:
        assert corpus_support.replay(entry, pool).status == corpus.STILL_FAILING
        # asked for the interpreter alone, replay still runs the mode the entry failed in
        # where this machine can (here, with CUDA: compiled); without CUDA it is a
        # cannot-replay "failed only in compiled mode" (tests/unit/test_corpus.py)
        r = corpus_support.replay(entry, pool, modes=("interpret",))
        assert r.status == corpus.STILL_FAILING, r.reason
    finally:
        pool.close()
    proc = _repro(entry, tmp_path)  # default mode: the failing one, compiled
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mode: compiled" in proc.stdout and "MISMATCH" in proc.stdout
