"""Kernel coverage for a kernel author: the counts, what was never reached, and the kernel's
source with each line marked reached, partly or never (docs/coverage.md).

Read from :attr:`fuzzkern.search.engine.TargetResult.coverage` (the interpreter's
:class:`~fuzzkern.execution.interpreter.coverage.KernelCoverage` of the target's cases). Compiled
mode has
no line coverage: a run in both modes shows the interpreter's coverage of the same cases, a run
in compiled mode alone says it has none. Used by the text summary and the JSON report
(:func:`coverage_row`, :func:`coverage_lines`), the HTML report (:func:`source_html`),
``fuzzkern run --fail-under-coverage`` and the pytest plugin (:func:`below`).
"""

from __future__ import annotations

import html
import linecache
import os
from collections.abc import Iterable, Sequence
from typing import Any

from fuzzkern.execution.interpreter.coverage import KernelCoverage

__all__ = ["below", "coverage_lines", "coverage_row", "mode_note", "percent_of",
           "source_html", "unmeasured"]

#: never-reached items the text summary lists per target (the JSON report has them all)
SHOWN = 6

COMPILED_ONLY = ("no kernel coverage: compiled mode has no line coverage (add the "
                 "interpreter: --modes interpret,compiled)")
BOTH = "kernel coverage measured in the interpreter (compiled mode has no line coverage)"
NOT_MEASURED = ("not measured: no case ran in the interpreter (compiled mode has no line "
                "coverage)")


def _coverage(r: Any) -> KernelCoverage:
    cov = getattr(r, "coverage", None)
    return cov if isinstance(cov, KernelCoverage) else KernelCoverage.from_json(cov)


def unmeasured(r: Any) -> str:
    """Why a target has no kernel coverage, in words that hold for it: no case ran at all, or
    cases ran and none launched a kernel with Python source in the interpreter."""
    cases = int(getattr(r, "cases", 0) or 0)
    if not cases:
        return NOT_MEASURED
    return (f"not measured: none of the {cases} case(s) reached a kernel with Python source in "
            "the interpreter (each stopped before the launch, the launcher runs none, or the "
            "cases ran compiled only: compiled mode has no line coverage)")


def mode_note(modes: Sequence[str]) -> str | None:
    """What the modes mean for coverage: compiled alone has none, both carry the
    interpreter's; None for the interpreter alone."""
    if "interpret" not in modes:
        return COMPILED_ONLY
    if "compiled" in modes:
        return BOTH
    return None


def percent_of(r: Any) -> float | None:
    """A target's kernel coverage in percent; None when none was measured."""
    cov = _coverage(r)
    return cov.percent() if cov else None


