"""`fuzzkern run`: target discovery, the budget schedule, exit codes 0/1/2, reports."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import pytest

from fuzzkern.errors import TargetError
from fuzzkern.judge.outcome import Comparison, ModeResult
from fuzzkern.report import html as htmlreport
from fuzzkern.search import schedule
from fuzzkern.search.engine import RECORD_LIMIT, TargetResult, bound_ratio, case_record, size_class
from fuzzkern.target import loader

HERE = os.path.dirname(os.path.abspath(__file__))
MISBEHAVING = os.path.join(HERE, "targets", "misbehaving.py")
FUZZKERN = [sys.executable, "-m", "fuzzkern"]


def _run(args, cwd, timeout=240):
    return subprocess.run(FUZZKERN + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


# -- exit codes --------------------------------------------------------------------------------


def test_clean_run_exits_0_and_writes_both_reports(tmp_path):
    # counted cases; the budget is for a loaded machine
    res = _run(["run", "fuzzkern.targets.builtin:vector_add", "--budget", "120s", "--no-db",
                "--max-examples", "30", "--corpus", "corpus", "--report", "r.json", "--html",
                "r.html"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (row,) = report["targets"]
    assert row["status"] == "ok" and row["cases"] > 0
    page = (tmp_path / "r.html").read_text()
    assert page.count('class="heatmap"') >= 1 and 'class="errors"' in page
    # not a terminal: plain lines, no live-display escape codes
    assert "\x1b[" not in res.stdout and "builtin.vector_add:" in res.stdout


def test_failures_exit_1(tmp_path):
    # ended by its case count, not the clock (the budget is for a loaded machine)
    res = _run(["run", f"{MISBEHAVING}::raises", "--budget", "120s", "--no-db", "--corpus",
                "corpus", "--seed", "0", "--max-examples", "30"], tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "error" in res.stdout and list((tmp_path / "corpus").rglob("*.json"))


@pytest.mark.parametrize("args, message", [
    (["--budget", "10x"], "Invalid value for --budget"),
    (["--budget", "5s", "-j", "zero"], "-j/--jobs"),
    (["--budget", "5s", "--modes", "gpu"], "--modes"),
    (["nowhere.py", "--budget", "5s"], "does not exist"),
    (["empty_dir", "--budget", "5s"], "no .py file defining"),
    (["--bogus"], "No such option"),
    (["--budget", "5s", "--amortize", "-1"], "--amortize"),
    (["--budget", "5s", "--amortize", "nan"], "--amortize"),
    (["--budget", "5s", "--amortize", "lots"], "--amortize"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    (tmp_path / "empty_dir").mkdir()
    res = _run(["run", *args], tmp_path, timeout=60)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fuzzkern: error:") and message in lines[0]
    assert "Traceback" not in res.stderr


def test_a_run_that_tested_nothing_exits_2(tmp_path):
    res = _run(["run", "fuzzkern.targets.builtin:vector_add", "--budget", "1ms", "--no-db",
                "--no-corpus", "--report", "r.json"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "no case ran within --budget 1ms" in res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["targets"][0]["status"] == "no cases"


# -- discovery ---------------------------------------------------------------------------------

_TARGET_FILE = """
import fuzzkern
from fuzzkern import strategies as fks

def launch(x):
    return x * 2

{name} = fuzzkern.Target(launcher=launch, reference=lambda x: x * 2,
                         inputs=fks.inputs(x=fks.tensors(("N",))), dims={{"N": fks.sizes()}})
