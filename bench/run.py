"""Bug finding, false alarms and throughput: fuzzkern against the usual ways of testing kernels.

On the planted kernels of ``bench/planted/`` (buggy kernels of real bug classes, and correct
kernels that must never be reported), in one run:

- **fuzzkern**, per kernel, one campaign through the real engine (Hypothesis, forked workers,
  bounds checker, oracle): found or not, time to the first failing case (from the start of the
  kernel's campaign), cases run, and the shrunk case's dims against the documented minimal
  case. Buggy kernels stop at their first failure (then shrink); correct kernels use their
  whole budget and any failure is a false alarm. Mode ``interpret`` always; mode ``compiled``
  (the compiled kernel alone, on the GPU) and mode ``both`` (interpreter and compiled kernel in
  the same cases, three-way verdicts: what ``fuzzkern run`` does on a GPU machine) when
  ``--modes`` names them and CUDA is present.
- **fixed shapes** (the seed's test_matmul style): the shapes (128, 128, 128), (1, 17, 33) and
  (127, 65, 129), cut to each kernel's dims in the order the target declares them, contiguous
  ``torch.randn`` inputs (``randint(-1000, 1000)`` for integer ones), checked with
  ``torch.allclose(atol=1e-2, rtol=1e-2)`` against the reference (on float64 copies).
- **KernelBench style**: 5 trials with fresh random contiguous inputs at one large-ish shape
  (every dim 256 unless the kernel's SPEC says otherwise), same check.

  Both baselines run in Triton's interpreter *without* fuzzkern's bounds checker
  (``interpreter_mode(check_bounds=False)``: an out-of-bounds read returns whatever memory
  holds), autotuned kernels on their first config (what the interpreter runs when nothing is
  forced), each kernel in a process of its own (forked from a preloaded server), so a
  crash is recorded as a failure the test would have shown. Meta-parameters come from the
  SPEC's ``baseline.scalars``, else the launcher's default, else the simplest value drawn.
- **throughput**: ``bench/throughput.py`` run as a subprocess; its JSON is merged.

Prints a table, writes ``bench/results/run-<host>-<date>.json`` and ``bench/RESULTS.md``
(date, machine, versions, the table, and the goals with pass/fail).

Usage::

    python bench/run.py                                  # the CPU run (about 7 min)
    python bench/run.py --budget-per-kernel 10 --correct-budget 10 --no-throughput  # quick
    python bench/run.py --modes interpret,compiled,both  # on the GPU machine, in one call
    python bench/run.py --kernels softmax_overflow ok_layernorm --no-baselines

With CUDA present, kernels run ``min(8, cores // 2)`` at a time (``--jobs``) so that the
two-mode GPU run fits in one 10-minute call; without CUDA one at a time, for clean timings.

Budgets: each buggy kernel gets ``--budget-per-kernel`` seconds (default 60) and stops at its
first failure; each correct kernel gets ``--correct-budget`` seconds (default 30), all of which
it uses; a found failure may shrink for up to ``--shrink-grace`` seconds past the budget.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import inspect
import json
import math
import multiprocessing as mp
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PLANTED = os.path.join(HERE, "planted")

# Run from a checkout where fuzzkern is not installed (the GPU machine has no package index):
# import it from the checkout, here and in every process started from here.
if importlib.util.find_spec("fuzzkern") is None:
    sys.path.insert(0, ROOT)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)

FIXED_SHAPES = ((128, 128, 128), (1, 17, 33), (127, 65, 129))
KERNELBENCH_TRIALS = 5
KERNELBENCH_DIM = 256
KERNELBENCH_SEED = 42
ATOL = RTOL = 1e-2
BASELINE_TIMEOUT = 300.0

GOAL_FOUND_SHARE = 0.95
GOAL_MEDIAN_TTFF = 5.0


# ---------------------------------------------------------------------------------------------
# The planted kernels


def kernel_paths(names: list[str] | None = None) -> list[str]:
    """Planted kernel files: ``bug_*.py`` then ``ok_*.py``, optionally only those named."""
    paths = sorted(glob.glob(os.path.join(PLANTED, "bug_*.py")))
    paths += sorted(glob.glob(os.path.join(PLANTED, "ok_*.py")))
    if names:
        wanted = {n.removesuffix(".py") for n in names}
        paths = [p for p in paths if short_name(p) in wanted
                 or short_name(p).split("_", 1)[1] in wanted]
        missing = wanted - {short_name(p) for p in paths} - {
            short_name(p).split("_", 1)[1] for p in paths}
        if missing:
            raise SystemExit(f"bench/run.py: no planted kernel named {sorted(missing)}")
    return paths


def short_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def load_kernel(path: str) -> tuple[Any, dict[str, Any]]:
    """The planted module's target (as a LoadedTarget) and its SPEC."""
    from fuzzkern.target import loader

    found = [lt for lt in loader.load(path) if lt.ref.endswith("::target")]
    if len(found) != 1:
        raise SystemExit(f"{path}: expected one module-level Target named `target`")
    lt = found[0]
    spec = lt.target.launcher.__globals__.get("SPEC")
    if not isinstance(spec, dict) or spec.get("kind") not in ("buggy", "correct"):
        raise SystemExit(f"{path}: expected a SPEC dict with kind 'buggy' or 'correct'")
    return lt, spec


