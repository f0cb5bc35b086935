"""The float64 shadow (fuzzkern/execution/interpreter/shadow.py) and its verdict
(fuzzkern/judge/precision.py):
the kernel's own algorithm without rounding, and rounding told apart from logic."""

from __future__ import annotations

import time

import pytest
import torch

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.case.model import Case, TensorCase, Values
from fuzzkern.execution.interpreter.core import interpreter_mode
from fuzzkern.execution.interpreter.shadow import ExactReference, ShadowRun, shadow_mode
from fuzzkern.execution.runner import _Run, outcome_of, run_case
from fuzzkern.judge.outcome import Verdict
from fuzzkern.judge.verdict import failure_key
from tests.unit.targets import shadow_kernels as k


def _shadowed(launcher, *args):
    run = ShadowRun()
    with interpreter_mode(), shadow_mode(run):
        out = launcher(*args)
    values, covered = run.output(out)
    return values, covered, run


def test_the_shadow_is_the_kernel_without_rounding():
    x = torch.full((2, 64), 100.0)
    x[:, 10] = torch.tensor([-8.7e-5, 1.1e-4])
    w = torch.full((64,), 3.0)
    w[10] = -862
    x, w = x.half(), w.half()
    with interpreter_mode():
        real = k.rms_llama(x, w).double()
    values, covered, run = _shadowed(k.rms_llama, x, w)
    exact = k.rms_reference(x.double(), w.double())
    assert bool(covered.all()) and run.limits == []
    assert torch.allclose(values, exact, rtol=1e-12, atol=0)
    assert (real - exact).abs()[:, 10].max() > 1e-6  # the real kernel rounds to fp16 subnormals
    cast = next(s for s in run.sites.values() if ".to(dt)" in s.source)
    assert cast.subnormal and cast.worst_relative > 0.01 and not cast.accumulates


def test_the_shadow_memory_carries_a_stored_value_into_the_next_launch():
    x = torch.linspace(-3, 3, 100).half()
    values, covered, _ = _shadowed(k.two_pass, x)
    assert bool(covered.all())
    # the fp16 scratch buffer between the launches is kept unrounded: x * 0.1 * 3 in float64
    assert torch.allclose(values, x.double() * 0.1 * 3, rtol=1e-15, atol=0)
    # memory the host changed between launches is read as memory holds it
    changed, _, _ = _shadowed(k.two_pass_host_change, x)
    scratch = (x.double() * 0.1).half() + 1
    assert torch.equal(changed, scratch.double() * 3)


def test_what_cannot_be_shadowed_is_said():
    _, _, run = _shadowed(k.abs_by_bits, torch.tensor([-1.5, 2.0, -0.0]))
    assert any("bitcast" in why for why in run.limits)


def test_the_shadow_keeps_each_dtypes_range():
    values, _, run = _shadowed(k.square, torch.tensor([300.0, 1.5]).half())
    assert torch.isinf(values[0]) and values[1] == 2.25  # 9e4 overflows fp16, as compiled
    assert run.overflows and "fp16 overflows at shadow_kernels.py:" in run.overflows[0]


def test_the_exact_reference_keeps_float64():
    x = torch.randn(4, 3, dtype=torch.float64)
    with ExactReference():
        outs = [x.float(), x.half(), x.to(torch.float16), x.to(dtype=torch.bfloat16),
                torch.zeros(2, dtype=torch.float32), torch.softmax(x, -1, dtype=torch.float32),
                x.type(torch.float32), torch.arange(3).float()]
    assert all(o.dtype == torch.float64 for o in outs)
    assert torch.equal(outs[0], x)


def _target(launcher, reference, spec, **kw):
    return fuzzkern.Target(
        launcher=launcher, reference=reference,
        inputs=fks.inputs(**{n: fks.tensors(dims, dtypes=[dt]) for n, (dims, dt) in spec.items()}),
        dims={d: fks.sizes(max_value=8192) for dims, _ in spec.values() for d in dims}, **kw)


