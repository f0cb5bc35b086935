"""Correct: GroupNorm forward in attorch's style (one program per sample and group).

``x`` is ``(B, C, L)``; its ``C`` channels form ``G = gcd(C, groups)`` groups of ``C // G``
channels. Each program loads its group (``C // G`` channels x ``L`` positions, masked), takes
fp32 mean and variance (masked lanes zeroed, IEEE division), normalizes and applies the
per-channel ``weight`` and ``bias``. Near-constant groups and small-integer groups whose
elements equal the group mean, times large weights, are exactly the inputs where the reference
itself moves by hundreds of ulp when one input moves by one ulp. Any layout of ``x``.
"""

import math

import torch
import triton
import triton.language as tl
from hypothesis import strategies as st

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "GroupNorm fwd, (B, C, L), G = gcd(C, groups), fp32/fp16/bf16, every distribution",
    "style": "attorch",
    "expected_verdicts": [],
}


@triton.jit
def group_norm_forward_kernel(input_pointer, weight_pointer, bias_pointer, output_pointer,
                              num_channels, spatial_dim, group_numel_f, eps,
                              input_batch_stride, input_channel_stride, input_spatial_stride,
                              output_batch_stride, output_channel_stride,
                              output_spatial_stride, GROUPS: tl.constexpr,
                              BLOCK_SIZE_CHANNEL: tl.constexpr,
                              BLOCK_SIZE_SPATIAL: tl.constexpr):
    batch_pid = tl.program_id(axis=0)
    group_pid = tl.program_id(axis=1)
    channels_per_group = num_channels // GROUPS
    channel_offset = group_pid * channels_per_group + tl.arange(0, BLOCK_SIZE_CHANNEL)
    spatial_offset = tl.arange(0, BLOCK_SIZE_SPATIAL)
    channel_mask = tl.arange(0, BLOCK_SIZE_CHANNEL) < channels_per_group
    spatial_mask = spatial_offset < spatial_dim
    mask = channel_mask[:, None] & spatial_mask[None, :]
    input_pointer += (batch_pid * input_batch_stride
                      + channel_offset[:, None] * input_channel_stride
                      + spatial_offset[None, :] * input_spatial_stride)
    x = tl.load(input_pointer, mask=mask, other=0.0).to(tl.float32)
    mean = tl.math.div_rn(tl.sum(tl.sum(x, axis=1), axis=0), group_numel_f)
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.math.div_rn(tl.sum(tl.sum(diff * diff, axis=1), axis=0), group_numel_f)
    inv_std = tl.rsqrt(var + eps)
    weight = tl.load(weight_pointer + channel_offset, mask=channel_mask).to(tl.float32)
    bias = tl.load(bias_pointer + channel_offset, mask=channel_mask).to(tl.float32)
    output = diff * inv_std * weight[:, None] + bias[:, None]
    output_pointer += (batch_pid * output_batch_stride
                       + channel_offset[:, None] * output_channel_stride
                       + spatial_offset[None, :] * output_spatial_stride)
    tl.store(output_pointer, output.to(output_pointer.dtype.element_ty), mask=mask)


def group_norm(x, weight, bias, groups=2, eps=1e-5):
    B, C, L = x.shape
    G = math.gcd(C, groups)
    weight, bias = weight.contiguous(), bias.contiguous()
    out = torch.empty((B, C, L), dtype=x.dtype, device=x.device)
    group_norm_forward_kernel[(B, G)](
        x, weight, bias, out, C, L, float(C // G * L), eps, x.stride(0), x.stride(1),
        x.stride(2), out.stride(0), out.stride(1), out.stride(2), GROUPS=G,
        BLOCK_SIZE_CHANNEL=triton.next_power_of_2(C // G),
        BLOCK_SIZE_SPATIAL=triton.next_power_of_2(L))
    return out


def reference(x, weight, bias, groups=2):
    # attorch's test reference is nn.GroupNorm, which refuses groups of one element in
    # training mode; the same formula, written out
    B, C, L = x.shape
    g = x.reshape(B, math.gcd(C, groups), -1)
    mean = g.mean(-1, keepdim=True)
    var = ((g - mean) ** 2).mean(-1, keepdim=True)
    y = ((g - mean) / torch.sqrt(var + 1e-5)).reshape(B, C, L)
    return y * weight[:, None] + bias[:, None]


target = fuzzkern.Target(
    name="accuracy.ok_groupnorm",
    launcher=group_norm,
    reference=reference,
    inputs=fks.inputs(
        x=fks.tensors(("B", "C", "L"), expand=True),
        weight=fks.tensors(("C",), dtype_of="x"),
        bias=fks.tensors(("C",), dtype_of="x"),
        groups=st.sampled_from([1, 2, 4, 8]),
    ),
    dims={"B": fks.sizes(max_value=4), "C": fks.sizes(max_value=16),
          "L": fks.sizes(max_value=32)},
)
