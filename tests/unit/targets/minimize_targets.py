"""Row max kernels whose smaller cases the post-shrink minimizer must not accept.

The kernel is bench/planted/bug_rowmax_zero_init.py's (the running maximum starts at 0, so an
all-negative row comes out as 0); the launchers refuse one-row inputs, so that for a case that
fails in row 1 of two rows, every one-row candidate is rejected: by a declared precondition
(``two_rows``) or by an error of another verdict family (``errors_on_one_row``).
"""

import importlib.util
import os

import fuzzkern
from fuzzkern import strategies as fks

_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "planted",
                     "bug_rowmax_zero_init.py")
_spec = importlib.util.spec_from_file_location("_planted_rowmax_zero_init", _PATH)
assert _spec is not None and _spec.loader is not None
_planted = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_planted)
_row_max = _planted.row_max


def row_max_two_rows(x):
    if x.shape[0] < 2:
        raise ValueError("row_max_two_rows needs at least 2 rows")
    return _row_max(x)


def row_max_errors_on_one_row(x):
    if x.shape[0] < 2:
        raise RuntimeError("one row is not supported")
    return _row_max(x)


INPUTS = fks.inputs(x=fks.tensors(("M", "N"), dtypes=["float32"]))
DIMS = {"M": fks.sizes(max_value=16), "N": fks.sizes(max_value=256)}

two_rows = fuzzkern.Target(
    launcher=row_max_two_rows, reference=lambda x: x.amax(dim=1), inputs=INPUTS, dims=DIMS,
    preconditions=(ValueError,),
)

errors_on_one_row = fuzzkern.Target(
    launcher=row_max_errors_on_one_row, reference=lambda x: x.amax(dim=1), inputs=INPUTS,
    dims=DIMS,
)