def coverage_row(r: Any, modes: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON report's ``kernel_coverage`` of one target: ``measured``, ``percent``,
    ``counts`` (reached, total) per kind, ``never_reached`` (every item, in words),
    ``functions`` (name, file, def line, lines reached of total), ``cases`` and ``note`` (what
    the modes mean for it; without ``modes``, why nothing was measured)."""
    cov = _coverage(r)
    note = mode_note(modes) if modes is not None else None if cov else unmeasured(r)
    out: dict[str, Any] = {"measured": bool(cov), "note": note}
    if not cov:
        return out
    out.update(
        percent=round(cov.percent(), 1),
        counts={k: {"reached": a, "total": b} for k, (a, b) in cov.counts().items()},
        never_reached=cov.unreached(),
        functions=[{"name": fn["name"], "file": fn["file"], "line": fn["line"],
                    "lines_reached": sum(1 for n in fn["lines"].values() if n),
                    "lines": len(fn["lines"])} for fn in cov.functions.values()],
        cases=cov.cases)
    return out


def coverage_lines(results: Iterable[Any], modes: Sequence[str], most: int = SHOWN
                   ) -> list[str]:
    """The text summary's kernel coverage: one line per target, then up to ``most`` items
    it never reached."""
    results = list(results)
    if not results:
        return []
    note = mode_note(modes)
    if note == COMPILED_ONLY:
        return [note]
    lines = [f"kernel coverage{' (' + note + ')' if note else ''}:"]
    for r in results:
        cov = _coverage(r)
        if not cov:
            lines.append(f"  {r.target_id}: {unmeasured(r)}")
            continue
        lines.append(f"  {r.target_id}: {cov.summary()}")
        gaps = cov.unreached()
        for text in gaps[:most]:
            lines.append(f"    never reached: {text}")
        if len(gaps) > most:
            lines.append(f"    ... and {len(gaps) - most} more (--report has them all)")
    return lines


def below(results: Iterable[Any], percent: float) -> list[tuple[str, float | None]]:
    """The targets whose kernel coverage is under ``percent`` (None: not measured at all,
    which is under any bar)."""
    out = []
    for r in results:
        p = percent_of(r)
        if p is None or p < percent:
            out.append((r.target_id, p))
    return out


# ---------------------------------------------------------------------------------------------
# HTML

CSS = """
table.source { border-collapse: collapse; font: 12px/1.35 ui-monospace, monospace; }
table.source td { padding: 0 8px; white-space: pre; vertical-align: top; }
table.source td.n { color: #9e9e9e; text-align: right; user-select: none; }
tr.reached td.code { background: #e8f5e9; } tr.partly td.code { background: #fff8e1; }
tr.never td.code { background: #ffebee; }
table.source td.gaps { color: #8d6e63; font-family: system-ui; white-space: normal;
  min-width: 260px; }
.legend span { padding: 0 6px; margin-right: 6px; font-size: 12px; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _function_html(cov: KernelCoverage, key: str) -> str:
    fn = cov.functions[key]
    status = cov.line_status(key)
    gaps = cov.gaps_at(key)
    last = max([fn["line"], *status])
    rows = []
    for n in range(fn["line"], last + 1):
        text = linecache.getline(fn["file"], n).rstrip("\n")
        state = status.get(n, "")
        why = "; ".join(gaps.get(n, []))
        if state == "never":
            why = "never reached"
        title = f" title='{_e(why)}'" if why else ""
        rows.append(f"<tr class='{state or 'other'}' data-line='{n}'{title}>"
                    f"<td class='n'>{n}</td><td class='code'>{_e(text)}</td>"
                    f"<td class='gaps'>{_e(why) if state in ('partly', 'never') else ''}</td>"
                    "</tr>")
    reached = sum(1 for s in status.values() if s != "never")
    return (f"<details class='kernel-source' open><summary>{_e(fn['name'])} "
            f"({_e(os.path.basename(fn['file']))}:{fn['line']}): {reached}/{len(status)} "
            "lines reached</summary><table class='source'>" + "".join(rows)
            + "</table></details>")


def source_html(r: Any, modes: Sequence[str]) -> str:
    """One target's coverage section: the counts, then each kernel function's source with
    its lines marked reached, partly (a branch side, trip count or mask class not reached:
    the right column says which) or never."""
    cov = _coverage(r)
    note = mode_note(modes)
    head = "<h3>Kernel coverage</h3>"
    if not cov:
        why = note if note == COMPILED_ONLY else unmeasured(r)
        return f"<div class='kernel-coverage'>{head}<p class='meta'>{_e(why)}</p></div>"
    parts = [f"<div class='kernel-coverage'>{head}<p class='meta'>{_e(cov.summary())}"
             + (f" · {_e(note)}" if note else "") + "</p>",
             "<p class='legend'><span style='background:#e8f5e9'>reached</span>"
             "<span style='background:#fff8e1'>partly</span>"
             "<span style='background:#ffebee'>never</span></p>"]
    for key in sorted(cov.functions, key=lambda k: (cov.functions[k]["file"],
                                                     cov.functions[k]["line"])):
        parts.append(_function_html(cov, key))
    parts.append("</div>")
    return "".join(parts)
