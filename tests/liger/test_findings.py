"""The upstream Liger-Kernel bugs listed in docs/findings.md still show against the pinned
version (liger-kernel 0.8.5, the ``liger`` extra), each through its standalone reproducer, on
the CPU in Triton's interpreter. Skipped without liger-kernel; a reproducer that stops showing
its bug (exit 0: fixed upstream) fails here, so docs/findings.md gets updated."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
REPRO = os.path.join(ROOT, "examples", "liger", "repro")
PINNED = "0.8.5"

try:
    VERSION: str | None = importlib.metadata.version("liger-kernel")
except importlib.metadata.PackageNotFoundError:
    VERSION = None

pytestmark = [
    pytest.mark.liger,
    pytest.mark.skipif(VERSION is None, reason="liger-kernel is not installed (the liger extra: "
                       f"pip install --no-deps liger-kernel=={PINNED})"),
    pytest.mark.skipif(VERSION is not None and VERSION != PINNED,
                       reason=f"the findings are about liger-kernel {PINNED}, not {VERSION}"),
]

FINDINGS = {
    "ce_ignored_rows_zeroed": "logits rows [0] changed by a forward-only call",
    "ce_strided_grad": "grad [[4.0, -4.0], [-2.0, 2.0]]",
    "rope_seq_len_1": "2 of 4 (batch, head) rows of q wrong",
    "relu_squared_nan": "relu_squared([nan, 2]) = [0.0, 4.0]",
    "tvd_all_ignored": "ZeroDivisionError",
}


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_reproducer_still_shows_the_bug(name):
    # CPU and the interpreter by default; bench/gpu_suite.sh liger sets cuda
    env = dict(os.environ, REPRO_DEVICE=os.environ.get("LIGER_REPRO_DEVICE", "cpu"))
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, f"{name}.py"], cwd=REPRO, env=env,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.startswith("BUG: "), out
    if env["REPRO_DEVICE"] == "cpu":  # what the interpreter shows; a GPU may differ in detail
        assert FINDINGS[name] in out, out


def test_every_reproducer_is_listed_in_findings_md():
    with open(os.path.join(ROOT, "docs", "findings.md")) as fh:
        text = fh.read()
    scripts = sorted(f[:-3] for f in os.listdir(REPRO) if f.endswith(".py") and f[0] != "_")
    assert scripts == sorted(FINDINGS)
    for name in scripts:
        assert f"examples/liger/repro/{name}.py" in text, name
