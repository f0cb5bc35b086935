"""fuzzkern's pytest plugin: targets and their regression cases as test items.

Registered through the ``pytest11`` entry point, so installing fuzzkern is enough. What it does:

- Every module-level :class:`fuzzkern.Target` of a collected test file becomes the item
  ``test_ops.py::add[fuzz]``, which fuzzes the target through the engine (forked workers,
  shrinking, the oracle) and fails with the diagnosis when it finds a failing case. Every entry
  of the target in the corpus becomes an item of its own, ``test_ops.py::add[corpus:1a2b3c4d]``,
  which replays that case: still failing fails, now passing passes, and an entry that cannot
  be replayed any more *fails* with the reason — a stale regression case is surfaced, never
  silently skipped. :func:`fuzzkern.fuzz_test` gives explicit test functions the same items.
- Options ``--fuzzkern-*`` with ini keys ``fuzzkern_*``, profiles (:mod:`fuzzkern.search.profiles`),
  the ``fuzzkern`` and ``gpu`` markers, a report header, a ``fuzzkern`` report section on each
  item, and a terminal summary of the regression cases written to the corpus.
- Under pytest-xdist, every worker runs its own worker pool, pinned to one GPU
  (:mod:`fuzzkern.execution.devices`); the corpus and the example database are safe to share.

This module imports neither torch nor triton (a test checks it): they load in the worker
processes when a fuzzkern item runs. It keeps its own imports to what ``import fuzzkern``
already loads, and imports the engine inside the hooks that need it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from fuzzkern import testing
from fuzzkern.errors import FuzzkernError
from fuzzkern.target.declare import Target

#: user_properties key under which an item reports a corpus file it wrote (survives xdist)
NEW_CORPUS_PROPERTY = "fuzzkern_new_corpus"
SECTION = "fuzzkern"

# option name -> (ini key, metavar, help). Help text follows pytest's and xdist's rules: starts
# with a capital letter, and a single phrase has no final period.
_OPTIONS = {
    "--fuzzkern-profile": ("fuzzkern_profile", "NAME",
                           "Profile: dev, ci or nightly (default: ci when $CI is set, else dev)"),
    "--fuzzkern-budget": ("fuzzkern_budget", "DURATION",
                          "Wall-clock budget per fuzz item: 10s, 2m, 1h (default: the profile's)"),
    "--fuzzkern-max-examples": ("fuzzkern_max_examples", "N",
                                "Cases per fuzz item at most (default: the profile's)"),
    "--fuzzkern-max-failures": ("fuzzkern_max_failures", "N",
                                "Distinct failures per fuzz item before it stops; fuzzing goes "
                                "on after each one (default: 5)"),
    "--fuzzkern-amortize": ("fuzzkern_amortize", "FACTOR",
                            "Compiled mode: value variants after a case that compiled, for "
                            "FACTOR times its compile time; 0 turns them off (default: 1)"),
    "--fuzzkern-modes": ("fuzzkern_modes", "MODES",
                         "Comma-separated modes: interpret, compiled (default: interpret, "
                         "plus compiled when CUDA is present)"),
    "--fuzzkern-seed": ("fuzzkern_seed", "SEED", "Fixed Hypothesis seed for repeatable fuzz items"),
    "--fuzzkern-min-cases": ("fuzzkern_min_cases", "N",
                             "Fail a fuzz item that ran fewer cases (default: a warning below "
                             "20)"),
    "--fuzzkern-case-floor": ("fuzzkern_case_floor", "N",
                              "A fuzz item whose budget ran out before N cases is fuzzed more, "
                              "for the time its measured case cost says they take, at most "
                              "its budget again; 0 turns it off (default: 20)"),
    "--fuzzkern-corpus": ("fuzzkern_corpus", "DIR",
                          "Regression corpus folder (default: <rootdir>/corpus)"),
    "--fuzzkern-db": ("fuzzkern_db", "SPEC",
                      "Example database: a folder, redis://host:port/n or none "
                      "(default: <rootdir>/.hypothesis/examples)"),
    "--fuzzkern-assume-gpu": ("fuzzkern_assume_gpu", "GPU",
                              "Without CUDA, torch.cuda's host queries answer as this GPU "
                              "would (H200, H100, A100) while tensors stay on the CPU and "
                              "kernels run in the interpreter (default: none)"),
}


_COVERAGE_HELP = ("Fail a fuzz item whose kernel coverage (interpreter) is under P percent "
                  "(default: off)")

_IDLE_HELP = ("A fuzz item that ran no case (its first case did not finish within the budget) "
              "warns instead of failing")

_STRICT_HELP = ("Accuracy findings (beyond the tolerance, within a small factor of what "
                "rounding explains) fail the item like kernel bugs")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzzkern", "fuzzkern: differential fuzzing of Triton kernels")
    for opt, (ini, metavar, help_text) in _OPTIONS.items():
        group.addoption(opt, dest=ini, default=None, metavar=metavar, help=help_text)
        parser.addini(ini, help_text, default=None)
    group.addoption("--fuzzkern-strict-accuracy", dest="fuzzkern_strict_accuracy",
                    action="store_true", default=False, help=_STRICT_HELP)
    parser.addini("fuzzkern_strict_accuracy", _STRICT_HELP, type="bool", default=False)
    group.addoption("--fuzzkern-allow-idle", dest="fuzzkern_allow_idle", action="store_true",
                    default=False, help=_IDLE_HELP)
    parser.addini("fuzzkern_allow_idle", _IDLE_HELP, type="bool", default=False)
    group.addoption("--fuzzkern-fail-under-coverage", dest="fuzzkern_fail_under_coverage",
                    default=None, metavar="P", help=_COVERAGE_HELP)
    parser.addini("fuzzkern_fail_under_coverage", _COVERAGE_HELP, default=None)


# -- session state ---------------------------------------------------------------------------


@dataclass
class _Settings:
    """The session's settings: each value from the command line, else the ini file."""

    profile: Any
    profile_source: str
    budget: float | None = None
    budget_from_cli: bool = False
    max_examples: int | None = None
    max_examples_from_cli: bool = False
    max_failures: int | None = None
    min_cases: int | None = None
    case_floor: int | None = None
    amortize: float | None = None
    modes: tuple[str, ...] | None = None
    modes_from_cli: bool = False
    seed: int | None = None
    seed_from_cli: bool = False
    seed_source: str = "--fuzzkern-seed"
    corpus: str = "corpus"
    #: the database spec given (command line or ini), or None for the profile's default
    db: str | None = None
    strict_accuracy: bool = False
    #: a fuzz item that ran no case warns instead of failing
    allow_idle: bool = False
    #: the GPU torch.cuda's host queries answer as, without CUDA (fuzzkern.gpus.GPUS)
    assume_gpu: str | None = None
    #: fuzz items under this kernel coverage (percent) fail (docs/coverage.md)
    fail_under_coverage: float | None = None
    default_db: str = ".hypothesis/examples"
    #: Hypothesis's own options (its pytest plugin): ``--hypothesis-profile`` replaces the
    #: fuzzkern profile's Hypothesis profile, ``--hypothesis-seed`` is a seed below
    #: ``--fuzzkern-seed``, ``--hypothesis-show-statistics`` adds each item's statistics to
    #: Hypothesis's statistics section
    hypothesis_profile: str | None = None
    show_statistics: bool = False


