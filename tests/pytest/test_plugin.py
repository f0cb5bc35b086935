"""The pytest plugin, end to end through ``pytester``: collection, options, reports, profiles,
pytest-xdist. Inner sessions run the real engine (forked workers, the interpreter) on a tiny
vector-add kernel, with a handful of cases each."""

from __future__ import annotations

import json
import re
import textwrap

import pytest

# A tiny Triton target file: `add` is correct, `bad` forgets the mask (every N that 16 does not
# divide reads and writes out of bounds: the shrinker reaches N=1).
KERNELS = '''
import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, MASKED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask)
                 + tl.load(y_ptr + offs, mask=mask), mask=mask)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


def _launch(x, y, masked):
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 16),)](x, y, out, x.numel(), MASKED=masked, BLOCK=16)
    return out


def add_ok(x, y):
    return _launch(x, y, True)


def add_bad(x, y):
    return _launch(x, y, BAD_MASKED)


BAD_MASKED = False
INPUTS = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                    y=fks.tensors(("N",), dtype_of="x"))
DIMS = {"N": fks.sizes(max_value=40)}
'''

TARGETS = KERNELS + '''
add = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
bad = fuzzkern.Target(launcher=add_bad, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
not_a_target = {"launcher": add_ok}


def test_plain():
    assert add_ok is not None
'''

# Small case counts bind, not the budget: a loaded machine must not change what runs.
FAST = ("--fuzzkern-max-examples", "8", "--fuzzkern-budget", "120s")


def _run(pytester, *args):
    """An in-process inner session. The loader caches target files by path; a test that
    rewrites its file between sessions needs the new contents, as a new process would."""
    from fuzzkern.target import loader

    loader._file_modules.clear()
    return pytester.runpytest(*args)


def _lit(pattern):
    """An fnmatch pattern whose ``[`` are literal (item ids have brackets)."""
    return pattern.replace("[", "[[]")


def _corpus_files(root, target_dir):
    folder = root / "corpus" / target_dir
    return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []


# -- the no-import guarantee -----------------------------------------------------------------


def test_plugin_import_pulls_in_neither_torch_nor_triton(pytester):
    """A session with the plugin loaded and no fuzzkern target must not pay for torch or
    triton (Hypothesis's test of its own plugin, ported)."""
    pytester.makeconftest('''
        import sys
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_terminal_summary(terminalreporter, config):
            heavy = sorted(m for m in ("torch", "triton") if m in sys.modules)
            loaded = config.pluginmanager.hasplugin("fuzzkern")
            terminalreporter.write_line(f"HEAVY={heavy} FUZZKERN_LOADED={loaded}")
    ''')
    pytester.makepyfile(test_plain='''
        def test_one():
            assert 1 + 1 == 2
    ''')
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["fuzzkern 0.1.0: profile dev*", "HEAVY=[] FUZZKERN_LOADED=True"])


def test_the_import_check_can_fail(pytester):
    """The same check reports torch once something imports it: it is not vacuous."""
    pytester.makeconftest('''
        import sys
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_terminal_summary(terminalreporter):
            heavy = sorted(m for m in ("torch", "triton") if m in sys.modules)
            terminalreporter.write_line(f"HEAVY={heavy}")
    ''')
    pytester.makepyfile(test_torch='''
        def test_one():
            import torch
    ''')
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["HEAVY=['torch']"])


# -- collection ------------------------------------------------------------------------------


