"""A recurrent (state-passing) kernel, the shape of linear-attention and RNN scans: each
program keeps a state ``h`` over ``T`` time steps, one ``tl.load`` and one ``tl.store`` per
step (``h = a * h + x[t]``, ``y[t] = h``). Written so that Triton's own interpreter runs it
too (the loop variable only in arithmetic with tensors), for the comparison of
bench/interp_speed.py. A target file for that script and for ``fuzzkern run``."""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def recurrent_fwd(x_ptr, h0_ptr, a_ptr, y_ptr, ht_ptr, T, D, stride_b, stride_t,
                  BD: tl.constexpr):
    i_b = tl.program_id(0)
    i_d = tl.program_id(1)
    offs = i_d * BD + tl.arange(0, BD)
    mask = offs < D
    h = tl.load(h0_ptr + i_b * D + offs, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    base = i_b.to(tl.int64) * stride_b
    for t in range(T):
        p = base + t * stride_t + offs  # int64: base is
        x = tl.load(x_ptr + p, mask=mask, other=0.0).to(tl.float32)
        h = a * h + x
        tl.store(y_ptr + p, h.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(ht_ptr + i_b * D + offs, h, mask=mask)


def recurrent(x, h0, a, BD=16):
    B, T, D = x.shape
    y = torch.empty((B, T, D), dtype=x.dtype, device=x.device)
    ht = torch.empty((B, D), dtype=torch.float32, device=x.device)
    recurrent_fwd[(B, triton.cdiv(D, BD))](x, h0, a, y, ht, T, D, T * D, D, BD=BD)
    return y, ht


def reference(x, h0, a):
    h = h0.double()
    ys = []
    for t in range(x.shape[1]):
        h = a.double() * h + x[:, t].double()
        ys.append(h)
    return torch.stack(ys, dim=1).to(x.dtype), h.float()


def _launch(x, h0, a):
    return recurrent(x.contiguous(), h0.contiguous(), a.contiguous())


recurrent_scan = fuzzkern.Target(
    launcher=_launch,
    reference=reference,
    inputs=fks.inputs(x=fks.tensors(("B", "T", "D"), dtypes=["float32"]),
                      h0=fks.tensors(("B", "D"), dtypes=["float32"]),
                      a=fks.tensors(("D",), dtypes=["float32"],
                                    values=fks.values(min_value=-0.9, max_value=0.9,
                                                      specials=False))),
    dims={"B": fks.sizes(max_value=4), "T": fks.sizes(max_value=64),
          "D": fks.sizes(max_value=64)},
)
