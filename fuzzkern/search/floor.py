"""The case floor: a target that ran fewer than :data:`FLOOR` cases within its budget gets more
time, so that a loaded machine (a case of seconds, not milliseconds) still tests something.

A budget is wall-clock seconds; what tests a kernel is cases. When a target's search ended
because its time ran out (not because Hypothesis had nothing more to draw, a case limit, a
failure or an error) with fewer than ``floor`` cases, it is fuzzed again, from fresh draws, for
the time its *measured* case cost says the missing cases take (half again, for the variance),
and at most ``cap`` seconds in all: by default the budget once more, so a run takes at most
twice its budget. What was added is said in the summary (:func:`said`), and ``--case-floor 0``
(``--fuzzkern-case-floor 0``) turns it off.

>>> from fuzzkern.search.engine import TargetResult
>>> r = TargetResult("k.t", "k:t", cases=4, case_seconds=8.0, ran_out=True)
>>> short(r, 20, None)
16
>>> round(estimate(r, 20), 1)
48.0
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from fuzzkern.search.engine import CampaignOptions, TargetResult, fuzz_target
from fuzzkern.search.schedule import merge
from fuzzkern.target.loader import LoadedTarget

__all__ = ["FLOOR", "TopUp", "estimate", "said", "short", "top_up", "top_up_campaign"]

#: the default case floor of a pytest fuzz item and of a ``fuzzkern run`` target
FLOOR = 20
#: fresh draws: a top-up's seeds are the run's, moved past anything its slices used
_SEED_STEP = 1000


@dataclass
class TopUp:
    """One target's extra time: cases before and after, seconds added."""

    target_id: str
    before: int
    after: int
    seconds: float
    floor: int

    def text(self) -> str:
        reached = "reached" if self.after >= self.floor else "still under"
        # the added cases come from seeds past the run's: its seed and case count draw the
        # budget's cases again and others in place of these
        return (f"{self.target_id}: {self.before} case(s) in its budget, under the case floor "
                f"{self.floor}: fuzzed {self.seconds:.0f} s more, {self.after} case(s) "
                f"({reached} the floor); the {self.after - self.before} added case(s) are "
                "fresh draws that 'to repeat' does not draw again")


def short(r: TargetResult, floor: int, max_examples: int | None) -> int:
    """How many cases ``r`` is under the floor (0: none, or its search did not end for lack
    of time: a failure, an error, a case limit, or Hypothesis ran out of draws; or it ran no
    case at all, an idle target, which has its own message and no case cost to go by)."""
    want = min(floor, max_examples) if max_examples else floor
    if (not r.cases or r.cases >= want or not r.ran_out or r.error or r.skipped
            or r.interrupted is not None or any(not f.replayed for f in r.failures)):
        return 0
    return want - r.cases


def estimate(r: TargetResult, floor: int) -> float:
    """Seconds the missing cases take at ``r``'s measured case cost, half again."""
    per_case = r.case_seconds / max(r.cases, 1)
    return max(2.0, 1.5 * per_case * max(floor - r.cases, 1))


def _fresh(opts: CampaignOptions, r: TargetResult, budget: float,
           max_examples: int | None) -> CampaignOptions:
    step = _SEED_STEP + r.slices
    return dataclasses.replace(
        opts, budget=budget, stop_at=None, search_until=None,
        seed=None if opts.seed is None else opts.seed + step,
        draw_seed=None if opts.draw_seed is None else opts.draw_seed + step,
        max_examples=None if max_examples is None else max(1, max_examples - r.cases))


def _absorb(r: TargetResult, piece: TargetResult) -> None:
    piece.replayed, piece.corpus_passing, piece.corpus_failing = 0, [], []
    merge(r, piece)


def top_up(lt: LoadedTarget, pool: object, opts: CampaignOptions, r: TargetResult,
           floor: int = FLOOR, cap: float | None = None) -> TopUp | None:
    """Fuzz one target (a pytest item) again until ``floor`` cases or ``cap`` seconds more
    (default: its budget); ``r`` grows by what ran. None when it was not under the floor."""
    cap = opts.budget if cap is None else cap
    before, spent = r.cases, 0.0
    while short(r, floor, opts.max_examples) and spent < cap:
        share = min(cap - spent, estimate(r, floor))
        piece = fuzz_target(lt, pool, _fresh(opts, r, share, opts.max_examples),  # type: ignore[arg-type]
                            share, replay_corpus=False,
                            known=tuple(f.key for f in r.failures))
        spent += piece.seconds
        cases = piece.cases
        _absorb(r, piece)
        if not cases:
            break
    if r.cases == before and not spent:
        return None
    return TopUp(r.target_id, before, r.cases, spent, floor)


def top_up_campaign(loaded: list[LoadedTarget], results: list[TargetResult],
                    opts: CampaignOptions, run: Callable[[list[LoadedTarget], CampaignOptions],
                                                         list[TargetResult]],
                    floor: int = FLOOR, cap: float | None = None) -> list[TopUp]:
    """The CLI's floor: one more campaign (``run``: the campaign runner with its jobs) over
    the targets under the floor, for the longest of their estimates, at most ``cap`` seconds
    (default: the budget); each result grows by its target's part."""
    cap = opts.budget if cap is None else cap
    by_id = {r.target_id: r for r in results}
    under = [lt for lt in loaded if lt.id in by_id
             and short(by_id[lt.id], floor, opts.max_examples)]
    if not under or cap <= 0:
        return []
    need = sum(estimate(by_id[lt.id], floor) for lt in under)
    budget = min(cap, need)
    first = by_id[under[0].id]
    more = run(under, _fresh(opts, first, budget, opts.max_examples))
    out = []
    for piece in more:
        r = by_id[piece.target_id]
        before = r.cases
        _absorb(r, piece)
        out.append(TopUp(r.target_id, before, r.cases, piece.seconds, floor))
    return out


def said(topups: list[TopUp]) -> list[str]:
    """The summary's lines for the targets that got more time."""
    return [f"case floor: {t.text()}" for t in topups]
