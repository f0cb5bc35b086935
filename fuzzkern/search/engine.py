"""The fuzzing engine: Hypothesis drives generation and shrinking, workers run the cases.

One campaign fuzzes a list of targets within a wall-clock budget (docs/architecture.md, search), in
rounds of slices that favour targets still finding new behaviour, serially or in parallel
processes (:mod:`fuzzkern.search.schedule`). :func:`fuzz_target` fuzzes one target for one slice.
Hypothesis has no time budget of its own: the test body checks the clock and stops the run by
raising an exception Hypothesis does not catch (a ``BaseException``), so a budget never turns
into a fake failure.

A failing case is shrunk by Hypothesis, then by :mod:`fuzzkern.search.minimize` (smaller cases that
need several changes at once, such as a smaller dim with another seed). Shrinking may run past
the target's share, up to a grace period; if even that runs out, the smallest failing case seen
so far is kept, so nothing found is ever lost.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import os
import random
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.errors import BudgetError
from fuzzkern.execution.interpreter.coverage import KernelCoverage
from fuzzkern.execution.pool import (
    COMPILE_TIMEOUT,
    COST_CAP_FRACTION,
    COST_CAP_MIN,
    StopTime,
    WorkerPool,
)
from fuzzkern.judge.outcome import Outcome, Verdict, tested_cases
from fuzzkern.judge.verdict import failure_key
from fuzzkern.search import findings
from fuzzkern.search.findings import Shows
from fuzzkern.search.guidance import Climbed, Guide
from fuzzkern.search.misuse import launcher_misuse
from fuzzkern.strategies._internal.inputs import discover
from fuzzkern.target.declare import Target
from fuzzkern.target.loader import LoadedTarget

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|h|m|s)?")


#: seconds a case still running at its slice's end may go on before it is cut short (or the
#: share itself, or OVERRUN_FRACTION of the campaign's budget, whichever is longest): room for
#: a library's first import and compile, or an interpreted first case that costs more than a
#: round's share, while a case that would take minutes leaves the other targets their shares
#: (the overrun is paid back from the target's later shares: fuzzkern.search.schedule). A case
#: cut short is lost work, and a target whose first case is always cut never runs one, so the
#: stop is a safety net for the extreme case, not the share itself.
SLICE_OVERRUN = 10.0
OVERRUN_FRACTION = 1 / 8
#: the same for a target that has not finished one case yet (``CampaignOptions.no_case_yet``):
#: its first case is all its search has, and cutting it again and again (a library op whose
#: first compile takes 40 s beside other runs) leaves the target idle for the whole campaign
FIRST_CASE_FRACTION = 1 / 4


def parse_budget(text: str) -> float:
    """Seconds in ``90s``, ``10m``, ``1h``, ``1h30m`` or a plain number of seconds.

    >>> parse_budget("1m30s")
    90.0
    """
    s = str(text).strip().lower()
    pos = 0
    total = 0.0
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, None: 1.0}
    order = list(units)
    last = -1  # the index in ``order`` of the last unit read: each unit once, largest first
    if not s:
        raise BudgetError("empty budget; expected a duration like 90s, 10m or 1h")
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if not m or m.end() == pos:
            raise BudgetError(
                f"Expected a duration like 90s, 10m, 1h or 1h30m but got budget={text!r}."
            )
        if m.group(2) is None and m.end() < len(s):
            unit = re.match(r"[^\d.\s]+", s[m.end():])
            raise BudgetError(f"unknown unit {unit.group(0) if unit else s[m.end():]!r} in "
                              f"{str(text).strip()!r}: use s, m or h (90s, 10m, 1h30m)")
        if m.group(2) is None and last >= 0:
            raise BudgetError(f"budget={str(text).strip()!r}: give the unit of "
                              f"{m.group(1)!r} (1h30m, not 1h30)")
        if order.index(m.group(2)) <= last:
            raise BudgetError(f"budget={str(text).strip()!r}: each unit once, largest first "
                              "(1h30m, 10m30s), not repeated or out of order")
        last = order.index(m.group(2))
        total += float(m.group(1)) * units[m.group(2)]
        pos = m.end()
    if not math.isfinite(total) or total <= 0:
        raise BudgetError(f"Expected a positive, finite duration but got budget={text!r}.")
    return total


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived while fuzzing: stop the search, keep what was found."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Interrupts:
    """The signal handlers :func:`handle_interrupts` installs and their state: the first
    signal is recorded; an :class:`Interrupted` is raised only inside :func:`interruptible`
    sections (running cases, shrinking), never while a failure is being saved."""

    signum: int | None = None
    armed: bool = False


def _on_signal(signum: int, frame: Any) -> None:
    if _Interrupts.signum is None:
        _Interrupts.signum = signum
    if _Interrupts.armed:
        _Interrupts.armed = False
        raise Interrupted(signum)


def interrupted() -> int | None:
    """The signal that interrupted this process's campaign, if one did."""
    return _Interrupts.signum


@contextmanager
def interruptible() -> Iterator[None]:
    """A section a SIGINT/SIGTERM may cut short (raising :class:`Interrupted` in it)."""
    if _Interrupts.signum is not None:
        raise Interrupted(_Interrupts.signum)
    was = _Interrupts.armed
    _Interrupts.armed = True
    try:
        yield
    finally:
        _Interrupts.armed = was


@contextmanager
def handle_interrupts() -> Iterator[None]:
    """While active (main thread only), SIGINT and SIGTERM stop the campaign gracefully: the
    search stops, every failure found so far is saved (shrunk as far as it got), and
    :func:`interrupted` says which signal came."""
    import signal

    _Interrupts.signum = None
    _Interrupts.armed = False
    old = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _Interrupts.armed = False


class _BudgetExhausted(BaseException):
    """Stops a Hypothesis run at the deadline. A BaseException, so Hypothesis does not treat it
    as a failure to shrink."""


class _CasesDone(BaseException):
    """Stops a Hypothesis run at ``max_examples`` cases (fuzzkern counts them, not Hypothesis,
    whose draws depend on its own ``max_examples``: a repeat with a case count draws what an
    unlimited run drew). A BaseException, so Hypothesis does not treat it as a failure."""


class _Misuse(BaseException):
    """Stops a Hypothesis run at a case that shows a usage error (search/misuse.py)."""


class KernelFailure(AssertionError):
    """Raised inside the Hypothesis test for a failing outcome; one subclass per verdict
    family (:data:`VERDICT_FAMILIES`), so Hypothesis keeps distinct kinds of failure apart
    when it shrinks."""

    outcome: Outcome


_failure_types: dict[str, type[KernelFailure]] = {}

def _failure_type(key: str) -> type[KernelFailure]:
    """One exception type per failure key: Hypothesis tells failures apart by exception type
    and line (its ``interesting_origin``), so each key shrinks separately."""
    if key not in _failure_types:
        name = "".join(p.capitalize() for p in re.split(r"[^A-Za-z0-9]+", key) if p)
        _failure_types[key] = type(name or "KernelFailure", (KernelFailure,), {"key": key})
    return _failure_types[key]


class _RunDatabase(ExampleDatabase):
    """The example database as one fuzzing attempt sees it.

    - Hypothesis saves the case a test body was interrupted in, whatever the exception: the
      case cut short at the deadline is no failure, so saves stop once ``stopping`` is set.
    - With ``keep_known``, known failures count as passes: Hypothesis deletes a stored example
      that no longer fails when it replays it, but a known failure's example must stay for
      the next run. Only examples saved during this attempt are then deleted or moved.
    """

    def __init__(self, db: ExampleDatabase, keep_known: bool) -> None:
        super().__init__()
        self.db = db
        self.keep_known = keep_known
        self.stopping = False
        self.saved: set[bytes] = set()

    def save(self, key: bytes, value: bytes) -> None:
        if self.stopping:
            return
        self.saved.add(value)
        self.db.save(key, value)

    def fetch(self, key: bytes) -> Any:
        return self.db.fetch(key)

    def delete(self, key: bytes, value: bytes) -> None:
        if not self.keep_known or value in self.saved:
            self.db.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if not self.keep_known or value in self.saved:
            self.db.move(src, dest, value)
        elif not self.stopping:
            self.db.save(dest, value)