"""


def test_folder_targets_skip_hidden_cache_and_venv_folders(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "add_ops.py").write_text(_TARGET_FILE.format(name="add"))
    (tmp_path / "ops" / "helpers.py").write_text("X = 1\n")  # no Target: never imported
    (tmp_path / "ops" / "mentions.py").write_text("# a Target is mentioned\nY = 2\n")
    for skipped in (".hidden", "__pycache__", ".venv", "venv311", "corpus/ops_add",
                    "corpus/more"):
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / "t.py").write_text(_TARGET_FILE.format(name="nope"))
    for name in ("0123456789abcdef.json", "0123456789abcdef.safetensors"):  # an entry: data
        (tmp_path / "corpus" / "ops_add" / name).write_text("{}")
    files = loader.target_files(str(tmp_path))
    assert [os.path.relpath(f, tmp_path) for f in files] == ["ops/add_ops.py", "ops/mentions.py"]
    (lt,) = loader.expand([str(tmp_path)])
    assert lt.ref.endswith("add_ops.py::add")
    (tmp_path / "ops" / "broken.py").write_text("import fuzzkern\nTarget = 1/0\n")
    with pytest.raises(TargetError, match="broken.py"):
        loader.expand([str(tmp_path)])


# -- schedule ----------------------------------------------------------------------------------


def _result(specs=(), verdicts=(), score=0.0, cases=1):
    r = TargetResult("t", "ref", cases=cases, slices=1, ran_out=True, max_score=score)
    r.specializations.update(specs)
    r.counts.update(verdicts)
    return r


def test_novelty_counts_what_a_slice_found_that_was_new():
    before = _result(["dtype:float32"], ["pass"], score=1.0)
    assert schedule.novelty(before, _result(["dtype:float32"], ["pass"], 0.5)) == 0
    assert schedule.novelty(before, _result(["dtype:float16", "stride:0"], ["pass"])) == 2
    assert schedule.novelty(before, _result([], ["oob"])) == 2
    assert schedule.novelty(before, _result([], [], score=3.0)) == 1


def test_plan_weights_shares_and_caps_them_at_the_round():
    a, b, c = (schedule._Slot(SimpleNamespace(ref=n, id=n), TargetResult(n, n))  # type: ignore
               for n in "abc")
    a.weight, b.weight, c.weight = 3.0, 1.0, 0.0
    c.active = False
    shares = {s.lt.ref: share for s, share in schedule._plan([a, b, c], 8.0, width=1)}
    assert shares == {"a": 6.0, "b": 2.0}
    shares = {s.lt.ref: share for s, share in schedule._plan([a, b, c], 8.0, width=4)}
    assert shares == {"a": 8.0, "b": 4.0}  # two lanes: no share longer than the round


def test_merge_adds_up_and_keeps_records_bounded():
    total = TargetResult("t", "ref")
    for _ in range(3):
        piece = _result(["dtype:float32"], ["pass"], cases=RECORD_LIMIT)
        piece.records = [("float32", "contiguous", "1", "pass", 0.0)] * RECORD_LIMIT
        schedule.merge(total, piece)
    assert total.cases == 3 * RECORD_LIMIT and total.slices == 3
    assert len(total.records) == RECORD_LIMIT
    assert total.counts["pass"] == 3


def test_devices_merge_and_show_per_gpu_counts():
    from fuzzkern.report.text import gpu_summary, result_row

    a = "NVIDIA H200 (CUDA_VISIBLE_DEVICES=0, pci 0000:19:00.0)"
    b = "NVIDIA H200 (CUDA_VISIBLE_DEVICES=1, pci 0000:3b:00.0)"
    total = TargetResult("t", "ref")
    schedule.merge(total, TargetResult("t", "ref", cases=5, devices=Counter({a: 5})))
    schedule.merge(total, TargetResult("t", "ref", cases=4, devices=Counter({a: 1, b: 3})))
    assert total.devices == {a: 6, b: 3}
    assert result_row(total)["devices"] == {a: 6, b: 3}
    assert gpu_summary(total.devices) == "0: 6, 1: 3"
    assert gpu_summary({"NVIDIA H200": 2}) == "NVIDIA H200: 2"  # not pinned: the label
    assert gpu_summary({}) == "-"


def test_default_jobs():
    # compiled: several processes per GPU, one per two cores, at most 8 per GPU
    assert schedule.default_jobs(("interpret", "compiled"), ["0", "1", "2"], cpus=6) == 3
    assert schedule.default_jobs(("interpret", "compiled"), ["0", "1", "2"], cpus=24) == 12
    assert schedule.default_jobs(("compiled",), ["0"], cpus=128) == 8
    assert schedule.default_jobs(("interpret",), []) == (os.cpu_count() or 1)


def test_parallel_campaign_runs_slices_in_processes(tmp_path):
    """-j 2: two targets fuzzed at once, in rounds; progress arrives from the processes."""
    from fuzzkern.search import engine

    lts = loader.load_all(["fuzzkern.targets.builtin:vector_add",
                           "fuzzkern.targets.builtin:axpy"])
    events = []
    opts = engine.CampaignOptions(budget=30.0, corpus=None)
    results = schedule.run_campaign(lts, opts, jobs=2,
                                  on_event=lambda k, o, _: events.append((k, o)))
    assert [r.target_id for r in results] == ["builtin.vector_add", "builtin.axpy"]
    assert all(r.cases > 0 and r.slices >= 2 and not r.error for r in results)
    assert any(k == "progress" and o.cases > 0 for k, o in events)
    assert sorted(o.target_id for k, o in events if k == "done") == sorted(
        r.target_id for r in results)


# -- records and the HTML report --------------------------------------------------------------


def test_size_classes():
    assert [size_class(n) for n in (0, 1, 2, 16, 17, 128, 129, 1024, 1025)] == [
        "1", "1", "2-16", "2-16", "17-128", "17-128", "129-1024", "129-1024", ">1024"]


def test_case_record_names_dtype_layout_and_size():
    from fuzzkern.case.model import Case, Layout, TensorCase
    from fuzzkern.judge.outcome import Outcome

    x = TensorCase.build((4, 8), "float16", layout=Layout((1, 0), (1, 2), (0, 0), 1))
    y = TensorCase.build((300,), "float32")
    case = Case({}, {"x": x, "y": y})
    mismatch = Comparison(False, 3, 300, max_abs_error=0.5, max_rel_error=0.25,
                          tolerance="rtol=0.001 atol=1e-05 (float16 default)")
    outcome = Outcome("kernel-bug", "", {"interpret": ModeResult("interpret", "mismatch",
                                                                 comparison=mismatch)})
    # error / bound: the oracle's figures, min(0.5 / 1e-05, 0.25 / 0.001)
    assert case_record(case, outcome) == (
        "float16", "permuted+strided+offset", "129-1024", "kernel-bug", 250.0)
    # no values compared (out of bounds): no error figure
    oob = Outcome("oob-view", "", {"interpret": ModeResult("interpret", "oob-view")})
    assert math.isnan(case_record(case, oob)[4])


def test_bound_ratio_is_error_in_units_of_the_tolerance():
    def cmp(ok, abs_err, rel_err, **kw):
        return Comparison(ok, 0 if ok else 1, 10, max_abs_error=abs_err, max_rel_error=rel_err,
                          tolerance="rtol=1.3e-06 atol=1e-05 (float32 default)", **kw)

    # A near-zero output judged by atol: huge in ulp, well inside the tolerance.
    assert bound_ratio(cmp(True, 2e-6, 1.0)) == pytest.approx(0.2)
    assert bound_ratio(cmp(True, 0.0, 0.0)) == 0.0
    assert bound_ratio(cmp(True, 1.0, 1.0)) == 1.0  # a passing case never lands past the line
    assert bound_ratio(cmp(False, 3e-5, 2.6e-6)) == pytest.approx(2.0)
    assert bound_ratio(cmp(False, 1e-7, 1e-7)) > 1.0  # failing: past the line
    assert bound_ratio(cmp(False, 1.0, 1.0, nonfinite_mismatches=1)) == math.inf
    # The oracle's own figure, once it reports one, is used as is.
    c = cmp(True, 2e-6, 1.0)
    c.bound_ratio = 0.75
    assert bound_ratio(c) == 0.75


def test_html_report_draws_heatmaps_and_error_plots():
    r = TargetResult("ops.add", "ref", cases=4, slices=1)
    r.counts = Counter({"pass": 2, "kernel-bug": 1, "oob-view": 1})
    r.records = [("float16", "contiguous", "1", "pass", 0.0),
                 ("float16", "strided+offset", ">1024", "kernel-bug", 12.0),
                 ("float32", "expanded", "2-16", "pass", 0.5),
                 ("float32", "strided", "2-16", "oob-view", math.nan)]
    page = htmlreport.render([r], budget=60, elapsed=61.0, modes=("interpret",),
                             failures_text={"ops.add": ["ops.add: kernel-bug <x>"]})
    assert page.count('class="heatmap"') == 2  # one per dtype
    assert 'data-failures="1"' in page and 'class="errors"' in page
    assert 'data-verdict="kernel-bug"' in page
    assert "&lt;x&gt;" in page  # escaped
    # The histogram is in units of the tolerance, with the pass line drawn at 1.
    svg = htmlreport.errors_svg(r.records)
    assert 'class="pass-line"' in svg
    bins = dict(re.findall(r'data-label="([^"]+)" data-count="(\d+)"', svg))
    assert bins["0"] == "1" and bins["≤1/2"] == "1" and bins["≤64"] == "1"
    assert sum(map(int, bins.values())) == 3  # the oob-view case compared no values
    assert "no values compared: oob-view 1" in svg


def test_heatmaps_leave_out_layouts_a_target_cannot_draw():
    from fuzzkern import strategies as fks
    from fuzzkern.target.declare import Target

    one_d = Target(launcher=lambda x: x, reference=lambda x: x,
                   inputs=fks.inputs(x=fks.tensors(("N",))), dims={"N": fks.sizes()})
    two_d = Target(launcher=lambda x: x, reference=lambda x: x,
                   inputs=fks.inputs(x=fks.tensors(("M", "N"), expand=True)),
                   dims={"M": fks.sizes(), "N": fks.sizes()})
    assert htmlreport.layout_kinds(one_d) == {"contiguous", "strided", "offset"}
    assert htmlreport.layout_kinds(two_d) == {"contiguous", "permuted", "strided", "offset",
                                              "expanded"}
    records = [("float32", "strided", "2-16", "pass", 0.0)]
    rows = re.findall(r'text-anchor="end">(\w+)</text>',
                      htmlreport.heatmap_svg(records, "float32", {"contiguous", "strided",
                                                                   "offset"}))
    assert rows == ["contiguous", "strided", "offset"]
    # a kind that did occur is drawn even when not expected: nothing that happened is hidden
    rows = re.findall(r'text-anchor="end">(\w+)</text>',
                      htmlreport.heatmap_svg(records, "float32", {"contiguous"}))
    assert rows == ["contiguous", "strided"]


_UNSUPPORTED_FILE = """
import fuzzkern
import triton
import triton.language as tl
from fuzzkern import strategies as fks


