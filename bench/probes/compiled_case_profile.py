"""Where one warm compiled-mode case spends its time, in one process (no worker pool).

For each built-in target: 30 cases drawn with a fixed seed, one warm-up pass (compilations),
then a timed pass by stage (:mod:`fuzzkern.execution.stages`) and a cProfile pass, printed
by own time. Usage on a GPU machine: ``python bench/probes/compiled_case_profile.py
[targets...]``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import torch

from fuzzkern.execution import stages
from fuzzkern.execution.runner import run_case
from fuzzkern.search import engine
from fuzzkern.target import loader


def main() -> None:
    torch.set_num_threads(1)
    wanted = sys.argv[1:]
    for lt in loader.load_all([]):
        if wanted and not any(lt.ref.endswith(w) for w in wanted):
            continue
        cases = engine.draw_cases(lt.target, 30)
        opts = {"modes": ("compiled",)}

        def one_pass(timed: bool = False, lt=lt, cases=cases, opts=opts) -> dict[str, float]:
            total: dict[str, float] = {}
            for c in cases:
                timer = stages.begin() if timed else None
                run_case(lt.target, c, opts)
                if timer is not None:
                    for k, v in stages.finish(timer).items():
                        total[k] = total.get(k, 0.0) + v
            return total

        one_pass()
        start = time.perf_counter()
        by_stage = one_pass(timed=True)
        per_case = (time.perf_counter() - start) / len(cases) * 1e3
        print(f"\n=== {lt.ref}: {per_case:.3f} ms per case (in-process, timed)")
        print("  " + ", ".join(f"{k} {v / len(cases) * 1e3:.3f}"
                               for k, v in sorted(by_stage.items(), key=lambda kv: -kv[1])))
        prof = cProfile.Profile()
        prof.enable()
        one_pass()
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
        print(s.getvalue()[-6000:])
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumtime").print_stats(45)
        print(s.getvalue()[-7000:])


if __name__ == "__main__":
    main()
