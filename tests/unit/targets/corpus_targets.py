"""Small pure-torch targets for corpus, replay and explanation tests: each is wrong in one
known way, so what an explanation must say is known. No Triton kernel: a case costs
microseconds in the worker."""

import torch

import fuzzkern
from fuzzkern import strategies as fks

DIMS = {"N": fks.sizes(max_value=8)}


def _wrong_when_strided(x):
    # as if a kernel assumed x contiguous: wrong for any other layout
    return x * 2 if x.is_contiguous() else x * 2 + 1


def _wrong_with_nan(x):
    return torch.nan_to_num(x, nan=0.0) * 2


def _wrong_in_half(x):
    return x * 2 + 1 if x.dtype == torch.float16 else x * 2


def _right(x):
    return x * 2


def _double(x):
    return x * 2


strided = fuzzkern.Target(
    launcher=_wrong_when_strided, reference=_double, dims=DIMS,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
)
nan_inputs = fuzzkern.Target(
    launcher=_wrong_with_nan, reference=_double, dims=DIMS,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
)
half = fuzzkern.Target(
    launcher=_wrong_in_half, reference=_double, dims=DIMS,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float16", "float32"])),
)
fixed = fuzzkern.Target(
    launcher=_right, reference=_double, dims=DIMS,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float16", "float32"])),
)
# the same launcher, but its input was renamed: old entries no longer fit
renamed = fuzzkern.Target(
    launcher=lambda y: y * 2, reference=lambda y: y * 2, dims=DIMS,
    inputs=fks.inputs(y=fks.tensors(("N",), dtypes=["float32"])),
)
