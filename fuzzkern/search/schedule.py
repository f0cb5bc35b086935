"""Spreading a campaign's budget over its targets, in rounds, serially or in parallel processes.

**Rounds and slices.** A campaign runs in up to :data:`ROUNDS` rounds. Each round lasts
``(time left) / (rounds left)`` seconds of wall clock and is cut into one *slice* per target
still in play; a slice is one :func:`fuzzkern.search.engine.fuzz_target` call. In the first round
every target gets the same share. After it, a target's share of the next round is weighted by
what its last slice found that was new to it::

    weight = 0.25 + (new specialization classes) + 2 * (new verdicts) + (1 if the worst error
             score grew)

so a target that keeps reaching new dtypes, alignments, strides or verdicts gets more time,
and one that has settled still gets a quarter-weight trickle. A slice ends at its share (plus
the shrink grace when it found a failure). Each slice is a fresh Hypothesis run: the example
database replays what earlier slices stored under the target's key, so a failure found late in
a slice is not lost; with ``--seed`` slice k runs with seed ``seed + k`` (the first slice with
``seed`` itself), so slices do not repeat each other's cases.

A failure does not end a target: each slice goes on after it, and later slices treat the
failures found so far (and corpus entries that still fail) as known, so they look for new
ones; each distinct failure (verdict family and location,
:func:`fuzzkern.judge.verdict.failure_key`) is shrunk and saved once. A target leaves the campaign
once it has ``max_failures`` new failures, an error, ``max_examples`` cases, or when Hypothesis
stopped by itself before its slice ran out (it has nothing more to try). The corpus replays only in
a target's first slice.

**The budget is a hard stop.** ``opts.stop_at`` is set to the campaign's start plus its
budget, its shrinking time (``opts.shrink_time``: the search ends at the budget,
``opts.search_until``, and a failure found may shrink until then) and
:data:`HARD_STOP_GRACE`; every slice caps its deadlines by it, and the worker pool
cuts a case still running then short (:class:`fuzzkern.execution.pool.StopTime`): the search stops,
each failure found so far is saved (shrunk as far as it got), and the campaign returns, so the
report is written a few seconds after the budget, not after the case in flight, a shrink or an
explanation.

**Parallel.** With ``jobs`` > 1, slices run in that many processes
(:class:`concurrent.futures.ProcessPoolExecutor`, forked from the worker pool's pre-imported
server). Each process runs Hypothesis in its own main thread and owns its own
:class:`~fuzzkern.execution.pool.WorkerPool`, pinned to one GPU through ``CUDA_VISIBLE_DEVICES``
when ``devices`` are given (round robin). A round's capacity is then ``jobs`` slices' worth of wall
clock; no slice is longer than the round, and no process idles while the round's other
slices run (``_Parallel.run_round``, :class:`_Lanes`: an idle process gets another slice of a
target between its slices, or beside one still running). Progress flows back over a queue
as :class:`Progress` snapshots; the parent never runs Hypothesis or a kernel.

**Start-up.** Before the first round the worker starts and imports the targets' modules (and
CUDA for compiled mode: :meth:`~fuzzkern.execution.pool.WorkerPool.warm`); the budget's clock
starts after it, so no target's first slice pays for it.

``on_start(seconds)`` is called once, with the start-up's seconds, when the budget's clock
starts. Events (``on_event(kind, obj, outcome)``): ``"progress"`` with a :class:`Progress` (at most
every 0.2 s per running slice, at once when a slice finds a new failure, and at slice ends),
``"done"`` with a target's final merged :class:`~fuzzkern.search.engine.TargetResult` when it
leaves the campaign.
"""

from __future__ import annotations

import dataclasses
import os
import queue as queue_module
import random
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.verdict import failure_key
from fuzzkern.search.engine import (
    ACCURACY_KEEP,
    RECORD_LIMIT,
    CampaignOptions,
    Failure,
    TargetResult,
    add_compile,
    fuzz_target,
    interrupted,
    same_case_key,
)
from fuzzkern.search.findings import group, keep_accuracy, merge_shows
from fuzzkern.target.loader import LoadedTarget

