"""Human-readable reports: a failure is a diagnosis, not a boolean (STYLE.md)."""

from __future__ import annotations

import shlex
from typing import Any

from fuzzkern.engine import Failure, TargetResult
from fuzzkern.outcome import ModeResult, Verdict


def _mode_lines(m: ModeResult) -> list[str]:
    lines = [f"[{m.mode}] {m.status}" + (f" ({m.seconds:.3f} s)" if m.seconds else "")]
    if m.comparison is not None and m.status != "ok":
        lines += ["  " + ln for ln in m.comparison.summary().splitlines()]
    if m.error and m.status not in ("ok", "mismatch"):
        lines += ["  " + ln for ln in str(m.error).splitlines()[:8]]
    unwritten = m.detail.get("unwritten")
    if unwritten:
        lines.append("  never written: " + ", ".join(
            f"{n} element(s) of out{i if len(unwritten) > 1 or i else ''} still hold the poison "
            "value fuzzkern filled torch.empty with" for i, n in unwritten.items()))
    sub = m.detail.get("substituted")
    if sub:
        lines.append("  note: " + ", ".join(f"{k} ({v})" for k, v in sub.items())
                     + " ran as float32: the interpreter cannot compute in these dtypes")
    return lines


def failure_text(failure: Failure, ref: str | None = None) -> str:
    o = failure.outcome
    lines = [f"{failure.target_id}: {o.verdict} — {o.message}"]
    lines.append(f"minimal case: {failure.case.describe()}")
    if failure.case.dims:
        lines.append("dims: " + ", ".join(f"{k}={v}" for k, v in failure.case.dims.items()))
    if not failure.shrunk:
        lines.append("(the budget ran out while shrinking: this case may not be minimal)")
    if failure.flaky:
        lines.append("(flaky: the case did not fail the same way every time it ran)")
    for m in o.modes.values():
        lines += _mode_lines(m)
    explanations = getattr(failure, "explanations", None)
    if explanations:
        lines += [f"  · {e}" for e in explanations]
    entry = getattr(failure, "corpus_path", None)
    if entry:
        lines.append(f"saved: {entry}")
        lines.append(f"replay: fuzzkern replay {shlex.quote(str(entry))}")
    else:
        lines.append(f"replay: fuzzkern run {shlex.quote(ref or failure.target_id)} --budget 30s")
    return "\n".join(lines)


def result_row(r: TargetResult) -> dict[str, Any]:
    rate = r.cases / r.seconds if r.seconds else 0.0
    status = "FAIL" if r.failures else ("ERROR" if r.error else ("skipped" if r.skipped else "ok"))
    return {
        "target": r.target_id,
        "status": status,
        "cases": r.cases,
        "cases_per_s": round(rate, 2),
        "passed": r.counts.get(Verdict.PASS, 0),
        "preconditions": r.counts.get(Verdict.PRECONDITION, 0),
        "unsupported": r.counts.get(Verdict.UNSUPPORTED, 0),
        "interpreter_divergences": r.counts.get(Verdict.INTERPRETER_DIVERGENCE, 0),
        "failures": [f.outcome.verdict for f in r.failures],
        "seconds": round(r.seconds, 2),
        "compiles": r.compiles,
        "cache_hits": r.cache_hits,
        "compiles_per_1000_cases": round(1000 * r.compiles / r.cases, 1) if r.cases else None,
        "specializations": dict(sorted(r.specializations.items())),
        "error": r.error,
        "skipped": r.skipped,
    }