def test_module_level_targets_become_fuzz_items(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    result = _run(pytester, "--collect-only", "-q")
    assert result.ret == 0
    ids = [ln for ln in result.outlines if "::" in ln]
    assert ids == ["test_ops.py::add[fuzz]", "test_ops.py::bad[fuzz]", "test_ops.py::test_plain"]


def test_fuzz_items_pass_and_fail_with_the_diagnosis(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    result = _run(pytester, *FAST, "-m", "fuzzkern")  # the marker selects our items
    result.assert_outcomes(passed=1, failed=1, deselected=1)
    out = result.stdout.str()
    # The headline: what pytest's short summary shows.
    result.stdout.fnmatch_lines([_lit("FAILED test_ops.py::bad[fuzz] - fuzzkern found 1 failing "
                                      "case in test_ops::bad after * cases: oob*")])
    # The diagnosis in its own report section: verdict, mode, minimal case, replay command.
    section = out.split("- fuzzkern -", 1)[1]
    assert "test_ops::bad: oob" in section
    assert "[interpret] oob" in section
    assert "minimal case: x=float32[1]" in section
    assert "dims: N=1" in section
    (entry,) = _corpus_files(pytester.path, "test_ops_bad")
    # (with the declared source that holds the target: replay loads code from nothing else)
    assert re.search(rf"^to reproduce this failure: fuzzkern replay \S*corpus/test_ops_bad/"
                     rf"{entry.name} --target test_ops.py$", section,
                     re.M)
    assert re.search(r"\d+ cases in [\d.]+ s \(budget 120 s, max 8 cases", section)
    # The terminal summary lists the new regression case to review and commit.
    result.stdout.fnmatch_lines([
        "*= fuzzkern =*",
        "1 new regression case written to corpus/test_ops_bad/; review and `git add corpus/`",
        f"  corpus/test_ops_bad/{entry.name}",
    ])
    assert _corpus_files(pytester.path, "test_ops_add") == []


def test_corpus_entries_become_items_that_replay_their_case(pytester):
    """A saved failure becomes ``bad[corpus:<id>]``: failing while the bug is there, passing
    once it is fixed; the id is the entry's content hash, so it is stable."""
    pytester.makepyfile(test_ops=TARGETS)
    _run(pytester, *FAST).assert_outcomes(passed=2, failed=1)
    (entry,) = _corpus_files(pytester.path, "test_ops_bad")
    item = f"test_ops.py::bad[corpus:{entry.stem[:8]}]"

    collected = _run(pytester, "--collect-only", "-q")
    assert item in collected.outlines
    assert collected.outlines.index(item) < collected.outlines.index("test_ops.py::bad[fuzz]")

    still = _run(pytester, *FAST, "-k", "corpus")
    still.assert_outcomes(failed=1, deselected=3)
    still.stdout.fnmatch_lines([_lit(f"FAILED {item} - regression case corpus/test_ops_bad/"
                                     f"{entry.name} still fails: oob*")])
    assert "minimal case: x=float32[1]" in still.stdout.str()

    # Fix the kernel: the regression case passes, and says so in its section.
    pytester.makepyfile(test_ops=TARGETS.replace("BAD_MASKED = False", "BAD_MASKED = True"))
    fixed = _run(pytester, *FAST, "-k", "corpus", "-rP")
    fixed.assert_outcomes(passed=1, deselected=3)
    fixed.stdout.fnmatch_lines([f"corpus/test_ops_bad/{entry.name}: recorded oob, now passes"])


def test_a_stale_or_damaged_entry_fails_with_the_reason(pytester):
    """An entry that cannot be replayed any more is surfaced, never silently skipped."""
    pytester.makepyfile(test_ops=TARGETS)
    _run(pytester, *FAST, "-k", "bad").assert_outcomes(failed=1, deselected=2)
    (entry,) = _corpus_files(pytester.path, "test_ops_bad")
    # The target's signature changes: input y is renamed z.
    renamed = TARGETS.replace('y=fks.tensors(("N",), dtype_of="x")',
                              'z=fks.tensors(("N",), dtype_of="x")')
    renamed = renamed.replace("def add_bad(x, y):", "def add_bad(x, z):").replace(
        "return _launch(x, y, BAD_MASKED)", "return _launch(x, z, BAD_MASKED)")
    renamed = renamed.replace("def add_ok(x, y):", "def add_ok(x, z):").replace(
        "return _launch(x, y, True)", "return _launch(x, z, True)").replace(
        "lambda x, y: x + y", "lambda x, z: x + z")
    pytester.makepyfile(test_ops=renamed)
    (pytester.path / "corpus" / "test_ops_bad" / "0123456789abcdef.json").write_text("{not json")
    result = _run(pytester, *FAST, "-k", "corpus")
    result.assert_outcomes(failed=2, deselected=3)
    result.stdout.fnmatch_lines([_lit(
        "FAILED test_ops.py::bad[corpus:01234567] - corpus entry corpus/test_ops_bad/"
        "0123456789abcdef.json cannot be read: *JSON*")])
    result.stdout.fnmatch_lines([_lit(
        f"FAILED test_ops.py::bad[corpus:{entry.stem[:8]}] - corpus entry corpus/test_ops_bad/"
        f"{entry.name} cannot be replayed: signature changed*")])


# -- fuzz_test -------------------------------------------------------------------------------


def test_fuzz_test_gives_an_explicit_test_the_same_items(pytester):
    pytester.makepyfile(test_ops=KERNELS + '''
add = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
test_add = fuzzkern.fuzz_test(add, max_examples=3, seed=7, budget="2m")
''')
    collected = _run(pytester, "--collect-only", "-q")
    # `add` is collected through its test only, not a second time on its own.
    assert [ln for ln in collected.outlines if "::" in ln] == ["test_ops.py::test_add[fuzz]"]
    result = _run(pytester, "-rP")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["3 cases in * s (budget 120 s, max 3 cases, modes interpret, "
                                 "seed 7, no database); verdicts: pass 3"])


def test_settings_precedence_command_line_then_fuzz_test_then_ini(pytester):
    pytester.makepyfile(test_ops=KERNELS + '''
add = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
other = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
test_add = fuzzkern.fuzz_test(add, max_examples=3)
''')
    pytester.makeini("[pytest]\nfuzzkern_max_examples = 5\nfuzzkern_budget = 120s\n")
    result = _run(pytester, "-rP")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*other*fuzz*", "5 cases in * s (budget 120 s, max 5 cases*",
                                 "*test_add*fuzz*", "3 cases in * s (budget 120 s, max 3 cases*"])
    result = _run(pytester, "-rP", "--fuzzkern-max-examples", "2")
    result.assert_outcomes(passed=2)
    assert len(re.findall(r"^2 cases in .* max 2 cases", result.stdout.str(), re.M)) == 2