@dataclass
class Failure:
    """A failing case and what happened, after shrinking."""

    target_id: str
    case: Case
    outcome: Outcome
    #: False when the budget (plus grace) ran out before shrinking finished
    shrunk: bool = True
    flaky: bool = False
    #: the corpus entry (JSON file) this failure is saved as, or was replayed from
    corpus_path: str | None = None
    #: what the failure depends on, from variants of the minimal case (fuzzkern.search.explain)
    explanations: list[str] = field(default_factory=list)
    #: True when this is a corpus entry that still fails, not a case found by this run
    replayed: bool = False
    #: smaller failing cases fuzzkern.search.minimize accepted after Hypothesis's shrink (0: none)
    minimized: int = 0
    #: True when SIGINT/SIGTERM stopped the run before shrinking finished
    interrupted: bool = False
    #: a ``hang`` the budget left no time to confirm by a re-run: reported, never saved
    unconfirmed: bool = False
    #: when (``time.time()``) the first failing case of this key ran, before shrinking
    found_at: float | None = None
    #: why saving it to the corpus failed (a full disk, a folder that cannot be written)
    not_saved: str | None = None
    #: every case that showed this failure's key, its dtypes and dims (one report per root
    #: cause: :mod:`fuzzkern.search.findings`)
    shows: Shows | None = None
    #: other corpus entries of the same failure that still fail (reported with this one)
    also: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Verdict family and location: what tells distinct failures apart."""
        return failure_key(self.outcome)


#: most per-case records a TargetResult keeps (a uniform sample of all cases beyond that)
RECORD_LIMIT = 4000
#: accuracy findings kept per target (the worst ones)
ACCURACY_KEEP = 3

#: size classes of a case (numel of its largest tensor), for the report's heatmaps
SIZE_CLASSES = ("1", "2-16", "17-128", "129-1024", ">1024")

#: layout kinds of a case (fuzzkern.case.model.Layout.kinds, or contiguous)
LAYOUT_KINDS = ("contiguous", "permuted", "strided", "offset", "expanded")


def size_class(numel: int) -> str:
    """The report's size class of ``numel`` elements.

    >>> size_class(1), size_class(16), size_class(2000)
    ('1', '2-16', '>1024')
    """
    if numel <= 1:
        return "1"
    for bound, name in ((16, "2-16"), (128, "17-128"), (1024, "129-1024")):
        if numel <= bound:
            return name
    return ">1024"


def bound_ratio(comparison: Any) -> float:
    """The worst element's error over its tolerance bound in one comparison: <= 1 passes,
    > 1 fails, ``inf`` for a NaN/inf position or shape that differs.

    The one place the HTML report's error figure comes from. It uses the oracle's own
    ``Comparison.bound_ratio`` when the comparison carries one; otherwise it estimates from the
    summary figures: ``min(max_abs / atol, max_rel / rtol)`` (an upper bound of the true ratio,
    as both maxima may come from different elements), capped at 1 for a passing comparison.
    """
    if comparison.structural or comparison.nonfinite_mismatches:
        return math.inf  # (the oracle's own ratio is over the finite pairs only)
    own = getattr(comparison, "bound_ratio", None)
    if own is not None:
        return float(own)
    m = re.search(r"rtol=(\S+) atol=(\S+)", comparison.tolerance or "")
    if m is None:
        return 0.0 if comparison.ok else math.inf
    rtol, atol = float(m.group(1)), float(m.group(2))
    abs_err, rel_err = comparison.max_abs_error, comparison.max_rel_error
    if not abs_err:
        ratio = 0.0
    else:
        ratio = min(abs_err / atol if atol > 0 else math.inf,
                    rel_err / rtol if rtol > 0 else math.inf)
    if comparison.ok:
        return min(ratio, 1.0)
    return ratio if ratio > 1.0 else math.nextafter(1.0, 2.0)


def tolerance_ratio(outcome: Outcome) -> float:
    """The largest :func:`bound_ratio` over the modes that compared values, or NaN when none
    did (an access out of bounds, a crash, an error: no value error to show)."""
    ratios = [bound_ratio(m.comparison) for m in outcome.modes.values()
              if m.comparison is not None and m.status in ("ok", "mismatch", "accuracy",
                                                            "precision")]
    return max(ratios) if ratios else math.nan


def case_record(case: Case, outcome: Outcome) -> tuple[str, str, str, str, float]:
    """(dtype, layout kinds joined by ``+``, size class, verdict, error over bound) of one case:
    what the HTML report's heatmaps and error plots are drawn from. The dtype is the first
    tensor's; the layout kinds are those of every tensor; the size is the largest tensor's
    numel; the error is :func:`tolerance_ratio` (NaN when no mode compared values)."""
    tensors = list(case.tensors.values())
    dtype = tensors[0].dtype if tensors else "-"
    kinds: set[str] = set()
    for t in tensors:
        if t.layout is not None:
            kinds.update(t.layout.kinds())
        elif not t.is_contiguous:  # pragma: no cover - cases from strategies carry a layout
            kinds.add("strided")
    layout = "+".join(k for k in LAYOUT_KINDS if k in kinds) or "contiguous"
    numel = max((t.numel for t in tensors), default=1)
    return (dtype, layout, size_class(numel), outcome.verdict, tolerance_ratio(outcome))


@dataclass
class TargetResult:
    target_id: str
    ref: str
    cases: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    case_seconds: float = 0.0
    error: str | None = None
    #: compiled mode: real compilations and on-disk cache hits during this target's cases
    compiles: int = 0
    cache_hits: int = 0
    #: specialization classes the cases exercised (dtype, ==1, %16, 16-byte alignment, ...)
    specializations: Counter[str] = field(default_factory=Counter)
    #: why the target was not fuzzed at all (e.g. the budget ran out before its turn)
    skipped: str | None = None
    #: corpus entries replayed before fuzzing, those that still fail and those that now pass
    replayed: int = 0
    corpus_failing: list[str] = field(default_factory=list)
    corpus_passing: list[str] = field(default_factory=list)
    #: corpus files that could not be read, replayed or written, with the reason
    corpus_problems: list[str] = field(default_factory=list)
    #: (dtype, layout kinds, size class, verdict, error score) per case (:func:`case_record`):
    #: every case up to RECORD_LIMIT, then a uniform sample of them (reservoir sampling)
    records: list[tuple[str, str, str, str, float]] = field(default_factory=list)
    #: the largest error score seen (how far the worst case was from passing)
    max_score: float = 0.0
    #: slices this target was fuzzed in (fuzzkern.search.schedule) and whether the last one ended
    #: because its time ran out (False: Hypothesis stopped by itself, e.g. it ran out of cases)
    slices: int = 0
    ran_out: bool = False
    #: of ``cases``: those that shrank a failure (Hypothesis's shrinker replaying and shrinking
    #: a failing draw, then fuzzkern.search.minimize looking for smaller failures): the others
    #: are the cases drawn
    minimize_runs: int = 0
    #: distinct new failures this slice has found so far, shrunk or not (for progress: its
    #: ``failures`` are filled at the slice's end)
    found_so_far: int = 0
    #: compiled mode: the GPUs this target's cases ran on (:func:`device_label`) -> cases
    devices: Counter[str] = field(default_factory=Counter)
    #: cases that ran past the timeout once and finished on a re-run (not hangs), in words
    slow: list[str] = field(default_factory=list)
    #: compiled mode: seconds spent compiling (not counted against cases' timeouts), and
    #: cases stopped at the compile limit (verdict ``slow``)
    compile_seconds: float = 0.0
    slow_compiles: int = 0
    #: compiled mode: of ``cases``, the value variants run after a case that compiled
    #: (``CampaignOptions.amortize``)
    variants: int = 0
    #: distinct :func:`specialization_key` values of the cases (new specialization classes)
    keys: set[str] = field(default_factory=set)
    #: True when the campaign's hard stop (the end of ``--budget``) cut a running case of this
    #: target short (fuzzing, shrinking, confirming a hang or explaining a failure)
    stopped: bool = False
    #: the message of the first ``unsupported`` case (why a mode could not run the kernel)
    unsupported_reason: str | None = None
    #: the signal (SIGINT, SIGTERM) that stopped this target's fuzzing early, if one did
    interrupted: int | None = None
    #: accuracy findings (oracle rule 9, not failures unless strict): the worst few cases,
    #: highest error score first (:meth:`note_accuracy`)
    accuracy: list[tuple[Case, Outcome]] = field(default_factory=list)
    #: the largest error over bound among passing cases: how close the kernel came to the line
    pass_ratio: float = 0.0
    #: of ``cases``: those that tested something but had no element in any tensor input (an
    #: empty case compares nothing: a target all of whose cases are empty is untested)
    empty: int = 0
    #: processes the cases started that were still running at their case's end, and were
    #: killed (fuzzkern.execution.pool.end_descendants)
    killed: int = 0
    #: kernel coverage of the cases run in the interpreter (fuzzkern.execution.interpreter.coverage)
    coverage: KernelCoverage = field(default_factory=KernelCoverage)
    #: findings that were fuzzkern's, not the kernel's (verdict ``fuzzkern-limit``,
    #: :mod:`fuzzkern.search.confirm`), each in words with its case
    limits: list[str] = field(default_factory=list)
    #: autotuned kernels the cases reached at run time that the launcher's code does not name
    #: (kernel -> number of configs): later cases draw a config for them
    discovered: dict[str, int] = field(default_factory=dict)
    #: a slice's own stop (its share and grace spent) cut a running case short, in words
    #: ("first case still compiling after 40 s: 12 kernels compiled"); the campaign's stop
    #: is ``stopped``
    cut: str | None = None
    #: skipped because it runs in none of the modes asked (the user's choice, not idle)
    unasked: bool = False
    #: compiled mode, value variants: references computed on the device (``parity_device``),
    #: a sample judged with both device and CPU references (``parity_judged``), verdicts they
    #: disagreed on (``parity_disagreed``), and why device references were turned off, if
    #: they were (fuzzkern.execution.references)
    parity_device: int = 0
    parity_judged: int = 0
    parity_disagreed: int = 0
    parity_off: str | None = None
    #: what the worker pool's ``compile_stats()`` grew by during this target's slices:
    #: compile wait against compile work, compilations served from compiling ahead
    compile: dict[str, Any] = field(default_factory=dict)
    #: per failure key (failures and accuracy findings): the cases that showed it, their
    #: dtypes and dims (:mod:`fuzzkern.search.findings`)
    shows: dict[str, Shows] = field(default_factory=dict)

    @property
    def tested(self) -> int:
        """Of ``cases``, those that tested something: not untested verdicts, not empty."""
        return tested_cases(self.cases, self.counts) - self.empty

    @property
    def idle(self) -> bool:
        """It ran no case though the run asked it to: the budget ran out before its turn, or
        before its first case finished (not: an error, an interrupt, or modes not asked)."""
        return (self.cases == 0 and not self.failures and self.error is None
                and self.interrupted is None and not self.unasked)

    def idle_reason(self) -> str:
        """Why an :attr:`idle` target ran no case, in words."""
        if self.cut:
            return self.cut
        if self.skipped:
            return self.skipped
        return "its turn came but no case finished within its share of the budget"

    def note_case(self, case: Case, outcome: Outcome) -> None:
        """Track the tightness of passing cases and keep the worst accuracy findings."""
        if outcome.verdict == Verdict.PASS:
            for m in outcome.modes.values():
                if m.comparison is not None and m.comparison.ok:
                    self.pass_ratio = max(self.pass_ratio, bound_ratio(m.comparison))
        elif outcome.verdict == Verdict.ACCURACY:  # the worst case of each finding
            self.accuracy = findings.keep_accuracy(self.accuracy, case, outcome,
                                                   failure_key(outcome), ACCURACY_KEEP)

    def add_record(self, record: tuple[str, str, str, str, float]) -> None:
        """Keep ``record`` (the ``cases``-th, already counted) in a bounded uniform sample."""
        if len(self.records) < RECORD_LIMIT:
            self.records.append(record)
            return
        j = random.Random(self.cases).randrange(self.cases)
        if j < RECORD_LIMIT:
            self.records[j] = record

    @property
    def failed(self) -> bool:
        return bool(self.failures) or self.error is not None


def new_draw_seed() -> int:
    """A fresh seed for an unseeded run's draws (see ``CampaignOptions.draw_seed``)."""
    return random.SystemRandom().randrange(1, 2**31)


