"""A fuzz item that ran no case (its first case did not finish within its budget and the
overrun allowed) fails with the reason, unless ``--fuzzkern-allow-idle`` makes it a warning."""

from __future__ import annotations

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
