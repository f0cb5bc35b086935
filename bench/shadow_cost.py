"""What the float64 shadow oracle costs on passing cases.

The shadow (fuzzkern.execution.interpreter.shadow, docs/oracle.md) judges a failed comparison by
running
the kernel again with float64 values under their real dtypes; a case whose comparison passes
never starts it. This bench checks that claim on real cases instead of taking it from the code:
for each target, the same cases (the first ``--cases`` Hypothesis draws with its derandomized
seed) run in this process through ``run_case`` with the shadow on and off, back to back per
case (which goes first alternates), each case counted at its fastest of ``--rounds`` on each
side, in this process's CPU seconds (a shared machine's other load is not counted; torch runs
one thread). Printed per target:

- ``cases``, ``passed``: the cases, and those whose verdict was ``pass`` both ways;
- ``on ms``, ``off ms``: mean CPU ms per passing case with and without the shadow;
- ``cost``: on / off - 1 over the passing cases (the claim: no larger than the noise);
- ``A/A``: the shadow on a second time against the first, the same ratio where nothing
  differs: what the machine's noise alone gives;
- ``shadow runs``: cases where the shadow stage ran at all (``timings["shadow"]``), with its
  mean ms; on a passing case it must be 0;
- ``verdicts differ``: cases whose verdict changed with the shadow (the ones it exists for:
  failed comparisons it judged as rounding or as a bug).

Usage: ``python bench/shadow_cost.py [--modes interpret|compiled] [--cases 40] [--rounds 3]
[--targets REF ...] [--out F]``; default targets: the built-ins. Prints a table and writes JSON
(default bench/results/shadow-cost-<host>-<date>.json).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _builtin_refs() -> list[str]:
    from fuzzkern.target import loader

    return [lt.ref for lt in loader.load("fuzzkern.targets.builtin")]


def measure(ref: str, n_cases: int, rounds: int, modes: list[str]) -> dict[str, Any]:
    """One target's figures (see the module docstring)."""
    from fuzzkern.execution.runner import run_case
    from fuzzkern.search.engine import draw_cases
    from fuzzkern.target import loader

    target = loader.load_ref(ref)
    cases = draw_cases(target, n_cases)
    # "again": the shadow on a second time, an A/A control of what the machine's noise is
    sides = (True, False, "again")
    best: dict[Any, list[float]] = {k: [float("inf")] * len(cases) for k in sides}
    verdicts: dict[Any, list[str]] = {k: [""] * len(cases) for k in sides}
    shadow_seconds = [0.0] * len(cases)
    for case in cases:  # warm-up: compiles, first launches
        run_case(target, case, {"modes": modes})
    for r in range(rounds):
        for i, case in enumerate(cases):  # each case on and off back to back, in turn first
            order = sides[r % 3:] + sides[:r % 3]
            for side in (order if i % 2 == 0 else order[::-1]):
                start = time.process_time()
                outcome = run_case(target, case, {"modes": modes, "shadow": side is not False})
                spent = time.process_time() - start
                best[side][i] = min(best[side][i], spent)
                verdicts[side][i] = outcome.verdict
                if side is not False:
                    shadow_seconds[i] = max(shadow_seconds[i],
                                            float((outcome.timings or {}).get("shadow", 0.0)))
    passing = [i for i in range(len(cases))
               if verdicts[True][i] == verdicts[False][i] == "pass"]
    on = statistics.mean(best[True][i] for i in passing) if passing else None
    off = statistics.mean(best[False][i] for i in passing) if passing else None
    again = statistics.mean(best["again"][i] for i in passing) if passing else None
    ran = [s for s in shadow_seconds if s > 0]
    return {
        "target": ref, "cases": len(cases), "passed": len(passing),
        "on_ms": None if on is None else round(1000 * on, 3),
        "off_ms": None if off is None else round(1000 * off, 3),
        "cost_pct": None if not (on and off) else round(100 * (on / off - 1), 1),
        "aa_pct": None if not (on and again) else round(100 * (again / on - 1), 1),
        "shadow_runs": len(ran),
        "shadow_runs_on_passing": sum(1 for i in passing if shadow_seconds[i] > 0),
        "shadow_ms_mean": round(1000 * statistics.mean(ran), 3) if ran else 0.0,
        "verdicts_differ": sum(1 for i in range(len(cases))
                               if verdicts[True][i] != verdicts[False][i]),
    }


def _revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="interpret")
    ap.add_argument("--targets", nargs="*", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import numpy as np
    import torch
    import triton

    torch.set_num_threads(1)
    modes = args.modes.split(",")
    refs = args.targets or _builtin_refs()
    rows = []
    header = (f"{'target':40} {'cases':>5} {'passed':>6} {'on ms':>8} {'off ms':>8} "
              f"{'cost':>7} {'A/A':>7} {'shadow runs':>11} {'on passing':>10} {'differ':>6}")
    print(header)
    with np.errstate(all="ignore"):
        for ref in refs:
            row = measure(ref, args.cases, args.rounds, modes)
            rows.append(row)
            cost = "-" if row["cost_pct"] is None else f"{row['cost_pct']:+.1f}%"
            aa = "-" if row["aa_pct"] is None else f"{row['aa_pct']:+.1f}%"
            print(f"{ref[-40:]:40} {row['cases']:>5} {row['passed']:>6} "
                  f"{row['on_ms'] or '-':>8} {row['off_ms'] or '-':>8} {cost:>7} {aa:>7} "
                  f"{row['shadow_runs']:>11} {row['shadow_runs_on_passing']:>10} "
                  f"{row['verdicts_differ']:>6}", flush=True)
    date = datetime.date.today().isoformat()
    out = args.out or os.path.join(HERE, "results",
                                   f"shadow-cost-{platform.node() or 'host'}-{date}.json")
    doc = {
        "bench": "shadow_cost", "date": datetime.datetime.now(datetime.UTC).isoformat(
            timespec="seconds"),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "torch": torch.__version__,
                    "triton": triton.__version__},
        "revision": _revision(), "modes": modes, "cases": args.cases, "rounds": args.rounds,
        "targets": rows,
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
