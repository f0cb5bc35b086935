"""Correct: Liger-Kernel's cross entropy forward (online softmax over wide logits), per row.

One program per row of logits ``X`` (``V`` up to 4096 classes, walked in blocks of 256): a
running max ``m`` and rescaled sum ``d`` (Liger's ``liger_cross_entropy_kernel`` without
label smoothing), ``loss = m + log(d) - X[y]``, in fp32 whatever the logits' dtype. Wide
logits (``large``: ±1024, ``wide``: 2**±20) make ``lse`` and ``X[y]`` large and their
difference small. Class ids come from an int64 tensor reduced modulo ``V`` (any integer
distribution, the same in the launcher and the reference).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "cross entropy fwd, online softmax, V <= 4096, per-row loss in fp32",
    "style": "Liger-Kernel cross_entropy",
    "expected_verdicts": [],
}


@triton.jit
def liger_cross_entropy_kernel(X_ptr, X_stride, X_col_stride, Y_ptr, Y_stride, loss_ptr,
                               n_cols, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    y = tl.load(Y_ptr + program_id * Y_stride)
    X_ptr += program_id * X_stride
    m = float("-inf")
    d = 0.0
    ori_X_y = tl.load(X_ptr + y * X_col_stride).cast(tl.float32)
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets * X_col_stride, mask=X_offsets < n_cols,
                          other=float("-inf")).cast(tl.float32)
        block_max = tl.max(X_block)
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new
    lse = m + tl.log(d)
    loss = lse - ori_X_y
    tl.store(loss_ptr + program_id, loss)


def cross_entropy(x, target):
    n_rows, n_cols = x.shape
    y = target % n_cols
    loss = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    liger_cross_entropy_kernel[(n_rows,)](x, x.stride(0), x.stride(1), y, y.stride(0), loss,
                                          n_cols, BLOCK_SIZE=256)
    return loss


def reference(x, target):
    return torch.nn.functional.cross_entropy(x, target % x.shape[1], reduction="none")


# No +inf logits: Liger's recurrence computes exp(m - m_new) = exp(inf - inf) = NaN for them
# (a limit of that library's kernel, not rounding); NaN and -inf logits are kept.
FINITE = fks.values(specials=["nan", "-inf", "-0.0", "subnormal", "max", "lowest", "tiny"])

target = fuzzkern.Target(
    name="accuracy.ok_cross_entropy",
    launcher=cross_entropy,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("B", "V"), expand=True, values=FINITE),
        target=fks.tensors(("B",), dtypes=["int64"]),
    ),
    dims={"B": fks.sizes(max_value=8), "V": fks.sizes(max_value=4096)},
)
