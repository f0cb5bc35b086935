"""Correct: rotary position embedding in fp16, Liger-Kernel / vLLM style.

``out = x * cos + rotate_half(x) * sin`` with ``cos``/``sin`` given in the input dtype (fp16),
computed in float32 and rounded once on store. Where the two products cancel, the float32
rounding of each is many fp16 ulps of the small result; the reference is the float64 formula.
"""

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "RoPE out = x*cos + rotate_half(x)*sin, fp16 in and out, fp32 math",
    "style": "Liger-Kernel rope / vLLM rotary_embedding",
    "expected_verdicts": [],
}


@triton.jit
def _rope(X, COS, SIN, OUT, stride_x, HALF: tl.constexpr):
    row = tl.program_id(0)
    d = tl.arange(0, HALF)
    x1 = tl.load(X + row * stride_x + d).to(tl.float32)
    x2 = tl.load(X + row * stride_x + HALF + d).to(tl.float32)
    c1 = tl.load(COS + row * 2 * HALF + d).to(tl.float32)
    c2 = tl.load(COS + row * 2 * HALF + HALF + d).to(tl.float32)
    s1 = tl.load(SIN + row * 2 * HALF + d).to(tl.float32)
    s2 = tl.load(SIN + row * 2 * HALF + HALF + d).to(tl.float32)
    o1 = x1 * c1 - x2 * s1
    o2 = x2 * c2 + x1 * s2
    tl.store(OUT + row * 2 * HALF + d, o1.to(OUT.dtype.element_ty))
    tl.store(OUT + row * 2 * HALF + HALF + d, o2.to(OUT.dtype.element_ty))


def rope(x, angle):
    M, D = x.shape
    cos, sin = torch.cos(angle.float()).to(x.dtype), torch.sin(angle.float()).to(x.dtype)
    out = torch.empty((M, D), dtype=x.dtype, device=x.device)
    _rope[(M,)](x, cos.contiguous(), sin.contiguous(), out, x.stride(0), HALF=D // 2)
    return out


def reference(x, angle):
    cos = torch.cos(angle.float()).to(x.dtype).double()
    sin = torch.sin(angle.float()).to(x.dtype).double()
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin


target = fuzzkern.Target(
    name="accuracy.ok_rope_fp16",
    launcher=rope,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("M", "D"), dtypes=["float16"], layout=False),
        angle=fks.tensors(("M", "D"), dtypes=["float32"], layout=False),
    ),
    dims={"M": fks.sizes(max_value=8), "H": st.sampled_from([1, 2, 4, 8, 16, 32]), "D": "2*H"},
)
