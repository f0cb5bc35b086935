"""Liger 0.8.5 cross-entropy, called without autograd, zeroes the caller's logits of every row
whose label is ignore_index (-100). Minimal case fuzzkern found: N=1, V=1, label -100."""

from _common import device, verdict

dev = device()
import torch  # noqa: E402
from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction  # noqa: E402

logits = torch.tensor([[4.0], [1.0]], device=dev)  # two rows, V=1; row 0 is ignored
target = torch.tensor([-100, 0], device=dev)
before = logits.clone()
with torch.no_grad():
    LigerCrossEntropyFunction.apply(logits, target, None, -100)
changed = (logits != before).any(-1)
verdict(bool(changed.any()),
        f"logits rows {changed.nonzero()[:, 0].tolist()} changed by a forward-only call "
        f"(before {before.tolist()}, after {logits.tolist()})")
