"""Human-readable reports: a failure is a diagnosis, not a boolean (docs/architecture.md,
front)."""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

from fuzzkern.judge.outcome import ModeResult, Verdict
from fuzzkern.judge.verdict import failure_key
from fuzzkern.report.coverage import coverage_row
from fuzzkern.search.engine import Failure, TargetResult


def _mode_lines(m: ModeResult) -> list[str]:
    lines = [f"[{m.mode}] {m.status}" + (f" ({m.seconds:.3f} s)" if m.seconds else "")]
    if m.comparison is not None and m.status != "ok":
        lines += ["  " + ln for ln in m.comparison.summary().splitlines()]
    if m.error and m.status not in ("ok", "mismatch", "accuracy", "precision"):
        lines += ["  " + ln for ln in str(m.error).splitlines()[:8]]
    unwritten = m.detail.get("unwritten")
    if unwritten:
        lines.append("  never written: " + ", ".join(
            f"{n} element(s) of out{i if len(unwritten) > 1 or str(i) != '0' else ''} still "
            "hold the poison value fuzzkern filled torch.empty with"
            for i, n in unwritten.items())
            + (" (and nothing else is wrong)" if m.detail.get("unwritten_only") else ""))
    lines += _hygiene_lines(m)
    sub = m.detail.get("substituted")
    if sub:
        lines.append("  note: " + ", ".join(f"{k} ({v})" for k, v in sub.items())
                     + " ran as float32: the interpreter cannot compute in these dtypes")
    return lines


def _hygiene_lines(m: ModeResult) -> list[str]:
    """What the memory-safety and hygiene checks found in one mode (fuzzkern.execution.
    hygiene, the interpreter's checkers, compute-sanitizer)."""
    d = m.detail
    lines = []
    oob = d.get("oob")
    if oob and oob.get("region"):
        lines.append(f"  outside the view: storage element {oob.get('storage_index')} of "
                     f"`{oob.get('argument')}` ({oob['region']}); the kernel was given "
                     f"{oob.get('view')}")
    for f in d.get("oob_write") or ():
        lines.append(f"  write outside the view: {f['text']}")
    for f in d.get("mutated") or ():
        lines.append(f"  mutated input: {f['text']}")
    spread = d.get("nondeterministic")
    if spread:
        lines.append(f"  nondeterministic: run {spread.get('run')} of {spread.get('runs')}: "
                     f"{spread['text']}")
    overflow = d.get("overflow")
    if overflow:
        where = overflow.get("program_id")
        lines.append(f"  integer overflow: {overflow['dtype']} {overflow['operation']}"
                     + (f" in program ({','.join(map(str, where))})" if where else "")
                     + "; widen the operands (x.to(tl.int64)) before the operation")
    for e in (d.get("memcheck") or ())[:3]:
        lines.append(f"  memcheck: {e.get('text', e.get('error'))}")
    return lines


#: lines and characters of a case's captured output a failure report shows
OUTPUT_LINES, OUTPUT_CHARS = 20, 2000


def output_lines(o: Any) -> list[str]:
    """What the failing case printed (stdout and stderr, captured per case in the worker)."""
    if not getattr(o, "output_bytes", 0):
        return []
    text = o.output[:OUTPUT_CHARS]
    shown = text.splitlines()[:OUTPUT_LINES]
    head = f"output of the case ({o.output_bytes} bytes"
    if o.output_bytes > len(text.encode()) or len(shown) < len(text.splitlines()):
        head += ", the start shown"
    return [head + "):"] + [f"  | {ln[:200]}" for ln in shown]


def failure_text(failure: Failure, ref: str | None = None, seed: int | None = None,
                 cases: int | None = None, same_as: Failure | None = None) -> str:
    """A failure in words. ``seed`` and ``cases``: the seed of the run that found it and the
    cases it ran, for the command that repeats the run when there is no corpus entry to
    replay. ``same_as``: the failure of another target reported already with the same root
    (:func:`fuzzkern.search.findings.shared_roots`): this one is then told in a few lines,
    its case and its corpus entry."""
    o = failure.outcome
    if same_as is not None:
        lines = [f"{failure.target_id}: {o.verdict} — the same root cause as "
                 f"{same_as.target_id}'s failure reported above ({failure.key}), reached "
                 "from this target too"]
    else:
        lines = [f"{failure.target_id}: {o.verdict} — {o.message}"]
    lines.append(f"minimal case: {failure.case.describe()}")
    if failure.case.dims:
        lines.append("dims: " + ", ".join(f"{k}={v}" for k, v in failure.case.dims.items()))
    shows = getattr(failure, "shows", None)
    if shows is not None:  # one report per root cause, wherever it showed
        lines.append(shows.text())
    if not failure.shrunk:
        lines.append("(interrupted while shrinking: this case may not be minimal)"
                     if getattr(failure, "interrupted", False) else
                     "(the budget ran out while shrinking: this case may not be minimal)")
    if failure.flaky:
        lines.append("(flaky: the case did not fail the same way every time it ran)")
    if same_as is None:
        for m in o.modes.values():
            lines += _mode_lines(m)
        lines += output_lines(o)
        explanations = getattr(failure, "explanations", None)
        if explanations:
            lines += [f"  · {e}" for e in explanations]
    lines += _entry_lines(failure, ref, seed, cases)
    return printable("\n".join(lines))


