"""Targets whose cases take long for reasons of their own: many interpreted programs, one
program that never finishes, a long (simulated) compilation. Used to show that a case's own
cost tells ``slow`` from ``hang``, that compiling does not count against the timeout, and that
``--budget`` is a hard stop."""

import os
import time

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _busy_kernel(x_ptr, out_ptr, steps, STALL_AT: tl.constexpr):
    """One element per program; each program loops ``steps`` times (its cost), and program
    ``STALL_AT`` (when >= 0) loops 10**12 times: stuck."""
    pid = tl.program_id(0)
    acc = tl.load(x_ptr + pid)
    n = steps
    if pid == STALL_AT:
        n = 1_000_000_000_000
    for _ in range(n):
        acc += 0.0
    tl.store(out_ptr + pid, acc + 1.0)


def _busy(x, steps, stall_at=-1):
    out = torch.empty_like(x)
    _busy_kernel[(x.numel(),)](x, out, steps, STALL_AT=stall_at)
    return out


#: loop steps per program: a few milliseconds per program in the interpreter
STEPS = int(os.environ.get("FUZZKERN_TEST_STEPS", "150"))

#: 6000 to 8000 programs of a few ms each: ten seconds and more in the interpreter, past twice
#: the 2 s timeout; a correct kernel
many_programs = fuzzkern.Target(
    launcher=lambda x: _busy(x, STEPS),
    reference=lambda x: x + 1.0,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(min_value=6000, max_value=8000)},
    timeout=2.0,
)

#: programs 0 and 1 finish at once, program 2 never does
stalls = fuzzkern.Target(
    launcher=lambda x: _busy(x, 1, stall_at=2),
    reference=lambda x: x + 1.0,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(min_value=8, max_value=16)},
    timeout=2.0,
)

def _sleep_then_wrong(x):
    # a fixed cost per case whatever the machine (the interpreter's own speed differs by
    # Triton version and machine), then a kernel that adds 1 where the reference adds 2
    time.sleep(SLEEP)
    return _busy(x, 1)


#: seconds each case of long_and_wrong sleeps before its launch
SLEEP = 2.5

#: every case takes SLEEP seconds (well within its timeout) and is wrong: for the budget's
#: hard stop; 64+ elements leave the shrink many steps, more than fit in the budget's rest
long_and_wrong = fuzzkern.Target(
    launcher=_sleep_then_wrong,
    reference=lambda x: x + 2.0,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(min_value=64, max_value=128)},
    timeout=300.0,
)


def _compiling(x, SECONDS):
    # what a compiled launch of a kernel whose autotuner compiles many configs looks like to
    # the worker: a long compilation, then a quick launch
    with fuzzkern.compile_phase():
        time.sleep(SECONDS)
    return x * 1


#: compiles for 3 s, longer than its 1 s timeout; the launch itself is instant
compiles_long = fuzzkern.Target(
    launcher=_compiling,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), SECONDS=st.just(3.0)),
    dims={"N": fks.sizes(max_value=4)},
    timeout=1.0,
)
