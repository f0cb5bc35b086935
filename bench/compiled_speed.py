"""Compiled-mode speed on a compile-heavy suite, configurations side by side.

Each configuration is one ``fuzzkern run --modes compiled`` of the same targets, budget and
seed, with its own fresh Triton cache (``TRITON_CACHE_DIR``), no example database and no
corpus, so no run inherits another's work. ``warm`` rows reuse the cache the previous row
left behind (what a second night of the nightly job sees). Per configuration it reports:

- ``cases/s``: cases judged per second of the run (all targets);
- ``drawn/s``: cases Hypothesis drew (cases minus value variants);
- ``compiles/1000``: real Triton compilations per 1000 cases;
- ``keys/min``: new specialization keys (``fuzzkern.search.engine.specialization_key``) per
  minute: how fast new shapes, layouts and dtypes are explored;
- ``failures``: distinct failures found (verdict and location), with the targets they are in,
  and the median time from the run's start to each one's first failing case (``ttff``).

Usage::

    python bench/compiled_speed.py TARGETS... --budget 150 --configs before,variants,procs4

Configurations: ``before`` (``--amortize 0 -j 1``: every case a fresh draw, one process, as
fuzzkern ran until 2026-12-01), ``variants`` (``--amortize 1 -j 1``), ``procsN``
(``--amortize 1 -j N``: N processes share the GPU, so N compilations run at once on the host's
cores; ``procsN-aF``: with ``--amortize F``), ``warm-<config>`` (that configuration again
on the cache the previous row left).
Prints a table and writes JSON (``--out``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = {
    "before": ["--amortize", "0", "-j", "1"],
    "variants": ["--amortize", "1", "-j", "1"],
}


def config_args(name: str) -> list[str]:
    base = name.removeprefix("warm-")
    if base in CONFIGS:
        return CONFIGS[base]
    m = re.fullmatch(r"procs(\d+)(?:-a([\d.]+))?", base)
    if m:
        return ["--amortize", m.group(2) or "1", "-j", m.group(1)]
    raise SystemExit(f"unknown configuration {name!r}")


def run_one(name: str, targets: list[str], budget: float, seed: int, cache: str,
            workdir: str, modes: str = "compiled") -> dict:
    report = os.path.join(workdir, f"{name}.json")
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "fuzzkern", "run", *targets, "--modes", modes,
           "--budget", f"{budget:g}s", "--seed", str(seed), "--no-db", "--no-corpus",
           "--report", report, "-q", *config_args(name)]
    start = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=workdir)
    wall = time.time() - start
    if proc.returncode not in (0, 1) or not os.path.exists(report):
        return {"config": name, "error": f"exit {proc.returncode}: {proc.stderr[-2000:]}",
                "wall_s": round(wall, 1)}
    data = json.load(open(report))
    rows = data["targets"] if isinstance(data, dict) and "targets" in data else data
    cases = sum(r["cases"] for r in rows)
    variants = sum(r.get("value_variants", 0) for r in rows)
    compiles = sum(r.get("compiles", 0) for r in rows)
    hits = sum(r.get("cache_hits", 0) for r in rows)
    keys = sum(r.get("specialization_keys", 0) for r in rows)
    found = []
    for r in rows:
        for verdict, at in zip(r.get("failures", []), r.get("failures_found_at", []),
                               strict=False):
            found.append({"target": r["target"], "verdict": verdict,
                          "after_s": None if at is None else round(at - start, 1)})
    ttffs = [f["after_s"] for f in found if f["after_s"] is not None]
    return {
        "config": name, "args": config_args(name), "wall_s": round(wall, 1),
        "cases": cases, "variants": variants, "cases_per_s": round(cases / wall, 2),
        "drawn_per_s": round((cases - variants) / wall, 2),
        "compiles": compiles, "cache_hits": hits,
        "compiles_per_1000": round(1000 * compiles / cases, 1) if cases else None,
        "keys": keys, "keys_per_min": round(60 * keys / wall, 1),
        "failures": found, "median_ttff_s": statistics.median(ttffs) if ttffs else None,
        "per_target": [{k: r.get(k) for k in ("target", "cases", "cases_per_s", "compiles",
                                              "cache_hits", "value_variants",
                                              "specialization_keys", "failures")}
                       for r in rows],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds per configuration")
    ap.add_argument("--configs", default="before,variants")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--modes", default="compiled",
                    help="interpret: a smoke test of this script on a machine without a GPU")
    args = ap.parse_args()
    targets = []
    for t in args.targets:  # the runs start in a scratch folder: file paths made absolute
        path, sep, name = t.partition("::")
        targets.append(os.path.abspath(path) + sep + name if os.path.exists(path) else t)
    out = args.out or os.path.join(os.path.dirname(__file__), "results",
                                   f"compiled-speed-{platform.node()}.json")
    # each run's own JSON report is kept beside the summary (failure messages, per target)
    workdir = os.path.splitext(os.path.abspath(out))[0] + "-reports"
    os.makedirs(workdir, exist_ok=True)
    rows = []
    cache = None
    for name in args.configs.split(","):
        if not name.startswith("warm-") or cache is None:
            cache = tempfile.mkdtemp(prefix="fk-triton-cache-")
        row = run_one(name, targets, args.budget, args.seed, cache, workdir, args.modes)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "per_target"}), flush=True)
    head = (f"{'config':<16}{'cases':>8}{'cases/s':>9}{'drawn/s':>9}{'compiles/1000':>15}"
            f"{'keys/min':>10}{'failures':>10}{'ttff s':>8}")
    print(head)
    for r in rows:
        if "error" in r:
            print(f"{r['config']:<16} error: {r['error'][:200]}")
            continue
        ttff = "-" if r["median_ttff_s"] is None else f"{r['median_ttff_s']:.0f}"
        print(f"{r['config']:<16}{r['cases']:>8}{r['cases_per_s']:>9.2f}{r['drawn_per_s']:>9.2f}"
              f"{r['compiles_per_1000'] or 0:>15.1f}{r['keys_per_min']:>10.1f}"
              f"{len(r['failures']):>10}{ttff:>8}")
    machine = {"host": platform.node(), "python": platform.python_version(),
               "cpus": os.cpu_count()}
    try:
        import torch
        import triton

        machine.update(torch=torch.__version__, triton=triton.__version__,
                       gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except Exception:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                   "machine": machine, "budget_s": args.budget, "seed": args.seed,
                   "targets": args.targets, "rows": rows}, f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