def expected_families(spec: dict[str, Any]) -> set[str]:
    from fuzzkern.judge.verdict import verdict_family

    return {verdict_family(v) for v in spec.get("expected_verdicts", [])}


# ---------------------------------------------------------------------------------------------
# fuzzkern


_POOL: Any = None


def _pool() -> Any:
    """One warm worker pool per process: started (torch imported, forked) before any timing."""
    global _POOL
    if _POOL is None:
        from fuzzkern.execution.pool import WorkerPool

        _POOL = WorkerPool()
        _POOL.run("warm-up", {}, {}, 120)  # starts the forkserver and a worker; result unused
    return _POOL


#: bench mode -> fuzzkern modes: the compiled kernel alone, the interpreter alone, or both
#: together (what ``fuzzkern run`` does by default on a machine with CUDA)
MODE_SETS = {"interpret": ("interpret",), "compiled": ("compiled",),
             "both": ("interpret", "compiled")}


def fuzz_kernel(path: str, mode: str, budget: float, seed: int, grace: float) -> dict[str, Any]:
    """One fuzzkern campaign on one planted kernel; never raises."""
    from fuzzkern.search import engine

    name = short_name(path)
    try:
        lt, spec = load_kernel(path)
        pool = _pool()
        modes = MODE_SETS[mode]
        opts = engine.CampaignOptions(
            budget=budget, modes=modes, seed=seed, database=None, explain=False,
            grace_min=grace, grace_fraction=0.0, debug=bool(spec.get("debug", False)),
            max_failures=1)  # time to the planted bug: the first failure ends the run
        first: dict[str, Any] = {}
        start = time.monotonic()

        def on_event(kind: str, result: Any, outcome: Any) -> None:
            if kind == "case" and outcome is not None and outcome.failed and not first:
                first.update(seconds=time.monotonic() - start, cases=result.cases,
                             verdict=outcome.verdict)

        r = engine.fuzz_target(lt, pool, opts, budget, on_event)
        return summarize_fuzz(name, mode, spec, r, first, budget)
    except BaseException as e:  # a harness problem: report it, keep the benchmark going
        return {"kernel": name, "tool": f"fuzzkern[{mode}]", "mode": mode, "found": False,
                "harness_error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=5)}


def summarize_fuzz(name: str, mode: str, spec: dict[str, Any], r: Any, first: dict[str, Any],
                   budget: float) -> dict[str, Any]:
    from fuzzkern.judge.verdict import verdict_family

    families = expected_families(spec)
    failures = []
    for f in r.failures:
        t = f.case.tensors
        failures.append({
            "verdict": f.outcome.verdict,
            "expected": verdict_family(f.outcome.verdict) in families,
            "dims": dict(f.case.dims),
            "numel": sum(math.prod(tc.shape) for tc in t.values()),
            "configs": dict(f.case.configs),
            "case": f.case.describe(),
            "message": f.outcome.message,
            "shrunk": f.shrunk,
            "flaky": f.flaky,
        })
    out: dict[str, Any] = {
        "kernel": name, "tool": f"fuzzkern[{mode}]", "mode": mode, "kind": spec["kind"],
        "budget": budget, "cases": r.cases, "seconds": round(r.seconds, 2),
        "cases_per_s": round(r.cases / r.case_seconds, 1) if r.case_seconds else None,
        "counts": dict(r.counts), "error": r.error, "failures": failures,
        "compiles": r.compiles, "cache_hits": r.cache_hits,
        "interpreter_visible": bool(spec.get("interpreter_visible", True)),
    }
    if first:
        out["ttff"] = round(first["seconds"], 3)
        out["cases_to_first_failure"] = first["cases"]
    if spec["kind"] == "correct":
        out["false_alarm"] = bool(failures) or r.error is not None
        out["found"] = False
        return out
    # interpret: the planted bug counts as found when a failure has an expected verdict; the
    # compiled mode has its own ways to show a bug (red zones, wrong values): any failure.
    hits = [f for f in failures if f["expected"] or mode != "interpret"]
    out["found"] = bool(hits)
    out["other_failures"] = [f["verdict"] for f in failures if f not in hits]
    if hits:
        best = hits[0]
        out["verdict"] = best["verdict"]
        out["shrunk_dims"] = best["dims"]
        out["shrunk_case"] = best["case"]
        out["shrunk_numel"] = best["numel"]
        minimal = spec.get("minimal_dims") or {}
        out["minimal_dims"] = minimal
        out["not_minimal"] = {d: [best["dims"].get(d), n] for d, n in minimal.items()
                              if best["dims"].get(d) != n}
        want_configs = spec.get("minimal_configs")
        if want_configs and best["configs"] != want_configs:
            out["not_minimal"]["configs"] = [best["configs"], want_configs]
    return out


def _init_job_process() -> None:
    # a worker of the --jobs pool: quiet numpy warnings, and nothing else to set up
    import warnings

    warnings.simplefilter("ignore")


def run_fuzzkern(paths: list[str], mode: str, args: argparse.Namespace,
                 say: Any) -> list[dict[str, Any]]:
    tasks = []
    for p in paths:
        _, spec = load_kernel(p)
        budget = args.budget_per_kernel if spec["kind"] == "buggy" else args.correct_budget
        tasks.append((p, mode, budget, args.seed, args.shrink_grace))
    rows: list[dict[str, Any]] = []
    if args.jobs <= 1:
        for t in tasks:
            rows.append(fuzz_kernel(*t))
            say(_progress(rows[-1]))
        return rows
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=ctx, initializer=_init_job_process) as ex:
        futures = [ex.submit(fuzz_kernel, *t) for t in tasks]
        for f in futures:
            rows.append(f.result())
            say(_progress(rows[-1]))
    return rows