def test_fuzz_test_whose_target_has_no_module_level_name_fails_with_the_fix(pytester):
    pytester.makepyfile(test_ops=KERNELS + '''
test_add = fuzzkern.fuzz_test(
    fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS))
''')
    result = _run(pytester, )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*its target is not bound to a module-level name*",
                                 "*test_add = fuzzkern.fuzz_test(add)*"])


def test_fuzz_test_rejects_what_is_not_a_target():
    import fuzzkern

    with pytest.raises(fuzzkern.InvalidArgument, match="Expected a fuzzkern.Target"):
        fuzzkern.fuzz_test(lambda: None)
    with pytest.raises(fuzzkern.InvalidArgument, match="Expected modes among"):
        fuzzkern.fuzz_test(_a_target(), modes=("cuda",))
    with pytest.raises(fuzzkern.InvalidArgument, match="positive integer"):
        fuzzkern.fuzz_test(_a_target(), max_examples=0)


def _a_target():
    import fuzzkern
    from fuzzkern import strategies as fks

    return fuzzkern.Target(launcher=lambda x: x, reference=lambda x: x,
                           inputs=fks.inputs(x=fks.tensors(("N",))),
                           dims={"N": fks.sizes(max_value=4)})


def test_fuzz_test_runs_without_the_plugin(pytester):
    """With the plugin disabled, the function is an ordinary test that fuzzes and fails with
    the diagnosis in its AssertionError."""
    pytester.makepyfile(test_ops=KERNELS + '''
bad = fuzzkern.Target(launcher=add_bad, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
test_bad = fuzzkern.fuzz_test(bad, max_examples=5)
''')
    result = _run(pytester, "-p", "no:fuzzkern")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: fuzzkern found 1 failing case in "
                                 "test_ops::bad*", _lit("*minimal case: x=float32[1]*")])


TWO_BUGS = '''
import torch

import fuzzkern
from fuzzkern import strategies as fks


def _launch(x):
    if x.shape[0] >= 5:
        raise ValueError("at most 4 elements")
    return torch.where(x < 0, torch.zeros_like(x), x)


two = fuzzkern.Target(launcher=_launch, reference=lambda x: x,
                      inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                      dims={"N": fks.sizes(max_value=40)})
'''