ROUNDS = 4
#: weight of a target whose last slice found nothing new
BASE_WEIGHT = 0.25
#: seconds between two progress snapshots of one slice
PROGRESS_EVERY = 0.2
#: seconds fuzzing processes get to save their findings after an interrupt before being killed
INTERRUPT_GRACE = 30.0
#: seconds past the budget at which a case still running is cut short (a case started just
#: before the budget ran out has these to finish, as a shrink has to end)
HARD_STOP_GRACE = 2.0
#: seconds past the budget's hard stop after which the parent asks fuzzing processes still
#: running to stop (SIGTERM: they save what they found), should one not have stopped itself
STOP_GRACE = 10.0

#: seconds a worker's warm-up (:meth:`WorkerPool.warm`) may take before the campaign's clock
#: starts; past them the worker is replaced and the first case starts it again
WARM_TIMEOUT = 120.0

#: ``on_event(kind, Progress or TargetResult, outcome or None)``
Event = Callable[[str, Any, Any], None]


@dataclass
class Progress:
    """What the live display shows of one target: totals over the slices so far."""

    target_id: str
    state: str = "waiting"  # waiting, running, done
    cases: int = 0
    #: new failures found (shrunk and saved once each)
    failures: int = 0
    #: corpus entries replayed that still fail
    still_failing: int = 0
    compiles: int = 0
    #: number of specialization classes seen (a coverage signal)
    coverage: int = 0
    seconds: float = 0.0
    slices: int = 0
    status: str = ""

    @property
    def cases_per_s(self) -> float:
        return self.cases / self.seconds if self.seconds > 0 else 0.0


def novelty(before: TargetResult, piece: TargetResult) -> float:
    """How much of ``piece`` (one slice) was new compared with ``before`` (the slices before)."""
    new_specs = len(set(piece.specializations) - set(before.specializations))
    new_verdicts = len(set(piece.counts) - set(before.counts))
    grew = piece.max_score > before.max_score
    # kernel coverage the slice reached first (fuzzkern.execution.interpreter.coverage)
    new_paths = len(piece.coverage.features() - before.coverage.features())
    return new_specs + 2 * new_verdicts + (1 if grew else 0) + new_paths


def _new_failures(have: list[Failure], more: list[Failure]) -> list[Failure]:
    """Of ``more`` (a later slice's failures), those that are not one of ``have`` again
    (:func:`~fuzzkern.search.engine.same_case_key`: two slices can find one bug at two
    locations, e.g. two outputs of one NaN)."""
    seen = {same_case_key(f) for f in have}
    return [f for f in more if same_case_key(f) not in seen]


def merge(into: TargetResult, piece: TargetResult) -> None:
    """Add one slice's result to a target's running total."""
    into.cases += piece.cases
    into.counts.update(piece.counts)
    merge_shows(into.shows, piece.shows)
    into.failures.extend(_new_failures(into.failures, piece.failures))
    group(into)  # one report per failure key, over the slices
    into.seconds += piece.seconds
    into.case_seconds += piece.case_seconds
    into.error = into.error or piece.error
    into.skipped = into.skipped or piece.skipped
    into.compiles += piece.compiles
    into.cache_hits += piece.cache_hits
    into.devices.update(piece.devices)
    into.minimize_runs += piece.minimize_runs
    into.specializations.update(piece.specializations)
    into.replayed += piece.replayed
    into.corpus_failing += piece.corpus_failing
    into.corpus_passing += piece.corpus_passing
    into.corpus_problems += piece.corpus_problems
    into.slow += piece.slow
    into.compile_seconds += piece.compile_seconds
    into.slow_compiles += piece.slow_compiles
    into.variants += piece.variants
    into.empty += piece.empty
    into.killed += piece.killed
    into.limits += [n for n in piece.limits if n not in into.limits]
    into.keys |= piece.keys
    into.coverage.merge(piece.coverage)
    into.stopped = into.stopped or piece.stopped
    into.cut = piece.cut or into.cut
    into.unasked = into.unasked or piece.unasked
    into.discovered.update(piece.discovered)
    into.parity_device += piece.parity_device
    into.parity_judged += piece.parity_judged
    into.parity_disagreed += piece.parity_disagreed
    into.parity_off = into.parity_off or piece.parity_off
    add_compile(into.compile, piece.compile)
    into.unsupported_reason = into.unsupported_reason or piece.unsupported_reason
    rng = random.Random(into.cases)
    for rec in piece.records:
        if len(into.records) < RECORD_LIMIT:
            into.records.append(rec)
        elif rng.random() < RECORD_LIMIT / max(into.cases, 1):
            into.records[rng.randrange(RECORD_LIMIT)] = rec
    into.max_score = max(into.max_score, piece.max_score)
    into.pass_ratio = max(into.pass_ratio, piece.pass_ratio)
    for case, outcome in piece.accuracy:  # the worst case of each finding
        into.accuracy = keep_accuracy(into.accuracy, case, outcome, failure_key(outcome),
                                      ACCURACY_KEEP)
    into.slices += piece.slices
    into.ran_out = piece.ran_out
    into.interrupted = into.interrupted or piece.interrupted