def _progress(row: dict[str, Any]) -> str:
    if row.get("harness_error"):
        return f"  {row['tool']:<20} {row['kernel']:<28} HARNESS ERROR {row['harness_error']}"
    if row.get("kind") == "correct" or "false_alarm" in row:
        what = "FALSE ALARM" if row.get("false_alarm") else "no report"
    else:
        what = (f"found in {row.get('ttff', float('nan')):.2f}s" if row.get("found")
                else "not found")
    return (f"  {row['tool']:<20} {row['kernel']:<28} {what}  ({row.get('cases', 0)} cases, "
            f"{row.get('seconds', 0):.1f}s)")


# ---------------------------------------------------------------------------------------------
# Baselines (run in a child process each)


def _baseline_context() -> Any:
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "triton", "fuzzkern.execution.interpreter.core",
                                "fuzzkern.target.loader", "hypothesis"])
    return ctx


def baseline_trials(kind: str, lt: Any, spec: dict[str, Any]) -> list[dict[str, int]]:
    """The dims of each trial of baseline ``kind`` for this kernel."""
    dims = list(lt.target.dims)
    base = spec.get("baseline") or {}
    if kind == "fixed":
        if "fixed_dims" in base:
            return [dict(d) for d in base["fixed_dims"]]
        return [dict(zip(dims, shape, strict=False)) for shape in FIXED_SHAPES]
    large = base.get("large_dims") or dict.fromkeys(dims, KERNELBENCH_DIM)
    return [dict(large) for _ in range(KERNELBENCH_TRIALS)]


def _simplest_case(target: Any) -> Any:
    from hypothesis import HealthCheck, find, settings

    return find(target.cases(), lambda c: True,
                settings=settings(database=None, max_examples=10,
                                  suppress_health_check=list(HealthCheck)))


def _baseline_scalars(target: Any, spec: dict[str, Any], simplest: Any) -> dict[str, Any]:
    given = dict((spec.get("baseline") or {}).get("scalars") or {})
    try:
        params = inspect.signature(target.launcher).parameters
    except (TypeError, ValueError):
        params = {}
    out = {}
    for name, value in simplest.scalars.items():
        if name in given:
            out[name] = given[name]
        elif name in params and params[name].default is not inspect.Parameter.empty:
            out[name] = params[name].default
        else:
            out[name] = value
    return out


