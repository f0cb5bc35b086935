"""The verdict is computed where the case's host code does not run (issue 42): a launcher
that tampers with the judge in its worker (numpy's or torch's functions the comparison calls,
a method of fuzzkern's runner, what the worker sends, the outputs' bytes after the launch)
gets its wrong output reported as a failure, because the parent compares every pass again
from the bytes the launch left (:mod:`fuzzkern.judge.recheck`). Cases are counted, not timed:
each test runs a fixed list of cases in one worker pool."""

from __future__ import annotations

import pickle
import subprocess

import pytest

from fuzzkern.case.model import Case, Layout, TensorCase
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge import recheck
from fuzzkern.judge.outcome import Verdict
from fuzzkern.target import loader
from tests.adversarial.conftest import KERNELS, corpus_entries, run_limited

#: tamperings the worker cannot see itself (no attribute of fuzzkern's judge modules is
#: replaced), and the one it can
TAMPERINGS = ["patches_numpy_abs", "patches_tensor_numpy", "fixes_the_outputs",
              "patches_run_judge", "patches_outcome_json", "loosens_tolerance",
              "replaces_compare"]


@pytest.fixture(scope="module")
def pool():
    p = WorkerPool(compile_ahead="off")
    yield p
    p.close()


def _case(n: int) -> dict:
    return Case({"N": n}, {"x": TensorCase.build((n,), "float32", Layout.contiguous(1))}
                ).to_json()


def _ref(name: str) -> str:
    return loader.load(f"{KERNELS}::{name}")[0].ref


@pytest.mark.parametrize("name", TAMPERINGS)
def test_a_launcher_that_tampers_with_the_judge_in_its_worker_fails(pool, name):
    """Every wrong case (N > 3) fails, however its worker judged it; the parent says the
    worker reported a pass where that is what happened."""
    ref = _ref(name)
    for n in (4, 9, 17):
        outcome = pool.run(ref, _case(n), {"modes": ["interpret"]}, 120)
        assert outcome.failed, (name, n, outcome.verdict, outcome.message)
        if name != "replaces_compare":  # that one the worker reports itself
            assert "compared again in the parent" in outcome.message, outcome.message


def test_an_honest_worker_s_passes_are_confirmed(pool):
    """No false alarm: the right kernel passes every case, each pass compared again."""
    ref = _ref("fixed")
    for n in (1, 4, 9, 17, 64):
        outcome = pool.run(ref, _case(n), {"modes": ["interpret"]}, 120)
        assert outcome.verdict == Verdict.PASS, outcome.message
        assert "unchecked" not in outcome.modes["interpret"].detail
        assert "recheck" in outcome.timings


def test_a_worker_message_that_names_code_is_refused_without_running_it(tmp_path):
    """What a worker sends is read as plain data: a pickle that would call ``os.system``
    in the parent raises, and the marker file it would write never appears."""
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (subprocess.call, (["touch", str(marker)],))

    data = pickle.dumps({"verdict": "pass", "x": Payload()})
    with pytest.raises(pickle.UnpicklingError, match="subprocess.call"):
        recheck.loads(data)
    assert not marker.exists()
    assert recheck.loads(pickle.dumps({"a": [1, 2.5, None, (b"x", "y")]})) == \
        {"a": [1, 2.5, None, (b"x", "y")]}


def test_a_tampering_launcher_found_by_a_run_and_saved(tmp_path):
    """End to end: ``fuzzkern run`` of a launcher that patches numpy in its worker exits 1
    with the wrong case saved, not 20 passing cases."""
    import shutil

    shutil.copy(KERNELS, tmp_path / "kernels.py")
    res = run_limited(["run", "kernels.py::patches_numpy_abs", "--budget", "120s", "--seed",
                       "1", "--no-db", "-j", "1", "-q", "--max-examples", "20"],
                      tmp_path, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "compared again in the parent" in " ".join(res.stdout.split()), res.stdout
    assert len(corpus_entries(tmp_path / "corpus")) == 1


def test_a_launcher_that_sends_code_to_the_parent_gets_an_error(tmp_path):
    """A launcher writing a pickle that names a function onto its worker's pipe: an
    ``error`` outcome, and the function never runs in the parent."""
    marker = tmp_path / "ran"
    p = WorkerPool(env={"FUZZKERN_TEST_MARK": str(marker)}, compile_ahead="off")
    try:
        outcome = p.run(_ref("sends_code"), _case(4), {"modes": ["interpret"]}, 120)
    finally:
        p.close()
    assert outcome.verdict == Verdict.ERROR and "not an outcome" in outcome.message, outcome
    assert not marker.exists()
