"""Targets as tests: :func:`fuzz_test`, and running one fuzz or corpus test through the engine.

The pytest plugin (:mod:`fuzzkern._pytest_plugin`) collects every module-level
:class:`~fuzzkern.Target` of a test file on its own. :func:`fuzz_test` is for people who prefer
an explicit test function, or who want per-test settings::

    add = fuzzkern.Target(...)
    test_add = fuzzkern.fuzz_test(add, max_examples=50)

Both give the same items (``test_ops.py::test_add[fuzz]`` plus one ``[corpus:...]`` item per
regression case). This module imports neither torch nor triton: the plugin imports it while
collecting, and the engine starts only when a test runs.
"""

from __future__ import annotations

import math
import os
import sys
import unittest
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from fuzzkern.errors import InvalidArgument, describe
from fuzzkern.target.declare import MODES, Target


@dataclass(frozen=True)
class FuzzSettings:
    """Per-test settings of a :func:`fuzz_test`; ``None`` leaves a setting to the profile."""

    budget: float | None = None
    max_examples: int | None = None
    modes: tuple[str, ...] | None = None
    seed: int | None = None


def check_budget(budget: float | str) -> float:
    from fuzzkern.search.engine import parse_budget

    if isinstance(budget, bool) or not isinstance(budget, (int, float, str)):
        raise InvalidArgument(
            f"Expected a budget in seconds or a duration like '30s' but got "
            f"{describe('budget', budget)}."
        )
    seconds = parse_budget(str(budget)) if isinstance(budget, str) else float(budget)
    if seconds <= 0:
        raise InvalidArgument(
            f"Expected a positive budget but got {describe('budget', budget)}."
        )
    return seconds


def check_modes(modes: str | Sequence[str]) -> tuple[str, ...]:
    items = modes.split(",") if isinstance(modes, str) else list(modes)
    out = tuple(str(m).strip() for m in items if str(m).strip())
    if not out or any(m not in MODES for m in out):
        raise InvalidArgument(
            f"Expected modes among {', '.join(MODES)} but got {describe('modes', modes)}. "
            "Use interpret, compiled, or both."
        )
    return out


def check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"Expected a positive integer but got {describe(name, value)}.")
    return value