@dataclass
class _State:
    settings: _Settings
    new_corpus: list[str] = field(default_factory=list)
    _pool: Any = None
    _database: Any = None
    _database_error: Exception | None = None
    _database_open: bool = False
    _modes: tuple[str, ...] | None = None

    def pool(self) -> Any:
        if self._pool is None:
            from fuzzkern.execution.devices import worker_env
            from fuzzkern.execution.pool import WorkerPool

            self._pool = WorkerPool(env=worker_env())
        return self._pool

    def database(self) -> Any:
        """The example database, opened once per process (a Redis one is pinged; an
        unreachable one fails every item with the same message, without waiting again)."""
        if self._database_error is not None:
            raise self._database_error
        if not self._database_open:
            from fuzzkern.search.database import open_database

            s = self.settings
            try:
                if s.db is not None:
                    # An explicit database under a profile that writes none is read, not written.
                    self._database = open_database(
                        s.db, read_only=s.profile.database != "read-write",
                        fallback=s.default_db)
                elif s.profile.database == "read-write":
                    self._database = open_database(s.default_db)
            except FuzzkernError as e:
                self._database_error = e
                raise
            self._database_open = True
        return self._database

    def default_modes(self) -> tuple[str, ...]:
        if self._modes is None:
            self._modes = testing.default_modes()
        return self._modes

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


