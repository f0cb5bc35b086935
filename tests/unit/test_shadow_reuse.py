"""The float64 shadow's "rounding, not logic" carries over to later cases of the same kernel,
config and failure signature whose errors are no larger (fuzzkern.execution.runner
._RoundingSeen): an accuracy-heavy target keeps its throughput, while a failure, a NaN/inf
mismatch or a larger error is always judged by the shadow again."""

from fuzzkern.execution.runner import _RoundingSeen
from fuzzkern.judge.outcome import Comparison, Mismatch

KEY = ("t", "compiled", (("x", "float16"),), (), (), (0,))


def _real(abs_err, ulp, nonfinite=0):
    return Comparison(ok=False, mismatched=3, total=64, max_abs_error=abs_err,
                      max_rel_error=abs_err, max_ulp_error=ulp, nonfinite_mismatches=nonfinite,
                      first=[Mismatch(output=0, index=(5,), got=1.0, expected=1.0 + abs_err)],
                      tolerance="rtol=1e-3")


def _judged(abs_err, ulp):
    return Comparison(ok=False, mismatched=3, total=64, max_abs_error=abs_err,
                      max_rel_error=abs_err, max_ulp_error=ulp, accuracy=True,
                      first=[Mismatch(output=0, index=(5,), got=1.0, expected=1.0 + abs_err)],
                      explanation="rounding, not logic: the kernel's algorithm computed in "
                      "float64 matches the reference; the kernel is off by 0.01")


def test_a_smaller_error_of_the_same_signature_reuses_the_shadows_rounding():
    seen = _RoundingSeen()
    assert seen.reuse(KEY, _real(0.01, 20)) is None  # nothing judged yet
    seen.record(KEY, "accuracy", _judged(0.01, 20))
    reused = seen.reuse(KEY, _real(0.015, 30))
    assert reused is not None and reused.accuracy
    assert reused.explanation.startswith("rounding, as the float64 shadow found for an earlier")
    assert reused.condition["shadow"]["reused"] is True
    assert reused.max_abs_error == 0.015  # this case's own figures


def test_a_reused_rounding_keeps_its_root_cause_one_finding():
    """The root line the shadow named carries over: the reused case is the same finding
    (failure_key) as the case the shadow ran on, not a second one without a root."""
    import dataclasses

    from fuzzkern.judge.outcome import ModeResult, Outcome, Verdict
    from fuzzkern.judge.verdict import failure_key

    cause = "line k.py:14 `y = (x * r).to(x.dtype) * w`: rounds to fp16"
    judged = dataclasses.replace(_judged(0.01, 20), condition={"shadow": {
        "cause": cause, "accumulates": False, "share": 0.9, "index": [5], "error": 0.01}})
    seen = _RoundingSeen()
    seen.record(KEY, "accuracy", judged)
    reused = seen.reuse(KEY, _real(0.012, 24))
    assert reused is not None and cause in reused.explanation
    assert reused.condition["shadow"] == {"cause": cause, "accumulates": False, "share": 0.9,
                                          "reused": True, "explained_abs": 0.01,
                                          "explained_ulp": 20}
    keys = {failure_key(Outcome(Verdict.ACCURACY, "", modes={
        "interpret": ModeResult("interpret", "accuracy", comparison=c)})) for c in (judged, reused)}
    assert keys == {"accuracy @ root k.py:14"}


def test_larger_errors_nonfinite_values_other_signatures_and_failures_run_the_shadow():
    seen = _RoundingSeen()
    seen.record(KEY, "accuracy", _judged(0.01, 20))
    assert seen.reuse(KEY, _real(0.05, 20)) is None  # more than GROWTH times as large
    assert seen.reuse(KEY, _real(0.001, 2, nonfinite=1)) is None
    assert seen.reuse(KEY[:-1] + ((1,),), _real(0.001, 2)) is None  # another output
    seen.record(KEY, "mismatch", _real(0.001, 2))  # the shadow said: not rounding
    assert seen.reuse(KEY, _real(0.001, 2)) is None
    seen.record(KEY, "precision", _real(0.001, 2))
    assert seen.reuse(KEY, _real(0.001, 2)) is None


def test_the_shadow_runs_again_every_so_many_reuses_and_the_yardstick_is_the_largest():
    seen = _RoundingSeen()
    seen.record(KEY, "accuracy", _judged(0.01, 20))
    uses = 0
    while seen.reuse(KEY, _real(0.01, 20)) is not None:
        uses += 1
    assert uses == _RoundingSeen.EVERY
    seen.record(KEY, "accuracy", _judged(0.004, 8))  # a new run, smaller: the old max stays
    assert seen.reuse(KEY, _real(0.019, 39)) is not None