def check_case_floor(value: Any) -> int:
    """The case floor: a number of cases, 0 for none (``--fuzzkern-case-floor``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"Expected a number of cases >= 0 but got "
                              f"{describe('case_floor', value)}.")
    return value


def check_amortize(value: Any) -> float:
    """The ``--amortize`` factor: a number from 0 to 100.

    >>> check_amortize("0.5")
    0.5
    """
    try:
        factor = float(value)
    except (TypeError, ValueError):
        factor = math.nan
    if not (math.isfinite(factor) and 0 <= factor <= 100):
        raise InvalidArgument(f"Expected a factor between 0 and 100 but got "
                              f"{describe('amortize', value)}.")
    return factor


def fuzz_test(target: Target, *, budget: float | str | None = None,
              max_examples: int | None = None, modes: Sequence[str] | None = None,
              seed: int | None = None) -> Callable[[], None]:
    """A test function that fuzzes ``target``; assign it to a ``test_*`` name.

    - ``budget``: wall-clock seconds (or ``"30s"``, ``"2m"``) for this test's fuzzing.
    - ``max_examples``: stop after this many cases, even with budget left.
    - ``modes``: ``("interpret",)``, ``("compiled",)`` or both.
    - ``seed``: a fixed Hypothesis seed, for a repeatable test (Hypothesis then neither
      reads nor writes the example database).

    These override the profile and the ini file; options given on the pytest command line
    override them in turn. The target must be bound to a module-level name of the same file
    (worker processes import it by that name). A target wrapped this way is collected only
    through its test function, not a second time on its own.

    Under the fuzzkern pytest plugin the function becomes the items ``test_add[fuzz]`` and
    ``test_add[corpus:...]``; called without the plugin, it fuzzes with the ``dev`` profile
    and raises ``AssertionError`` with the diagnosis. There is no decorator form on purpose:
    the body of a decorated function would never run.

    Example::

        add = fuzzkern.Target(launcher=vector_add, reference=torch.add, inputs=...)
        test_add = fuzzkern.fuzz_test(add, budget="5s", modes=("interpret",))
    """
    if not isinstance(target, Target):
        raise InvalidArgument(
            f"Expected a fuzzkern.Target but got {describe('target', target)}. "
            "Pass the target object: fuzz_test(add), not fuzz_test(add.launcher)."
        )
    settings = FuzzSettings(
        budget=None if budget is None else check_budget(budget),
        max_examples=None if max_examples is None else check_positive_int(
            "max_examples", max_examples),
        modes=None if modes is None else check_modes(modes),
        seed=None if seed is None else check_seed(seed),
    )
    caller = sys._getframe(1).f_globals.get("__name__", __name__)

    def test() -> None:
        _run_without_plugin(test)

    # pytest, with collect_imported_tests = false, skips functions whose module is another
    # file's: make the test belong to the file that defined it.
    test.__module__ = caller
    test.__qualname__ = test.__name__ = f"fuzz_test({target.name or 'target'})"
    test.fuzzkern_target = target  # type: ignore[attr-defined]
    test.fuzzkern_settings = settings  # type: ignore[attr-defined]
    return test


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidArgument(f"Expected an integer seed but got {describe('seed', seed)}.")
    return seed


def is_fuzz_test(obj: object) -> bool:
    return callable(obj) and "fuzzkern_target" in getattr(obj, "__dict__", {})


def module_targets(module: ModuleType) -> list[Any]:
    """The :class:`~fuzzkern.target.loader.LoadedTarget` of every module-level target of a file,
    named and referenced exactly as ``fuzzkern run path.py`` names them."""
    from fuzzkern.target import loader

    return loader.file_targets(module, module.__file__ or "")


# -- running one item ------------------------------------------------------------------------


@dataclass
class ItemResult:
    """What one fuzz or corpus test came to: ``passed``, ``failed`` or ``skipped``."""

    status: str
    #: one line: the failure message pytest shows in its short summary
    headline: str
    #: the diagnosis and statistics, for the item's report section
    details: str = ""
    #: corpus files this test wrote
    new_corpus: list[str] = field(default_factory=list)
    #: one line of statistics (cases, time, seed, verdicts), also part of ``details``
    stats: str = ""
    #: a fuzz item's kernel coverage in percent (None: not measured; docs/coverage.md)
    coverage: float | None = None


def default_modes() -> tuple[str, ...]:
    """``interpret``, plus ``compiled`` when torch sees a CUDA GPU (imports torch)."""
    try:
        import torch

        if torch.cuda.is_available():
            return ("interpret", "compiled")
    except Exception:  # pragma: no cover - a broken torch install
        pass
    return ("interpret",)


def _corpus_files(corpus_dir: str | None) -> set[str]:
    if not corpus_dir or not os.path.isdir(corpus_dir):
        return set()
    out: set[str] = set()
    for folder, _, files in os.walk(corpus_dir):
        out.update(os.path.join(folder, f) for f in files if f.endswith(".json"))
    return out


def _stats(result: Any, opts: Any) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.counts.items())) or "none"
    if opts.seed is not None:
        seed = f"{opts.seed}, no database"
    elif getattr(opts, "draw_seed", None) is not None:
        seed = f"{opts.draw_seed}"
    else:
        seed = "random"
    limit = f", max {opts.max_examples} cases" if opts.max_examples else ""
    from fuzzkern.report.text import devices_text

    runs = result.minimize_runs
    minimized = f"; {runs} of the cases minimized the failure" if runs else ""
    text = (f"{result.cases} cases in {result.seconds:.1f} s (budget {opts.budget:g} s{limit}, "
            f"modes {','.join(opts.modes)}, seed {seed}){minimized}; verdicts: {counts}")
    # the budget is the search's: a failure found may shrink for this long past it
    grace = max(opts.grace_min, opts.grace_fraction * opts.budget)
    text += f"\nshrinking: a failure found may take up to {grace:g} s past the budget"
    repeat = repeat_options(result, opts)
    if repeat:
        text += f"\nto repeat: {repeat}"
    if result.devices:
        text += "\ncompiled on: " + devices_text(result.devices)
    from fuzzkern.report.coverage import coverage_lines

    return "\n".join([text, *coverage_lines([result], opts.modes)])


def check_percent(value: Any) -> float:
    """A percentage from 0 to 100 (``--fail-under-coverage``).

    >>> check_percent("80")
    80.0
    """
    try:
        p = float(value)
    except (TypeError, ValueError):
        p = math.nan
    if not (math.isfinite(p) and 0 <= p <= 100):
        raise InvalidArgument(f"Expected a percentage between 0 and 100 but got "
                              f"{describe('fail_under_coverage', value)}.")
    return p


def repeat_options(result: Any, opts: Any) -> str:
    """The pytest options that repeat a fuzz item's draws: its seed, its case count (so the
    budget does not decide where the repeat stops) and no example database."""
    seed = opts.seed if opts.seed is not None else getattr(opts, "draw_seed", None)
    if seed is None:
        return ""
    if opts.max_examples is not None and result.cases >= opts.max_examples:
        cases = opts.max_examples
    else:
        cases = max(1, result.cases - result.minimize_runs)
    return (f"--fuzzkern-seed {seed} --fuzzkern-max-examples {cases} --fuzzkern-db none "
            "--fuzzkern-budget 10m")


#: a fuzz item that ran fewer cases than this gets a :class:`FewCasesWarning`
#: (``--fuzzkern-min-cases`` makes it fail)
MIN_CASES = 20


class FewCasesWarning(UserWarning):
    """A fuzz item ran fewer cases than :data:`MIN_CASES` (or its ``max_examples``): it
    passed, but tested little."""


def _few_cases(lt: Any, result: Any, opts: Any, min_cases: int | None) -> str | None:
    """Why the item ran too few cases (None when it ran enough): a failure with
    ``min_cases``, else a :class:`FewCasesWarning` below :data:`MIN_CASES`."""
    floor = min_cases or min(MIN_CASES, opts.max_examples or MIN_CASES)
    if result.cases >= floor:
        return None
    text = (f"{lt.id} ran {result.cases} case{'s' if result.cases != 1 else ''} in "
            f"{result.seconds:.1f} s, fewer than "
            + (f"--fuzzkern-min-cases {floor}" if min_cases else str(floor))
            + ": it tested little; raise --fuzzkern-budget")
    if min_cases:
        return text
    import warnings

    warnings.warn(FewCasesWarning(text + " (--fuzzkern-min-cases N makes this a failure)"),
                  stacklevel=2)
    return None


def _idle(lt: Any, result: Any, allow_idle: bool) -> str | None:
    """Why the item ran no case (a failure; a :class:`FewCasesWarning` with ``allow_idle``),
    None when it ran one or could not by design."""
    if not getattr(result, "idle", False):
        return None
    text = (f"{lt.id} ran no case: {result.idle_reason()}; raise --fuzzkern-budget")
    if not allow_idle:
        return text + " (--fuzzkern-allow-idle makes this a warning)"
    import warnings

    warnings.warn(FewCasesWarning(text), stacklevel=3)
    return None


def run_fuzz(lt: Any, pool: Any, opts: Any, min_cases: int | None = None,
             allow_idle: bool = False, case_floor: int | None = None) -> ItemResult:
    """Fuzz one target for ``opts.budget`` seconds and judge it as a test.

    Only failures this run found count: corpus entries the engine replays first are each an
    item of their own (:func:`run_replay`), so a known regression fails once, by name. An
    item that ran no case (its first case did not finish within the budget and its grace)
    fails, unless ``allow_idle`` (then it warns, :class:`FewCasesWarning`).
    """
    from fuzzkern.search import engine, floor

    corpus_dir = getattr(opts, "corpus", None)
    before = {os.path.abspath(p) for p in _corpus_files(corpus_dir)}
    result = engine.fuzz_target(lt, pool, opts, opts.budget)
    wanted = floor.FLOOR if case_floor is None else case_floor
    topup = floor.top_up(lt, pool, opts, result, wanted) if wanted else None
    item = _judge_fuzz(lt, opts, result, before)
    if topup is not None:
        line = floor.said([topup])[0]
        item.stats = f"{item.stats}\n{line}" if item.stats else line
        item.details = f"{item.details}\n{line}" if item.details else line
    idle = _idle(lt, result, allow_idle) if item.status == "passed" else None
    if idle:
        item.status, item.headline = "failed", idle
    few = (_few_cases(lt, result, opts, min_cases)
           if item.status == "passed" and not getattr(result, "idle", False) else None)
    if few:
        item.status, item.headline = "failed", few
    from fuzzkern.report.coverage import percent_of

    item.coverage = percent_of(result)
    return item


def _judge_fuzz(lt: Any, opts: Any, result: Any, before: set[str]) -> ItemResult:
    """A fuzz item's result from its target's: failed, untested or passed."""
    from fuzzkern.report import text as reporting

    stats = _stats(result, opts)
    problems = list(getattr(result, "corpus_problems", []))
    if problems:
        stats += "\ncorpus: " + "\ncorpus: ".join(problems)
    if result.error:
        return ItemResult("failed", f"{lt.id}: the target could not be fuzzed: {result.error}",
                          f"{result.error}\n{stats}", stats=stats)
    found = [f for f in result.failures if not getattr(f, "replayed", False)]
    if found:
        seed = opts.seed if opts.seed is not None else getattr(opts, "draw_seed", None)
        texts = [reporting.failure_text(f, lt.ref, seed) for f in found]
        saved = [str(p) for f in found if (p := getattr(f, "corpus_path", None))
                 and os.path.abspath(str(p)) not in before]
        kinds = ", ".join(f.outcome.verdict for f in found)
        n = len(found)
        headline = (f"fuzzkern found {n} failing case{'s' if n != 1 else ''} in {lt.id} "
                    f"after {result.cases} cases: {kinds} — {found[0].outcome.message}")
        return ItemResult("failed", headline.splitlines()[0],
                          "\n\n".join(texts) + f"\n\n{stats}", saved, stats=stats)
    if result.cases and result.tested <= 0:
        # A run that tested nothing must not look like a pass.
        empty = (f" ({result.empty} of them empty: no element in any tensor input)"
                 if result.empty else "")
        return ItemResult(
            "failed",
            f"{lt.id}: none of {result.cases} cases got past the launcher's preconditions or "
            f"the modes {','.join(opts.modes)}{empty}: nothing was tested",
            stats, stats=stats)
    return ItemResult("passed", "", stats, stats=stats)


def entry_needs(entry: Any, modes: Sequence[str]) -> str | None:
    """Why ``entry`` cannot be judged with ``modes`` on this machine (its failure showed only
    in a mode not run here), or None. That is the machine's limit, not a stale entry: skip."""
    failing = list(getattr(entry, "failing_modes", None) or [])
    if failing and not set(failing) & set(modes):
        return (f"it failed only in {', '.join(failing)} mode, and this session runs "
                f"{', '.join(modes)}" + ("" if "compiled" in modes else " (no CUDA GPU)"))
    return None


