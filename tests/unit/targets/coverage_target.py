"""Targets over tests/unit/_coverage_kernels.py for tests/unit/test_coverage.py."""

import math

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks
from tests.unit._coverage_kernels import branchy


def _branchy_reference(x, big, BLOCK):
    n = x.numel()
    y = x * 2 if n > big else x + 1
    return torch.where(y > 0, y, torch.full_like(y, float(math.ceil(n / BLOCK))))


branchy_target = fuzzkern.Target(
    name="coverage.branchy",
    launcher=branchy,
    reference=_branchy_reference,
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=["float32"]),
        big=st.integers(1, 64),
        BLOCK=st.sampled_from([8, 16]),
    ),
    dims={"N": fks.sizes(max_value=64)},
)
