"""One report per root cause (fuzzkern/search/findings.py): a failure that shows in several
dtypes and shapes is shrunk, saved and reported once, listing where it showed."""

from __future__ import annotations

import json
import os

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Outcome, Verdict
from fuzzkern.report.text import failure_text, result_row
from fuzzkern.search import engine, findings
from fuzzkern.search.schedule import merge
from fuzzkern.target import loader

KERNELS = os.path.join(os.path.dirname(__file__), "targets", "one_root.py")


def _case(dtype: str, n: int) -> Case:
    return Case({"N": n}, {"p": TensorCase.build((n,), dtype),
                           "q": TensorCase.build((n,), dtype)})


def test_one_root_cause_in_fp16_and_bf16_is_one_report_listing_both(tmp_path):
    """Liger's tvd sums its terms in the inputs' dtype: a precision-bug at the sum's line in
    fp16 and in bf16. One failure, one corpus entry, one report that lists both dtypes and
    the lengths where it showed."""
    (lt,) = loader.load(f"{KERNELS}::tvd_both")
    pool = WorkerPool()
    try:
        opts = engine.CampaignOptions(budget=120, seed=0, database=None, max_examples=20,
                                      corpus=str(tmp_path / "corpus"), explain=False,
                                      minimize_runs=10)
        result = engine.fuzz_target(lt, pool, opts, 120)
    finally:
        pool.close()
    assert [f.outcome.verdict for f in result.failures] == [Verdict.PRECISION_BUG]
    (f,) = result.failures
    assert f.key == "precision-bug @ root one_root.py:18"
    assert f.shows is not None and set(f.shows.dtypes) == {"float16", "bfloat16"}
    assert f.shows.cases >= 3 and len(f.shows.dims) >= 2
    assert all(d.startswith("N=") for d in f.shows.dims)
    text = failure_text(f, lt.ref)
    assert text.count("shows in ") == 1 and "float16 (" in text and "bfloat16 (" in text
    entries = [n for n in os.listdir(tmp_path / "corpus" / os.listdir(tmp_path / "corpus")[0])
               if n.endswith(".json")]
    assert len(entries) == 1
    row = json.loads(json.dumps(result_row(result)))
    assert set(row["failure_shows"][0]["dtypes"]) == {"float16", "bfloat16"}
    assert result.counts[Verdict.PRECISION_BUG] == f.shows.cases


def _failure(dtype: str, n: int, path: str) -> engine.Failure:
    o = Outcome(Verdict.KERNEL_BUG, "wrong", modes={})
    return engine.Failure("t", _case(dtype, n), o, corpus_path=path, replayed=True)


def test_two_entries_of_one_failure_replayed_are_one_report():
    """Two corpus entries of one failure key (an fp16 case and a bf16 one) that still fail:
    one report, which lists both dtypes and the other entry; the entries stay."""
    result = engine.TargetResult("t", "t")
    result.failures = [_failure("float16", 8, "a.json"), _failure("bfloat16", 16, "b.json")]
    findings.group(result)
    (f,) = result.failures
    assert f.also == ["b.json"] and set(f.shows.dtypes) == {"float16", "bfloat16"}
    assert f.shows.dims == ["N=8", "N=16"]
    assert "corpus entry b.json fails too" in failure_text(f)


def test_slices_merge_into_one_report_per_key():
    """Two slices (run one after the other, or side by side) that each found the same failure:
    one report, with both slices' cases counted."""
    total = engine.TargetResult("t", "t")
    for dtype, n in (("float16", 8), ("bfloat16", 16)):
        piece = engine.TargetResult("t", "t")
        f = engine.Failure("t", _case(dtype, n), Outcome(Verdict.KERNEL_BUG, "w", modes={}))
        f.shows = findings.note(piece.shows, f.key, f.case)
        findings.note(piece.shows, f.key, _case(dtype, 2 * n))
        piece.failures = [f]
        merge(total, piece)
    (f,) = total.failures
    assert f.shows is total.shows[f.key] and f.shows.cases == 4
    assert set(f.shows.dtypes) == {"float16", "bfloat16"}