_STATE = pytest.StashKey[_State]()


def _source(ini: str, from_cli: bool) -> str:
    return ("--" + ini.replace("_", "-")) if from_cli else f"the {ini} ini key"


def _value(config: pytest.Config, ini: str) -> tuple[str | None, bool]:
    """An option's value and whether it came from the command line (else the ini file)."""
    cli = config.getoption(ini)
    if cli is not None:
        return str(cli), True
    value = config.getini(ini)
    return (str(value).strip() or None if value is not None else None), False


def _path(config: pytest.Config, value: str, from_cli: bool) -> str:
    """A path from the command line is relative to where pytest was started; one from the ini
    file, to the ini file's folder."""
    if from_cli:
        base = config.invocation_params.dir
    else:
        base = config.inipath.parent if config.inipath else config.rootpath
    return str(Path(base, os.path.expanduser(value)))


def _option(config: pytest.Config, ini: str, parse: Any) -> tuple[Any, bool]:
    """``parse(value, from_cli)`` of an option, or None; errors name where the value came
    from."""
    value, from_cli = _value(config, ini)
    if value is None:
        return None, False
    try:
        return parse(value, from_cli), from_cli
    except FuzzkernError as e:
        raise FuzzkernError(f"{_source(ini, from_cli)}: {e}") from None


def _gpu_name(value: str) -> str:
    from fuzzkern.gpus import check_gpu_name

    return check_gpu_name(value, "the GPU")


def _int(value: str) -> Any:
    """An int when ``value`` spells one, else the text (for the error message)."""
    try:
        return int(value)
    except ValueError:
        return value


def _database_spec(config: pytest.Config) -> Any:
    from fuzzkern.search.database import check_spec, is_redis

    def parse(value: str, from_cli: bool) -> str:
        check_spec(value)
        if value.strip().lower() == "none" or is_redis(value):
            return value.strip()
        return _path(config, value, from_cli)

    return parse


def _settings(config: pytest.Config) -> _Settings:
    from fuzzkern.search import profiles

    profile, source = profiles.select(config.getoption("fuzzkern_profile"),
                                      config.getini("fuzzkern_profile") or None)
    s = _Settings(profile, source, corpus=str(config.rootpath / "corpus"),
                  default_db=str(config.rootpath / ".hypothesis" / "examples"))
    s.strict_accuracy = bool(config.getoption("fuzzkern_strict_accuracy")
                             or config.getini("fuzzkern_strict_accuracy"))
    s.allow_idle = bool(config.getoption("fuzzkern_allow_idle")
                        or config.getini("fuzzkern_allow_idle"))
    s.budget, s.budget_from_cli = _option(
        config, "fuzzkern_budget", lambda v, _: testing.check_budget(v))
    s.max_examples, s.max_examples_from_cli = _option(
        config, "fuzzkern_max_examples",
        lambda v, _: testing.check_positive_int("max_examples", _int(v)))
    s.max_failures, _ = _option(
        config, "fuzzkern_max_failures",
        lambda v, _: testing.check_positive_int("max_failures", _int(v)))
    s.min_cases, _ = _option(
        config, "fuzzkern_min_cases",
        lambda v, _: testing.check_positive_int("min_cases", _int(v)))
    s.case_floor, _ = _option(
        config, "fuzzkern_case_floor", lambda v, _: testing.check_case_floor(_int(v)))
    s.amortize, _ = _option(
        config, "fuzzkern_amortize", lambda v, _: testing.check_amortize(v))
    s.modes, s.modes_from_cli = _option(
        config, "fuzzkern_modes", lambda v, _: testing.check_modes(v))
    s.seed, s.seed_from_cli = _option(
        config, "fuzzkern_seed", lambda v, _: testing.check_seed(_int(v)))
    corpus, _ = _option(config, "fuzzkern_corpus", lambda v, cli: _path(config, v, cli))
    s.corpus = corpus or s.corpus
    s.db, _ = _option(config, "fuzzkern_db", _database_spec(config))
    s.fail_under_coverage, _ = _option(
        config, "fuzzkern_fail_under_coverage", lambda v, _: testing.check_percent(v))
    s.assume_gpu, _ = _option(config, "fuzzkern_assume_gpu", lambda v, _: _gpu_name(v))
    _hypothesis_options(config, s)
    return s


