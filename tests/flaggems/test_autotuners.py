"""FlagGems' ``flag_gems.mm`` reaches its ``LibTuner`` through ``@libentry`` (a launch wrapper
that caches the kernel per argument key), which nothing in a launcher's code names: in the
interpreter each call runs one config, never benchmarked (``Autotuner._bench`` counted), and
the session says which; a forced config runs even where ``@libentry`` cached an earlier
call's kernel for the same arguments."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap

import pytest
import torch

try:
    VERSION: str | None = importlib.metadata.version("flag_gems")
except importlib.metadata.PackageNotFoundError:
    VERSION = None

pytestmark = [
    pytest.mark.skipif(VERSION != "5.0.2", reason="written for FlagGems 5.0.2 (pip install "
                       "--no-deps flag_gems==5.0.2 sqlalchemy==2.0.48)"),
    pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU answers for itself here "
                       "(tests/gpu/test_autotuners_gpu.py runs flag_gems.mm compiled)"),
]

SCRIPT = textwrap.dedent("""
    import json, os, torch
    os.environ.setdefault("GEMS_VENDOR", "nvidia")
    from triton.runtime.autotuner import Autotuner
    from fuzzkern.gpus import assumed_gpu
    from fuzzkern.execution.interpreter.core import interpreter_mode

    calls = {"bench": 0}
    original = Autotuner._bench

    def counted(self, *args, **kwargs):  # counts, then benchmarks as Triton does
        calls["bench"] += 1
        return original(self, *args, **kwargs)

    Autotuner._bench = counted
    out = {"cases": []}
    with assumed_gpu("H200"):
        import flag_gems
        # two new shapes (unforced), then one shape twice with two forced configs
        for (m, n, k), configs in [((3, 5, 7), {}), ((16, 8, 4), {}),
                                   ((6, 12, 10), {"mm_kernel_general": 1}),
                                   ((6, 12, 10), {"mm_kernel_general": 2})]:
            a, b = torch.randn(m, k), torch.randn(k, n)
            record = {}
            with interpreter_mode(configs=configs) as session:
                session.record = record
                c = flag_gems.mm(a, b)
            out["cases"].append({"used": session.configs_used, "record": record,
                                 "close": bool(torch.allclose(c, a @ b, atol=1e-4))})
    out["bench"] = calls["bench"]
    print(json.dumps(out))
""")


def test_flag_gems_mm_runs_one_config_per_call_in_the_interpreter_never_benchmarked():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["bench"] == 0
    cases = got["cases"]
    assert all(c["close"] for c in cases), cases
    assert [c["used"] for c in cases] == [
        {"mm_kernel_general": 0}, {"mm_kernel_general": 0},
        {"mm_kernel_general": 1}, {"mm_kernel_general": 2}]  # the second: past libentry's cache
    assert cases[3]["record"] == {"configs_used": {"mm_kernel_general": 2},
                                  "config_counts": {"mm_kernel_general": 22}}