def _baseline_child(conn: Any, path: str, kind: str) -> None:
    """Child process: run one baseline on one kernel, reporting each trial through ``conn``."""
    import warnings

    warnings.simplefilter("ignore")
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from fuzzkern.calls import call_with
    from fuzzkern.case.model import torch_dtype
    from fuzzkern.execution.interpreter.core import interpreter_mode

    lt, spec = load_kernel(path)
    target = lt.target
    simplest = _simplest_case(target)
    scalars = _baseline_scalars(target, spec, simplest)
    trials = baseline_trials(kind, lt, spec)
    conn.send(("begin", time.monotonic(), {"scalars": scalars, "trial_dims": trials}))
    for i, dims in enumerate(trials):
        seed = KERNELBENCH_SEED + i if kind == "kernelbench" else i
        g = torch.Generator().manual_seed(seed)
        tensors = {}
        for name, tc in simplest.tensors.items():
            strategy = target.inputs.named[name]
            shape = tuple(dims[s] if isinstance(s, str) else s for s in strategy.shape)
            dtype = torch_dtype(tc.dtype)
            if dtype.is_floating_point:
                tensors[name] = torch.randn(shape, generator=g).to(dtype)
            else:
                tensors[name] = torch.randint(-1000, 1000, shape, generator=g).to(dtype)
        conn.send(("start", i, time.monotonic()))
        ok, why = True, ""
        try:
            ref_inputs = {n: (t.double() if t.is_floating_point() and target.upcast else
                              t.clone()) for n, t in tensors.items()}
            with torch.no_grad():
                expected = call_with(target.reference, {**scalars, **ref_inputs})
            with np.errstate(all="ignore"), interpreter_mode(check_bounds=False):
                result = call_with(target.launcher, {**scalars, **tensors})
            if target.inplace_names:
                result = tuple(tensors[n] for n in target.inplace_names)
            outs = result if isinstance(result, (tuple, list)) else (result,)
            exps = expected if isinstance(expected, (tuple, list)) else (expected,)
            if len(outs) != len(exps):
                ok, why = False, f"{len(outs)} outputs, reference has {len(exps)}"
            for o, e in zip(outs, exps, strict=False):
                if tuple(o.shape) != tuple(e.shape):
                    ok, why = False, f"shape {tuple(o.shape)} != {tuple(e.shape)}"
                elif not torch.allclose(o.double(), e.double(), atol=ATOL, rtol=RTOL):
                    d = (o.double() - e.double()).abs().nan_to_num(nan=math.inf)
                    worst = float(d.max()) if d.numel() else 0.0
                    ok, why = False, f"allclose failed (max abs diff {worst:.3g})"
        except Exception as e:
            ok, why = False, f"{type(e).__name__}: {str(e)[:200]}"
        conn.send(("trial", i, time.monotonic(), ok, why))
    conn.send(("end", time.monotonic()))
    conn.close()


def run_baseline(path: str, kind: str) -> dict[str, Any]:
    """Run baseline ``kind`` on one kernel in a fresh child process; never raises."""
    name = short_name(path)
    _, spec = load_kernel(path)
    ctx = _baseline_context()
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_baseline_child, args=(child, path, kind), daemon=True)
    launched = time.monotonic()
    proc.start()
    child.close()
    row: dict[str, Any] = {"kernel": name, "tool": kind, "kind": spec["kind"], "trials": []}
    begin = None
    current = None
    deadline = launched + BASELINE_TIMEOUT
    ended = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not parent.poll(left):
                row["trials"].append({"trial": current, "ok": False, "why": "hang (timeout)"})
                break
            try:
                msg = parent.recv()
            except (EOFError, OSError):
                proc.join(5)
                code = proc.exitcode
                why = f"the test process died (exit {code})"
                row["trials"].append({"trial": current, "ok": False, "why": why,
                                      "t": time.monotonic()})
                break
            if msg[0] == "begin":
                begin = msg[1]
                row.update(msg[2])
            elif msg[0] == "start":
                current = msg[1]
            elif msg[0] == "trial":
                row["trials"].append({"trial": msg[1], "ok": msg[3], "why": msg[4], "t": msg[2]})
                current = None
            elif msg[0] == "end":
                ended = True
                break
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    bad = [t for t in row["trials"] if not t["ok"]]
    row["found"] = bool(bad) if spec["kind"] == "buggy" else False
    if spec["kind"] == "correct":
        row["false_alarm"] = bool(bad)
    if bad and begin is not None and bad[0].get("t") is not None:
        row["ttff"] = round(bad[0]["t"] - begin, 3)
        row["first_failure"] = bad[0]["why"]
        dims = row.get("trial_dims") or []
        if bad[0]["trial"] is not None and bad[0]["trial"] < len(dims):
            row["failing_dims"] = dims[bad[0]["trial"]]
    elif bad:
        row["first_failure"] = bad[0]["why"]
    row["completed"] = ended
    row["seconds"] = round(time.monotonic() - launched, 2)
    for t in row["trials"]:
        t.pop("t", None)
    return row


