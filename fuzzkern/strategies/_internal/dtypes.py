"""``dtypes()``: dtype names, most boring first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from fuzzkern.case.model import ALL_DTYPES
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.validation import call_repr, check_names

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData

#: What ``dtypes()`` and ``tensors()`` draw when not told otherwise.
DEFAULT_DTYPES = ("float32", "float16", "bfloat16")


def check_dtype_names(name: str, value: object) -> tuple[str, ...]:
    """``value`` as known dtype names in shrink order (the order of :data:`case.ALL_DTYPES`)."""
    return check_names(name, value, ALL_DTYPES, what="dtype", example='["float32", "float16"]')


class DtypesStrategy(FuzzkernStrategy[str]):
    def __init__(self, names: Sequence[str] | None, shown: str) -> None:
        super().__init__(shown)
        self._names = names
        self._inner: st.SearchStrategy[str] = st.nothing()

    def _check(self) -> None:
        names = DEFAULT_DTYPES if self._names is None else self._names
        self._inner = st.sampled_from(check_dtype_names("names", names))

    def _draw(self, data: ConjectureData) -> str:
        return data.draw(self._inner)


def dtypes(names: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """Dtype names (``"float16"``, ...) from ``names``, default float32, float16 and bfloat16.

    Names are drawn in fuzzkern's shrink order whatever order they are given in, so a failing
    case shrinks to the most boring dtype that still fails (float32 first, then float16, ...).
    Known names are those of :data:`fuzzkern.case.model.ALL_DTYPES`.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.dtypes(["bfloat16", "float16"]), lambda d: True)
    'float16'
    """
    return DtypesStrategy(names, call_repr("dtypes", (), {"names": names}, {"names": None}))
