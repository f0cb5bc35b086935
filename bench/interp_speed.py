"""Interpreter speed on a loop-heavy kernel: programs per second of the recurrent
(state-passing) kernel of bench/speed/recurrent.py, one launch of ``B x cdiv(D, 16)`` programs
of ``T`` time steps each (one ``tl.load`` and one ``tl.store`` per step), in four ways:

- ``upstream``: Triton's own interpreter (``InterpretedFunction``, what ``TRITON_INTERPRET=1``
  runs), in this process;
- ``bare``: fuzzkern's interpreter mode without bounds or view checks;
- ``checked``: fuzzkern's interpreter mode as a case launches (bounds and view checks, kernel
  coverage);
- ``case``: a whole fuzzkern case in this process (``run_case``: inputs, the launch as
  above, hygiene checks, reference, comparison).

``fuzzkern_share`` is ``checked`` per program over ``upstream`` per program, minus 1: what
fuzzkern adds to the interpreter's own cost (negative: fuzzkern's patches make the launch
cheaper than Triton's interpreter alone; None where Triton's interpreter cannot run the kernel:
3.6 with numpy >= 2.4, triton#9171). Times are this process's CPU seconds (the 2-core machines
this runs on are shared), each the best of ``--rounds``. ``--profile`` prints cProfile's top
functions of the ``checked`` launch, fuzzkern's own ones apart.

Usage: ``python bench/interp_speed.py [--B 4 --T 64 --D 64] [--rounds 5] [--note TEXT]
[--out F] [--profile]``. Prints a table and writes JSON (date, machine, versions, figures).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "speed"))

import numpy as np  # noqa: E402
import recurrent as R  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.runtime.interpreter as _interp  # noqa: E402

from fuzzkern.case.model import Case, TensorCase  # noqa: E402
from fuzzkern.execution.interpreter.core import interpreter_mode  # noqa: E402
from fuzzkern.execution.runner import run_case  # noqa: E402


def _inputs(B: int, T: int, D: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(B, T, D, generator=g), torch.randn(B, D, generator=g),
            torch.rand(D, generator=g) * 0.9)


def _upstream(x: torch.Tensor, h0: torch.Tensor, a: torch.Tensor) -> None:
    B, T, D = x.shape
    y = torch.empty_like(x)
    ht = torch.empty((B, D))
    fn = _interp.InterpretedFunction(R.recurrent_fwd.fn)
    fn.run(x, h0, a, y, ht, T, D, T * D, D, BD=16, grid=(B, triton.cdiv(D, 16)), warmup=False)


def _fuzzkern(checks: bool) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None]:
    def launch(x: torch.Tensor, h0: torch.Tensor, a: torch.Tensor) -> None:
        with interpreter_mode(check_bounds=checks, check_views=checks):
            R.recurrent(x, h0, a)

    return launch


def _case(B: int, T: int, D: int) -> Callable[..., None]:
    case = Case({"B": B, "T": T, "D": D}, {
        "x": TensorCase.build((B, T, D), "float32"), "h0": TensorCase.build((B, D), "float32"),
        "a": TensorCase.build((D,), "float32")})

    def launch(*_: Any) -> None:
        outcome = run_case(R.recurrent_scan, case, {"modes": ["interpret"]})
        assert outcome.verdict == "pass", (outcome.verdict, outcome.message)

    return launch


def _best(fn: Callable[..., None], args: tuple[Any, ...], rounds: int) -> float:
    fn(*args)  # warm: rewritten kernels, caches
    times = []
    for _ in range(rounds):
        t = time.process_time()
        fn(*args)
        times.append(time.process_time() - t)
    return min(times)


def _profile(args: tuple[Any, ...]) -> str:
    prof = cProfile.Profile()
    prof.enable()
    _fuzzkern(True)(*args)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("tottime")
    stats.print_stats(15)
    stats.print_stats("fuzzkern", 15)
    return out.getvalue()


def _revision() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=HERE, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--B", type=int, default=4)
    parser.add_argument("--T", type=int, default=64)
    parser.add_argument("--D", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--note", default="")
    parser.add_argument("--out", help="JSON file (default bench/results/interp-speed-<host>-"
                        "<revision>.json)")
    parser.add_argument("--profile", action="store_true")
    a = parser.parse_args()
    warnings.simplefilter("ignore")
    args = _inputs(a.B, a.T, a.D)
    programs = a.B * triton.cdiv(a.D, 16)
    ways: dict[str, Callable[..., None]] = {
        "upstream": _upstream, "bare": _fuzzkern(False), "checked": _fuzzkern(True),
        "case": _case(a.B, a.T, a.D)}
    rows: dict[str, dict[str, Any]] = {}
    with np.errstate(all="ignore"):
        for name, fn in ways.items():
            try:
                seconds = _best(fn, args, a.rounds)
            except Exception as e:  # noqa: BLE001 - Triton 3.6's own interpreter, numpy >= 2.4
                rows[name] = {"failed": f"{type(e).__name__}: {e}"[:200]}
                continue
            rows[name] = {"seconds": seconds, "programs_per_s": programs / seconds,
                          "ms_per_program": 1000 * seconds / programs,
                          "us_per_step": 1e6 * seconds / (programs * a.T)}
        profile = _profile(args) if a.profile else None
    share = (rows["checked"]["seconds"] / rows["upstream"]["seconds"] - 1
             if "seconds" in rows["upstream"] else None)
    print(f"recurrent kernel: {programs} programs x {a.T} steps (B={a.B}, D={a.D})")
    print(f"{'way':10s} {'programs/s':>11s} {'ms/program':>11s} {'us/step':>9s}")
    for name, r in rows.items():
        if "failed" in r:
            print(f"{name:10s} failed: {r['failed'][:70]}")
            continue
        print(f"{name:10s} {r['programs_per_s']:11.1f} {r['ms_per_program']:11.2f} "
              f"{r['us_per_step']:9.1f}")
    if share is not None:
        print(f"fuzzkern's share (checked over upstream): {100 * share:+.1f}%")
    if profile:
        print(profile)
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
              "python": platform.python_version(), "torch": torch.__version__,
              "triton": triton.__version__, "numpy": np.__version__,
              "revision": _revision(), "note": a.note,
              "shape": {"B": a.B, "T": a.T, "D": a.D, "programs": programs},
              "rounds": a.rounds, "ways": rows, "fuzzkern_share": share}
    out = a.out or os.path.join(HERE, "results", f"interp-speed-{platform.node()}-"
                                f"{result['revision']}.json")
    with open(out, "w") as fh:
        json.dump(result, fh, indent=2)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