def test_shows_lists_few_dims_and_counts_the_rest():
    s = findings.Shows("k")
    for n in range(1, 13):
        s.add(_case("float16", n))
    s.add(_case("float16", 1))
    assert s.cases == 13 and len(s.dims) == findings.DIMS_LISTED and s.more_dims == 4
    assert s.text() == ("shows in 13 cases: float16 (13); dims N=1; N=2; N=3; N=4; N=5; N=6; "
                        "N=7; N=8 and 4 more")
    other = findings.Shows("k")
    other.add(_case("bfloat16", 99))
    s.merge(other)
    assert s.more_dims == 5 and s.dtypes["bfloat16"] == 1


def test_a_failure_found_now_speaks_for_a_replayed_entry_of_its_key():
    result = engine.TargetResult("t", "t")
    fresh = engine.Failure("t", _case("bfloat16", 16), Outcome(Verdict.KERNEL_BUG, "w", modes={}),
                           corpus_path="new.json")
    result.failures = [_failure("float16", 8, "old.json"), fresh]
    findings.group(result)
    assert result.failures == [fresh] and fresh.also == ["old.json"]
    assert set(fresh.shows.dtypes) == {"float16", "bfloat16"}


def test_a_failure_whose_verdict_changed_after_the_search_joins_its_new_key():
    """A `hang` whose confirmation re-run finished with a precision-bug (Liger's group_norm in
    fp16, on a loaded machine) is that precision-bug, found twice: one report, its cases
    counted with the key's."""
    result = engine.TargetResult("t", "t")
    bug = Outcome(Verdict.KERNEL_BUG, "w", modes={})
    first = engine.Failure("t", _case("float16", 8), bug)
    first.shows = findings.note(result.shows, first.key, first.case)
    hung = engine.Failure("t", _case("float16", 37), Outcome(Verdict.HANG, "h", modes={}))
    hung.shows = findings.note(result.shows, hung.key, hung.case)
    result.failures = [first, engine.Failure("t", hung.case, bug, shows=hung.shows)]
    findings.group(result)
    assert result.failures == [first]
    assert first.shows.dims == ["N=8", "N=37"] and first.shows.cases == 2
    findings.group(result)  # again (a later slice's merge): nothing counted twice
    assert first.shows.cases == 2


def test_accuracy_findings_keep_the_worst_case_of_each_root_line():
    from fuzzkern.judge.outcome import Comparison, ModeResult

    def finding(line: int, score: float) -> Outcome:
        c = Comparison(ok=False, mismatched=1, total=4, accuracy=True, condition={
            "shadow": {"cause": f"line k.py:{line} `y = x.to(tl.float16)`: rounds to fp16"}})
        return Outcome(Verdict.ACCURACY, "rounding", score=score,
                       modes={"interpret": ModeResult("interpret", "accuracy", comparison=c)})

    from fuzzkern.judge.verdict import failure_key

    kept: list = []
    for line, score in ((14, 1.0), (14, 3.0), (14, 2.0), (20, 0.5), (30, 0.7), (40, 0.1)):
        o = finding(line, score)
        kept = findings.keep_accuracy(kept, _case("float16", 4), o, failure_key(o), 3)
    assert [(failure_key(o), o.score) for _, o in kept] == [
        ("accuracy @ root k.py:14", 3.0), ("accuracy @ root k.py:30", 0.7),
        ("accuracy @ root k.py:20", 0.5)]


def test_one_kernel_line_reached_from_two_targets_is_reported_once(tmp_path):
    """Two targets on one kernel (an op and a variant of it) fail at the same root line: the
    first target's failure is the report; the second says it is the same root cause, with its
    own case and corpus entry (replay needs it), and the JSON report says so too."""
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", KERNELS, "--budget", "240s", "--no-db",
         "--seed", "0", "--max-examples", "20", "--corpus", "corpus", "--report", "r.json",
         "--case-floor", "0"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    by_target = {f["target"]: f for f in report["failures"]}
    assert set(by_target) == {"tvd_both", "tvd_twice"}, list(by_target)
    first, second = by_target["tvd_both"], by_target["tvd_twice"]
    assert first["key"] == second["key"] == "precision-bug @ root one_root.py:18"
    assert first["same_root_as"] is None and second["same_root_as"] == "tvd_both"
    assert res.stdout.count("the same root cause as tvd_both's failure reported above "
                            "(precision-bug @ root one_root.py:18)") == 1
    # the root cause's explanation is printed once, in the first report
    assert res.stdout.count("tvd_twice: precision-bug — the same root cause") == 1
    assert second["corpus_path"] and os.path.exists(tmp_path / second["corpus_path"])
