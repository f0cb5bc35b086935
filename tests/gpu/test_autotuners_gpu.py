"""Autotuners reached only at run time, compiled on a real GPU: FlagGems' ``flag_gems.mm``
reaches its ``LibTuner`` through ``@libentry``, which no launcher code names. Each case runs
one config, never benchmarked (``Autotuner._bench`` counted in-process; a handful of
compilations per case in the search, where benchmarking would compile every config), the
case says which (``configs_used``), and later cases draw and force a config for it.

Marked ``gpu``: skipped without CUDA (and without FlagGems 5.0.2).
"""

import importlib.metadata
import os

import pytest
import torch

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.introspect import forced_configs
from fuzzkern.search import engine
from fuzzkern.target import loader

try:
    FLAG_GEMS = importlib.metadata.version("flag_gems")
except importlib.metadata.PackageNotFoundError:
    FLAG_GEMS = None

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(FLAG_GEMS is None, reason="FlagGems is not installed (pip "
                                 "install --no-deps flag_gems==5.0.2 sqlalchemy==2.0.48)")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SUITE = os.path.join(ROOT, "examples", "flaggems", "flaggems_targets.py")


def test_flag_gems_mm_runs_one_config_per_case_compiled_never_benchmarked(monkeypatch):
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    import flag_gems
    from triton.runtime.autotuner import Autotuner

    calls = []
    original = Autotuner._bench
    monkeypatch.setattr(Autotuner, "_bench",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    used = []
    for m, n, k in [(3, 5, 7), (64, 32, 16), (33, 17, 9)]:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        detail: dict = {}
        with forced_configs({}, [detail]):  # compiled mode's scope of a case naming none
            c = flag_gems.mm(a, b)
        torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
        used.append(detail.get("configs_used"))
    assert calls == []  # never benchmarked
    assert all(u for u in used), used
    # one shape twice, two forced configs: @libentry's cached kernel does not stand in. Which
    # kernel serves a shape is FlagGems' choice (on Hopper a host-TMA kernel for aligned
    # operands, the general one otherwise): the shape's own kernel is the one forced.
    a, b = torch.randn(48, 40, device="cuda"), torch.randn(40, 24, device="cuda")
    detail = {}
    with forced_configs({}, [detail]):
        flag_gems.mm(a, b)
    (kernel,) = detail["configs_used"]
    count = detail["config_counts"][kernel]
    assert count > 1
    for index in (1, count - 1):
        detail = {}
        with forced_configs({kernel: index}, [detail]):
            torch.testing.assert_close(flag_gems.mm(a, b), a @ b, atol=1e-2, rtol=1e-2)
        assert detail["configs_used"] == {kernel: index}
    assert calls == []


ALIGNED_MM = f"""
import dataclasses, sys
sys.path.insert(0, {os.path.dirname(SUITE)!r})
from flaggems_targets import mm as _mm

# On Hopper FlagGems' host-TMA kernel asserts 16-byte aligned operands: a rejected input
# here (shrinking that error is not what the test is about)
mm = dataclasses.replace(_mm, preconditions=(AssertionError,))
"""


def test_a_compiled_search_discovers_the_kernel_and_draws_its_configs(tmp_path):
    (tmp_path / "aligned_mm.py").write_text(ALIGNED_MM)
    (lt,) = loader.load(f"{tmp_path / 'aligned_mm.py'}::mm")
    seen = []

    def on_event(kind, result, outcome):
        compiled = outcome.modes.get("compiled") if outcome is not None else None
        if kind == "case" and compiled is not None and compiled.status == "ok":
            seen.append((compiled.detail.get("configs_used"), compiled.detail.get("compiles")))

    opts = engine.CampaignOptions(budget=120, modes=("compiled",), seed=0, max_examples=24,
                                  amortize=0.0)
    pool = WorkerPool()
    try:
        result = engine.fuzz_target(lt, pool, opts, 300, on_event)
    finally:
        pool.close()
    assert result.error is None and len(seen) >= 12, (result.error, result.cases, seen)
    # flag_gems.mm's kernels (one per path: general, and on Hopper host TMA and gemv)
    assert result.discovered, result.discovered
    assert all(used and set(used) <= set(result.discovered) for used, _ in seen), seen
    indices = {(k, i) for used, _ in seen for k, i in used.items()}
    assert len(indices) >= 3, seen  # configs drawn after the first case
    # benchmarking would compile every config of a new tuning key at once
    assert max(compiles or 0 for _, compiles in seen) <= 6, seen