def run_replay(path: str, entry: Any, loaded: Any, pool: Any,
               modes: tuple[str, ...]) -> ItemResult:
    """Replay one corpus entry as a test: still failing fails, now passing passes, and an
    entry that cannot be replayed *fails* with the reason — a stale regression case (target
    renamed, signature changed, inputs damaged) must be seen, not silently skipped."""
    from fuzzkern.corpus import store as corpus
    from fuzzkern.report import text as reporting
    from fuzzkern.search import engine

    shown = _relative(path)
    if isinstance(entry, BaseException):
        return ItemResult("failed", f"corpus entry {shown} cannot be read: {entry}",
                          f"{entry}\nFix the file, or delete it if it is obsolete "
                          f"(git rm {shown}).")
    why = entry_needs(entry, modes)
    if why:
        return ItemResult("skipped", f"cannot replay {shown} here: {why}")
    r = corpus.replay(entry, pool, loaded, modes=modes)
    if r.here:
        return ItemResult("skipped", f"cannot replay {shown} here: {r.reason}")
    if r.status == corpus.NOW_PASSING:
        return ItemResult("passed", "", f"{shown}: recorded {entry.verdict}, now {r.reason}")
    if r.status == corpus.STILL_FAILING and r.outcome is not None:
        failure = engine.Failure(entry.target_id, entry.case, r.outcome)
        for name, value in (("shrunk", entry.shrunk), ("corpus_path", path),
                            ("explanations", list(entry.explanations)), ("replayed", True)):
            setattr(failure, name, value)
        text = reporting.failure_text(failure, loaded.ref)
        return ItemResult("failed", f"regression case {shown} still fails: {r.reason}"
                          .splitlines()[0], text)
    return ItemResult(
        "failed", f"corpus entry {shown} cannot be replayed: {r.reason}".splitlines()[0],
        f"{shown}: {r.reason}\nThe entry no longer fits the target. Delete it if the case is "
        f"obsolete (git rm {shown}), or fix what changed.")


