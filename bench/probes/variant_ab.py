"""Per value variant, two versions of fuzzkern side by side on the same GPU and the same cases:
this checkout and an older one, in alternating rounds (a GPU host's speed drifts between runs
by tens of percent, so only figures from the same run compare), with the bare launch + sync +
copy loop of each case for scale.

Usage on a GPU machine: ``python bench/probes/variant_ab.py OLD_DIR [--rounds 3]
[--variants 32] [--cases 4] [--targets vector_add,matmul] [--out ab.json]``, where OLD_DIR
holds the older package (``mkdir -p OLD && git archive REV fuzzkern | tar -x -C OLD``).
Each round runs each version in a fresh process: per target, ``--cases`` cases drawn with the
derandomized seed (the same in both versions), their variants run in batches once to warm up,
then timed; per target the fastest round counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_TIMING = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from fuzzkern.calls import call_with
from fuzzkern.case.model import materialize, rebuild_like
from fuzzkern.execution.runner import run_variants
from fuzzkern.introspect import forced_configs
from fuzzkern.search import engine
from fuzzkern.target import loader

wanted, n_cases, n_variants = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
bare = sys.argv[4] == "1"
out = {}
for lt in loader.load_all([]):
    name = lt.ref.split(":")[-1]
    if wanted != [""] and name not in wanted:
        continue
    cases = engine.draw_cases(lt.target, n_cases)
    opts = {"modes": ["compiled"], "variants": {"batch": True}}
    for c in cases:
        run_variants(lt.target, c, opts, 60.0, n_variants)
    start = time.perf_counter()
    ran = 0
    for c in cases:
        got = run_variants(lt.target, c, opts, 60.0, n_variants)
        ran += got["ran"] + (1 if "failed" in got else 0)
    row = {"variant_ms": 1e3 * (time.perf_counter() - start) / max(ran, 1), "ran": ran}
    if bare:  # a bare launch + sync + copy loop over the same cases' variants
        def one_pass():
            t = 0.0
            for c in cases:
                for k in range(1, n_variants + 1):
                    v = c.variant(k)
                    tensors = {n: materialize(tc) for n, tc in v.tensors.items()}
                    s = time.perf_counter()
                    on_gpu = {n: rebuild_like(x, "cuda") for n, x in tensors.items()}
                    with forced_configs(dict(v.configs)):
                        o = call_with(lt.target.launcher, {**v.scalars, **on_gpu})
                        torch.cuda.synchronize()
                    for x in (o if isinstance(o, (tuple, list)) else (o,)):
                        if isinstance(x, torch.Tensor):
                            x.cpu()
                    t += time.perf_counter() - s
            return t
        one_pass()
        row["bare_ms"] = 1e3 * min(one_pass() for _ in range(2)) / (len(cases) * n_variants)
    out[name] = row
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", type=int, default=32)
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--targets", default="")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sides = {"old": os.path.abspath(args.old), "new": here}
    best: dict[str, dict[str, dict[str, float]]] = {"old": {}, "new": {}}
    for r in range(args.rounds):
        for side, path in sides.items():
            env = {**os.environ, "PYTHONPATH": path}
            got = json.loads(subprocess.run(
                [sys.executable, "-c", _TIMING, args.targets, str(args.cases),
                 str(args.variants), "1" if side == "new" else "0"],
                env=env, check=True, capture_output=True, text=True, cwd=path).stdout)
            for name, row in got.items():
                mine = best[side].setdefault(name, {})
                for key, value in row.items():
                    mine[key] = min(mine.get(key, value), value)
            print(f"round {r + 1} {side}: " + ", ".join(
                f"{n} {row['variant_ms']:.3f}" for n, row in got.items()), flush=True)
    rows = []
    for name, new in best["new"].items():
        old = best["old"].get(name, {})
        rows.append({"target": name, "bare_ms": round(new.get("bare_ms", 0.0), 3),
                     "old_variant_ms": round(old.get("variant_ms", 0.0), 3),
                     "new_variant_ms": round(new["variant_ms"], 3),
                     "new_over_old": round(new["variant_ms"] / old["variant_ms"], 3)
                     if old.get("variant_ms") else None,
                     "new_over_bare": round(new["variant_ms"] / new["bare_ms"], 2)
                     if new.get("bare_ms") else None})
    cols = list(rows[0]) if rows else []
    print("\n" + " | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rounds": args.rounds, "variants": args.variants, "cases": args.cases,
                       "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
