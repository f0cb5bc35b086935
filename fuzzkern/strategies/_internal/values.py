"""``values()``: value recipes (seed, distribution, sparse special values) and their domains:
ranges, signs, bounds read from a dim or scalar, probability rows."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from fuzzkern.case.model import (
    ALL_DTYPES,
    FLOAT_DISTRIBUTIONS,
    FLOAT_SPECIALS,
    INT_DISTRIBUTIONS,
    INT_SPECIALS,
    ROWS,
    Domain,
    Values,
    is_float_dtype,
)
from fuzzkern.errors import InvalidArgument
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.validation import (
    call_repr,
    check_bool,
    check_int,
    check_names,
    fail,
    is_int,
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
        min_value: float | str | None = None,
        max_value: float | str | None = None,
        exclude_min: bool = False,
        exclude_max: bool = False,
        sign: str | None = None,
        rows: str | None = None,
        dim: int = -1,
    ) -> None:
        super().__init__(shown)
        self.dtype = dtype
        self._bounds_arg = (min_value, max_value, exclude_min, exclude_max)
        self.min_value = min_value
        self.max_value = max_value
        self.exclude_min = exclude_min
        self.exclude_max = exclude_max
        self.sign = sign
        self.rows = rows
        self.dim = dim
        self._literals: tuple[str, ...] = ()
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
        self._check_domain()
        s = self._specials_arg
        if isinstance(s, bool):
            self._specials = _union(FLOAT_SPECIALS, INT_SPECIALS) if s else ()
            if s and self.bounded:
                self._specials = tuple(k for k in self._specials if self._may_hold(k))
        else:
            if not isinstance(s, str) and isinstance(s, Sequence):
                numbers = [x for x in s if is_int(x) or isinstance(x, float)]
                for x in numbers:
                    if isinstance(x, float) and math.isnan(x):
                        fail("a number (use the name \"nan\" for NaN)", "specials", x)
                self._literals = tuple(dict.fromkeys(f"={x!r}" for x in numbers))
                s = [x for x in s if not (is_int(x) or isinstance(x, float))]
            self._specials = check_names(
                "specials",
                s,
                _union(FLOAT_SPECIALS, INT_SPECIALS) if kind == "any" else SPECIALS[kind],
                what="special value",
                example='["nan", "inf"]',
            ) if (s or not self._literals) else ()
        check_int("max_specials", self.max_specials, min_value=0, fix="0 turns specials off.")
        check_int("max_seed", self.max_seed, min_value=0, max_value=MAX_SEED)

    # -- domains -------------------------------------------------------------------------------

    @property
    def bounded(self) -> bool:
        return self.min_value is not None or self.max_value is not None or self.rows is not None

    def _check_domain(self) -> None:
        signs = {"positive": ("min", True), "non-negative": ("min", False),
                 "negative": ("max", True), "non-positive": ("max", False)}
        self.min_value, self.max_value, self.exclude_min, self.exclude_max = self._bounds_arg
        if self.sign is not None:
            if self.sign not in signs:
                fail(f"None or one of {', '.join(signs)}", "sign", self.sign)
            side, strict = signs[self.sign]
            if getattr(self, f"{side}_value") is not None:
                fail(f"{side}_value=None with sign={self.sign!r}", f"{side}_value",
                     getattr(self, f"{side}_value"), "Say the bound once: sign or the value.")
            setattr(self, f"{side}_value", 0)
            setattr(self, f"exclude_{side}", strict)
        for side in ("min", "max"):
            v = getattr(self, f"{side}_value")
            if v is not None and not (isinstance(v, str) and v) and not (
                    is_int(v) or (isinstance(v, float) and math.isfinite(v))):
                fail("None, a finite number, or the name of a dim or an earlier scalar input",
                     f"{side}_value", v, 'Pass e.g. max_value="V" for values below dim V.')
            check_bool(f"exclude_{side}", getattr(self, f"exclude_{side}"))
            if getattr(self, f"exclude_{side}") and v is None:
                fail(f"exclude_{side}=False without a {side}_value", f"exclude_{side}", True)
        lo, hi = self.min_value, self.max_value
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and (
                lo > hi or (lo == hi and (self.exclude_min or self.exclude_max))):
            fail(f"max_value > min_value={lo!r} (a non-empty range)", "max_value", hi)
        if self.rows is not None:
            if self.rows not in ROWS:
                fail(f"None or one of {', '.join(ROWS)}", "rows", self.rows)
            if lo is not None or hi is not None:
                fail("no min_value/max_value/sign with rows (rows set their own range)",
                     "rows", self.rows)
        check_int("dim", self.dim)

    def _may_hold(self, kind: str) -> bool:
        """Whether the special ``kind`` can lie in the domain (specials=True with a domain)."""
        if self.rows is not None:
            return False
        lo, hi = self.min_value, self.max_value
        known_lo = None if lo is None or isinstance(lo, str) else float(lo)
        known_hi = None if hi is None or isinstance(hi, str) else float(hi)
        if kind in ("max", "min", "lowest"):
            return True  # moved to the bounds
        if kind == "nan":
            return False  # as Hypothesis's floats(min_value=...): a range means numbers
        if kind == "inf":
            return hi is None
        if kind == "-inf":
            return lo is None
        value = {"-0.0": 0.0, "subnormal": 1e-40, "tiny": 1e-30, "zero": 0.0,
                 "minus_one": -1.0}.get(kind, 0.0)
        if known_lo is not None and (value < known_lo or (value == known_lo and (
                self.exclude_min or kind == "-0.0"))):
            return False
        return not (known_hi is not None and (value > known_hi or (
            value == known_hi and self.exclude_max)))

    def resolve(self, env: Mapping[str, Any] | None) -> Domain | None:
        """The domain with names read from ``env`` (dims and earlier scalars of the case)."""
        self.check()
        if not self.bounded:
            return None
        bounds: dict[str, Any] = {}
        for side in ("min", "max"):
            v = getattr(self, f"{side}_value")
            if isinstance(v, str):
                if env is None or v not in env:
                    known = ", ".join(env or ()) or "none"
                    fail(f"the name of a dim or an earlier scalar input (known: {known})",
                         f"{side}_value", v, "Declare the scalar before this tensor.")
                got = env[v]
                if not (is_int(got) or (isinstance(got, float) and math.isfinite(got))):
                    fail(f"{v!r} to hold a finite number", f"{side}_value", got)
                bounds[side] = (got, v)
            else:
                bounds[side] = (v, None)
        return Domain(bounds["min"][0], bounds["max"][0], self.exclude_min, self.exclude_max,
                      bounds["min"][1], bounds["max"][1], self.rows, self.dim)

    def for_dtype(self, dtype: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The distributions and special values this recipe may use for ``dtype``."""
        kind = dtype_kind(dtype)
        if kind == "int" and self.rows is not None:
            raise InvalidArgument(
                f"Expected a float dtype for rows={self.rows!r} but got dtype={dtype!r}. "
                "Probability rows are floats.")
        if kind == "int":
            bad = [k for k in self._literals if "." in k or "e" in k or "n" in k]
            if bad:
                raise InvalidArgument(
                    f"Expected whole numbers as special values of {dtype} but got "
                    f"specials={bad[0][1:]}. Pass ints.")
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
        return dists, tuple(x for x in SPECIALS[kind] if x in self._specials) + self._literals

    def draw_for(self, data: ConjectureData, dtype: str | None, positions: int | None,
                 env: Mapping[str, Any] | None = None) -> Values:
        """Draw a recipe for ``dtype`` over ``positions`` distinct elements (None: unknown);
        bounds that name a dim or scalar are read from ``env``."""
        self.check()
        dists, kinds = self.for_dtype(dtype)
        domain = self.resolve(env)
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
        return Values(seed, distribution, tuple(specials), domain)

    def _draw(self, data: ConjectureData) -> Values:
        return self.draw_for(data, self.dtype, None, {})


