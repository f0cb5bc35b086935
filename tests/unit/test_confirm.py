"""Findings that are fuzzkern's, not the kernel's (fuzzkern.search.confirm); where an error was
raised (fuzzkern.judge.frames); the verdict a compiled-only cause gives (fuzzkern.judge.causes)."""

import os

from fuzzkern.execution.launching import short_traceback
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.causes import Cause, attributed
from fuzzkern.judge.outcome import Comparison, Mismatch, ModeResult, Outcome, Verdict
from fuzzkern.judge.verdict import error_text
from fuzzkern.search import engine
from fuzzkern.target import loader

TARGETS = os.path.join(os.path.dirname(__file__), "targets")


def test_an_error_raised_in_fuzzkerns_own_code_is_a_limitation_not_the_kernels():
    (lt,) = loader.load(os.path.join(TARGETS, "pruning_library.py") + "::pruned")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=60, modes=("interpret",), seed=3, max_examples=40,
                                      corpus=None, database=None)
        result = engine.fuzz_target(lt, pool, opts, 60)
    finally:
        pool.close()
    assert result.failures == []  # never reported as the kernel's
    assert result.counts[Verdict.FUZZKERN_LIMIT] == 1
    (note,) = result.limits
    # forcing the drawn config (fuzzkern.introspect.OneConfig) is what raised
    assert "raised in fuzzkern's own code at fuzzkern/introspect.py" in note
    assert "pruning_library.py:26 (copy)" in note  # the library line that called it
    assert "x=float32[1]" in note  # shrunk


def _library_function():
    return {}["missing"]


def test_an_error_message_names_the_innermost_frame_of_the_code_under_test():
    try:
        _library_function()
    except KeyError as e:
        result = ModeResult("compiled", "error", error="KeyError: 'missing'",
                            detail={"traceback": short_traceback(e)})
    text = error_text(result)
    line = _library_function.__code__.co_firstlineno + 1
    assert text == f"KeyError: 'missing' (raised at tests/unit/test_confirm.py:{line} " \
                   "(_library_function))"


def _compiled_mismatch(nonfinite=0, first=()):
    c = Comparison(ok=False, mismatched=1, total=4, nonfinite_mismatches=nonfinite,
                   first=list(first))
    return Outcome(Verdict.KERNEL_BUG, "compiled disagrees with the reference",
                   {"compiled": ModeResult("compiled", "mismatch", c)})


def test_a_compiled_only_cause_gives_the_verdict():
    fma = Cause("fma", "caused by fused multiply-add: passes with enable_fp_fusion=False")
    got = attributed(_compiled_mismatch(), [fma], compiled_only=True)
    assert got.verdict == Verdict.ACCURACY and not got.failed
    assert "fused multiply-add" in got.message and "not a logic bug" in got.message
    # strict accuracy makes the finding fail
    strict = _compiled_mismatch()
    strict.strict = True
    assert attributed(strict, [fma], compiled_only=True).failed
    # a NaN that FMA exposes stays the kernel's, and says what to do
    nan = attributed(_compiled_mismatch(nonfinite=1), [fma], compiled_only=True)
    assert nan.verdict == Verdict.KERNEL_BUG and "clamp" in nan.message
    # flushed subnormals are the GPU's semantics, NaN/inf included
    ftz = Cause("ftz", "subnormal inputs read as zero on the GPU")
    assert attributed(_compiled_mismatch(nonfinite=1), [ftz], True).verdict == Verdict.ACCURACY
    race = Cause("nondeterministic", "the result changes between launches")
    assert attributed(_compiled_mismatch(), [race], True).verdict == Verdict.NONDETERMINISTIC
    # nothing explains it: compiled-only, saying what was ruled out and what is left
    left = attributed(_compiled_mismatch(), [], True)
    assert left.verdict == Verdict.COMPILED_ONLY and "unexplained" in left.message
    assert "race" not in left.message  # a race is proven by launches that differ, or unsaid
    # a NaN dropped compiled only: the likely cause is named, the finding stays
    dropped = _compiled_mismatch(1, [Mismatch(0, (0,), 0.0, float("nan"))])
    got = attributed(dropped, [], True)
    assert got.verdict == Verdict.COMPILED_ONLY and "propagate_nan" in got.message
    # the interpreter could not run it: only a cause found changes the verdict
    assert attributed(_compiled_mismatch(), [], False).verdict == Verdict.KERNEL_BUG
    assert attributed(_compiled_mismatch(), [fma], False).verdict == Verdict.ACCURACY


