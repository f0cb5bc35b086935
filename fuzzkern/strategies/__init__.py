"""Strategies for Triton kernel inputs: sizes, dtypes, layouts, values, tensors and whole cases.

Everything drawn here is data (:mod:`fuzzkern.case.model`); tensors are built from it later, in the
worker, so importing this module imports neither torch nor triton. Each strategy is built
bottom-up so every part shrinks on its own toward the boring case: small sizes, float32,
contiguous, seed 0, small integer values, no special values.

>>> from hypothesis import strategies as st
>>> from fuzzkern import strategies as fks
>>> spec = fks.inputs(
...     a=fks.tensors(("N",), dtypes=["float16", "float32", "bfloat16"]),
...     b=fks.tensors(("N",), dtype_of="a"),
...     alpha=st.floats(-4, 4),
... )
>>> spec.symbols
('N',)
"""

# The implementation lives in `_internal/`; this facade re-exports the public names only, so
# editors that ignore __all__ do not offer the implementation's helpers.
from fuzzkern.strategies._internal.dtypes import dtypes
from fuzzkern.strategies._internal.inputs import dim, inputs
from fuzzkern.strategies._internal.layouts import layouts
from fuzzkern.strategies._internal.sizes import sizes
from fuzzkern.strategies._internal.tensors import tensors
from fuzzkern.strategies._internal.values import values

__all__ = ["dim", "dtypes", "inputs", "layouts", "sizes", "tensors", "values"]


def _check_exports(public: set[str]) -> None:
    assert __all__ == sorted(__all__), "keep __all__ sorted"
    assert set(__all__) == public, (set(__all__) - public, public - set(__all__))


# "@py_builtins" and "@pytest_ar": pytest rewrites the asserts of a package that ships a pytest
# plugin (ours, the pytest11 entry point), which adds these two names to the module.
_check_exports({n for n in dir() if not n.startswith(("_", "@")) and n != "annotations"})
del _check_exports
