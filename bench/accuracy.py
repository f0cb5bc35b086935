"""The oracle's evidence: no false alarms on correct kernels, small bugs still found.

Runs every kernel of ``bench/accuracy/`` through the real engine (Hypothesis, forked workers,
bounds checker, oracle), with the machinery of ``bench/run.py``:

- ``ok_*.py``: correct kernels written in the style of popular libraries (Liger-Kernel,
  FlagGems, attorch, the Triton tutorials), over every value distribution and layout. Each
  uses its whole budget. Any failing verdict is a **false alarm**; an ``accuracy`` verdict (off
  by more than the bound but within a small factor of what rounding explains) is an **accuracy
  finding**, shown apart. The **tightness** of the rule is the worst ``bound_ratio`` (largest
  error over its element's bound) among the passing cases: how close the correct kernels'
  worst errors come to the line (1 = at the bound); also its median and 99th percentile, and
  how many passing cases needed the conditioning rule (oracle rules 7-8) to pass.
- ``bug_*.py``: small planted bugs that a loose rule would hide. Each stops at its first
  failure (then shrinks). Found when a failure has one of the SPEC's ``expected_verdicts``, or
  when ``accuracy`` is expected and an accuracy finding was seen: verdict, time to the first
  failure (or first accuracy finding), shrunk dims.

Per-case outcomes come from the engine's ``on_event("case", result, outcome)`` callback (the
outcome carries each mode's :class:`~fuzzkern.judge.outcome.Comparison`, with ``bound_ratio``,
``accuracy``, ``explanation`` and ``condition``); the case's dtype/layout/size class from the
result's latest record. Nothing in fuzzkern had to change for it.

Prints a table, writes ``bench/results/accuracy-<host>-<date>.json`` and a markdown section
(``bench/ACCURACY.md``; paste it into RESULTS.md / RESULTS-GPU.md).

Usage::

    python bench/accuracy.py                                   # 120 s per kernel, interpreter
    python bench/accuracy.py --budget-per-kernel 15 --kernels ok_axpy bug_layernorm_eps
    python bench/accuracy.py --modes compiled,both --jobs 8    # on the GPU machine
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import math
import multiprocessing as mp
import os
import platform
import shlex
import statistics
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNELS = os.path.join(HERE, "accuracy")


def _load_run() -> Any:
    """bench/run.py as a module (bench/ is not a package): its kernel loading, warm worker
    pool, mode sets, summaries and machine metadata."""
    spec = importlib.util.spec_from_file_location("fuzzkern_bench_run", os.path.join(HERE,
                                                                                    "run.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


run = _load_run()

#: how many accuracy findings / near misses to keep per kernel and mode
KEEP = 5


def kernel_paths(names: list[str] | None = None) -> list[str]:
    paths = sorted(glob.glob(os.path.join(KERNELS, "ok_*.py")))
    paths += sorted(glob.glob(os.path.join(KERNELS, "bug_*.py")))
    if names:
        wanted = {n.removesuffix(".py") for n in names}
        paths = [p for p in paths if run.short_name(p) in wanted]
        missing = wanted - {run.short_name(p) for p in paths}
        if missing:
            raise SystemExit(f"bench/accuracy.py: no kernel named {sorted(missing)}")
    return paths


class _Observer:
    """Per-case facts from the engine's ``on_event`` callback."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.pass_ratios: list[float] = []
        self.worst_pass: dict[str, Any] = {}
        self.conditioned = 0  # passing cases that passed only by oracle rules 7-8
        self.accuracy: list[dict[str, Any]] = []
        self.first_accuracy: float | None = None
        self.first_failure: dict[str, Any] = {}
        self.worst_accuracy_ratio = 0.0
        #: failed comparisons the float64 shadow judged / could not judge, and its seconds
        self.shadowed = 0
        self.unshadowed: dict[str, int] = {}
        self.shadow_seconds: list[float] = []

    def _shadow(self, outcome: Any, comps: list[Any]) -> None:
        for c in comps:
            facts = c.condition.get("shadow") if c.condition else None
            if facts is None:
                continue
            if "limits" in facts:
                why = facts["limits"][0].split(" at ")[0][:60]
                self.unshadowed[why] = self.unshadowed.get(why, 0) + 1
            else:
                self.shadowed += 1
        spent = (outcome.timings or {}).get("shadow") if hasattr(outcome, "timings") else None
        if spent:
            self.shadow_seconds.append(float(spent))

    def __call__(self, kind: str, result: Any, outcome: Any) -> None:
        if kind != "case" or outcome is None:
            return
        record = result.records[-1] if len(result.records) == result.cases else None
        comps = [m.comparison for m in outcome.modes.values() if m.comparison is not None]
        self._shadow(outcome, comps)
        ratio = max((c.bound_ratio or 0.0 for c in comps), default=0.0)
        if outcome.verdict == "pass":
            self.pass_ratios.append(ratio)
            if any("rule 7" in c.tolerance or "rule 8" in c.tolerance for c in comps):
                self.conditioned += 1
            if ratio >= self.worst_pass.get("bound_ratio", -1.0):
                self.worst_pass = {"bound_ratio": ratio, "case": _record(record),
                                   "ulp": max((c.max_ulp_error for c in comps), default=0.0),
                                   "tolerance": comps[0].tolerance if comps else ""}
        elif outcome.verdict == "accuracy":
            t = time.monotonic() - self.start
            if self.first_accuracy is None:
                self.first_accuracy = t
            close = [c for c in comps if c.accuracy]
            self.worst_accuracy_ratio = max(self.worst_accuracy_ratio, ratio)
            if len(self.accuracy) < KEEP:
                self.accuracy.append({
                    "seconds": round(t, 3), "case": _record(record), "message": outcome.message,
                    "condition": close[0].condition if close else {},
                    "bound_ratio": ratio})
        if outcome.failed and not self.first_failure:
            self.first_failure = {"seconds": time.monotonic() - self.start,
                                  "cases": result.cases, "verdict": outcome.verdict}

    def summary(self) -> dict[str, Any]:
        r = sorted(self.pass_ratios)
        out: dict[str, Any] = {"passing_cases": len(r), "conditioned_passes": self.conditioned}
        if r:
            out["tightness"] = {
                "max_bound_ratio": round(r[-1], 4),
                "p99_bound_ratio": round(r[min(len(r) - 1, int(0.99 * len(r)))], 4),
                "median_bound_ratio": round(statistics.median(r), 4),
                "worst_case": self.worst_pass,
            }
        out["accuracy_findings"] = self.accuracy
        out["worst_accuracy_ratio"] = round(self.worst_accuracy_ratio, 3)
        out["shadow"] = {"judged": self.shadowed, "not_judged": self.unshadowed,
                         "median_seconds": round(statistics.median(self.shadow_seconds), 4)
                         if self.shadow_seconds else None}
        if self.first_accuracy is not None:
            out["first_accuracy_s"] = round(self.first_accuracy, 3)
        return out


