"""The float64 shadow judging compiled code (issue 40), each in seconds on a real GPU: a
compiled-only run is judged by the interpreter's shadow on the CPU, the class of a root cause is
the interpreter's, host code is shadowed, and nondeterminism needs launches of one binary that
differ.

Marked ``gpu``: skipped without CUDA. Run on the GPU machine with
``pytest tests/gpu/test_shadow_gpu.py -m gpu``.
"""

import time

import pytest
import torch

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.execution.compiled import run_compiled
from fuzzkern.execution.runner import _Run, outcome_of
from fuzzkern.judge.outcome import Verdict
from fuzzkern.judge.verdict import failure_key
from tests.unit.targets import shadow_kernels as k
from tests.unit.test_shadow import (
    TVD,
    _target,
    _tvd_inputs,
    rms_inline_bf16_case,
    rms_inline_case,
)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _judged(target, sizes, tensors, modes, **options):
    spec = {n: TensorCase.build(tuple(t.shape), str(t.dtype).removeprefix("torch."))
            for n, t in tensors.items()}
    opts = {"modes": list(modes), **options}
    run = _Run(target, Case(sizes, spec), opts, base=dict(tensors))
    results = {}
    for mode in modes:
        results[mode] = run.interpret() if mode == "interpret" else run_compiled(run)
    return outcome_of(target, results, opts, time.perf_counter())


def test_a_bf16_sum_is_the_same_precision_bug_compiled_only_and_interpreted():
    """Liger's tvd: compiled alone (no interpret mode asked for) the failure is judged by the
    shadow, a precision-bug at the sum's line, the same class and failure as interpreted; the
    interpreter's twin is within a few bf16 roundings of the GPU's sum."""
    t = _target(k.tvd, k.tvd_reference, TVD)
    inputs = _tvd_inputs()
    compiled = _judged(t, {"N": 4096}, inputs, ["compiled"])
    interpreted = _judged(t, {"N": 4096}, inputs, ["interpret"])
    assert compiled.verdict == Verdict.PRECISION_BUG, compiled.message
    assert interpreted.verdict == Verdict.PRECISION_BUG, interpreted.message
    assert failure_key(compiled) == failure_key(interpreted)
    facts = compiled.modes["compiled"].comparison.condition["shadow"]
    assert facts["accumulates"] and facts["shadow_passes"]
    # the twin: compiled's error and the interpreter's are of one size (not 0 against 1e-3)
    assert facts["interpreter_error"] > facts["error"] / 8


def test_a_cast_is_accuracy_compiled_as_interpreted():
    t, inputs = rms_inline_case()
    o = _judged(t, {"M": 2, "N": 256}, inputs, ["compiled"])
    assert o.verdict in (Verdict.ACCURACY, Verdict.PASS), o.message
    if o.verdict == Verdict.ACCURACY:
        assert "(xf * rstd).to(x.dtype) * w" in o.message


def test_the_llama_cast_in_bf16_is_the_same_accuracy_finding_compiled():
    """The cast's class and root line do not depend on the dtype: bf16 under a tolerance of
    about one bf16 rounding, compiled alone, is accuracy at the same line (or passes)."""
    t, inputs = rms_inline_bf16_case()
    o = _judged(t, {"M": 2, "N": 256}, inputs, ["compiled"])
    assert o.verdict in (Verdict.ACCURACY, Verdict.PASS), o.message
    if o.verdict == Verdict.ACCURACY:
        assert failure_key(o) == "accuracy @ root shadow_kernels.py:195", o.message
        assert "subnormal" not in o.message


def test_an_output_host_code_made_is_shadowed_compiled():
    g = torch.Generator().manual_seed(3)
    x = (100 + torch.randn(3, 512, generator=g)).half()
    y = (x.double() + torch.randn(3, 512, generator=g) * 1e-2).half()
    t = _target(k.sums_difference, k.sums_difference_reference,
                {"x": (("M", "N"), "float16"), "y": (("M", "N"), "float16")})
    o = _judged(t, {"M": 3, "N": 512}, {"x": x, "y": y}, ["compiled"])
    assert o.verdict == Verdict.ACCURACY, o.message
    assert "limits" not in o.modes["compiled"].comparison.condition["shadow"]


def test_repeated_launches_of_one_binary_that_agree_are_not_nondeterministic():
    """--repeat-compiled compares launches of the identical binary: a deterministic kernel
    is never called nondeterministic (FlagGems' cross_entropy was, three times)."""
    t = _target(k.tvd, k.tvd_reference, TVD)
    o = _judged(t, {"N": 4096}, _tvd_inputs(), ["compiled"], repeat_compiled=4)
    assert o.verdict != Verdict.NONDETERMINISTIC, o.message
    assert "nondeterministic" not in o.modes["compiled"].detail


def test_launches_of_one_binary_that_differ_are_nondeterministic_with_the_values():
    """Proven nondeterminism: a float sum through tl.atomic_add from 1024 programs, launched
    8 times as one binary with one config on one input; the finding shows two differing
    values at one element and which launches gave them."""
    import fuzzkern
    from fuzzkern import strategies as fks
    from tests.gpu.planted_compiled import atomic_sum_launcher

    g = torch.Generator().manual_seed(0)
    x = torch.randn(1 << 17, generator=g) * torch.logspace(-4, 4, 1 << 17)
    t = fuzzkern.Target(launcher=lambda x: atomic_sum_launcher(x, 128),
                        reference=lambda x: x.sum().reshape(1),
                        inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                        dims={"N": fks.sizes(max_value=1 << 17)})
    o = _judged(t, {"N": 1 << 17}, {"x": x}, ["compiled"], repeat_compiled=8)
    assert o.verdict == Verdict.NONDETERMINISTIC, o.message
    spread = o.modes["compiled"].detail["nondeterministic"]
    first = spread["first"][0]
    assert first["first"] != first["other"]
    assert f"out0[0] {first['first']!r} vs {first['other']!r}" in o.message
    assert "of the same binary, config and inputs" in o.message
