"""Liger 0.8.5 ReLU²: a NaN input gives 0 (torch.relu(x) ** 2 gives NaN), forward and
backward. Minimal case fuzzkern found: one element, NaN."""

import math

from _common import device, verdict

dev = device()
import torch  # noqa: E402
from liger_kernel.ops.relu_squared import LigerReLUSquaredFunction  # noqa: E402

x = torch.tensor([math.nan, 2.0], device=dev)
y = LigerReLUSquaredFunction.apply(x)
verdict(not bool(torch.isnan(y[0])), f"relu_squared([nan, 2]) = {y.tolist()}, expected "
        f"{(torch.relu(x) ** 2).tolist()}")
