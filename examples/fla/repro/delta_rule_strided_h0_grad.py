"""fla-core 0.6.0: ``fused_recurrent_delta_rule``'s backward crashes when the initial state
requires grad and is not contiguous (a slice of a larger cache, a transposed state).
``FusedRecurrentFunction.forward`` runs under ``@input_guard``, which makes the state contiguous
*inside* the autograd Function, where grad mode is off: the copy it saves has
``requires_grad=False``, so the backward allocates no ``dh0`` (``dh0 = None``) yet launches its
kernel with ``USE_INITIAL_STATE`` set, which stores the state's gradient through ``dh0``.
Prints ``BUG: ...`` and exits 1 while the bug shows, 0 once it is fixed.

On a GPU it runs compiled; without one, in Triton's interpreter (``REPRO_DEVICE=cpu`` forces
it). No autotuned kernel is involved (``use_qk_l2norm_in_kernel=False``).
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
import torch.nn.functional as F  # noqa: E402
from fla.ops import fused_recurrent_delta_rule  # noqa: E402

torch.manual_seed(0)
B, T, H, K, V = 1, 4, 1, 16, 16
q = torch.randn(B, T, H, K, device=DEVICE, requires_grad=True)
k = F.normalize(torch.randn(B, T, H, K, device=DEVICE), dim=-1).requires_grad_(True)
v = torch.randn(B, T, H, V, device=DEVICE, requires_grad=True)
beta = torch.rand(B, T, H, device=DEVICE).requires_grad_(True)
cache = torch.randn(B, H, K, 2 * V, device=DEVICE)
h0 = cache[..., :V].detach().requires_grad_(True)  # the first half of a cache: not contiguous
o, ht = fused_recurrent_delta_rule(q, k, v, beta, initial_state=h0, output_final_state=True)
try:
    (o.sum() + ht.sum()).backward()
except Exception as e:  # noqa: BLE001
    print(f"BUG: backward with a non-contiguous initial state that requires grad raises "
          f"{type(e).__name__}: {str(e)[:200]}")
    sys.exit(1)
if h0.grad is None:
    print("BUG: backward with a non-contiguous initial state gives it no gradient")
    sys.exit(1)
print("fixed: the non-contiguous initial state gets its gradient")