def _judged(target, sizes, tensors, **options):
    spec = {n: TensorCase.build(tuple(t.shape), str(t.dtype).removeprefix("torch."))
            for n, t in tensors.items()}
    opts = {"modes": ["interpret"], **options}
    run = _Run(target, Case(sizes, spec), opts, base=dict(tensors))
    return outcome_of(target, {"interpret": run.interpret()}, opts, time.perf_counter())


LN = {"x": (("M", "N"), "float32"), "w": (("N",), "float32"), "b": (("N",), "float32")}


def _layer_norm_inputs():
    """A row 1% wide around 1327 with element 78 near the mean and its weight 4036 (found by
    search: the one-pass fp32 mean's rounding, amplified by the cancellation)."""
    g = torch.Generator().manual_seed(20)
    c = float(10 ** (2 + 2 * torch.rand(1, generator=g)))
    x = c + torch.randn(1, 113, generator=g) * c * 0.01
    x[0, 78] = x[0].mean() * (1 + 0.005 * (torch.rand(1, generator=g) - 0.5))
    w = torch.randn(113, generator=g)
    w[78] = 4036
    return {"x": x, "w": w, "b": torch.zeros(113)}


def test_a_correct_one_pass_layer_norm_is_rounding_not_a_kernel_bug():
    t = _target(k.layer_norm, k.layer_norm_reference, LN)
    inputs = _layer_norm_inputs()
    outside = _judged(t, {"M": 1, "N": 113}, inputs, shadow=False)
    assert outside.verdict == Verdict.KERNEL_BUG  # the rules from outside alone
    o = _judged(t, {"M": 1, "N": 113}, inputs)
    assert o.verdict == Verdict.ACCURACY and not o.failed, o.message
    assert "rounding, not logic" in o.message and "shadow_kernels.py:" in o.message
    facts = o.modes["interpret"].comparison.condition["shadow"]
    assert facts["shadow_passes"] and facts["share"] > 0.5 and not facts["accumulates"]
    # a target whose logic is its rounding opts out: the outside rules judge
    off = _judged(_target(k.layer_norm, k.layer_norm_reference, LN, shadow=False),
                  {"M": 1, "N": 113}, inputs)
    assert off.verdict == Verdict.KERNEL_BUG


def _eps_bug_judged():
    t = _target(k.layer_norm_eps_bug, k.layer_norm_reference, LN)
    g = torch.Generator().manual_seed(1)
    inputs = {"x": torch.randn(2, 113, generator=g) * 1e-3, "w": torch.randn(113, generator=g),
              "b": torch.zeros(113)}
    return _judged(t, {"M": 2, "N": 113}, inputs)


def test_a_logic_bug_stays_a_kernel_bug_and_says_the_shadow_disagrees():
    o = _eps_bug_judged()
    assert o.verdict == Verdict.KERNEL_BUG
    assert "computed in float64 (the kernel's own algorithm without rounding) the kernel is " \
           "still off" in o.message and "not rounding" in o.message


GEMV = {"a": (("M", "K"), "float16"), "x": (("K",), "float16")}


def _gemv_case():
    return Case({"M": 2, "K": 4096}, {
        "a": TensorCase.build((2, 4096), "float16", values=Values(7, "normal")),
        "x": TensorCase.build((4096,), "float16", values=Values(8, "normal"))})


def test_an_fp16_accumulator_is_a_precision_bug_at_its_line():
    o = run_case(_target(k.gemv_fp16_acc, lambda a, x: a @ x, GEMV), _gemv_case(),
                 {"modes": ["interpret"]})
    assert o.verdict == Verdict.PRECISION_BUG and o.failed, o.message
    assert "`acc += a.to(ACC_DTYPE) * x.to(ACC_DTYPE)`: accumulates in fp16" in o.message
    facts = o.modes["interpret"].comparison.condition["shadow"]
    assert facts["accumulates"] and facts["share"] >= 0.5
    assert facts["error"] > 8 * facts["native_error"]  # beyond torch at fp16, which uses fp32
    outside = run_case(_target(k.gemv_fp16_acc, lambda a, x: a @ x, GEMV), _gemv_case(),
                       {"modes": ["interpret"], "shadow": False})
    assert outside.verdict == Verdict.ACCURACY  # the outside rules let it through
    fixed = run_case(_target(k.gemv_fp32_acc, lambda a, x: a @ x, GEMV), _gemv_case(),
                     {"modes": ["interpret"]})
    assert fixed.verdict == Verdict.PASS


