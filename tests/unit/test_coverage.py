"""Kernel coverage in the interpreter (fuzzkern/execution/interpreter/coverage.py): exact lines,
branch
sides, trip counts, masks and conditions on the small kernels of _coverage_kernels.py, on the
real Triton interpreter."""

from __future__ import annotations

import os
import types

import pytest
import torch

from fuzzkern.execution.interpreter.core import interpreter_mode
from fuzzkern.execution.interpreter.coverage import KernelCoverage, recording
from tests.unit import _coverage_kernels as K

FILE = os.path.abspath(K.__file__)
BRANCHY = f"{FILE}:17"
TWICE = f"{FILE}:12"
WHILE = f"{FILE}:41"


def _run(fn, *args, **kwargs) -> tuple[object, KernelCoverage]:
    with interpreter_mode(), recording() as rec:
        out = fn(*args, **kwargs)
    assert rec.coverage is not None
    return out, rec.coverage


def _site(cov: KernelCoverage, key: str, line: int) -> dict:
    (site,) = [s for s in cov.functions[key]["sites"] if s["line"] == line]
    return site


def test_lines_branches_masks_and_conditions_of_one_case():
    x = torch.arange(20, dtype=torch.float32) - 10
    out, cov = _run(K.branchy, x)
    assert torch.equal(out, torch.where(x + 1 > 0, x + 1, torch.full_like(x, 3.0)))
    # the helper it calls on the path not taken: listed from its source, never called
    assert set(cov.functions) == {BRANCHY, TWICE}
    assert cov.functions[TWICE]["lines"] == {"13": 0}
    assert cov.unreached()[0] == "_twice (_coverage_kernels.py:12): never called"
    lines = cov.functions[BRANCHY]["lines"]
    assert [int(n) for n, c in lines.items() if not c] == [23]
    assert set(map(int, lines)) == {18, 19, 20, 21, 22, 23, 25, 26, 27, 28, 29, 30}
    branch = _site(cov, BRANCHY, 22)
    assert (branch["true"], branch["false"]) == (0, 1)
    assert branch["distance"] == {"true": 1000 - 20 + 1}  # n > BIG is 981 away
    loop = _site(cov, BRANCHY, 27)
    assert (loop["0"], loop["1"], loop["many"]) == (0, 0, 1)  # 3 trips of 8 in 20
    load = _site(cov, BRANCHY, 21)
    assert (load["op"], load["all"], load["partial"], load["none"]) == ("load", 1, 1, 0)
    where = _site(cov, BRANCHY, 29)
    # x + 1 > 0: false in program 0, mixed in 1, true in 2
    assert (where["all"], where["mixed"], where["none"]) == (1, 1, 1)
    # every lane off (a program past the end) is not a class until a case reaches it
    assert cov.counts() == {"lines": (11, 13), "branches": (1, 2), "loops": (1, 3),
                            "masks": (4, 4), "wheres": (3, 3)}


def test_helpers_are_covered_and_merging_adds():
    x = torch.ones(5)
    _, big = _run(K.branchy, x, big=2)  # n=5 > 2: the helper runs; one program, partial
    assert set(big.functions) == {BRANCHY, TWICE}
    assert big.functions[TWICE]["lines"] == {"13": 1}
    _, small = _run(K.branchy, torch.ones(8), big=100)
    merged = KernelCoverage()
    assert merged.merge(big) and merged.cases == 1
    new = merged.merge(small.to_json())
    assert f"{BRANCHY}|25" in new and f"{BRANCHY}|22:4 if false" in new
    assert merged.cases == 2
    assert merged.functions[BRANCHY]["lines"]["23"] == 1
    assert merged.functions[BRANCHY]["lines"]["25"] == 1
    assert _site(merged, BRANCHY, 27)["1"] == 2  # one trip in both cases
    assert merged.unreached() == [
        "branchy_kernel (_coverage_kernels.py:17): line 27 `for _i in range(0, n, BLOCK):` "
        "never ran 0 times",
        "branchy_kernel (_coverage_kernels.py:17): line 27 `for _i in range(0, n, BLOCK):` "
        "never ran more than once",
        "branchy_kernel (_coverage_kernels.py:17): tl.where at line 29 condition never "
        "uniformly false",
    ]
    status = merged.line_status(BRANCHY)
    assert status[27] == "partly" and status[21] == status[22] == "reached"


@pytest.mark.parametrize(("n", "trips"), [(0, "trips 0"), (1, "trips 1"), (3, "trips many")])
def test_while_trip_counts(n, trips):
    out, cov = _run(K.count_up, n)
    assert int(out.item()) == n
    site = _site(cov, WHILE, 43)
    assert [k for k in ("trips 0", "trips 1", "trips many") if site[k]] == [trips]
    assert (site["true"], site["false"]) == (int(n > 0), 1)