LIBRARY = '''
import torch
import fuzzkern
from fuzzkern import strategies as fks


def _rows(x):
    return x.shape[0] // (x.shape[0] - 1)  # the library's host code: a 1-row input divides by 0


def launch(x):
    _rows(x)
    return x.clone()


broken = fuzzkern.Target(name="lib.broken", launcher=launch, reference=lambda x: x.clone(),
                         inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                         dims={"N": fks.sizes(min_value=1, max_value=3)}, modes=("interpret",))
'''


def test_the_cli_names_where_an_error_was_raised_and_prints_the_traceback_on_request(tmp_path):
    from click.testing import CliRunner

    from fuzzkern.cli import main

    target = tmp_path / "mylib_targets.py"
    target.write_text(LIBRARY)
    args = ["run", str(target), "--budget", "30s", "--max-examples", "20", "--no-db",
            "--no-corpus", "--modes", "interpret", "-q"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 1, plain.output
    assert "ZeroDivisionError: integer division or modulo by zero (raised at " in plain.output
    assert "mylib_targets.py:8 (_rows))" in plain.output
    assert "Traceback (most recent call last)" not in plain.output
    full = CliRunner().invoke(main, [*args, "--tracebacks"])
    assert "[interpret] traceback:\nTraceback (most recent call last)" in full.output


def test_the_cli_reports_a_limitation_apart_and_exits_0():
    from click.testing import CliRunner

    from fuzzkern.cli import main

    got = CliRunner().invoke(main, ["run", os.path.join(TARGETS, "pruning_library.py"),
                                    "--budget", "30s", "--max-examples", "30", "--no-db",
                                    "--no-corpus", "--modes", "interpret", "--seed", "1"])
    assert got.exit_code == 0, got.output
    assert "pruning_library.copy: fuzzkern-limit" in got.output
    assert "fuzzkern-limit: 1 finding(s) were fuzzkern's own" in got.output


def test_an_exception_that_escaped_fuzzkerns_worker_is_a_limitation():
    from fuzzkern.case.model import Case
    from fuzzkern.search.confirm import confirm

    outcome = Outcome(Verdict.ERROR, "fuzzkern worker error: InterpreterError: AttributeError("
                      "\"'InterpreterBuilder' object has no attribute 'get_bf16'\")",
                      {"harness": ModeResult("harness", "error", error="Traceback ...")})
    (lt,) = loader.load(os.path.join(TARGETS, "pruning_library.py") + "::pruned")
    got = confirm(lt.ref, Case({"N": 1}, {}), outcome, None, {}, lt.target, 10.0)
    assert got.limit is not None and "fuzzkern's own worker code failed" in got.limit
    assert "get_bf16" in got.limit


def test_the_html_report_lists_a_limitation(tmp_path):
    from click.testing import CliRunner

    from fuzzkern.cli import main

    page = tmp_path / "report.html"
    got = CliRunner().invoke(main, ["run", os.path.join(TARGETS, "pruning_library.py"),
                                    "--budget", "30s", "--max-examples", "30", "--no-db",
                                    "--no-corpus", "--modes", "interpret", "--seed", "1", "-q",
                                    "--html", str(page)])
    assert got.exit_code == 0, got.output
    html = page.read_text()
    assert "fuzzkern-limit (fuzzkern's, not the kernel's; not a failure)" in html
    assert "raised in fuzzkern&#x27;s own code" in html
    assert "pruning_library.py:26 (copy)" in html
