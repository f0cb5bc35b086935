"""Where a batched value variant (compiled mode) spends its host time, in one process.

For each built-in target named (all by default): 4 cases drawn with a fixed seed, their
variants run in batches (:func:`fuzzkern.execution.runner.run_variants`, 64 each) once to warm
up, then timed by stage, then under cProfile, printed by own and by cumulative time. Then
the primitives a variant is made of, timed alone on the GPU (allocation, small copies, a
sync, an empty launch). Usage on a GPU machine:
``python bench/probes/variant_batch_profile.py [targets...]``.
"""

from __future__ import annotations

import sys
import time

import torch
from compiled_case_profile import print_stages, profiled, targets

from fuzzkern.execution import stages
from fuzzkern.execution.runner import run_variants
from fuzzkern.search import engine

N = 64


def _primitives() -> None:
    dev = torch.device("cuda")
    host = torch.randn(4096)
    big = torch.empty(1 << 20, dtype=torch.uint8, device=dev)

    def timed(name, fn, n=2000):
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        print(f"  {name:<44} {1e6 * (time.perf_counter() - start) / n:8.2f} us")

    print("\n=== primitives (host us per call)")
    timed("torch.empty(4096) cuda", lambda: torch.empty(4096, device=dev))
    timed("torch.full(4096) cuda", lambda: torch.full((4096,), 3, device=dev))
    timed("H2D copy 16 KiB pageable (tensor.to)", lambda: host.to(dev))
    pinned = host.pin_memory()
    timed("H2D copy 16 KiB pinned non_blocking", lambda: pinned.to(dev, non_blocking=True))
    d = host.to(dev)
    timed("D2H copy 16 KiB (.cpu())", lambda: d.cpu())
    timed("torch.cuda.synchronize idle", torch.cuda.synchronize)
    timed("D2D slice copy_", lambda: big[:16384].copy_(big[16384:32768]))
    timed("torch.cat 8 x 16 KiB", lambda: torch.cat([big[:16384]] * 8))
    import triton
    import triton.language as tl

    @triton.jit
    def k(x, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + i, tl.load(x + i, mask=i < n) + 1, mask=i < n)

    timed("triton launch (1 ptr, 1 int, constexpr)", lambda: k[(4,)](d, 4096, BLOCK=1024))
    timed("triton launch + synchronize",
          lambda: (k[(4,)](d, 4096, BLOCK=1024), torch.cuda.synchronize()))


def _judged_alone(lt, cases, opts) -> None:
    """How many variants the batch's fast path could not clear, why, and what judging them
    alone cost."""
    import collections

    from fuzzkern.execution.compiled import OnDevice

    seen: collections.Counter = collections.Counter()
    spent = [0.0]
    judge = OnDevice.judge

    def timed(self):
        start = time.perf_counter()
        mode = judge(self)
        spent[0] += time.perf_counter() - start
        outs = [o for o in (self.outputs or ()) if isinstance(o, torch.Tensor)]
        nonfinite = any(bool((~o.isfinite()).any()) for o in outs if o.is_floating_point())
        seen[(mode.status, "output non-finite" if nonfinite else "finite",
              str(lt.target.tolerance.equal_nan))] += 1
        return mode

    OnDevice.judge = timed
    try:
        ran = sum(run_variants(lt.target, c, opts, 60.0, N)["ran"] for c in cases)
    finally:
        OnDevice.judge = judge
    alone = sum(seen.values())
    print(f"\n=== {lt.ref}: {alone} of {ran} variants judged alone, "
          f"{1e3 * spent[0] / max(alone, 1):.3f} ms each: {dict(seen)}")


def _launch_parts(lt, cases, opts) -> None:
    """The launch stage of a batched variant taken apart: time inside the pieces it is made
    of (each wrapped with a timer), per variant."""
    import functools

    import triton

    from fuzzkern.execution import compiled, hygiene

    spent: dict[str, float] = {}

    def timed(name, fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            start = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return wrapper

    patches = [(compiled.OnDevice, "_launch"), (compiled.OnDevice, "launch"),
               (hygiene, "place_in_red_zone"), (triton.runtime.jit.JITFunction, "run"),
               (torch.cuda, "synchronize"), (compiled.OnDevice, "counts"),
               (hygiene.Allocations, "indices_of"), (lt.target, "launcher")]
    saved = [(obj, name, getattr(obj, name)) for obj, name in patches]
    try:
        for obj, name, fn in saved:
            label = f"{getattr(obj, '__name__', type(obj).__name__)}.{name}"
            if obj is lt.target:
                object.__setattr__(obj, name, timed("target.launcher", fn))
            else:
                setattr(obj, name, timed(label, fn))
        ran = sum(run_variants(lt.target, c, opts, 60.0, N)["ran"] for c in cases)
    finally:
        for obj, name, fn in saved:
            if obj is lt.target:
                object.__setattr__(obj, name, fn)
            else:
                setattr(obj, name, fn)
    print(f"\n=== {lt.ref}: launch pieces, us per variant ({ran} run; nested: inner time is "
          "also in its caller)")
    for name, t in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<40} {1e6 * t / max(ran, 1):8.1f}")


def main() -> None:
    torch.set_num_threads(1)
    for lt in targets(sys.argv[1:]):
        cases = engine.draw_cases(lt.target, 4)
        opts = {"modes": ["compiled"], "variants": {"batch": True}}
        for c in cases:
            run_variants(lt.target, c, opts, 60.0, N)
        _judged_alone(lt, cases, opts)
        _launch_parts(lt, cases, opts)
        timer = stages.begin()
        start = time.perf_counter()
        ran = 0
        for c in cases:
            got = run_variants(lt.target, c, opts, 60.0, N)
            ran += got["ran"] + (1 if "failed" in got else 0)
        seconds = time.perf_counter() - start
        by_stage = stages.finish(timer)
        print_stages(f"{lt.ref}: {1e3 * seconds / ran:.3f} ms per batched variant ({ran} run)",
                     by_stage, ran)
        profiled(lambda lt=lt, cases=cases, opts=opts: [
            run_variants(lt.target, c, opts, 60.0, N) for c in cases], 35, 60)
    _primitives()


if __name__ == "__main__":
    main()
