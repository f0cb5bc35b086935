"""The parent compares every pass again in compiled mode too (:mod:`fuzzkern.judge.recheck`):
real Triton kernels' passes on the GPU are confirmed (no false alarm, nothing left unchecked),
and a launcher that patches numpy in its worker gets its wrong GPU output reported. Marked
``gpu``: skipped without CUDA (run with ``bench/gpu_suite.sh tests``)."""

import pytest
from hypothesis import HealthCheck, given, settings

from fuzzkern.case.model import Case, Layout, TensorCase
from fuzzkern.execution.devices import worker_env
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Verdict
from fuzzkern.target import loader
from tests.adversarial.conftest import KERNELS

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool(env=worker_env(), compile_ahead=0)
    yield p
    p.close()


@pytest.mark.parametrize("ref", ["fuzzkern.targets.builtin:vector_add",
                                 "fuzzkern.targets.builtin:row_sum"])
def test_compiled_passes_are_confirmed_in_the_parent(pool, ref):
    (lt,) = loader.load(ref)
    seen = []

    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(lt.target.cases())
    def one(case):
        o = pool.run(lt.ref, case.to_json(), {"modes": ["interpret", "compiled"]}, 120)
        assert not o.failed, o.message
        for mode in ("interpret", "compiled"):
            if mode in o.modes and o.modes[mode].status == "ok":
                assert "unchecked" not in o.modes[mode].detail
                assert "rechecked" not in o.modes[mode].detail
                seen.append(mode)

    one()
    assert "compiled" in seen


def test_a_launcher_patching_numpy_fails_in_compiled_mode(pool):
    (lt,) = loader.load(f"{KERNELS}::patches_numpy_abs")
    case = Case({"N": 9}, {"x": TensorCase.build((9,), "float32", Layout.contiguous(1))})
    o = pool.run(lt.ref, case.to_json(), {"modes": ["compiled"]}, 120)
    assert o.failed and o.verdict != Verdict.CRASH, o.message
    assert "compared again in the parent" in o.message, o.message
