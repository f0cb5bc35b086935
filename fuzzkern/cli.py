"""``fuzzkern`` command line: ``run``, ``list``.

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
              help="Hypothesis example database folder (a cache shared with the pytest plugin).")
@click.option("--no-db", is_flag=True, help="Run without the Hypothesis example database.")
@click.option("--timeout", type=float, default=None,
              help="Seconds one case may run before it counts as a hang (default: per target).")
@click.option("--max-examples", type=int, default=None,
              help="Stop each target after this many cases, even with budget left.")
@click.option("--report", "report_path", default=None, help="Write a JSON report here.")
@click.option("--debug-kernels", is_flag=True,
              help="Launch with debug=True: device asserts and int32 overflow checks fire.")
@click.option("-q", "--quiet", is_flag=True, help="Print only failures and the summary.")
def run(targets: tuple[str, ...], budget: str, modes_text: str | None, seed: int | None,
        db_path: str, no_db: bool, timeout: float | None, max_examples: int | None,
        report_path: str | None, debug_kernels: bool, quiet: bool) -> None:
    """Fuzz TARGETS (path.py, path.py::name, package.module[:name]) for a wall-clock budget.

    With no TARGETS, fuzzes the built-in seed kernels shipped with fuzzkern.
    """
    from fuzzkern import engine, loader, reporting

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
    try:
        loaded = loader.load_all(list(targets))
    except FuzzkernError as e:
        _fail_usage(str(e))
    database = None if no_db else engine.default_database(db_path)
    opts = engine.CampaignOptions(budget=seconds, modes=modes, database=database, seed=seed,
                                  max_examples=max_examples, timeout=timeout, debug=debug_kernels)
    if not quiet:
        console.print(f"fuzzkern: {len(loaded)} target(s), budget {budget}, "
                      f"modes {','.join(modes)}")

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
                 "outcome": f.outcome.to_json(), "shrunk": f.shrunk, "flaky": f.flaky}
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


if __name__ == "__main__":  # pragma: no cover
    main()