@dataclass
class CampaignOptions:
    budget: float = 60.0
    modes: tuple[str, ...] = ("interpret",)
    database: ExampleDatabase | None = None
    seed: int | None = None
    #: an unseeded run's draws come from this seed (printed, so ``--seed N`` repeats them),
    #: while the example database stays in use; ``seed`` wins when both are set
    draw_seed: int | None = None
    max_examples: int | None = None
    #: extra time a shrink may take past a target's share: max(grace_min, grace_fraction*share)
    grace_min: float = 20.0
    grace_fraction: float = 1.0
    timeout: float | None = None
    debug: bool = False
    #: hygiene checks to turn off or on by name (bounds, view, poison, mutation, redzone; all
    #: on by default, see fuzzkern.target.declare.DEFAULT_CHECKS)
    checks: dict[str, bool] = field(default_factory=dict)
    #: run the compiled kernel this many times per case and compare the runs bitwise (>= 2:
    #: the nondeterministic verdict)
    repeat_compiled: int = 1
    #: path of compute-sanitizer: workers run under its memcheck tool (fuzzkern.execution.sanitizer;
    #: ``fuzzkern run --sanitize`` probes it first), None: plain forkserver workers
    sanitize: str | None = None
    #: regression corpus folder: its entries of a target replay before the target is fuzzed,
    #: and each failure found is saved there (None: neither)
    corpus: str | None = None
    #: run a few variants of each shrunk failure to say what it depends on
    explain: bool = True
    #: accuracy findings (oracle rule 9) fail like kernel bugs
    strict_accuracy: bool = False
    #: a failed comparison is judged by the float64 shadow (docs/oracle.md); False: by the
    #: reference's conditioning alone (the rules from outside)
    shadow: bool = True
    #: on a machine without CUDA, the GPU torch.cuda's host queries answer as (a key of
    #: fuzzkern.gpus.GPUS; docs/interpreter.md, "A declared GPU"); None: none assumed
    assume_gpu: str | None = None
    #: most worker runs fuzzkern.search.minimize may make per shrunk failure (0: keep Hypothesis's
    #: shrunk case as it is)
    minimize_runs: int = 60
    #: distinct failures (verdict family and location) to find per target before it stops;
    #: known ones (found earlier in the run, or replayed from the corpus) count as passes
    max_failures: int = 5
    #: compiled mode: after a drawn case whose kernels had to compile for C seconds, the worker
    #: runs value variants of it (same layouts and dtypes, new values: nothing compiles) for
    #: ``amortize * C`` seconds (fuzzkern.execution.runner.run_variants); 0: every case is drawn
    amortize: float = 1.0
    #: seconds all the compilations of one case may take (compiled mode); compiling does not
    #: count against the timeout (fuzzkern.execution.pool.CaseClock)
    compile_timeout: float = COMPILE_TIMEOUT
    #: the campaign's hard stop, a ``time.monotonic()`` instant (set by fuzzkern.search.schedule
    #: from the budget): a case running then is cut short, shrinking stops, what was found is saved
    stop_at: float | None = None
    #: seconds of shrinking a campaign allows past its budget: fuzzkern.search.schedule moves
    #: the hard stop out by it while the search still ends at the budget (``search_until``),
    #: so a failure found late is shrunk, not saved unshrunk
    shrink_time: float = 0.0
    #: the end of the search, a ``time.monotonic()`` instant (the budget's end; set with
    #: ``stop_at``): no new case is drawn after it, a failure found may still shrink
    search_until: float | None = None
    #: measure kernel coverage in the interpreter (docs/coverage.md)
    coverage: bool = True
    #: the target has not finished a case yet (set by fuzzkern.search.schedule): a case still
    #: running at the slice's end may go on to FIRST_CASE_FRACTION of the budget
    no_case_yet: bool = True
    #: feed it to the search as hypothesis.target() observations (fuzzkern.search.guidance)
    guide: bool = True
    #: where torch references run in compiled mode (fuzzkern.execution.references.CHOICES):
    #: auto (on the device where that is exact), cpu, device
    reference_device: str = "auto"
    #: compile-ahead processes (a count, "off"; None: the pool's default, see
    #: fuzzkern.execution.pool.WorkerPool)
    compile_ahead: int | str | None = None


