"""``fuzzkern`` command line: ``run``, ``list``, ``replay``, ``repro``.

Exit codes (a contract, docs/architecture.md): 0 no failure, 1 failures found, 2 usage or
configuration error.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fuzzkern.errors import FuzzkernError
from fuzzkern.judge.outcome import Verdict, tested_cases
from fuzzkern.target.declare import REFERENCE_DEVICES

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2


def _fail_usage(message: str) -> None:
    click.echo(f"fuzzkern: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _check_timeout(timeout: float | None, option: str = "--timeout") -> None:
    if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
        raise click.BadParameter(f"expected a positive, finite number of seconds, got {timeout}",
                                 param_hint=option)


def _output_path(path: str | None, option: str) -> None:
    """Check up front that a report can be written to ``path`` (creating its folder, as pytest's
    --junitxml does), so a run never ends with a traceback after its whole budget."""
    if not path:
        return
    from fuzzkern.files import written_through

    if os.path.isdir(path):
        _fail_usage(f"{option} {path}: is a folder; expected a file name")
    if written_through(path):  # /dev/null, a FIFO, a link: written through, never replaced
        if not os.access(path, os.W_OK) and os.path.exists(path):
            _fail_usage(f"{option} {path}: is not writable")
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        _fail_usage(f"{option} {path}: cannot create the folder {folder}: {e.strerror or e}")
    if not os.access(folder, os.W_OK | os.X_OK):
        _fail_usage(f"{option} {path}: the folder {folder} is not writable")


def _corpus_path(path: str) -> None:
    """Refuse up front a ``--corpus`` that cannot hold a corpus: an empty name (an unset
    variable in CI: the run found and saved nothing, without a word) or a file (every
    finding NOT SAVED after the whole budget)."""
    if not path.strip():
        _fail_usage("--corpus: an empty folder name; pass a folder, or --no-corpus to "
                    "neither replay nor save entries")
    if os.path.exists(path) and not os.path.isdir(path):
        _fail_usage(f"--corpus {path}: is a file; expected a folder (or --no-corpus)")


def _modes(text: str) -> tuple[str, ...]:
    from fuzzkern.target.declare import MODES

    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise click.BadParameter(
            f"expected a comma-separated list of {', '.join(MODES)}, got {text!r}",
            param_hint="--modes",
        )
    return modes


def _default_modes() -> tuple[str, ...]:
    try:
        import torch

        if torch.cuda.is_available():
            return ("interpret", "compiled")
    except Exception:  # pragma: no cover
        pass
    return ("interpret",)


class _Group(click.Group):
    """Usage errors as one line (``fuzzkern: error: ...``) and exit status 2, not click's
    usage block: what a script's log or a CI step shows should say what was wrong at once."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except click.UsageError as e:
            command = e.ctx.command_path if e.ctx is not None else "fuzzkern"
            click.echo(f"fuzzkern: error: {e.format_message()} (see {command} --help)", err=True)
            sys.exit(EXIT_USAGE)
        except click.Abort:
            click.echo("fuzzkern: aborted", err=True)
            sys.exit(130)
        except click.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fuzzkern")
def main() -> None:
    """Differential testing and fuzzing for Triton kernels."""


@main.command()
@click.argument("targets", nargs=-1)
@click.option("--budget", default="60s", show_default=True,
              help="Wall-clock budget of the search, spread across targets: 90s, 10m, 1h "
                   "(failures found may shrink --shrink-time longer).")
@click.option("--modes", "modes_text", default=None,
              help="Comma-separated execution modes: interpret, compiled. "
                   "Default: interpret, plus compiled when CUDA is present.")
@click.option("--seed", type=int, default=None, help="Seed Hypothesis for a repeatable run.")
@click.option("--db", "db_path", default=".hypothesis/examples", show_default=True,
              help="Hypothesis example database (a cache shared with the pytest plugin): a "
                   "folder, redis://host:port/n to share findings across machines, or none.")
@click.option("--no-db", is_flag=True, help="Run without the Hypothesis example database.")
@click.option("--timeout", type=float, default=None,
              help="Seconds of its own work one case may take before it is stopped as slow "
                   "or hang (its worker's CPU time, or the clock's for a case that waits; "
                   "default: per target).")
@click.option("--compile-timeout", type=float, default=None,
              help="Seconds the Triton compilations of one case may take (compiled mode) "
                   "before it is stopped as slow; compiling never counts against --timeout. "
                   "Default: 300.")
@click.option("--max-examples", type=int, default=None,
              help="Stop each target after this many cases, even with budget left.")
@click.option("--max-failures", type=int, default=5, show_default=True,
              help="Distinct failures (verdict and location) to find per target before it "
                   "stops; fuzzing goes on after each one, each is shrunk and saved.")
@click.option("--report", "report_path", default=None, help="Write a JSON report here.")
@click.option("--html", "html_path", default=None,
              help="Write an HTML report here: per target, coverage heatmaps (dtype x layout x "
                   "size) and error distributions.")
@click.option("-j", "--jobs", "jobs_text", default="auto", show_default=True,
              help="Fuzz targets in N processes at once. auto: with the compiled mode up to "
                   "8 per GPU (one per two CPU cores: they compile at once while sharing the "
                   "GPU), else one per CPU core; 1 for budgets under a minute (starting a "
                   "process costs seconds).")
@click.option("--debug-kernels", is_flag=True,
              help="Launch with debug=True: device asserts and int32 overflow checks fire.")
@click.option("--sanitize", is_flag=True,
              help="Run the compiled mode under compute-sanitizer memcheck, without the caching "
                   "allocator (needs CUDA and the CUDA toolkit; slow).")
@click.option("--repeat-compiled", type=int, default=1, show_default=True,
              help="Run the compiled kernel N times per case and compare the runs bitwise "
                   "(verdict nondeterministic). Needs the compiled mode.")
@click.option("--no-check", "no_checks", multiple=True,
              type=click.Choice(["bounds", "view", "poison", "mutation", "redzone"]),
              help="Turn a hygiene check off (repeatable): interpreter bounds or view checks, "
                   "poisoned torch.empty, input mutation, compiled red zones.")
@click.option("--amortize", type=float, default=1.0, show_default=True,
              help="Compiled mode: after a case whose kernels had to compile for C seconds, "
                   "run variants of it with new input values (same shapes, layouts and "
                   "dtypes, so nothing compiles) for FACTOR x C seconds in the same worker. "
                   "0: every case is a fresh draw.")
@click.option("--reference-device", "reference_device", default="auto", show_default=True,
              type=click.Choice(list(REFERENCE_DEVICES)),
              help="Compiled mode: where torch references run. auto: in float64 on the GPU "
                   "where that gives the CPU's verdict (a sample is judged both ways every "
                   "run); cpu: always on the CPU; device: on the GPU wherever it supports "
                   "float64.")
@click.option("--compile-ahead", "compile_ahead", default=None, metavar="N|off",
              help="Compiled mode: processes that compile ahead the kernels the search will "
                   "need next, in all (split between the -j processes), at idle priority; "
                   "they stop when few of their compilations are used. Default: off; auto: "
                   "the host's cores but one. Also FUZZKERN_AHEAD.")
