"""Value variants in compiled mode on a real GPU (fuzzkern.execution.runner.run_variants):
a case that compiled is followed by variants in the same worker round trip, a failing variant
is reported and replays alone, and a campaign finds and shrinks a value-dependent bug through
them. Marked ``gpu``: skipped without CUDA."""

import os
import time

import pytest

from fuzzkern.case.model import Case, Layout, TensorCase, Values
from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

VALUE_BUG = os.path.join(os.path.dirname(__file__), "..", "fixtures", "value_bug.py")
COMPILED = {"modes": ["compiled"]}


def _case(n, seed):
    x = TensorCase.build((n,), "float32", Layout.contiguous(1),
                         Values(seed=seed, distribution="normal"))
    return Case({"N": n}, {"x": x})


def test_a_case_that_compiled_is_followed_by_variants_and_a_failing_one_replays():
    (lt,) = loader.load(VALUE_BUG)
    pool = WorkerPool(env=worker_env())
    try:
        case = next(c for c in (_case(16, s) for s in range(100))
                    if pool.run(lt.ref, c.to_json(), COMPILED, 60).verdict == "pass")
        pool.replace()  # a fresh worker: its first case compiles the kernel
        plan = {**COMPILED, "variants": {"share": 1000.0, "until": time.monotonic() + 60}}
        outcome = pool.run(lt.ref, case.to_json(), plan, 60)
        assert outcome.verdict == "pass"
        assert outcome.modes["compiled"].detail["compile_seconds"] > 0
        failed = outcome.variants["failed"]
        assert failed["outcome"]["verdict"] == "kernel-bug"
        assert outcome.variants["ran"] == failed["index"] - 1
        alone = pool.run(lt.ref, case.variant(failed["index"]).to_json(), COMPILED, 60)
        assert alone.verdict == "kernel-bug"
        # nothing compiled: no variants
        again = pool.run(lt.ref, case.to_json(), plan, 60)
        assert again.variants == {} and again.modes["compiled"].detail["compiles"] == 0
    finally:
        pool.close()


def test_a_campaign_finds_and_shrinks_a_value_dependent_bug_with_variants():
    (lt,) = loader.load(VALUE_BUG)
    pool = WorkerPool(env=worker_env())
    try:
        opts = engine.CampaignOptions(budget=60, modes=("compiled",), seed=0, amortize=1.0)
        result = engine.fuzz_target(lt, pool, opts, 60)
        assert [f.outcome.verdict for f in result.failures] == ["kernel-bug"]
        f = result.failures[0]
        assert f.shrunk and f.case.dims["N"] <= 2, f.case.describe()
        assert result.variants > 0 and result.cases > result.variants
        alone = pool.run(lt.ref, f.case.to_json(), COMPILED, 60)
        assert alone.verdict == "kernel-bug"
    finally:
        pool.close()


QUALITY = os.path.join(os.path.dirname(__file__), "..", "quality", "kernels")


@pytest.mark.parametrize("spec", [
    VALUE_BUG, "vector_add", "matmul_autotuned", "row_sum",
    f"{QUALITY}/oob_store.py::buggy", f"{QUALITY}/scratch_input.py::buggy",
    f"{QUALITY}/floor_grid.py::buggy"])
def test_batched_variants_say_what_variants_alone_say_on_the_gpu(spec):
    """Batches (fuzzkern.execution.batch) against one by one, with real kernels: the same
    variants run, the same verdicts, the same first failure (a wrong value, a write past the
    end, a mutated input, an unwritten output)."""
    from fuzzkern.execution.runner import run_variants

    if os.sep in spec:
        (lt,) = loader.load(spec)
    else:
        (lt,) = [t for t in loader.load_all([]) if t.ref.endswith(f":{spec}")]
    for case in engine.draw_cases(lt.target, 4):
        alone = run_variants(lt.target, case, {**COMPILED, "variants": {"batch": False}},
                             60.0, 40)
        batched = run_variants(lt.target, case, COMPILED, 60.0, 40)
        assert batched["batches"] >= 1
        assert (batched["ran"], batched["verdicts"]) == (alone["ran"], alone["verdicts"])
        assert ("failed" in batched) == ("failed" in alone)
        if "failed" in alone:
            a, b = alone["failed"], batched["failed"]
            assert b["index"] == a["index"]
            assert b["outcome"]["verdict"] == a["outcome"]["verdict"]
            assert b["outcome"]["message"] == a["outcome"]["message"]


