"""The benchmark's planted kernels (bench/planted/) are well-formed: each loads as one fuzzkern
target with a SPEC that bench/run.py can read, and its documented minimal case names exactly
the target's dims. Whether each bug is found is what bench/run.py measures."""

import importlib.util
import os

import pytest

from fuzzkern.judge.outcome import Verdict

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


def _row(kernel, mode, kind, found=False, alarm=False, visible=True, not_minimal=None):
    return {"kernel": kernel, "mode": mode, "kind": kind, "found": found, "ttff": 1.0,
            "false_alarm": alarm, "interpreter_visible": visible,
            "not_minimal": not_minimal or {}}


def test_goals_leave_gpu_only_bugs_out_of_the_interpreter_goal_and_judge_each_gpu_mode():
    rows = [
        _row("bug_a", "interpret", "buggy", found=True),
        _row("bug_gpu", "interpret", "buggy", found=False, visible=False),
        _row("ok_a", "interpret", "correct"),
        _row("bug_a", "compiled", "buggy", found=False),
        _row("bug_gpu", "compiled", "buggy", found=True, visible=False),
        _row("ok_a", "compiled", "correct", alarm=True),
        _row("bug_a", "both", "buggy", found=True),
        _row("bug_gpu", "both", "buggy", found=True, visible=False),
        _row("ok_a", "both", "correct"),
    ]
    goals = {g["goal"]: g for g in run.goals(rows)}
    interp = goals["planted bugs found >= 95% (interpreter mode)"]
    assert interp["value"] == "1/1 = 100%" and interp["pass"]  # bug_gpu is not counted
    assert not goals["false alarms on correct kernels, compiled mode: 0"]["pass"]
    assert goals["compiled-only planted bugs found (compiled mode), minimal"]["pass"]
    both = goals["planted bugs found >= 95% (interpret and compiled together, the GPU default)"]
    assert both["value"] == "2/2 = 100%" and both["pass"]
    assert goals["false alarms on correct kernels, interpret and compiled: 0"]["pass"]
    # without GPU rows, only the interpreter goals
    assert len(run.goals(rows[:3])) == 4
