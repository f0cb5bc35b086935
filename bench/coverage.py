"""Kernel coverage: its cost per case, and whether coverage guidance finds deep bugs sooner.

Two parts (docs/coverage.md; issue 34):

- ``overhead``: per target (the built-ins, and examples/liger with ``--liger``), the same drawn
  cases run in this process (``fuzzkern.execution.runner.run_case``, interpreter, all checks)
  with the kernels uninstrumented and coverage off, then instrumented and recorded, in
  alternating rounds; each case counted at its fastest round on each side (load from other
  processes only ever slows a round). ``overhead`` = with / without - 1 (goal: at most 20%).
- ``deep``: the planted deep bugs of ``bench/deep/`` (a heuristic branch and a rare tail, a
  loop of exactly one trip, a persistent program with no tile), each fuzzed by the real engine
  (worker pool, Hypothesis) with and without guidance (``CampaignOptions.guide``) at equal
  budgets (``--max-examples`` cases, the same seeds): found or not, cases and seconds to the
  first failure.

Usage: ``python bench/coverage.py [overhead|deep|all] [--cases 20] [--rounds 3] [--liger]
[--also PATH ...] [--only ID ...] [--settrace] [--seeds 5] [--max-examples 300]
[--kernels NAME ...] [--out F]``.
Prints tables and writes JSON (default ``bench/results/coverage-<host>-<date>.json``) with the
date and machine.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if importlib.util.find_spec("fuzzkern") is None:
    sys.path.insert(0, ROOT)


def machine() -> dict[str, Any]:
    import torch
    import triton

    return {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "triton": triton.__version__,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}


# ---------------------------------------------------------------------------------------------
# overhead


def _tracer(files: set[str], lines: set[tuple[str, int]]) -> Any:
    """What line coverage by ``sys.settrace`` would cost (the alternative not taken): a global
    tracer called on every Python call, tracing lines only in the kernels' own files."""
    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            lines.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def global_(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in files else None

    return global_


def _pass(lt: Any, cases: list[Any], on: bool | str) -> list[float]:
    from fuzzkern.execution.interpreter import coverage
    from fuzzkern.execution.interpreter.fidelity import FidelityInterpretedFunction
    from fuzzkern.execution.runner import run_case

    coverage.INSTRUMENT = on is True
    FidelityInterpretedFunction.rewritten_fn.clear()  # rewritten again, with or without probes
    options = {"modes": ["interpret"], "coverage": on is True}
    run_case(lt.target, cases[0], options)  # the rewrite itself is not timed
    trace = None
    if on == "settrace":
        files = {f.co_filename for f in _kernel_codes()}
        trace = _tracer(files, set())
    out = []
    for c in cases:
        t0 = time.perf_counter()
        if trace is not None:
            sys.settrace(trace)
        try:
            run_case(lt.target, c, options)
        finally:
            sys.settrace(None)
        out.append(time.perf_counter() - t0)
    return out


def _kernel_codes() -> list[Any]:
    """Code objects of the kernels rewritten so far in this process (user files only)."""
    from fuzzkern.execution.interpreter.coverage import _is_library
    from fuzzkern.execution.interpreter.fidelity import FidelityInterpretedFunction

    return [fn.__code__ for fn in FidelityInterpretedFunction.rewritten_fn.values()
            if hasattr(fn, "__code__") and not _is_library(fn.__code__.co_filename)]


def overhead(targets: list[Any], n: int, rounds: int, say: Any,
             settrace: bool = False) -> list[dict[str, Any]]:
    from fuzzkern.search.engine import draw_cases

    rows = []
    ways: tuple[bool | str, ...] = (False, True, "settrace") if settrace else (False, True)
    for lt in targets:
        try:
            cases = draw_cases(lt.target, n)
            best = {way: [float("inf")] * len(cases) for way in ways}
            for _ in range(rounds):
                for way in ways:
                    for i, t in enumerate(_pass(lt, cases, way)):
                        best[way][i] = min(best[way][i], t)
        except Exception as e:  # a target this interpreter cannot run: reported, not timed
            rows.append({"target": lt.id, "error": f"{type(e).__name__}: {e}"})
            say(f"{lt.id:<40} error: {type(e).__name__}: {e}")
            continue
        off, on = sum(best[False]), sum(best[True])
        row = {"target": lt.id, "cases": len(cases), "off_ms": round(1000 * off / len(cases), 3),
               "on_ms": round(1000 * on / len(cases), 3),
               "overhead_pct": round(100 * (on / off - 1), 1)}
        if settrace:
            traced = sum(best["settrace"])
            row["settrace_pct"] = round(100 * (traced / off - 1), 1)
        rows.append(row)
        say(f"{lt.id:<40} {row['off_ms']:>9.2f} {row['on_ms']:>9.2f} {row['overhead_pct']:>+8.1f}%"
            + (f" {row['settrace_pct']:>+9.1f}%" if settrace else ""))
    from fuzzkern.execution.interpreter import coverage

    coverage.INSTRUMENT = True
    return rows


# ---------------------------------------------------------------------------------------------
# deep bugs


def fuzz_once(lt: Any, pool: Any, seed: int, guide: bool, max_examples: int,
              budget: float) -> dict[str, Any]:
    from fuzzkern.search import engine

    opts = engine.CampaignOptions(budget=budget, seed=seed, database=None, explain=False,
                                  max_examples=max_examples, max_failures=1, minimize_runs=0,
                                  grace_min=5.0, grace_fraction=0.0, guide=guide)
    first: dict[str, Any] = {}
    start = time.monotonic()

    def on_event(kind: str, result: Any, outcome: Any) -> None:
        if kind == "case" and outcome is not None and outcome.failed and not first:
            first.update(seconds=round(time.monotonic() - start, 2), cases=result.cases,
                         verdict=outcome.verdict)

    r = engine.fuzz_target(lt, pool, opts, budget, on_event)
    # equal budgets: a failure past the case budget (climbing runs cases of its own) is none
    found = bool(first) and first["cases"] <= max_examples
    return {"seed": seed, "guide": guide, "found": found, **first,
            "cases_run": r.cases, "seconds_run": round(r.seconds, 2),
            "coverage": round(r.coverage.percent(), 1) if r.coverage else None}


def deep(paths: list[str], seeds: list[int], max_examples: int, budget: float,
         say: Any) -> list[dict[str, Any]]:
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.target import loader

    pool = WorkerPool()
    rows = []
    try:
        for path in paths:
            (lt,) = [t for t in loader.load(path) if t.ref.endswith("::target")]
            for guide in (False, True):
                runs = [fuzz_once(lt, pool, s, guide, max_examples, budget) for s in seeds]
                found = [r for r in runs if r["found"]]
                row = {"kernel": os.path.basename(path)[:-3], "guide": guide, "runs": runs,
                       "found": len(found), "seeds": len(seeds),
                       "median_cases": statistics.median(r["cases"] for r in found)
                       if found else None,
                       "median_seconds": statistics.median(r["seconds"] for r in found)
                       if found else None}
                rows.append(row)
                say(f"{row['kernel']:<24} {'guided' if guide else 'unguided':<9} "
                    f"{row['found']}/{row['seeds']:<5} {str(row['median_cases']):>8} "
                    f"{str(row['median_seconds']):>9}   cases to first failure per seed: "
                    + " ".join(str(r.get("cases", "-")) for r in runs))
    finally:
        pool.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", nargs="?", default="all", choices=["overhead", "deep", "all"])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--liger", action="store_true", help="also examples/liger's targets")
    ap.add_argument("--also", nargs="*", default=[], help="more target files or folders")
    ap.add_argument("--settrace", action="store_true",
                    help="also time line coverage by sys.settrace (the alternative not taken)")
    ap.add_argument("--only", nargs="*", default=None,
                    help="overhead of the targets whose id contains one of these")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--max-examples", type=int, default=300)
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds per deep campaign (the case budget should end it first)")
    ap.add_argument("--kernels", nargs="*", default=None, help="deep kernels to run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    from fuzzkern.target import loader

    out: dict[str, Any] = {"machine": machine(), "args": vars(args)}
    if args.part in ("overhead", "all"):
        print(f"{'target':<40} {'off ms':>9} {'on ms':>9} {'overhead':>9}"
              + (f" {'settrace':>10}" if args.settrace else ""))
        targets = loader.load_all([])
        if args.liger:
            targets += loader.expand([os.path.join(ROOT, "examples", "liger")])
        if args.also:
            targets += loader.expand(list(args.also))
        if args.only:
            targets = [t for t in targets if any(o in t.id for o in args.only)]
        out["overhead"] = overhead(targets, args.cases, args.rounds, print, args.settrace)
        done = [r["overhead_pct"] for r in out["overhead"] if "overhead_pct" in r]
        if done:
            out["overhead_median_pct"] = statistics.median(done)
            out["overhead_max_pct"] = max(done)
            print(f"median overhead {out['overhead_median_pct']:+.1f}%, "
                  f"max {out['overhead_max_pct']:+.1f}% (goal: at most +20%)")
    if args.part in ("deep", "all"):
        paths = sorted(glob.glob(os.path.join(HERE, "deep", "deep_*.py")))
        if args.kernels:
            paths = [p for p in paths if os.path.basename(p)[5:-3] in args.kernels
                     or os.path.basename(p)[:-3] in args.kernels]
        print(f"\n{'kernel':<24} {'search':<9} {'found':<7} {'cases':>8} {'seconds':>9}   "
              f"(medians over the seeds that found it; budget {args.max_examples} cases)")
        out["deep"] = deep(paths, list(range(1, args.seeds + 1)), args.max_examples,
                           args.budget, print)
    path = args.out or os.path.join(
        HERE, "results", f"coverage-{platform.node()}-{datetime.date.today().isoformat()}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(out, fh, indent=2)
    print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
