"""A run that cannot test a target in the modes it has skips the target at once, with one line
saying why: a target declared compiled-only under ``--modes interpret``, a kernel whose every
launch runs inline assembly the interpreter cannot run. A run whose every target was skipped
exits 2."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets", "interpreter_skips.py")


def _fuzz(name: str, modes: tuple[str, ...] = ("interpret",)) -> engine.TargetResult:
    (lt,) = loader.load(f"{TARGETS}::{name}")
    pool = WorkerPool()
    try:
        # a skip ends the target: the budget is only what it would cost not to skip, large
        # enough that the one case a skip needs ends in it at load 8 on 2 cores
        opts = engine.CampaignOptions(budget=600.0, seed=0, modes=modes)
        return engine.fuzz_target(lt, pool, opts, 600.0)
    finally:
        pool.close()


def test_a_compiled_only_target_in_interpreter_mode_is_skipped_before_any_case():
    start = time.monotonic()
    result = _fuzz("compiled_only")
    assert result.cases == 0 and result.counts == {}
    assert result.skipped is not None and "none of the modes asked" in result.skipped
    assert "--modes interpret" in result.skipped and "'compiled'" in result.skipped
    assert time.monotonic() - start < 60  # not its budget of 600 s


def test_inline_asm_on_every_launch_skips_the_target_after_one_case():
    result = _fuzz("inline_asm")
    assert result.cases == 1 and result.counts == {"unsupported": 1}
    assert result.skipped is not None
    assert result.skipped.startswith("the interpreter cannot run it: inline assembly")
    assert "interpreter_skips.py:" in result.skipped and result.failures == []


def test_a_run_whose_every_target_was_skipped_exits_2_with_one_line_each(tmp_path):
    res = subprocess.run([sys.executable, "-m", "fuzzkern", "run", TARGETS, "--modes",
                          "interpret", "--budget", "600s", "--no-db", "--no-corpus"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "400"})  # a skip's line unwrapped
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    skipped = [ln for ln in out.splitlines() if ln.startswith("skipped ")]
    assert len(skipped) == 2, out
    assert any("compiled_only" in ln and "none of the modes asked" in ln for ln in skipped)
    assert any("inline_asm" in ln and "inline assembly" in ln for ln in skipped)
    assert "every target was skipped" in out