def values(
    dtype: str | None = None,
    *,
    distributions: Sequence[str] | None = None,
    specials: bool | Sequence[str] = True,
    max_specials: int = 3,
    max_seed: int = 2**32 - 1,
    min_value: float | str | None = None,
    max_value: float | str | None = None,
    exclude_min: bool = False,
    exclude_max: bool = False,
    sign: str | None = None,
    rows: str | None = None,
    dim: int = -1,
) -> st.SearchStrategy[Values]:
    """Value recipes (:class:`fuzzkern.case.model.Values`) for a tensor of ``dtype``.

    A recipe is a seed (shrinks to 0), a distribution from ``distributions`` (default: all
    that apply to the dtype, see :data:`fuzzkern.case.model.FLOAT_DISTRIBUTIONS` and
    ``INT_DISTRIBUTIONS``; shrinks to ``"small_ints"``) and up to ``max_specials`` special
    values (NaN, ±inf, -0.0, subnormals, dtype max, ...) at element positions that wrap around
    the tensor; each special sits behind its own switch, so the shrinker turns off those a
    failure does not need. ``specials`` is True (all kinds), False, or a list of kinds.

    **Domains.** ``min_value``/``max_value`` bound the values (inclusive unless
    ``exclude_min``/``exclude_max``, as Hypothesis's ``floats``); a bound may name a dim or an
    earlier scalar input (``max_value="V", exclude_max=True``: class ids in ``[0, V)``), read when
    the case is drawn and stored in it as a number. ``sign`` is a shorthand: ``"positive"``
    (``> 0``), ``"non-negative"``, ``"negative"``, ``"non-positive"``. ``rows="probability"``
    makes every row along ``dim`` non-negative and sum to 1 (a softmax of the drawn values);
    ``rows="log_probability"``, its logarithm. Values are drawn from the distribution, then
    reflected into the range (wrapped for integers), so every distribution still shrinks to
    small, simple values. With a domain, ``specials=True`` keeps only the kinds that can lie in
    it (no NaN; ``inf`` only without an upper bound), and ``max``/``min``/``lowest`` become the
    bounds; rows get no specials unless listed. ``specials`` may also list numbers, planted as
    they are even outside the domain (``specials=["max", -100]``: an ``ignore_index``).

    With ``dtype=None`` a recipe fits any dtype (only what float and integer tensors share);
    inside :func:`tensors` the tensor's drawn dtype is used instead.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.values("float16"), lambda v: any(k == "nan" for _, k in v.specials))
    Values(seed=0, distribution='small_ints', specials=((0, 'nan'),), domain=None, block=None)
    """
    options = {
        "distributions": distributions,
        "specials": specials,
        "max_specials": max_specials,
        "max_seed": max_seed,
        "min_value": min_value,
        "max_value": max_value,
        "exclude_min": exclude_min,
        "exclude_max": exclude_max,
        "sign": sign,
        "rows": rows,
        "dim": dim,
    }
    defaults: dict[str, Any] = {
        "distributions": None, "specials": True, "max_specials": 3, "max_seed": 2**32 - 1,
        "min_value": None, "max_value": None, "exclude_min": False, "exclude_max": False,
        "sign": None, "rows": None, "dim": -1}
    return ValuesStrategy(
        dtype,
        distributions=distributions,
        specials=specials,
        max_specials=max_specials,
        max_seed=max_seed,
        shown=call_repr("values", () if dtype is None else (dtype,), options, defaults),
        min_value=min_value,
        max_value=max_value,
        exclude_min=exclude_min,
        exclude_max=exclude_max,
        sign=sign,
        rows=rows,
        dim=dim,
    )