@pytest.mark.parametrize("args, ini, found", [
    ([], "", "2 failing cases"),
    (["--fuzzkern-max-failures", "1"], "", "1 failing case"),
    ([], "fuzzkern_max_failures = 1", "1 failing case"),
])
def test_an_item_reports_each_distinct_failure_up_to_max_failures(pytester, args, ini, found):
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_two=TWO_BUGS)
    result = _run(pytester, "--fuzzkern-max-examples", "300", "--fuzzkern-budget", "120s",
                  "--fuzzkern-seed", "3", *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([_lit(f"FAILED test_two.py::two[fuzz] - fuzzkern found {found} "
                                      "in test_two::two after *")])


# -- options, header, profiles ---------------------------------------------------------------


@pytest.mark.parametrize("args, ini, message", [
    (["--fuzzkern-budget", "10x"], "", "--fuzzkern-budget: unknown unit 'x' in '10x': use s*"),
    (["--fuzzkern-max-examples", "0"], "", "--fuzzkern-max-examples: Expected a positive*"),
    (["--fuzzkern-max-failures", "0"], "", "--fuzzkern-max-failures: Expected a positive*"),
    ([], "fuzzkern_max_failures = many", "*the fuzzkern_max_failures ini key: Expected a*"),
    (["--fuzzkern-modes", "cuda"], "", "--fuzzkern-modes: Expected modes among interpret, "
                                       "compiled*"),
    (["--fuzzkern-db", "ftp://host"], "", "--fuzzkern-db: Expected a folder, redis://*"),
    (["--fuzzkern-profile", "weekly"], "", "*Expected a profile among dev, ci, nightly but got "
                                           "profile='weekly' (from --fuzzkern-profile)*"),
    ([], "fuzzkern_budget = soon", "*the fuzzkern_budget ini key: Expected a duration*"),
])
def test_bad_options_are_usage_errors_naming_their_source(pytester, args, ini, message):
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: fuzzkern: {message}"])


def test_header_shows_profile_versions_gpus_and_stores(pytester):
    from importlib.metadata import version

    result = _run(pytester, "--fuzzkern-db", "none")
    result.stdout.fnmatch_lines([
        f"fuzzkern 0.1.0: profile dev (default): budget 10 s, at most 100 cases per target "
        f"(Hypothesis profile 'fuzzkern-dev'); torch {version('torch')}; "
        f"triton {version('triton')}; GPUs: *",
        "fuzzkern: a random seed per item, printed in its report section; database none; "
        "corpus corpus",
    ])


def test_gpus_in_the_header_come_from_fuzzkern_gpus_without_torch(pytester, monkeypatch):
    monkeypatch.setenv("FUZZKERN_GPUS", "2")
    result = _run(pytester, )
    result.stdout.fnmatch_lines(["fuzzkern 0.1.0: *; GPUs: 2 (0,1)"])


@pytest.mark.parametrize("how, expected", [
    ({"env": {"CI": "true"}}, "profile ci (CI detected): budget 60 s, at most 100 cases*"),
    ({"env": {"FUZZKERN_PROFILE": "nightly"}},
     "profile nightly ($FUZZKERN_PROFILE): budget 600 s, no case limit*"),
    ({"ini": "fuzzkern_profile = ci"}, "profile ci (fuzzkern_profile ini key)*"),
    ({"args": ["--fuzzkern-profile", "dev"], "env": {"CI": "1"}},
     "profile dev (--fuzzkern-profile)*"),
])
def test_profile_selection(pytester, monkeypatch, how, expected):
    for k, v in how.get("env", {}).items():
        monkeypatch.setenv(k, v)
    if "ini" in how:
        pytester.makeini(f"[pytest]\n{how['ini']}\n")
    result = _run(pytester, *how.get("args", []))
    result.stdout.fnmatch_lines([f"fuzzkern 0.1.0: {expected}"])


def test_ci_profile_is_derandomized_and_writes_nothing(pytester):
    pytester.makepyfile(test_ops=TARGETS)
    result = _run(pytester, "--fuzzkern-profile", "ci", "--fuzzkern-max-examples", "6",
                  "-k", "bad")
    result.assert_outcomes(failed=1, deselected=2)
    result.stdout.fnmatch_lines(["fuzzkern: seed 0 (derandomized by the Hypothesis profile "
                                 "'fuzzkern-ci'); database off (a seeded run does not use one); "
                                 "corpus corpus (read-only)",
                                 "*cases in * s (budget 60 s, max 6 cases, modes interpret, "
                                 "seed 0, no database)*"])
    assert "new regression case" not in result.stdout.str()
    assert not (pytester.path / "corpus").exists()
    assert not (pytester.path / ".hypothesis").exists()


def test_a_project_redefines_a_profile_through_hypothesis(pytester):
    """Profiles are Hypothesis settings profiles: registering ``fuzzkern-ci`` first wins."""
    pytester.makeconftest('''
        from hypothesis import settings
        settings.register_profile("fuzzkern-ci", derandomize=True, max_examples=4, deadline=None)
    ''')
    pytester.makepyfile(test_ops=TARGETS)
    # A subprocess: Hypothesis's profile registry is global, and must not leak into other tests.
    result = pytester.runpytest_subprocess("--fuzzkern-profile", "ci", "-k", "add", "-rP")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["4 cases in * s (budget 60 s, max 4 cases, modes interpret, "
                                 "seed 0, no database); verdicts: pass 4"])