def run_baselines(paths: list[str], jobs: int, say: Any) -> list[dict[str, Any]]:
    tasks = [(p, kind) for p in paths for kind in ("fixed", "kernelbench")]
    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        for r in ex.map(lambda t: run_baseline(*t), tasks):
            rows.append(r)
            if r["kind"] == "correct":
                what = "FALSE ALARM" if r.get("false_alarm") else "no report"
            else:
                what = f"found in {r['ttff']:.2f}s" if r.get("ttff") is not None else (
                    "found" if r["found"] else "not found")
            say(f"  {r['tool']:<20} {r['kernel']:<28} {what}  ({r['seconds']:.1f}s)")
    return rows


# ---------------------------------------------------------------------------------------------
# Throughput (bench/throughput.py, merged)


def run_throughput(args: argparse.Namespace, modes: str, say: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "throughput.json")
        cmd = [sys.executable, os.path.join(HERE, "throughput.py"), "--cases",
               str(args.throughput_cases), "--fresh", str(args.throughput_fresh), "--modes",
               modes, "--out", out]
        say(f"  $ {' '.join(cmd[1:])}")
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0 or not os.path.exists(out):
            return {"error": (proc.stderr or proc.stdout)[-2000:], "command": cmd[1:]}
        with open(out) as f:
            data = json.load(f)
        data["seconds"] = round(time.monotonic() - start, 1)
        data["command"] = cmd[1:]
        return data


# ---------------------------------------------------------------------------------------------
# Goals, table, files


