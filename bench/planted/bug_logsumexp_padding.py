"""Row log-sum-exp whose padding lanes load 0 instead of ``-inf``.

One program reduces one row in a block of ``BLOCK_N = next_power_of_2(N)`` lanes:
``m = max(x)``, ``lse = m + log(sum(exp(x - m)))``. The masked load uses ``other=0.0``, the
default habit from sum kernels; for a max-and-exp reduction the neutral element is ``-inf``.
Each padding lane then adds ``exp(0 - m)`` to the sum (and lifts ``m`` to 0 for all-negative
rows). The same mistake appears in cross-entropy and attention kernels' row statistics; the
class is Liger's LayerNorm one (linkedin/Liger-Kernel#518): padding lanes join a reduction.

KNOWN MINIMAL CASE: dims ``{"M": 1, "N": 3}`` (one padding lane); x contiguous float32; any
values (x = 0 gives log 4 instead of log 3). N=1 and N=2 have no padding lane.
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "buggy",
    "bug_class": "reduction padding: masked lanes load the wrong neutral element",
    "peers": "bug class #1",
    "real_instance": "linkedin/Liger-Kernel#518 (same class: padding lanes in a reduction)",
    "expected_verdicts": ["kernel-bug"],
    "minimal_dims": {"M": 1, "N": 3},
    "minimal_case": "M=1, N=3; x contiguous float32; any values",
    "interpreter_visible": True,
}


@triton.jit
def _logsumexp_kernel(x_ptr, out_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N,
                other=0.0).to(tl.float32)
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    tl.store(out_ptr + row, m + tl.log(s))


def logsumexp(x):
    M, N = x.shape
    out = torch.empty((M,), dtype=torch.float32, device=x.device)
    _logsumexp_kernel[(M,)](x, out, N, x.stride(0), x.stride(1),
                            BLOCK_N=triton.next_power_of_2(N))
    return out


target = fuzzkern.Target(
    name="planted.logsumexp_padding",
    launcher=logsumexp,
    reference=lambda x: torch.logsumexp(x, dim=1),
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32", "float16"])),
    dims={"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=128)},
)
