"""Messages a newcomer reads (issue 43, point 6): declared output names, a bare assert's source
line, no figure that means nothing (ulps against an exact 0, the sensitivity to an input that
moves nothing), and "overflow" where a finite answer became inf. Real worker and oracle."""

from __future__ import annotations

import math
import os

import torch

from fuzzkern.case.model import Case, Layout, TensorCase
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge import oracle
from fuzzkern.judge.outcome import Outcome
from fuzzkern.target import loader

TARGETS = os.path.join(os.path.dirname(__file__), "..", "fixtures", "message_targets.py")


def _run(name: str, n: int) -> Outcome:
    lt = {t.id.rsplit("::", 1)[-1]: t for t in loader.load(TARGETS)}[name]
    case = Case({"N": n}, {"x": TensorCase.build((n,), "float32", Layout.contiguous(1))})
    pool = WorkerPool()
    try:
        return Outcome.from_json(pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]},
                                          120).to_json())
    finally:
        pool.close()


def test_a_bare_assert_shows_its_source_line():
    outcome = _run("bare_assert", 12)
    assert outcome.failed
    assert "AssertionError: assert x.numel() < 10" in outcome.message, outcome.message
    assert "AssertionError:  " not in outcome.message


def test_declared_output_names_name_the_elements():
    outcome = _run("two", 5)
    assert outcome.failed
    text = outcome.message + "\n" + outcome.modes["interpret"].comparison.summary()
    assert "dC[0]: got" in text and "out1" not in text, text


def test_no_ulps_against_an_exact_zero():
    c = oracle.compare(torch.tensor([1.5, 1.0], dtype=torch.bfloat16),
                       torch.tensor([1.0, 1.0], dtype=torch.float64))
    assert not c.ok and "max 64 ulp" in c.summary(), c.summary()  # (ulps of a nonzero one)
    c = oracle.compare(torch.tensor([1.0, 1.0], dtype=torch.bfloat16),
                       torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert not c.ok and c.max_ulp_error == 0 and "ulp" not in c.summary(), c.summary()


def test_overflow_is_said():
    big = 6e37
    c = oracle.compare(torch.tensor([math.inf, 1.0], dtype=torch.float32),
                       torch.tensor([big, 1.0], dtype=torch.float64))
    assert not c.ok
    assert "(overflow: inf where the exact answer is finite, e.g. out[0] = inf for 6e+37; " in \
        c.summary(), c.summary()
    # a NaN is an overflow only when the judge saw one (else: garbage, an unwritten value)
    c = oracle.compare(torch.tensor([math.nan, 1.0]), torch.tensor([big, 1.0]),
                       names=["y"])
    assert "(nan where the exact answer is finite, e.g. y[0] = nan for 6e+37; " in \
        c.summary(), c.summary()
    c.explanation = "the float64 shadow cannot judge this case (fp32 overflows at k.py:14)"
    assert "overflow: nan where the exact answer is finite" in c.summary(), c.summary()
