"""Progress that tells the truth (issue 32, item 8): the heartbeat and the live table count
corpus entries that still fail, targets are done as they finish (not all at the campaign's
end), and the figures of a mismatch that is only NaN/inf positions say so."""

from __future__ import annotations

from rich.console import Console

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.cli import _Display
from fuzzkern.judge.outcome import Comparison, Outcome
from fuzzkern.search import engine, schedule
from fuzzkern.search.schedule import Progress
from fuzzkern.target import loader


def test_the_heartbeat_counts_corpus_entries_that_still_fail_and_targets_done():
    display = _Display(Console(width=200), ["a", "b"], 60.0, live=False, quiet=True)
    display.on_event("progress", Progress("a", state="running", cases=7, still_failing=2), None)
    line = display.heartbeat_line()
    assert "0/2 targets done, 7 cases, 0 new failures, 2 corpus entries still failing" in line
    assert "a (7 cases, 2 entries still failing)" in line
    case = Case({"N": 1}, {"x": TensorCase.build((1,), "float32")})
    result = engine.TargetResult("a", "a.py::a", cases=9)
    replayed = engine.Failure("a", case, Outcome("kernel-bug", "wrong"), replayed=True)
    new = engine.Failure("a", case, Outcome("oob", "past the end"))
    result.failures = [replayed, new]
    display.on_event("done", result, None)
    line = display.heartbeat_line()
    assert "1/2 targets done, 9 cases, 1 new failure, 1 corpus entry still failing" in line


def test_a_target_is_done_when_its_last_slice_ends_not_at_the_campaign_end(monkeypatch):
    # one round: each target's first slice is its last, so it is done as soon as it ends,
    # while the other target still runs
    monkeypatch.setattr(schedule, "ROUNDS", 1)
    targets = loader.load("fuzzkern.targets.builtin:vector_add") + loader.load(
        "fuzzkern.targets.builtin:axpy")
    events = []
    # each target's slice ends at its case count (the budget is for a loaded machine)
    opts = engine.CampaignOptions(budget=120.0, modes=("interpret",), database=None, seed=0,
                                  max_examples=5)
    schedule.run_campaign(targets, opts, on_event=lambda kind, obj, _: events.append(
        (kind, obj.target_id, getattr(obj, "state", None))))
    first, second = (i for i, e in enumerate(events) if e[0] == "done")
    assert events[first][1] == "builtin.vector_add" and events[second][1] == "builtin.axpy"
    assert ("progress", "builtin.axpy", "running") in events[first:second], events


def test_a_mismatch_only_at_nan_positions_gives_no_error_figures():
    nan_only = Comparison(ok=False, mismatched=1, total=2, nonfinite_mismatches=1,
                          tolerance="rtol=1.3e-06 atol=1e-05 (float32 default)")
    text = nan_only.summary()
    assert text.startswith("1/2 elements differ (each at a NaN/inf position, no finite error "
                           "to measure; tolerance rtol=1.3e-06"), text
    assert "max abs" not in text
    mixed = Comparison(ok=False, mismatched=3, total=4, nonfinite_mismatches=1,
                       max_abs_error=0.5, max_rel_error=0.25, max_ulp_error=9.0, tolerance="t")
    assert "(max abs 0.5, max rel 0.25, max 9 ulp over the finite ones; tolerance t)" in \
        mixed.summary()


def test_a_failure_counts_while_it_is_being_shrunk():
    """A failure is counted as soon as it is found, not when its slice ends (a target fuzzed
    alone runs as one slice: its failures would show only at the run's end)."""
    import os

    misbehaving = os.path.join(os.path.dirname(__file__), "targets", "misbehaving.py")
    targets = loader.load(f"{misbehaving}::raises")  # every case fails the same way
    events = []
    # the first case fails: found at a case count, not within seconds of a loaded machine
    opts = engine.CampaignOptions(budget=120.0, modes=("interpret",), database=None, seed=0,
                                  max_examples=10)
    schedule.run_campaign(targets, opts, on_event=lambda kind, obj, _: events.append(
        (kind, getattr(obj, "state", None), getattr(obj, "failures", None))))
    done = next(i for i, e in enumerate(events) if e[0] == "done")
    assert any(kind == "progress" and state == "running" and failures == 1
               for kind, state, failures in events[:done]), events


def test_a_failure_counts_while_it_is_being_shrunk_in_parallel_processes():
    """As above with -j 2: a fuzzing process reports a new failure at once, not only at its
    slice's end (nor at the next tick, which a fast machine's whole slice can fit before)."""
    import os

    misbehaving = os.path.join(os.path.dirname(__file__), "targets", "misbehaving.py")
    targets = loader.load(f"{misbehaving}::raises") + loader.load(
        "fuzzkern.targets.builtin:vector_add")
    events = []
    opts = engine.CampaignOptions(budget=120.0, modes=("interpret",), database=None, seed=0,
                                  max_examples=10)
    schedule.run_campaign(targets, opts, jobs=2, on_event=lambda kind, obj, _: events.append(
        (kind, obj.target_id, getattr(obj, "state", None), getattr(obj, "failures", None))))
    mine = [(kind, state, failures) for kind, target, state, failures in events
            if target.endswith("misbehaving::raises")]
    done = next(i for i, e in enumerate(mine) if e[0] == "done")
    assert any(kind == "progress" and state == "running" and failures == 1
               for kind, state, failures in mine[:done]), mine
