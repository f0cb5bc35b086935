"""``sizes()``: dimension sizes biased to the edges where kernels break."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.validation import call_repr, check_int

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData

#: Tile sizes kernels commonly block by; their multiples ±1 miss a mask or a tail loop.
TILES = (16, 32, 64, 128)
#: Small primes and primes next to powers of two: sizes no block size divides.
PRIMES = (
    2,
    3,
    5,
    7,
    11,
    13,
    17,
    19,
    23,
    29,
    31,
    37,
    41,
    43,
    47,
    53,
    59,
    61,
    67,
    71,
    73,
    79,
    83,
    89,
    97,
    101,
    103,
    107,
    109,
    113,
    127,
    131,
    251,
    257,
    509,
    521,
    1021,
    1031,
    2039,
    2053,
    4093,
    4099,
)


def edge_sizes(lo: int, hi: int) -> tuple[int, ...]:
    """The sizes in ``[lo, hi]`` most likely to break a blocked kernel, ascending.

    >>> edge_sizes(0, 20)
    (0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 17, 19, 20)
    """
    edges = {lo, lo + 1, hi - 1, hi, 1, 2, 3, *PRIMES}
    for k in range(max(hi, 1).bit_length() + 1):
        edges.update((2**k - 1, 2**k, 2**k + 1))
    for tile in TILES:
        for m in range(1, 9):
            edges.update((m * tile - 1, m * tile, m * tile + 1))
    return tuple(sorted(e for e in edges if lo <= e <= hi))


class SizesStrategy(FuzzkernStrategy[int]):
    def __init__(self, min_value: int, max_value: int, shown: str, multiple_of: int = 1) -> None:
        super().__init__(shown)
        self.min_value = min_value
        self.max_value = max_value
        self.multiple_of = multiple_of
        self._by_max: dict[int, st.SearchStrategy[int]] = {}

    def _check(self) -> None:
        check_int("min_value", self.min_value, min_value=0, fix="A size is a number of elements.")
        check_int(
            "max_value",
            self.max_value,
            min_value=self.min_value,
            fix=f"max_value must be at least min_value={self.min_value!r}.",
        )
        check_int("multiple_of", self.multiple_of, min_value=1)
        m = self.multiple_of
        if -(-self.min_value // m) * m > self.max_value:
            check_int("max_value", self.max_value, min_value=-(-self.min_value // m) * m,
                      fix=f"No multiple of {m} lies in [{self.min_value}, {self.max_value}].")

    @property
    def lowest(self) -> int:
        """The smallest size drawn: ``min_value`` rounded up to a multiple."""
        return -(-self.min_value // self.multiple_of) * self.multiple_of

    def up_to(self, cap: int) -> st.SearchStrategy[int]:
        """The same distribution with ``max_value`` lowered to ``cap`` (a derived bound, so no
        draw is ever filtered away). ``cap`` must be at least ``lowest``."""
        self.check()
        m = self.multiple_of
        hi = min(self.max_value, cap) // m * m
        lo = self.lowest
        assert hi >= lo, (hi, lo)
        if hi not in self._by_max:
            if lo == hi:
                self._by_max[hi] = st.just(lo)
            elif m == 1:
                # Plain integers first: both branches shrink toward min_value, and a size the
                # edge list lacks still shrinks through the integers branch.
                self._by_max[hi] = st.one_of(
                    st.integers(lo, hi), st.sampled_from(edge_sizes(lo, hi))
                )
            else:
                # The edges rounded to multiples (down and up), drawn as the multiplier k, so
                # both branches shrink toward the smallest multiple.
                ks = sorted({k for e in edge_sizes(lo, hi) for k in (e // m, -(-e // m))
                             if lo <= k * m <= hi})
                self._by_max[hi] = st.one_of(
                    st.integers(lo // m, hi // m), st.sampled_from(ks)
                ).map(lambda k: k * m)
        return self._by_max[hi]

    def _draw(self, data: ConjectureData) -> int:
        return data.draw(self.up_to(self.max_value))


def sizes(
    *, min_value: int = 1, max_value: int = 1024, multiple_of: int = 1
) -> st.SearchStrategy[int]:
    """Sizes in ``[min_value, max_value]``, biased to the edges of blocked kernels.

    About half the draws come from an edge list: 1, 2, 3, small primes, powers of two ±1,
    multiples of the common tile sizes 16, 32, 64 and 128 ±1, and the bounds themselves; the
    rest are plain integers in range. Sizes shrink toward ``min_value``; pass ``min_value=0``
    to allow empty dims. ``multiple_of=m`` draws only multiples of ``m`` (an even head dim,
    a size a block divides), the edges rounded to multiples; they shrink toward the smallest
    multiple in range. For a dim computed from others, give the target's ``dims`` an
    expression or a callable instead (``dims={"C": "G*K"}``).

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.sizes(max_value=4096), lambda n: n > 1000)
    1001
    """
    shown = call_repr(
        "sizes",
        (),
        {"min_value": min_value, "max_value": max_value, "multiple_of": multiple_of},
        {"min_value": 1, "max_value": 1024, "multiple_of": 1},
    )
    return SizesStrategy(min_value, max_value, shown, multiple_of)
