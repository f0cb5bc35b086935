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


UNNAMED = textwrap.dedent("""
    import json, sys, torch
    from triton.runtime.autotuner import Autotuner
    sys.path.insert(0, sys.argv[1])
    import runtime_autotuners as R
    from fuzzkern.introspect import autotuners_of, forced_configs

    out = {"found": [sorted(autotuners_of(f)) for f in (R.fill, R.add_one, R.copy)]}
    run = Autotuner.run
    detail = {}
    with forced_configs({}, [detail]):  # compiled mode's scope for a case naming no config
        out["fill"] = R.fill(torch.zeros(16)).tolist()
        out["add_twice"] = R.add_one(R.add_one(torch.full((8,), 5.0))).tolist()
        out["copy"] = R.copy(torch.arange(10.0)).tolist()
    out["detail"] = detail
    out["bench"], out["custom_runs"] = R.BENCH["calls"], R.CustomTuner.runs
    forced = {}
    with forced_configs({"accumulate": 2}, [forced]):  # named: as on a tuning-cache hit
        out["add_forced"] = R.add_one(torch.full((8,), 5.0)).tolist()
    out["forced"] = forced
    upstream = {}
    with forced_configs(None, [upstream]):  # Target(autotune="benchmark"): upstream's run
        R.fill(torch.zeros(16))
    out["upstream"], out["bench_after"] = upstream, R.BENCH["calls"]
    out["restored"] = Autotuner.run is run and "run" in vars(R.CustomTuner)
    print(json.dumps(out))
""")


def test_unnamed_autotuners_reached_at_run_time_run_one_config_and_record_it():
    """A case that names no config for an autotuner (one found only at run time: Triton's own
    with an early_config_prune and with reset_to_zero, a user's subclass with its own run)
    runs its first pruned config, benchmarking nothing, and records which config ran."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", UNNAMED, TARGETS], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["found"] == [[], [], []]  # nothing to find in the launchers' code
    assert got["bench"] == 0 and got["custom_runs"] == 0  # never benchmarked, own run unused
    assert got["fill"] == [8.0] * 8 + [0.0] * 8  # config 0 pruned: config 1 (BLOCK=8) ran
    # a cold tuning key: reset_to_zero once, as upstream after benchmarking; then a cache hit
    assert got["add_twice"] == [2.0] * 4 + [0.0] * 4
    assert got["copy"] == [float(i) for i in range(10)]
    assert got["detail"] == {
        "configs_used": {"pruned_fill": 1, "accumulate": 0, "_copy": 0},
        "config_counts": {"pruned_fill": 3, "accumulate": 3, "_copy": 3}}
    assert got["add_forced"] == [6.0] * 8  # forced config 2 (BLOCK=16): no reset
    assert got["forced"]["configs_used"] == {"accumulate": 2}
    # upstream's run benchmarks the two configs left after pruning, and records its choice
    assert got["bench_after"] == 2 and got["upstream"]["configs_used"] == {"pruned_fill": 1}
    assert got["restored"]
