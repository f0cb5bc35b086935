"""Several GPUs: one process per GPU under ``fuzzkern run -j`` and one xdist worker per GPU
under ``pytest -n``, each case's report naming the physical GPU it ran on; a device fault on
one GPU leaves the process on the other alone.

Marked ``gpu`` and skipped with fewer than two GPUs. Run with ``bench/gpu_suite.sh`` on a
machine with two (the throughput side: ``bench/scaling.py``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import pytest

from fuzzkern.execution.devices import machine_devices
from fuzzkern.search import engine, schedule
from fuzzkern.target import loader

HERE = os.path.dirname(__file__)
PLANTED = os.path.join(HERE, "planted_compiled.py")
DEVICES = machine_devices()

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(len(DEVICES) < 2, reason=f"needs two GPUs; this machine has "
                       f"{len(DEVICES)}"),
]

#: "NVIDIA H200 (CUDA_VISIBLE_DEVICES=1, pci 0000:19:00.0)" -> ("1", "0000:19:00.0")
_LABEL = re.compile(r"CUDA_VISIBLE_DEVICES=([^,)]+), pci ([0-9a-f:.]+)\)")


def _pin_and_bus(label: str) -> tuple[str, str]:
    m = _LABEL.search(label)
    assert m, f"device label without pin and PCI bus id: {label!r}"
    return m.group(1), m.group(2)


def test_parallel_campaign_runs_one_process_per_gpu_and_a_fault_stays_on_its_gpu():
    """-j 2 over two targets: the first slice of each runs at the same time in its own
    process, each process pinned to its own GPU. One target's kernel faults the device
    (illegal address) on its GPU; the other keeps passing on the other GPU."""
    devices = DEVICES[:2]
    lts = loader.load_all([f"{PLANTED}::illegal", "fuzzkern.targets.builtin:vector_add"])
    opts = engine.CampaignOptions(budget=40.0, modes=("compiled",), seed=0, corpus=None)
    illegal, add = schedule.run_campaign(lts, opts, jobs=2, devices=devices)

    assert {f.outcome.verdict for f in illegal.failures} == {"crash"}
    assert illegal.slices == 1  # it left the campaign with its failure, after round one
    assert not add.failures and add.error is None
    assert add.counts["pass"] >= 50 and set(add.counts) <= {"pass", "precondition"}

    pins_illegal = {_pin_and_bus(d) for d in illegal.devices}
    pins_add = {_pin_and_bus(d) for d in add.devices}
    assert len(pins_illegal) == 1  # one slice, one process, one GPU
    # both processes pinned, to the two GPUs given, which are two physical devices
    both = pins_illegal | pins_add
    assert {pin for pin, _ in both} == set(devices)
    assert len({bus for _, bus in both}) == 2
    # vector_add's first slice ran beside the fault, on the other GPU, and passed
    assert pins_add - pins_illegal


_INNER_CONFTEST = """
import json, os

def pytest_runtest_logreport(report):
    # the xdist controller sees every worker's report; report.node is the worker
    if report.when != "call" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    node = getattr(report, "node", None)
    worker = node.gateway.id if node is not None else None
    with open({out!r}, "a") as f:
        f.write(json.dumps({{"nodeid": report.nodeid, "outcome": report.outcome,
                            "worker": worker,
                            "fuzzkern": dict(report.sections).get("fuzzkern", "")}}) + "\\n")
"""


def test_xdist_workers_each_fuzz_on_their_own_gpu(pytester, monkeypatch):
    """pytest -n 2 over four built-in targets in compiled mode: worker gwK's items ran on GPU
    K mod 2 (the pin and the PCI bus id in each item's fuzzkern report section)."""
    # the inner session is a session of its own, not one of this session's xdist workers
    for name in ("CUDA_VISIBLE_DEVICES", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                 "PYTEST_XDIST_TESTRUNUID", "FUZZKERN_GPUS", "CI"):
        monkeypatch.delenv(name, raising=False)
    out = pytester.path / "reports.jsonl"
    pytester.makeconftest(_INNER_CONFTEST.format(out=str(out)))
    pytester.makepyfile(test_builtins=textwrap.dedent("""
        from fuzzkern.targets.builtin import axpy, matmul, row_sum, vector_add
    """))
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "xdist", "-p", "no:cacheprovider", "-rA",
        "--fuzzkern-modes", "compiled", "--fuzzkern-budget", "15s",
        "--fuzzkern-seed", "0", "--fuzzkern-db", "none", timeout=300)
    sys.stdout.write(result.stdout.str()[-4000:])
    result.assert_outcomes(passed=4)
    reports = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(reports) == 4
    buses: dict[str, set[str]] = {}
    for r in reports:
        labels = re.findall(r"compiled on: (.*)", r["fuzzkern"])
        assert labels, f"{r['nodeid']}: no device in its report section:\n{r['fuzzkern']}"
        k = int(r["worker"].removeprefix("gw"))
        for label in labels[0].split("; "):
            pin, bus = _pin_and_bus(label)
            assert pin == DEVICES[k % len(DEVICES)], (r["worker"], label)
            buses.setdefault(r["worker"], set()).add(bus)
    assert len(buses) == 2, f"both workers should have run items: {buses}"
    assert all(len(b) == 1 for b in buses.values())
    assert len(set.union(*buses.values())) == 2  # two physical GPUs
