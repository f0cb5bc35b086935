"""fuzzkern items behave as pytest and Hypothesis users expect: ``--lf``/``--ff``, ``-k`` and
node ids, Hypothesis's own options, a printed seed, usage errors. Inner sessions through
``pytester`` run the real engine on the tiny kernels of ``test_plugin.py``."""

from __future__ import annotations

import re

import pytest

from tests.pytest.test_plugin import FAST, KERNELS, TARGETS, _lit, _run

# The targets plus an ordinary failing test: --lf must rerun both kinds.
WITH_PLAIN_FAILURE = TARGETS + '''

def test_plain_fails():
    assert 1 + 1 == 3
'''

CI = ("--fuzzkern-profile", "ci", "--fuzzkern-max-examples", "8")


def _ids(result):
    return [ln for ln in result.outlines if "::" in ln and " " not in ln]


def test_last_failed_and_failed_first_include_fuzzkern_items(pytester):
    """pytest >= 9.2 matches ``--lf`` ids structurally (name + params): a fuzzkern item must
    carry the node id of a parametrized test, or ``--lf`` silently drops it."""
    pytester.makepyfile(test_ops=WITH_PLAIN_FAILURE)
    first = _run(pytester, *CI, "-p", "cacheprovider")
    first.assert_outcomes(passed=2, failed=2)
    # the ci profile saves no corpus entry: the repeat command names the file relative to here
    # and the profile's seed
    first.stdout.fnmatch_lines(["to repeat: fuzzkern run test_ops.py::bad --seed 0 --no-db "
                                "--budget 30s"])

    lf = _run(pytester, *CI, "-p", "cacheprovider", "--lf", "-v")
    lf.assert_outcomes(failed=2)
    lf.stdout.fnmatch_lines(["*collected 2 items", "run-last-failure: rerun previous 2 failures*"])
    lf.stdout.fnmatch_lines([_lit("test_ops.py::bad[fuzz] FAILED*"),
                             "test_ops.py::test_plain_fails FAILED*"])
    assert "add[fuzz]" not in lf.stdout.str()

    ff = _run(pytester, *CI, "-p", "cacheprovider", "--ff", "--collect-only", "-q")
    assert _ids(ff)[:2] == ["test_ops.py::bad[fuzz]", "test_ops.py::test_plain_fails"]


