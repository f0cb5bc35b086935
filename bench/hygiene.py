"""What fuzzkern's memory-safety and hygiene checks cost, on the built-in targets.

For each built-in target, one fixed set of cases (drawn by Hypothesis with a fixed seed) runs
in a warm worker under several check settings (``options["checks"]``, see
fuzzkern.target.declare.DEFAULT_CHECKS). Interpreter mode (``--mode interpret``, the default):

- ``all on``: the default (bounds, view, poison, mutation; redzone is compiled-only);
- ``-bounds``: no interpreter bounds checker (and so no view checker either);
- ``-view``: storage-granular bounds only;
- ``-poison``: ``torch.empty`` not poisoned;
- ``-mutation``: inputs not compared before/after;
- ``all off``: none of them.

Compiled mode (``--mode compiled``, on a GPU): ``all on``, ``-redzone`` (tensors in plain
allocations, no guard bands or gap sentinels to check), ``-poison``, ``-mutation``, ``all off``.

Reported per configuration: the worker-side time per case (``Outcome.seconds``: materialize,
reference, launch, checks, compare; no IPC), the fastest of ``--reps`` repetitions per case
(configurations interleaved case by case, so other load hits them alike), averaged over
cases; and the overhead of all checks (``all on`` vs ``all off``) and of each check (``all on``
vs that check off), relative to ``all off``. Every configuration must give the same
verdicts (the built-ins pass), which is checked and recorded.

Usage: ``python bench/hygiene.py [--cases 20] [--reps 3] [--targets ...] [--out F]``. Prints a
table and writes JSON (default bench/results/hygiene-<host>-<date>.json) with date and machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
from collections import Counter

from fuzzkern.execution.pool import WorkerPool
from fuzzkern.search import engine
from fuzzkern.target import loader
from fuzzkern.target.declare import DEFAULT_CHECKS

HERE = os.path.dirname(os.path.abspath(__file__))

ALL_OFF = dict.fromkeys(DEFAULT_CHECKS, False)
INTERPRET_CONFIGS: dict[str, dict[str, bool]] = {
    "all on": {},
    "-bounds": {"bounds": False},
    "-view": {"view": False},
    "-poison": {"poison": False},
    "-mutation": {"mutation": False},
    "all off": ALL_OFF,
}
COMPILED_CONFIGS: dict[str, dict[str, bool]] = {
    "all on": {},
    "-redzone": {"redzone": False},
    "-poison": {"poison": False},
    "-mutation": {"mutation": False},
    "all off": ALL_OFF,
}
MODE_CONFIGS = {"interpret": INTERPRET_CONFIGS, "compiled": COMPILED_CONFIGS}


def measure(lt, n_cases, reps, pool, mode="interpret"):
    configs = MODE_CONFIGS[mode]
    cases = [c.to_json() for c in engine.draw_cases(lt.target, n_cases)]
    options = {name: {"modes": [mode], "checks": checks}
               for name, checks in configs.items()}
    for c in cases:  # warm-up: AST rewrites, first-launch costs
        pool.run(lt.ref, c, options["all on"], 300)
    names = list(configs)
    # Interleaved: every case runs under every configuration back to back, in a rotating
    # order, so load from other processes hits all configurations alike; per (case, config)
    # the fastest of the repetitions counts.
    times: dict[str, list[list[float]]] = {n: [[] for _ in cases] for n in names}
    verdicts: dict[str, Counter[str]] = {n: Counter() for n in names}
    for rep in range(reps):
        for i, c in enumerate(cases):
            k = (rep + i) % len(names)
            for name in names[k:] + names[:k]:
                outcome = pool.run(lt.ref, c, options[name], 300)
                times[name][i].append(outcome.seconds)
                if rep == 0:
                    verdicts[name][outcome.verdict] += 1
    ms = {n: 1000 * statistics.mean(min(t) for t in times[n]) for n in names}
    off = ms["all off"]
    return {
        "target": lt.target.id,
        "cases": len(cases),
        "ms_per_case": {k: round(v, 3) for k, v in ms.items()},
        "overhead_all_pct": round(100 * (ms["all on"] / off - 1), 1),
        "cost_pct": {k[1:]: round(100 * (ms["all on"] - ms[k]) / off, 1)
                     for k in names if k.startswith("-")},
        "verdicts": {k: dict(v) for k, v in verdicts.items()},
        "same_verdicts": len({tuple(sorted(v.items())) for v in verdicts.values()}) == 1,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--targets", nargs="*", default=None)
    ap.add_argument("--mode", choices=sorted(MODE_CONFIGS), default="interpret",
                    help="interpret (CPU) or compiled (needs a CUDA GPU)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    configs = MODE_CONFIGS[args.mode]

    import torch
    import triton

    if args.mode == "compiled" and not torch.cuda.is_available():
        ap.error("--mode compiled needs a CUDA GPU")
    rows = []
    pool = WorkerPool()
    try:
        for lt in loader.load_all(args.targets or []):
            rows.append(measure(lt, args.cases, args.reps, pool, args.mode))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        pool.close()

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"cost of fuzzkern's hygiene checks ({args.mode} mode, ms per case, "
                        "worker side)")
    table.add_column("target", no_wrap=True)
    for name in configs:
        table.add_column(name, justify="right")
    table.add_column("all checks", justify="right")
    for check in (k[1:] for k in configs if k.startswith("-")):
        table.add_column(check, justify="right")
    for r in rows:
        table.add_row(r["target"], *[f"{r['ms_per_case'][n]:.2f}" for n in configs],
                      f"{r['overhead_all_pct']:+.1f}%",
                      *[f"{v:+.1f}%" for v in r["cost_pct"].values()])
    Console(width=200).print(table)
    summary = {
        "median_overhead_all_pct": statistics.median(r["overhead_all_pct"] for r in rows),
        "max_overhead_all_pct": max(r["overhead_all_pct"] for r in rows),
        "median_cost_pct": {c: statistics.median(r["cost_pct"][c] for r in rows)
                            for c in rows[0]["cost_pct"]},
        "same_verdicts_everywhere": all(r["same_verdicts"] for r in rows),
    }
    print(json.dumps(summary))
    now = datetime.datetime.now()
    meta = {
        "date": now.isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}, "
                   f"{torch.cuda.get_device_name() if args.mode == 'compiled' else 'no GPU used'})",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "modes": args.mode,
        "cases_per_target": args.cases,
        "reps": args.reps,
        "configs": configs,
    }
    out = args.out or os.path.join(
        HERE, "results", f"hygiene-{args.mode}-{platform.node()}-{now.date().isoformat()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=2)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