@dataclass
class _Slot:
    lt: LoadedTarget
    total: TargetResult
    weight: float = 1.0
    active: bool = True
    #: seconds its slices ran past their shares (a long compile, a shrink), not yet paid back
    #: from its later shares: what one target overruns is its own, not the other targets'
    debt: float = 0.0
    #: its share of the round now running
    share: float = 0.0
    progress: Progress = field(init=False)

    def __post_init__(self) -> None:
        self.progress = Progress(self.lt.id)

    def snapshot(self, piece_cases: int = 0, piece_failures: int = 0, piece_compiles: int = 0,
                 piece_specs: tuple[str, ...] = (), piece_seconds: float = 0.0,
                 state: str = "running", piece_still_failing: int = 0) -> Progress:
        t = self.total
        p = self.progress
        p.state = state
        p.cases = t.cases + piece_cases
        p.failures = sum(not f.replayed for f in t.failures) + piece_failures
        p.still_failing = sum(bool(f.replayed) for f in t.failures) + piece_still_failing
        p.compiles = t.compiles + piece_compiles
        p.coverage = len(set(t.specializations) | set(piece_specs))
        p.seconds = t.seconds + piece_seconds
        p.slices = t.slices
        return p


def _retire_reason(slot: _Slot, opts: CampaignOptions) -> bool:
    t = slot.total
    if t.error or t.skipped:
        return True
    if sum(not f.replayed for f in t.failures) >= opts.max_failures:
        return True
    if opts.max_examples is not None and t.cases >= opts.max_examples:
        return True
    return t.slices > 0 and not t.ran_out


def _slice_opts(opts: CampaignOptions, slot: _Slot) -> CampaignOptions:
    changes: dict[str, Any] = {}
    if opts.seed is not None:
        changes["seed"] = opts.seed + slot.total.slices
    if opts.draw_seed is not None:
        changes["draw_seed"] = opts.draw_seed + slot.total.slices
    if opts.max_examples is not None:
        changes["max_examples"] = max(1, opts.max_examples - slot.total.cases)
    if slot.total.cases:
        changes["no_case_yet"] = False
    found = sum(not f.replayed for f in slot.total.failures)
    if found:
        changes["max_failures"] = max(1, opts.max_failures - found)
    return dataclasses.replace(opts, **changes) if changes else opts


def _known(slot: _Slot) -> tuple[str, ...]:
    """Failure keys a slot's earlier slices found (new or replayed from the corpus)."""
    return tuple(dict.fromkeys(f.key for f in slot.total.failures))


def _plan(slots: list[_Slot], round_seconds: float, width: int) -> list[tuple[_Slot, float]]:
    """Shares of one round: ``width`` parallel lanes of ``round_seconds`` split by weight, no
    share longer than the round, less what each target's earlier slices overran (its
    ``debt``, paid back here: a target whose debt covers its whole share sits the round out)."""
    active = [s for s in slots if s.active]
    total_w = sum(s.weight for s in active) or 1.0
    capacity = round_seconds * min(width, len(active))
    plan = []
    for s in active:
        fair = min(round_seconds, capacity * s.weight / total_w)
        paid = min(s.debt, fair)
        s.debt -= paid
        s.share = fair - paid
        if s.share > 0 or not s.total.slices:  # a target never run always gets its turn
            plan.append((s, max(s.share, 0.0)))
    plan.sort(key=lambda p: -p[1])  # longest first: fewer idle lanes at the round's end
    return plan


