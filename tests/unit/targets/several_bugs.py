"""A target with three distinct bugs: an exception from 5 elements on, negatives flushed to 0
(output 0), and a sum that drops the last element of exactly 3 (output 1)."""

import torch

import fuzzkern
from fuzzkern import strategies as fks


def _launcher(x):
    n = x.shape[0]
    if n >= 5:
        raise ValueError("at most 4 elements")
    y = torch.where(x < 0, torch.zeros_like(x), x)
    s = x[:-1].sum() if n == 3 else x.sum()
    return y, s.reshape(1)


three_bugs = fuzzkern.Target(
    launcher=_launcher,
    reference=lambda x: (x, x.sum().reshape(1)),
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"], layout=False)),
    dims={"N": fks.sizes(max_value=16)},
)