def _hypothesis_option(config: pytest.Config, name: str) -> Any:
    """One of Hypothesis's pytest options; None when its plugin is off."""
    try:
        return config.getoption(name)
    except ValueError:
        return None


def _hypothesis_options(config: pytest.Config, s: _Settings) -> None:
    """Map Hypothesis's own pytest options onto fuzzkern items (the fuzzkern ones win)."""
    profile = _hypothesis_option(config, "--hypothesis-profile")
    if profile:
        from hypothesis import settings
        from hypothesis.errors import InvalidArgument as HypothesisInvalidArgument

        try:
            settings.get_profile(profile)
        except HypothesisInvalidArgument as e:
            raise FuzzkernError(f"--hypothesis-profile: {e}") from None
        s.hypothesis_profile = profile
    seed = _hypothesis_option(config, "--hypothesis-seed")
    if seed is not None and not s.seed_from_cli:
        try:
            s.seed = testing.check_seed(_int(str(seed)))
        except FuzzkernError as e:
            raise FuzzkernError(f"--hypothesis-seed: {e} fuzzkern items take an integer "
                                "seed.") from None
        s.seed_from_cli = True
        s.seed_source = "--hypothesis-seed"
    s.show_statistics = bool(_hypothesis_option(config, "--hypothesis-show-statistics"))


