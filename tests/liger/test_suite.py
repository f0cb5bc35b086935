"""examples/liger: every target's simplest case runs in Triton's interpreter and passes (an op
the interpreter cannot run would be ``unsupported`` or ``error`` here)."""

from __future__ import annotations

import os

import pytest
from hypothesis import find, settings

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.target import loader
from tests.liger.test_findings import pytestmark  # noqa: F401  (skip without liger-kernel)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SUITE = os.path.join(ROOT, "examples", "liger", "liger_targets.py")


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool()
    yield p
    p.close()


def test_the_suite_covers_twelve_ops_with_backward_passes():
    targets = loader.load(SUITE)
    assert len(targets) >= 12
    assert sum("backward" in (lt.target.launcher.__code__.co_names or ())
               or "_backward" in lt.target.launcher.__code__.co_names
               for lt in targets) >= 12


@pytest.mark.parametrize("name", [lt.ref.rsplit("::", 1)[1] for lt in loader.load(SUITE)])
def test_simplest_case_runs_in_the_interpreter_and_passes(pool, name):
    (lt,) = loader.load(f"{SUITE}::{name}")
    case = find(lt.target.cases(), lambda c: True, settings=settings(database=None))
    outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 120.0)
    assert outcome.verdict == "pass", (case.describe(), outcome.message)