def test_a_kernel_that_raises_keeps_what_it_reached():
    x = torch.ones(4)
    with pytest.raises(Exception, match="power of 2"), interpreter_mode(), \
            recording() as rec:
        K.branchy(x, BLOCK=3)  # tl.arange of a non-power of 2 raises at line 19
    assert rec.coverage is not None
    lines = rec.coverage.functions[BRANCHY]["lines"]
    assert [int(n) for n, c in lines.items() if c] == [18, 19]


def test_outcome_carries_coverage_beside_its_json():
    from fuzzkern.execution.runner import run_case
    from fuzzkern.judge.outcome import Outcome
    from fuzzkern.search.engine import draw_cases
    from tests.unit.targets.coverage_target import branchy_target

    (case,) = draw_cases(branchy_target, 1)
    outcome = run_case(branchy_target, case, {"modes": ["interpret"]})
    assert outcome.verdict == "pass"
    assert BRANCHY in outcome.coverage["functions"]
    assert "coverage" not in outcome.to_json()  # corpus entries stay as they were
    again = Outcome.from_json({**outcome.to_json(), "coverage": outcome.coverage})
    assert again.coverage == outcome.coverage
    off = run_case(branchy_target, case, {"modes": ["interpret"], "coverage": False})
    assert off.coverage == {}


def _fuzz(path: str, **opts: object):
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.search import engine
    from fuzzkern.target import loader

    (lt,) = loader.load(path)
    pool = WorkerPool()
    try:
        options = engine.CampaignOptions(budget=120, database=None, explain=False,
                                         max_failures=1, **opts)  # type: ignore[arg-type]
        return engine.fuzz_target(lt, pool, options, 120)
    finally:
        pool.close()


def test_guidance_finds_a_bug_behind_two_comparisons():
    """``shift > LIMIT`` then ``shift % 128 == 8`` (bench/deep/deep_far_phase.py): the branch
    distance leads there; fuzzkern's minimizer shrinks what the climb found."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "bench", "deep", "deep_far_phase.py")
    r = _fuzz(path, seed=3, max_examples=150, minimize_runs=40)
    (f,) = r.failures
    assert f.outcome.verdict == "kernel-bug"
    shift = f.case.scalars["shift"]
    assert shift > 3 * 4096 + 5 and shift % 128 == 8
    assert f.case.dims["N"] == 1  # minimized: one element shows it
    assert r.cases <= 150 + 8
    with open(path) as fh:
        inner = next(i for i, ln in enumerate(fh, 1) if "if shift % BLOCK" in ln)
    branch = next(s for fn in r.coverage.functions.values() for s in fn["sites"]
                  if s["kind"] == "if" and s["line"] == inner)
    assert branch["true"] >= 1


def test_the_report_marks_the_kernel_source(tmp_path):
    from fuzzkern.report import coverage as report
    from fuzzkern.report.html import render

    _, small = _run(K.branchy, torch.ones(8), big=100)
    r = types.SimpleNamespace(target_id="t", coverage=small)
    page = report.source_html(r, ("interpret",))
    assert "<tr class='never' data-line='23' title='never reached'>" in page
    assert "<tr class='partly' data-line='21'" in page and "mask never partial" in page
    assert "<tr class='reached' data-line='25'>" in page
    assert "<tr class='partly' data-line='22' title='line 22 `if n &gt; BIG:` true branch " \
        "never taken'>" in page
    both = report.source_html(r, ("interpret", "compiled"))
    assert "compiled mode has no line coverage" in both
    none = report.source_html(types.SimpleNamespace(target_id="t", coverage=KernelCoverage()),
                              ("compiled",))
    assert report.COMPILED_ONLY in none
    assert report.coverage_lines([r], ("compiled",)) == [report.COMPILED_ONLY]
    row = report.coverage_row(r)
    assert row["measured"] and row["never_reached"] == small.unreached()
    assert report.below([r], 100.0) == [("t", small.percent())] and not report.below([r], 1.0)
    from fuzzkern.search.engine import TargetResult

    result = TargetResult("t", "t.py::t", cases=1, coverage=small)
    html = render([result], budget=1.0, elapsed=1.0, modes=("interpret",))
    assert "class='kernel-source'" in html and "branchy_kernel" in html


def test_fail_under_coverage_exits_1_and_reports_json(tmp_path):
    import json
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", "fuzzkern.targets.builtin:axpy",
         # one case takes one side of `if EVEN_N:` (a constexpr): under 99.5% whatever it draws
         "--max-examples", "1", "--case-floor", "0", "--budget", "120s", "--no-db",
         "--no-corpus", "-q", "--fail-under-coverage", "99.5", "--report", "r.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "kernel coverage of builtin.axpy is" in res.stderr
    assert "under --fail-under-coverage 99.5" in res.stderr
    assert "builtin.axpy: " in res.stdout and "kernel coverage" in res.stdout
    row = json.loads((tmp_path / "r.json").read_text())["targets"][0]["kernel_coverage"]
    assert row["measured"] and 0 < row["percent"] < 99.5
    assert row["counts"]["lines"]["total"] == 11
    assert any("axpy_kernel" in t for t in row["never_reached"])


_UNDER_ENV = """
import json, torch
from fuzzkern.execution.interpreter.coverage import recording
from fuzzkern.execution.interpreter.core import interpreter_mode
from tests.unit import _coverage_kernels as K
import triton.runtime.interpreter as upstream
assert type(K.branchy_kernel) is upstream.InterpretedFunction  # decorated under the variable
x = torch.arange(20, dtype=torch.float32) - 10
with interpreter_mode(), recording() as rec:
    out = K.branchy(x)
