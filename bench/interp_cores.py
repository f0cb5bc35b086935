"""Interpreted runs on every core: how busy a parallel campaign keeps its processes.

Runs ``fuzzkern.search.schedule.run_campaign`` in this process over TARGETS in interpret mode
with ``-j JOBS`` for ``--budget`` seconds, with the idle processes' extra slices (``fill``,
docs/scaling.md) and without them (``--compare``: ``schedule.FILL_MIN`` set past any round),
and prints per run: wall seconds, cases, slice-seconds (what the processes spent in slices,
all targets) and occupancy (slice-seconds / (jobs x wall)).

Usage (from the repository root)::

    python bench/interp_cores.py tests/unit/targets/uneven_lanes.py --budget 40 -j 2 --compare
    python bench/interp_cores.py tests/unit/targets/uneven_lanes.py --budget 40 -j 2 \
        --max-examples 60 --compare
    python bench/interp_cores.py examples/liger/liger_targets.py --budget 120 -j 2 --compare
"""

from __future__ import annotations

import argparse
import json
import math
import time


def run(targets: list[str], budget: float, jobs: int, fill: bool, seed: int,
        max_examples: int | None = None) -> dict:
    from fuzzkern.search import engine, schedule
    from fuzzkern.target import loader

    saved = schedule.FILL_MIN
    if not fill:
        schedule.FILL_MIN = math.inf
    try:
        lts = loader.load_all(targets)
        opts = engine.CampaignOptions(budget=budget, corpus=None, modes=("interpret",),
                                      seed=seed, max_examples=max_examples)
        start = time.monotonic()
        results = schedule.run_campaign(lts, opts, jobs=jobs)
        wall = time.monotonic() - start
    finally:
        schedule.FILL_MIN = saved
    busy = sum(r.seconds for r in results)
    return {"fill": fill, "jobs": jobs, "wall_s": round(wall, 1),
            "cases": sum(r.cases for r in results), "slices": sum(r.slices for r in results),
            "slice_s": round(busy, 1), "occupancy": round(busy / (jobs * wall), 3),
            "per_target": {r.target_id: [r.cases, r.slices] for r in results}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--budget", type=float, default=40.0)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--max-examples", type=int, default=None)
    ap.add_argument("--compare", action="store_true", help="also without the extra slices")
    args = ap.parse_args()
    for fill in ([False, True] if args.compare else [True]):
        print(json.dumps(run(args.targets, args.budget, args.jobs, fill, args.seed,
                             args.max_examples)),
              flush=True)


if __name__ == "__main__":
    main()
