"""fla-core 0.6.0: ``fla.ops.utils.matmul(a, b, activation='tanh')`` gives NaN where the product
exceeds about 88.7 in magnitude: its fused ``tanh`` is ``(exp(x) - exp(-x)) / (exp(x) +
exp(-x))``, and ``exp`` overflows float32 there, so it computes ``inf / inf`` where ``tanh`` is
+-1 (the form its comment names, ``2 * sigmoid(2x) - 1``, stays finite). Prints ``BUG: ...``
and exits 1 while the bug shows, 0 once it is fixed.

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

import importlib  # noqa: E402

import torch  # noqa: E402

mm = importlib.import_module("fla.ops.utils.matmul")  # the module (fla.ops.utils.matmul is
# also the name of the function, which fla.ops.utils exports)

if DEVICE == "cpu":
    tuner = mm.matmul_kernel.fn  # @triton.heuristics over @triton.autotune
    tuner.configs = tuner.configs[:1]

a = torch.full((1, 12), 4.0, device=DEVICE)
b = torch.full((12, 1), 4.0, device=DEVICE)  # a @ b = 192
got = mm.matmul(a, b, "tanh").cpu()
want = torch.tanh(a.cpu() @ b.cpu())
if not torch.allclose(got, want, equal_nan=False):
    print(f"BUG: matmul(a, b, 'tanh') with a @ b = 192 is {got.item()}, expected {want.item()}")
    sys.exit(1)
print("fixed: matmul's fused tanh is finite for large products")