def _entry_lines(failure: Failure, ref: str | None, seed: int | None,
                 cases: int | None) -> list[str]:
    """Where the failure was saved (or why not) and the commands that repeat it."""
    lines = []
    entry = getattr(failure, "corpus_path", None)
    if entry:
        shown = shown_path(str(entry))
        not_saved = not_saved_reason(failure)
        if getattr(failure, "replayed", False):
            lines.append(f"regression: corpus entry {shown} still fails")
        else:
            lines.append(f"NOT SAVED: {not_saved}" if not_saved else f"saved: {shown}")
        source = f" --target {shlex.quote(target_source(ref))}" if ref else ""
        lines.append(f"to reproduce this failure: fuzzkern replay {shlex.quote(shown)}{source}")
        lines.append(f"reproduce without fuzzkern: fuzzkern repro {shlex.quote(shown)}{source}")
        for other in getattr(failure, "also", ()):
            lines.append(f"the same failure, reported here once: corpus entry "
                         f"{shown_path(other)} fails too")
    else:
        not_saved = not_saved_reason(failure)
        if not_saved:
            lines.append(f"NOT SAVED: {not_saved}")
        lines.append(f"to repeat: {rerun_command(ref or failure.target_id, seed, cases)}")
    return lines


def not_saved_reason(failure: Failure) -> str | None:
    """Why ``failure`` is not in the corpus although a corpus was set: its save failed, or
    the file it was saved as is gone (checked now: host code may have removed it)."""
    entry = getattr(failure, "corpus_path", None)
    if entry and not os.path.isfile(str(entry)):
        return (f"{shown_path(str(entry))} was written and read back, but is gone now "
                "(removed during the run?)")
    return None if entry else getattr(failure, "not_saved", None)


def target_source(ref: str) -> str:
    """The target source a canonical ref loads from, as a user names it on a command line:
    the file (relative to the current folder when below it) or the module."""
    if "::" in ref:
        return shown_path(ref.partition("::")[0])
    return ref.partition(":")[0]


def repeat_options(seed: int, cases: int | None, budget: float | None = None) -> str:
    """The options of ``fuzzkern run`` that repeat a run's draws: its seed, its case count
    (so that the budget does not decide where the repeat stops) and no example database
    (whose examples would be replayed first)."""
    text = f"--seed {seed}"
    if cases:
        text += f" --max-examples {cases}"
    text += " --no-db"
    if budget is not None:
        text += f" --budget {math.ceil(budget)}s"
    return text


def rerun_command(ref: str, seed: int | None = None, cases: int | None = None) -> str:
    """``fuzzkern run REF --budget 30s [--seed N --max-examples K --no-db]``, a file ref
    relative to the current folder when it is below it."""
    path, sep, name = ref.partition("::")
    shown = shown_path(path) + sep + name if sep and path.endswith(".py") else ref
    if seed is None:
        return f"fuzzkern run {shlex.quote(shown)} --budget 30s"
    return (f"fuzzkern run {shlex.quote(shown)} "
            + repeat_options(seed, cases, 600.0 if cases else 30.0))


def accuracy_text(target_id: str, case: Any, outcome: Any, shows: Any = None) -> str:
    """An accuracy finding (oracle rule 9) in words: the case, where the finding showed
    (a :class:`~fuzzkern.search.findings.Shows`), then each mode's figures."""
    lines = [f"{target_id}: {outcome.verdict} — {outcome.message}",
             f"case: {case.describe()}"]
    if case.dims:
        lines.append("dims: " + ", ".join(f"{k}={v}" for k, v in case.dims.items()))
    if shows is not None:
        lines.append(shows.text())
    for m in outcome.modes.values():
        lines += _mode_lines(m)
    return "\n".join(lines)