def _profile_limits(s: _Settings) -> tuple[int | None, int | None, str]:
    """``(max_examples, seed, source)`` of the Hypothesis profile in force: the one
    ``--hypothesis-profile`` loaded, else one the project loaded itself (``settings.
    load_profile(...)`` in a conftest), else ``fuzzkern-<profile>``. Hypothesis's own
    ``default`` and ``ci`` (which it loads under CI) leave the fuzzkern profile in charge."""
    from hypothesis import settings

    from fuzzkern.search import profiles

    name = s.hypothesis_profile or settings.get_current_profile_name()
    if name not in (None, "default", "ci"):
        return (*profiles.limits_of(name), f"Hypothesis profile {name!r}")
    return (*profiles.effective(s.profile), f"Hypothesis profile 'fuzzkern-{s.profile.name}'")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fuzzkern: a fuzzkern fuzz or corpus item (added to them automatically)")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU")
    from fuzzkern.search import variables

    try:
        variables.check()  # $FUZZKERN_CORPUS_LIMITS, $FUZZKERN_AHEAD...: usage errors up front
        settings = _settings(config)
    except FuzzkernError as e:
        raise pytest.UsageError(f"fuzzkern: {e}") from None
    if settings.modes and "compiled" in settings.modes and (
            "compiled" not in testing.default_modes()):
        where = "--fuzzkern-modes" if settings.modes_from_cli else "the fuzzkern_modes ini key"
        raise pytest.UsageError(
            f"fuzzkern: {where}: the compiled mode needs a CUDA GPU, and torch sees none here "
            "(torch.cuda.is_available() is False); use interpret")
    state = _State(settings)
    config.stash[_STATE] = state
    if settings.assume_gpu:
        # for the whole session: test files import libraries that ask at import
        import contextlib

        from fuzzkern.gpus import assumed_gpu

        scope = contextlib.ExitStack()
        scope.enter_context(assumed_gpu(settings.assume_gpu))
        config.add_cleanup(scope.close)
    config.pluginmanager.register(_Reporter(state), "fuzzkern-reporter")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, None)
    if state is None:
        return []
    s = state.settings
    p = s.profile
    budget = s.budget or p.budget
    profile_limit, profile_seed, limits_source = _profile_limits(s)
    limit = s.max_examples or profile_limit
    versions = []
    for pkg in ("torch", "triton"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{pkg} not installed")
    try:
        from fuzzkern.execution.devices import machine_devices

        devices = machine_devices()
        gpus = f"GPUs: {len(devices)} ({','.join(devices)})" if devices else "GPUs: none"
    except FuzzkernError as e:
        gpus = f"GPUs: ? ({e})"
    from fuzzkern.search.database import describe_spec

    seed = s.seed if s.seed is not None else profile_seed
    seeded = seed is not None
    if seeded:
        db = "off (a seeded run does not use one)"
    elif s.db is not None:
        db = describe_spec(s.db) + (" (read-only)" if p.database != "read-write" else "")
    else:
        default = _shown(s.default_db)
        db = default if p.database == "read-write" else "off"
    if s.seed is not None:
        seed_text = f"seed {s.seed} ({s.seed_source})"
    elif seeded:
        seed_text = f"seed {seed} (derandomized by the {limits_source})"
    else:
        seed_text = "a random seed per item, printed in its report section"
    cases = f"at most {limit} cases per target" if limit else "no case limit"
    if not s.max_examples:
        cases += f" ({limits_source})"
    return [
        f"fuzzkern {_version()}: profile {p.name} ({s.profile_source}): budget {budget:g} s, "
        f"{cases}; " + "; ".join(versions) + f"; {gpus}",
        f"fuzzkern: {seed_text}; database {db}; corpus {_shown(s.corpus)}"
        + ("" if p.write_corpus else " (read-only)"),
    ]


def _version() -> str:
    from fuzzkern._version import __version__

    return __version__


def _shown(path: str) -> str:
    from fuzzkern.report.text import shown_path  # imports neither torch nor triton

    return shown_path(path)


# -- collection ------------------------------------------------------------------------------


class FuzzkernFailed(Exception):
    """A fuzzkern item failed; the message is the one-line headline, the report section holds
    the diagnosis."""


class FuzzkernItem(pytest.Item):
    """``target[fuzz]``: fuzz a target; ``target[corpus:ID]``: replay one corpus entry."""

    def __init__(self, *, loaded: Any, kind: str, fuzz_settings: Any = None,
                 entry: Any = None, entry_path: str | None = None,
                 problem: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.kind = kind
        self.fuzz_settings = fuzz_settings or testing.FuzzSettings()
        self.entry = entry
        self.entry_path = entry_path
        self.problem = problem
        self.fuzzkern_details = ""
        self.fuzzkern_stats = ""
        self.add_marker("fuzzkern")

    def runtest(self) -> None:
        state = self.config.stash[_STATE]
        if self.problem:
            raise FuzzkernFailed(self.problem)
        target: Target = self.loaded.target
        modes, chosen = self._modes(state)
        runnable = tuple(m for m in modes if m in target.modes)
        if not runnable:
            pytest.skip(f"{target.id} runs only in {','.join(target.modes)}; this session "
                        f"uses {','.join(modes)}" + ("" if chosen else " (no CUDA GPU)"))
        if "compiled" in runnable and "compiled" not in state.default_modes():
            runnable = tuple(m for m in runnable if m != "compiled")
            if not runnable:  # a fuzz_test(modes=("compiled",)) on a machine without CUDA
                pytest.skip(f"{target.id}: the compiled mode needs a CUDA GPU (none here)")
        try:
            if self.kind == "fuzz":
                opts = self._campaign_options(state, runnable)
                result = testing.run_fuzz(self.loaded, state.pool(), opts,
                                          state.settings.min_cases, state.settings.allow_idle,
                                          state.settings.case_floor)
            else:
                result = testing.run_replay(self.entry_path or "", self.entry,
                                            self.loaded, state.pool(), runnable)
        except FuzzkernError as e:  # configuration: an unreachable database, bad $FUZZKERN_GPUS
            raise FuzzkernFailed(f"fuzzkern: {e}") from None
        self.fuzzkern_details = result.details
        self.fuzzkern_stats = result.stats
        for path in result.new_corpus:
            self.user_properties.append((NEW_CORPUS_PROPERTY, path))
        if result.status == "failed":
            raise FuzzkernFailed(result.headline)
        under = state.settings.fail_under_coverage
        if (self.kind == "fuzz" and under is not None and result.status == "passed"
                and (result.coverage is None or result.coverage < under)):
            got = "not measured" if result.coverage is None else f"{result.coverage:.1f}%"
            raise FuzzkernFailed(f"{target.id}: kernel coverage {got} is under "
                                 f"--fuzzkern-fail-under-coverage {under:g}")
        if result.status == "skipped":
            pytest.skip(result.headline)

    def _modes(self, state: _State) -> tuple[tuple[str, ...], bool]:
        """The session's modes for this item, and whether someone chose them (rather than
        the default: what this machine can run)."""
        s = state.settings
        if s.modes_from_cli and s.modes:
            return s.modes, True
        chosen = self.fuzz_settings.modes or s.modes
        return (chosen, True) if chosen else (state.default_modes(), False)

    def _campaign_options(self, state: _State, modes: tuple[str, ...]) -> Any:
        """Command line, then the fuzz_test's own settings, then the ini file, then the
        profile (with its Hypothesis profile's max_examples and derandomize)."""
        from fuzzkern.search.engine import CampaignOptions, new_draw_seed

        s, own, p = state.settings, self.fuzz_settings, state.settings.profile
        max_examples, seed, _ = _profile_limits(s)

        def pick(cli_value: Any, from_cli: bool, own_value: Any, default: Any) -> Any:
            if from_cli and cli_value is not None:
                return cli_value
            if own_value is not None:
                return own_value
            return cli_value if cli_value is not None else default

        kw: dict[str, Any] = {
            "budget": pick(s.budget, s.budget_from_cli, own.budget, p.budget),
            "max_examples": pick(s.max_examples, s.max_examples_from_cli, own.max_examples,
                                 max_examples),
            "seed": pick(s.seed, s.seed_from_cli, own.seed, seed),
            "modes": modes,
            "strict_accuracy": s.strict_accuracy,
            "assume_gpu": s.assume_gpu,
        }
        if s.max_failures is not None:
            kw["max_failures"] = s.max_failures
        if s.amortize is not None:
            kw["amortize"] = s.amortize
        # Hypothesis ignores the database of a seeded run (hypothesis.seed sets database=None):
        # don't open one, so a derandomized CI job does not even need the Redis server.
        kw["database"] = None if kw["seed"] is not None else state.database()
        if kw["seed"] is None:  # printed in the item's section, so the draws can be repeated
            kw["draw_seed"] = new_draw_seed()
        kw["corpus"] = s.corpus if p.write_corpus else None
        return CampaignOptions(**kw)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, FuzzkernFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name


_TARGETS = pytest.StashKey[list[Any]]()


def _module_targets(collector: pytest.Module) -> list[Any]:
    """The module's targets, named and referenced as ``fuzzkern run path.py`` would."""
    if _TARGETS not in collector.stash:
        collector.stash[_TARGETS] = testing.module_targets(collector.obj)
    return collector.stash[_TARGETS]


def _corpus_items(collector: pytest.Module, name: str, loaded: Any,
                  own: Any = None) -> list[FuzzkernItem]:
    """One item per corpus entry of the target (unreadable files included: they fail),
    named by the entry's content hash."""
    from fuzzkern.corpus import store as corpus

    folder = collector.config.stash[_STATE].settings.corpus
    entries = corpus.scan(folder, loaded.id, loaded.aliases)
    ids = _short_ids([p for p, _ in entries])
    return [
        _item(collector, name, f"corpus:{ids[path]}", loaded=loaded, kind="corpus",
              fuzz_settings=own, entry=entry, entry_path=str(path))
        for path, entry in entries
    ]


def _item(collector: pytest.Module, name: str, param: str, **kwargs: Any) -> FuzzkernItem:
    """The item ``name[param]``, with the node id of a parametrized test.

    pytest >= 9.2 keeps node ids structured (``_pytest.nodeid.NodeId``: path, names, params)
    and matches ``--lf``/``--ff``/``--nf`` by comparing them: the stored string
    ``test_ops.py::add[fuzz]`` parses as name ``add`` with params ``fuzz``. An item named
    ``add[fuzz]`` by a plain child id would never compare equal, so ``--lf`` would skip it.
    """
    parent_id = getattr(collector, "id", None)
    if parent_id is not None and hasattr(parent_id, "with_params"):
        kwargs["nodeid"] = parent_id.child(name).with_params(param)
    return FuzzkernItem.from_parent(collector, name=f"{name}[{param}]", **kwargs)


def _short_ids(paths: list[Any]) -> dict[Any, str]:
    """File stem (a content hash) cut to 8 characters, longer where two would clash: stable
    as long as the files are. A stem of other characters (a file that is no entry, named by
    anyone) has each character but letters, digits, ``_``, ``.`` and ``-`` written as ``xHH``:
    a newline, ``::`` or ``[`` never makes a node id of more lines or parts."""
    stems = {p: re.sub(r"[^A-Za-z0-9_.-]", lambda m: f"x{ord(m[0]):02x}", Path(p).stem)
             for p in paths}
    out = {}
    for p, stem in stems.items():
        n = 8
        while n < len(stem) and any(o != p and s[:n] == stem[:n] for o, s in stems.items()):
            n += 4
        out[p] = stem[:n]
    return out


#: target id -> the ref of the target of this session that has it
_IDS = pytest.StashKey[dict[str, str]]()


def _clash(collector: pytest.Module, loaded: Any) -> str | None:
    """Why ``loaded`` cannot run in this session: another target collected before it has its
    id (two files with one ``name=``), so the two would share corpus entries and database
    keys, and one entry would fail under one and pass under the other (as ``fuzzkern run``
    refuses them)."""
    ids = collector.config.stash.setdefault(_IDS, {})
    other = ids.setdefault(loaded.id, loaded.ref)
    if other == loaded.ref:
        return None
    return (f"two targets are named {loaded.id!r} ({other} and {loaded.ref}); give one of "
            "them another name= (names key the corpus and database)")


def _items(collector: pytest.Module, name: str, loaded: Any, own: Any = None,
           problem: str | None = None) -> list[FuzzkernItem]:
    problem = problem or (None if loaded is None else _clash(collector, loaded))
    corpus = [] if loaded is None or problem else _corpus_items(collector, name, loaded, own)
    fuzz = _item(collector, name, "fuzz", loaded=loaded, kind="fuzz", fuzz_settings=own,
                 problem=problem)
    # Regression cases first: they are quick, and a known bug should fail before fuzzing.
    return [*corpus, fuzz]


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: object) -> Any:
    if not isinstance(collector, pytest.Module):
        return None
    if isinstance(obj, Target):
        # A target that a fuzz_test of the same file wraps is collected through that test.
        if any(testing.is_fuzz_test(v) and v.fuzzkern_target is obj
               for v in vars(collector.obj).values()):
            return []
        loaded = next((lt for lt in _module_targets(collector)
                       if lt.ref.endswith(f"::{name}")), None)
        return _items(collector, name, loaded) if loaded else None
    if testing.is_fuzz_test(obj) and collector.istestfunction(obj, name):
        target = obj.fuzzkern_target  # type: ignore[attr-defined]
        loaded = next((lt for lt in _module_targets(collector) if lt.target is target), None)
        problem = None if loaded else (
            f"fuzz_test({target.id}) in {collector.name}: its target is not bound to a "
            "module-level name of this file, so worker processes cannot import it. Write "
            "`add = fuzzkern.Target(...)` and `test_add = fuzzkern.fuzz_test(add)`.")
        items = _items(collector, name, loaded, obj.fuzzkern_settings,  # type: ignore[attr-defined]
                       problem)
        for item in items:
            for mark in getattr(obj, "pytestmark", []):
                item.add_marker(mark)
        return items
    return None


# -- --lf ------------------------------------------------------------------------------------

_SELECTED = pytest.StashKey[list[pytest.Item]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """Under ``--lf``, pytest's cache provider keeps only a file's items that failed last time
    (this wrapper runs outside it): a target's corpus items are collected again beside its
    ``[fuzz]`` item, so the entry that item saved is not dropped as a never-failed item."""
    report = yield
    if (not isinstance(collector, pytest.Module) or not collector.config.getoption("lf", False)
            or not report.result):
        return report
    present = {it.name for it in report.result if isinstance(it, FuzzkernItem)}
    out: list[Any] = []
    for it in report.result:
        if isinstance(it, FuzzkernItem) and it.kind == "fuzz" and it.loaded is not None \
                and not it.problem:
            name = it.name.split("[", 1)[0]
            out += [c for c in _corpus_items(collector, name, it.loaded, it.fuzz_settings)
                    if c.name not in present]
        out.append(it)
    report.result[:] = out
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the list --lf narrows (pytest's cache provider assigns items[:] and then reports the
    # rest deselected): kept, so a target's corpus items can go back beside its [fuzz] item
    config.stash[_SELECTED] = items


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Under ``--lf``, a target's corpus items run with its ``[fuzz]`` item: the entry a
    failing ``[fuzz]`` item saved is a new item, which ``--lf`` alone would drop. Not with
    ``-k``/``-m``, whose choices stand."""
    if not items:
        return
    config = items[0].config
    selected = config.stash.get(_SELECTED, None)
    if (selected is None or not config.getoption("lf", False)
            or config.getoption("keyword", "") or config.getoption("markexpr", "")):
        return
    fuzz = {(it.parent, it.name.split("[", 1)[0]) for it in selected
            if isinstance(it, FuzzkernItem) and it.kind == "fuzz"}
    for it in items:
        if (isinstance(it, FuzzkernItem) and it.kind == "corpus"
                and (it.parent, it.name.split("[", 1)[0]) in fuzz and it not in selected):
            sibling = next(k for k, other in enumerate(selected) if other.parent is it.parent
                           and isinstance(other, FuzzkernItem) and other.kind == "fuzz"
                           and other.name.split("[", 1)[0] == it.name.split("[", 1)[0])
            selected.insert(sibling, it)  # corpus items before their [fuzz] item


# -- reporting -------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "call" and isinstance(item, FuzzkernItem) and item.fuzzkern_details:
        report.sections.append((SECTION, item.fuzzkern_details))
    if (call.when == "teardown" and isinstance(item, FuzzkernItem) and item.fuzzkern_stats
            and item.config.stash[_STATE].settings.show_statistics):
        # Where Hypothesis's plugin keeps a test's statistics: its terminal summary prints
        # them under "Hypothesis Statistics" (and the key travels back from xdist workers).
        report.__dict__[_HYPOTHESIS_STATS_KEY] = f"{item.nodeid}:\n\n  - {item.fuzzkern_stats}"
    return report


#: the report attribute ``_hypothesis_pytestplugin`` reads statistics from (its STATS_KEY)
_HYPOTHESIS_STATS_KEY = "_hypothesis_stats"


class _Reporter:
    """The session's reporting hooks, bound to its state (registered in pytest_configure)."""

    def __init__(self, state: _State) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # In the xdist controller this sees the workers' reports too: user_properties travel.
        if report.when == "call":
            self.state.new_corpus.extend(
                str(v) for k, v in report.user_properties if k == NEW_CORPUS_PROPERTY)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.state.new_corpus:
            return
        paths = sorted(set(self.state.new_corpus))
        folders = sorted({_shown(os.path.dirname(p)) + "/" for p in paths})
        root = _shown(self.state.settings.corpus) + "/"
        terminalreporter.section("fuzzkern")
        terminalreporter.write_line(
            f"{len(paths)} new regression case{'s' if len(paths) != 1 else ''} written to "
            f"{', '.join(folders)}; review and `git add {root}`")
        for p in paths:
            terminalreporter.write_line(f"  {_shown(p)}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None:
        state.close()
