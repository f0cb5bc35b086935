"""A target file whose import takes a while and leaves a mark (tests/unit/test_warm.py): the
start-up a worker's warm-up does before any case is timed."""

import os
import time

import torch

import fuzzkern
from fuzzkern import strategies as fks

MARK = os.environ.get("FUZZKERN_TEST_IMPORT_MARK")
if MARK:  # one line per import, with this process's id
    with open(MARK, "a") as f:
        f.write(f"{os.getpid()}\n")
time.sleep(float(os.environ.get("FUZZKERN_TEST_IMPORT_SECONDS", "0")))


def double(x):
    return x * 2


doubled = fuzzkern.Target(launcher=double, reference=lambda x: x * 2,
                          dims={"N": fks.sizes(max_value=8)},
                          inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])))
assert isinstance(torch.float32, torch.dtype)
tripled = fuzzkern.Target(launcher=lambda x: x * 3, reference=lambda x: x * 3,
                          dims={"N": fks.sizes(max_value=8)},
                          inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])))
