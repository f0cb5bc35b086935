"""Liger 0.8.5 TVD loss raises ZeroDivisionError when every label is ignore_index.
Minimal case fuzzkern found: N=1, V=1, label -100."""

from _common import device, verdict

dev = device()
import torch  # noqa: E402
from liger_kernel.ops.tvd import LigerTVDLossFunction  # noqa: E402

p = torch.tensor([[1.0]], device=dev)
q = torch.tensor([[1.0]], device=dev)
labels = torch.tensor([-100], device=dev)
try:
    loss = LigerTVDLossFunction.apply(p, q, labels, "batchmean", -100)
except ZeroDivisionError as e:
    verdict(True, f"ZeroDivisionError: {e}")
verdict(False, f"loss {loss.item()}")