@pytest.mark.parametrize("launcher", [k.two_pass])
def test_a_passing_case_never_runs_the_shadow(launcher, monkeypatch):
    from fuzzkern.execution.interpreter import shadow

    def boom(*a, **kw):
        raise AssertionError("the shadow ran")

    monkeypatch.setattr(shadow, "find_shadow", boom)
    t = _target(launcher, lambda x: x * 0.1 * 3, {"x": (("N",), "float32")})
    o = _judged(t, {"N": 50}, {"x": torch.linspace(-1, 1, 50)})
    assert o.verdict == Verdict.PASS


def test_host_code_runs_in_the_shadow_and_its_rounding_is_a_site():
    """The launcher computes softmax on the host and stores it in fp16 for the kernel: in the
    shadow that host code runs at float64 too (HostShadow), so the shadow passes, and the root
    line is the launcher's own cast to fp16."""
    spec = {"dy": (("M", "N"), "float16"), "x": (("M", "N"), "float16")}
    case = Case({"M": 2, "N": 384}, {
        "dy": TensorCase.build((2, 384), "float16", values=Values(3, "negative")),
        "x": TensorCase.build((2, 384), "float16", values=Values(1003, "large"))})
    t = _target(k.softmax_backward, k.softmax_backward_reference, spec)
    o = run_case(t, case, {"modes": ["interpret"]})
    assert o.verdict == Verdict.ACCURACY, o.message
    facts = o.modes["interpret"].comparison.condition["shadow"]
    assert facts["shadow_passes"] and not facts.get("host_reads")
    assert "shadow_kernels.py:175" in facts["cause"] and not facts["accumulates"]
    assert "torch.softmax(x.float(), dim=-1).to(x.dtype)" in o.message


def test_compiled_code_is_judged_against_its_twin_and_what_gpu_math_adds():
    from fuzzkern.judge.precision import twin_within

    shadow = torch.tensor([1.0, 1e-3], dtype=torch.float64)
    interpreted = shadow + torch.tensor([2e-7, 0.0], dtype=torch.float64)
    bad = torch.tensor([True, True])
    close = (shadow + torch.tensor([1e-6, 5e-10], dtype=torch.float64)).float()
    far = (shadow + torch.tensor([1e-6, 1e-6], dtype=torch.float64)).float()
    assert twin_within(close, interpreted, shadow, bad, torch.float32)
    # 1e-6 at the second element: the interpreter is exact there and an ulp is 1e-10
    assert not twin_within(far, interpreted, shadow, bad, torch.float32)
    # unless GPU math (the probes' spread) moves that element by about as much
    level = torch.tensor([0.0, 2e-7], dtype=torch.float64)
    assert twin_within(far, interpreted, shadow, bad, torch.float32, level)
    # elements that did not fail are not judged
    assert twin_within(far, interpreted, shadow, torch.tensor([True, False]), torch.float32)


def test_a_number_where_the_shadow_holds_nan_is_never_compiled_rounding():
    """Compiled code's tl.maximum returns 0 for max(NaN, 0) where the interpreter and the
    shadow propagate the NaN: a dropped NaN, which no rounding explains (it was accuracy)."""
    from fuzzkern.judge.precision import twin_within

    nan = float("nan")
    shadow = torch.tensor([nan, 1.0], dtype=torch.float64)
    interpreted = torch.tensor([nan, 1.0], dtype=torch.float64)
    bad = torch.tensor([True, False])
    assert not twin_within(torch.tensor([0.0, 1.0]), interpreted, shadow, bad, torch.float32)
    assert twin_within(torch.tensor([nan, 1.0]), interpreted, shadow, bad, torch.float32)


# -- issue 40: one class per root cause, every mode, host code, the shadow's own failures -----

TVD = {"p": (("N",), "bfloat16"), "q": (("N",), "bfloat16")}


