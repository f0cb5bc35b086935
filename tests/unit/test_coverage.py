"""Kernel coverage in the interpreter (fuzzkern/execution/coverage.py): exact lines, branch
sides, trip counts, masks and conditions on the small kernels of _coverage_kernels.py, on the
real Triton interpreter."""

from __future__ import annotations

import os

import pytest
import torch

from fuzzkern.execution.coverage import KernelCoverage, recording
from fuzzkern.execution.interpreter import interpreter_mode
from tests.unit import _coverage_kernels as K

FILE = os.path.abspath(K.__file__)
BRANCHY = f"{FILE}:17"
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
    assert list(cov.functions) == [BRANCHY]  # the unused helper was never rewritten
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
    assert cov.counts() == {"lines": (11, 12), "branches": (1, 2), "loops": (1, 3),
                            "masks": (4, 6), "wheres": (3, 3)}


def test_helpers_are_covered_and_merging_adds():
    x = torch.ones(5)
    _, big = _run(K.branchy, x, big=2)  # n=5 > 2: the helper runs; one program, partial
    assert set(big.functions) == {BRANCHY, f"{FILE}:12"}
    assert big.functions[f"{FILE}:12"]["lines"] == {"13": 1}
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
        "branchy_kernel (_coverage_kernels.py:17): load at line 21 mask never all lanes off",
        "branchy_kernel (_coverage_kernels.py:17): line 27 `for _i in range(0, n, BLOCK):` "
        "never ran 0 times",
        "branchy_kernel (_coverage_kernels.py:17): line 27 `for _i in range(0, n, BLOCK):` "
        "never ran more than once",
        "branchy_kernel (_coverage_kernels.py:17): tl.where at line 29 condition never "
        "uniformly false",
        "branchy_kernel (_coverage_kernels.py:17): store at line 30 mask never all lanes off",
    ]
    status = merged.line_status(BRANCHY)
    assert status[21] == status[27] == "partly" and status[22] == "reached"


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
