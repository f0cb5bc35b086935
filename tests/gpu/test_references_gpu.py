"""Float64 references on the GPU for batches of value variants (fuzzkern.execution.references)
against the CPU's, with real kernels: the built-in targets and examples/liger, every variant
judged both ways (the parity sample widened to all of them), 0 disagreements, the same
variants run with the same verdicts and the same first failure as with the CPU reference, and
the device path actually taken. Marked ``gpu``: skipped without CUDA."""

import os

import pytest

from fuzzkern.execution import references
from fuzzkern.search import engine
from fuzzkern.target import loader

pytestmark = pytest.mark.gpu

COMPILED = {"modes": ["compiled"]}
LIGER = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "liger",
                     "liger_targets.py")


def _builtin(name):
    (lt,) = [t for t in loader.load_all([]) if t.ref.endswith(f":{name}")]
    return lt


def _both_ways(lt, cases, variants, monkeypatch, against_cpu=True, options=COMPILED):
    """Run each case's variants with device references, every one also judged with the CPU's
    (the parity sample widened to all): no disagreement; with ``against_cpu``, the same run
    with the CPU reference only says the same (deterministic kernels). Device-judged and
    judged-both-ways counts."""
    from fuzzkern.execution.runner import run_variants

    monkeypatch.setattr(references, "FIRST", 10**9)
    monkeypatch.setattr(references, "_parity", {})
    device = judged = 0
    for case in cases:
        ours = run_variants(lt.target, case, options, 120.0, variants)
        parity = ours.get("parity", {})
        assert parity.get("disagreed", 0) == 0, (lt.ref, case.describe(), parity)
        assert "differed" not in parity.get("off", ""), (lt.ref, parity)
        device += parity.get("device", 0)
        judged += parity.get("judged", 0)
        if not against_cpu:
            continue
        theirs = run_variants(lt.target, case, {**COMPILED, "reference_device": "cpu"},
                              120.0, variants)
        assert "parity" not in theirs
        assert (ours["ran"], ours["verdicts"]) == (theirs["ran"], theirs["verdicts"]), lt.ref
        assert ("failed" in ours) == ("failed" in theirs), lt.ref
        if "failed" in theirs:
            a, b = theirs["failed"], ours["failed"]
            assert (b["index"], b["outcome"]["verdict"], b["outcome"]["message"]) == \
                (a["index"], a["outcome"]["verdict"], a["outcome"]["message"])
    return device, judged


@pytest.mark.parametrize("name", ["vector_add", "matmul", "matmul_relu", "matmul_persistent",
                                  "matmul_autotuned", "axpy", "row_sum"])
def test_builtin_targets_judge_the_same_with_device_references(name, monkeypatch):
    lt = _builtin(name)
    device, judged = _both_ways(lt, engine.draw_cases(lt.target, 4), 32, monkeypatch)
    assert device > 0 and judged == device  # the device path was taken, every one checked


def test_liger_targets_judge_the_same_with_device_references(monkeypatch):
    # (Liger's backward kernels may use atomics: two runs of one variant need not agree, so
    # each variant's two verdicts come from the same run, the parity check's.) Its references
    # run autograd, which vmap cannot stack, on small inputs: "auto" keeps them on the CPU, so
    # "device" puts each variant's on the GPU, to check their verdicts there.
    pytest.importorskip("liger_kernel")
    totals = {}
    for lt in loader.load(LIGER):
        if "compiled" not in lt.target.modes:
            continue
        # one case each (the second drawn: the first is the simplest), within 10 minutes
        totals[lt.ref.split(":")[-1]] = _both_ways(lt, engine.draw_cases(lt.target, 2)[1:],
                                                   16, monkeypatch, against_cpu=False,
                                                   options={**COMPILED,
                                                            "reference_device": "device"})
    print(totals)
    assert totals
    # every target whose variants passed their first batch decided on the device
    assert sum(1 for device, _ in totals.values() if device > 0) >= len(totals) // 2
    assert all(judged == device for device, judged in totals.values())
