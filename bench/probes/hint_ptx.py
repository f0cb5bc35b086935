"""Offline check (no GPU needed): do the planted hint-lie kernels compile to vector loads?

A lying ``tl.max_contiguous``/``tl.multiple_of`` hint only changes the code when the compiler
vectorizes, which needs enough elements per thread (BLOCK >= 512 with 4 warps for fp32). On a
2026-11-29 H200 run, BLOCK=64/128 versions compiled to scalar ``ld.global.b32`` and the lies were
harmless; this script compiles for sm_90 on the CPU and lists the global loads.

Usage: python bench/probes/hint_ptx.py
"""

import os
import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "gpu"))
import planted_compiled as p  # noqa: E402

D = [["tt.divisibility", 16]]
KERNELS = [
    (p._offset_copy, {"base_ptr": "*fp32", "out_ptr": "*fp32", "start": "i32",
                      "BLOCK": "constexpr"}),
    (p._hinted_copy, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32",
                      "BLOCK": "constexpr"}),
]
for fn, sig in KERNELS:
    for block in (64, 512, 1024):
        src = ASTSource(fn=fn, signature=sig, constexprs={"BLOCK": block}, attrs={(0,): D, (1,): D})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
        loads = sorted(set(re.findall(r"ld\.global[\.\w]*", k.asm["ptx"])))
        print(f"{fn.__name__:14s} BLOCK={block:5d} {loads}")
