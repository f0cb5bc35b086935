"""Correct: Liger-Kernel's RMSNorm forward in its Llama casting mode, fp16/bf16.

Liger's ``_rms_norm_forward_kernel`` with ``casting_mode == "llama"``: the row's mean square
and ``rstd`` in fp32, then ``(x * rstd)`` rounded to the input dtype *on purpose* (what
HuggingFace's ``LlamaRMSNorm`` does: ``weight * hidden.to(input_dtype)``) and multiplied by
the weight in the input dtype. Two roundings to fp16/bf16 where a float64 reference has none:
a few output ulps, more where ``x * rstd`` falls into the subnormal range. The reference is the
plain float64 RMSNorm. Any layout of ``x``.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "Llama-mode RMSNorm: (x*rstd).to(x.dtype) * w in fp16/bf16",
    "style": "Liger-Kernel rms_norm (casting_mode='llama')",
    "expected_verdicts": [],
}


@triton.jit
def _rms_norm_forward_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, X_col_stride, W_ptr,
                             n_cols, n_cols_f, eps, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    X_row = tl.load(X_ptr + row_idx * X_row_stride + col_offsets * X_col_stride, mask=mask,
                    other=0)
    X_row_dtype = X_row.dtype
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)
    # llama casting mode: only the statistics are computed in fp32
    X_row = X_row.to(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols_f
    rstd = tl.rsqrt(mean_square + eps)
    X_row = X_row * rstd
    X_row = X_row.to(X_row_dtype)
    Y_row = X_row * W_row
    tl.store(Y_ptr + row_idx * Y_row_stride + col_offsets, Y_row, mask=mask)


def rms_norm(x, w, eps=1e-6):
    n_rows, n_cols = x.shape
    w = w.contiguous()
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    _rms_norm_forward_kernel[(n_rows,)](y, y.stride(0), x, x.stride(0), x.stride(1), w, n_cols,
                                        float(n_cols), eps,
                                        BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return y


def reference(x, w):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


target = fuzzkern.Target(
    name="accuracy.ok_rmsnorm_llama",
    launcher=rms_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16"], expand=True),
        w=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=1024)},
)
