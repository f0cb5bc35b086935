"""``fuzzkern run --html report.html``: one self-contained page, pictures where people look.

Per target: a coverage heatmap per dtype (rows: layout kinds, columns: size classes of the
largest tensor's numel; a cell's shade is the number of cases there, a red border marks cells
with failing cases; layout kinds the target's strategies cannot draw are left out) and the
error distribution (cases per verdict, and a histogram of each case's worst error in units of
its tolerance, error / bound, with the pass line at 1: how close to the line the kernel came).
Drawn from :attr:`fuzzkern.search.engine.TargetResult.records` (every case, or a uniform sample of
at most ``RECORD_LIMIT`` of them). The SVG is written by hand: no plotting dependency, no script, no
network.
"""

from __future__ import annotations

import datetime
import html
import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

from fuzzkern.judge.outcome import Verdict
from fuzzkern.report.coverage import CSS as COVERAGE_CSS
from fuzzkern.report.coverage import source_html
from fuzzkern.report.text import devices_text, result_row
from fuzzkern.search.engine import LAYOUT_KINDS, SIZE_CLASSES, TargetResult

_FAIL = "#c62828"
_OK = "#2e7d32"
_MUTED = "#9e9e9e"
_CELL, _LABEL_W, _HEAD_H = 48, 82, 32

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #212121; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; }
.meta { color: #616161; }
table.summary { border-collapse: collapse; margin-top: 12px; }
table.summary th, table.summary td { padding: 4px 10px; border-bottom: 1px solid #e0e0e0;
  text-align: right; } table.summary td:first-child, table.summary th:first-child
  { text-align: left; }
.FAIL { color: #c62828; font-weight: bold; } .ERROR { color: #ef6c00; font-weight: bold; }
.ok { color: #2e7d32; } .skipped { color: #757575; }
.target { border-top: 2px solid #eeeeee; padding-top: 8px; }
.plots { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
figure { margin: 0; } figcaption { color: #616161; font-size: 12px; max-width: 420px; }
pre { background: #fafafa; border: 1px solid #eeeeee; padding: 8px; font-size: 12px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dl.run dt { color: #616161; } dl.run dd { margin: 0; font-family: monospace;
  overflow-wrap: anywhere; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _shade(n: int, peak: int) -> str:
    """White to deep blue, on a log scale (a few cases in a cell must still show)."""
    if n <= 0:
        return "#f5f5f5"
    t = math.log1p(n) / math.log1p(max(peak, 1))
    lo, hi = (227, 242, 253), (13, 71, 161)
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi, strict=True))
    return f"rgb({r},{g},{b})"


def heatmap_svg(records: Iterable[tuple[str, str, str, str, float]], dtype: str,
                kinds: Iterable[str] | None = None) -> str:
    """Cases of one dtype by layout kind (rows) and size class (columns). ``kinds``: the
    layout kinds the target can draw (default: all); rows for the others are left out, as
    they would look like coverage gaps."""
    possible = set(LAYOUT_KINDS if kinds is None else kinds)
    counts: Counter[tuple[str, str]] = Counter()
    fails: Counter[tuple[str, str]] = Counter()
    for d, layout, size, verdict, _ in records:
        if d != dtype:
            continue
        for kind in layout.split("+"):
            counts[kind, size] += 1
            possible.add(kind)  # drawn after all: never hide what happened
            if verdict in Verdict.FAILURES:
                fails[kind, size] += 1
    rows = [k for k in LAYOUT_KINDS if k in possible]
    peak = max(counts.values(), default=1)
    w = _LABEL_W + _CELL * len(SIZE_CLASSES) + 4
    h = _HEAD_H + _CELL * len(rows) + 22
    out = [f'<svg class="heatmap" data-dtype="{_e(dtype)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
           f'aria-label="coverage heatmap for {_e(dtype)}">',
           f'<text x="{_LABEL_W}" y="14" font-size="13" font-weight="bold">{_e(dtype)}</text>']
    for j, size in enumerate(SIZE_CLASSES):
        x = _LABEL_W + j * _CELL + _CELL / 2
        out.append(f'<text x="{x}" y="{_HEAD_H - 4}" font-size="10" text-anchor="middle">'
                   f'{_e(size)}</text>')
    for i, kind in enumerate(rows):
        y = _HEAD_H + i * _CELL
        out.append(f'<text x="{_LABEL_W - 6}" y="{y + _CELL / 2 + 4}" font-size="11" '
                   f'text-anchor="end">{_e(kind)}</text>')
        for j, size in enumerate(SIZE_CLASSES):
            n, f = counts[kind, size], fails[kind, size]
            x = _LABEL_W + j * _CELL
            stroke = (f'stroke="{_FAIL}" stroke-width="3"' if f
                      else 'stroke="#ffffff" stroke-width="1"')
            out.append(f'<rect class="cell" x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" '
                       f'fill="{_shade(n, peak)}" {stroke} data-count="{n}" data-failures="{f}">'
                       f'<title>{_e(kind)}, numel {_e(size)}: {n} case(s)'
                       f'{f", {f} failing" if f else ""}</title></rect>')
            if n:
                color = "#ffffff" if n > peak ** 0.5 and peak > 3 else "#212121"
                out.append(f'<text x="{x + _CELL / 2}" y="{y + _CELL / 2 + 4}" font-size="10" '
                           f'text-anchor="middle" fill="{color}">{n}</text>')
    out.append(f'<text x="{_LABEL_W + _CELL * len(SIZE_CLASSES) / 2}" y="{h - 4}" '
               'font-size="10" text-anchor="middle" fill="#616161">numel of the largest tensor'
               '</text>')
    out.append("</svg>")
    return "".join(out)


def verdicts_svg(counts: Counter[str]) -> str:
    """Horizontal bars: cases per verdict (failing verdicts red)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) or [("no cases", 0)]
    peak = max((n for _, n in items), default=1) or 1
    bar_w, row_h, label_w = 220, 20, 160
    w, h = label_w + bar_w + 60, row_h * len(items) + 24
    out = [f'<svg class="verdicts" xmlns="http://www.w3.org/2000/svg" width="{w}" '
           f'height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="cases per verdict">',
           '<text x="0" y="14" font-size="13" font-weight="bold">cases per verdict</text>']
    for i, (verdict, n) in enumerate(items):
        y = 22 + i * row_h
        color = (_FAIL if verdict in Verdict.FAILURES else
                 _OK if verdict == Verdict.PASS else _MUTED)
        length = max(1.0, bar_w * n / peak) if n else 0
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" font-size="11" text-anchor="end">'
                   f'{_e(verdict)}</text>')
        out.append(f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{length:.1f}" '
                   f'height="{row_h - 6}" fill="{color}" data-verdict="{_e(verdict)}" '
                   f'data-count="{n}"/>')
        out.append(f'<text x="{label_w + length + 4:.1f}" y="{y + 13}" font-size="11">{n}'
                   '</text>')
    out.append("</svg>")
    return "".join(out)


#: histogram bins of error / bound (the worst element's error in units of its tolerance):
#: (lo, hi] and a label; the pass line lies between the "≤1" and "≤2" bins
_BINS = [(-1.0, 0.0, "0"), (0.0, 1 / 64, "≤1/64"), (1 / 64, 1 / 8, "≤1/8"),
         (1 / 8, 1 / 2, "≤1/2"), (1 / 2, 1.0, "≤1"), (1.0, 2.0, "≤2"), (2.0, 8.0, "≤8"),
         (8.0, 64.0, "≤64"), (64.0, math.inf, ">64"), (math.inf, math.inf, "NaN/inf")]
_PASS_BINS = 5  # bins at or under the tolerance


def _bin(ratio: float) -> int:
    if ratio == math.inf:
        return len(_BINS) - 1
    return next(k for k, (lo, hi, _) in enumerate(_BINS) if lo < ratio <= hi)


def errors_svg(records: Iterable[tuple[str, str, str, str, float]]) -> str:
    """Histogram of each case's worst error over its tolerance bound (error / bound), with the
    pass line at 1. Cases that compared no values (out of bounds, crash, error) are counted
    under the plot, not in a bin."""
    bins = [0] * len(_BINS)
    bad = [0] * len(_BINS)
    other: Counter[str] = Counter()
    for *_, verdict, ratio in records:
        if math.isnan(ratio):
            other[verdict] += 1
            continue
        k = _bin(ratio)
        bins[k] += 1
        bad[k] += verdict in Verdict.FAILURES
    peak = max(bins) or 1
    col_w, plot_h, top = 54, 120, 36
    w, h = col_w * len(_BINS) + 20, top + plot_h + 66
    line_x = 10 + _PASS_BINS * col_w - 3
    out = [f'<svg class="errors" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" role="img" aria-label="error over tolerance">',
           '<text x="0" y="14" font-size="13" font-weight="bold">error / tolerance bound '
           '(cases by their worst element)</text>',
           f'<line x1="0" y1="{top + plot_h}" x2="{w}" y2="{top + plot_h}" stroke="#bdbdbd"/>',
           f'<line class="pass-line" x1="{line_x}" y1="{top - 8}" x2="{line_x}" '
           f'y2="{top + plot_h + 4}" stroke="{_FAIL}" stroke-width="1.5" '
           'stroke-dasharray="4 3"/>',
           f'<text x="{line_x - 4}" y="{top - 10}" font-size="10" text-anchor="end" '
           f'fill="{_OK}">pass</text>',
           f'<text x="{line_x + 4}" y="{top - 10}" font-size="10" fill="{_FAIL}">fail</text>']
    for k, (_, _, label) in enumerate(_BINS):
        x = 10 + k * col_w
        n = bins[k]
        bh = plot_h * (math.log1p(n) / math.log1p(peak)) if n else 0
        good_h = bh * (n - bad[k]) / n if n else 0
        out.append(f'<rect class="bin" x="{x}" y="{top + plot_h - bh:.1f}" width="{col_w - 6}" '
                   f'height="{bh - good_h:.1f}" fill="{_FAIL}" data-label="{_e(label)}" '
                   f'data-count="{n}" data-failures="{bad[k]}"><title>error/bound {label}: '
                   f'{n} case(s), {bad[k]} failing</title></rect>')
        out.append(f'<rect x="{x}" y="{top + plot_h - good_h:.1f}" width="{col_w - 6}" '
                   f'height="{good_h:.1f}" fill="#64b5f6"/>')
        if n:
            out.append(f'<text x="{x + (col_w - 6) / 2}" y="{top + plot_h - bh - 3:.1f}" '
                       f'font-size="10" text-anchor="middle">{n}</text>')
        out.append(f'<text x="{x + (col_w - 6) / 2}" y="{top + plot_h + 14}" font-size="9" '
                   f'text-anchor="middle">{_e(label)}</text>')
    out.append(f'<text x="{w / 2}" y="{top + plot_h + 32}" font-size="10" '
               'text-anchor="middle" fill="#616161">worst error / its tolerance bound (1: on '
               'the line; log height; red: failing cases)</text>')
    if other:
        listed = ", ".join(f"{v} {n}" for v, n in sorted(other.items()))
        out.append(f'<text class="no-values" x="{w / 2}" y="{h - 8}" font-size="10" '
                   f'text-anchor="middle" fill="#616161">no values compared: {_e(listed)}</text>')
    out.append("</svg>")
    return "".join(out)


def layout_kinds(target: Any) -> set[str]:
    """The layout kinds any tensor input of ``target`` can be drawn with."""
    kinds = {"contiguous"}
    for spec in target.inputs.tensors.values():
        kinds |= spec.layout_kinds()
    return kinds


def _gpus(r: TargetResult) -> str:
    if not r.devices:
        return ""
    return "; compiled on " + _e(devices_text(r.devices))


def over_time_svg(records: Iterable[tuple[str, str, str, str, float]]) -> str:
    """Cases in the order they ran (x) against the failing and accuracy cases found so far
    (y, cumulative): whether findings kept coming or stopped early."""
    verdicts = [rec[3] for rec in records]
    w, h, left, top = 420, 162, 40, 24
    out = [f'<svg class="over-time" xmlns="http://www.w3.org/2000/svg" width="{w}" '
           f'height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="findings over cases">',
           '<text x="0" y="14" font-size="13" font-weight="bold">findings over the cases</text>']
    n = len(verdicts)
    if n:
        pw, ph = w - left - 10, h - top - 30
        for name, color, wanted in (("failing", _FAIL, Verdict.FAILURES),
                                    ("accuracy", "#ef6c00", {Verdict.ACCURACY})):
            total, points = 0, [f"{left},{top + ph}"]
            for k, v in enumerate(verdicts):
                total += v in wanted
                points.append(f"{left + pw * (k + 1) / n:.1f},{top + ph - ph * total / n:.1f}")
            out.append(f'<polyline class="{name}" points="{" ".join(points)}" fill="none" '
                       f'stroke="{color}" stroke-width="1.5" data-total="{total}"/>')
        out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" '
                   'stroke="#bdbdbd"/>')
        # two short lines: one long line is cut at the picture's edge
        out.append(f'<text class="caption" x="{left + pw / 2}" y="{h - 18}" font-size="10" '
                   f'text-anchor="middle" fill="#616161">case 1 to {n} in the order they ran'
                   '</text>')
        out.append(f'<text class="caption" x="{left + pw / 2}" y="{h - 5}" font-size="10" '
                   'text-anchor="middle" fill="#616161">red: failing cases so far; orange: '
                   'accuracy findings</text>')
    out.append("</svg>")
    return "".join(out)


def _run_meta(run_info: dict[str, str] | None) -> str:
    """The run's seed, versions, command line and the command that repeats it."""
    if not run_info:
        return ""
    labels = (("command", "command line"), ("seed", "seed"), ("repeat", "to repeat"),
              ("versions", "versions"), ("date", "date"))
    rows = "".join(f"<dt>{label}</dt><dd class='{key}'>{_e(run_info[key])}</dd>"
                   for key, label in labels if run_info.get(key))
    return f"<dl class='run'>{rows}</dl>"


def _failure_links(r: TargetResult, row: dict[str, Any]) -> str:
    """The summary's failures cell: each failure a link to its diagnosis."""
    if not r.failures:
        return _e(r.error or (f"ran no case: {r.idle_reason()}" if r.idle else None)
                  or r.skipped or "-")
    return ", ".join(f"<a href='#f-{_e(r.target_id)}-{k}'>{_e(f.outcome.verdict)}</a>"
                     for k, f in enumerate(r.failures))


def _accuracy_html(r: TargetResult) -> list[str]:
    """Accuracy findings (rounding, with the line that loses it), with their figures: one box
    per finding (:func:`~fuzzkern.judge.verdict.failure_key`), its worst case shown, the
    others counted."""
    from fuzzkern.judge.verdict import failure_key

    by_key: dict[str, list[Any]] = {}
    for case, outcome in r.accuracy:
        by_key.setdefault(failure_key(outcome), []).append((case, outcome))
    out = []
    for found in list(by_key.values())[:3]:
        case, outcome = found[0]
        figures = [m.comparison.summary() for m in outcome.modes.values()
                   if m.comparison is not None and not m.comparison.ok]
        more = f"\n({len(found) - 1} more case(s) of this finding)" if len(found) > 1 else ""
        shows = r.shows.get(failure_key(outcome))
        if shows is not None:
            more += f"\n{shows.text()}"
        out.append(f"<pre class='accuracy'>accuracy: {_e(outcome.message)}\n"
                   f"case: {_e(case.describe())}"
                   + "".join(f"\nfigures: {_e(f)}" for f in figures) + _e(more) + "</pre>")
    if len(by_key) > 3:
        out.append(f"<p class='meta'>and {len(by_key) - 3} more accuracy finding(s)</p>")
    return out


def _failing_first(results: list[TargetResult]) -> list[TargetResult]:
    """Targets with failures first, then errors, then the rest (each group in run order)."""
    def rank(r: TargetResult) -> int:
        status = result_row(r)["status"]
        return 0 if status == "FAIL" else 1 if status == "ERROR" else 2
    return sorted(results, key=rank)


def render(results: list[TargetResult], *, budget: float, elapsed: float,
           modes: tuple[str, ...], failures_text: dict[str, list[str]] | None = None,
           layout_kinds: dict[str, set[str]] | None = None,
           run_info: dict[str, str] | None = None) -> str:
    """The whole page. ``failures_text``: per target id, the diagnosis of each failure;
    ``layout_kinds``: per target id, the layout kinds its strategies can draw (the heatmaps
    leave out the others); ``run_info``: the run's ``seed``, ``versions``, ``command`` line,
    ``repeat`` command and ``date``, shown under the title."""
    from fuzzkern._version import __version__

    failures_text = failures_text or {}
    results = _failing_first(results)
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    total_cases = sum(r.cases for r in results)
    total_failures = sum(len(r.failures) for r in results)
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<title>fuzzkern report</title>", f"<style>{_CSS}{COVERAGE_CSS}</style></head><body>",
             "<h1>fuzzkern report</h1>",
             f"<p class='meta'>{now} · fuzzkern {_e(__version__)} · modes {_e(','.join(modes))}"
             f" · budget {budget:g} s, ran {elapsed:.1f} s · {total_cases} cases · "
             f"<span class='{'FAIL' if total_failures else 'ok'}'>{total_failures} "
             f"failure(s)</span></p>", _run_meta(run_info),
             "<table class='summary'><tr><th>target</th><th>status</th><th>cases</th>"
             "<th>cases/s</th><th>classes</th><th>compilations</th><th>failures</th></tr>"]
    for r in results:
        row = result_row(r)
        parts.append(
            f"<tr><td><a href='#t-{_e(r.target_id)}'>{_e(r.target_id)}</a></td>"
            f"<td class='{_e(row['status'])}'>{_e(row['status'])}</td><td>{r.cases}</td>"
            f"<td>{row['cases_per_s']:.1f}</td><td>{len(r.specializations)}</td>"
            f"<td>{r.compiles}</td>"
            f"<td>{_failure_links(r, row)}</td></tr>")
    parts.append("</table>")
    for r in results:
        parts.append(f"<section class='target' id='t-{_e(r.target_id)}'>"
                     f"<h2>{_e(r.target_id)}</h2>"
                     f"<p class='meta'>{r.cases} cases in {r.seconds:.1f} s over {r.slices} "
                     f"slice(s); {len(r.specializations)} specialization classes"
                     + (f"; the plots show a sample of {len(r.records)}" if
                        len(r.records) < r.cases else "") + _gpus(r) + "</p>")
        # the findings first, then the plots and the kernel source
        for k, text in enumerate(failures_text.get(r.target_id, [])):
            parts.append(f"<pre class='failure' id='f-{_e(r.target_id)}-{k}'>{_e(text)}</pre>")
        if r.error:
            parts.append(f"<pre class='failure'>error: {_e(r.error)}</pre>")
        parts += _accuracy_html(r)
        parts += [f"<pre class='accuracy'>fuzzkern-limit (fuzzkern's, not the kernel's; not a "
                  f"failure): {_e(note)}</pre>" for note in r.limits]
        dtypes = sorted({rec[0] for rec in r.records})
        parts.append("<div class='plots'>")
        if dtypes:
            parts.append("<figure><div class='plots'>")
            kinds = (layout_kinds or {}).get(r.target_id)
            parts += [heatmap_svg(r.records, d, kinds) for d in dtypes]
            parts.append("</div><figcaption>Coverage: cases per layout kind and size, one map "
                         "per dtype (a case with several layout kinds counts in each; red "
                         "border: failing cases there).</figcaption></figure>")
        else:
            parts.append("<p class='meta'>no case ran: nothing to draw</p>")
        parts.append(f"<figure>{verdicts_svg(r.counts)}</figure>")
        parts.append(f"<figure>{errors_svg(r.records)}</figure>")
        parts.append(f"<figure>{over_time_svg(r.records)}</figure>")
        parts.append("</div>")
        parts.append(source_html(r, modes))  # the kernel source, lines marked
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)