@click.option("--strict-accuracy", is_flag=True,
              help="Accuracy findings (beyond the tolerance, within a small factor of what "
                   "rounding at the inputs' precision explains) fail like kernel bugs.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
@click.option("--heartbeat", type=float, default=30.0, show_default=True,
              help="Off a terminal (logs, CI): print a progress line every SECONDS (targets "
                   "running, cases, failures, time left); 0 turns it off.")
@click.option("--corpus", "corpus_dir", default=None,
              help="Regression corpus folder: a target's entries replay before it is fuzzed, "
                   "and each failure found is saved there (default: corpus/ in the project "
                   "root, pytest's rootdir, as the pytest plugin's; else ./corpus).")
@click.option("--no-corpus", is_flag=True, help="Neither replay nor save corpus entries.")
@click.option("--shrink-time", "shrink_text", default="auto", show_default=True,
              help="Time to shrink failures past the budget (the search ends at the budget; a "
                   "failure found late is shrunk, not saved unshrunk): 30s, 2m; auto: a "
                   "quarter of the budget, from 20 s to 10 min; 0: none.")
@click.option("--min-cases", type=int, default=None,
              help="Fail (exit 2) when a target ran fewer cases than this. Without it, a "
                   f"target that ran fewer than {20} cases gets a warning (it tested little: "
                   "raise --budget).")
@click.option("--case-floor", type=int, default=20, show_default=True,
              help="A target whose budget ran out before this many cases is fuzzed more, for "
                   "the time its measured case cost says they take, at most the budget again "
                   "(said in the summary); 0: the budget is all it gets.")
@click.option("--allow-idle-targets", is_flag=True,
              help="Exit 0 even when a target ran no case (the budget ran out before its turn, "
                   "or before its first case finished: each is named in a warning). Without "
                   "it such a run exits 2.")
@click.option("--fail-under-coverage", type=click.FloatRange(0, 100), default=None,
              metavar="P", help="Exit 1 when a target's kernel coverage (measured in the "
                                "interpreter) is under P percent.")
@click.option("--no-guide", is_flag=True,
              help="Do not steer generation by kernel coverage (it is still measured).")
@click.option("--tracebacks", is_flag=True,
              help="Print each failure's whole traceback (an error's message names only where "
                   "it was raised).")
@click.option("--assume-gpu", "assume_gpu", default=None, metavar="GPU",
              help="Without CUDA, torch.cuda's host queries (device context, properties, SM "
                   "count, capability, device count, streams) answer as this GPU would: H200, "
                   "H100 or A100; tensors stay on the CPU and kernels run in the interpreter. "
                   "Ignored where a CUDA GPU is present.")
def run(**params: Any) -> None:
    """Fuzz TARGETS (path.py, path.py::name, package.module[:name], or a folder: every .py
    file under it that defines targets) for a wall-clock budget spread across them.

    With no TARGETS, fuzzes the built-in seed kernels shipped with fuzzkern. Exits 0 when
    nothing failed, 1 when failures were found, 2 on a usage error or when no case ran at all.
    """
    a = _RunArgs(**params)
    console = Console(highlight=False)
    if not console.is_terminal:  # logs and CI: don't wrap at 80 columns, unless $COLUMNS says
        console = Console(highlight=False, width=_log_width(140))
    seconds, modes = _check_run(a)
    opts, loaded, jobs, devices = _campaign(a, seconds, modes)
    opts.shrink_time = _shrink_time(a.shrink_text, seconds)
    run_seed = a.seed if a.seed is not None else opts.draw_seed
    if not a.quiet:
        shrink = (f" (+ up to {opts.shrink_time:g} s to shrink failures)" if opts.shrink_time
                  else "")
        console.print(f"fuzzkern: {len(loaded)} target(s), budget {a.budget}{shrink}, "
                      f"modes {','.join(modes)}, {jobs} process(es), seed {run_seed}",
                      markup=False, soft_wrap=True)
        if a.assume_gpu:
            console.print(_assumption(a.assume_gpu), markup=False, soft_wrap=True)
    if a.seed is not None and opts.database is not None:
        # hypothesis.seed() runs without the example database: say so rather than surprise
        console.print(f"note: --seed {a.seed} runs without the example database ({a.db_path}):"
                      " Hypothesis neither replays nor records examples in a seeded run; the "
                      "corpus still replays and records failures", markup=False)
    start = time.monotonic()
    display = _Display(console, [lt.id for lt in loaded], seconds,
                       live=console.is_terminal and not a.quiet, quiet=a.quiet,
                       heartbeat=0.0 if console.is_terminal or a.quiet else a.heartbeat)
    from fuzzkern.search import engine, floor, schedule

    def campaign(targets: list[Any], o: Any) -> list[Any]:
        return schedule.run_campaign(targets, o, on_event=display.on_event,
                                     on_start=display.on_start, jobs=jobs,
                                     database_spec=None if a.no_db else a.db_path,
                                     devices=devices)

    with engine.handle_interrupts(), display:
        results = campaign(loaded, opts)
        signum = engine.interrupted()
        topups = [] if signum is not None or not a.case_floor else floor.top_up_campaign(
            loaded, results, opts, campaign, a.case_floor)
        signum = engine.interrupted()
    elapsed = time.monotonic() - start
    done = _Done(results, elapsed, run_seed, _repeat_cases(results, a.max_examples),
                 display.start_up)
    _print_results(console, a, done)
    for line in floor.said(topups):
        console.print(line, markup=False, soft_wrap=True)
    _print_run_lines(console, a, done)
    _print_coverage(console, a, done, modes)
    unwritten = _write_reports(console, a, done, loaded, seconds, modes)
    status = _run_exit(console, a, done, opts, signum)
    # a report that could not be written (a full disk) is an error, unless a failure (exit 1)
    # or an interruption says more; what was found is in the corpus either way
    sys.exit(EXIT_USAGE if unwritten and status == 0 else status)


@dataclass
class _RunArgs:
    """``fuzzkern run``'s options, as click parsed them."""

    targets: tuple[str, ...]
    budget: str
    modes_text: str | None
    seed: int | None
    db_path: str
    no_db: bool
    timeout: float | None
    compile_timeout: float | None
    max_examples: int | None
    max_failures: int
    report_path: str | None
    html_path: str | None
    jobs_text: str
    debug_kernels: bool
    sanitize: bool
    repeat_compiled: int
    no_checks: tuple[str, ...]
    amortize: float
    strict_accuracy: bool
    quiet: bool
    heartbeat: float
    corpus_dir: str | None
    no_corpus: bool
    min_cases: int | None = None
    case_floor: int = 20
    shrink_text: str = "auto"
    fail_under_coverage: float | None = None
    no_guide: bool = False
    tracebacks: bool = False
    assume_gpu: str | None = None
    allow_idle_targets: bool = False
    reference_device: str = "auto"
    compile_ahead: str | None = None

    def argv(self) -> list[str]:
        """The command line that names the same targets and modes (for a repeat command)."""
        from fuzzkern.report.text import shown_path

        out = ["fuzzkern", "run", *[shown_path(t) if t.endswith(".py") or "::" in t else t
                                    for t in self.targets]]
        if self.modes_text:
            out += ["--modes", self.modes_text]
        if self.assume_gpu:
            out += ["--assume-gpu", self.assume_gpu]
        if self.no_corpus:
            out.append("--no-corpus")
        elif self.corpus_dir is not None and self.corpus_dir != "corpus":
            out += ["--corpus", self.corpus_dir]
        return out


@dataclass
class _Done:
    """What a finished campaign gave, for the report and the exit status."""

    results: list[Any]
    elapsed: float
    seed: int
    #: the case count that repeats the run's draws (``--max-examples``)
    repeat_cases: int
    #: seconds of the workers' start-up, before the budget's clock started (in ``elapsed``)
    start_up: float = 0.0

    @property
    def failures(self) -> list[Any]:
        return [f for r in self.results for f in r.failures]

    def ref(self, target_id: str) -> str:
        return next((r.ref for r in self.results if r.target_id == target_id), target_id)


def _check_run(a: _RunArgs) -> tuple[float, tuple[str, ...]]:
    """Every option checked before anything runs: the budget's seconds and the modes."""
    from fuzzkern.search import engine

    try:
        seconds = engine.parse_budget(a.budget)
    except FuzzkernError as e:
        raise click.BadParameter(str(e), param_hint="--budget") from None
    modes = _modes(a.modes_text) if a.modes_text else _default_modes()
    if "compiled" in modes:
        import torch

        if not torch.cuda.is_available():
            _fail_usage("--modes compiled needs a CUDA GPU, and torch sees none here "
                        "(torch.cuda.is_available() is False); use --modes interpret")
    _check_timeout(a.timeout)
    _check_timeout(a.compile_timeout, "--compile-timeout")
    if not math.isfinite(a.heartbeat) or 0 < a.heartbeat < 1:  # nan: silently none; 1e-300:
        # a line as fast as the console takes them, from a thread that never sleeps
        raise click.BadParameter(f"expected 0 (off) or a number of seconds >= 1, got "
                                 f"{a.heartbeat:g}", param_hint="--heartbeat")
    for value, least, what, option in (
            (a.heartbeat, 0, "a number of seconds", "--heartbeat"),
            (a.max_examples, 1, "a number of cases", "--max-examples"),
            (a.repeat_compiled, 1, "a number of runs", "--repeat-compiled"),
            (a.max_failures, 1, "a number of failures", "--max-failures"),
            (a.min_cases, 1, "a number of cases", "--min-cases"),
            (a.case_floor, 0, "a number of cases", "--case-floor")):
        if value is not None and value < least:
            raise click.BadParameter(f"expected {what} >= {least}, got {value:g}",
                                     param_hint=option)
    if a.min_cases and a.max_examples and a.min_cases > a.max_examples:
        _fail_usage(f"--min-cases {a.min_cases} asks for more cases than --max-examples "
                    f"{a.max_examples} lets a target run")
    _output_path(a.report_path, "--report")
    _output_path(a.html_path, "--html")
    if not a.no_corpus and a.corpus_dir is not None:  # (None: the project's corpus/)
        _corpus_path(a.corpus_dir)
    from fuzzkern.testing import check_amortize

    try:
        check_amortize(a.amortize)
    except FuzzkernError as e:
        raise click.BadParameter(str(e), param_hint="--amortize") from None
    if a.repeat_compiled > 1 and "compiled" not in modes:
        _fail_usage("--repeat-compiled compares repeated runs of the compiled kernel and needs "
                    "the compiled mode (a CUDA GPU); the interpreter runs programs one after "
                    "another and is deterministic")
    if a.sanitize and "compiled" not in modes:
        _fail_usage("--sanitize checks the compiled mode; add it with --modes "
                    "interpret,compiled")
    if a.compile_ahead is not None:
        from fuzzkern.execution import ahead

        try:
            ahead.size_of(a.compile_ahead)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--compile-ahead") from None
    if a.assume_gpu is not None:
        from fuzzkern.gpus import check_gpu_name

        try:
            a.assume_gpu = check_gpu_name(a.assume_gpu, "--assume-gpu")
        except FuzzkernError as e:
            raise click.BadParameter(str(e), param_hint="--assume-gpu") from None
    return seconds, modes


def _assumption(name: str) -> str:
    """The line that says what ``--assume-gpu`` does on this machine."""
    import torch

    from fuzzkern.gpus import GPUS

    if torch.cuda.is_available():
        return (f"note: --assume-gpu {name}: a CUDA GPU is present and answers itself (only "
                "torch.cuda.device of an interpreted launch's CPU tensors does nothing)")
    return (f"assuming an {GPUS[name].name} (--assume-gpu): torch.cuda's host queries answer "
            "as it would; tensors stay on the CPU and kernels run in the interpreter")


def _campaign(a: _RunArgs, seconds: float, modes: tuple[str, ...]
              ) -> tuple[Any, list[Any], int, Any]:
    """The campaign's options, the targets, the number of processes and their GPUs."""
    import warnings

    from fuzzkern.search import engine, schedule
    from fuzzkern.search.database import DatabaseFallbackWarning, open_database
    from fuzzkern.target import loader

    # the fallback's own "fuzzkern: warning: ..." line says it once (pytest shows the warning)
    warnings.filterwarnings("ignore", category=DatabaseFallbackWarning)
    sanitizer = None
    if a.sanitize:
        from fuzzkern.execution.sanitizer import probe

        try:
            sanitizer = probe()
        except FuzzkernError as e:
            _fail_usage(str(e))
    jobs = _jobs(a.jobs_text)
    _check_variables()
    from fuzzkern.gpus import assumed_gpu

    try:
        with assumed_gpu(a.assume_gpu):  # a target file may import a library that asks
            loaded = loader.expand(list(a.targets))
    except FuzzkernError as e:
        _fail_usage(str(e))
    from fuzzkern.execution.devices import machine_devices

    if jobs is None:
        jobs = 1 if seconds < 60 else schedule.default_jobs(modes, machine_devices())
    jobs = max(1, min(jobs, len(loaded)))
    devices = (machine_devices() or None) if jobs > 1 and "compiled" in modes else None
    try:
        database = None if a.no_db else open_database(a.db_path)
    except FuzzkernError as e:
        _fail_usage(f"--db: {e}")
    # Every run has a seed, printed, so the "to repeat" line repeats its draws.
    opts = engine.CampaignOptions(
        budget=seconds, modes=modes, database=database, seed=a.seed,
        draw_seed=engine.new_draw_seed() if a.seed is None else None,
        max_examples=a.max_examples, timeout=a.timeout, debug=a.debug_kernels,
        corpus=None if a.no_corpus else a.corpus_dir or loader.default_corpus(a.targets),
        checks={name: False for name in a.no_checks}, repeat_compiled=a.repeat_compiled,
        sanitize=sanitizer, max_failures=a.max_failures, amortize=a.amortize,
        strict_accuracy=a.strict_accuracy)
    if a.compile_timeout is not None:
        opts.compile_timeout = a.compile_timeout
    opts.guide = not a.no_guide
    opts.assume_gpu = a.assume_gpu
    opts.reference_device = a.reference_device
    opts.compile_ahead = a.compile_ahead
    return opts, loaded, jobs, devices


def _shrink_time(text: str, budget: float) -> float:
    """``--shrink-time``: seconds, or auto (a quarter of the budget, from 20 s to 10 min)."""
    if text.strip().lower() == "auto":
        return min(600.0, max(20.0, budget / 4))
    if text.strip() in ("0", "0s"):
        return 0.0
    from fuzzkern.search import engine

    try:
        return engine.parse_budget(text)
    except FuzzkernError as e:
        raise click.BadParameter(str(e), param_hint="--shrink-time") from None


def _repeat_cases(results: list[Any], max_examples: int | None) -> int:
    """The ``--max-examples`` that repeats a run's draws: its own limit where a target reached
    it, else the cases each target drew (those minimizing a failure are drawn again)."""
    most = 0
    for r in results:
        if max_examples is not None and r.cases >= max_examples:
            most = max(most, max_examples)
        else:
            most = max(most, r.cases - r.minimize_runs)
    return max(most, 1)


def _print_results(console: Console, a: _RunArgs, done: _Done) -> None:
    """Failures, accuracy findings, the summary table, the corpus and errors."""
    from fuzzkern.judge.verdict import failure_key
    from fuzzkern.report import text as reporting
    from fuzzkern.search import findings

    shared = findings.shared_roots(done.failures)
    for i, f in enumerate(done.failures):
        console.rule(Text(f"{f.target_id}: {f.outcome.verdict}", style="bold red"))
        console.print(reporting.failure_text(f, done.ref(f.target_id), done.seed,
                                             done.repeat_cases, same_as=shared.get(i)),
                      markup=False, soft_wrap=True)
        for mode, m in f.outcome.modes.items() if a.tracebacks else ():
            if m.detail.get("traceback"):
                console.print(f"[{mode}] traceback:\n{m.detail['traceback']}", markup=False,
                              soft_wrap=True)
    for r in done.results:
        for case, outcome in r.accuracy:  # one per root cause, its worst case
            console.rule(Text(f"{r.target_id}: accuracy (not a failure; --strict-accuracy "
                              "makes it one)", style="yellow"))
            console.print(reporting.accuracy_text(r.target_id, case, outcome,
                                                  r.shows.get(failure_key(outcome))),
                          markup=False, soft_wrap=True)
        for note in r.limits:
            console.rule(Text(f"{r.target_id}: fuzzkern-limit (fuzzkern's, not the kernel's; "
                              "not a failure)", style="magenta"))
            console.print(note, markup=False, soft_wrap=True)
    console.print(summary_table(done.results, f"fuzzkern summary ({done.elapsed:.1f} s, seed "
                                f"{done.seed})", console.width))
    limits = sum(len(r.limits) for r in done.results)
    if limits:
        console.print(f"fuzzkern-limit: {limits} finding(s) were fuzzkern's own, not the "
                      "kernels' (above; not failures)", markup=False)
    _print_corpus(console, done.results)
    for r in done.results:
        if r.error:
            console.print(Text.assemble(("error", "red"), f" in {r.target_id}: {r.error}"))
        elif r.skipped:
            console.print(f"skipped {r.target_id}: {r.skipped}", markup=False)
    if not a.quiet:
        console.print("to repeat: " + shlex.join(a.argv()) + " " + _repeat_line(a, done),
                      markup=False, soft_wrap=True)


def _repeat_line(a: _RunArgs, done: _Done) -> str:
    from fuzzkern.report.text import repeat_options

    # a budget the case count reaches first, on a machine as busy as this one was
    return repeat_options(done.seed, done.repeat_cases, max(60.0, 4 * done.elapsed + 60))


def _write_reports(console: Console, a: _RunArgs, done: _Done, loaded: list[Any],
                   seconds: float, modes: tuple[str, ...]) -> int:
    """``--report`` (JSON) and ``--html``, each on its own: one that cannot be written (a
    full disk) is one error line, and the other is still written. Returns how many failed."""
    from fuzzkern.report import text as reporting
    from fuzzkern.search import findings

    unwritten = 0
    shared = findings.shared_roots(done.failures)
    if a.report_path:
        report = {
            "budget_seconds": seconds,
            "seed": done.seed,
            "seeded": a.seed is not None,
            "repeat": shlex.join(a.argv()) + " " + _repeat_line(a, done),
            "elapsed_seconds": round(done.elapsed, 2),
            "start_up_seconds": round(done.start_up, 2),
            "stopped_at_budget": any(r.stopped for r in done.results),
            "idle_targets": [r.target_id for r in done.results if r.idle],
            "compile": _compile_total(done.results),
            "reference_parity": _parity_total(done.results),
            "modes": list(modes),
            "targets": [reporting.result_row(r) for r in done.results],
            "failures": [
                {"target": f.target_id, "verdict": f.outcome.verdict,
                 "message": f.outcome.message, "case": f.case.to_json(),
                 "outcome": f.outcome.to_json(), "shrunk": f.shrunk, "flaky": f.flaky,
                 "corpus_path": None if reporting.not_saved_reason(f) else f.corpus_path,
                 "not_saved": reporting.not_saved_reason(f),
                 "explanations": f.explanations, "replayed": f.replayed, "key": f.key,
                 "shows": f.shows.to_json() if f.shows else None, "also": list(f.also),
                 "same_root_as": shared[i].target_id if i in shared else None}
                for i, f in enumerate(done.failures)
            ],
        }
        unwritten += not _write_text(a.report_path, "--report", lambda: json.dumps(
            _encode(report), indent=2, allow_nan=False))
    if a.html_path:
        from fuzzkern.report import html as htmlreport

        texts: dict[str, list[str]] = {}
        for i, f in enumerate(done.failures):
            texts.setdefault(f.target_id, []).append(reporting.failure_text(
                f, done.ref(f.target_id), done.seed, done.repeat_cases,
                same_as=shared.get(i)))
        written = _write_text(a.html_path, "--html", lambda: htmlreport.render(
            done.results, budget=seconds, elapsed=done.elapsed, modes=modes,
            failures_text=texts,
            layout_kinds={lt.id: htmlreport.layout_kinds(lt.target) for lt in loaded},
            run_info=_run_info(a, done)))
        unwritten += not written
        if written and not a.quiet:
            console.print(f"HTML report: {_shown(a.html_path)}", markup=False)
    return unwritten


def _run_info(a: _RunArgs, done: _Done) -> dict[str, str]:
    """What the HTML report's header says about the run: seed, versions, command line."""
    from fuzzkern.corpus.store import environment

    env = environment()
    return {"seed": str(done.seed), "command": shlex.join(["fuzzkern", *sys.argv[1:]]),
            "repeat": shlex.join(a.argv()) + " " + _repeat_line(a, done),
            "versions": ", ".join(f"{k} {env[k]}" for k in ("fuzzkern", "torch", "triton",
                                                           "python") if env.get(k))
            + (f"; {env['gpu']}" if env.get("gpu") else ""),
            "date": str(env.get("date", ""))}


def _write_text(path: str, option: str, text: Callable[[], str]) -> bool:
    """Write ``text()`` to ``path`` (:func:`fuzzkern.files.write_named`: atomically,
    or through a device, FIFO or link, never replacing it). A file that cannot be written (a
    full disk, a file size limit) or a report that cannot be made is one error line naming
    ``option``, and no temporary file is left; False then."""
    from fuzzkern.files import write_named

    try:
        write_named(path, text().encode("utf-8"))
        return True
    except (OSError, MemoryError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}"
        click.echo(f"fuzzkern: error: {option}: cannot write {path}: {why}; what the run found "
                   "is above (and in the corpus, unless --no-corpus)", err=True)
        return False


def _print_coverage(console: Console, a: _RunArgs, done: _Done, modes: tuple[str, ...]
                    ) -> None:
    """Each target's kernel coverage and what it never reached (docs/coverage.md)."""
    from fuzzkern.report.coverage import coverage_lines

    for line in coverage_lines(done.results, modes, most=0 if a.quiet else 6):
        console.print(line, markup=False, soft_wrap=True)


def _under_coverage(a: _RunArgs, results: list[Any]) -> bool:
    """``--fail-under-coverage``: whether a target's kernel coverage is under it, each said."""
    if a.fail_under_coverage is None:
        return False
    from fuzzkern.report.coverage import below

    low = below(results, a.fail_under_coverage)
    for target_id, p in low:
        got = "not measured" if p is None else f"{p:.1f}%"
        click.echo(f"fuzzkern: kernel coverage of {target_id} is {got}, under "
                   f"--fail-under-coverage {a.fail_under_coverage:g}", err=True)
    return bool(low)


def _run_exit(console: Console, a: _RunArgs, done: _Done, opts: Any,
              signum: int | None) -> int:
    """The exit status, after the notes and warnings that explain it."""
    failures, results = done.failures, done.results
    saved = sum(1 for f in failures  # checked again: host code may have removed the file
                if f.corpus_path and not f.replayed and os.path.isfile(f.corpus_path))
    found = f"{len(failures)} failure(s) found" + (f", {saved} saved to the corpus"
                                                   if opts.corpus else "")
    if any(r.stopped for r in results):
        console.print(f"note: the budget ({a.budget}) ran out while a case ran: it was "
                      f"stopped; {found}", markup=False, soft_wrap=True)
    if signum is not None:
        import signal

        click.echo(f"fuzzkern: interrupted by {signal.Signals(signum).name}: stopped the "
                   f"search; {found}", err=True)
        return 128 + signum
    if any(r.error for r in results) and not failures:
        return EXIT_USAGE
    if not failures and results and all(r.skipped for r in results):
        # every target was skipped, each said why in one line above
        click.echo(f"fuzzkern: error: no case was tested: every target was skipped "
                   f"({results[0].target_id}: {results[0].skipped})", err=True)
        return EXIT_USAGE
    if not failures and sum(r.cases for r in results) == 0:
        # A run that tested nothing must not look green.
        click.echo(f"fuzzkern: error: no case ran within --budget {a.budget} (the budget ran "
                   "out before the first case finished); raise --budget", err=True)
        return EXIT_USAGE
    untested = [r for r in results if r.cases and _tested(r) <= 0]
    if not failures and untested and len(untested) == len([r for r in results if r.cases]):
        # Every case ended unsupported or rejected by a precondition: nothing was tested.
        counts = ", ".join(f"{n} {v}" for v, n in _untested_counts(untested).items() if n)
        why = _first_unsupported_reason(untested)
        click.echo(f"fuzzkern: error: no case was tested: all {sum(r.cases for r in untested)} "
                   f"cases ended {counts}" + (f" ({why})" if why else ""), err=True)
        return EXIT_USAGE
    _print_notes(console, a, results, opts)
    idle = _idle_targets(a, results)
    for r in untested:
        if not a.quiet:
            console.print(f"warning: {r.target_id}: none of its {r.cases} cases was tested "
                          "(all unsupported, slow, rejected by a precondition or empty: no "
                          "element in any tensor input)")
    few = _too_few_cases(console, a, results)
    if failures or _under_coverage(a, results):
        return EXIT_FAILURES
    return EXIT_USAGE if (few and a.min_cases) or (idle and not a.allow_idle_targets) \
        else EXIT_OK


def _compile_total(results: list[Any]) -> dict[str, Any]:
    """The run's compile wait and work (``TargetResult.compile`` summed)."""
    from fuzzkern.search.engine import add_compile

    total: dict[str, Any] = {}
    for r in results:
        add_compile(total, getattr(r, "compile", {}) or {})
    return total


def _compile_line(results: list[Any], elapsed: float) -> str | None:
    """One line: compile wait against the run's wall time, compile work, what compiling ahead
    served; None when nothing compiled."""
    c = _compile_total(results)
    if not c or not (c.get("compiles") or c.get("compile_wait")):
        return None
    wait = float(c.get("compile_wait", 0.0))
    share = f"{100 * wait / elapsed:.1f}% of {elapsed:.0f} s" if elapsed > 0 else "-"
    head = f"compile wait {wait:.1f} s ({share})"
    done = c.get("ahead")
    if not done or not done.get("processes"):
        return head + "; compiling ahead off"
    failed = f" ({done.get('failed', 0)} failed)" if done.get("failed") else ""
    served, compiled = int(c.get("served_ahead", 0) or 0), int(done.get("compiled", 0) or 0)
    rate = f", hit rate {100 * served / compiled:.1f}%" if compiled else ""
    stopped = f"; stopped: {done['stopped']}" if done.get("stopped") else ""
    return (f"{head}, compile work {float(c.get('compile_work', 0.0)):.1f} s; "
            f"{served} of {c.get('compiles', 0)} compilations served from "
            f"{compiled} compiled ahead by {done.get('processes')} processes"
            f"{failed}{rate}{stopped}")


def _parity_total(results: list[Any]) -> dict[str, Any]:
    return {"device": sum(getattr(r, "parity_device", 0) for r in results),
            "judged": sum(getattr(r, "parity_judged", 0) for r in results),
            "disagreed": sum(getattr(r, "parity_disagreed", 0) for r in results)}


def _print_run_lines(console: Console, a: _RunArgs, done: _Done) -> None:
    """The run's compile and reference-parity lines."""
    line = _compile_line(done.results, done.elapsed)
    if line and not a.quiet:
        console.print(line, markup=False, soft_wrap=True)
    p = _parity_total(done.results)
    if p["device"]:
        console.print(f"reference parity: {p['judged']} cases judged on both, "
                      f"{p['disagreed']} disagreements ({p['device']} decided with device "
                      "references)", markup=False, soft_wrap=True)
    for r in done.results:
        if getattr(r, "parity_disagreed", 0) or getattr(r, "parity_off", None):
            console.print(f"  {r.target_id}: {r.parity_disagreed} disagreement(s); "
                          f"{r.parity_off or 'device references still on'}", markup=False,
                          soft_wrap=True)


def _idle_targets(a: _RunArgs, results: list[Any]) -> list[Any]:
    """Targets that ran no case though the run asked them to (``TargetResult.idle``), each
    said in one line: an error (exit 2) unless ``--allow-idle-targets``."""
    idle = [r for r in results if getattr(r, "idle", False)]
    for r in idle:
        text = (f"{r.target_id} ran no case: {r.idle_reason()}; raise --budget, or fuzz it "
                "alone")
        if a.allow_idle_targets:
            click.echo(f"warning: {text} (allowed by --allow-idle-targets)", err=True)
        else:
            click.echo(f"fuzzkern: error: {text} (--allow-idle-targets allows it)", err=True)
    return idle


#: a target that ran fewer cases than this gets a warning (``--min-cases`` makes it an error)
MIN_CASES = 20


def _too_few_cases(console: Console, a: _RunArgs, results: list[Any]) -> list[Any]:
    """Targets that ran fewer cases than ``--min-cases`` (default: a warning below
    :data:`MIN_CASES`, or below ``--max-examples`` when that is smaller), each said in one
    line; a target that failed or could not run is not counted."""
    floor = a.min_cases or min(MIN_CASES, a.max_examples or MIN_CASES)
    few = [r for r in results if r.cases < floor and not r.failures and not r.error
           and not r.skipped and r.cases]
    for r in few:
        text = (f"{r.target_id} ran {r.cases} case{'s' if r.cases != 1 else ''}, fewer than "
                f"{'--min-cases ' if a.min_cases else ''}{floor}: it tested little; raise "
                "--budget")
        if a.min_cases:
            click.echo(f"fuzzkern: error: {text}", err=True)
        else:
            console.print(f"warning: {text} (--min-cases N makes this an error)",
                          markup=False, soft_wrap=True)
    return few


def _print_notes(console: Console, a: _RunArgs, results: list[Any], opts: Any) -> None:
    """Notes per target: slow cases, value variants, killed processes, compile limits."""
    for r in results:
        for note in r.slow if not a.quiet else ():
            console.print(f"note: {r.target_id}: {note}", markup=False)
        more = r.counts.get(Verdict.SLOW, 0) - sum(1 for n in r.slow if "stopped" in n)
        if more > 0 and not a.quiet:
            console.print(f"note: {r.target_id}: {more} more slow case(s) stopped",
                          markup=False)
        if r.variants and not a.quiet:
            console.print(f"note: {r.target_id}: {r.variants} of {r.cases} cases were value "
                          f"variants, run after the cases that compiled ({r.compiles} kernel "
                          f"compilations, {r.compile_seconds:.1f} s; --amortize 0 turns "
                          "variants off)", markup=False)
        if r.killed:
            console.print(f"note: {r.target_id}: {r.killed} process(es) its cases started were "
                          "still running when their case ended, and were killed", markup=False)
        if r.cut and r.cases and not a.quiet:
            console.print(f"note: {r.target_id}: {r.cut}", markup=False, soft_wrap=True)
        if r.discovered and not a.quiet:
            found = ", ".join(f"{k} ({n} configs)" for k, n in sorted(r.discovered.items()))
            console.print(f"note: {r.target_id}: autotuned kernels reached at run time, drawn "
                          f"from then on: {found}", markup=False, soft_wrap=True)
        if r.slow_compiles and not a.quiet:
            console.print(f"note: {r.target_id}: {r.slow_compiles} case(s) stopped at the "
                          f"compile limit of {opts.compile_timeout:g} s; "
                          f"{r.compile_seconds:.0f} s compiling in all", markup=False)


def _tested(r: Any) -> int:
    """Of a target's cases, those that tested something (not untested verdicts, not empty)."""
    return int(getattr(r, "tested", tested_cases(r.cases, r.counts)))


def _untested_counts(results: list[Any]) -> dict[str, int]:
    out = {v: 0 for v in sorted(Verdict.UNTESTED)}
    out[EMPTY] = 0
    for r in results:
        for v in out:
            out[v] += r.counts.get(v, 0)
        out[EMPTY] += getattr(r, "empty", 0)
    return out


#: how an empty case (no element in any tensor input) is counted among the untested
EMPTY = "empty (no element in any tensor input)"


def _first_unsupported_reason(results: list[Any]) -> str | None:
    for r in results:
        reason = getattr(r, "unsupported_reason", None)
        if reason:
            return f"{r.target_id}: {reason}"
    return None


@main.command("list")
@click.argument("targets", nargs=-1)
def list_targets(targets: tuple[str, ...]) -> None:
    """List the targets TARGETS define (the built-in ones with no argument)."""
    from fuzzkern.target import loader

    try:
        loaded = loader.expand(list(targets))
    except FuzzkernError as e:
        _fail_usage(str(e))
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)
    table = Table(title=f"{len(loaded)} target(s)", title_justify="left")
    for col in ("target", "ref", "dims", "modes"):
        table.add_column(col, overflow="fold")
    for lt in loaded:
        t = lt.target
        table.add_row(Text(t.id), Text(lt.ref), Text(", ".join(sorted(t.dims)) or "-"),
                      ",".join(t.modes))
    console.print(table)