def draw_cases(target: Target, n: int) -> list[Case]:
    """The first ``n`` cases Hypothesis draws for ``target`` with its derandomized seed: the
    same cases every time, for benchmarks and tests that compare two ways of running them."""
    cases: list[Case] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(target.cases())
    def collect(case: Case) -> None:
        cases.append(case)

    collect()
    return cases[:n]


def run_options_of(opts: CampaignOptions) -> dict[str, Any]:
    """What the worker gets besides the case (see fuzzkern.execution.runner)."""
    options: dict[str, Any] = {"modes": list(opts.modes), "debug": opts.debug}
    if opts.checks:
        options["checks"] = dict(opts.checks)
    if opts.repeat_compiled > 1:
        options["repeat_compiled"] = int(opts.repeat_compiled)
    if opts.sanitize:
        options["sanitize"] = True
    if opts.strict_accuracy:
        options["strict_accuracy"] = True
    if not opts.shadow:
        options["shadow"] = False
    if opts.assume_gpu:
        options["assume_gpu"] = opts.assume_gpu
    if not opts.coverage:
        options["coverage"] = False
    if opts.reference_device != "auto":
        options["reference_device"] = opts.reference_device
    return options


def add_parity(result: TargetResult, parity: Any) -> None:
    """Add a batch's reference parity counts (``outcome.variants["parity"]``) to ``result``."""
    if not isinstance(parity, dict):
        return
    result.parity_device += int(parity.get("device", 0) or 0)
    result.parity_judged += int(parity.get("judged", 0) or 0)
    result.parity_disagreed += int(parity.get("disagreed", 0) or 0)
    if parity.get("off") and result.parity_off is None:
        result.parity_off = str(parity["off"])


def compile_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a pool's ``compile_stats()`` grew by from ``before`` to ``after``: numbers
    subtracted (``processes`` as after), the new ``errors``.

    >>> compile_delta({"compile_wait": 1.0, "ahead": None}, {"compile_wait": 3.5, "ahead": None})
    {'compile_wait': 2.5, 'ahead': None}
    """
    out: dict[str, Any] = {}
    for k, v in after.items():
        old = before.get(k)
        if isinstance(v, dict):
            out[k] = compile_delta(old if isinstance(old, dict) else {}, v)
        elif isinstance(v, list):
            out[k] = v[len(old):] if isinstance(old, list) else list(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and k != "processes":
            out[k] = round(v - (old or 0), 3) if isinstance(v, float) else v - (old or 0)
        else:
            out[k] = v
    return out


def add_compile(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Sum ``more`` (a :func:`compile_delta`) into ``into``: numbers added, ``processes`` the
    most, a few ``errors`` kept."""
    for k, v in more.items():
        old = into.get(k)
        if isinstance(v, dict):
            into[k] = old if isinstance(old, dict) else {}
            add_compile(into[k], v)
        elif isinstance(v, list):
            into[k] = ((old if isinstance(old, list) else []) + v)[:5]
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            total = max(old or 0, v) if k == "processes" else (old or 0) + v
            into[k] = round(total, 3) if isinstance(total, float) else total
        elif k not in into:
            into[k] = v


def is_empty(case: Case) -> bool:
    """Whether ``case`` has tensor inputs and none of them has an element."""
    tensors = case.tensors.values()
    return bool(tensors) and all(t.numel == 0 for t in tensors)


def specialization_classes(case: Case) -> set[str]:
    """The Triton specialization classes a case's arguments fall in (docs/architecture.md,
    appendix): what makes the compiled mode build a new variant."""
    out = set()
    for t in case.tensors.values():
        out.add(f"dtype:{t.dtype}")
        out.add("ptr:16B-aligned" if _aligned(t) else "ptr:misaligned")
        for st in t.strides:
            out.add(f"stride:{_stride_class(st)}")
        for n in t.shape:
            out.add(_int_class(n, "dim"))
    for v in case.scalars.values():
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.add(_int_class(v, "int"))
    return out


def specialization_key(case: Case) -> str:
    """What a Triton kernel launched on the case's arguments would most likely specialize on,
    hashed: per tensor its dtype, 16-byte alignment, sizes rounded up to a power of two (block
    sizes derive from them) with their ==1/%16 class, and stride classes; per integer scalar
    its ==1/%16 class and power-of-two size; the forced configs. Two cases with different keys
    usually compile different kernel variants; the report counts distinct keys (new
    specialization classes found) per minute."""
    parts: list[Any] = []
    for name, v in case.inputs.items():
        if isinstance(v, TensorCase):
            parts.append((name, v.dtype, _aligned(v),
                          tuple((_int_class(n, "d"), _pow2(n)) for n in v.shape),
                          tuple(_stride_class(st) for st in v.strides)))
        elif isinstance(v, int) and not isinstance(v, bool):
            parts.append((name, _int_class(v, "i"), _pow2(v)))
    parts.append(tuple(sorted(case.configs.items())))
    return hashlib.blake2b(repr(parts).encode(), digest_size=6).hexdigest()


def _aligned(t: TensorCase) -> bool:
    """Whether the view's first element is 16-byte aligned (Triton specializes on it)."""
    return (t.storage_offset * _ITEMSIZE.get(t.dtype, 4)) % 16 == 0


def _stride_class(stride: int) -> str:
    return ("0" if stride == 0 else "1" if stride == 1 else
            "%16" if stride % 16 == 0 else "other")


def _pow2(n: int) -> int:
    return 1 << max(0, int(abs(n)) - 1).bit_length()


_ITEMSIZE = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2,
             "int16": 2}


def _int_class(n: int, kind: str) -> str:
    if n == 1:
        return f"{kind}:==1"
    if not -(2**31) <= n < 2**31:
        return f"{kind}:64-bit"
    return f"{kind}:%16" if n % 16 == 0 else f"{kind}:other"


Event = Callable[[str, TargetResult, Any], None]


def fuzz_target(lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions, share: float,
                on_event: Event | None = None, *, replay_corpus: bool = True,
                known: Collection[str] = ()) -> TargetResult:
    """Fuzz one target for ``share`` seconds (plus shrink grace); never raises for a kernel.

    Each distinct failure (:func:`failure_key`) is shrunk and reported once; fuzzing goes on
    after a failure, in a fresh Hypothesis run, until the share is spent, Hypothesis has
    nothing more to try, or ``opts.max_failures`` new failures were found. Failures whose key
    is in ``known`` (found by earlier slices) or that a replayed corpus entry shows count as
    passes: they do not stop the search for new ones. ``replay_corpus=False`` skips replaying
    the corpus first (later slices of a campaign).
    """
    killed = getattr(pool, "killed", 0)
    stats = getattr(pool, "compile_stats", None)
    before = stats() if callable(stats) else None
    with pool.limits(stop_at=opts.stop_at, compile_timeout=opts.compile_timeout):
        result = _fuzz_target(lt, pool, opts, share, on_event, replay_corpus=replay_corpus,
                              known=known)
    result.killed = getattr(pool, "killed", 0) - killed
    if before is not None and callable(stats):
        result.compile = compile_delta(before, stats())
    return result


