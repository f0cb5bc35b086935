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
    assert "<a href='#f-misbehaving::raises-0'>error</a>" in page
    assert "id='f-misbehaving::raises-0'" in page
