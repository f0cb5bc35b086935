"""Planted-bug kernels for the quality tests: fuzzkern must find each bug and shrink it to a
known minimal case.

One module per bug class. Each exports two :class:`fuzzkern.Target` objects with the same
launcher signature and the same input strategies, differing only by the bug:

- ``buggy``: the kernel with the bug planted;
- ``correct``: its fixed twin, which fuzzkern must never report.

and, for the quality tests to assert on:

- ``EXPECTED_VERDICT``: the verdict the shrunk ``buggy`` case gets (``"kernel-bug"``,
  ``"oob"``, ``"oob-view"``, ``"unwritten-output"``, ``"input-mutated"``, ``"overflow"`` or
  ``"hang"``);
- optionally ``DEBUG = True``: the campaign runs with ``debug`` (``--debug-kernels``), and
  ``MINIMAL_<SCALAR>`` values the shrunk case's scalars must reach;
- ``MINIMAL_DIMS``: the dims of the known minimal case;
- ``MINIMAL_CASE``: that case in words (layouts, dtype, meta-parameters, values).

The module docstring says why that case is minimal. Dims are kept small (at most 64) so each
case costs milliseconds in Triton's interpreter.

=====================  ==========================================================  ==========
module                 bug class (docs/architecture.md, appendix)                  verdict
=====================  ==========================================================  ==========
missing_mask           no tail mask on the last block (#2)                         oob
ignored_stride         input stride ignored, contiguity assumed (#3)               oob-view
floor_grid             grid = N // BLOCK instead of cdiv: the tail is never run    unwritten-output
unmasked_k             matmul K loop without the K-tail mask (#2)                  oob
reduction_padding      padding lanes counted in a variance (#1)                    kernel-bug
persistent_tiles       persistent matmul, wrong tile decomposition                 kernel-bug
inplace_copy           in-place update written into a .contiguous() copy           kernel-bug
empty_like_flat        empty_like(non-contiguous x) written as if flat (#4)        kernel-bug
expanded_fastpath      stride-0 (expanded) input takes a unit-stride fast path (#5) oob
autotune_config        one autotune config drops the mask (#10)                    oob
oob_store              store mask off by one (``<=``)                              oob
hang                   spin-wait on a flag nobody sets                             hang
scratch_input          the kernel keeps an intermediate in its input               input-mutated
int32_index            ``i * stride`` in int32 overflows (with ``DEBUG``)          overflow
=====================  ==========================================================  ==========
"""
