"""The HTML report (issue 32, item 6): the run's seed, versions and command line, failure
text that wraps instead of scrolling, links from the summary to each failure, accuracy
findings with their figures, and findings over the cases."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from fuzzkern.case.model import Case, TensorCase
from fuzzkern.judge.outcome import Comparison, ModeResult, Outcome
from fuzzkern.report import html as htmlreport
from fuzzkern.search.engine import Failure, TargetResult

HERE = os.path.dirname(os.path.abspath(__file__))
MISBEHAVING = os.path.join(HERE, "targets", "misbehaving.py")


def _result():
    case = Case({"N": 3}, {"x": TensorCase.build((3,), "float32")})
    r = TargetResult("ops.add", "ops.py::add", cases=6, slices=1)
    r.failures = [Failure("ops.add", case, Outcome("kernel-bug", "wrong")),
                  Failure("ops.add", case, Outcome("oob", "past the end"))]
    r.records = [("float32", "contiguous", "2-16", v, 0.5)
                 for v in ("pass", "kernel-bug", "pass", "accuracy", "oob", "pass")]
    close = Comparison(ok=False, mismatched=2, total=3, max_abs_error=3e-3,
                       max_rel_error=2e-3, max_ulp_error=17.0, accuracy=True,
                       tolerance="rtol=0.001 atol=1e-05 (float16 default)")
    r.accuracy = [(case, Outcome("accuracy", "interpret: within 8x of what rounding explains",
                                 modes={"interpret": ModeResult("interpret", "accuracy",
                                                                close)}))]
    return r


def test_the_page_has_the_run_links_wrapped_text_accuracy_figures_and_time():
    long_line = "x" * 3000
    page = htmlreport.render(
        [_result()], budget=60, elapsed=61.0, modes=("interpret",),
        failures_text={"ops.add": ["ops.add: kernel-bug " + long_line, "ops.add: oob"]},
        run_info={"seed": "1234", "command": "fuzzkern run ops.py --budget 60s",
                  "repeat": "fuzzkern run ops.py --seed 1234 --max-examples 6 --no-db",
                  "versions": "fuzzkern 0.1.0, torch 2.13.0, triton 3.9.0", "date": "d"})
    assert "<dd class='seed'>1234</dd>" in page
    assert "<dd class='command'>fuzzkern run ops.py --budget 60s</dd>" in page
    assert "torch 2.13.0, triton 3.9.0" in page and "--max-examples 6 --no-db" in page
    # each failure of the summary links to its diagnosis
    links = re.findall(r"<a href='#(f-ops\.add-\d)'>([\w-]+)</a>", page)
    assert links == [("f-ops.add-0", "kernel-bug"), ("f-ops.add-1", "oob")]
    for anchor, _ in links:
        assert f"id='{anchor}'" in page
    # failure text wraps, whole, instead of being cut or scrolling sideways
    assert re.search(r"pre \{[^}]*white-space: pre-wrap", page)
    assert "overflow-x" not in page and long_line in page
    # the accuracy finding with its figures
    assert ("figures: accuracy: 2/3 elements differ (max abs 0.003, max rel 0.002, max 17 ulp"
            in page)
    # findings over the cases: 2 failing cases and 1 accuracy finding among 6
    svg = htmlreport.over_time_svg(_result().records)
    assert 'class="failing"' in svg and 'data-total="2"' in svg
    assert re.search(r'class="accuracy"[^>]*data-total="1"', svg)


def test_fuzzkern_run_writes_the_run_header(tmp_path):
    res = subprocess.run([sys.executable, "-m", "fuzzkern", "run", f"{MISBEHAVING}::raises",
                          "--budget", "20s", "--no-db", "--no-corpus", "--seed", "7",
                          "--max-examples", "20", "--html", "r.html"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 1, res.stdout + res.stderr
    page = (tmp_path / "r.html").read_text()
    assert "<dd class='seed'>7</dd>" in page
    assert re.search(r"<dd class='command'>fuzzkern run \S*misbehaving.py::raises --budget "
                     r"20s .*--html r.html</dd>", page)
    assert re.search(r"<dd class='versions'>fuzzkern \S+, torch \S+, triton \S+, python ",
                     page)
    # (the target's id is its dotted path from the project root: tests.unit.targets....)
    assert re.search(r"<a href='#f-\S*misbehaving::raises-0'>error</a>", page)
    assert re.search(r"id='f-\S*misbehaving::raises-0'", page)


def _passing() -> TargetResult:
    r = TargetResult("ops.copy", "ops.py::copy", cases=4, slices=1)
    r.records = [("float32", "contiguous", "2-16", "pass", 0.1)] * 4
    return r


def test_failures_come_first_and_each_finding_is_one_box():
    """Issue 43, point 7: a failing target before the passing one (in the table and the
    sections), its diagnosis before its plots; an accuracy finding seen at three cases is one
    box that counts the others."""
    r = _result()
    r.accuracy = r.accuracy * 3  # one finding (one location), three cases
    page = htmlreport.render([_passing(), r], budget=60, elapsed=61.0, modes=("interpret",),
                             failures_text={"ops.add": ["ops.add: kernel-bug", "ops.add: oob"]})
    assert page.index("id='t-ops.add'") < page.index("id='t-ops.copy'")
    assert page.index("<a href='#t-ops.add'>") < page.index("<a href='#t-ops.copy'>")
    section = page[page.index("id='t-ops.add'"):page.index("id='t-ops.copy'")]
    assert section.index("class='failure'") < section.index("<svg")
    assert section.count("<pre class='accuracy'>") == 1
    assert "(2 more case(s) of this finding)" in section


def test_nan_and_inf_failures_have_their_own_bin():
    """A comparison whose only mismatches are NaN/inf positions has no finite ratio (the
    oracle's is over the finite pairs: 0): its case goes to the NaN/inf bin, not to 0."""
    from fuzzkern.search.engine import case_record

    case = Case({"N": 3}, {"x": TensorCase.build((3,), "float32")})
    nan = Comparison(ok=False, mismatched=1, total=3, nonfinite_mismatches=1, bound_ratio=0.0,
                     tolerance="rtol=1.3e-06 atol=1e-05 (float32 default)")
    rec = case_record(case, Outcome("kernel-bug", "nan", modes={
        "interpret": ModeResult("interpret", "mismatch", nan)}))
    assert rec[4] == float("inf")
    svg = htmlreport.errors_svg([rec, ("float32", "contiguous", "2-16", "pass", 0.0)])
    assert re.search(r'data-label="NaN/inf" data-count="1" data-failures="1"', svg), svg
    assert re.search(r'data-label="0" data-count="1" data-failures="0"', svg)


def _texts_fit(svg: str) -> list[str]:
    """The SVG's texts that would run past its edges (0.6 em per character: wider than the
    average of a sans-serif font, so a text that fits here fits drawn)."""
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
    out = []
    for attrs, text in re.findall(r"<text([^>]*)>([^<]*)</text>", svg):
        x = float(re.search(r'\bx="([\d.-]+)"', attrs).group(1))
        size = float(re.search(r'font-size="([\d.]+)"', attrs).group(1))
        length = 0.6 * size * len(text)
        anchor = re.search(r'text-anchor="(\w+)"', attrs)
        lo, hi = {"middle": (x - length / 2, x + length / 2), "end": (x - length, x)}.get(
            anchor.group(1) if anchor else "start", (x, x + length))
        if lo < 0 or hi > width:
            out.append(text)
    return out


def test_no_caption_is_cut():
    r = _result()
    assert _texts_fit(htmlreport.over_time_svg(r.records)) == []
    assert _texts_fit(htmlreport.errors_svg(r.records)) == []
    assert _texts_fit(htmlreport.verdicts_svg(r.counts)) == []
