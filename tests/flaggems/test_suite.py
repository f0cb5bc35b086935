"""examples/flaggems: FlagGems 5.0.2 entry points run in Triton's interpreter from a plain
target file, with no shim: each target declares the GPU FlagGems is written for (its wrappers
enter ``torch.cuda.device``, ask for the SM count, size launch caches by the device count) and
its simplest case passes; ``fuzzkern run --assume-gpu`` does the same for a target file that
imports FlagGems at module level."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
from hypothesis import find, settings

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.target import loader

PINNED = "5.0.2"
try:
    VERSION: str | None = importlib.metadata.version("flag_gems")
except importlib.metadata.PackageNotFoundError:
    VERSION = None

pytestmark = [
    pytest.mark.skipif(VERSION is None, reason="FlagGems is not installed (pip install "
                       f"--no-deps flag_gems=={PINNED} sqlalchemy==2.0.48)"),
    pytest.mark.skipif(VERSION is not None and VERSION != PINNED,
                       reason=f"the suite is written for FlagGems {PINNED}, not {VERSION}"),
    pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU answers for itself here "
                       "(bench/gpu_suite.sh flaggems runs the suite compiled)"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SUITE = os.path.join(ROOT, "examples", "flaggems", "flaggems_targets.py")
#: Triton 3.7 removed block pointers, which FlagGems' generated pointwise code loads through
BLOCK_POINTERS = tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 7)
POINTWISE = {"exp", "rsqrt", "sigmoid", "silu", "gelu", "gelu_tanh", "add", "mul"}
#: a few of each kind, cheap in the interpreter (var_mean autotunes over many configs)
CHEAP = ["exp", "add", "mul", "sum_dim", "argmax", "log_softmax", "layer_norm", "rms_norm",
         "group_norm", "mm", "addmm", "bmm"]


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def test_the_suite_covers_matmul_reductions_norms_and_pointwise():
    names = {lt.target.id.removeprefix("flaggems.") for lt in loader.load(SUITE)}
    assert len(names) >= 15
    assert {"mm", "addmm", "bmm"} <= names
    assert {"sum_dim", "amax", "argmax", "var_mean", "softmax", "log_softmax"} <= names
    assert {"layer_norm", "rms_norm", "group_norm"} <= names
    assert {"exp", "rsqrt", "add", "mul", "gelu"} <= names
    assert all(lt.target.assume_gpu == "H200" for lt in loader.load(SUITE))


@pytest.mark.parametrize("name", CHEAP)
def test_simplest_case_runs_in_the_interpreter(pool, name):
    (lt,) = loader.load(f"{SUITE}::{name}")
    case = find(lt.target.cases(), lambda c: True, settings=settings(database=None))
    outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 120.0)
    if name in POINTWISE and not BLOCK_POINTERS:
        assert outcome.verdict == "compile-error", outcome.message
        assert "Block pointers have been removed" in outcome.message
    else:
        assert outcome.verdict == "pass", (case.describe(), outcome.message)


def _run(*args: str, cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fuzzkern", "run", *args, "--modes",
                           "interpret", "--no-db", "--no-corpus", "-j", "1", "--seed", "0"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_fuzzkern_run_fuzzes_flaggems_from_the_example_file(tmp_path):
    done = _run(f"{SUITE}::mm", f"{SUITE}::softmax", "--max-examples", "6", "--budget", "90s",
                cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "flaggems.mm" in done.stdout and "flaggems.softmax" in done.stdout


def test_assume_gpu_lets_a_target_file_import_flaggems_at_module_level(tmp_path):
    path = tmp_path / "plain_targets.py"
    path.write_text(textwrap.dedent("""
        import os
        os.environ.setdefault("GEMS_VENDOR", "nvidia")  # FlagGems' own vendor setting
        import flag_gems
        import fuzzkern
        from fuzzkern import strategies as fks

        amax = fuzzkern.Target(
            launcher=lambda x: flag_gems.amax(x, [1]), reference=lambda x: x.amax(1),
            inputs=fks.inputs(x=fks.tensors(("N", "H"), dtypes=["float32"],
                                            values=fks.values(specials=False))),
            dims={"N": fks.sizes(max_value=4), "H": fks.sizes(max_value=32)})
    """))
    refused = _run(str(path), "--max-examples", "1", "--budget", "60s", cwd=str(tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Torch not compiled with CUDA enabled" in refused.stdout + refused.stderr
    done = _run(str(path), "--max-examples", "3", "--budget", "60s", "--assume-gpu", "H200",
                cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "assuming an NVIDIA H200 (--assume-gpu)" in done.stdout
