"""Campaign throughput on one GPU and on several: ``fuzzkern run -j N --modes compiled``.

Each run is the real command, in a process of its own::

    python -m fuzzkern run -j N --modes compiled --budget B --seed 0 --no-db --report R

with ``CUDA_VISIBLE_DEVICES`` set to the first N GPUs (so ``-j 1`` really has one) and a
fresh, empty Triton cache (every run pays its own compilations). Recorded per run: wall
clock, cases and cases/s over all built-in targets, per target cases/s, and which GPU each
target's cases ran on (from the report's ``devices``: the pin and the PCI bus id the worker
saw). The speed-up of run N is its total cases/s over the ``-j 1`` run's.

One run per GPU-machine call fits the 10-minute limit, so runs are recorded separately and
combined afterwards::

    python bench/scaling.py --jobs 2 --budget 5m --out bench/results/gpu-x2/scaling-j2.json
    python bench/scaling.py --jobs 1 --budget 5m --out bench/results/gpu-x2/scaling-j1.json
    python bench/scaling.py --table bench/results/gpu-x2/scaling-j*.json \
        --out bench/results/scaling-x2-<date>.json

(``--jobs 1,2`` runs both in one go where time allows.) Prints a table; writes JSON with the
date, machine and versions.
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
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _gpus() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name,pci.bus_id",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def _versions() -> dict[str, str]:
    code = ("import sys, torch, triton; print(sys.version.split()[0], torch.__version__, "
            "triton.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False).stdout.split()
    return dict(zip(("python", "torch", "triton"), out, strict=False))


def run_once(jobs: int, budget: str, gpus: list[str], extra: list[str],
             modes: str = "compiled") -> dict[str, Any]:
    """One ``fuzzkern run -j jobs`` on the first ``jobs`` GPUs, with a fresh Triton cache."""
    with tempfile.TemporaryDirectory(prefix="fuzzkern-scaling-") as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, "triton-cache"),
                   CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(jobs)),
                   PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "fuzzkern", "run", "-j", str(jobs), "--modes", modes,
               "--budget", budget, "--seed", "0", "--no-db", "--report", report, *extra]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - t0
        if not os.path.exists(report):
            raise SystemExit(f"fuzzkern run -j {jobs} wrote no report (exit {proc.returncode})"
                             f":\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        with open(report) as f:
            rep = json.load(f)
    targets = rep["targets"]
    cases = sum(t["cases"] for t in targets)
    elapsed = rep.get("elapsed_seconds") or wall
    return {
        "jobs": jobs,
        "command": "fuzzkern " + " ".join(cmd[3:]).replace(report, "report.json"),
        "cuda_visible_devices": env["CUDA_VISIBLE_DEVICES"],
        "gpus": gpus[:jobs],
        "exit_code": proc.returncode,
        "wall_seconds": round(wall, 1),
        "campaign_seconds": elapsed,
        "cases": cases,
        "cases_per_s": round(cases / elapsed, 2) if elapsed else None,
        "failures": [f for t in targets for f in t["failures"]],
        "errors": [t["error"] for t in targets if t.get("error")],
        "targets": {t["target"]: {"cases": t["cases"], "cases_per_s": t["cases_per_s"],
                                  "seconds": t["seconds"], "compiles": t["compiles"],
                                  "devices": t.get("devices", {})} for t in targets},
        "stdout_tail": proc.stdout[-2500:],
    }


def table(runs: list[dict[str, Any]], console: Console) -> dict[str, Any]:
    runs = sorted(runs, key=lambda r: r["jobs"])
    base = next((r for r in runs if r["jobs"] == 1), None)
    t = Table(title="fuzzkern run: throughput by number of processes (one GPU each)")
    for col in ("-j", "GPUs", "budget s", "cases", "cases/s", "speed-up", "busy slices",
                "cases per slice-s", "GPUs used", "failures"):
        t.add_column(col)
    summary = []
    for r in runs:
        speedup = (r["cases_per_s"] / base["cases_per_s"]) if base and base["cases_per_s"] \
            else None
        used = sorted({d for tgt in r["targets"].values() for d in tgt["devices"]})
        # slice-seconds: the time targets were being fuzzed, summed over processes; over the
        # wall clock it is how many slices ran at once on average (the concurrency reached),
        # and cases per slice-second is the per-process rate (it rises with the budget, as
        # compilations are amortized over more cases)
        slice_s = sum(tgt["seconds"] for tgt in r["targets"].values())
        busy = slice_s / r["campaign_seconds"] if r["campaign_seconds"] else 0.0
        per_slice = r["cases"] / slice_s if slice_s else 0.0
        summary.append({"jobs": r["jobs"], "cases_per_s": r["cases_per_s"],
                        "speedup_over_one_gpu": round(speedup, 2) if speedup else None,
                        "busy_slices": round(busy, 2),
                        "cases_per_slice_second": round(per_slice, 2),
                        "devices_used": used})
        t.add_row(str(r["jobs"]), r["cuda_visible_devices"], f"{r['campaign_seconds']:.0f}",
                  str(r["cases"]), f"{r['cases_per_s']:.1f}",
                  f"{speedup:.2f}x" if speedup else "-", f"{busy:.2f}", f"{per_slice:.1f}",
                  str(len(used)),
                  ", ".join(r["failures"] + r["errors"]) or "0")
    console.print(t)
    per = Table(title="per target cases/s")
    per.add_column("target")
    for r in runs:
        per.add_column(f"-j {r['jobs']}")
    for name in runs[0]["targets"]:
        per.add_row(name, *(f"{r['targets'].get(name, {}).get('cases_per_s', 0):.1f}"
                            for r in runs))
    console.print(per)
    return {"summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", default="1,2", help="comma-separated -j values to run")
    ap.add_argument("--budget", default="5m", help="budget of each run (fuzzkern syntax)")
    ap.add_argument("--modes", default="compiled",
                    help="modes of each run (interpret: try the script without a GPU)")
    ap.add_argument("--table", nargs="+", metavar="JSON",
                    help="combine earlier runs' JSON files instead of running")
    ap.add_argument("--out", help="JSON to write (default bench/results/scaling-<host>-<date>"
                    ".json)")
    ap.add_argument("--note", default="")
    ap.add_argument("extra", nargs="*", help="more arguments for fuzzkern run (after --)")
    args = ap.parse_args()
    console = Console()
    if args.table:
        runs: list[dict[str, Any]] = []
        meta: dict[str, Any] = {}
        for path in args.table:
            with open(path) as f:
                d = json.load(f)
            runs.extend(d["runs"])
            meta = meta or d["meta"]
        meta["combined_from"] = [os.path.basename(p) for p in args.table]
    else:
        gpus = _gpus()
        meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
                "host": platform.node(), "gpus": gpus, "cpus": os.cpu_count(),
                **_versions(), "budget": args.budget, "modes": args.modes,
                "note": args.note}
        runs = []
        for j in (int(x) for x in args.jobs.split(",")):
            if "compiled" in args.modes and j > max(1, len(gpus)):
                raise SystemExit(f"--jobs {j}: this machine has {len(gpus)} GPU(s)")
            console.print(f"running fuzzkern run -j {j} --budget {args.budget} ...")
            runs.append(run_once(j, args.budget, gpus, args.extra, args.modes))
    result = {"meta": meta, "runs": runs, **table(runs, console)}
    out = args.out or os.path.join(
        HERE, "results", f"scaling-{platform.node()}-{datetime.date.today()}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
