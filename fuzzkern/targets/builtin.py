"""The built-in targets: the seed's kernels, fuzzable with no setup (``fuzzkern run``).

Every module-level :class:`fuzzkern.Target` here is a target. The kernels live in
:mod:`fuzzkern.targets.kernels`; this module only says how to draw their inputs and what torch
computes instead. Dims are bounded so that a typical case costs well under 0.3 s in Triton's
interpreter (about 1-5 ms per program instance plus a few ms per dot tile-iteration on CPU).

Example::

    fuzzkern run fuzzkern.targets.builtin:vector_add --budget 60s
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.targets import kernels

FLOATS = ["float16", "float32", "bfloat16"]

# Matmul tiles are 16 or 32 wide (tl.dot needs >= 16 on GPUs); 80 keeps the worst case (5x5
# tiles of 16, 5 K steps) near 0.3 s in the interpreter.
MATMUL_DIMS = {name: fks.sizes(max_value=80) for name in ("M", "N", "K")}
TILES = st.sampled_from([16, 32])
GROUPS = st.sampled_from([1, 2, 8])


def _matmul_inputs(**meta: object) -> object:
    return fks.inputs(
        a=fks.tensors(("M", "K"), dtypes=["float16"], expand=True),
        b=fks.tensors(("K", "N"), dtype_of="a", expand=True),
        **meta,
    )


def _matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


vector_add = fuzzkern.Target(
    name="builtin.vector_add",
    launcher=kernels.vector_add,
    reference=lambda x, y: x + y,
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=FLOATS, expand=True),
        y=fks.tensors(("N",), dtype_of="x", expand=True),
        BLOCK=st.sampled_from([64, 128, 256]),
    ),
    dims={"N": fks.sizes(max_value=4096)},
)

matmul = fuzzkern.Target(
    name="builtin.matmul",
    launcher=kernels.matmul,
    reference=_matmul_reference,
    inputs=_matmul_inputs(BLOCK_M=TILES, BLOCK_N=TILES, BLOCK_K=TILES, GROUP_M=GROUPS),
    dims=MATMUL_DIMS,
    reduction="K",
)

matmul_relu = fuzzkern.Target(
    name="builtin.matmul_relu",
    launcher=kernels.matmul_relu,
    # The kernel's ReLU keeps NaN (``x < 0 ? 0 : x``), exactly like torch.relu.
    reference=lambda a, b: torch.relu(a @ b),
    inputs=_matmul_inputs(BLOCK_M=TILES, BLOCK_N=TILES, BLOCK_K=TILES, GROUP_M=GROUPS),
    dims=MATMUL_DIMS,
    reduction="K",
)

matmul_persistent = fuzzkern.Target(
    name="builtin.matmul_persistent",
    launcher=kernels.matmul_persistent,
    reference=_matmul_reference,
    # NUM_SMS is drawn rather than read from the device, so the interpreter and the GPU run the
    # same grid, and programs own one, several or (when NUM_SMS > tiles, clamped) all tiles.
    inputs=_matmul_inputs(
        BLOCK_M=TILES, BLOCK_N=TILES, BLOCK_K=TILES, GROUP_M=GROUPS,
        NUM_SMS=st.sampled_from([1, 2, 3, 4]),
    ),
    dims=MATMUL_DIMS,
    reduction="K",
)

matmul_autotuned = fuzzkern.Target(
    name="builtin.matmul_autotuned",
    launcher=kernels.matmul_autotuned,
    reference=_matmul_reference,
    # The tile shape comes from the autotuner's configs; fuzzkern forces one per case.
    inputs=_matmul_inputs(),
    dims=MATMUL_DIMS,
    reduction="K",
)

axpy = fuzzkern.Target(
    name="builtin.axpy",
    launcher=kernels.axpy,
    reference=lambda x, y, alpha: alpha * x + y,
    inputs=fks.inputs(
        x=fks.tensors(("N",), dtypes=FLOATS, expand=True),
        y=fks.tensors(("N",), dtype_of="x", expand=True),
        # Powers of two no larger than 1: alpha*x is exact in fp32, so the kernel's fp32
        # result (with or without FMA contraction) is the correctly rounded one, and it can
        # only overflow where the exact result does.
        alpha=st.sampled_from([1.0, -1.0, 0.5, -0.25, 0.0]),
        # BLOCK divides N often enough (N = 1024, powers of two) to take the EVEN_N path.
        BLOCK=st.sampled_from([16, 32, 64]),
    ),
    dims={"N": fks.sizes(max_value=1024)},
)

row_sum = fuzzkern.Target(
    name="builtin.row_sum",
    launcher=kernels.row_sum,
    reference=lambda x: x.sum(dim=1),
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=FLOATS, expand=True),
        BLOCK_M=st.sampled_from([1, 2, 8]),
        BLOCK_N=st.sampled_from([32, 64, 128]),
    ),
    dims={"M": fks.sizes(max_value=48), "N": fks.sizes(max_value=200)},
    reduction="N",
)
