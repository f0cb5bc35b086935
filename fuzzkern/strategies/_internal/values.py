"""``values()``: value recipes (seed, distribution, sparse special values) (DESIGN decision 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from fuzzkern.case import (
    ALL_DTYPES,
    FLOAT_DISTRIBUTIONS,
    FLOAT_SPECIALS,
    INT_DISTRIBUTIONS,
    INT_SPECIALS,
    Values,
    is_float_dtype,
)
from fuzzkern.errors import InvalidArgument
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.validation import (
    call_repr,
    check_int,
    check_names,
    fail,
)

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData


def _union(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(a) + tuple(x for x in b if x not in a)


#: Per kind of dtype: the distributions and special values that apply, most boring first.
#: "any" is what applies to every dtype, used when the dtype is not known yet.
DISTRIBUTIONS = {
    "float": FLOAT_DISTRIBUTIONS,
    "int": INT_DISTRIBUTIONS,
    "any": tuple(d for d in FLOAT_DISTRIBUTIONS if d in INT_DISTRIBUTIONS),
}
SPECIALS = {
    "float": FLOAT_SPECIALS,
    "int": INT_SPECIALS,
    "any": tuple(k for k in FLOAT_SPECIALS if k in INT_SPECIALS),
}
#: Special-value positions index a tensor's elements and wrap around; without a tensor to
#: bound them, keep them below this.
MAX_POSITION = 2**16 - 1
MAX_SEED = 2**64 - 1  # the most torch.Generator.manual_seed accepts


def dtype_kind(dtype: str | None) -> str:
    if dtype is None:
        return "any"
    return "float" if is_float_dtype(dtype) else "int"


class ValuesStrategy(FuzzkernStrategy[Values]):
    def __init__(
        self,
        dtype: str | None,
        *,
        distributions: Sequence[str] | None,
        specials: bool | Sequence[str],
        max_specials: int,
        max_seed: int,
        shown: str,
    ) -> None:
        super().__init__(shown)
        self.dtype = dtype
        self._distributions_arg = distributions
        self._specials_arg = specials
        self.max_specials = max_specials
        self.max_seed = max_seed
        self._distributions: tuple[str, ...] = ()
        self._specials: tuple[str, ...] = ()

    def _check(self) -> None:
        if self.dtype is not None and self.dtype not in ALL_DTYPES:
            fail(
                f"None or one of {', '.join(ALL_DTYPES)}",
                "dtype",
                self.dtype,
                "Leave dtype None to get values that fit any dtype.",
            )
        kind = dtype_kind(self.dtype)
        # Without a dtype, accept any known name: tensors() binds the recipe to its dtype.
        known_d = _union(FLOAT_DISTRIBUTIONS, INT_DISTRIBUTIONS) if kind == "any" else None
        d = self._distributions_arg
        if d is None:
            self._distributions = DISTRIBUTIONS[kind]
        else:
            self._distributions = check_names(
                "distributions",
                d,
                known_d or DISTRIBUTIONS[kind],
                what="distribution",
                example='["small_ints", "normal"]',
            )
        s = self._specials_arg
        if isinstance(s, bool):
            self._specials = _union(FLOAT_SPECIALS, INT_SPECIALS) if s else ()
        else:
            self._specials = check_names(
                "specials",
                s,
                _union(FLOAT_SPECIALS, INT_SPECIALS) if kind == "any" else SPECIALS[kind],
                what="special value",
                example='["nan", "inf"]',
            )
        check_int("max_specials", self.max_specials, min_value=0, fix="0 turns specials off.")
        check_int("max_seed", self.max_seed, min_value=0, max_value=MAX_SEED)

    def for_dtype(self, dtype: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The distributions and special values this recipe may use for ``dtype``."""
        kind = dtype_kind(dtype)
        # distributions=None means every distribution that applies to the dtype drawn, not
        # only those shared by every dtype (what a recipe without a dtype checks against).
        allowed = DISTRIBUTIONS[kind] if self._distributions_arg is None else self._distributions
        dists = tuple(x for x in DISTRIBUTIONS[kind] if x in allowed)
        if not dists:
            what = f"dtype {dtype}" if dtype else "every dtype (dtype=None)"
            raise InvalidArgument(
                f"Expected a distribution that applies to {what} ({', '.join(DISTRIBUTIONS[kind])})"
                f" but got distributions={list(self._distributions)!r} (type=list). Add one of"
                f" those, or pass values(dtype=...) / use tensors(values=...) to bind a dtype."
            )
        return dists, tuple(x for x in SPECIALS[kind] if x in self._specials)

    def draw_for(self, data: ConjectureData, dtype: str | None, positions: int | None) -> Values:
        """Draw a recipe for ``dtype`` over ``positions`` distinct elements (None: unknown)."""
        self.check()
        dists, kinds = self.for_dtype(dtype)
        draw = data.draw
        seed = draw(st.integers(0, self.max_seed))
        distribution = draw(st.sampled_from(dists)) if len(dists) > 1 else dists[0]
        max_position = MAX_POSITION if positions is None else positions - 1
        specials = []
        # A switch for "any specials" keeps most cases free of NaN and inf (they mask numeric
        # errors in whatever they touch); each special then has its own switch to shrink off.
        if kinds and self.max_specials and max_position >= 0 and draw(st.booleans()):
            for _ in range(self.max_specials):
                if draw(st.booleans()):
                    position = draw(st.integers(0, max_position))
                    specials.append((position, draw(st.sampled_from(kinds))))
        return Values(seed, distribution, tuple(specials))

    def _draw(self, data: ConjectureData) -> Values:
        return self.draw_for(data, self.dtype, None)


def values(
    dtype: str | None = None,
    *,
    distributions: Sequence[str] | None = None,
    specials: bool | Sequence[str] = True,
    max_specials: int = 3,
    max_seed: int = 2**32 - 1,
) -> st.SearchStrategy[Values]:
    """Value recipes (:class:`fuzzkern.case.Values`) for a tensor of ``dtype``.

    A recipe is a seed (shrinks to 0), a distribution from ``distributions`` (default: all
    that apply to the dtype, see :data:`fuzzkern.case.FLOAT_DISTRIBUTIONS` and
    ``INT_DISTRIBUTIONS``; shrinks to ``"small_ints"``) and up to ``max_specials`` special
    values (NaN, ±inf, -0.0, subnormals, dtype max, ...) at element positions that wrap around
    the tensor; each special sits behind its own switch, so the shrinker turns off those a
    failure does not need. ``specials`` is True (all kinds), False, or a list of kinds.

    With ``dtype=None`` a recipe fits any dtype (only what float and integer tensors share);
    inside :func:`tensors` the tensor's drawn dtype is used instead.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.values("float16"), lambda v: any(k == "nan" for _, k in v.specials))
    Values(seed=0, distribution='small_ints', specials=((0, 'nan'),))
    """
    options = {
        "distributions": distributions,
        "specials": specials,
        "max_specials": max_specials,
        "max_seed": max_seed,
    }
    defaults = {"distributions": None, "specials": True, "max_specials": 3, "max_seed": 2**32 - 1}
    return ValuesStrategy(
        dtype,
        distributions=distributions,
        specials=specials,
        max_specials=max_specials,
        max_seed=max_seed,
        shown=call_repr("values", () if dtype is None else (dtype,), options, defaults),
    )
