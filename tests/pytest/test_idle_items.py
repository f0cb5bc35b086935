"""A fuzz item that ran no case (its first case did not finish within its budget and the
overrun allowed) fails with the reason, unless ``--fuzzkern-allow-idle`` makes it a warning."""

from __future__ import annotations

import os

IDLE = '''
import time

import fuzzkern
from fuzzkern import strategies as fks


def _compiles_forever(x):
    with fuzzkern.compile_phase():  # what a kernel whose autotuner compiles dozens of configs
        time.sleep(60.0)            # looks like to the worker
    return x * 1


stuck = fuzzkern.Target(launcher=_compiles_forever, reference=lambda x: x,
                        inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                        dims={"N": fks.sizes(max_value=4)}, timeout=5.0)
'''


def test_an_item_that_ran_no_case_fails_unless_allowed(pytester):
    from fuzzkern.target import loader

    pytester.makepyfile(test_idle=IDLE)
    loader._file_modules.clear()
    result = pytester.runpytest("--fuzzkern-budget", "1s", "--fuzzkern-db", "none",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*stuck ran no case: first case still compiling after*"
                                 "--fuzzkern-allow-idle*"])
    loader._file_modules.clear()
    allowed = pytester.runpytest("--fuzzkern-budget", "1s", "--fuzzkern-db", "none",
                                 "--fuzzkern-allow-idle", "-p", "no:cacheprovider")
    allowed.assert_outcomes(passed=1, warnings=1)
    allowed.stdout.fnmatch_lines(["*FewCasesWarning*stuck ran no case*"])



# a correct target whose every case costs about 0.3 s (the launcher sleeps)
SLOW = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "slow_cases.py")


def test_an_item_under_the_case_floor_gets_more_time_and_says_so(pytester):
    """Issue 43, point 4: the item's budget bought a few 0.3 s cases; the case floor fuzzes
    it on, and its report section says how much more it ran."""
    from fuzzkern.target import loader

    with open(SLOW, encoding="utf-8") as fh:
        pytester.makepyfile(test_slow=fh.read())
    loader._file_modules.clear()
    # 0.3 s a case: at most 10 cases in 3 s however fast the machine (under the floor of 12),
    # and time for the first one however loaded
    result = pytester.runpytest("--fuzzkern-budget", "3s", "--fuzzkern-case-floor", "12",
                                "--fuzzkern-db", "none", "-p", "no:cacheprovider", "-rP")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*case floor: test_slow::slow_add: * case(s) in its budget, "
                                 "under the case floor 12: fuzzed * s more, * case(s)*"])
