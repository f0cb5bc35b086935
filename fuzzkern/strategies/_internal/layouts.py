"""``layouts()``: how a view is cut from a larger storage (docs/architecture.md, case)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

from fuzzkern.case.model import Layout
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.validation import call_repr, check_bool, check_int

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData


class LayoutsStrategy(FuzzkernStrategy[Layout]):
    def __init__(
        self,
        ndim: int,
        *,
        permute: bool,
        max_step: int,
        max_start: int,
        max_offset: int,
        expand: bool,
        shown: str,
    ) -> None:
        super().__init__(shown)
        self.ndim = ndim
        self.permute = permute
        self.max_step = max_step
        self.max_start = max_start
        self.max_offset = max_offset
        self.expand = expand

    def _check(self) -> None:
        check_int("ndim", self.ndim, min_value=0, fix="ndim is the number of dims of a tensor.")
        check_bool("permute", self.permute)
        check_int("max_step", self.max_step, min_value=1, fix="Pass max_step=1 for dense rows.")
        check_int("max_start", self.max_start, min_value=0)
        check_int("max_offset", self.max_offset, min_value=0)
        check_bool("expand", self.expand)

    def _draw(self, data: ConjectureData) -> Layout:
        n = self.ndim
        draw = data.draw
        # One switch for the whole layout keeps contiguous tensors common (a launcher that
        # requires them rejects everything else); each part then has a switch of its own, so
        # the shrinker can make every part boring independently.
        if not draw(st.booleans()):
            return Layout.contiguous(n)
        permutation = tuple(range(n))
        if self.permute and n >= 2 and draw(st.booleans()):
            permutation = tuple(draw(st.permutations(range(n))))
        steps = (1,) * n
        if self.max_step > 1 and n and draw(st.booleans()):
            steps = tuple(draw(st.integers(1, self.max_step)) for _ in range(n))
        starts = (0,) * n
        if self.max_start > 0 and n and draw(st.booleans()):
            starts = tuple(draw(st.integers(0, self.max_start)) for _ in range(n))
        offset = 0
        if self.max_offset > 0 and draw(st.booleans()):
            # Small offsets are mostly not a multiple of 16 bytes' worth of elements, so the
            # view's base pointer loses the alignment compiled kernels like to assume.
            offset = draw(st.integers(1, self.max_offset))
        expanded: tuple[int, ...] = ()
        if self.expand and n and draw(st.booleans()):
            expanded = tuple(d for d in range(n) if draw(st.booleans()))
        return Layout(permutation, steps, starts, offset, expanded)


def layouts(
    ndim: int,
    *,
    permute: bool = True,
    max_step: int = 3,
    max_start: int = 2,
    max_offset: int = 9,
    expand: bool = False,
) -> st.SearchStrategy[Layout]:
    """Layouts (:class:`fuzzkern.case.model.Layout`) of an ``ndim``-dim view over a larger storage.

    A layout permutes the dims in memory (``permute``), steps over elements (up to
    ``max_step``), skips up to ``max_start`` elements before each dim, shifts the view by up to
    ``max_offset`` elements (odd offsets break 16-byte alignment) and, with ``expand=True``,
    broadcasts dims with stride 0 (for inputs only: a kernel must never write through them).
    Every part shrinks on its own to the contiguous layout.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.layouts(2), lambda layout: layout.steps[1] > 1)
    Layout(permutation=(0, 1), steps=(1, 2), starts=(0, 0), offset=0, expanded=())
    """
    defaults: dict[str, object] = {
        "permute": True,
        "max_step": 3,
        "max_start": 2,
        "max_offset": 9,
        "expand": False,
    }
    options = {
        "permute": permute,
        "max_step": max_step,
        "max_start": max_start,
        "max_offset": max_offset,
        "expand": expand,
    }
    return LayoutsStrategy(
        ndim,
        permute=permute,
        max_step=max_step,
        max_start=max_start,
        max_offset=max_offset,
        expand=expand,
        shown=call_repr("layouts", (ndim,), options, defaults),
    )