assert torch.equal(out, torch.where(x + 1 > 0, x + 1, torch.full_like(x, 3.0)))
print(json.dumps({"counts": rec.coverage.counts(), "functions": sorted(rec.coverage.functions)}))
"""


def test_coverage_is_measured_with_triton_interpret_set():
    """Issue 43, point 3: with TRITON_INTERPRET=1 the kernels are upstream's
    InterpretedFunction; a session runs them in fuzzkern's interpreter all the same, so the
    coverage is what it is without the variable (helpers included)."""
    import json
    import subprocess
    import sys

    _, cov = _run(K.branchy, torch.arange(20, dtype=torch.float32) - 10)
    root = os.path.dirname(os.path.dirname(os.path.dirname(FILE)))
    env = {**os.environ, "TRITON_INTERPRET": "1",
           "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", _UNDER_ENV], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["functions"] == sorted(cov.functions) == sorted([BRANCHY, TWICE])
    assert got["counts"] == {k: list(v) for k, v in cov.counts().items()}


ARGMAX = f"{FILE}:55"


def test_only_reachable_sides_count():
    """Issue 43, point 5: a tl.where on a scalar condition has no mixed class, and a loop over
    range(cdiv(n, B)) no 0-trip class until a case reaches it; what is reachable still counts."""
    cov = KernelCoverage()
    for n in (1, 3, 4, 9):  # one trip and many; every mask class; every where class but...
        x = torch.randn(n)
        out, one = _run(K.argmax, x)
        assert int(out) == int(torch.argmax(x))
        cov.merge(one)
    loop = _site(cov, ARGMAX, 58)
    assert loop["op"] == "cdiv" and loop["1"] and loop["many"] and not loop["0"]
    scalar = _site(cov, ARGMAX, 66)
    assert scalar["multi-lane"] == 0 and scalar["all"] and not scalar["none"]
    gaps = cov.unreached()
    assert not any("line 58" in g for g in gaps), gaps  # the 0-trip class is not a gap
    assert not any("line 66" in g and "mixed" in g for g in gaps), gaps
    # the scalar where's uniformly-false class is reachable (n == 0) and is still a gap
    assert any("line 66" in g and "never uniformly false" in g for g in gaps), gaps
    reached, total = cov.counts()["loops"]
    assert (reached, total) == (2, 2)
    # n == 0 reaches both: the 0-trip class and the scalar's false class now count, reached
    _, empty = _run(K.argmax, torch.zeros(0))
    cov.merge(empty)
    assert cov.counts()["loops"] == (3, 3)
    assert not any("line 66" in g for g in cov.unreached())


def test_coverage_from_before_the_rule_counts_every_class():
    """A site without the multi-lane count (a report written before) keeps its three classes."""
    old = {"kind": "where", "line": 3, "col": 0, "text": "", "all": 1, "mixed": 0, "none": 1}
    cov = KernelCoverage.from_json({"cases": 1, "functions": {"f:1": {
        "name": "f", "file": "f.py", "line": 1, "lines": {"2": 1}, "sites": [old]}}})
    assert cov.counts()["wheres"] == (2, 3)


def test_every_lane_off_counts_once_a_launch_reaches_it():
    """A ``cdiv(n, BLOCK)`` grid never starts a program past the end, so a mask's every-lane-off
    class is no gap; a launcher whose grid does start one (here 3 programs for 5 elements)
    reaches it, and from then on it counts like any class."""
    _, usual = _run(K.branchy, torch.ones(12))  # 2 programs: every lane on, then partial
    assert usual.counts()["masks"] == (4, 4)
    assert not any("all lanes off" in g for g in usual.unreached())
    x = torch.ones(5)
    out = torch.empty_like(x)
    with interpreter_mode(), recording() as rec:
        K.branchy_kernel[(3,)](x, out, 5, 1000, BLOCK=4)  # program 2 has no element
    assert torch.equal(out, x + 1)
    wide = rec.coverage
    assert wide is not None
    load = _site(wide, BRANCHY, 21)
    assert (load["all"], load["partial"], load["none"]) == (1, 1, 1)
    assert wide.counts()["masks"] == (6, 6)