def _fuzz_target(lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions, share: float,
                 on_event: Event | None, *, replay_corpus: bool,
                 known: Collection[str]) -> TargetResult:
    if not set(opts.modes) & set(lt.target.modes):  # nothing to run: skipped at once
        result = TargetResult(lt.target.id, lt.ref, slices=1, unasked=True, skipped=(
            f"it runs in none of the modes asked (--modes {','.join(opts.modes)}; the target "
            f"declares modes={tuple(lt.target.modes)!r})"))
        if on_event is not None:
            on_event("done", result, None)
        return result
    s = _Slice(lt, pool, opts, share, on_event, known)
    if opts.corpus and replay_corpus and not s.replay_corpus():
        return s.result
    # the slice's own stop: a case still running well past the share (a long first compile,
    # say) is cut short rather than eat other targets' shares; shrinking moves it out
    with pool.limits(stop_at=s.first_stop):
        s.search()
    _explain_and_save(lt, pool, opts, s.result, s.found, s.run_options, s.timeout)
    findings.group(s.result)  # one report per failure key
    s.result.seconds = time.monotonic() - s.start
    s.emit("done", s.result, None)
    return s.result


class _Slice:
    """One target's slice of a campaign: its clocks, the cases it ran (``result``) and the
    failures it found (``found``), searched in successive Hypothesis runs (:meth:`search`)."""

    def __init__(self, lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions, share: float,
                 on_event: Event | None, known: Collection[str]) -> None:
        self.lt, self.pool, self.opts, self.target = lt, pool, opts, lt.target
        self.result = TargetResult(lt.target.id, lt.ref, slices=1)
        self.start = time.monotonic()
        self.deadline = self.start + share
        self.shrink_deadline = self.deadline + max(opts.grace_min, opts.grace_fraction * share)
        if opts.stop_at is not None:  # the campaign's hard stop caps both
            self.deadline = min(self.deadline, opts.stop_at)
            self.shrink_deadline = min(self.shrink_deadline, opts.stop_at)
        if opts.search_until is not None:  # the budget's end: shrinking may go on past it
            self.deadline = min(self.deadline, opts.search_until)
        self.timeout = opts.timeout or lt.target.timeout
        #: when a case still running is cut short (until a failure is found: then the shrink
        #: deadline): :data:`SLICE_OVERRUN` past the share, the share, or
        #: :data:`OVERRUN_FRACTION` of the budget, whichever is longest; the hard stop at most
        self.case_stop = self.deadline + max(share, SLICE_OVERRUN, OVERRUN_FRACTION * opts.budget)
        if opts.stop_at is not None:
            self.case_stop = min(self.case_stop, opts.stop_at)
        #: the stop for the target's first case, while it has none (FIRST_CASE_FRACTION)
        self.first_stop = self.case_stop
        if opts.no_case_yet:
            self.first_stop = self.deadline + max(share, SLICE_OVERRUN,
                                                  FIRST_CASE_FRACTION * opts.budget)
            if opts.stop_at is not None:
                self.first_stop = min(self.first_stop, opts.stop_at)
        # one drawn case may cost at most a quarter of the share: many cheap cases and some
        # expensive ones, never a few that take minutes (fuzzkern.execution.pool.COST_CAP_FRACTION)
        self.cost_cap = max(COST_CAP_MIN, COST_CAP_FRACTION * share)
        self.run_options = run_options_of(opts)
        self.last_failure: dict[str, tuple[Case, Outcome]] = {}
        self.known_keys = set(known)
        self.found: list[Failure] = []
        self.emit: Event = on_event or (lambda *a: None)
        self.database: _RunDatabase | None = None
        #: the value variant every drawn case runs as, once this attempt found a failure
        #: (empty: not yet; explore() then runs cases with their variants)
        self.replaying: list[int] = []
        self.first_seen: dict[str, float] = {}
        #: autotuned kernels reached at run time, not yet drawn (:meth:`_discover`)
        self.pending: dict[str, int] = {}
        self.guide = Guide(self.result.coverage, enabled=opts.guide and opts.coverage)

    def replay_corpus(self) -> bool:
        """Replay the target's corpus first; False when the slice ends there (interrupted, or
        the campaign's hard stop)."""
        result = self.result
        try:
            with interruptible():
                _replay_corpus(self.lt, self.pool, self.opts, result)
        except Interrupted as e:
            result.interrupted = e.signum
            result.seconds = time.monotonic() - self.start
            return False
        except StopTime:
            result.stopped = result.ran_out = True
            result.seconds = time.monotonic() - self.start
            return False
        self.known_keys.update(f.key for f in result.failures)
        return True

    def run_case(self, case: Case, variants: bool = False, capped: bool = False) -> Outcome:
        """Run one case in a worker and count it in ``result``; with ``variants`` (compiled
        mode, ``opts.amortize``) the worker also runs value variants of it (:meth:`explore`):
        those that passed are counted here, a failing one is in ``outcome.variants``. With
        ``capped`` (drawn cases), an interpreted launch projected past ``cost_cap`` seconds
        stops early as ``slow``."""
        result, options = self.result, self.run_options
        if variants:
            until = self.shrink_deadline if self.last_failure else self.deadline
            options = {**options, "variants": {"share": self.opts.amortize, "until": until}}
        outcome = self.pool.run(self.lt.ref, case.to_json(), options, self.timeout,
                                cost_cap=self.cost_cap if capped else None)
        if self.pool.stop_at == self.first_stop:  # a case finished: the usual stop from now
            self.pool.stop_at = self.case_stop
        if outcome.variants:
            ran = int(outcome.variants.get("ran", 0))
            result.cases += ran
            result.variants += ran
            add_parity(result, outcome.variants.get("parity"))
            result.case_seconds += float(outcome.variants.get("seconds", 0.0))
            for verdict, n in (outcome.variants.get("verdicts") or {}).items():
                result.counts[verdict] += int(n)
                if verdict not in Verdict.UNTESTED and is_empty(case):
                    result.empty += int(n)  # a variant has its case's shapes
        self.count(case, outcome)
        return outcome

    def explore(self, case: Case) -> tuple[int, Outcome]:
        """Run a drawn case with its value variants: which variant decides (the first that
        failed; 0: the case itself) and its outcome."""
        opts = self.opts
        outcome = self.run_case(case, variants=opts.amortize > 0 and "compiled" in opts.modes,
                                capped=True)
        failed = outcome.variants.get("failed")
        if failed is not None:
            k = int(failed["index"])
            found = Outcome.from_json(failed["outcome"])
            self.result.variants += 1
            self.count(case.variant(k), found)
            return k, found
        stopped = outcome.modes.get("worker")  # the clock stopped it, or the worker died
        if stopped is not None and stopped.detail.get("variant"):
            return int(stopped.detail["variant"]), outcome
        return 0, outcome

    def count(self, case: Case, outcome: Outcome) -> None:
        result = self.result
        result.cases += 1
        if outcome.verdict not in Verdict.UNTESTED and is_empty(case):
            result.empty += 1
        result.case_seconds += outcome.seconds
        result.counts[outcome.verdict] += 1
        if outcome.failed or outcome.verdict == Verdict.ACCURACY:
            findings.note(result.shows, failure_key(outcome), case)
        if outcome.verdict == Verdict.UNSUPPORTED and result.unsupported_reason is None:
            result.unsupported_reason = outcome.message.splitlines()[0] if outcome.message else None
        compiled = outcome.modes.get("compiled") or outcome.modes.get("worker")
        if compiled is not None:
            result.compile_seconds += float(compiled.detail.get("compile_seconds", 0) or 0)
            if "compile_timeout" in compiled.detail:
                result.slow_compiles += 1
        if outcome.verdict == Verdict.SLOW and len(result.slow) < SLOW_NOTES:
            result.slow.append(outcome.message)
        compiled = outcome.modes.get("compiled")
        if compiled is not None:
            result.compiles += int(compiled.detail.get("compiles", 0))
            result.cache_hits += int(compiled.detail.get("cache_hits", 0))
            if compiled.detail.get("device"):
                result.devices[str(compiled.detail["device"])] += 1
        self._discover(case, outcome)
        result.specializations.update(specialization_classes(case))
        result.keys.add(specialization_key(case))
        result.add_record(case_record(case, outcome))
        result.max_score = max(result.max_score, float(outcome.score or 0.0))
        result.note_case(case, outcome)
        self.guide.add(outcome.coverage)
        self.emit("case", result, outcome)

    def _discover(self, case: Case, outcome: Outcome) -> None:
        """Autotuned kernels ``outcome`` ran that ``case`` drew no config for (reached at
        run time, not in the launcher's code): later cases draw one for them. Found by a
        failing case or while one shrinks, from the next attempt on: a failing case replayed
        by the shrinker must draw as it did."""
        for m in outcome.modes.values():
            counts = m.detail.get("config_counts")
            if isinstance(counts, dict) and counts:
                self.pending.update({k: n for k, n in counts.items() if k not in case.configs})
        if self.pending and not (outcome.failed or self.replaying or self.last_failure):
            self._flush_discoveries()

    def _flush_discoveries(self) -> None:
        for k in discover(self.target.id, self.pending):
            self.result.discovered[k] = self.pending[k]
        self.pending.clear()

    def _stop(self, e: StopTime) -> None:
        """A stop time cut the case in flight short: the campaign's (``stopped``), or this
        slice's own, its share and grace spent (``cut``, with what the case was doing)."""
        stop = self.pool.stop_at
        campaign = self.opts.stop_at is not None and (stop is None or stop >= self.opts.stop_at)
        if campaign:
            self.result.stopped = True
        if not campaign or not self.result.cases:  # (an idle target says why)
            self.result.cut = cut_note(self.result.cases, time.monotonic() - self.start,
                                       e.args, "the end of the budget" if campaign else
                                       "its share of the budget")

    def _stop_recording(self) -> None:
        if self.database is not None:
            self.database.stopping = True  # this case never ran: not a failure to keep

    def body(self, case: Case) -> None:
        """Hypothesis's test body: run one drawn case, raise on a new failure."""
        if _Interrupts.signum is not None:  # also when the handler's raise was swallowed
            self._stop_recording()
            raise Interrupted(_Interrupts.signum)
        now = time.monotonic()
        if now > (self.shrink_deadline if self.last_failure else self.deadline):
            self._stop_recording()
            raise _BudgetExhausted
        limit = self.opts.max_examples
        if limit is not None and self.result.cases >= limit and not self.last_failure:
            self._stop_recording()
            raise _CasesDone
        try:
            if not self.replaying:
                k, outcome = self.explore(case)
            else:  # the body must now be a function of the drawn case alone (see below)
                k = self.replaying[0]
                outcome = self.run_case(case.variant(k), capped=True)
                self.result.minimize_runs += 1  # Hypothesis's shrinker ran it
        except StopTime:  # the hard stop cut this case short: not a failure to keep
            self._stop_recording()
            raise
        if self._never_runs(outcome):
            self._stop_recording()
            raise _BudgetExhausted  # every case would end so: stop drawing them
        misuse = launcher_misuse(outcome)
        if misuse:
            self._stop_recording()
            raise _Misuse(misuse)
        if outcome.score:
            hypothesis.target(outcome.score, label="error")
        self.guide.steer(outcome.coverage, case.variant(k) if k else case, outcome)
        if outcome.failed:
            key = failure_key(outcome)
            if key in self.known_keys:
                return  # found already: look for others
            if (key not in self.last_failure
                    and len(self.found) + len(self.last_failure) >= self.opts.max_failures):
                return  # the cap is reached: shrink what was found
            if not self.replaying:
                # Hypothesis replays and shrinks the drawn case from now on, so the body must
                # give each drawn case the same verdict every time. Value variants ran only
                # because something compiled: from here on each drawn case runs as the variant
                # that failed (0: the case itself), alone.
                self.replaying.append(k)
            self.first_seen.setdefault(key, time.time())
            self.result.found_so_far = len(self.first_seen)
            self.last_failure[key] = (case.variant(k), outcome)
            self.pool.stop_at = self.shrink_deadline  # the shrink may take its grace
            exc = _failure_type(key)(f"{outcome.verdict}: {outcome.message}")
            exc.outcome = outcome
            raise exc
        if not self.replaying:
            self._climb()

    def _never_runs(self, outcome: Outcome) -> bool:
        """Whether ``outcome`` says the kernel cannot run in the only mode this run has for
        the target: the interpreter found, before any program ran, a construct it cannot run
        on every launch (fuzzkern.execution.interpreter.fidelity.static_limitation). The target is
        then
        skipped with the reason, after this one case."""
        interp = outcome.modes.get("interpret")
        if (outcome.verdict != Verdict.UNSUPPORTED or interp is None
                or not interp.detail.get("static")
                or set(self.opts.modes) & set(self.target.modes) != {"interpret"}):
            return False
        why = (interp.error or "").split(": ", 1)[-1].splitlines()[0]
        self.result.skipped = f"the interpreter cannot run it: {why}"
        return True

    def _climb(self) -> None:
        """A round of coverage guidance's own climbing (:meth:`Guide.climb`); a climbed case
        that fails ends the Hypothesis run (the drawn case did not fail: nothing to save in
        its database) and is shrunk by fuzzkern.search.minimize."""
        most = self.opts.max_examples
        if most is not None and self.result.cases >= most:
            return  # climbing counts against --max-examples too
        found = self.guide.climb(self.target, lambda c: self.run_case(c, capped=True))
        if found is None:
            return
        key = failure_key(found[1])
        if key in self.known_keys or key in self.last_failure:
            return
        self.first_seen.setdefault(key, time.time())
        self.last_failure[key] = found
        self.pool.stop_at = self.shrink_deadline  # the shrink may take its grace
        self._stop_recording()
        raise Climbed

    def _hypothesis_test(self, attempt: int) -> Callable[[], None]:
        """The Hypothesis test of one attempt, over the target's cases."""
        opts = self.opts
        self._flush_discoveries()
        # A seeded run, or one without a database, gets an empty one of its own: Hypothesis
        # draws differently with a database (its target observations go to a Pareto front),
        # so `--seed N --no-db` repeats what an unseeded run with a fresh database drew.
        stored = None if opts.seed is not None else opts.database
        self.database = _RunDatabase(stored if stored is not None else InMemoryExampleDatabase(),
                                     keep_known=bool(self.known_keys))
        def body(case: Case) -> None:  # a function of its own: Hypothesis marks it
            self.body(case)

        test = given(self.target.cases(compiled="compiled" in opts.modes))(body)
        test = settings(
            database=self.database,
            max_examples=10**9,  # the body counts the cases (_CasesDone): see there
            deadline=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
            verbosity=Verbosity.quiet,
            report_multiple_bugs=True,
            print_blob=False,
        )(test)
        # later attempts of a slice must not repeat the first one's cases. What hypothesis.seed
        # sets, without its database=None: a seeded run and an unseeded one (its draw seed
        # printed) draw alike, and an unseeded run still replays and records the database.
        seed = opts.seed if opts.seed is not None else opts.draw_seed
        if seed is not None:
            test._hypothesis_internal_use_seed = (  # type: ignore[attr-defined]
                seed + 104729 * attempt)
        # The database key is the target's stable id, so failures replay first on the next
        # run.
        test.hypothesis.inner_test._hypothesis_internal_add_digest = self.target.id.encode()  # type: ignore[attr-defined]
        return test  # type: ignore[no-any-return]

    def _attempt(self, attempt: int) -> tuple[bool, bool]:
        """Run one attempt's Hypothesis test: (ran out of time, flaky)."""
        result = self.result
        test = self._hypothesis_test(attempt)
        try:
            with interruptible():
                test()
        except Interrupted as e:
            result.interrupted = e.signum
            return True, False
        except _BudgetExhausted:
            return True, False
        except _CasesDone:
            return False, False
        except _Misuse as e:
            result.error = f"usage error: {e}"
            return False, False
        except StopTime as e:
            self._stop(e)
            return True, False
        except (hypothesis.errors.FlakyFailure, hypothesis.errors.Flaky):
            return False, True
        except (KernelFailure, BaseExceptionGroup, Climbed):
            pass
        except Exception as e:  # misuse surfacing at draw time (InvalidArgument, CaseError,
            result.error = f"{type(e).__name__}: {e}"  # a HypothesisException, ...)
        return False, False

    def _shrink(self, new: list[Failure]) -> None:
        """Minimize the attempt's failures (:func:`_minimize`) within the shrink deadline."""
        result = self.result
        try:
            with interruptible():
                result.minimize_runs += _minimize(self.target, new, self.run_case,
                                                  self.shrink_deadline, self.opts.minimize_runs)
        except Interrupted as e:
            result.interrupted = e.signum
            for f in new:
                f.interrupted = True
        except StopTime as e:  # _minimize marked the failures it did not finish
            self._stop(e)

    def search(self) -> None:
        """Successive Hypothesis runs until the share is spent, Hypothesis has nothing more
        to try, or ``opts.max_failures`` new failures were found."""
        opts, result = self.opts, self.result
        for attempt in itertools.count():
            self.last_failure.clear()
            self.replaying.clear()
            ran_out, flaky = self._attempt(attempt)
            new = [Failure(self.target.id, case, outcome, shrunk=not ran_out, flaky=flaky,
                           interrupted=result.interrupted is not None,
                           found_at=self.first_seen.get(key), shows=result.shows.get(key))
                   for key, (case, outcome) in self.last_failure.items()]
            if opts.minimize_runs > 0 and not flaky and result.interrupted is None:
                self._shrink(new)  # (a flaky case would accept anything or nothing)
            for f in new:  # the minimizer may have moved one onto another's key: keep the first
                if f.key not in self.known_keys:
                    self.known_keys.add(f.key)
                    self.found.append(f)
            if result.interrupted is not None:
                break
            if ran_out or result.stopped or time.monotonic() >= self.deadline:
                result.ran_out = True
                break
            if flaky or result.error or not new or len(self.found) >= opts.max_failures:
                break  # not new: Hypothesis had nothing more to try
            if opts.max_examples is not None and result.cases >= opts.max_examples:
                break
        self._flush_discoveries()  # for the target's next slice