def test_markers_are_registered_and_gpu_marks_apply_to_fuzzkern_items(pytester):
    pytester.makepyfile(test_ops=TARGETS.replace("import fuzzkern\n", "import fuzzkern\n"
                                                 "import pytest\npytestmark = pytest.mark.gpu\n"))
    markers = _run(pytester, "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.fuzzkern: *", "@pytest.mark.gpu: *"])
    result = _run(pytester, "--strict-markers", "--collect-only", "-q",
                  "-m", "gpu and fuzzkern")
    assert [ln for ln in result.outlines if "::" in ln] == ["test_ops.py::add[fuzz]",
                                                            "test_ops.py::bad[fuzz]"]


@pytest.mark.parametrize("args, why", [
    (["--fuzzkern-modes", "interpret"], ""),
    ([], " (no CUDA GPU)"),
])
def test_target_modes_the_session_cannot_run_are_skipped_with_the_reason(pytester, args, why):
    import torch

    if not args and torch.cuda.is_available():
        pytest.skip("with CUDA the default modes include compiled")
    pytester.makepyfile(test_ops=KERNELS + '''
gpu_only = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS,
                           dims=DIMS, modes=("compiled",))
''')
    result = _run(pytester, *args, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED*test_ops::gpu_only runs only in compiled; this "
                                 f"session uses interpret{why}"])


# -- pytest-xdist ----------------------------------------------------------------------------


def test_xdist_runs_items_in_parallel_reports_survive_and_a_crash_is_one_failure(pytester):
    """Under -n 2 the report sections and the corpus summary come back from the workers, and
    a test that kills its xdist worker is one failed item, not a broken run."""
    # Last in the file, so no other item waits behind it on the worker that dies.
    pytester.makepyfile(test_ops=TARGETS + textwrap.dedent('''

        def test_crash():
            import os
            os._exit(3)
    '''))
    result = pytester.runpytest_subprocess(*FAST, "-n", "2")
    result.assert_outcomes(passed=2, failed=2)
    (entry,) = _corpus_files(pytester.path, "test_ops_bad")
    result.stdout.fnmatch_lines([
        "*- fuzzkern -*", "test_ops::bad: oob*", _lit("minimal case: x=float32[1]*"),
        "1 new regression case written to corpus/test_ops_bad/; review and `git add corpus/`",
        f"  corpus/test_ops_bad/{entry.name}",
    ])
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running 'test_ops.py::test_crash'*"])


