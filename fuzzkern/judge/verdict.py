"""From per-mode results to one verdict, and from a failure to what makes it distinct.

In: the :class:`~fuzzkern.judge.outcome.ModeResult` of each mode that ran a case (its status,
its comparison with the reference, what the hygiene checks found). Out: :func:`verdict_of`, the
case's verdict and a one-line reason; :func:`verdict_family` and :func:`failure_key`, which
failures are one bug (shrunk and reported once) and which are distinct.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from fuzzkern.judge.frames import frames_of, raised_at
from fuzzkern.judge.outcome import ModeResult, Outcome, Verdict

_MODE_STATUS_VERDICT = {
    "crash": Verdict.CRASH,
    "oob": Verdict.OOB,
    "oob-view": Verdict.OOB_VIEW,
    "overflow": Verdict.OVERFLOW,
    "error": Verdict.ERROR,
    "compile-error": Verdict.COMPILE_ERROR,
    "reference-error": Verdict.REFERENCE_ERROR,
    "precondition": Verdict.PRECONDITION,
    "unsupported": Verdict.UNSUPPORTED,
}


def _more(items: list[Any]) -> str:
    return f" (and {len(items) - 1} more)" if len(items) > 1 else ""


def error_text(result: ModeResult) -> str:
    """A mode's exception with where it was raised (:func:`fuzzkern.judge.frames.raised_at`):
    ``"TypeError: ... (raised at flag_gems/ops/mm.py:120 (mm))"``; the whole traceback stays in
    ``detail["traceback"]`` (kept in the corpus entry)."""
    text = result.error or ""
    words = raised_at(str(result.detail.get("traceback", ""))).words()
    if not words or words in text:
        return text
    first, nl, rest = text.partition("\n")
    return f"{first} ({words}){nl}{rest}"


#: words of an exception that names the environment: a Triton, CUDA, driver or torch version,
#: or a GPU model or architecture
_ENVIRONMENT = re.compile(
    r"\b(?:triton|cuda|driver|torch|pytorch|rocm|cudnn)\s*(?:version\b|[<>=!]=?\s*\d|\d+\.\d)"
    r"|\b(?:hopper|ampere|blackwell|volta|turing|ada lovelace|sm_?\d{2,3}|compute capability"
    r"|[ahb]100|h200|b200|l40s?|mi\d{3}x?)\b", re.IGNORECASE)


def environment_refusal(result: ModeResult) -> bool:
    """Whether an ``error`` is the library refusing this environment: its message names the
    environment (:data:`_ENVIRONMENT`), it was raised in the code under test (not fuzzkern's,
    not Triton's) and before any kernel launch (no frame of Triton's runtime in the
    traceback: the launcher's own check)."""
    if result.status != "error" or not result.error or not _ENVIRONMENT.search(result.error):
        return False
    tb = str(result.detail.get("traceback", ""))
    if not tb or "/triton/" in tb.replace("\\", "/"):
        return False
    return not raised_at(tb).by_fuzzkern


def verdict_of(results: Mapping[str, ModeResult]) -> tuple[str, str]:
    """Combine per-mode results into one verdict and a one-line reason.

    Most specific first: a located memory error (``oob``, ``oob-view``) or an integer overflow
    explains a crash or wrong values that come with it; then a device fault (``crash``; but
    ``compiled-only`` when the interpreter ran the case clean: alignment faults and the like,
    docs/architecture.md, judge), writes found outside the views after the launch (``oob-write``),
    exceptions (``interpreter-divergence`` when only the interpreter raised and the compiled
    kernel ran clean), a declared
    precondition; then, for launches that completed, a mutated input, nondeterminism, and
    finally the values: ``unwritten-output`` when every mismatching element was never written,
    else ``kernel-bug``, ``compiled-only`` or ``interpreter-divergence``. When only the
    interpreter mismatches but the compiled kernel passed only with compiled code's wider float32
    tolerance (``detail["approx_math"]``), both are off: ``kernel-bug``.
    """
    statuses = {m: r.status for m, r in results.items()}
    for status in ("oob", "oob-view", "overflow"):
        for mode, s in statuses.items():
            if s == status:
                return _MODE_STATUS_VERDICT[status], f"{mode}: {results[mode].error}"
    if statuses.get("compiled") == "crash" and statuses.get("interpret") == "ok":
        # A device fault (misaligned or illegal address) the interpreter did not reproduce:
        # alignment and the like are compiled-only (docs/architecture.md, judge).
        return (Verdict.COMPILED_ONLY,
                f"only the compiled kernel fails: {results['compiled'].error}")
    for mode, s in statuses.items():
        if s == "crash":
            return Verdict.CRASH, f"{mode}: {error_text(results[mode])}"
    ran = {m: s for m, s in statuses.items() if s in ("ok", "mismatch", "accuracy", "precision")}
    for mode in ran:
        writes = results[mode].detail.get("oob_write")
        if writes:
            return Verdict.OOB_WRITE, f"{mode}: {writes[0]['text']}{_more(writes)}"
    compiled = results.get("compiled")
    if (statuses.get("interpret") in ("error", "compile-error") and compiled is not None
            and compiled.status == "ok" and not compiled.detail.get("mutated")
            and not compiled.detail.get("nondeterministic")):
        # The compiled kernel ran clean and matched; the interpreter could not run it (e.g. a
        # construct it mishandles): a Triton interpreter defect, not the kernel's.
        return (Verdict.INTERPRETER_DIVERGENCE,
                f"only the interpreter fails: {results['interpret'].error}")
    for mode in statuses:
        if environment_refusal(results[mode]):
            return (Verdict.UNSUPPORTED,
                    f"unsupported here: {mode}: the library refuses this environment: "
                    f"{error_text(results[mode])}")
    for status in ("compile-error", "error", "reference-error"):
        for mode, s in statuses.items():
            if s == status:
                return _MODE_STATUS_VERDICT[status], f"{mode}: {error_text(results[mode])}"
    if any(s == "precondition" for s in statuses.values()):
        mode = next(m for m, s in statuses.items() if s == "precondition")
        return Verdict.PRECONDITION, f"launcher rejected the input: {results[mode].error}"
    for mode in ran:
        mutated = results[mode].detail.get("mutated")
        if mutated:
            return Verdict.INPUT_MUTATED, f"{mode}: {mutated[0]['text']}{_more(mutated)}"
    for mode in ran:
        spread = results[mode].detail.get("nondeterministic")
        if spread:
            runs = (f" (launch {spread['against']} against launch {spread['run']} of the same "
                    "binary, config and inputs)" if "against" in spread else "")
            return Verdict.NONDETERMINISTIC, f"{mode}: {spread['text']}{runs}"
    if not ran:
        mode = next(iter(statuses))
        return Verdict.UNSUPPORTED, f"{mode}: {results[mode].error}"
    wrong = [m for m, s in ran.items() if s == "mismatch"]
    if not wrong:
        lossy = [m for m, s in ran.items() if s == "precision"]
        if lossy:
            c = results[lossy[0]].comparison
            why = c.explanation if c is not None else "precision loss"
            return Verdict.PRECISION_BUG, f"{' and '.join(lossy)}: {why}"
        close = [m for m, s in ran.items() if s == "accuracy"]
        if close:
            from fuzzkern.judge import oracle  # imports torch: only here (families need none)

            c = results[close[0]].comparison
            why = c.explanation if c is not None and c.explanation else "beyond the bound"
            if c is not None and "shadow" in c.condition and "limits" not in c.condition[
                    "shadow"]:
                return Verdict.ACCURACY, f"{' and '.join(close)}: {why}"
            return (Verdict.ACCURACY,
                    f"{' and '.join(close)}: within {oracle.ACCURACY_FACTOR:g}x of what rounding "
                    f"at the inputs' precision explains; {why}")
        return Verdict.PASS, ""
    if all(results[m].detail.get("unwritten_only") for m in wrong):
        counts = results[wrong[0]].detail["unwritten"]
        what = ", ".join(f"{n} element{'' if n == 1 else 's'} of output {i}"
                         for i, n in counts.items())
        total = sum(int(n) for n in counts.values())
        who = " and ".join(wrong)
        return (Verdict.UNWRITTEN_OUTPUT,
                f"{who}: every mismatching element was never written by the kernel ({what} "
                f"still {'holds' if total == 1 else 'hold'} the poison torch.empty was filled "
                "with)")
    unwritten = max(sum(int(n) for n in (results[m].detail.get("unwritten") or {}).values())
                    for m in wrong)
    note = (f" ({unwritten} of the mismatching elements were never written)"
            if unwritten else "")
    note += _shadow_says(results, wrong)
    if len(wrong) == len(ran):
        who = " and ".join(wrong) + (" disagree" if len(wrong) > 1 else " disagrees")
        return Verdict.KERNEL_BUG, f"{who} with the reference{note}"
    if wrong == ["compiled"]:
        return (Verdict.COMPILED_ONLY,
                f"only the compiled kernel disagrees with the reference{note}")
    approx = results["compiled"].detail.get("approx_math") if "compiled" in ran else None
    if wrong == ["interpret"] and approx:
        # The compiled kernel is as far off as the interpreter shows, only within the float32
        # tolerance GPU code gets for approximate exp/div: the kernel's math, not Triton's
        # interpreter, is wrong.
        return (Verdict.KERNEL_BUG,
                f"interpret disagrees with the reference{note}; compiled is off too ({approx})")
    return (Verdict.INTERPRETER_DIVERGENCE,
            "only the interpreter disagrees with the reference (a Triton interpreter defect)")


def _shadow_says(results: Mapping[str, ModeResult], wrong: list[str]) -> str:
    """The float64 shadow's word on a mismatch, when it judged one (docs/oracle.md)."""
    for mode in wrong:
        c = results[mode].comparison
        facts = c.condition.get("shadow") if c is not None and c.condition else None
        if facts and facts.get("says"):
            return "; " + str(facts["says"])
    for mode in wrong:
        c = results[mode].comparison
        facts = c.condition.get("shadow") if c is not None and c.condition else None
        if facts and facts.get("limits"):
            return ("; the float64 shadow cannot judge it (" + "; ".join(
                str(x) for x in facts["limits"]) + "): judged from outside")
    return ""


#: Verdicts that one bug shows as depending on the case: one failure to shrink, not several.
#: An unmasked tail reads past the end of a contiguous view (oob) and into the gap of a strided
#: one (oob-view); a missing program leaves elements unwritten (unwritten-output) or, when
#: other elements come out wrong too, a kernel-bug. The shrinker keeps the simplest case, and
#: the failure gets that case's verdict.
VERDICT_FAMILIES = {
    Verdict.OOB_VIEW: Verdict.OOB,
    Verdict.OOB_WRITE: Verdict.OOB,
    Verdict.UNWRITTEN_OUTPUT: Verdict.KERNEL_BUG,
}


def verdict_family(verdict: str) -> str:
    return VERDICT_FAMILIES.get(verdict, verdict)




def failure_location(outcome: Outcome) -> str:
    """Where a failure shows, in words that stay the same across the cases of one bug: the
    argument of an out-of-bounds access, a mutated input or a written gap; the exception type
    and the last frame it was raised from; the first output that disagrees."""
    for m in outcome.modes.values():
        if m.status in ("oob", "oob-view"):
            # the kernel line (the argument's name varies: the same load reads past `x` or,
            # past every allocation, names the pointer `x_ptr`)
            oob = m.detail.get("oob") or {}
            where = str(oob.get("location") or "").split(": ", 1)[0]
            return f"{oob.get('op', 'access')} at {where}" if where else str(
                oob.get("argument", "?"))
        for key in ("oob_write", "mutated"):
            if m.detail.get(key):
                return str(m.detail[key][0].get("argument", "?"))
    for m in outcome.modes.values():
        if m.status == "compile-error" and m.detail.get("location"):
            return f"compile error at {str(m.detail['location']).split(': ', 1)[0]}"
        if m.status in ("error", "compile-error", "reference-error", "crash", "overflow") \
                and m.error:
            kind = m.error.split(":", 1)[0].strip().split("\n")[0]
            frames = frames_of(str(m.detail.get("traceback", "")))
            if frames:
                path, line, _ = frames[-1]
                kind += f" at {os.path.basename(path)}:{line}"
            return kind
    for m in outcome.modes.values():
        c = m.comparison
        if c is not None and not c.ok:
            if c.structural:
                return "structure"
            root = _root_site(c.condition)
            if root:  # one root cause, one report: whatever the dtype, shape or mode
                return f"root {root}"
            return f"output {c.first[0].output}" if c.first else "values"
    for m in outcome.modes.values():
        root = _root_site(m.comparison.condition) if m.comparison is not None else None
        if root:  # an accuracy or precision finding (its comparison counts as passed)
            return f"root {root}"
    return ""


def _root_site(condition: Mapping[str, Any] | None) -> str | None:
    """The shadow's root line (``"kernels.py:14"``) of a comparison, if it named one."""
    facts = (condition or {}).get("shadow") or {}
    match = re.match(r"line (\S+:\d+)", str(facts.get("cause") or ""))
    return match[1] if match else None


def failure_key(outcome: Outcome) -> str:
    """What makes two failures distinct: the verdict family and the location
    (:func:`failure_location`). A run reports one shrunk failure per key."""
    location = failure_location(outcome)
    family = verdict_family(outcome.verdict)
    return f"{family} @ {location}" if location else family