def _record(record: Any) -> str:
    if record is None:
        return "-"
    dtype, layout, size, _verdict, _score = record
    return f"{dtype} {layout} {size}"


def fuzz_kernel(path: str, mode: str, budget: float, seed: int, grace: float,
                oracle: str = "shadow") -> dict[str, Any]:
    """One campaign on one kernel through the real engine; never raises. ``oracle``:
    ``shadow`` (failed comparisons judged by the float64 shadow) or ``outside`` (the rules
    that judge from the reference alone, as before the shadow)."""
    from fuzzkern.search import engine

    name = run.short_name(path)
    try:
        lt, spec = run.load_kernel(path)
        pool = run._pool()
        opts = engine.CampaignOptions(
            budget=budget, modes=run.MODE_SETS[mode], seed=seed, database=None, explain=False,
            grace_min=grace, grace_fraction=0.0, debug=bool(spec.get("debug", False)),
            shadow=oracle == "shadow")
        obs = _Observer()
        r = engine.fuzz_target(lt, pool, opts, budget, obs)
        row = run.summarize_fuzz(name, mode, spec, r, obs.first_failure, budget)
        row["oracle"] = oracle
        row["tool"] = f"fuzzkern[{mode}/{oracle}]"
        row.update(obs.summary())
        for f, raw in zip(row["failures"], r.failures, strict=True):
            f["case_json"] = raw.case.to_json()
            comps = [m.comparison for m in raw.outcome.modes.values() if m.comparison]
            f["explanation"] = next((c.explanation for c in comps if c.explanation), "")
            f["condition"] = next((c.condition for c in comps if c.condition), {})
            f["bound_ratio"] = max((c.bound_ratio or 0.0 for c in comps), default=0.0)
        if spec["kind"] == "correct":
            row["accuracy_count"] = r.counts.get("accuracy", 0)
        elif not row["found"] and "accuracy" in spec.get("expected_verdicts", []) \
                and obs.first_accuracy is not None:
            row["found"] = True
            row["verdict"] = "accuracy"
            row["ttff"] = obs.first_accuracy
            row["shrunk_dims"] = None  # accuracy findings are not failures: not shrunk
        return row
    except BaseException as e:  # a harness problem: report it, keep going
        return {"kernel": name, "tool": f"fuzzkern[{mode}/{oracle}]", "mode": mode,
                "oracle": oracle, "found": False,
                "harness_error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=5)}


def run_all(paths: list[str], mode: str, args: argparse.Namespace, say: Any
            ) -> list[dict[str, Any]]:
    tasks = [(p, mode, args.budget_per_kernel, args.seed, args.shrink_grace, oracle)
             for oracle in args.oracles for p in paths]
    rows: list[dict[str, Any]] = []
    if args.jobs <= 1:
        for t in tasks:
            rows.append(fuzz_kernel(*t))
            say(progress(rows[-1]))
        return rows
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(args.jobs, mp_context=ctx,
                             initializer=run._init_job_process) as ex:
        futures = [ex.submit(fuzz_kernel, *t) for t in tasks]
        for f in futures:
            rows.append(f.result())
            say(progress(rows[-1]))
    return rows


def _tight(row: dict[str, Any]) -> str:
    t = row.get("tightness")
    return "-" if not t else f"{t['max_bound_ratio']:.3g}"


def progress(row: dict[str, Any]) -> str:
    head = f"  {row['tool']:<20} {row['kernel']:<28}"
    if row.get("harness_error"):
        return f"{head} HARNESS ERROR {row['harness_error']}"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(row.get("counts", {}).items()))
    if row.get("kind") == "correct":
        what = "FALSE ALARM" if row.get("false_alarm") else "no false alarm"
        what += f", worst passing error/bound {_tight(row)}"
    else:
        what = (f"found ({row.get('verdict')}) in {row.get('ttff', math.nan):.2f}s"
                if row.get("found") else "NOT FOUND")
    return f"{head} {what} ({counts}; {row.get('seconds', 0):.0f}s)"