def test_each_xdist_worker_pins_its_kernel_processes_to_one_gpu(pytester, monkeypatch):
    """gwK's worker processes see CUDA_VISIBLE_DEVICES = K mod #GPUs (counted from
    FUZZKERN_GPUS here: this machine has none, and torch is CPU-only, so the variable is
    only recorded, never used)."""
    monkeypatch.setenv("FUZZKERN_GPUS", "2")
    record = pytester.path / "seen"
    record.mkdir()
    pytester.makepyfile(test_ops=KERNELS + f'''
import json, os


def recording(x, y):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "none")
    with open(os.path.join({str(record)!r}, worker), "w") as fh:
        json.dump(os.environ.get("CUDA_VISIBLE_DEVICES"), fh)
    return add_ok(x, y)


''' + "\n".join(
        f"t{i} = fuzzkern.Target(launcher=recording, reference=lambda x, y: x + y, "
        f"inputs=INPUTS, dims=DIMS, name='t{i}')" for i in range(4)))
    result = pytester.runpytest_subprocess("--fuzzkern-max-examples", "1", "--fuzzkern-budget",
                                           "120s", "-n", "2")
    result.assert_outcomes(passed=4)
    seen = {p.name: json.loads(p.read_text()) for p in record.iterdir()}
    assert seen == {"gw0": "0", "gw1": "1"}, seen


# -- small parts -----------------------------------------------------------------------------


def test_an_entry_that_failed_only_in_a_mode_not_run_here_is_the_machines_limit():
    from types import SimpleNamespace

    from fuzzkern.testing import entry_needs

    compiled_only = SimpleNamespace(failing_modes=["compiled"])
    assert entry_needs(compiled_only, ("interpret",)) == (
        "it failed only in compiled mode, and this session runs interpret (no CUDA GPU)")
    assert entry_needs(compiled_only, ("interpret", "compiled")) is None
    # A crash or hang names no mode: always replayed.
    assert entry_needs(SimpleNamespace(failing_modes=[]), ("interpret",)) is None


def test_corpus_item_ids_are_short_and_unique():
    from fuzzkern._pytest_plugin import _short_ids

    paths = ["c/t/1a2b3c4d5e6f7a8b.json", "c/t/1a2b3c4d00000000.json", "c/t/ffff000011112222.json"]
    assert _short_ids(paths) == {paths[0]: "1a2b3c4d5e6f", paths[1]: "1a2b3c4d0000",
                                 paths[2]: "ffff0000"}


# -- kernel coverage (docs/coverage.md) ------------------------------------------------------


def test_items_report_kernel_coverage_and_fail_under_it(pytester):
    # `add` never takes the unmasked branch: its coverage stays under 100%
    pytester.makepyfile(test_cov=KERNELS + '''
add = fuzzkern.Target(launcher=add_ok, reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
''')
    result = _run(pytester, "-rA", *FAST, "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*kernel coverage:*", "*test_cov::add: *% (lines 4/5, *",
                                 "*never reached: add_kernel (test_cov.py:*): line * `if "
                                 "MASKED:` false branch never taken*"])
    result = _run(pytester, *FAST, "--fuzzkern-fail-under-coverage", "100")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_cov::add: kernel coverage *% is under "
                                 "--fuzzkern-fail-under-coverage 100*"])
    result = _run(pytester, *FAST, "--fuzzkern-fail-under-coverage", "1")
    result.assert_outcomes(passed=1)
    result = _run(pytester, *FAST, "--fuzzkern-fail-under-coverage", "lots")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--fuzzkern-fail-under-coverage*percentage*"])


def test_one_root_cause_in_two_dtypes_is_one_failure_listing_both(pytester):
    """A precision bug at one line in fp16 and in bf16 (tests/unit/targets/one_root.py): the
    fuzz item reports one failure, with the dtypes and lengths where it showed."""
    import os

    here = os.path.join(os.path.dirname(__file__), "..", "unit", "targets", "one_root.py")
    with open(here) as fh:
        pytester.makepyfile(test_root=fh.read())
    result = _run(pytester, "--fuzzkern-max-examples", "20", "--fuzzkern-budget", "120s",
                  "--fuzzkern-seed", "0", "-k", "tvd_both")
    assert result.ret == 1
    text = result.stdout.str()
    assert text.count("tvd_both: precision-bug") == 1, text[-3000:]
    assert re.search(r"shows in \d+ cases: (float16 \(\d+\), bfloat16|bfloat16 \(\d+\), "
                     r"float16) \(\d+\); dims N=", text), text[-3000:]