def test_node_ids_and_k_select_fuzzkern_items(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    one = _run(pytester, "test_ops.py::bad[fuzz]", "--collect-only", "-q")
    assert _ids(one) == ["test_ops.py::bad[fuzz]"]
    # The bare name selects every item of the target, as for a parametrized test.
    both = _run(pytester, "test_ops.py::add", "--collect-only", "-q")
    assert _ids(both) == ["test_ops.py::add[fuzz]"]
    k = _run(pytester, "-k", "fuzz and not bad", "--collect-only", "-q")
    assert _ids(k) == ["test_ops.py::add[fuzz]"]


# The add target, its launcher logging each case it gets to draws.log beside the file (from
# the worker process, which may have forked before this test: no environment variable).
LOGGED = TARGETS.replace("def add_ok(x, y):\n", "def add_ok(x, y):\n"
                         "    import os\n"
                         "    with open(os.path.join(os.path.dirname(__file__), 'draws.log'),"
                         " 'a') as log:\n"
                         "        log.write(f'{tuple(x.shape)} {x.stride()} '\n"
                         "                  f'{float(x.sum())}\\n')\n")


def test_every_item_prints_a_line_that_repeats_its_draws(pytester):
    """Unseeded, with an example database and a budget that cuts it: the item's "to repeat"
    options (seed, case count, no database) draw the same cases again."""
    assert LOGGED != TARGETS
    pytester.makepyfile(test_ops=LOGGED)
    log = pytester.path / "draws.log"
    # (no case floor: its top-up draws from another seed, which the line cannot repeat; a
    # loaded machine ran fewer than its 20 cases in 3 s, was topped up, and the draws differed)
    first = _run(pytester, "-k", "add", "-rP", "--fuzzkern-budget", "5s",
                 "--fuzzkern-case-floor", "0")
    first.assert_outcomes(passed=1, deselected=2)
    m = re.search(r"^to repeat: (--fuzzkern-seed (\d+) --fuzzkern-max-examples (\d+) "
                  r"--fuzzkern-db none --fuzzkern-budget 10m)$", first.stdout.str(), re.M)
    assert m, first.stdout.str()
    drawn = log.read_text().splitlines()
    log.unlink()
    again = _run(pytester, "-k", "add", "-rP", *m.group(1).split())
    again.assert_outcomes(passed=1, deselected=2)
    again.stdout.fnmatch_lines([f"fuzzkern: seed {m.group(2)} (--fuzzkern-seed); *",
                                f"{m.group(3)} cases in * seed {m.group(2)}, no database*"])
    repeated = log.read_text().splitlines()
    assert len(repeated) == int(m.group(3)) and drawn[:len(repeated)] == repeated


def test_an_item_with_too_few_cases_warns_and_min_cases_fails_it(pytester):
    # each case of add takes 0.1 s: 1.5 s of budget runs fewer than 20 however fast the
    # machine, and at least one however loaded; without the case floor, which would fuzz on
    # toward 20 cases for up to the budget again (and reach them on a fast machine)
    slow = TARGETS.replace("def add_ok(x, y):\n",
                           "def add_ok(x, y):\n    import time\n    time.sleep(0.1)\n")
    assert slow != TARGETS
    pytester.makepyfile(test_ops=slow)
    # asked for 3 cases and ran them: no warning
    asked = _run(pytester, "-k", "add", "--fuzzkern-max-examples", "3", "--fuzzkern-budget",
                 "120s", "-W", "error")
    asked.assert_outcomes(passed=1, deselected=2)
    few = _run(pytester, "-k", "add", "--fuzzkern-max-examples", "30", "--fuzzkern-budget",
               "1.5s", "--fuzzkern-case-floor", "0")
    few.assert_outcomes(passed=1, deselected=2, warnings=1)
    few.stdout.fnmatch_lines(["*FewCasesWarning: test_ops::add ran * case* in * s, fewer than "
                              "20: it tested little; raise --fuzzkern-budget (--fuzzkern-min-"
                              "cases N makes this a failure)"])
    failed = _run(pytester, "-k", "add", "--fuzzkern-max-examples", "30", "--fuzzkern-budget",
                  "1.5s", "--fuzzkern-min-cases", "25", "--fuzzkern-case-floor", "0")
    failed.assert_outcomes(failed=1, deselected=2)
    failed.stdout.fnmatch_lines(["FAILED test_ops.py::add[[]fuzz[]] - test_ops::add ran * "
                                 "fewer than --fuzzkern-min-cases 25: it tested little*"])


def test_hypothesis_seed_option_seeds_fuzzkern_items(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    # A subprocess: Hypothesis's plugin sets a process-wide forced seed (core.global_force_seed)
    # that would leave every later in-process session seeded and database-less.
    result = pytester.runpytest_subprocess(*FAST, "-k", "add", "-rP", "--hypothesis-seed", "5")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["fuzzkern: seed 5 (--hypothesis-seed); *",
                                 "8 cases in * seed 5, no database*"])
    bad = pytester.runpytest_subprocess("--hypothesis-seed", "abc")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: fuzzkern: --hypothesis-seed: Expected an integer seed*"])


def test_hypothesis_profile_option_sets_the_case_limit_and_the_header_says_so(pytester):
    pytester.makeconftest('''
        from hypothesis import settings
        settings.register_profile("quick", max_examples=3, deadline=None)
        settings.register_profile("repeatable", max_examples=4, derandomize=True)
    ''')
    pytester.makepyfile(test_ops=TARGETS)
    # A subprocess: Hypothesis's profile registry is global to the process.
    result = pytester.runpytest_subprocess("--hypothesis-profile", "quick", "-k", "add", "-rP")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines([
        "fuzzkern 0.1.0: profile dev (default): budget 10 s, at most 3 cases per target "
        "(Hypothesis profile 'quick'); *",
        "3 cases in * s (budget 10 s, max 3 cases, *"])
    derandomized = pytester.runpytest_subprocess("--hypothesis-profile", "repeatable",
                                                 "-k", "add", "-rP")
    derandomized.stdout.fnmatch_lines([
        "fuzzkern: seed 0 (derandomized by the Hypothesis profile 'repeatable'); *",
        "4 cases in * s (budget 10 s, max 4 cases, modes interpret, seed 0, no database)*"])


def test_a_profile_the_project_loads_applies_like_hypothesis_profile(pytester):
    pytester.makeconftest('''
        from hypothesis import settings
        settings.register_profile("mine", max_examples=2, deadline=None)
        settings.load_profile("mine")
    ''')
    pytester.makepyfile(test_ops=TARGETS)
    result = pytester.runpytest_subprocess("-k", "add", "-rP")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines([
        "fuzzkern 0.1.0: *at most 2 cases per target (Hypothesis profile 'mine'); *",
        "2 cases in * s (budget 10 s, max 2 cases, *"])


def test_hypothesis_show_statistics_lists_fuzzkern_items(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    result = _run(pytester, *FAST, "-k", "add", "--hypothesis-show-statistics")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*Hypothesis Statistics*", _lit("test_ops.py::add[fuzz]:"),
                                 "  - 8 cases in * s (budget 120 s, max 8 cases*"])


def test_header_shows_the_case_limit_of_a_redefined_fuzzkern_profile(pytester):
    pytester.makeconftest('''
        from hypothesis import settings
        settings.register_profile("fuzzkern-dev", max_examples=20, deadline=None)
    ''')
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["fuzzkern 0.1.0: profile dev (default): budget 10 s, at most "
                                 "20 cases per target (Hypothesis profile 'fuzzkern-dev'); *"])


@pytest.mark.parametrize("how", ["cli", "ini"])
def test_compiled_mode_without_cuda_is_a_usage_error(pytester, how):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the compiled mode is valid here")
    pytester.makepyfile(test_ops=KERNELS)
    if how == "ini":
        pytester.makeini("[pytest]\nfuzzkern_modes = interpret,compiled\n")
        result = _run(pytester)
        where = "the fuzzkern_modes ini key"
    else:
        result = _run(pytester, "--fuzzkern-modes", "compiled")
        where = "--fuzzkern-modes"
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: fuzzkern: {where}: the compiled mode needs a CUDA "
                                 "GPU, and torch sees none here*"])


def test_last_failed_keeps_a_targets_new_corpus_items_with_its_fuzz_item(pytester):
    """A failing [fuzz] item saves an entry: a new [corpus:...] item next time, which --lf
    alone would deselect (it never failed). It runs with its target's [fuzz] item."""
    pytester.makepyfile(test_ops=TARGETS)
    first = _run(pytester, *FAST, "-p", "cacheprovider", "-k", "bad")
    first.assert_outcomes(failed=1, deselected=2)
    lf = _run(pytester, *FAST, "-p", "cacheprovider", "--lf", "-v")
    lf.stdout.fnmatch_lines([_lit("test_ops.py::bad[corpus:*] FAILED*"),
                             _lit("test_ops.py::bad[fuzz] *")])
    assert "add[fuzz]" not in lf.stdout.str()
    lf.assert_outcomes(failed=1, passed=1)