def run_campaign(targets: list[LoadedTarget], opts: CampaignOptions, *,
                 on_event: Event | None = None, pool: WorkerPool | None = None, jobs: int = 1,
                 database_spec: str | None = None, devices: list[str] | None = None,
                 on_start: Callable[[float], None] | None = None) -> list[TargetResult]:
    """Fuzz every target within ``opts.budget`` seconds of wall clock in total, in rounds of
    slices that favour targets still finding new behaviour (see the module doc); ``jobs`` > 1
    fuzzes targets in that many processes at once (``database_spec``: how they open the
    example database; ``devices``: GPUs to pin them to, round robin). Events: ``"progress"``
    with a :class:`Progress`, ``"done"`` with a target's
    :class:`~fuzzkern.search.engine.TargetResult`."""
    emit = on_event or (lambda *a: None)
    slots = [_Slot(lt, TargetResult(lt.id, lt.ref)) for lt in targets]
    for s in slots:
        emit("progress", s.progress, None)
    jobs = max(1, min(jobs, len(slots)))
    runner: _Serial | _Parallel
    refs = [s.lt.ref for s in slots]
    if jobs == 1:  # (its worker warmed up: the budget counts from when it is ready)
        runner = _Serial(opts, pool, emit, refs)
    else:
        runner = _Parallel(opts, jobs, database_spec, devices, emit, refs)
    start = time.monotonic()
    if on_start is not None:
        on_start(getattr(runner, "warmed", 0.0))
    if opts.stop_at is None:  # the budget is a hard stop (fuzzkern.execution.pool.StopTime),
        # moved out by the shrinking time; the search itself ends at the budget
        opts = dataclasses.replace(
            opts, stop_at=start + opts.budget + opts.shrink_time + HARD_STOP_GRACE,
            search_until=start + opts.budget)
        runner.opts = (opts if jobs == 1 else dataclasses.replace(opts, database=None))
    # One target has no one to share with: one slice, one Hypothesis run, whose draws a seed
    # and a case count repeat whatever the budget (slices are cut by time)
    rounds = 1 if len(slots) == 1 else ROUNDS
    try:
        for rnd in range(rounds):
            if interrupted():
                break
            left = opts.budget - (time.monotonic() - start)
            if left <= 0 and rnd > 0:
                break
            if not any(s.active for s in slots):
                break
            round_seconds = max(left, 0.0) / (rounds - rnd)
            plan = _plan(slots, round_seconds, jobs)

            def finish(slot: _Slot, piece: TargetResult, last: bool = rnd == rounds - 1
                       ) -> None:
                """A slice ended: its target is done at once when it retires or this was
                the last round (the display counts targets done as they finish)."""
                gain = novelty(slot.total, piece)
                merge(slot.total, piece)
                slot.debt += max(0.0, piece.seconds - slot.share)
                slot.weight = BASE_WEIGHT + gain
                if _retire_reason(slot, opts) or last or time.monotonic() - start >= opts.budget:
                    slot.active = False
                    slot.snapshot(state="done")
                    emit("done", slot.total, None)
                else:
                    emit("progress", slot.snapshot(state="waiting"), None)

            runner.run_round(plan, first=rnd == 0, finish=finish)
    finally:
        runner.close()
    for s in slots:
        if s.total.slices == 0:
            s.total.skipped = ("interrupted before its turn" if interrupted() else
                               "budget spent before its turn")
        if s.active or s.total.slices == 0:
            s.snapshot(state="done")
            emit("done", s.total, None)
    return [s.total for s in slots]