def _tvd_inputs():
    g = torch.Generator().manual_seed(3)
    return {name: torch.softmax(torch.randn(4096, generator=g), 0).to(torch.bfloat16)
            for name in ("p", "q")}


def test_a_bf16_sum_is_a_precision_bug_at_its_line_in_every_mode():
    """Liger's tvd: bf16 terms summed by tl.sum in bf16. The interpreter now rounds the partial
    sums as compiled code does, so it fails as compiled did (1.4e-3 relative), and the shadow
    names the sum's line: precision-bug, judged the same for a compiled-only run's outputs."""
    t = _target(k.tvd, k.tvd_reference, TVD)
    inputs = _tvd_inputs()
    o = _judged(t, {"N": 4096}, inputs)
    assert o.verdict == Verdict.PRECISION_BUG and o.failed, o.message
    assert "`tl.store(LOSS, tl.sum(0.5 * tl.abs(p - q), axis=0))`: accumulates in bf16" in \
        o.message
    # the same root line in fp16 and at another length: the same class, one failure
    half = {n: v.half()[:2048] for n, v in inputs.items()}
    o16 = _judged(_target(k.tvd, k.tvd_reference, {n: (("N",), "float16") for n in TVD}),
                  {"N": 2048}, half)
    assert o16.verdict == Verdict.PRECISION_BUG, o16.message
    assert failure_key(o16) == failure_key(o) == "precision-bug @ root shadow_kernels.py:212"
    # a run that asked for compiled mode alone: its outputs judged by the same shadow
    opts = {"modes": ["compiled"]}
    spec = {n: TensorCase.build((4096,), "bfloat16") for n in inputs}
    run = _Run(t, Case({"N": 4096}, spec), opts, base=dict(inputs))
    with interpreter_mode():
        got = k.tvd(**{n: v.clone() for n, v in inputs.items()})
    result = run._judge("compiled", run.reference(), (got,), {}, 0.0, None, None)
    assert result.status == "precision", result.comparison.explanation
    # a target that does not run in the interpreter: the finding says why the shadow is silent
    only = _target(k.tvd, k.tvd_reference, TVD, modes=("compiled",))
    run = _Run(only, Case({"N": 4096}, spec), opts, base=dict(inputs))
    result = run._judge("compiled", run.reference(), (got,), {}, 0.0, None, None)
    o = outcome_of(only, {"compiled": result}, opts, time.perf_counter())
    assert o.verdict == Verdict.KERNEL_BUG
    assert "the float64 shadow cannot judge it (the target does not run in the interpreter" \
        in o.message


