"""Small targets for the adversarial suite: plain torch launchers (no Triton compile), so each
case takes milliseconds and a run's timing is controlled by the launchers themselves."""

import os
import sys
import time

from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


def _wrong_above_3(x):
    y = x * 1
    if x.shape[0] > 3:
        y[0] = 7.0
    return y


def _slow_wrong(x):
    # every failing case takes a while: shrinking is slow, so a signal can land in it
    y = x * 1
    if x.shape[0] > 3:
        mark = os.environ.get("FUZZKERN_TEST_MARK")
        if mark:  # one byte per failing case: the test sees when shrinking is under way
            with open(mark, "a") as fh:
                fh.write("x")
        time.sleep(float(os.environ.get("FUZZKERN_TEST_SLOW", "0.3")))
        y[0] = 7.0
    return y


def _spin(x, MODE):
    if MODE == 1:
        mark = os.environ.get("FUZZKERN_TEST_MARK")
        if mark:
            open(mark, "a").close()
        while True:  # a kernel that never returns
            pass
    return x * 1


def _chatty(x):
    # a kernel that prints a lot, at the Python and the C level
    print("KERNEL-STDOUT " + "x" * 200_000)
    print("KERNEL-STDERR", file=sys.stderr)
    y = x * 1
    if x.shape[0] > 2:
        y[0] = 7.0
    return y


_X = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]))
_DIMS = {"N": fks.sizes(max_value=64)}

wrong = fuzzkern.Target(launcher=_wrong_above_3, reference=lambda x: x, inputs=_X, dims=_DIMS)

slow_wrong = fuzzkern.Target(launcher=_slow_wrong, reference=lambda x: x, inputs=_X, dims=_DIMS)

spins = fuzzkern.Target(
    launcher=_spin, reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), MODE=st.just(1)),
    dims={"N": fks.sizes(max_value=8)}, timeout=120.0,
)

chatty = fuzzkern.Target(launcher=_chatty, reference=lambda x: x, inputs=_X, dims=_DIMS)
