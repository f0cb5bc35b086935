"""``fuzzkern`` command line: ``run``, ``list``, ``replay``, ``repro``.

Exit codes (DESIGN contract): 0 no failure, 1 failures found, 2 usage or configuration error.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from fuzzkern.errors import FuzzkernError

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2


def _fail_usage(message: str) -> None:
    click.echo(f"fuzzkern: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _modes(text: str) -> tuple[str, ...]:
    from fuzzkern.target import MODES

    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise click.BadParameter(
            f"expected a comma-separated list of {', '.join(MODES)}, got {text!r}"
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fuzzkern")
def main() -> None:
    """Differential testing and fuzzing for Triton kernels."""


@main.command()
@click.argument("targets", nargs=-1)
@click.option("--budget", default="60s", show_default=True,
              help="Wall-clock budget for the whole run, spread across targets: 90s, 10m, 1h.")
@click.option("--modes", "modes_text", default=None,
              help="Comma-separated execution modes: interpret, compiled. "
                   "Default: interpret, plus compiled when CUDA is present.")
@click.option("--seed", type=int, default=None, help="Seed Hypothesis for a repeatable run.")
@click.option("--db", "db_path", default=".hypothesis/examples", show_default=True,
              help="Hypothesis example database (a cache shared with the pytest plugin): a "
                   "folder, redis://host:port/n to share findings across machines, or none.")
@click.option("--no-db", is_flag=True, help="Run without the Hypothesis example database.")
@click.option("--timeout", type=float, default=None,
              help="Seconds one case may run before it counts as a hang (default: per target).")
@click.option("--max-examples", type=int, default=None,
              help="Stop each target after this many cases, even with budget left.")
@click.option("--report", "report_path", default=None, help="Write a JSON report here.")
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
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
@click.option("--corpus", "corpus_dir", default="corpus", show_default=True,
              help="Regression corpus folder: a target's entries replay before it is fuzzed, "
                   "and each failure found is saved there.")
@click.option("--no-corpus", is_flag=True, help="Neither replay nor save corpus entries.")
def run(targets: tuple[str, ...], budget: str, modes_text: str | None, seed: int | None,
        db_path: str, no_db: bool, timeout: float | None, max_examples: int | None,
        report_path: str | None, debug_kernels: bool, quiet: bool, corpus_dir: str,
        no_corpus: bool, sanitize: bool = False, repeat_compiled: int = 1,
        no_checks: tuple[str, ...] = ()) -> None:
    """Fuzz TARGETS (path.py, path.py::name, package.module[:name]) for a wall-clock budget.

    With no TARGETS, fuzzes the built-in seed kernels shipped with fuzzkern.
    """
    from fuzzkern import engine, loader, reporting
    from fuzzkern.database import open_database

    console = Console(highlight=False)
    if not console.is_terminal:  # logs and CI: don't wrap at 80 columns
        console = Console(highlight=False, width=140)
    try:
        seconds = engine.parse_budget(budget)
    except FuzzkernError as e:
        raise click.BadParameter(str(e), param_hint="--budget") from None
    modes = _modes(modes_text) if modes_text else _default_modes()
    if "compiled" in modes:
        import torch

        if not torch.cuda.is_available():
            _fail_usage("--modes compiled needs a CUDA GPU, and torch sees none here "
                        "(torch.cuda.is_available() is False); use --modes interpret")
    if timeout is not None and timeout <= 0:
        raise click.BadParameter(f"expected a positive number of seconds, got {timeout}",
                                 param_hint="--timeout")
    if repeat_compiled < 1:
        raise click.BadParameter(f"expected a number of runs >= 1, got {repeat_compiled}",
                                 param_hint="--repeat-compiled")
    if repeat_compiled > 1 and "compiled" not in modes:
        _fail_usage("--repeat-compiled compares repeated runs of the compiled kernel and needs "
                    "the compiled mode (a CUDA GPU); the interpreter runs programs one after "
                    "another and is deterministic")
    sanitizer = None
    if sanitize:
        from fuzzkern.sanitizer import probe

        try:
            sanitizer = probe()
        except FuzzkernError as e:
            _fail_usage(str(e))
        if "compiled" not in modes:
            _fail_usage("--sanitize checks the compiled mode; add it with --modes "
                        "interpret,compiled")
    try:
        loaded = loader.load_all(list(targets))
    except FuzzkernError as e:
        _fail_usage(str(e))
    try:
        database = None if no_db else open_database(db_path)
    except FuzzkernError as e:
        _fail_usage(f"--db: {e}")
    opts = engine.CampaignOptions(budget=seconds, modes=modes, database=database, seed=seed,
                                  max_examples=max_examples, timeout=timeout, debug=debug_kernels,
                                  corpus=None if no_corpus else corpus_dir,
                                  checks={name: False for name in no_checks},
                                  repeat_compiled=repeat_compiled, sanitize=sanitizer)
    if not quiet:
        console.print(f"fuzzkern: {len(loaded)} target(s), budget {budget}, "
                      f"modes {','.join(modes)}")
    if seed is not None and database is not None:
        # hypothesis.seed() runs without the example database: say so rather than surprise
        console.print(f"note: --seed {seed} runs without the example database ({db_path}): "
                      "Hypothesis neither replays nor records examples in a seeded run; the "
                      "corpus still replays and records failures")

    def on_event(kind: str, result: Any, outcome: Any) -> None:
        if kind == "done" and not quiet:
            row = reporting.result_row(result)
            console.print(
                f"  {row['status']:>5}  {result.target_id}: {row['cases']} cases "
                f"in {row['seconds']:.1f} s ({row['cases_per_s']:.1f}/s)"
                + (f" — {', '.join(row['failures'])}" if row["failures"] else "")
                + (f" — {result.error}" if result.error else "")
            )

    start = time.monotonic()
    results = engine.run_campaign(loaded, opts, on_event=on_event)
    elapsed = time.monotonic() - start

    failures = [f for r in results for f in r.failures]
    for f in failures:
        ref = next((r.ref for r in results if r.target_id == f.target_id), f.target_id)
        console.rule(f"[bold red]{f.target_id}: {f.outcome.verdict}")
        console.print(reporting.failure_text(f, ref), markup=False)
    table = Table(title=f"fuzzkern summary ({elapsed:.1f} s)")
    table.add_column("target", no_wrap=True)
    for col in ("status", "cases", "cases/s", "pass", "precond.", "unsupported", "failures"):
        table.add_column(col)
    for r in results:
        row = reporting.result_row(r)
        table.add_row(r.target_id, row["status"], str(row["cases"]), f"{row['cases_per_s']:.1f}",
                      str(row["passed"]), str(row["preconditions"]), str(row["unsupported"]),
                      ", ".join(row["failures"]) or (r.error or r.skipped or "-"))
    console.print(table)
    _print_corpus(console, results)
    errors = [r for r in results if r.error]
    for r in errors:
        console.print(f"[red]error[/red] in {r.target_id}: {r.error}", markup=True)
    if report_path:
        report = {
            "budget_seconds": seconds,
            "elapsed_seconds": round(elapsed, 2),
            "modes": list(modes),
            "targets": [reporting.result_row(r) for r in results],
            "failures": [
                {"target": f.target_id, "verdict": f.outcome.verdict,
                 "message": f.outcome.message, "case": f.case.to_json(),
                 "outcome": f.outcome.to_json(), "shrunk": f.shrunk, "flaky": f.flaky,
                 "corpus_path": f.corpus_path, "explanations": f.explanations,
                 "replayed": f.replayed}
                for f in failures
            ],
        }
        tmp = f"{report_path}.tmp{os.getpid()}"
        with open(tmp, "w") as fh:
            json.dump(report, fh, indent=2, default=str)
        os.replace(tmp, report_path)
    if errors and not failures:
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_FAILURES if failures else EXIT_OK)


@main.command("list")
@click.argument("targets", nargs=-1)
def list_targets(targets: tuple[str, ...]) -> None:
    """List the targets TARGETS define (the built-in ones with no argument)."""
    from fuzzkern import loader

    try:
        loaded = loader.load_all(list(targets))
    except FuzzkernError as e:
        _fail_usage(str(e))
    for lt in loaded:
        t = lt.target
        dims = ", ".join(sorted(t.dims)) or "-"
        click.echo(f"{t.id}\t{lt.ref}\tdims: {dims}\tmodes: {','.join(t.modes)}")


def _print_corpus(console: Console, results: list[Any]) -> None:
    """What the corpus replay before fuzzing gave, and files that could not be used."""
    replayed = sum(r.replayed for r in results)
    still = sum(len(r.corpus_failing) for r in results)
    passing = [p for r in results for p in r.corpus_passing]
    if replayed:
        console.print(f"corpus: {replayed} entr{'y' if replayed == 1 else 'ies'} replayed: "
                      f"{still} still failing, {len(passing)} now passing")
    for p in passing:
        console.print(f"  now passing: {_shown(p)} (keep it as a regression test, or delete it)",
                      markup=False)
    for r in results:
        for problem in r.corpus_problems:
            console.print(f"[yellow]corpus:[/yellow] {problem}", markup=True, highlight=False)


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--ref", default=None,
              help="Replay every entry against this target (path.py::name or module:name) "
                   "instead of the one it was saved from, e.g. a fixed copy of the kernel.")
@click.option("--modes", "modes_text", default=None,
              help="Comma-separated modes to replay in (default: each entry's own, less those "
                   "this machine cannot run).")
@click.option("--timeout", type=float, default=None,
              help="Seconds one case may run before it counts as a hang (default: per target).")
def replay(paths: tuple[str, ...], ref: str | None, modes_text: str | None,
           timeout: float | None) -> None:
    """Replay corpus entries: PATHS are entry .json files or folders (default: ./corpus).

    Says per entry whether it still fails, now passes, or cannot be replayed (and why). Exits 1
    when an entry still fails, 2 on a usage error, 0 otherwise.
    """
    from fuzzkern import corpus
    from fuzzkern.worker import WorkerPool

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=160)
    modes = _modes(modes_text) if modes_text else None
    if timeout is not None and timeout <= 0:
        raise click.BadParameter(f"expected a positive number of seconds, got {timeout}",
                                 param_hint="--timeout")
    items: list[tuple[str, Any]] = []
    for path in paths or ("corpus",):
        if os.path.isdir(path):
            items += corpus.scan(path)
        elif os.path.isfile(path):
            if not path.endswith(".json"):
                _fail_usage(f"{path}: expected an entry's .json file or a corpus folder")
            try:
                items.append((path, corpus.load(path)))
            except FuzzkernError as e:
                items.append((path, e))
        elif paths:
            _fail_usage(f"no such file or folder: {path}")
    if not items:
        click.echo(f"fuzzkern replay: no corpus entries in {', '.join(paths or ('corpus',))}")
        sys.exit(EXIT_OK)
    table = Table(title=f"fuzzkern replay ({len(items)} entries)")
    for col in ("entry", "target", "verdict", "status", "reason"):
        table.add_column(col, overflow="fold")
    still = 0
    pool = WorkerPool()
    try:
        for path, entry in items:
            if isinstance(entry, Exception):
                reason = str(entry)
                if reason.startswith(path + ": "):
                    reason = reason[len(path) + 2:]
                table.add_row(_shown(path), "?", "?", "[yellow]cannot replay[/yellow]", reason)
                continue
            r = corpus.replay(entry, pool, ref=ref, modes=modes, timeout=timeout)
            style = {"still-failing": "red", "now-passing": "green"}.get(r.status, "yellow")
            still += r.status == corpus.STILL_FAILING
            table.add_row(_shown(path), entry.target_id, entry.verdict,
                          f"[{style}]{r.status.replace('-', ' ')}[/{style}]",
                          r.reason.splitlines()[0] if r.reason else "")
    finally:
        pool.close()
    console.print(table)
    sys.exit(EXIT_FAILURES if still else EXIT_OK)


@main.command()
@click.argument("entry_path", metavar="ENTRY.json")
@click.option("-o", "--output", default=None,
              help="Where to write the script (default: repro_<id>.py here; - for stdout).")
def repro(entry_path: str, output: str | None) -> None:
    """Write a standalone script that reproduces a corpus entry's failure.

    The script needs only torch, triton, safetensors and your own code; run it with python.
    """
    from fuzzkern import corpus
    from fuzzkern import repro as repro_module

    try:
        entry = corpus.load(entry_path)
    except FuzzkernError as e:
        _fail_usage(str(e))
    if output == "-":
        click.echo(repro_module.script(entry), nl=False)
        return
    out = output or f"repro_{entry.id}.py"
    repro_module.write(entry, out)
    click.echo(f"wrote {out}: python {out}  (exit status 1 when the failure shows)")


if __name__ == "__main__":  # pragma: no cover
    main()