class _Serial:
    """Slices one after another in this process, with one worker pool."""

    def __init__(self, opts: CampaignOptions, pool: WorkerPool | None, emit: Event,
                 refs: list[str]) -> None:
        self.opts = opts
        #: seconds the worker's warm-up took (before the campaign's clock starts)
        self.warmed = 0.0
        self.emit = emit
        self.own_pool = pool is None
        if pool is None:
            if opts.sanitize:
                from fuzzkern.execution.sanitizer import sanitized_pool

                pool = sanitized_pool(opts.sanitize)
            else:
                pool = WorkerPool(compile_ahead=opts.compile_ahead)
        if not opts.sanitize:
            # Start-up (the worker, the targets' modules, CUDA) happens before the first
            # round's shares are cut, so no target's first slice pays for it.
            self.warmed = pool.warm(list(dict.fromkeys(refs)), _warm_options(opts),
                                    timeout=WARM_TIMEOUT)
        self.pool = pool

    def run_round(self, plan: list[tuple[_Slot, float]], first: bool,
                  finish: Callable[[_Slot, TargetResult], None]) -> None:
        for slot, share in plan:
            last = [0.0, 0]  # when the last snapshot went out, and the failures it counted
            t0 = time.monotonic()

            def on_case(kind: str, piece: Any, outcome: Any, slot: _Slot = slot,
                        last: list[Any] = last, t0: float = t0) -> None:
                now = time.monotonic()
                # a new failure is shown at once; otherwise at most every PROGRESS_EVERY
                news = piece.found_so_far != last[1]
                if kind == "case" and (news or now - last[0] >= PROGRESS_EVERY):
                    last[0], last[1] = now, piece.found_so_far
                    self.emit("progress", slot.snapshot(
                        piece.cases, piece.found_so_far, piece.compiles,
                        tuple(piece.specializations), now - t0,
                        piece_still_failing=len(piece.corpus_failing)), outcome)

            self.emit("progress", slot.snapshot(), None)
            piece = fuzz_target(slot.lt, self.pool, _slice_opts(self.opts, slot), share,
                                on_case, replay_corpus=slot.total.slices == 0,
                                known=_known(slot))
            finish(slot, piece)

    def close(self) -> None:
        if self.own_pool:
            self.pool.close()


# -- parallel processes ------------------------------------------------------------------------

_child: dict[str, Any] = {}