def goals(fuzz_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goals, judged on the interpreter mode; with a compiled run, also its false alarms
    and the planted bugs only a GPU can show (SPEC ``interpreter_visible: False``)."""
    rows = [r for r in fuzz_rows if r.get("mode") == "interpret"]
    # a bug the interpreter cannot show (compiled-only class) is not counted against it
    buggy = [r for r in rows if r.get("kind") == "buggy" and r.get("interpreter_visible", True)]
    correct = [r for r in rows if r.get("kind") == "correct"]
    found = [r for r in buggy if r.get("found")]
    ttffs = [r["ttff"] for r in found if r.get("ttff") is not None]
    share = len(found) / len(buggy) if buggy else 0.0
    median = statistics.median(ttffs) if ttffs else math.inf
    not_min = {r["kernel"]: r["not_minimal"] for r in found if r.get("not_minimal")}
    alarms = [r["kernel"] for r in correct if r.get("false_alarm") or r.get("harness_error")]
    missed = [r["kernel"] for r in buggy if not r.get("found")]
    out = [
        {"goal": f"planted bugs found >= {GOAL_FOUND_SHARE:.0%} (interpreter mode)",
         "value": f"{len(found)}/{len(buggy)} = {share:.0%}"
         + (f" (missed: {', '.join(missed)})" if missed else ""),
         "pass": share >= GOAL_FOUND_SHARE},
        {"goal": f"median time to first failure <= {GOAL_MEDIAN_TTFF:g} s",
         "value": f"{median:.2f} s over {len(ttffs)} found", "pass": median <= GOAL_MEDIAN_TTFF},
        {"goal": "shrunk cases minimal",
         "value": "all minimal" if not not_min else "not minimal: " + "; ".join(
             f"{k} ({', '.join(f'{d}={g} (minimal {m})' for d, (g, m) in v.items())})"
             for k, v in not_min.items()),
         "pass": not not_min},
        {"goal": "false alarms on correct kernels: 0",
         "value": f"{len(alarms)} of {len(correct)}"
         + (f" ({', '.join(alarms)})" if alarms else ""),
         "pass": not alarms},
    ]
    both = [r for r in fuzz_rows if r.get("mode") == "both"]
    if both:
        b_buggy = [r for r in both if r.get("kind") == "buggy"]
        b_found = [r for r in b_buggy if r.get("found")]
        b_share = len(b_found) / len(b_buggy) if b_buggy else 0.0
        b_alarms = [r["kernel"] for r in both if r.get("kind") == "correct"
                    and (r.get("false_alarm") or r.get("harness_error"))]
        b_missed = [r["kernel"] for r in b_buggy if not r.get("found")]
        b_correct = [r for r in both if r.get("kind") == "correct"]
        out.append({"goal": f"planted bugs found >= {GOAL_FOUND_SHARE:.0%} (interpret and "
                            "compiled together, the GPU default)",
                    "value": f"{len(b_found)}/{len(b_buggy)} = {b_share:.0%}"
                    + (f" (missed: {', '.join(b_missed)})" if b_missed else ""),
                    "pass": b_share >= GOAL_FOUND_SHARE})
        out.append({"goal": "false alarms on correct kernels, interpret and compiled: 0",
                    "value": f"{len(b_alarms)} of {len(b_correct)}"
                    + (f" ({', '.join(b_alarms)})" if b_alarms else ""),
                    "pass": not b_alarms})
    comp = [r for r in fuzz_rows if r.get("mode") == "compiled"]
    if comp:
        c_correct = [r for r in comp if r.get("kind") == "correct"]
        c_alarms = [r["kernel"] for r in c_correct
                    if r.get("false_alarm") or r.get("harness_error")]
        out.append({"goal": "false alarms on correct kernels, compiled mode: 0",
                    "value": f"{len(c_alarms)} of {len(c_correct)}"
                    + (f" ({', '.join(c_alarms)})" if c_alarms else ""),
                    "pass": not c_alarms})
        gpu_only = [r for r in comp if r.get("kind") == "buggy"
                    and not r.get("interpreter_visible", True)]
        if gpu_only:
            c_missed = [r["kernel"] for r in gpu_only if not r.get("found")]
            c_not_min = [r["kernel"] for r in gpu_only if r.get("found") and r.get("not_minimal")]
            out.append({"goal": "compiled-only planted bugs found (compiled mode), minimal",
                        "value": f"{len(gpu_only) - len(c_missed)}/{len(gpu_only)}"
                        + (f" (missed: {', '.join(c_missed)})" if c_missed else "")
                        + (f" (not minimal: {', '.join(c_not_min)})" if c_not_min else ""),
                        "pass": not c_missed and not c_not_min})
    return out


def _fmt_t(v: Any) -> str:
    return "-" if v is None else f"{v:.2f}s"


def _dims(d: dict[str, int] | None) -> str:
    return "-" if not d else ",".join(f"{k}={v}" for k, v in d.items())


def table_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    kernels = results["kernels"]
    tools = [f"fuzzkern[{m}]" for m in results["modes_run"]]
    by = {(r["kernel"], r["tool"]): r for r in results["fuzzkern"] + results["baselines"]}
    header = ["kernel", "bug class"]
    for t in tools:
        header += [f"{t}", "ttff", "shrunk dims (minimal?)"]
    if results["baselines"]:
        header += ["fixed shapes", "ttff", "KernelBench", "ttff"]
    rows = []
    for k in kernels:
        name, spec = k["kernel"], k["spec"]
        row = [name, spec.get("bug_class") or f"correct: {spec.get('what', '')}"]
        for t in tools:
            r = by.get((name, t), {})
            if not r:
                row += ["-", "-", "-"]
                continue
            if r.get("harness_error"):
                row += ["harness error", "-", "-"]
            elif spec["kind"] == "correct":
                row += ["FALSE ALARM" if r.get("false_alarm") else
                        f"ok ({r.get('cases', 0)} cases)", "-", "-"]
            elif r.get("found"):
                nm = r.get("not_minimal") or {}
                mark = "yes" if not nm else "no: " + ",".join(nm)
                row += [f"found ({r.get('verdict')})", _fmt_t(r.get("ttff")),
                        f"{_dims(r.get('shrunk_dims'))} ({mark})"]
            else:
                other = r.get("other_failures") or []
                row += ["MISSED" + (f" (got {','.join(other)})" if other else ""), "-", "-"]
        if results["baselines"]:
            for b in ("fixed", "kernelbench"):
                r = by.get((name, b), {})
                if spec["kind"] == "correct":
                    row += ["FALSE ALARM" if r.get("false_alarm") else "ok", "-"]
                else:
                    row += ["found" if r.get("found") else "missed", _fmt_t(r.get("ttff"))]
        rows.append(row)
    return header, rows


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    kinds = {k["kernel"]: k["spec"]["kind"] for k in results["kernels"]}
    buggy = [k for k, v in kinds.items() if v == "buggy"]
    correct = [k for k, v in kinds.items() if v == "correct"]
    for tool in [f"fuzzkern[{m}]" for m in results["modes_run"]] + (
            ["fixed", "kernelbench"] if results["baselines"] else []):
        rows = [r for r in results["fuzzkern"] + results["baselines"] if r["tool"] == tool]
        found = [r for r in rows if r["kernel"] in buggy and r.get("found")]
        alarms = [r for r in rows if r["kernel"] in correct and r.get("false_alarm")]
        ttffs = [r["ttff"] for r in found if r.get("ttff") is not None]
        med = f"{statistics.median(ttffs):.2f} s" if ttffs else "-"
        line = (f"{tool}: found {len(found)}/{len(buggy)} planted bugs, median time to "
                f"first failure {med}, false alarms {len(alarms)}/{len(correct)}")
        if tool == "fuzzkern[compiled]":
            cases = sum(r.get("cases", 0) for r in rows)
            compiles = sum(r.get("compiles", 0) for r in rows)
            if cases:
                line += (f"; {compiles} real compilations in {cases} cases "
                         f"({1000 * compiles / cases:.1f} per 1000)")
        lines.append(line)
    return lines


def print_table(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    header, rows = table_rows(results)
    table = Table(title="fuzzkern vs fixed shapes vs KernelBench-style trials (planted kernels)")
    for h in header:
        table.add_column(escape(h), overflow="fold")
    for r in rows:
        table.add_row(*[escape(c) for c in r])
    console = Console(width=200)
    console.print(table)
    for line in summary_lines(results):
        console.print(escape(line))
    for g in results["goals"]:
        console.print(f"[{'green' if g['pass'] else 'red'}]{'PASS' if g['pass'] else 'FAIL'}"
                      f"[/] {escape(g['goal'])}: {escape(g['value'])}")


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    header, rows = table_rows(results)
    out = [
        "# Benchmark results: bug finding, false alarms, throughput",
        "",
        "Written by `bench/run.py` (re-run it to refresh this file; see its docstring for what",
        "is measured). The planted kernels and their minimal cases are in `bench/planted/`.",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']}",
        f"- versions: python {meta['python']}, torch {meta['torch']}, triton {meta['triton']}, "
        f"hypothesis {meta['hypothesis']}, numpy {meta['numpy']}",
        f"- command: `{meta['command']}`",
        f"- budgets: buggy kernels {meta['budget_per_kernel']:g} s each (stop at the first "
        f"failure, then shrink for up to {meta['shrink_grace']:g} s), correct kernels "
        f"{meta['correct_budget']:g} s each; seed {meta['seed']}; jobs {meta['jobs']}",
        f"- wall time: {meta.get('wall_seconds', 0):.0f} s",
    ]
    if meta.get("note"):
        out.append(f"- note: {meta['note']}")
    out += ["", "## Goals", ""]
    out += ["| goal | value | status |", "| --- | --- | --- |"]
    for g in results["goals"]:
        out.append(f"| {g['goal']} | {g['value']} | {'PASS' if g['pass'] else 'FAIL'} |")
    out += ["", "## Summary", ""]
    out += [f"- {line}" for line in summary_lines(results)]
    out += ["", "## Per kernel", "", "ttff = time to first failure, from the start of the "
            "kernel's campaign (fuzzkern) or of its first trial (baselines).", ""]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + " --- |" * len(header))
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    out += ["", "## Shrunk cases (fuzzkern, interpreter mode)", ""]
    for r in results["fuzzkern"]:
        if r.get("mode") == "interpret" and r.get("found"):
            nm = r.get("not_minimal") or {}
            note = "minimal" if not nm else "not minimal in " + ", ".join(
                f"{d} (got {g}, minimal {m})" for d, (g, m) in nm.items())
            out.append(f"- `{r['kernel']}` ({r['verdict']}, {note}): {r['shrunk_case']}")
    tp = results.get("throughput") or {}
    for label, data in tp.items():
        out += ["", f"## Throughput ({label}, bench/throughput.py)", ""]
        if "error" in data:
            out.append(f"failed: `{data['error'][-500:]}`")
            continue
        cols = ["target", "campaign_cases_per_s", "worker_ms", "bare_ms", "overhead_pct",
                "fresh_process_ms", "speedup_vs_fresh_process"]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + " --- |" * len(cols))
        for r in data.get("rows", []):
            out.append("| " + " | ".join(str(r.get(c)) for c in cols) + " |")
        out.append("")
        out.append(f"summary: {json.dumps(data.get('summary', {}))}")
    return "\n".join(out) + "\n"


def machine_meta(args: argparse.Namespace) -> dict[str, Any]:
    import hypothesis
    import numpy
    import torch
    import triton

    gpu = None
    if torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(0)
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}"
                   + (f", {gpu}" if gpu else ", no GPU") + ")",
        "load_average_at_start": load,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "hypothesis": hypothesis.__version__,
        "numpy": numpy.__version__,
        "command": shlex.join(["python", "bench/run.py", *sys.argv[1:]]),
        "budget_per_kernel": args.budget_per_kernel,
        "correct_budget": args.correct_budget,
        "shrink_grace": args.shrink_grace,
        "seed": args.seed,
        "jobs": args.jobs,
        "note": args.note,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="interpret",
                    help="fuzzkern modes, comma-separated: interpret, compiled (the compiled "
                         "kernel alone), both (interpret and compiled together, the default of "
                         "fuzzkern run on a GPU machine); compiled and both run only where CUDA "
                         "is present")
    ap.add_argument("--budget-per-kernel", type=float, default=60.0,
                    help="seconds per buggy kernel (stops at the first failure)")
    ap.add_argument("--correct-budget", type=float, default=30.0,
                    help="seconds per correct kernel (all used)")
    ap.add_argument("--shrink-grace", type=float, default=30.0,
                    help="seconds a found failure may shrink past the budget")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=0,
                    help="kernels fuzzed (and baselines run) in parallel; 1 for clean timings; "
                         "0 (default): 1 without CUDA, min(8, cores // 2) with CUDA, so the "
                         "two-mode GPU run fits in 10 minutes")
    ap.add_argument("--kernels", nargs="*", default=None, help="planted module names to run")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--throughput-cases", type=int, default=20)
    ap.add_argument("--throughput-fresh", type=int, default=2)
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/run-...)")
    ap.add_argument("--results-md", default=os.path.join(HERE, "RESULTS.md"),
                    help="markdown summary path ('' to skip)")
    ap.add_argument("--note", default="", help="a note recorded with the results")
    ap.add_argument("--render", metavar="JSON", default=None,
                    help="only print the table and rewrite --results-md from a results JSON")
    args = ap.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            results = json.load(f)
        print_table(results)
        if args.results_md:
            with open(args.results_md, "w") as f:
                f.write(markdown(results))
        return 0

    import warnings

    warnings.simplefilter("ignore")
    import torch

    wall = time.monotonic()

    def say(msg: str) -> None:
        print(msg, flush=True)

    if args.jobs <= 0:
        args.jobs = max(1, min(8, (os.cpu_count() or 2) // 2)) if torch.cuda.is_available() else 1
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODE_SETS]
    if bad:
        ap.error(f"unknown mode(s) {bad}")
    modes_run = [m for m in modes if m == "interpret" or torch.cuda.is_available()]
    for m in sorted(set(modes) - set(modes_run)):
        say(f"{m} mode skipped: no CUDA device")
    paths = kernel_paths(args.kernels)
    kernels = []
    for p in paths:
        _, spec = load_kernel(p)
        kernels.append({"kernel": short_name(p), "path": os.path.relpath(p, ROOT), "spec": spec})
    meta = machine_meta(args)
    say(f"{len(paths)} planted kernels ({sum(k['spec']['kind'] == 'buggy' for k in kernels)} "
        f"buggy); modes {modes_run}; {meta['machine']}")

    day = meta["date"][:10]
    out = args.out or os.path.join(HERE, "results", f"run-{meta['host']}-{day}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fuzz_rows: list[dict[str, Any]] = []
    base_rows: list[dict[str, Any]] = []
    throughput: dict[str, Any] = {}

    def save(done: str) -> dict[str, Any]:
        """Write what is measured so far (``meta.complete`` False until the end), so a run cut
        short (the GPU machine's 10-minute call limit) keeps its finished parts."""
        meta["wall_seconds"] = round(time.monotonic() - wall, 1)
        meta["complete"] = done == "all"
        meta["finished_parts"] = done
        results = {
            "meta": meta,
            "modes_run": modes_run,
            "kernels": kernels,
            "fuzzkern": fuzz_rows,
            "baselines": base_rows,
            "throughput": throughput,
        }
        results["goals"] = goals(fuzz_rows)
        results["summary"] = summary_lines(results)
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=2, default=str)
        os.replace(tmp, out)
        return results

    for i, mode in enumerate(modes_run):
        say(f"fuzzkern [{mode}]")
        fuzz_rows += run_fuzzkern(paths, mode, args, say)
        save(f"fuzzkern {', '.join(modes_run[:i + 1])}")
    if not args.no_baselines:
        say("baselines (fixed shapes, KernelBench style) in the interpreter, unchecked")
        base_rows += run_baselines(paths, args.jobs, say)
        save(f"fuzzkern {', '.join(modes_run)}; baselines")
    if not args.no_throughput:
        say("throughput (bench/throughput.py)")
        throughput["interpret"] = run_throughput(args, "interpret", say)
        if "compiled" in modes_run or "both" in modes_run:
            throughput["compiled"] = run_throughput(args, "compiled", say)
    results = save("all")
    print_table(results)
    say(f"wrote {os.path.relpath(out, ROOT)}")
    if args.results_md:
        with open(args.results_md, "w") as f:
            f.write(markdown(results))
        say(f"wrote {os.path.relpath(args.results_md, ROOT)}")
    if _POOL is not None:
        _POOL.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