def test_the_batched_oracle_decides_on_the_gpu_what_it_decides_on_the_cpu(monkeypatch):
    # outputs on the GPU are checked there (torch), on the CPU in numpy: the same decisions,
    # near the formats' edges and with non-finite values on either side
    import math

    import torch

    from fuzzkern.judge import oracle
    from fuzzkern.target.declare import Tolerance

    monkeypatch.setattr(oracle, "DEVICE_ELEMENTS", 0)  # every group on the GPU, however small
    on_device = []
    clear_on = oracle._clear_on

    def spy(o, *args):
        on_device.append(o.device.type)
        return clear_on(o, *args)

    monkeypatch.setattr(oracle, "_clear_on", spy)

    g = torch.Generator().manual_seed(0)
    edges = torch.tensor([0.0, 1.0, 65504.0, 65520.0, 3.4e38, 1e-8, 6e-8, math.inf, -math.inf,
                          math.nan], dtype=torch.float64)
    decided = 0
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        for shape in ((7,), (5, 3)):
            items = []
            for j in range(24):
                exp = torch.randn(shape, generator=g, dtype=torch.float64) * 10 ** (j % 5 - 2)
                if j % 3 == 0:
                    exp.view(-1)[0] = edges[j % len(edges)]
                noise = torch.tensor([0.0, 1e-7, 1e-3, 1e-2])[torch.randint(0, 4, shape,
                                                                            generator=g)]
                out = (exp * (1 + noise)).to(dtype)
                if j % 4 == 1:
                    out.view(-1)[-1] = edges[(j * 7) % len(edges)]
                mag = (exp.abs() * 3,) if j % 2 else None
                items.append(((out,), (exp,), mag))
            for equal_nan in (True, False):
                tol = Tolerance(equal_nan=equal_nan)
                on_cpu = oracle.passes(items, tolerance=tol, reduction_length=16, compiled=True)
                on_device.clear()  # the torch check runs on the CPU too; here, the GPU's
                on_gpu = oracle.passes([((o.cuda(),), e, m) for (o,), e, m in items],
                                       tolerance=tol, reduction_length=16, compiled=True)
                assert on_gpu == on_cpu, (dtype, shape, equal_nan)
                assert on_device and set(on_device) == {"cuda"}
                decided += sum(on_cpu)
    assert 0 < decided < 4 * 2 * 24 * 2  # some cleared, some not
    # a large group goes to the GPU at the default threshold, with the same decisions
    monkeypatch.setattr(oracle, "DEVICE_ELEMENTS", 1 << 17)
    on_device.clear()
    big = torch.randn(32, 8192, generator=g, dtype=torch.float64)
    items = [((b.to(torch.float16),), (b,), None) for b in big]
    items[5] = ((big[5].to(torch.float16) * 1.01,), (big[5],), None)
    on_cpu = oracle.passes(items, compiled=True)
    on_device.clear()
    on_gpu = oracle.passes([((o.cuda(),), e, m) for (o,), e, m in items], compiled=True)
    assert on_gpu == on_cpu and on_cpu.count(False) == 1 and not on_cpu[5]
    assert on_device == ["cuda"]
    # a small group of GPU outputs is checked on the CPU, on the host copies given
    on_device.clear()
    small = [((o[:16].cuda(),), (e[0][:16],), None) for (o,), e, _ in items[:4]]
    asked = []

    def host(j):
        asked.append(j)
        return (small[j][0][0].cpu(),)

    assert oracle.passes(small, compiled=True, host=host) == [True] * 4
    assert on_device == ["cpu"] and sorted(asked) == [0, 1, 2, 3]
