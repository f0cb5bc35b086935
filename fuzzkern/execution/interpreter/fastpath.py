"""Triton's interpreter without work that changes nothing: the same results, less per operation.

An interpreted kernel runs every ``+``, ``*``, ``.to`` and memory op of every program through
Triton's language layer (type checks, promotion, broadcasting, a new ``tl.tensor``) over numpy.
In a loop-heavy kernel (a recurrent scan: a load, a store and a few arithmetic ops per time
step) that layer is most of the cost, and part of it is work whose result is known:

* ``_get_np_dtype`` (the numpy dtype of a Triton type, asked by nearly every op) builds a
  table of 19 entries on each call: here it is looked up once per scalar type;
* ``binary_op_type_checking_impl`` on two tensors of one type (not pointers, not a division of
  floats narrower than 32 bits, which computes in fp32) promotes nothing, casts nothing and
  broadcasts nothing: it returns its operands, as upstream does after all its checks;
* ``tl.tensor.__init__`` builds its ``shape`` as a tuple of ``tl.constexpr`` per tensor: here
  once per shape.

Installed by :func:`fuzzkern.execution.interpreter.core.interpreter_mode` (through
:func:`fuzzkern.execution.interpreter.fidelity.grouped_patches`) for the length of its block, on
Triton
3.6 and 3.9; figures in bench/RESULTS.md (``bench/interp_speed.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import triton.language as tl
import triton.language.core as tl_core
import triton.runtime.interpreter as _interp
from triton.language.semantic import TritonSemantic

__all__ = ["patches"]

_ORIG_NP_DTYPE = _interp._get_np_dtype
_ORIG_BINARY = TritonSemantic.binary_op_type_checking_impl
_ORIG_TENSOR_INIT = tl_core.tensor.__init__

#: numpy dtype per scalar Triton type (upstream's answer, asked once)
_NP_DTYPES: dict[Any, np.dtype[Any]] = {}


def np_dtype(tt_dtype: Any) -> Any:
    """Triton's ``_get_np_dtype``, memoized by scalar type (a block's is its element's)."""
    key = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
    try:
        return _NP_DTYPES[key]
    except KeyError:
        found = _NP_DTYPES[key] = _ORIG_NP_DTYPE(tt_dtype)
        return found
    except TypeError:  # an unhashable type: as upstream
        return _ORIG_NP_DTYPE(tt_dtype)


def binary_op_type_checking_impl(self: Any, lhs: Any, rhs: Any, allow_lhs_ptr: bool = False,
                                 allow_rhs_ptr: bool = False, arithmetic_check: bool = True,
                                 div_or_mod: bool = False) -> Any:
    """Upstream's, returning two tensors of one non-pointer type as they are (what its
    promotion, casts and broadcast come to for them)."""
    if isinstance(lhs, tl_core.tensor) and isinstance(rhs, tl_core.tensor):
        ty = lhs.type
        if ty == rhs.type:
            scalar = ty.scalar
            if not scalar.is_ptr() and not (div_or_mod and scalar.is_floating()
                                            and scalar.primitive_bitwidth < 32):
                return lhs, rhs
    return _ORIG_BINARY(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check,
                        div_or_mod)


#: per block shape (its ints): the tensor's shape as constexprs and its numel
_SHAPES: dict[tuple[int, ...], tuple[Any, Any]] = {}
_SHAPES_MAX = 4096
_SCALAR_NUMEL = tl_core.constexpr(1)
_SCALAR_SHAPE = tl_core.tuple([])


def tensor_init(self: Any, handle: Any, type: Any) -> None:
    """``tl.tensor.__init__`` with the shape's constexprs built once per shape."""
    self.handle = handle
    self.type = type
    self.dtype = type.scalar
    if not type.is_block():
        self.shape = _SCALAR_SHAPE
        self.numel = _SCALAR_NUMEL
        return
    shape = type.shape  # a tl.tuple of ints (core.py's ``tuple`` is Triton's own)
    values = getattr(shape, "values", shape)
    key = values if isinstance(values, tuple) else tuple(values)
    hit = _SHAPES.get(key)
    if hit is None:
        # Triton's own tuple, as upstream builds ``tensor.shape``; shared, read-only
        hit = (tl_core.tuple([tl_core.constexpr(s) for s in key]),
               tl_core.constexpr(math.prod(key)))
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = hit
    self.shape, self.numel = hit


def patches() -> list[tuple[Any, str, Any]]:
    """(object, attribute, value) to set while interpreter mode is active."""
    return [(_interp, "_get_np_dtype", np_dtype),
            (TritonSemantic, "binary_op_type_checking_impl", binary_op_type_checking_impl),
            (tl_core.tensor, "__init__", tensor_init)]