def summary_table(results: list[Any], title: str, width: int) -> Table:
    """One row per target, never wrapped: columns that do not fit ``width`` are left out
    (least useful first), and no cell wraps. Failures and errors are printed in full below."""
    from fuzzkern.report import text as reporting

    show_gpus = any(r.devices for r in results)
    columns: dict[str, list[str]] = {name: [] for name in (
        "target", "status", "cases", "cases/s", "pass", "accuracy", "precond.", "unsupported",
        "coverage", "classes", "compiles", "GPU", "failures")}
    styled = []
    for r in results:
        row = reporting.result_row(r)
        styled.append(_styled(row["status"]))
        cells = {
            "target": r.target_id, "status": row["status"], "cases": str(row["cases"]),
            "cases/s": f"{row['cases_per_s']:.1f}", "pass": str(row["passed"]),
            "accuracy": str(row["accuracy"]), "precond.": str(row["preconditions"]),
            "unsupported": str(row["unsupported"]),
            # kernel coverage (docs/coverage.md); classes: specialization classes seen
            "coverage": _percent(r), "classes": str(len(r.specializations)),
            "compiles": str(r.compiles),
            "GPU": reporting.gpu_summary(r.devices),
            "failures": ", ".join(row["failures"]) or ("error" if r.error else "")
                        or ("skipped" if r.skipped else "-"),
        }
        for name, cell in cells.items():
            columns[name].append(cell)
    if not show_gpus:
        del columns["GPU"]
    # Most useful first; a column takes its widest cell plus 3 for borders and padding.
    priority = ["target", "status", "cases", "failures", "accuracy", "GPU", "cases/s",
                "coverage", "classes", "compiles", "pass", "precond.", "unsupported"]
    kept: set[str] = set()
    used = 1
    for name in priority:
        if name not in columns:
            continue
        need = max(len(name), *(len(c) for c in columns[name])) + 3 if results else len(name) + 3
        if used + need <= width or name == "target":
            kept.add(name)
            used += need
    table = Table(title=title)
    shown = [n for n in columns if n in kept]
    for name in shown:
        table.add_column(name, no_wrap=True, overflow="ellipsis")
    for k in range(len(results)):
        table.add_row(*[styled[k] if n == "status" else Text(columns[n][k]) for n in shown])
    return table