def rms_inline_case():
    """The one-line Llama cast with normalized values in fp16's subnormal range (row 0's first
    element 1000 makes the others' normalized values ~1e-5), weighted by 2000."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 256, generator=g)
    x[:, 1:41] = torch.linspace(1e-3, 3e-3, 40)
    x[:, 0] = 1000
    w = torch.randn(256, generator=g)
    w[1:41] = 2000
    t = _target(k.rms_inline, k.rms_reference_fp32,
                {"x": (("M", "N"), "float16"), "w": (("N",), "float16")})
    return t, {"x": x.half(), "w": w.half()}


def test_a_cast_on_an_accumulating_line_is_accuracy_naming_the_cast_and_subnormals():
    """Llama-style RMSNorm with `(xf * rstd).to(x.dtype) * w` on one line: operands made by
    other instructions of the same line are no accumulation, so the class is accuracy, the line
    named and its subnormal values said."""
    t, inputs = rms_inline_case()
    o = _judged(t, {"M": 2, "N": 256}, inputs)
    assert o.verdict == Verdict.ACCURACY and not o.failed, o.message
    assert "(xf * rstd).to(x.dtype) * w" in o.message and "subnormal range" in o.message
    facts = o.modes["interpret"].comparison.condition["shadow"]
    assert not facts["accumulates"] and facts["share"] > 0.5


def rms_inline_bf16_case():
    """The same Llama cast in bf16, under a tolerance of about one bf16 rounding (bf16's
    default band holds the cast's 1-2 ulps): normal values, no subnormal range."""
    t, inputs = rms_inline_case()
    bf16 = {"x": (("M", "N"), "bfloat16"), "w": (("N",), "bfloat16")}
    t = _target(k.rms_inline, k.rms_reference_fp32, bf16,
                tolerance=fuzzkern.Tolerance(rtol=2**-9, atol=1e-5))
    return t, {n: v.float().bfloat16() for n, v in inputs.items()}


def test_the_llama_cast_is_one_accuracy_finding_in_fp16_and_bf16_in_both_modes():
    """One root cause, one class: `(xf * rstd).to(x.dtype) * w` is accuracy naming that line
    in fp16 (its values in fp16's subnormal range said) and in bf16 (nothing subnormal said),
    one failure key, and the same when the outputs are judged as a compiled-only run's."""
    keys = set()
    for (t, inputs), subnormal in ((rms_inline_case(), True), (rms_inline_bf16_case(), False)):
        dtype = "fp16" if subnormal else "bf16"
        o = _judged(t, {"M": 2, "N": 256}, inputs)
        assert o.verdict == Verdict.ACCURACY and not o.failed, o.message
        assert "(xf * rstd).to(x.dtype) * w, mask=mask)`: rounds to " + dtype in o.message
        assert ("values in fp16's subnormal range" in o.message) is subnormal, o.message
        assert "subnormal" in o.message or not subnormal
        assert "accumulate" not in o.message
        keys.add(failure_key(o))
        opts = {"modes": ["compiled"]}
        spec = {n: TensorCase.build(tuple(v.shape), str(v.dtype).removeprefix("torch."))
                for n, v in inputs.items()}
        run = _Run(t, Case({"M": 2, "N": 256}, spec), opts, base=dict(inputs))
        with interpreter_mode():
            got = k.rms_inline(**{n: v.clone() for n, v in inputs.items()})
        result = run._judge("compiled", run.reference(), (got,), {}, 0.0, None, None)
        compiled = outcome_of(t, {"compiled": result}, opts, time.perf_counter())
        assert compiled.verdict == Verdict.ACCURACY, compiled.message
        keys.add(failure_key(compiled))
    assert keys == {"accuracy @ root shadow_kernels.py:195"}


def test_an_output_host_code_made_is_shadowed():
    """The launcher subtracts two fp16 row sums in torch: where they cancel, the output is far
    off, and the shadow (host code at float64) judges it: rounding at the kernel's store."""
    g = torch.Generator().manual_seed(3)
    x = (100 + torch.randn(3, 512, generator=g)).half()
    y = (x.double() + torch.randn(3, 512, generator=g) * 1e-2).half()
    t = _target(k.sums_difference, k.sums_difference_reference,
                {"x": (("M", "N"), "float16"), "y": (("M", "N"), "float16")})
    outside = _judged(t, {"M": 3, "N": 512}, {"x": x, "y": y}, shadow=False)
    assert outside.verdict == Verdict.KERNEL_BUG  # the outside rules alone
    o = _judged(t, {"M": 3, "N": 512}, {"x": x, "y": y})
    assert o.verdict == Verdict.ACCURACY, o.message
    facts = o.modes["interpret"].comparison.condition["shadow"]
    assert "limits" not in facts and facts["shadow_passes"]
    assert "`tl.store(S + row, tl.sum(x, axis=0))`" in facts["cause"]


def test_a_failure_of_the_shadow_itself_is_said_and_judged_as_before(monkeypatch):
    from fuzzkern.execution.interpreter import shadow

    def broken(*a, **kw):
        return [][1]  # the IndexError a shadow once raised

    monkeypatch.setattr(shadow, "find_shadow", broken)
    o = _eps_bug_judged()
    assert o.verdict == Verdict.KERNEL_BUG
    assert "the shadow failed (IndexError" in o.message and "test_shadow.py" in o.message


def test_a_library_refusing_the_environment_is_unsupported_here():
    spec = {"x": (("N",), "float32")}
    o = _judged(_target(k.refuses_this_gpu, lambda x: x, spec), {"N": 8}, {"x": torch.ones(8)})
    assert o.verdict == Verdict.UNSUPPORTED and not o.failed
    assert o.message.startswith("unsupported here") and "Please upgrade Triton" in o.message
    o = _judged(_target(k.refuses_the_input, lambda x: x, spec), {"N": 8}, {"x": torch.ones(8)})
    assert o.verdict == Verdict.ERROR and o.failed


def test_an_unexplained_compiled_difference_accuses_no_race():
    from fuzzkern.judge.causes import Cause, attributed
    from fuzzkern.judge.outcome import Outcome

    o = Outcome(Verdict.COMPILED_ONLY, "only the compiled kernel disagrees with the reference")
    plain = attributed(o, [], compiled_only=True)
    assert plain.verdict == Verdict.COMPILED_ONLY and "unexplained" in plain.message
    assert "race" not in plain.message and "compiler bug" not in plain.message
    proven = attributed(o, [Cause("nondeterministic", "the result changes between launches of "
                                  "the same binary (atomics or a race)")], compiled_only=True)
    assert proven.verdict == Verdict.NONDETERMINISTIC


def test_host_operations_keep_float64_in_the_shadow_memory():
    """x * 3 and an in-place += 0.1 in fp16 host code: the shadow holds their float64 values,
    memory their correct rounding, and each line is a rounding site."""
    from fuzzkern.execution.interpreter.shadow import HostShadow

    run = ShadowRun()
    x = torch.tensor([1.0, 2.0 ** -12, 3.0], dtype=torch.float16)

    def launcher(x):
        y = x * 3
        y += 0.1
        return y

    with HostShadow(run):
        y = launcher(x)
    values, covered = run.output(y)
    want = x.double() * 3 + 0.1
    assert covered.all() and torch.allclose(values, want, rtol=1e-12, atol=0)
    assert torch.equal(y, want.half())
    assert len(run.sites) == 2 and not run.host_unwidened


def test_a_narrow_sum_overflowing_to_inf_is_the_same_precision_bug():
    """Statistics in fp16: the sum of squares overflows to inf where the float64 shadow is
    finite. Rounding at the sum's line alone gives that inf, so the class is the line's
    (precision-bug), not a range event judged from outside."""
    x = torch.full((2, 64), 200.0, dtype=torch.float16)
    x[1] = 0.5
    t = _target(k.rms_fp16_stats, k.rms_stats_reference, {"x": (("M", "N"), "float16")})
    o = _judged(t, {"M": 2, "N": 64}, {"x": x})
    assert o.verdict == Verdict.PRECISION_BUG, o.message
    assert "`ms = tl.sum(x * x, axis=0) / N`" in o.message and "NaN/inf" in o.message
    assert "it is inf at out[0] where the reference gives" in o.message, o.message
    assert "off by 0 " not in o.message


def test_the_root_lines_kind_decides_the_class_whatever_its_share():
    """An fp16 accumulation named as the root is a precision-bug whether rounding there alone
    gives 70% of one case's error or 39% of another's (Liger's group_norm `dB += tl.sum(g)`
    came out both ways); a cast root stays accuracy at any share."""
    from fuzzkern.judge.outcome import Comparison, Mismatch
    from fuzzkern.judge.precision import ShadowFindings, judge_shadow

    def real():
        return Comparison(ok=False, mismatched=1, total=8, max_abs_error=0.01,
                          max_rel_error=0.01, max_ulp_error=30,
                          first=[Mismatch(output=0, index=(2,), got=1.0, expected=1.01)],
                          tolerance="rtol=1e-3")

    shadow_ok = Comparison(ok=True, mismatched=0, total=8, tolerance="rtol=1e-3")
    statuses = set()
    for share in (0.7, 0.39, 0.05):
        for accumulates, line in ((True, "k.py:169 `dB += tl.sum(g)`: accumulates in fp16"),
                                  (False, "k.py:12 `y = x.to(tl.float16)`: rounds to fp16")):
            found = ShadowFindings(comparison=shadow_ok, where=(0, (2,)), error=0.01,
                                   cause="line " + line, share=share, accumulates=accumulates)
            status, c = judge_shadow(real(), found, limits=[])
            statuses.add((accumulates, status))
            assert line in c.explanation
    assert statuses == {(True, "precision"), (False, "accuracy")}
