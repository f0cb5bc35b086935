"""fla-core 0.6.0: ``fla.ops.utils.logsumexp_fwd`` reads a non-contiguous input as if it were
contiguous (its kernel indexes ``x + i_n * D + o_d``; the host only calls ``x.view(-1, D)``,
which keeps a transposed view's strides), so a transposed or row-strided input gives wrong
results silently. Prints ``BUG: ...`` and exits 1 while the bug shows, 0 once it is fixed.

On a GPU it runs compiled; without one, in Triton's interpreter (``REPRO_DEVICE=cpu`` forces
it), where the autotuner keeps one config (an interpreter cannot benchmark).
"""

import os
import sys

DEVICE = os.environ.get("REPRO_DEVICE", "")
if not DEVICE:
    import torch

    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
from fla.ops.utils import logsumexp as lse  # noqa: E402

if DEVICE == "cpu":
    tuner = lse.logsumexp_fwd_kernel.fn  # @triton.heuristics over @triton.autotune
    tuner.configs = tuner.configs[:1]

base = torch.tensor([[0.0, 4.0], [2.0, 1.0]], device=DEVICE)
x = base.t()  # a transposed view: rows [0, 2] and [4, 1]
got = lse.logsumexp_fwd(x).float().cpu()
want = torch.logsumexp(x.double(), -1).float().cpu()
if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
    print(f"BUG: logsumexp_fwd of a transposed [[0, 2], [4, 1]] is {got.tolist()}, "
          f"expected {want.tolist()} (it reads the storage row-major: rows [0, 4], [2, 1])")
    sys.exit(1)
print("fixed: logsumexp_fwd of a transposed input matches torch.logsumexp")
