"""The fuzzkern target of :mod:`plain_kernel` (kept apart, as a user would)."""

from plain_kernel import scale, scale_reference

import fuzzkern
from fuzzkern import strategies as fks

scale_target = fuzzkern.Target(
    launcher=scale, reference=scale_reference, dims={"N": fks.sizes(max_value=16)},
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
)
