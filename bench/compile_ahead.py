"""Compile ahead on the GPU: a compile-heavy compiled campaign with compiling ahead off and on.

Each configuration is one compiled campaign (``fuzzkern.search.schedule.run_campaign``, one
worker, no example database, no corpus) over the same targets, budget and seed, in a process of
its own with a fresh Triton cache (``TRITON_CACHE_DIR``), so no run inherits another's
compilations. Per configuration it reports (``fuzzkern.execution.pool.WorkerPool.compile_stats``):

- ``cases`` and ``cases/s``: cases judged (all targets) and per second of the run;
- ``wait s``: compile wait, seconds the cases waited while their worker compiled, and
  ``wait %``, its share of the run's wall time (the goal: at most 10%);
- ``work s``: compile work, seconds compiling in the worker and in the compile-ahead
  processes together;
- ``compiles``: the worker's compilations (in-memory misses; with ahead on, most are loads of
  what was compiled ahead: ``served``);
- ``ahead``: jobs compiled ahead, of jobs asked for (``failed``: jobs that did not compile;
  they never touch a case).

Usage (on the GPU host, from the repository root)::

    python bench/compile_ahead.py [TARGETS...] --budget 120 --ahead 0,15

TARGETS default to ``tests/gpu/ahead_targets.py::many_configs`` (a softmax autotuned over 24
configs). ``--ahead`` lists the configurations: numbers of compile processes (0: off).
Prints a table and writes JSON (``--out``; default
``bench/results/compile-ahead-<host>.json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_TARGETS = [os.path.join(ROOT, "tests", "gpu", "ahead_targets.py") + "::many_configs"]


def run_one(targets: list[str], budget: float, seed: int, processes: int, cache: str,
            modes: str) -> dict:
    """One configuration, in this process."""
    os.environ["TRITON_CACHE_DIR"] = cache
    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.search.engine import CampaignOptions
    from fuzzkern.search.schedule import run_campaign
    from fuzzkern.target import loader

    loaded = loader.expand(targets)
    pool = WorkerPool(env={"TRITON_CACHE_DIR": cache}, compile_ahead=processes)
    opts = CampaignOptions(budget=budget, modes=tuple(modes.split(",")), seed=seed,
                           corpus=None)
    start = time.monotonic()
    try:
        results = run_campaign(loaded, opts, pool=pool)
        wall = time.monotonic() - start
        stats = pool.compile_stats()
    finally:
        pool.close()
    cases = sum(r.cases for r in results)
    done = stats["ahead"] or {}
    return {
        "ahead_processes": processes, "wall_s": round(wall, 1), "cases": cases,
        "cases_per_s": round(cases / wall, 2) if wall else None,
        "compile_wait_s": stats["compile_wait"],
        "compile_wait_share": round(stats["compile_wait"] / wall, 4) if wall else None,
        "compile_work_s": stats["compile_work"], "worker_compiles": stats["compiles"],
        "served_ahead": stats["served_ahead"], "ahead": done,
        "failures": sum(len(r.failures) for r in results),
        "per_target": [{"target": r.target_id, "cases": r.cases, "compiles": r.compiles}
                       for r in results],
    }


def _child(args: argparse.Namespace, processes: int) -> dict:
    """One configuration in a process of its own, with a fresh Triton cache."""
    cache = tempfile.mkdtemp(prefix="fk-ahead-cache-")
    out = tempfile.mktemp(prefix="fk-ahead-row-", suffix=".json")
    cmd = [sys.executable, os.path.abspath(__file__), *args.targets, "--budget",
           str(args.budget), "--seed", str(args.seed), "--modes", args.modes, "--one",
           str(processes), "--cache", cache, "--row", out]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        return {"ahead_processes": processes, "wall_s": round(time.monotonic() - start, 1),
                "error": f"exit {proc.returncode}: {proc.stderr[-2000:]}"}
    with open(out) as f:
        row: dict = json.load(f)
    os.unlink(out)
    return row


def _table(rows: list[dict]) -> None:
    print(f"{'ahead':>6}{'cases':>8}{'cases/s':>9}{'wall s':>8}{'wait s':>8}{'wait %':>8}"
          f"{'work s':>8}{'compiles':>10}{'served':>8}{'ahead':>12}{'failed':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['ahead_processes']:>6} error: {r['error'][:300]}")
            continue
        a = r["ahead"] or {}
        asked = f"{a.get('compiled', 0)}/{a.get('submitted', 0)}" if a else "-"
        print(f"{r['ahead_processes']:>6}{r['cases']:>8}{r['cases_per_s'] or 0:>9.2f}"
              f"{r['wall_s']:>8.1f}{r['compile_wait_s']:>8.1f}"
              f"{100 * (r['compile_wait_share'] or 0):>7.1f}%{r['compile_work_s']:>8.1f}"
              f"{r['worker_compiles']:>10}{r['served_ahead']:>8}{asked:>12}"
              f"{a.get('failed', 0) if a else 0:>8}")


def _machine() -> dict:
    machine: dict = {"host": platform.node(), "python": platform.python_version(),
                     "cpus": os.cpu_count()}
    try:
        import torch
        import triton

        machine.update(torch=torch.__version__, triton=triton.__version__,
                       gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except Exception:
        pass
    return machine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per configuration")
    ap.add_argument("--ahead", default=None,
                    help="compile processes per configuration, comma-separated (0: off; "
                         "default: 0 and the host's cores but one)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default="compiled",
                    help="interpret: a smoke test of this script on a machine without a GPU")
    ap.add_argument("--out", default=None)
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--row", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    targets = []
    for t in args.targets or DEFAULT_TARGETS:
        path, sep, name = t.partition("::")
        targets.append(os.path.abspath(path) + sep + name if os.path.exists(path) else t)
    args.targets = targets
    if args.one is not None:  # a configuration's own process
        row = run_one(targets, args.budget, args.seed, args.one, args.cache, args.modes)
        with open(args.row, "w") as f:
            json.dump(row, f)
        return
    from fuzzkern.execution.ahead import host_size

    sizes = ([int(s) for s in args.ahead.split(",")] if args.ahead
             else [0, max(1, host_size())])
    rows = []
    for n in sizes:
        row = _child(args, n)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "per_target"}), flush=True)
    _table(rows)
    out = args.out or os.path.join(HERE, "results", f"compile-ahead-{platform.node()}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                   "machine": _machine(), "budget_s": args.budget, "seed": args.seed,
                   "targets": targets, "rows": rows}, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