def cut_note(cases: int, seconds: float, stop: tuple[Any, ...],
             where: str = "its share of the budget") -> str:
    """The summary's note for a case a stop cut short (at ``where``), after ``seconds`` of
    the slice that had run ``cases`` cases; ``stop``: the :class:`StopTime`'s arguments
    (kernels compiled, seconds compiling, compiling then), when the pool gives them.

    >>> cut_note(0, 41.5, (12, 39.0, True)).split(";")[0]
    'first case still compiling after 42 s: 12 kernels compiled, 39 s compiling'
    >>> cut_note(3, 10.0, ())
    'a case still running after 10 s was cut short at its share of the budget'
    """
    which = "first case" if cases == 0 else "a case"
    if len(stop) >= 3 and stop[2]:
        return (f"{which} still compiling after {seconds:.0f} s: {stop[0]} kernels compiled, "
                f"{float(stop[1]):.0f} s compiling; cut short at {where}")
    return f"{which} still running after {seconds:.0f} s was cut short at {where}"


def _minimize(target: Target, found: list[Failure], run_case: Callable[[Case], Outcome],
              deadline: float, max_runs: int) -> int:
    """Replace each shrunk failure by the smaller failing case :mod:`fuzzkern.search.minimize`
    reaches from it (same verdict family), within the shrink deadline. Hypothesis's example
    database keeps Hypothesis's own shrunk case, which leads here again."""
    from fuzzkern.search import minimize

    runs = 0
    for i, f in enumerate(found):
        try:
            m = minimize.minimize(target, f.case, f.outcome, run_case, deadline=deadline,
                                  max_runs=max_runs)
        except StopTime:  # this one and those after it did not finish shrinking
            for g in found[i:]:
                g.shrunk = False
            raise
        except Exception as e:  # a smaller case is a bonus; never lose the failure
            warnings.warn(f"fuzzkern could not minimize a {f.outcome.verdict} case of "
                          f"{f.target_id}: {type(e).__name__}: {e}", RuntimeWarning,
                          stacklevel=2)
            continue
        runs += m.runs
        f.case, f.outcome = m.case, m.outcome
        f.minimized = m.steps
    return runs


