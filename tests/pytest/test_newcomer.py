"""A newcomer's first session (issue 43): their own kernel in their own test file, run the way
the docs' CPU examples run it, with ``TRITON_INTERPRET=1`` set: the item passes, its report
section has the kernel's coverage (not "not measured"), and a slow case still gets its cases
(the case floor). pytest in a subprocess, as a user runs it; cases counted, not seconds."""

from __future__ import annotations

USER_TEST = '''
import time

import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks


@triton.jit
def _twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if n > 8:
        x = x + 0.0
    tl.store(out_ptr + offs, 2 * x, mask=mask)


def twice(x):
    time.sleep(0.2)  # a loaded machine in miniature
    x = x.contiguous()
    out = torch.empty_like(x)
    _twice_kernel[(triton.cdiv(x.numel(), 16),)](x, out, x.numel(), BLOCK=16)
    return out


twice_t = fuzzkern.Target(launcher=twice, reference=lambda x: 2 * x,
                          inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
                          dims={"N": fks.sizes(max_value=64)})
'''


def test_a_newcomer_with_triton_interpret_set_gets_coverage_and_cases(pytester, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    pytester.makepyfile(test_mykernels=USER_TEST)
    # 0.2 s a case: at most 10 cases in 2 s however fast the machine (under the floor of 12),
    # and time for the first one however loaded
    result = pytester.runpytest_subprocess("-rP", "--fuzzkern-budget", "2s",
                                           "--fuzzkern-case-floor", "12",
                                           "--fuzzkern-db", "none", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "not measured" not in out, out
    result.stdout.fnmatch_lines(["*test_mykernels::twice_t: *% (lines */6, branches */2*",
                                 "*case floor: test_mykernels::twice_t: * case(s) in its budget,"
                                 " under the case floor 12: fuzzed * s more, * case(s)*"])
