"""Targets whose launchers misbehave on the host: they crash the process, hang, or raise.

Used to show that a worker dying or hanging becomes an outcome and fuzzing goes on.
"""

import os
import time

from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks


def _abort_launcher(x, MODE):
    if MODE == 1:
        os.abort()
    return x * 1


def _sleep_launcher(x, MODE):
    if MODE == 1:
        time.sleep(3600)
    return x * 1


def _raise_launcher(x):
    if x.shape[0] > 3:
        raise ValueError("only up to 3 elements, please")
    return x * 1


aborts = fuzzkern.Target(
    launcher=_abort_launcher,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), MODE=st.integers(0, 1)),
    dims={"N": fks.sizes(max_value=8)},
)

sleeps = fuzzkern.Target(
    launcher=_sleep_launcher,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), MODE=st.integers(0, 1)),
    dims={"N": fks.sizes(max_value=8)},
    timeout=2.0,
)

def _slow_launcher(x, MODE):
    if MODE == 1:
        time.sleep(3.0)  # past the 2 s timeout, well within twice it: slow, not hung
    return x.clone()


slow = fuzzkern.Target(
    launcher=_slow_launcher,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]), MODE=st.integers(0, 1)),
    dims={"N": fks.sizes(max_value=8)},
    timeout=2.0,
)

rejects = fuzzkern.Target(
    launcher=_raise_launcher,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
    dims={"N": fks.sizes(max_value=8)},
    preconditions=(ValueError,),
)

raises = fuzzkern.Target(
    launcher=_raise_launcher,
    reference=lambda x: x,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
    dims={"N": fks.sizes(max_value=8)},
)
