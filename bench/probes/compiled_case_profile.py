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


def targets(wanted: list[str]):
    """The built-in targets whose reference ends with one of ``wanted`` (all when empty)."""
    for lt in loader.load_all([]):
        if not wanted or any(lt.ref.endswith(w) for w in wanted):
            yield lt


def print_stages(title: str, by_stage: dict[str, float], n: int) -> None:
    print(f"\n=== {title}")
    print("  " + ", ".join(f"{k} {1e3 * v / n:.3f}"
                           for k, v in sorted(by_stage.items(), key=lambda kv: -kv[1])))


def profiled(run, own: int = 30, cumulative: int = 45) -> None:
    """``run()`` under cProfile, printed by own and by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    for key, lines in (("tottime", own), ("cumtime", cumulative)):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(lines)
        print(s.getvalue()[-200 * lines:])


def main() -> None:
    torch.set_num_threads(1)
    for lt in targets(sys.argv[1:]):
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
        print_stages(f"{lt.ref}: {per_case:.3f} ms per case (in-process, timed)", by_stage,
                     len(cases))
        profiled(one_pass)


if __name__ == "__main__":
    main()
