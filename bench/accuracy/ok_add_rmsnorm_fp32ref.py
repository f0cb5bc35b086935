"""Correct: fused residual add + RMSNorm (Liger's ``fused_add_rms_norm``), judged against a
reference that computes in float32, as Liger's own tests write it.

The kernel returns ``h = x + residual`` (in the input dtype) and ``y = rms_norm(h) * w``,
with fp32 statistics. The reference upcasts with ``.float()`` (HuggingFace style: ``hidden =
hidden.to(torch.float32)``): fuzzkern hands it float64 copies, so ``.float()`` *rounds* the
inputs' float64 images to float32 and the whole reference runs in float32, no more accurate
than the kernel. The kernel is judged against the reference's own rounding. fp32, fp16, bf16.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "fused add + RMSNorm, two outputs, reference computed in float32 (.float())",
    "style": "Liger-Kernel fused_add_rms_norm and its tests",
    "expected_verdicts": [],
}


@triton.jit
def _fused_add_rms_norm_fwd(Y_ptr, S_ptr, X_ptr, R_ptr, W_ptr, x_row_stride, x_col_stride,
                            r_row_stride, r_col_stride, n_cols, n_cols_f, eps,
                            BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    X_row = tl.load(X_ptr + row * x_row_stride + cols * x_col_stride, mask=mask, other=0)
    R_row = tl.load(R_ptr + row * r_row_stride + cols * r_col_stride, mask=mask, other=0)
    S_row = X_row + R_row
    tl.store(S_ptr + row * n_cols + cols, S_row, mask=mask)
    S_row = S_row.to(tl.float32)
    mean_square = tl.sum(S_row * S_row, axis=0) / n_cols_f
    rstd = tl.rsqrt(mean_square + eps)
    W_row = tl.load(W_ptr + cols, mask=mask, other=0).to(tl.float32)
    Y_row = S_row * rstd * W_row
    tl.store(Y_ptr + row * n_cols + cols, Y_row.to(Y_ptr.dtype.element_ty), mask=mask)


def fused_add_rms_norm(x, residual, w, eps=1e-6):
    n_rows, n_cols = x.shape
    w = w.contiguous()
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    s = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    _fused_add_rms_norm_fwd[(n_rows,)](y, s, x, residual, w, x.stride(0), x.stride(1),
                                       residual.stride(0), residual.stride(1), n_cols,
                                       float(n_cols), eps,
                                       BLOCK_SIZE=triton.next_power_of_2(n_cols))
    return s, y


def reference(x, residual, w):
    hidden = x.float() + residual.float()
    variance = hidden.pow(2).mean(-1, keepdim=True)
    y = w.float() * (hidden * torch.rsqrt(variance + 1e-6))
    return hidden, y


target = fuzzkern.Target(
    name="accuracy.ok_add_rmsnorm_fp32ref",
    launcher=fused_add_rms_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "N"), expand=True),
        residual=fks.tensors(("M", "N"), dtype_of="x", expand=True),
        w=fks.tensors(("N",), dtype_of="x"),
    ),
    dims={"M": fks.sizes(max_value=8), "N": fks.sizes(max_value=512)},
    output_names=("residual_out", "y"),
)