def _ahead_share(compile_ahead: int | str | None, jobs: int) -> str | None:
    """Each of ``jobs`` fuzzing processes' compile-ahead processes, as ``FUZZKERN_AHEAD``:
    ``compile_ahead`` (or the host's default, none: compiling ahead is off unless asked
    for) split between them; None:
    ``FUZZKERN_AHEAD`` is set already and none was given.

    >>> _ahead_share(15, 4), _ahead_share("off", 4), _ahead_share(2, 4)
    ('3', '0', '0')
    """
    from fuzzkern.execution import ahead

    if compile_ahead is None:
        if ahead.AHEAD_ENV in os.environ:
            return None
        return str(max(0, (ahead.default_size() + 1) // jobs - 1))
    return str(ahead.size_of(compile_ahead) // jobs)


def _warm_options(opts: CampaignOptions) -> dict[str, Any]:
    """What a worker's warm-up needs of the campaign (:meth:`WorkerPool.warm`)."""
    return {"modes": tuple(opts.modes), "assume_gpu": opts.assume_gpu}


def _child_init(events: Any, device_queue: Any, sanitize: str | None,
                ahead_share: str | None = None, warm: tuple[list[str], dict[str, Any]] | None
                = None) -> None:
    import signal

    from fuzzkern.execution.pool import die_with_parent
    from fuzzkern.search import engine

    # Die with the fork server, which dies with fuzzkern: nothing fuzzes or writes the corpus
    # after the campaign's process is gone.
    die_with_parent()
    # SIGINT/SIGTERM (from the terminal, or forwarded by the parent) end the slice gracefully:
    # what was found is saved and returned.
    engine._Interrupts.signum = None
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, engine._on_signal)
    env: dict[str, str] = {}
    if device_queue is not None:
        try:
            env["CUDA_VISIBLE_DEVICES"] = str(device_queue.get(timeout=10))
        except queue_module.Empty:  # pragma: no cover
            pass
    if ahead_share is not None:
        from fuzzkern.execution import ahead

        env[ahead.AHEAD_ENV] = ahead_share
    if sanitize:
        from fuzzkern.execution.sanitizer import sanitized_pool

        _child["pool"] = sanitized_pool(sanitize, env)
    else:
        _child["pool"] = WorkerPool(env)
        if warm is not None:  # start-up is the process's, not its first slice's
            _child["pool"].warm(*warm)
    _child["events"] = events


def _child_ready() -> int:
    """Nothing: submitted once per process so that the processes start (and warm up) before
    the campaign's clock does."""
    return os.getpid()


def _child_slice(ref: str, opts: CampaignOptions, database_spec: str | None, share: float,
                 replay_corpus: bool, known: tuple[str, ...] = ()) -> TargetResult:
    """One slice in a child process; runs Hypothesis in this process's main thread."""
    from fuzzkern.gpus import assumed_gpu
    from fuzzkern.search.database import open_database
    from fuzzkern.target import loader

    if database_spec is not None and "db" not in _child:
        _child["db"] = open_database(database_spec)
    opts = dataclasses.replace(opts, database=_child.get("db"))
    with assumed_gpu(opts.assume_gpu):  # a target file may import a library that asks
        lt = loader.load(ref)[0]
    events = _child["events"]
    last = [0.0, 0]  # when the last snapshot went out, and the failures it counted
    t0 = time.monotonic()

    def on_case(kind: str, piece: TargetResult, outcome: Any) -> None:
        now = time.monotonic()
        # a new failure is shown at once (as _Serial does); otherwise at most every
        # PROGRESS_EVERY
        news = piece.found_so_far != last[1]
        if kind == "case" and (news or now - last[0] >= PROGRESS_EVERY):
            last[0], last[1] = now, piece.found_so_far
            events.put((ref, piece.cases, piece.found_so_far, len(piece.corpus_failing),
                        piece.compiles, tuple(piece.specializations), now - t0))

    return fuzz_target(lt, _child["pool"], opts, share, on_case, replay_corpus=replay_corpus,
                       known=known)


#: seconds a process left idle at a round's end must have before it gets another slice (a
#: slice that short spends most of it loading its target and starting its worker)
FILL_MIN = 5.0
#: seed offset of a target's extra slices running beside its slice of the round
_FILL_SEED = 100_003


class _Lanes:
    """The futures of one round of :class:`_Parallel`: which slot each runs, its share, when
    it was first seen running; the pieces of slots whose other slices still run."""

    def __init__(self, parallel: _Parallel, finish: Callable[[_Slot, TargetResult], None]
                 ) -> None:
        self.parallel = parallel
        self.finish = finish
        self.futures: dict[Future[TargetResult], tuple[_Slot, float]] = {}
        self.pending: set[Future[TargetResult]] = set()
        self.by_ref: dict[str, _Slot] = {}
        self.started: dict[Future[TargetResult], float] = {}
        #: per slot (by id): its slices in flight, and the merged piece of those that ended
        self.flying: dict[int, int] = {}
        self.held: dict[int, TargetResult] = {}
        self.extra: dict[int, int] = {}

    def submit(self, slot: _Slot, share: float, opts: CampaignOptions | None = None) -> None:
        p = self.parallel
        fut = p.executor.submit(
            _child_slice, slot.lt.ref, opts or _slice_opts(p.opts, slot), p.database_spec,
            share, slot.total.slices == 0 and not self.flying.get(id(slot)), _known(slot))
        self.futures[fut] = (slot, share)
        self.pending.add(fut)
        self.by_ref[slot.lt.ref] = slot
        self.flying[id(slot)] = self.flying.get(id(slot), 0) + 1

    def seen_running(self) -> None:
        now = time.monotonic()
        for fut in self.pending:
            if fut not in self.started and fut.running():
                self.started[fut] = now

    def ended(self, fut: Future[TargetResult]) -> None:
        slot, _ = self.futures[fut]
        self.flying[id(slot)] -= 1
        if fut.cancelled():
            piece = self.held.pop(id(slot), None)
            if piece is not None and not self.flying[id(slot)]:
                self.finish(slot, piece)
            elif piece is not None:
                self.held[id(slot)] = piece
            return
        try:
            piece = fut.result()
        except Exception as e:  # a broken process pool, an unpicklable result
            piece = TargetResult(slot.lt.id, slot.lt.ref, slices=1,
                                 error=f"fuzzing process failed: {type(e).__name__}: {e}")
        before = self.held.pop(id(slot), None)
        if before is not None:  # the slices ran side by side: one piece, either ran out
            ran_out = before.ran_out or piece.ran_out
            merge(before, piece)
            before.ran_out = ran_out
            piece = before
        if self.flying[id(slot)]:
            self.held[id(slot)] = piece
        else:
            self.finish(slot, piece)

    def fill(self) -> None:
        """Give each idle process another slice, as long as the round's slices still
        running are expected to (their share from when they were first seen running; never
        past the budget's end): a target between its slices first, else one more slice of
        a target running now, beside it (another seed; merged with it)."""
        p = self.parallel
        idle = p.jobs - len(self.pending)
        if idle <= 0 or not self.pending:
            return
        now = time.monotonic()
        # a slice past its share (a first case cut short later, a shrink) runs on for a
        # while yet: the idle process gets slices of FILL_MIN * 2 meanwhile
        ends = [self.started.get(f, now) + self.futures[f][1] for f in self.pending]
        end = max(e if e > now else now + 2 * FILL_MIN for e in ends)
        if p.opts.search_until is not None:
            end = min(end, p.opts.search_until)
        share = end - now
        if share < FILL_MIN:
            return
        slots = list({id(slot): slot for slot, _ in self.futures.values()}.values())
        between = [s for s in slots if s.active and not self.flying.get(id(s))]
        beside = [s for s in slots if s.active and self.flying.get(id(s))]
        for _ in range(idle):
            if between:
                slot = max(between, key=lambda s: s.weight)
                between.remove(slot)
                slot.share = share
                self.submit(slot, share)
            elif beside:
                slot = min(beside, key=lambda s: (self.flying[id(s)], -s.weight))
                self.extra[id(slot)] = k = self.extra.get(id(slot), 0) + 1
                slot.share += share  # the debt counts its slices of the round together
                self.submit(slot, share, _beside_opts(_slice_opts(p.opts, slot), k))
            else:
                return


def _beside_opts(opts: CampaignOptions, k: int) -> CampaignOptions:
    """``opts`` for a target's ``k``-th slice beside the one running: other seeds."""
    changes: dict[str, Any] = {}
    if opts.seed is not None:
        changes["seed"] = opts.seed + k * _FILL_SEED
    if opts.draw_seed is not None:
        changes["draw_seed"] = opts.draw_seed + k * _FILL_SEED
    return dataclasses.replace(opts, **changes) if changes else opts


class _Parallel:
    def __init__(self, opts: CampaignOptions, jobs: int, database_spec: str | None,
                 devices: list[str] | None, emit: Event, refs: list[str]) -> None:
        from fuzzkern.execution.pool import _context

        ctx = _context()
        self.opts = dataclasses.replace(opts, database=None)
        self.database_spec = database_spec
        self.emit = emit
        self.events = ctx.Queue()
        device_queue = None
        if devices:
            device_queue = ctx.Queue()
            for i in range(jobs):
                device_queue.put(devices[i % len(devices)])
        self.jobs = jobs
        self.executor = ProcessPoolExecutor(
            max_workers=jobs, mp_context=ctx, initializer=_child_init,
            initargs=(self.events, device_queue, opts.sanitize,
                      _ahead_share(opts.compile_ahead, jobs),
                      (list(dict.fromkeys(refs)), _warm_options(opts))))
        # Start the processes (their initializer warms each one's worker up) before the
        # budget's clock starts, as _Serial does with its worker
        t0 = time.monotonic()
        wait([self.executor.submit(_child_ready) for _ in range(jobs)], timeout=WARM_TIMEOUT)
        self.warmed = time.monotonic() - t0

    def run_round(self, plan: list[tuple[_Slot, float]], first: bool,
                  finish: Callable[[_Slot, TargetResult], None]) -> None:
        """Hand the round's slices to the processes, longest first, and keep every process
        busy until the round's last slice ends (:meth:`_Lanes.fill`): a process that runs
        out of slices while others still run theirs (a long first case, a shrink, a round
        with fewer targets left than processes) gets another slice. A target's slices that
        ran side by side are merged and reach ``finish`` once, when the last of them ends."""
        lanes = _Lanes(self, finish)
        for slot, share in plan:
            lanes.submit(slot, share)
        forwarded: float | None = None
        while lanes.pending:
            done, lanes.pending = wait(lanes.pending, timeout=0.1, return_when=FIRST_COMPLETED)
            self._drain(lanes.by_ref)
            lanes.seen_running()
            late = (self.opts.stop_at is not None
                    and time.monotonic() > self.opts.stop_at + STOP_GRACE)
            if (interrupted() or late) and forwarded is None:
                forwarded = time.monotonic()
                self._forward()
                for fut in lanes.pending:
                    fut.cancel()  # slices not started yet
            if forwarded is not None and time.monotonic() - forwarded > INTERRUPT_GRACE:
                self._kill()  # the pending futures then fail: broken process pool
            for fut in done:
                lanes.ended(fut)
            if forwarded is None:
                lanes.fill()
        self._drain(lanes.by_ref)

    def _drain(self, by_ref: dict[str, _Slot]) -> None:
        while True:
            try:
                (ref, cases, found, still_failing, compiles, specs,
                 seconds) = self.events.get_nowait()
            except (queue_module.Empty, OSError, EOFError):
                return
            slot = by_ref.get(ref)
            if slot is not None:
                self.emit("progress", slot.snapshot(cases, found, compiles, specs, seconds,
                                                    piece_still_failing=still_failing), None)

    def _processes(self) -> list[Any]:
        return list((getattr(self.executor, "_processes", None) or {}).values())

    def _forward(self) -> None:
        """Pass the interrupt on to the fuzzing processes (a SIGTERM sent to this process alone
        does not reach them), so each saves what it found and returns."""
        import signal

        for p in self._processes():
            try:
                os.kill(p.pid, signal.SIGTERM)
            except (OSError, AttributeError, TypeError):
                pass

    def _kill(self, processes: list[Any] | None = None) -> None:
        for p in self._processes() if processes is None else processes:
            try:
                p.kill()
            except (OSError, AttributeError):
                pass

    def close(self) -> None:
        if interrupted():
            # shutdown() drops its references to the processes and the manager thread even
            # when it does not wait for them: taken first
            processes = self._processes()
            manager = getattr(self.executor, "_executor_manager_thread", None)
            self.executor.shutdown(wait=False, cancel_futures=True)
            for p in processes:
                p.join(INTERRUPT_GRACE)
            self._kill(processes)
            # Let the executor's manager thread see its processes gone and finish: else it can
            # close its wake-up pipe while the interpreter's exit hook (concurrent.futures'
            # _python_exit) writes to it, a race Python 3.11 prints as an OSError traceback at
            # exit ("Bad file descriptor"; seen on a loaded machine after SIGTERM with -j 2).
            if manager is not None:
                manager.join(INTERRUPT_GRACE)
            return
        self.executor.shutdown(wait=True, cancel_futures=True)


#: ``-j auto`` with the compiled mode: at most this many fuzzing processes share one GPU
PROCESSES_PER_GPU = 8


def default_jobs(modes: tuple[str, ...], devices: list[str], cpus: int | None = None) -> int:
    """``-j auto``: with the compiled mode, several processes per GPU (up to
    :data:`PROCESSES_PER_GPU`, and one per two CPU cores); else one per CPU core.

    Why several per GPU: a compiled case that meets a new specialization spends 0.2-3 s
    compiling on one CPU core while the GPU idles, and a compile-heavy suite spends most of its
    time there. Processes sharing a GPU compile on several cores at once and take turns on the
    GPU (a launch takes microseconds). Measured on one H200 with 16 cores (2026-12-02, 8 Liger
    ops, bench/compiled_speed.py): 4 processes 3.8x the cases/s of 1, 8 processes 12x with
    value variants.

    >>> default_jobs(("interpret", "compiled"), ["0", "1"], cpus=16)
    8
    >>> default_jobs(("compiled",), ["0"], cpus=64)
    8
    >>> default_jobs(("compiled",), ["0"], cpus=2)
    1
    >>> default_jobs(("interpret",), [], cpus=2)
    2
    """
    cpus = cpus or os.cpu_count() or 1
    if "compiled" in modes:
        gpus = max(1, len(devices))
        return gpus * max(1, min(PROCESSES_PER_GPU, cpus // (2 * gpus)))
    return max(1, cpus)
