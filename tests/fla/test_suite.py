"""examples/fla: flash-linear-attention 0.6.0's ops as fuzzkern targets. Every target loads,
its simplest case runs in Triton's interpreter and passes (its chunked ops loop over chunks
with ``for i_t in range(NT)`` and call ``i_t.to(tl.int64)``), and ``fuzzkern run`` fuzzes a
chunked op and a norm from the example file."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest
import triton
from hypothesis import find, settings

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.target import loader

PINNED = "0.6.0"
try:
    VERSION: str | None = importlib.metadata.version("fla-core")
except importlib.metadata.PackageNotFoundError:
    VERSION = None

pytestmark = [
    pytest.mark.skipif(VERSION is None, reason="flash-linear-attention is not installed (pip "
                       f"install --no-deps fla-core=={PINNED} einops==0.8.2)"),
    pytest.mark.skipif(VERSION is not None and VERSION != PINNED,
                       reason=f"the suite is written for fla-core {PINNED}, not {VERSION}"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SUITE = os.path.join(ROOT, "examples", "fla", "fla_targets.py")
CHUNKED = ["chunk_simple_gla", "chunk_gla", "chunk_delta_rule", "chunk_gated_delta_rule",
           "chunk_retention", "chunk_linear_attn"]
NAMES = [lt.ref.rsplit("::", 1)[1] for lt in loader.load(SUITE)]


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def test_the_suite_covers_chunked_recurrent_and_norm_ops_with_backward_passes():
    ids = {lt.target.id.removeprefix("fla.") for lt in loader.load(SUITE)}
    assert len(ids) >= 20
    assert set(CHUNKED) <= ids
    assert {f"{n}.backward" for n in CHUNKED[:4]} <= ids
    assert {"fused_recurrent_simple_gla", "fused_recurrent_gla", "fused_recurrent_delta_rule",
            "fused_recurrent_gated_delta_rule", "fused_recurrent_retention"} <= ids
    assert {"layer_norm", "rms_norm", "group_norm", "l2norm", "rms_norm_gated"} <= ids


@pytest.mark.parametrize("name", NAMES)
def test_simplest_case_runs_in_the_interpreter_and_passes(pool, name):
    (lt,) = loader.load(f"{SUITE}::{name}")
    case = find(lt.target.cases(), lambda c: True, settings=settings(database=None))
    outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 300.0)
    assert outcome.verdict == "pass", (case.describe(), outcome.message)


@pytest.mark.slow
def test_fuzzkern_run_fuzzes_a_chunked_op_and_a_norm_from_the_example_file(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", f"{SUITE}::chunk_simple_gla",
         f"{SUITE}::layer_norm", "--modes", "interpret", "--max-examples", "4", "--budget",
         "180s", "--no-db", "--no-corpus", "-j", "1", "--seed", "0"],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "fla.chunk_simple_gla" in done.stdout and "fla.layer_norm" in done.stdout
    assert "no cases" not in done.stdout


#: the fla-core 0.6.0 bugs of docs/findings.md, each through its standalone reproducer
FINDINGS = {
    "logsumexp_strided": "logsumexp_fwd of a transposed",
    "matmul_tanh_nan": "is nan, expected 1.0",
    "delta_rule_strided_h0_grad": "non-contiguous initial state that requires grad raises",
}


#: reproducers whose kernels loop over a runtime bound (``for _ in range(0, T)``): Triton 3.6's
#: own interpreter raises ``TypeError: only 0-dimensional arrays can be converted to Python
#: scalars`` there (3.9's runs them; fuzzkern's interpreter runs them on both)
LOOPS = {"matmul_tanh_nan", "delta_rule_strided_h0_grad"}
PLAIN_LOOPS = tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 9)


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_each_upstream_bug_still_shows_through_its_reproducer(name):
    if name in LOOPS and not PLAIN_LOOPS and os.environ.get("FLA_REPRO_DEVICE", "cpu") == "cpu":
        pytest.skip(f"Triton {triton.__version__}'s interpreter cannot run the reproducer's "
                    "loop over a runtime bound")
    script = os.path.join(ROOT, "examples", "fla", "repro", f"{name}.py")
    env = {**os.environ, "REPRO_DEVICE": os.environ.get("FLA_REPRO_DEVICE", "cpu")}
    done = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 1, (
        f"{name}.py exited {done.returncode} (0: fixed upstream: update docs/findings.md)\n"
        + done.stdout[-2000:] + done.stderr[-2000:])
    assert "BUG: " in done.stdout and FINDINGS[name] in done.stdout, done.stdout
