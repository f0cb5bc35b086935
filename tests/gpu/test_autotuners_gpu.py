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
    (kernel,) = used[0]
    count = detail["config_counts"][kernel]
    assert count > 1
    # one shape twice, two forced configs: @libentry's cached kernel does not stand in
    a, b = torch.randn(48, 40, device="cuda"), torch.randn(40, 24, device="cuda")
    for index in (1, count - 1):
        detail = {}
        with forced_configs({kernel: index}, [detail]):
            torch.testing.assert_close(flag_gems.mm(a, b), a @ b, atol=1e-2, rtol=1e-2)
        assert detail["configs_used"] == {kernel: index}
    assert calls == []


def test_a_compiled_search_discovers_the_kernel_and_draws_its_configs():
    (lt,) = loader.load(f"{SUITE}::mm")
    seen = []

    def on_event(kind, result, outcome):
        compiled = outcome.modes.get("compiled") if outcome is not None else None
        if kind == "case" and compiled is not None and compiled.status == "ok":
            seen.append((compiled.detail.get("configs_used"), compiled.detail.get("compiles")))

    opts = engine.CampaignOptions(budget=300, modes=("compiled",), seed=0, max_examples=24,
                                  amortize=0.0)
    pool = WorkerPool()
    try:
        result = engine.fuzz_target(lt, pool, opts, 300, on_event)
    finally:
        pool.close()
    assert result.error is None and len(seen) >= 12, (result.error, result.cases, seen)
    assert len(result.discovered) == 1, result.discovered  # flag_gems.mm's kernel
    (kernel,) = result.discovered
    assert all(used and kernel in used for used, _ in seen), seen
    assert len({used[kernel] for used, _ in seen}) >= 3, seen  # drawn after the first case
    # benchmarking would compile every config of a new tuning key at once
    assert max(compiles or 0 for _, compiles in seen) <= 6, seen