def _percent(r: Any) -> str:
    """A target's kernel coverage for a table cell: ``80.0%``, or ``-`` where none was
    measured."""
    from fuzzkern.report.coverage import percent_of

    p = percent_of(r)
    return "-" if p is None else f"{p:.1f}%"


def _log_width(default: int) -> int:
    """The width for output that is not a terminal: ``$COLUMNS`` when set, else ``default``."""
    try:
        return max(40, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        return default


def _clock(seconds: float) -> str:
    """``75`` -> ``1:15``, ``3725`` -> ``1:02:05``."""
    m, sec = divmod(int(max(0.0, seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def _jobs(text: str) -> int | None:
    """``-j``: a positive number, or None for auto."""
    if text.strip().lower() == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise click.BadParameter(f"expected a positive number of processes or auto, got "
                                 f"{text!r}", param_hint="-j/--jobs")
    return n


def _styled(status: str) -> Text:
    style = {"FAIL": "bold red", "ERROR": "bold yellow", "ok": "green", "skipped": "dim"}
    return Text(status, style=style.get(status, ""))


def _encode(obj: Any) -> Any:
    """``obj`` with non-finite floats as ``{"$float": "inf"}`` (strict JSON, as the corpus
    writes them)."""
    from fuzzkern.case.codec import encode_document

    return encode_document(obj)


class _Display:
    """What a run shows while it runs: a live table per target on a terminal (rich.live),
    plain lines as targets finish otherwise (logs, CI)."""

    def __init__(self, console: Console, target_ids: list[str], budget: float, *, live: bool,
                 quiet: bool, heartbeat: float = 0.0) -> None:
        import threading

        from fuzzkern.search.schedule import Progress

        self.heartbeat = heartbeat
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.console = console
        self.rows = {t: Progress(t) for t in target_ids}
        self.budget = budget
        self.start = time.monotonic()
        #: seconds the workers took to start before the budget's clock started
        self.start_up = 0.0
        #: set once the budget's clock started (the campaign's "warm" event)
        self.started = threading.Event()
        self.quiet = quiet
        self.live: Any = None
        if live:
            from rich.live import Live

            self.live = Live(get_renderable=self.table, console=console,
                             refresh_per_second=4, transient=False)

    def __enter__(self) -> _Display:
        if self.live is not None:
            self.live.__enter__()
        if self.heartbeat > 0:
            import threading

            self._beat = threading.Thread(target=self._heartbeats, name="fuzzkern-heartbeat",
                                          daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self.live is not None:
            self.live.__exit__(*exc)

    def _heartbeats(self) -> None:
        """Logs and CI: a line every ``heartbeat`` seconds, so a long run is never silent."""
        while not self._stop.wait(self.heartbeat):
            if not self.started.is_set():  # the workers still start: the budget's clock waits
                continue
            # one line, never wrapped: logs are grepped and read line by line
            self.console.print(self.heartbeat_line(), markup=False, soft_wrap=True)

    def heartbeat_line(self) -> str:
        """``[1:30 of 30:00, 28:30 left] 3/15 targets done, 4120 cases, 0 failures; running:
        builtin.softmax (812 cases), ...``"""
        elapsed = time.monotonic() - self.start
        rows = list(self.rows.values())
        done = sum(p.state == "done" for p in rows)
        running = [p for p in rows if p.state == "running"]
        cases = sum(p.cases for p in rows)
        failures = sum(p.failures for p in rows)
        still = sum(p.still_failing for p in rows)
        text = (f"[{_clock(elapsed)} of {_clock(self.budget)}, "
                f"{_clock(self.budget - elapsed)} left] {done}/{len(rows)} targets done, "
                f"{cases} cases, {failures} new failure{'s' if failures != 1 else ''}"
                + (f", {still} corpus entr{'y' if still == 1 else 'ies'} still failing"
                   if still else ""))
        if running:
            text += "; running: " + ", ".join(
                f"{p.target_id} ({p.cases} cases" + (f", {p.failures} failing" if p.failures
                                                      else "")
                + (f", {p.still_failing} entries still failing" if p.still_failing else "")
                + ")" for p in running[:4])
            if len(running) > 4:
                text += f" and {len(running) - 4} more"
        return text

    def table(self) -> Table:
        elapsed = time.monotonic() - self.start
        t = Table(title=f"fuzzkern: {elapsed:.0f} s of {self.budget:g} s", title_justify="left")
        t.add_column("target", no_wrap=True)
        for col in ("state", "cases", "cases/s", "failures", "still failing", "compiles",
                    "classes"):
            t.add_column(col, justify="right")
        for p in self.rows.values():
            state = p.status if p.state == "done" and p.status else p.state
            t.add_row(Text(p.target_id), _styled(state), str(p.cases), f"{p.cases_per_s:.1f}",
                      Text(str(p.failures), style="bold red") if p.failures else "0",
                      Text(str(p.still_failing), style="red") if p.still_failing else "0",
                      str(p.compiles),
                      str(p.coverage))
        return t

    def on_start(self, start_up: float) -> None:
        """The budget's clock starts (fuzzkern.search.schedule), after ``start_up`` seconds."""
        self.start_up = float(start_up)
        self.start = time.monotonic()
        self.started.set()

    def on_event(self, kind: str, obj: Any, outcome: Any) -> None:
        from fuzzkern.report import text as reporting
        from fuzzkern.report.coverage import percent_of
        from fuzzkern.search.schedule import Progress

        if isinstance(obj, Progress):
            self.rows[obj.target_id] = obj
            return
        if kind != "done":
            return
        row = reporting.result_row(obj)
        p = self.rows.get(obj.target_id)
        if p is not None:
            p.state, p.status = "done", row["status"]
            p.cases = obj.cases
            p.failures = sum(not f.replayed for f in obj.failures)
            p.still_failing = sum(bool(f.replayed) for f in obj.failures)
        if self.live is None and not self.quiet:
            self.console.print(
                f"  {row['status']:>5}  {obj.target_id}: {row['cases']} cases "
                f"in {row['seconds']:.1f} s ({row['cases_per_s']:.1f}/s)"
                + (f", coverage {_percent(obj)}" if percent_of(obj) is not None else "")
                + (f" — {', '.join(row['failures'])}" if row["failures"] else "")
                + (f" — {obj.error}" if obj.error else ""), markup=False, soft_wrap=True)


def _print_corpus(console: Console, results: list[Any]) -> None:
    """What the corpus replay before fuzzing gave, and files that could not be used."""
    from fuzzkern.report.text import printable

    replayed = sum(r.replayed for r in results)
    still = sum(len(r.corpus_failing) for r in results)
    passing = [p for r in results for p in r.corpus_passing]
    if replayed:
        console.print(f"corpus: {replayed} entr{'y' if replayed == 1 else 'ies'} replayed: "
                      f"{still} still failing, {len(passing)} now passing", markup=False)
    for p in passing:
        console.print(f"  now passing: {_shown(p)} (keep it as a regression test, or delete it)",
                      markup=False)
    for r in results:
        for problem in r.corpus_problems:
            console.print(Text.assemble(("corpus:", "yellow"), f" {printable(problem)}"),
                          highlight=False)


def _shown(path: str) -> str:
    from fuzzkern.report.text import shown_path

    return shown_path(path)


_TARGET_HELP = ("A file, module or folder defining the entries' targets (repeatable; default: "
                "targets under [tool.fuzzkern] in pyproject.toml). Code is loaded only from "
                "these, never from what an entry says.")


@main.command()
@click.argument("paths", nargs=-1)
@click.option("-t", "--target", "sources", multiple=True, help=_TARGET_HELP)
@click.option("--ref", default=None,
              help="Replay every entry against this target (path.py::name or module:name) "
                   "instead of the one it was saved from, e.g. a fixed copy of the kernel.")
@click.option("--modes", "modes_text", default=None,
              help="Comma-separated modes to replay in (default: each entry's own; the modes "
                   "its failure showed in always run where this machine can run them).")
@click.option("--timeout", type=float, default=None,
              help="Seconds of its own work one case may take before it is stopped as slow "
                   "or hang (its worker's CPU time, or the clock's for a case that waits; "
                   "default: per target).")
def replay(paths: tuple[str, ...], sources: tuple[str, ...], ref: str | None,
           modes_text: str | None, timeout: float | None) -> None:
    """Replay corpus entries: PATHS are entry .json files or folders (default: corpus/ in the
    project root, as the pytest plugin's; else ./corpus).

    Each entry replays against the target of that id among the declared target sources
    (--target, else [tool.fuzzkern] targets in pyproject.toml). Says per entry whether it
    still fails, now passes, or cannot be replayed (and why). Exits 1 when an entry still
    fails, else 2 on a usage error or when an entry could not be replayed (damaged, refused,
    its target not declared, stale; not one that failed only in a mode this machine cannot
    run), 0 otherwise.
    """
    from fuzzkern.corpus import store as corpus
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.report.text import printable

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    modes = _modes(modes_text) if modes_text else None
    _check_timeout(timeout)
    _check_variables()
    items = _replay_items(paths, sources)
    if not items:
        click.echo("fuzzkern replay: no corpus entries in "
                   + ", ".join(paths or (_default_corpus(sources),)))
        sys.exit(EXIT_OK)
    loaded, problems = _declared(sources, paths, ref)
    table = Table(title=f"fuzzkern replay ({len(items)} entries)")
    for col in ("entry", "target", "verdict", "status", "reason"):
        table.add_column(col, overflow="fold")
    counts = {corpus.STILL_FAILING: 0, corpus.NOW_PASSING: 0, corpus.CANNOT_REPLAY: 0}
    pool = WorkerPool()
    try:
        for path, entry in items:
            r = _replay_one(path, entry, pool, loaded, problems, bool(ref), modes=modes,
                            timeout=timeout)
            if not r.here:
                counts[r.status] += 1
            style = {"still-failing": "red", "now-passing": "green"}.get(r.status, "yellow")
            status = r.status.replace("-", " ") + (" here" if r.here else "")
            table.add_row(Text(_shown(path)),
                          Text(printable(entry.target_id, keep="") if r.entry else "?"),
                          Text(printable(entry.verdict, keep="") if r.entry else "?"),
                          Text(status, style=style),
                          Text(printable(r.reason.splitlines()[0]) if r.reason else ""))
    finally:
        pool.close()
    console.print(table)
    if pool.killed:
        console.print(f"note: {pool.killed} process(es) the cases started were still running "
                      "when their case ended, and were killed", markup=False)
    sys.exit(_replay_exit(counts, len(items)))


def _declared(sources: tuple[str, ...], paths: tuple[str, ...], ref: str | None = None
              ) -> tuple[list[Any], list[str]]:
    """The targets of the declared sources (``--target``, else pyproject.toml's, looked up
    from the current folder, then from the first path's), and the sources that failed to
    load (or why none is declared); ``--ref`` alone: that target."""
    from fuzzkern.target import loader

    if ref:
        try:
            return loader.load(ref), []
        except FuzzkernError as e:
            _fail_usage(f"--ref: {e}")
    starts = [os.getcwd(), *(p for p in paths[:1] if os.path.exists(p))]
    error = ""
    for start in starts:
        try:
            return loader.declared(sources, start)
        except FuzzkernError as e:
            error = str(e)
    return [], [error]  # every entry then says why it cannot replay


def _check_variables() -> None:
    """The ``FUZZKERN_*`` variables (``$FUZZKERN_CORPUS_LIMITS``, ``$FUZZKERN_AHEAD``, ...)
    checked up front: a bad value is a usage error."""
    from fuzzkern.search import variables

    try:
        variables.check()
    except FuzzkernError as e:
        _fail_usage(str(e))


def _default_corpus(sources: tuple[str, ...] = ()) -> str:
    """The corpus a command that names none reads (:func:`fuzzkern.target.loader.default_corpus`),
    shown relative to the current folder where it is below it."""
    from fuzzkern.report.text import shown_path
    from fuzzkern.target import loader

    return shown_path(loader.default_corpus(sources))


def _replay_items(paths: tuple[str, ...], sources: tuple[str, ...] = ()
                  ) -> list[tuple[str, Any]]:
    """``(path, Entry or CorpusError)`` of every entry PATHS name (default: the project's
    corpus, :func:`_default_corpus`)."""
    from fuzzkern.corpus import store as corpus

    items: list[tuple[str, Any]] = []
    for path in paths or (_default_corpus(sources),):
        if os.path.isdir(path):
            items += corpus.scan(path)
        elif os.path.lexists(path) and not os.path.isdir(path):
            if not path.endswith(".json"):
                _fail_usage(f"{path}: expected an entry's .json file or a corpus folder")
            try:
                items.append((path, corpus.load(path)))
            except FuzzkernError as e:
                items.append((path, e))
        elif paths:
            _fail_usage(f"no such file or folder: {path}")
    return items


def _replay_one(path: str, entry: Any, pool: Any, loaded: list[Any], problems: list[str],
                forced: bool = False, **kwargs: Any) -> Any:
    """One entry's :class:`~fuzzkern.corpus.store.ReplayResult` against its declared target
    (the only one, under ``--ref``); an unreadable entry, an undeclared target or an error
    replaying it is a ``cannot-replay`` result with the reason, never a traceback."""
    from fuzzkern.corpus import store as corpus

    if isinstance(entry, Exception):
        reason = str(entry)
        if reason.startswith(path + ": "):
            reason = reason[len(path) + 2:]
        return corpus.ReplayResult(corpus.CANNOT_REPLAY, reason)
    target = loaded[0] if forced and len(loaded) == 1 else corpus.target_of(entry, loaded)
    if target is None:
        return corpus.ReplayResult(corpus.CANNOT_REPLAY, corpus.not_declared(entry, problems),
                                   entry=entry)
    try:
        return corpus.replay(entry, pool, target, **kwargs)
    except Exception as e:  # a bug of fuzzkern's: the rest of the corpus still replays
        return corpus.ReplayResult(corpus.CANNOT_REPLAY, f"fuzzkern error: {type(e).__name__}: "
                                   f"{e}", entry=entry)


def _replay_exit(counts: dict[str, int], total: int) -> int:
    """1 when an entry still fails; else 2 when one could not be replayed (damaged, refused,
    stale: not this machine's limits) or none could; else 0."""
    from fuzzkern.corpus import store as corpus

    if counts[corpus.STILL_FAILING]:
        return EXIT_FAILURES
    if not counts[corpus.NOW_PASSING]:
        click.echo(f"fuzzkern: error: none of the {total} corpus entries could be replayed "
                   "(see the reasons above)", err=True)
        return EXIT_USAGE
    if counts[corpus.CANNOT_REPLAY]:
        click.echo(f"fuzzkern: error: {counts[corpus.CANNOT_REPLAY]} of the {total} corpus "
                   "entries could not be replayed (see the reasons above)", err=True)
        return EXIT_USAGE
    return EXIT_OK


@main.command()
@click.argument("entry_path", metavar="ENTRY.json")
@click.option("-t", "--target", "sources", multiple=True, help=_TARGET_HELP)
@click.option("-o", "--output", default=None,
              help="Where to write the script (default: repro_<id>.py here; - for stdout).")
def repro(entry_path: str, sources: tuple[str, ...], output: str | None) -> None:
    """Write a standalone script that reproduces a corpus entry's failure.

    The script imports the entry's target from its declared source (--target, else
    [tool.fuzzkern] targets in pyproject.toml) as fuzzkern does, and takes only data from the
    entry (shapes, strides, dtypes, input bytes, configs, scalars), embedded as a JSON string.
    Run it with python; it needs torch, triton, safetensors and your own code.
    """
    from fuzzkern.corpus import repro as repro_module
    from fuzzkern.corpus import store as corpus

    _check_variables()
    try:
        entry = corpus.load(entry_path)
    except FuzzkernError as e:
        _fail_usage(str(e))
    loaded, problems = _declared(sources, (entry_path,))
    target = corpus.target_of(entry, loaded)
    if target is None:
        _fail_usage(f"{entry_path}: {corpus.not_declared(entry, problems)}")
    assert target is not None
    if output == "-":
        click.echo(repro_module.script(entry, target), nl=False)
        return
    out = output or f"repro_{entry.id}.py"
    try:
        repro_module.write(entry, target, out)
    except OSError as e:
        _fail_usage(f"-o {out}: cannot write the script: {e.strerror or e}")
    click.echo(f"wrote {out}: python {out}  (exit status 1 when the failure shows, 3 when "
               "another one does)")


@main.group("corpus")
def corpus_group() -> None:
    """Maintain a corpus folder."""


@corpus_group.command("upgrade")
@click.argument("corpus_dir", default=None, required=False)
@click.option("-t", "--target", "sources", multiple=True, help=_TARGET_HELP)
def corpus_upgrade(corpus_dir: str | None, sources: tuple[str, ...]) -> None:
    """Rewrite CORPUS_DIR's entries in the current form: entries saved under an id their
    target had before move to its current id, and code locations older fuzzkerns stored are
    dropped. Each new file is read back before the old one goes; an entry that cannot be
    upgraded stays as it is and is named. Exits 2 when one stays."""
    from fuzzkern.corpus import store as corpus

    _check_variables()
    corpus_dir = corpus_dir or _default_corpus(sources)
    if not os.path.isdir(corpus_dir):
        _fail_usage(f"no such corpus folder: {corpus_dir}")
    loaded, problems = _declared(sources, (corpus_dir,))
    for p in problems:
        click.echo(f"fuzzkern: could not load {p}", err=True)
    try:
        lines = corpus.upgrade(corpus_dir, loaded)
    except (OSError, FuzzkernError) as e:
        _fail_usage(f"{corpus_dir}: {e}")
    for line in lines:
        click.echo(line)
    left = sum(line.startswith("left") for line in lines)
    click.echo(f"fuzzkern corpus upgrade: {len(lines) - left} entr"
               f"{'y' if len(lines) - left == 1 else 'ies'} upgraded, {left} left as they are")
    sys.exit(EXIT_USAGE if left else EXIT_OK)


@main.command("init-ci")
@click.argument("targets", nargs=-1)
@click.option("--budget", default="30m", show_default=True,
              help="Wall-clock budget of each nightly job (a manual run's input overrides it).")
@click.option("--cron", default="17 3 * * *", show_default=True, help="When it runs (UTC).")
@click.option("--python", "python_version", default="3.11", show_default=True)
@click.option("--torch", "torch_version", default="2.13.0", show_default=True,
              help="The torch version to install (the CPU build in the CPU job).")
@click.option("--fuzzkern-spec", default=None,
              help="What the runner installs fuzzkern from: a version your index serves "
                   "(0.1.0), a git URL (git+https://host/you/fuzzkern@<commit>), a wheel's "
                   "URL, or a folder or wheel inside the repository (default: where this "
                   "fuzzkern was installed from, when the runner can reach it).")
@click.option("--gpu-label", default="gpu", show_default=True,
              help="The label of the self-hosted GPU runner the GPU job asks for.")
@click.option("--install", "install_command", default=None,
              help="One line that installs your project and its requirements (default: "
                   "`pip install -r requirements.txt` and `pip install -e .` as the repository "
                   "has them; '' for nothing).")
@click.option("--corpus", "corpus_dir", default="corpus", show_default=True)
@click.option("--root", default=".", show_default=True,
              help="The repository to write the workflow into.")
@click.option("--force", is_flag=True, help="Replace the files if they exist.")
def init_ci(targets: tuple[str, ...], budget: str, cron: str, python_version: str,
            torch_version: str, fuzzkern_spec: str | None, gpu_label: str,
            install_command: str | None, corpus_dir: str, root: str, force: bool) -> None:
    """Write a nightly fuzzing workflow for TARGETS (your target files, folders or modules):
    .github/workflows/fuzzkern-nightly.yml and its script .github/fuzzkern/nightly.sh.

    A CPU job runs every night; the GPU job only when a manual run's `gpu` input or the
    repository variable FUZZKERN_GPU=true turns it on. See docs/ci.md.
    """
    from fuzzkern import initci
    from fuzzkern._version import __version__
    from fuzzkern.target import loader

    try:
        spec, warnings = initci.source(fuzzkern_spec, root, __version__)
        if install_command is None:
            install_command, notes = initci.project_install(root)
            warnings += notes
        else:
            initci.check_line("--install", install_command)
        opts = initci.NightlyOptions(
            targets=targets, budget=budget, cron=cron, python=python_version,
            torch=torch_version, fuzzkern=spec, gpu_label=gpu_label, install=install_command,
            corpus=corpus_dir, warnings=warnings)
        opts.check()
        here = os.getcwd()
        os.chdir(root)
        try:
            loaded = loader.expand(list(targets))  # a mistyped target fails now, not at night
        finally:
            os.chdir(here)
        written = initci.write(opts, root, force=force)
    except FuzzkernError as e:
        _fail_usage(str(e))
    for path in written:
        click.echo(f"wrote {os.path.relpath(path, root)}")
    project = "; ".join(opts.install.splitlines()) or "nothing (imported from the checkout)"
    click.echo(f"installs fuzzkern from: {opts.fuzzkern}; the project: {project}")
    for warning in opts.warnings:
        click.echo(f"fuzzkern: warning: {warning}", err=True)
    click.echo(f"{len(loaded)} target(s): {', '.join(lt.id for lt in loaded)}. Commit both "
               "files; set the repository variable FUZZKERN_GPU=true once a self-hosted runner "
               f"labelled {gpu_label} exists (docs/ci.md).")

if __name__ == "__main__":  # pragma: no cover
    main()
