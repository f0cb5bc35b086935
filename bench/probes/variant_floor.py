"""The host work a value variant cannot skip while its verdict stays exact, per built-in target:
drawing its values (the CPU generator of :func:`fuzzkern.case.model.generate_values`, whose
bytes the corpus and every replay reproduce), the float64 reference on the CPU (and the
magnitude, the reference on ``|inputs|``, for a reduction), and the comparison (the batched
oracle's decision, :func:`fuzzkern.judge.oracle.passes`, on outputs already on the CPU). None
of it is in the bare launch + sync + copy loop that ``bench/probes/variant_ab.py`` compares a
variant with: a target whose floor passes that loop's time cannot reach 2x it with exact CPU
values and references, whatever the rest costs.

The same cases as ``variant_ab.py`` (``--cases`` drawn with the derandomized seed), variants
1..``--variants`` of each, each part timed alone (fastest of ``--repeat`` passes); the
references rounded to the first input's dtype stand in for the outputs (the built-ins' output
dtype, but row_sum's float32). Runs on the CPU (no GPU needed).
Usage: ``python bench/probes/variant_floor.py [--cases 4] [--variants 32] [--out floor.json]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import time

import torch

from fuzzkern.case import model
from fuzzkern.case.model import variant_values
from fuzzkern.execution.runner import _Run
from fuzzkern.judge import oracle
from fuzzkern.search import engine
from fuzzkern.target import loader


def _fastest(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--variants", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for lt in loader.load_all([]):
        target = lt.target
        cases = engine.draw_cases(target, args.cases)
        ks = list(range(1, args.variants + 1))
        opts = {"modes": ["compiled"]}
        runs = [[_Run(target, c.variant(k), opts) for k in ks] for c in cases]
        outs = []  # each variant's outputs: its reference at the kernel's precision
        for case_runs in runs:
            got = []
            for run in case_runs:
                dtype = next(iter(run.base.values())).dtype
                got.append(tuple(e.to(dtype) for e in run.reference() or ()))
            outs.append(got)

        def values(cases=cases, ks=ks) -> None:
            model._block_of.cache_clear()  # drawn, not remembered from the last pass
            for c in cases:
                positions = {name: i for i, name in enumerate(c.inputs)}
                for name, tc in c.tensors.items():
                    dense = tuple(1 if st == 0 else d
                                  for d, st in zip(tc.shape, tc.strides, strict=True))
                    variant_values(tc, positions[name], ks, dense)

        def references(runs=runs) -> None:
            for case_runs in runs:
                for run in case_runs:
                    run._reference_done = False
                    run.reference()

        def comparisons(cases=cases, runs=runs, outs=outs, target=target) -> None:
            for c, case_runs, got in zip(cases, runs, outs, strict=True):
                r = c.dims.get(target.reduction, 1) if target.reduction else 1
                oracle.passes([(o, run._expected, run._magnitude)
                               for o, run in zip(got, case_runs, strict=True)],
                              tolerance=target.tolerance, reduction_length=max(1, r),
                              compiled=True)

        n = len(cases) * len(ks)
        row = {"target": lt.ref.split(":")[-1]}
        for part, fn in (("values", values), ("reference", references),
                         ("compare", comparisons)):
            row[f"{part}_ms"] = round(1e3 * _fastest(fn, args.repeat) / n, 4)
        row["floor_ms"] = round(row["values_ms"] + row["reference_ms"] + row["compare_ms"], 4)
        rows.append(row)
        print(f"{row['target']:<18} values {row['values_ms']:.3f}  reference "
              f"{row['reference_ms']:.3f}  compare {row['compare_ms']:.3f}  floor "
              f"{row['floor_ms']:.3f} ms per variant", flush=True)
    out = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
           "torch": torch.__version__, "cases": args.cases, "variants": args.variants,
           "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