def shown_path(path: str) -> str:
    """``path`` relative to the current folder when it is below it, on one line
    (:func:`printable`, newlines escaped too: a file named ``"a\\nPASSED"`` never prints a
    line of its own)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - another drive
        return printable(path, keep="")
    return printable(path if rel.startswith("..") else rel, keep="")


def printable(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control character but those in ``keep`` (newline and tab) written
    as its escape (``\\x1b``): a file name or a message from a corpus entry or a kernel's host
    code never sends the terminal an escape sequence (a new title, a cleared screen).

    >>> printable("a" + chr(27) + "[2Jb")
    'a\\\\x1b[2Jb'
    >>> printable("a\\nb", keep="")
    'a\\\\nb'
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else ascii(ch)[1:-1] for ch in text)


def gpu_summary(devices: Mapping[str, int]) -> str:
    """A short cell for the GPUs a target ran on: the pinned ``CUDA_VISIBLE_DEVICES`` entries
    (or the labels, unpinned) with case counts, e.g. ``"0: 812, 1: 790"``.

    >>> gpu_summary({"NVIDIA H200 (CUDA_VISIBLE_DEVICES=1, pci 0000:19:00.0)": 7})
    '1: 7'
    >>> gpu_summary({"NVIDIA H200": 3})
    'NVIDIA H200: 3'
    """
    parts = []
    for label, n in sorted(devices.items()):
        m = re.search(r"CUDA_VISIBLE_DEVICES=([^,)]+)", label)
        parts.append(f"{m.group(1) if m else label}: {n}")
    return ", ".join(parts) or "-"


def devices_text(devices: Mapping[str, int]) -> str:
    """Every GPU label with its case count, e.g. ``"NVIDIA H200 (...): 812 cases; ..."``."""
    return "; ".join(f"{d}: {n} cases" for d, n in sorted(devices.items()))


def result_row(r: TargetResult) -> dict[str, Any]:
    rate = r.cases / r.seconds if r.seconds else 0.0
    tested = r.tested
    status = "FAIL" if r.failures else ("ERROR" if r.error else ("skipped" if r.skipped else
              ("no cases" if not r.cases else "untested" if tested <= 0 else "ok")))
    return {
        "target": r.target_id,
        "status": status,
        "cases": r.cases,
        "minimize_runs": r.minimize_runs,
        "cases_per_s": round(rate, 2),
        "passed": r.counts.get(Verdict.PASS, 0),
        "accuracy": r.counts.get(Verdict.ACCURACY, 0),
        "fuzzkern_limits": list(r.limits),
        "pass_ratio": round(r.pass_ratio, 4),
        "accuracy_findings": [
            {"case": case.to_json(), "message": o.message, "score": o.score,
             "key": failure_key(o), "shows": _shows_json(r, o),
             "condition": next((m.comparison.condition for m in o.modes.values()
                                if m.comparison is not None and m.comparison.condition), {})}
            for case, o in r.accuracy],
        "preconditions": r.counts.get(Verdict.PRECONDITION, 0),
        "unsupported": r.counts.get(Verdict.UNSUPPORTED, 0),
        "unsupported_reason": r.unsupported_reason,
        "slow": list(r.slow),
        "slow_cases": r.counts.get(Verdict.SLOW, 0),
        "compile_seconds": round(r.compile_seconds, 2),
        "slow_compiles": r.slow_compiles,
        "stopped_at_budget": r.stopped,
        "idle": r.idle,
        "cut_short": r.cut,
        "discovered_autotuners": dict(sorted(r.discovered.items())),
        "compile": dict(r.compile),
        "reference_parity": {"device": r.parity_device, "judged": r.parity_judged,
                             "disagreed": r.parity_disagreed, "off": r.parity_off},
        "interpreter_divergences": r.counts.get(Verdict.INTERPRETER_DIVERGENCE, 0),
        "failures": [f.outcome.verdict for f in r.failures],
        "failure_messages": [f.outcome.message for f in r.failures],
        "failure_shows": [f.shows.to_json() if f.shows is not None else None
                          for f in r.failures],
        "failures_found_at": [None if f.found_at is None else round(f.found_at, 3)
                              for f in r.failures],
        "seconds": round(r.seconds, 2),
        "compiles": r.compiles,
        "cache_hits": r.cache_hits,
        "compiles_per_1000_cases": round(1000 * r.compiles / r.cases, 1) if r.cases else None,
        "value_variants": r.variants,
        "specialization_keys": len(r.keys),
        "keys_per_minute": round(60 * len(r.keys) / r.seconds, 1) if r.seconds else None,
        "specializations": dict(sorted(r.specializations.items())),
        "devices": dict(sorted(r.devices.items())),
        "error": r.error,
        "skipped": r.skipped,
        "corpus_replayed": r.replayed,
        "corpus_still_failing": list(r.corpus_failing),
        "corpus_now_passing": list(r.corpus_passing),
        "corpus_problems": list(r.corpus_problems),
        "kernel_coverage": coverage_row(r),
    }


def _shows_json(r: TargetResult, outcome: Any) -> dict[str, Any] | None:
    shows = r.shows.get(failure_key(outcome))
    return shows.to_json() if shows is not None else None