@triton.jit
def asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=m)


def launch(x):
    out = x.new_empty(x.shape)
    asm_kernel[(1,)](x, out, x.shape[0], BLOCK=16)
    return out


asm = fuzzkern.Target(launcher=launch, reference=lambda x: x,
                      inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                      dims={"N": fks.sizes(max_value=16)}, modes=("interpret",))
"""


def test_a_run_where_every_case_is_unsupported_exits_2_with_the_reason(tmp_path):
    (tmp_path / "asm_target.py").write_text(_UNSUPPORTED_FILE)
    # (a skip ends the target at its first case: the budget is for a loaded machine)
    res = _run(["run", "asm_target.py", "--budget", "120s", "--no-db", "--no-corpus",
                "--report", "r.json", "-j", "1"], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = res.stderr.strip().splitlines()
    # inline asm on every launch: the target is skipped after its first case, with the reason
    assert line.startswith("fuzzkern: error: no case was tested: every target was skipped (")
    assert "inline assembly (`tl.inline_asm_elementwise`) at asm_target.py:13" in line
    report = json.loads((tmp_path / "r.json").read_text())
    (row,) = report["targets"]
    assert row["status"] == "skipped" and row["cases"] == row["unsupported"] == 1
    assert report["failures"] == []  # nothing shrunk, nothing saved


SLOW_TARGETS = os.path.join(HERE, "targets", "slow_targets.py")


def test_the_budget_is_a_hard_stop(tmp_path):
    """Every case of long_and_wrong sleeps 2.5 s and fails: at the end of a 12 s budget the
    case in flight (one of the shrink's) is cut short, the failure found is saved unshrunk,
    both reports are written and the run exits 1 a few seconds after the budget, not after the
    shrink's grace period (20 s and more). (With --shrink-time 0: no shrinking time past the
    budget; tests/unit/test_minimal_entries.py has a run that gets some.)"""
    import time

    t0 = time.monotonic()
    res = _run(["run", f"{SLOW_TARGETS}::long_and_wrong", "--budget", "12s", "--no-db",
                "--shrink-time", "0", "--case-floor", "0",  # (the budget alone: no top-up)
                "--seed", "1", "-j", "1", "--corpus", "corpus", "--report", "r.json",
                "--html", "r.html"], tmp_path)
    wall = time.monotonic() - t0
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["stopped_at_budget"] is True
    # the saved failure is still explained, within its own share (explain.SHARE): past the
    # budget by that at most; the budget's clock starts once the worker is up
    # (start_up_seconds)
    from fuzzkern.search.explain import SHARE

    assert report["elapsed_seconds"] - report["start_up_seconds"] < 12 + 4 + SHARE
    assert wall < 12 + 4 + SHARE + 30  # plus starting Python, torch and triton
    (failure,) = report["failures"]
    assert failure["verdict"] == "kernel-bug" and failure["shrunk"] is False
    assert "the budget ran out" not in str(failure["explanations"])
    entries = list((tmp_path / "corpus").rglob("*.json"))
    assert len(entries) == 1 and os.path.samefile(entries[0], tmp_path / failure["corpus_path"])
    assert json.loads(entries[0].read_text())["shrunk"] is False
    (row,) = report["targets"]
    assert row["stopped_at_budget"] is True and row["status"] == "FAIL"
    assert (tmp_path / "r.html").stat().st_size > 0
    assert "the budget (12s) ran out while a case ran: it was stopped; 1 failure(s) found, " \
        "1 saved to the corpus" in res.stdout


def test_a_process_left_idle_runs_more_slices_until_the_round_ends():
    """-j 2 with one target left after the first round (the other reached max_examples):
    the second process is not left idle, it runs slices of that target beside it (other
    seeds, merged into one piece per round), so the target gets more slices than rounds and
    each target is done once."""
    from fuzzkern.search import engine

    lts = loader.load_all([os.path.join(os.path.dirname(__file__), "targets",
                                        "uneven_lanes.py")])
    events = []  # (kind, target, state) as they came: a Progress object changes later
    opts = engine.CampaignOptions(budget=40.0, corpus=None, modes=("interpret",), seed=3,
                                  max_examples=60)
    quick, steady = schedule.run_campaign(
        lts, opts, jobs=2, on_event=lambda k, o, _: events.append(
            (k, o.target_id, getattr(o, "state", None))))
    assert quick.cases == 60 and not quick.error
    # the rounds steady ran in: each ends with one merged piece ("waiting", then "done")
    rounds = sum(1 for k, t, state in events if t == "lanes.steady"
                 and (k == "done" or state == "waiting"))
    assert 2 <= rounds <= 4
    # without the idle process's slices: one slice per round (measured: 4 slices, 27 cases
    # of a second each in 40 s; with them 6 or more slices, 45 or more cases)
    assert steady.slices > rounds, (steady.slices, rounds, steady.cases)
    assert not steady.error and not steady.failures
    done = [t for k, t, _ in events if k == "done"]
    assert sorted(done) == ["lanes.quick", "lanes.steady"]
