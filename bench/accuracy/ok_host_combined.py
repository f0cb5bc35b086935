"""Correct: per-chunk partial sums from a kernel, combined by the launcher in torch.

A backward-style launcher: the kernel sums each chunk of a row in float32 and stores the
partial sums in the input dtype (fp16/bf16, on purpose: the library's storage format); the
launcher adds the chunks with torch (``partial.sum(-1)``) and scales by ``1 / n``. The output is
made by host code. Where a row's terms cancel, the deliberate rounding of the partial sums is
many output ulps: rounding, which the shadow measures by running the host code at float64 too
(it used to give up on outputs host code made and fall back on the rules from outside).
"""

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks

SPEC = {
    "kind": "correct",
    "what": "row mean from fp16/bf16 per-chunk partial sums combined on the host",
    "style": "launcher-level reduction (backward passes combining per-chunk results)",
    "expected_verdicts": [],
}

CHUNK = 64


@triton.jit
def _chunk_sums(x_ptr, out_ptr, N, n_chunks, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1)
    offs = c * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_chunks + c, tl.sum(x, axis=0))


def row_mean(x):
    m, n = x.shape
    chunks = triton.cdiv(n, CHUNK)
    partial = torch.empty((m, chunks), dtype=x.dtype, device=x.device)
    _chunk_sums[(m, chunks)](x.contiguous(), partial, n, chunks, CHUNK=CHUNK)
    return partial.sum(-1) / n


target = fuzzkern.Target(
    name="accuracy.ok_host_combined",
    launcher=row_mean,
    reference=lambda x: x.float().mean(-1),
    # partial sums of 64 values within 1e3 stay inside fp16's range (beyond it, storing them
    # in the input dtype overflows: a real limit of the design, not this bench's subject)
    inputs=fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float16", "bfloat16"],
                                    values=fks.values(min_value=-1e3, max_value=1e3))),
    dims={"M": fks.sizes(max_value=4), "N": fks.sizes(max_value=1024)},
)