def _replay_corpus(lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions,
                   result: TargetResult) -> None:
    """Replay the target's corpus entries: still failing ones become failures of this run;
    unreadable files are reported by name and skipped."""
    from fuzzkern.corpus import store as corpus

    assert opts.corpus is not None
    for path, entry in corpus.scan(opts.corpus, lt.id, lt.aliases):
        if isinstance(entry, Exception):
            result.corpus_problems.append(f"skipped {entry}")
            continue
        r = corpus.replay(entry, pool, lt, modes=opts.modes, timeout=opts.timeout,
                          debug=opts.debug, checks=opts.checks)
        result.replayed += 1
        if r.status == corpus.STILL_FAILING and r.outcome is not None:
            case, outcome, shrunk = entry.case, r.outcome, entry.shrunk
            if not shrunk:  # saved unshrunk: this run shrinks it, if it has the time
                path, case, outcome, shrunk = _shrink_again(lt, pool, opts, entry, r.outcome,
                                                            result)
            result.corpus_failing.append(path)
            result.failures.append(Failure(lt.id, case, outcome, shrunk=shrunk,
                                           corpus_path=path,
                                           explanations=list(entry.explanations),
                                           replayed=True))
        elif r.status == corpus.NOW_PASSING:
            result.corpus_passing.append(path)
        else:
            result.corpus_problems.append(f"cannot replay {path}: {r.reason}")


#: seconds a replay may spend shrinking one entry that was saved unshrunk
RESHRINK_SECONDS = 30.0


def _shrink_again(lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions, entry: Any,
                  outcome: Outcome, result: TargetResult) -> tuple[str, Case, Outcome, bool]:
    """An entry saved unshrunk (the budget ran out while shrinking) that still fails, shrunk
    by fuzzkern.search.minimize within :data:`RESHRINK_SECONDS` (and the campaign's hard stop)
    and saved as shrunk: the store then removes the unshrunk entry of the same failure. What
    it gives: (path, case, outcome, shrunk); the entry as it was when nothing smaller fails."""
    from fuzzkern.corpus import store as corpus
    from fuzzkern.errors import FuzzkernError
    from fuzzkern.search import minimize

    assert entry.path is not None and opts.corpus is not None
    until = time.monotonic() + RESHRINK_SECONDS
    if opts.stop_at is not None:
        until = min(until, opts.stop_at)
    run_options = run_options_of(opts)
    timeout = opts.timeout or lt.target.timeout

    def run(case: Case) -> Outcome:
        return pool.run(lt.ref, case.to_json(), run_options, timeout)

    try:
        m = minimize.minimize(lt.target, entry.case, outcome, run, deadline=until,
                              max_runs=opts.minimize_runs)
    except (StopTime, FuzzkernError):
        return entry.path, entry.case, outcome, False
    done = m.stopped is None
    if not m.steps and not done:
        return entry.path, entry.case, outcome, False
    try:  # (the same case when nothing smaller fails: the entry is rewritten, now shrunk)
        path = corpus.save(opts.corpus, lt.id, lt.ref, m.case, m.outcome, modes=opts.modes,
                           explanations=entry.explanations, target=lt.target, shrunk=done,
                           debug=opts.debug, run_options=run_options, lock_until=opts.stop_at,
                           problems=result.corpus_problems)
    except (OSError, FuzzkernError) as e:  # the old entry stays: nothing is lost
        result.corpus_problems.append(f"could not save {entry.path} shrunk again: {e}")
        return entry.path, entry.case, outcome, False
    if os.path.abspath(path) != entry.path:  # the new entry read back: the old one goes
        corpus.remove_entry(entry)
    result.minimize_runs += m.runs
    result.corpus_problems.append(
        f"{entry.path} was saved unshrunk; shrunk again to {m.case.describe()}: {path}"
        + ("" if done else " (still not minimal: the time ran out)"))
    return path, m.case, m.outcome, done


#: a hang is re-run once with this many times the timeout before it is reported and saved
HANG_CONFIRM_FACTOR = 2.0
#: ``slow`` cases a target's result describes in ``slow`` (the rest are counted only)
SLOW_NOTES = 5


