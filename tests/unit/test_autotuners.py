"""Forcing configs (compiled mode's :func:`fuzzkern.introspect.forced_configs`) on autotuners the
way libraries write them: Triton's own under ``@triton.heuristics``, and a subclass with its own
``run`` and a cache that is not a dict (FlagGems' ``LibTuner``: ``dict(self.cache)`` raised
``TypeError: 'int' object is not iterable``, reported as the library's error at 1x1x1).

The launches run in a subprocess under ``TRITON_INTERPRET=1``, where a ``JITFunction``'s ``run``
is the interpreter's: forced_configs is then exercised as in compiled mode, on the CPU.
"""

import json
import os
import subprocess
import sys
import textwrap

TARGETS = os.path.join(os.path.dirname(__file__), "targets")

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    sys.path.insert(0, sys.argv[1])
    import library_autotuners as L
    from fuzzkern.introspect import autotuners_of, forced_configs

    def fill(out):
        L.lib_fill[(1,)](out, out.numel())
        return out

    def scale(out):
        L.scale[(1,)](out, out.numel())
        return out

    found = sorted(autotuners_of(fill)) + sorted(autotuners_of(scale))
    out = {}
    for index in range(3):
        with forced_configs({"lib_fill": index, "scale": index}):
            out[f"fill{index}"] = fill(torch.zeros(16)).tolist()
            out[f"scale{index}"] = scale(torch.zeros(16)).tolist()
    out["found"] = found
    out["benchmarked"] = L.LibStyleTuner.benchmarked
    out["writes"] = L.lib_fill.cache.writes
    out["own_run_back"] = vars(L.LibStyleTuner)["run"].__module__ == "library_autotuners"
    print(json.dumps(out))
""")


def test_configs_are_forced_on_library_autotuners_and_nothing_is_benchmarked():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, TARGETS], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["found"] == ["lib_fill", "scale"]
    for index, block in enumerate((4, 8, 16)):
        # the forced config's BLOCK elements written, the rest untouched
        assert got[f"fill{index}"] == [float(block)] * block + [0.0] * (16 - block)
        assert got[f"scale{index}"] == [block + 1.0] * block + [0.0] * (16 - block)  # EVEN=1
    assert got["benchmarked"] == 0  # the library's own run (its benchmarking) never ran
    assert got["writes"] == 0  # and its store was neither copied nor written
    assert got["own_run_back"]
