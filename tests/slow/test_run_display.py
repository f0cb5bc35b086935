"""End to end, as a person sees it: the live display of `fuzzkern run` in a real terminal
(tmux), and the HTML report in a real browser (headless Chromium)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.slow


def _require(tool: str, *names: str) -> str:
    for name in names or (tool,):
        exe = shutil.which(name)
        if exe:
            return exe
    if os.environ.get("FUZZKERN_REQUIRE_TOOLS"):
        pytest.fail(f"{tool} is required here (FUZZKERN_REQUIRE_TOOLS is set)")
    pytest.skip(f"{tool} is not installed")


def _fuzzkern(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in (sys.executable, "-m", "fuzzkern", *args))


def test_live_display_in_a_terminal(tmp_path):
    tmux = _require("tmux")
    sock = f"fuzzkern-test-{uuid.uuid4().hex[:8]}"
    # (env -u: the pane is 160 columns; a COLUMNS inherited from the test's own environment
    # would make rich draw for another width)
    command = (f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES "
               + _fuzzkern("run", "fuzzkern.targets.builtin:axpy", "--budget", "8s", "--no-db",
                           "--no-corpus")
               + "; echo EXIT=$?; sleep 60")
    subprocess.run([tmux, "-L", sock, "new-session", "-d", "-x", "160", "-y", "50", command],
                   check=True)
    row = re.compile(r"builtin\.axpy\s*│\s*(\w+)\s*│\s*(\d+)\s*│")
    seen: list[tuple[str, int]] = []
    screen = ""
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            screen = subprocess.run([tmux, "-L", sock, "capture-pane", "-p"],
                                    capture_output=True, text=True, check=True).stdout
            m = row.search(screen)
            if m:
                seen.append((m.group(1), int(m.group(2))))
            if "EXIT=" in screen:
                break
            time.sleep(0.5)
    finally:
        subprocess.run([tmux, "-L", sock, "kill-server"], check=False)
    assert "EXIT=0" in screen, screen
    running = [n for state, n in seen if state in ("running", "waiting")]
    # the table was live: it showed the target while it ran, with a count that grew
    assert len(set(running)) >= 2 and running == sorted(running), seen
    assert seen[-1][1] >= max(running) > 0
    assert "fuzzkern summary" in screen


def test_html_report_in_headless_chromium(tmp_path):
    chromium = _require("chromium", "chromium", "chromium-browser", "google-chrome",
                        "google-chrome-stable")
    res = subprocess.run(
        [sys.executable, "-m", "fuzzkern", "run", "fuzzkern.targets.builtin:vector_add",
         "--budget", "120s", "--max-examples", "30", "--seed", "1", "--no-db", "--no-corpus",
         "--html", "report.html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    url = (tmp_path / "report.html").as_uri()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,1400"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True,
                         text=True, timeout=120).stdout
    assert re.search(r'<svg class="heatmap"[^>]*data-dtype="float32"', dom)
    # 1-D inputs cannot be permuted: 4 layout kinds x 5 size classes per dtype
    assert len(re.findall(r'<rect class="cell"', dom)) >= 20
    assert ">permuted<" not in dom and 'class="pass-line"' in dom
    assert '<svg class="errors"' in dom and '<rect class="bin"' in dom
    assert '<svg class="verdicts"' in dom and 'data-verdict="pass"' in dom
    # the kernel's source, its lines marked (docs/coverage.md)
    assert re.search(r'<details class="kernel-source"', dom)
    assert re.search(r'<tr class="reached" data-line="\d+"', dom)
    shot = tmp_path / "report.png"
    subprocess.run([chromium, *flags, f"--screenshot={shot}", url], capture_output=True,
                   timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # drawn, not blank
