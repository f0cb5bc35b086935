"""Reproducers on a GPU (issue 32, item 1): a library's autotuner (a subclass of Triton's with
a ``run`` of its own that benchmarks) runs the entry's config and benchmarks nothing in the
compiled mode too, as under fuzzkern, and the script says the recorded failure reproduces.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with ``bench/gpu_suite.sh``.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from fuzzkern.corpus import store as corpus
from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader
from tests import corpus_support

pytestmark = pytest.mark.gpu

KERNEL = '''
import os

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "benchmarked.log")


class LibTuner(Autotuner):
    """A library's autotuner: logs, then benchmarks its configs, on every call."""

    def run(self, *args, **kwargs):
        with open(LOG, "a") as log:
            log.write("benchmarked\\n")
        self.cache.clear()
        return super().run(*args, **kwargs)


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # BUG: ignores x's stride
    tl.store(out_ptr + offs, 3 * x, mask=mask)


scale_kernel = LibTuner(_scale_kernel, _scale_kernel.arg_names,
                        [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=[],
                        reset_to_zero=None, restore_value=None)


def scale(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
'''

TARGET = '''
import fuzzkern
from fuzzkern import strategies as fks
from mykern import scale

scale_t = fuzzkern.Target(launcher=scale, reference=lambda x: 3 * x,
                          dims={"N": fks.sizes(max_value=64)},
                          inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])))
'''


def test_a_library_autotuner_benchmarks_nothing_in_a_compiled_reproducer(tmp_path):
    (tmp_path / "mykern.py").write_text(textwrap.dedent(KERNEL))
    (tmp_path / "targets.py").write_text(textwrap.dedent(TARGET))
    (lt,) = loader.load(f"{tmp_path / 'targets.py'}::scale_t")
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=60.0, modes=("interpret", "compiled"), seed=0,
                                      database=None, corpus=str(tmp_path / "corpus"),
                                      max_failures=1)
        result = engine.fuzz_target(lt, pool, opts, 60.0)
    finally:
        pool.close()
    assert result.failures, result.error
    log = tmp_path / "benchmarked.log"
    assert not log.exists(), "fuzzkern itself ran the library's autotuner"
    entry = corpus.load(result.failures[0].corpus_path)
    script = corpus_support.write_repro(entry, str(tmp_path / "repro.py"))
    proc = subprocess.run([sys.executable, script, "--mode", "compiled"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    shown = proc.stdout + proc.stderr
    assert proc.returncode == 1, shown
    assert "mode: compiled" in shown and "the failure reproduces" in shown
    assert "forced _scale_kernel config[" in shown
    assert not log.exists(), "the reproducer benchmarked: " + shown