def _relative(path: str) -> str:
    from fuzzkern.report.text import shown_path

    return shown_path(path)


def _run_without_plugin(test: Callable[[], None]) -> None:
    """``fuzz_test`` called directly: fuzz with the ``dev`` profile, fail with an
    ``AssertionError`` carrying the diagnosis."""
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.search import engine
    from fuzzkern.search.database import open_database
    from fuzzkern.search.profiles import PROFILES, effective
    from fuzzkern.target.loader import LoadedTarget

    target: Target = test.fuzzkern_target  # type: ignore[attr-defined]
    settings: FuzzSettings = test.fuzzkern_settings  # type: ignore[attr-defined]
    module = sys.modules.get(test.__module__)
    refs = [lt for lt in (module_targets(module) if module else []) if lt.target is target]
    if not refs:
        raise InvalidArgument(
            f"Expected the target of {test.__name__} bound to a module-level name of "
            f"{test.__module__}, so worker processes can import it. Write `add = "
            "fuzzkern.Target(...)` and `test_add = fuzzkern.fuzz_test(add)`."
        )
    lt: LoadedTarget = refs[0]
    profile = PROFILES["dev"]
    max_examples, seed = effective(profile)
    modes = tuple(m for m in (settings.modes or default_modes()) if m in target.modes)
    if not modes:
        raise unittest.SkipTest(f"{target.id} runs only in {','.join(target.modes)}")
    kw: dict[str, Any] = {
        "budget": settings.budget or profile.budget,
        "modes": modes,
        "database": open_database(os.path.join(".hypothesis", "examples")),
        "seed": settings.seed if settings.seed is not None else seed,
        "max_examples": settings.max_examples or max_examples,
    }
    if kw["seed"] is None:
        kw["draw_seed"] = engine.new_draw_seed()
    kw["corpus"] = "corpus" if profile.write_corpus else None
    opts = engine.CampaignOptions(**kw)
    pool = WorkerPool()
    try:
        result = run_fuzz(lt, pool, opts)
    finally:
        pool.close()
    if result.status == "failed":
        raise AssertionError(f"{result.headline}\n\n{result.details}")
