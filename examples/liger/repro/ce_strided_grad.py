"""Liger 0.8.5 cross-entropy: with logits whose last dim is strided (a transposed view), the
gradient returned is the logits themselves. Minimal case fuzzkern found: N=2, V=2,
strides (1, 2)."""

from _common import device, verdict

dev = device()
import torch  # noqa: E402
from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction  # noqa: E402

base = torch.tensor([[4.0, -2.0], [-4.0, 2.0]], device=dev)
logits = base.t().requires_grad_(True)  # (N=2, V=2), strides (1, 2)
target = torch.tensor([0, 1], device=dev)
loss = LigerCrossEntropyFunction.apply(logits, target, None, -100)[0]
loss.backward()
x = logits.detach().double()
expected = (torch.softmax(x, -1) - torch.nn.functional.one_hot(target, 2)) / 2
got = logits.grad.double()
verdict(not torch.allclose(got, expected, atol=1e-5),
        f"grad {got.tolist()}, expected {expected.tolist()} (logits {x.tolist()})")