def _confirm_hangs(lt: LoadedTarget, pool: WorkerPool, result: TargetResult,
                   found: list[Failure], run_options: dict[str, Any],
                   timeout: float) -> list[Failure]:
    """Re-run each ``hang`` once with :data:`HANG_CONFIRM_FACTOR` times the timeout: a case
    that finishes then is slow, not hung (noted in ``result.slow``; reported with the verdict
    of the re-run if that one fails); one that runs past it again is a confirmed hang."""
    out = []
    for f in found:
        if f.outcome.verdict != Verdict.HANG:
            out.append(f)
            continue
        try:
            again = pool.run(lt.ref, f.case.to_json(), run_options,
                             HANG_CONFIRM_FACTOR * timeout)
        except StopTime:  # no time left to confirm it: reported, not saved
            result.stopped = True
            f.outcome.message += (" (not confirmed: the budget ran out before the re-run; not "
                                  "saved to the corpus)")
            f.unconfirmed = True
            out.append(f)
            continue
        result.cases += 1
        if again.verdict == Verdict.HANG:
            f.outcome.message += (f" (confirmed: a re-run with {HANG_CONFIRM_FACTOR * timeout:g}"
                                  " s ran past it too)")
            out.append(f)
            continue
        result.slow.append(f"a case ran past the {timeout:g} s timeout, then finished in "
                           f"{again.seconds:.1f} s on a re-run ({again.verdict}): slow, not hung")
        if again.failed:
            out.append(dataclasses.replace(f, outcome=again))
    return out


def _explain_and_save(lt: LoadedTarget, pool: WorkerPool, opts: CampaignOptions,
                      result: TargetResult, found: list[Failure], run_options: dict[str, Any],
                      timeout: float) -> None:
    """Confirm each failure this run found as a plain call (:mod:`fuzzkern.search.confirm`),
    explain it, attribute a compiled-only difference, and save it to the corpus (when one is
    set)."""
    from fuzzkern.corpus import store as corpus
    from fuzzkern.errors import FuzzkernError

    found = _confirm_hangs(lt, pool, result, _distinct(found), run_options, timeout)
    found = _confirm_plain(lt, pool, result, found, run_options, timeout)
    from fuzzkern.search.explain import SHARE

    for f in found:
        if opts.explain and result.interrupted is None:
            # its own time share, also when the budget's end stopped the search
            with pool.limits(stop_at=time.monotonic() + SHARE):
                _explain(lt, pool, result, f, run_options, timeout)
        if opts.corpus and not f.unconfirmed and f.outcome.failed:
            try:
                f.corpus_path = corpus.save(
                    opts.corpus, lt.id, lt.ref, f.case, f.outcome, modes=opts.modes,
                    explanations=f.explanations, target=lt.target, shrunk=f.shrunk,
                    flaky=f.flaky, debug=opts.debug, run_options=run_options,
                    lock_until=opts.stop_at, problems=result.corpus_problems)
            except (OSError, FuzzkernError) as e:
                f.not_saved = f"could not write it to {opts.corpus}: {e}"
                result.corpus_problems.append(f"could not save a {f.outcome.verdict} case of "
                                              f"{lt.id} to {opts.corpus}: {e}")
    # A replayed entry found again by fuzzing is one failure, reported once (the fresh one).
    fresh = {os.path.abspath(f.corpus_path) for f in found if f.corpus_path}
    result.failures = [f for f in result.failures
                       if not (f.replayed and f.corpus_path
                               and os.path.abspath(f.corpus_path) in fresh)]
    result.failures.extend(f for f in found if f.outcome.failed)
    for f in found:  # attributed to rounding: an accuracy finding, not a failure
        if not f.outcome.failed and f.outcome.verdict == Verdict.ACCURACY:
            result.counts[Verdict.ACCURACY] += 1
            result.note_case(f.case, f.outcome)
    if opts.explain and not result.stopped and result.interrupted is None:
        _accuracy_cause(lt, pool, result, run_options, timeout)


def same_case_key(f: Failure) -> tuple[str, str]:
    """What makes two shrunk failures one report: their verdict family and their case (a bug
    whose minimal case shows at several locations, two outputs of one NaN, is one bug)."""
    import json

    from fuzzkern.judge.verdict import verdict_family

    return verdict_family(f.outcome.verdict), json.dumps(f.case.to_json(), sort_keys=True)


def _distinct(found: list[Failure]) -> list[Failure]:
    """One failure per :func:`same_case_key`."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in found:
        key = same_case_key(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _accuracy_cause(lt: LoadedTarget, pool: WorkerPool, result: TargetResult,
                    run_options: dict[str, Any], timeout: float) -> None:
    """Name the cause of the worst compiled accuracy finding, when it has not one yet
    (:func:`fuzzkern.search.explain.compiled_causes`): its message gets the cause."""
    from fuzzkern.search import explain

    if not result.accuracy:
        return
    case, outcome = result.accuracy[0]
    compiled = outcome.modes.get("compiled")
    if compiled is None or compiled.status != "accuracy" or "caused by" in outcome.message:
        return
    try:
        with interruptible():
            causes, _ = explain.compiled_causes(lt.ref, case, outcome, pool, run_options,
                                                target=lt.target, timeout=timeout,
                                                max_seconds=10.0)
    except Interrupted as e:
        result.interrupted = e.signum
        return
    except StopTime:
        result.stopped = True
        return
    except Exception:  # a cause is a bonus on a finding that is not a failure
        return
    if causes:
        outcome.message += "; " + "; ".join(c.line for c in causes)


def _confirm_plain(lt: LoadedTarget, pool: WorkerPool, result: TargetResult,
                   found: list[Failure], run_options: dict[str, Any],
                   timeout: float) -> list[Failure]:
    """The failures that stand as a user's plain call (:func:`fuzzkern.search.confirm.confirm`);
    the others become ``result.limits``. A confirmation that cannot run keeps the failure."""
    from fuzzkern.search.confirm import confirm

    out = []
    for f in found:
        if result.stopped or result.interrupted is not None or f.unconfirmed:
            out.append(f)
            continue
        try:
            with interruptible():
                c = confirm(lt.ref, f.case, f.outcome, pool, run_options, lt.target, timeout)
        except Interrupted as e:
            result.interrupted = e.signum
            out.append(f)
            continue
        except StopTime:
            result.stopped = True
            out.append(f)
            continue
        except Exception as e:  # a confirmation is a check of ours; never lose the failure
            f.explanations = [*f.explanations, f"(not confirmed as a plain call: "
                              f"{type(e).__name__}: {e})"]
            out.append(f)
            continue
        if c.limit is not None:
            result.counts[Verdict.FUZZKERN_LIMIT] += 1
            result.limits.append(f"{c.limit} (case: {f.case.describe()})")
            continue
        if c.line:
            f.explanations = [*f.explanations, c.line]
        out.append(f)
    return out


def _explain(lt: LoadedTarget, pool: WorkerPool, result: TargetResult, f: Failure,
             run_options: dict[str, Any], timeout: float) -> None:
    """``f``'s explanations (:func:`fuzzkern.search.explain.explain`) and, for a compiled
    mismatch, its causes and the verdict they give (:func:`fuzzkern.judge.causes.attributed`)."""
    from fuzzkern.judge.causes import attributed
    from fuzzkern.search import explain

    try:
        with interruptible():
            start = time.monotonic()
            lines = explain.explain(lt.ref, f.case, f.outcome, pool, run_options,
                                    target=lt.target, timeout=timeout,
                                    max_seconds=explain.SHARE)
            causes, only = explain.compiled_causes(
                lt.ref, f.case, f.outcome, pool, run_options, target=lt.target,
                timeout=timeout, max_seconds=max(1.0, explain.SHARE - (time.monotonic() - start)))
        f.explanations = [*f.explanations, *lines, *(c.line for c in causes)]
        f.outcome = attributed(f.outcome, causes, only)
    except Interrupted as e:  # saving comes first
        result.interrupted = e.signum
        f.explanations = [*f.explanations, "(no explanation: interrupted)"]
    except StopTime:  # its share ran out (explain.SHARE): what it had is lost, not the budget
        f.explanations = [*f.explanations, "(no explanation: a variant ran past the "
                          "explanation's time share)"]
    except Exception as e:  # an explanation is a bonus; never lose the failure
        f.explanations = [*f.explanations, f"(no explanation: {type(e).__name__}: {e})"]
