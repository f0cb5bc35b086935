"""Liger 0.8.5 RoPE gives wrong rows for seq_len=1 with several heads and batch > 1.
Minimal case fuzzkern found: B=2, q heads 2, k heads 1, S=1, head dim 2."""

from _common import device, verdict

dev = device()
import torch  # noqa: E402
from liger_kernel.ops.rope import LigerRopeFunction  # noqa: E402

B, H, S, D = 2, 2, 1, 2
q = torch.arange(1.0, 1 + B * H * S * D, device=dev).reshape(B, H, S, D)
k = torch.ones(B, 1, S, D, device=dev)
cos = torch.full((1, S, D), 0.5, device=dev)
sin = torch.full((1, S, D), 0.25, device=dev)


def rot(x):
    return torch.cat((-x[..., D // 2:], x[..., : D // 2]), -1)


expected = q * cos[:, None] + rot(q) * sin[:, None]
qo, _ = LigerRopeFunction.apply(q.clone(), k.clone(), cos, sin)
bad = ~torch.isclose(qo, expected).all(-1)
verdict(bool(bad.any()), f"{int(bad.sum())} of {bad.numel()} (batch, head) rows of q wrong: "
        f"got {qo.flatten().tolist()}, expected {expected.flatten().tolist()}")