# -- report -----------------------------------------------------------------------------------


def _dims(d: dict[str, int] | None) -> str:
    return "-" if not d else ",".join(f"{k}={v}" for k, v in d.items())


def table_rows(results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["kernel", "mode/oracle", "cases", "pass", "accuracy", "failing", "result",
              "tightness (max / p99 / median error/bound of passing cases)", "conditioned",
              "ttff", "shrunk dims", "shadow judged / not (median s)"]
    rows = []
    for r in results["rows"]:
        mode = f"{r['mode']}/{r.get('oracle', 'outside')}"
        if r.get("harness_error"):
            rows.append([r["kernel"], mode, "-", "-", "-", "-", "HARNESS ERROR", "-", "-",
                         "-", "-", "-"])
            continue
        counts = r.get("counts", {})
        failing = {k: v for k, v in counts.items() if k not in ("pass", "accuracy",
                                                                "precondition", "unsupported")}
        t = r.get("tightness") or {}
        tight = (f"{t['max_bound_ratio']:.3g} / {t['p99_bound_ratio']:.3g} / "
                 f"{t['median_bound_ratio']:.3g}") if t else "-"
        if r.get("kind") == "correct":
            result = "FALSE ALARM" if r.get("false_alarm") else "ok"
            ttff, dims = "-", "-"
        else:
            if r.get("found"):
                result = f"found ({r.get('verdict')})"
                nm = r.get("not_minimal") or {}
                dims = _dims(r.get("shrunk_dims")) + (" (minimal)" if r.get("shrunk_dims")
                                                      and not nm else "")
            else:
                other = r.get("other_failures") or []
                result = "MISSED" + (f" (got {','.join(other)})" if other else "")
                dims = "-"
            ttff = "-" if r.get("ttff") is None else f"{r['ttff']:.2f}s"
        sh = r.get("shadow") or {}
        shadow = "-" if not sh or r.get("oracle") == "outside" else (
            f"{sh.get('judged', 0)} / {sum((sh.get('not_judged') or {}).values())}"
            + (f" ({sh['median_seconds']:.3g})" if sh.get("median_seconds") else ""))
        rows.append([r["kernel"], mode, str(r.get("cases", 0)), str(counts.get("pass", 0)),
                     str(counts.get("accuracy", 0)),
                     ", ".join(f"{k} {v}" for k, v in sorted(failing.items())) or "0",
                     result, tight, str(r.get("conditioned_passes", 0)), ttff, dims, shadow])
    return header, rows


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    pairs = sorted({(r.get("mode"), r.get("oracle", "outside")) for r in results["rows"]},
                   key=str)
    for mode, oracle in pairs:
        rows = [r for r in results["rows"] if r.get("mode") == mode
                and r.get("oracle", "outside") == oracle]
        ok = [r for r in rows if r.get("kind") == "correct"]
        bugs = [r for r in rows if r.get("kind") == "buggy"]
        alarms = [r["kernel"] for r in ok if r.get("false_alarm")]
        acc = [f"{r['kernel']} ({r.get('accuracy_count', 0)})" for r in ok
               if r.get("accuracy_count")]
        found = [r for r in bugs if r.get("found")]
        missed = [r["kernel"] for r in bugs if not r.get("found")]
        ratios = [r["tightness"]["max_bound_ratio"] for r in ok if r.get("tightness")]
        errors = [r["kernel"] for r in rows if r.get("harness_error")]
        cases = sum(r.get("cases", 0) for r in ok)
        line = (f"{mode}/{oracle}: false alarms {len(alarms)}/{len(ok)}"
                + (f" ({', '.join(alarms)})" if alarms else "")
                + f", correct kernels with accuracy findings {len(acc)}"
                + (f" ({', '.join(acc)})" if acc else "")
                + f", {cases} cases on correct kernels"
                + (f", worst passing error/bound {max(ratios):.3g} (median over kernels "
                   f"{statistics.median(ratios):.3g})" if ratios else "")
                + f"; small bugs found {len(found)}/{len(bugs)}"
                + (f" (missed: {', '.join(missed)})" if missed else ""))
        if errors:
            line += f"; HARNESS ERRORS: {', '.join(errors)}"
        lines.append(line)
    return lines


def print_table(results: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    header, rows = table_rows(results)
    table = Table(title="oracle evidence: correct kernels (ok_*) and small planted bugs (bug_*)")
    for h in header:
        table.add_column(escape(h), overflow="fold")
    for r in rows:
        table.add_row(*[escape(c) for c in r])
    console = Console(width=220)
    console.print(table)
    for line in summary_lines(results):
        console.print(escape(line))


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    header, rows = table_rows(results)
    out = [
        "## Oracle evidence: correct kernels by others, small planted bugs",
        "",
        "Written by `bench/accuracy.py` (kernels in `bench/accuracy/`). Correct kernels (`ok_`)",
        "use their whole budget: any failing verdict is a false alarm; `accuracy` verdicts are",
        "shown apart. Tightness: the largest error/bound among passing cases (1 = at the bound).",
        "`conditioned`: passing cases that passed only by the conditioning rules (7-8).",
        "Small bugs (`bug_`) stop at their first failure and shrink.",
        "",
        f"- date: {meta['date']}; machine: {meta['machine']}",
        f"- versions: python {meta['python']}, torch {meta['torch']}, triton {meta['triton']}, "
        f"hypothesis {meta['hypothesis']}",
        f"- command: `{meta['command']}`",
        f"- budget {meta['budget_per_kernel']:g} s per kernel and mode (bugs: until the first "
        f"failure, then up to {meta['shrink_grace']:g} s of shrinking); seed {meta['seed']}; "
        f"jobs {meta['jobs']}; wall {meta.get('wall_seconds', 0):.0f} s",
        "",
    ]
    out += [f"- {line}" for line in summary_lines(results)]
    out += ["", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    notes = []
    for r in results["rows"]:
        for f in r.get("failures", []):
            if r.get("kind") == "correct" or r.get("found"):
                why = f.get("explanation") or f.get("message", "").splitlines()[0:1]
                notes.append(f"- `{r['kernel']}` [{r['mode']}] {f['verdict']}: {f['case']}; "
                             f"{why if isinstance(why, str) else ' '.join(why)}")
        if r.get("kind") == "correct":
            for a in r.get("accuracy_findings", [])[:1]:
                notes.append(f"- `{r['kernel']}` [{r['mode']}] accuracy ({a['case']}): "
                             f"{a['message']}")
    if notes:
        out += ["", "Findings (shrunk cases; first accuracy finding per correct kernel):", ""]
        out += [n.replace("\n", " ") for n in notes]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default="interpret",
                    help="comma-separated: interpret, compiled, both (the last two need CUDA)")
    ap.add_argument("--budget-per-kernel", type=float, default=120.0,
                    help="seconds per kernel and mode (correct kernels use all of it)")
    ap.add_argument("--shrink-grace", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=0,
                    help="kernels fuzzed in parallel (0: 1 without CUDA, min(8, cores // 2) "
                         "with CUDA)")
    ap.add_argument("--kernels", nargs="*", default=None, help="module names to run")
    ap.add_argument("--oracles", default="shadow,outside",
                    help="comma-separated: shadow (the float64 shadow judges failed "
                         "comparisons), outside (the reference's conditioning alone)")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/accuracy-...)")
    ap.add_argument("--results-md", default=os.path.join(HERE, "ACCURACY.md"),
                    help="markdown section path ('' to skip)")
    ap.add_argument("--note", default="")
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

    cuda = torch.cuda.is_available()
    if args.jobs <= 0:
        args.jobs = max(1, min(8, (os.cpu_count() or 2) // 2)) if cuda else 1
    args.oracles = [o.strip() for o in args.oracles.split(",") if o.strip()]
    if not args.oracles or set(args.oracles) - {"shadow", "outside"}:
        ap.error(f"--oracles: expected shadow and/or outside, got {args.oracles}")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in run.MODE_SETS]
    if bad:
        ap.error(f"unknown mode(s) {bad}")
    modes_run = [m for m in modes if m == "interpret" or cuda]
    for m in sorted(set(modes) - set(modes_run)):
        say(f"{m} mode skipped: no CUDA device")
    paths = kernel_paths(args.kernels)
    kernels = []
    for p in paths:
        _, spec = run.load_kernel(p)
        kernels.append({"kernel": run.short_name(p), "path": os.path.relpath(p, ROOT),
                        "spec": spec})
    args.correct_budget = args.budget_per_kernel  # what run.machine_meta records
    meta = run.machine_meta(args)
    meta["command"] = shlex.join(["python", "bench/accuracy.py", *sys.argv[1:]])
    meta["host"] = platform.node()
    say(f"{len(paths)} kernels ({sum(k['spec']['kind'] == 'buggy' for k in kernels)} small "
        f"bugs); modes {modes_run}; {args.budget_per_kernel:g} s each; {meta['machine']}")
    out = args.out or os.path.join(HERE, "results",
                                   f"accuracy-{meta['host']}-{meta['date'][:10]}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    rows: list[dict[str, Any]] = []

    def save(done: bool) -> dict[str, Any]:
        meta["wall_seconds"] = round(time.monotonic() - wall, 1)
        meta["complete"] = done
        results = {"meta": meta, "modes_run": modes_run, "kernels": kernels, "rows": rows}
        results["summary"] = summary_lines(results)
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=2, default=str)
        os.replace(tmp, out)
        return results

    for mode in modes_run:
        say(f"fuzzkern [{mode}]")
        rows += run_all(paths, mode, args, say)
        save(False)
    results = save(True)
    print_table(results)
    say(f"wrote {os.path.relpath(out, ROOT)}")
    if args.results_md:
        with open(args.results_md, "w") as f:
            f.write(markdown(results))
        say(f"wrote {os.path.relpath(args.results_md, ROOT)}")
    if run._POOL is not None:
        run._POOL.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
