"""Compiled throughput per library, from the JSON reports of ``fuzzkern run --report``
(``bench/gpu_suite.sh perf``): cases per target, totals, targets under 50 cases, compile wait
against the run's wall time, what compiling ahead served, and the failures found. Prints a
table and writes one JSON file (date and machine included).

    python bench/perf_table.py perf-liger.json perf-flaggems.json --out perf.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess

FLOOR = 50


def _machine() -> str:
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        gpu = ""
    return f"{platform.node()} ({os.cpu_count()} cpus{', ' + gpu if gpu else ''})"


def summarize(path: str) -> dict:
    r = json.load(open(path))
    targets = r["targets"]
    compile_ = r.get("compile") or {}
    wall = float(r.get("elapsed_seconds") or 0)
    return {
        "report": os.path.basename(path),
        "elapsed_seconds": wall,
        "budget_seconds": r.get("budget_seconds"),
        "cases": sum(t["cases"] for t in targets),
        "targets": len(targets),
        "under_floor": [t["target"] for t in targets if t["cases"] < FLOOR],
        "compile_wait_share": round(compile_.get("compile_wait", 0) / wall, 3) if wall else None,
        "compile": compile_,
        "per_target": [{"target": t["target"], "cases": t["cases"],
                        "cases_per_s": t["cases_per_s"], "status": t["status"],
                        "failures": t["failures"], "compile_seconds": t["compile_seconds"]}
                       for t in targets],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    rows = [summarize(p) for p in a.reports if os.path.exists(p)]
    for s in rows:
        print(f"== {s['report']}: {s['cases']:,} cases, {s['targets']} targets, "
              f"{s['elapsed_seconds']:.0f} s (budget {s['budget_seconds']}), compile wait "
              f"{s['compile_wait_share']} of wall, targets under {FLOOR} cases: "
              f"{len(s['under_floor'])} {s['under_floor']}")
        print(f"   compile: {s['compile']}")
        for t in s["per_target"]:
            print(f"   {t['target']:44s} {t['cases']:>8,} {t['cases_per_s']:>9.1f}/s "
                  f"{t['status']:10s} {','.join(t['failures'])}")
    missing = [p for p in a.reports if not os.path.exists(p)]
    for p in missing:
        print(f"== {p}: no report (the run failed: see its .log)")
    if a.out:
        json.dump({"date": datetime.datetime.now(datetime.UTC).isoformat(),
                   "machine": _machine(), "runs": rows, "missing": missing},
                  open(a.out, "w"), indent=1)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
