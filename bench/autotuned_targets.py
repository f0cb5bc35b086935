"""Autotuned library targets under one budget: does every target get its share?

Runs ``fuzzkern run`` once over the given targets (default: examples/fla, examples/flaggems and
examples/liger, whichever are installed) with ``--report``, then, per target, reads the report
and prints:

- ``cases`` and ``cases/s``: cases judged, and per second of the target's own time;
- ``idle``: it ran no case (the run then exits 2 unless ``--allow-idle-targets``: passed
  here, so the table is always printed), ``cut``: a case its slice cut short, in words;
- ``found at run time``: autotuned kernels its cases reached that its launcher's code does not
  name (FlagGems' ``@libentry``, fla's ``autograd.Function`` wrappers), with their configs;
- ``compile s``: seconds its cases spent compiling.

Then the goals: every target >= ``--min-cases`` cases (50), and, with ``--heavy TARGET``
(a chunked-attention op with dozens of configs, run alone for ``--heavy-budget``), >= 100 cases
for it. Printed as met / not met, never asserted.

Usage (on the GPU host, from the repository root)::

    python bench/autotuned_targets.py [TARGETS...] --budget 5m --modes compiled \\
        [--heavy examples/fla/fla_targets.py::chunk_gla --heavy-budget 2m]

Writes JSON (``--out``; default ``bench/results/autotuned-targets-<host>-<date>.json``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIBRARIES = {"fla": "examples/fla", "flag_gems": "examples/flaggems",
             "liger_kernel": "examples/liger"}


def default_targets() -> list[str]:
    """The example folders whose library is installed here."""
    return [path for module, path in LIBRARIES.items()
            if importlib.util.find_spec(module) is not None
            and os.path.isdir(os.path.join(ROOT, path))]


def campaign(targets: list[str], budget: str, modes: str, extra: list[str]) -> dict:
    """One ``fuzzkern run`` over ``targets``: its report, exit status and seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [sys.executable, "-m", "fuzzkern", "run", *targets, "--budget", budget,
               "--modes", modes, "--no-db", "--no-corpus", "--seed", "0", "-q",
               "--allow-idle-targets", "--report", report, *extra]
        started = datetime.datetime.now()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        seconds = (datetime.datetime.now() - started).total_seconds()
        if not os.path.exists(report):
            raise SystemExit(f"fuzzkern run wrote no report (exit {proc.returncode}):\n"
                             + proc.stderr[-3000:])
        with open(report) as f:
            data = json.load(f)
    return {"command": cmd, "exit": proc.returncode, "seconds": round(seconds, 1),
            "report": data, "stderr": proc.stderr[-3000:]}


def rows(report: dict) -> list[dict]:
    out = []
    for t in report["targets"]:
        found = t.get("discovered_autotuners") or {}
        out.append({"target": t["target"], "cases": t["cases"], "cases_per_s": t["cases_per_s"],
                    "idle": bool(t.get("idle")), "cut": t.get("cut_short"),
                    "found_at_run_time": found, "compile_seconds": t.get("compile_seconds"),
                    "status": t["status"]})
    return out


def table(rs: list[dict]) -> str:
    head = f"{'target':44} {'cases':>6} {'cases/s':>8} {'compile s':>9}  idle  found at run time"
    lines = [head, "-" * len(head)]
    for r in rs:
        found = ", ".join(f"{k} ({n})" for k, n in sorted(r["found_at_run_time"].items()))
        lines.append(f"{r['target'][:44]:44} {r['cases']:>6} {r['cases_per_s']:>8.1f} "
                     f"{r['compile_seconds'] or 0:>9.1f}  {'yes' if r['idle'] else '-':4}  "
                     f"{found or '-'}")
        if r["cut"]:
            lines.append(f"{'':44}   cut: {r['cut']}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("targets", nargs="*")
    p.add_argument("--budget", default="5m")
    p.add_argument("--modes", default="compiled")
    p.add_argument("--min-cases", type=int, default=50)
    p.add_argument("--heavy", default=None, help="a target to run alone afterwards")
    p.add_argument("--heavy-budget", default="2m")
    p.add_argument("--heavy-cases", type=int, default=100)
    p.add_argument("--jobs", default="auto")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    targets = a.targets or default_targets()
    if not targets:
        raise SystemExit("no targets: give some, or install fla-core, flag_gems or liger-kernel")
    run = campaign(targets, a.budget, a.modes, ["-j", a.jobs])
    rs = rows(run["report"])
    print(f"{len(rs)} targets, --budget {a.budget}, --modes {a.modes}: {run['seconds']} s, "
          f"exit {run['exit']}")
    print(table(rs))
    few = [r["target"] for r in rs if r["cases"] < a.min_cases]
    goals = {"every_target_min_cases": {"min": a.min_cases, "met": not few, "short": few}}
    print(f"goal: every target >= {a.min_cases} cases: "
          + ("met" if not few else f"not met ({len(few)}: {', '.join(few)})"))
    heavy = None
    if a.heavy:
        heavy = campaign([a.heavy], a.heavy_budget, a.modes, ["-j", "1"])
        (h,) = rows(heavy["report"]) or [{"cases": 0, "target": a.heavy}]
        met = h["cases"] >= a.heavy_cases
        goals["heavy"] = {"target": h["target"], "cases": h["cases"], "min": a.heavy_cases,
                          "met": met, "budget": a.heavy_budget}
        print(f"goal: {h['target']} alone for {a.heavy_budget} >= {a.heavy_cases} cases: "
              f"{h['cases']} ({'met' if met else 'not met'})")
    host = platform.node() or "host"
    day = datetime.date.today().isoformat()
    out = a.out or os.path.join(HERE, "results", f"autotuned-targets-{host}-{day}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": day, "host": host, "targets": targets, "budget": a.budget,
                   "modes": a.modes, "rows": rs, "goals": goals, "exit": run["exit"],
                   "compile": run["report"].get("compile"),
                   "idle_targets": run["report"].get("idle_targets"),
                   "heavy": heavy and {"exit": heavy["exit"], "rows": rows(heavy["report"])}},
                  f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
