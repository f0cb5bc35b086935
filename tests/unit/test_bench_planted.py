"""The benchmark's planted kernels (bench/planted/) are well-formed: each loads as one fuzzkern
target with a SPEC that bench/run.py can read, and its documented minimal case names exactly
the target's dims. Whether each bug is found is what bench/run.py measures."""

import importlib.util
import os

import pytest

from fuzzkern.outcome import Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERDICTS = {v for k, v in vars(Verdict).items() if k.isupper() and isinstance(v, str)}


def _bench_run():
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(ROOT, "bench",
                                                                            "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _bench_run()
PATHS = run.kernel_paths()


def test_enough_kernels_of_each_kind():
    kinds = [run.load_kernel(p)[1]["kind"] for p in PATHS]
    assert kinds.count("buggy") >= 12 and kinds.count("correct") >= 6, kinds


@pytest.mark.parametrize("path", PATHS, ids=run.short_name)
def test_spec_is_well_formed(path):
    lt, spec = run.load_kernel(path)
    assert lt.target.name == "planted." + run.short_name(path).removeprefix("bug_")
    assert spec["kind"] == ("buggy" if run.short_name(path).startswith("bug_") else "correct")
    assert set(spec["expected_verdicts"]) <= VERDICTS
    if spec["kind"] == "buggy":
        assert spec["expected_verdicts"] and spec["bug_class"] and spec["minimal_case"]
        assert set(spec["minimal_dims"]) == set(lt.target.dims), spec["minimal_dims"]
        for kind in ("fixed", "kernelbench"):
            for dims in run.baseline_trials(kind, lt, spec):
                assert set(dims) == set(lt.target.dims)
    else:
        assert spec["expected_verdicts"] == [] and spec["what"]


def test_not_the_quality_kernels():
    for path in PATHS:
        with open(path) as f:
            assert "tests.quality" not in f.read(), path
