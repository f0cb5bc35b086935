"""``tensors()``: one tensor argument as data (shape, dtype, layout, value recipe)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hypothesis import reject
from hypothesis import strategies as st

from fuzzkern.case.model import Layout, TensorCase, Values
from fuzzkern.errors import CaseError, InvalidArgument, describe
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.dtypes import DEFAULT_DTYPES, check_dtype_names
from fuzzkern.strategies._internal.layouts import LayoutsStrategy, layouts
from fuzzkern.strategies._internal.sizes import SizesStrategy, sizes
from fuzzkern.strategies._internal.validation import (
    call_repr,
    check_bool,
    check_int,
    check_strategy,
    fail,
    is_int,
)
from fuzzkern.strategies._internal.values import (
    DISTRIBUTIONS,
    SPECIALS,
    ValuesStrategy,
    dtype_kind,
)
from fuzzkern.strategies._internal.values import values as default_values

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData

#: How a symbolic dim is drawn when a tensor is drawn on its own (outside ``inputs()``).
STANDALONE_DIM = sizes(max_value=64)


# --------------------------------------------------------------------------------------------
# Symbolic dims, drawn once per case with bounds derived from max_numel


@dataclass(frozen=True)
class NumelLimit:
    """``fixed * prod(dims[d] ** counts[d]) <= max_numel`` for one tensor."""

    counts: Mapping[str, int]
    fixed: int
    max_numel: int


def iroot(n: int, k: int) -> int:
    """The largest ``r`` with ``r**k <= n``.

    >>> iroot(1000, 3), iroot(999, 3), iroot(7, 1)
    (10, 9, 7)
    """
    if k == 1 or n <= 1:
        return n
    r = int(round(n ** (1.0 / k)))
    while r**k > n:
        r -= 1
    while (r + 1) ** k <= n:
        r += 1
    return r


def smallest(strategy: object) -> int:
    """A lower bound on what a dim strategy draws (0 when unknown)."""
    if isinstance(strategy, SizesStrategy):
        strategy.check()
        return strategy.lowest
    return 0


def draw_dims(
    data: ConjectureData,
    strategies: Mapping[str, st.SearchStrategy[int]],
    limits: Sequence[NumelLimit] = (),
) -> dict[str, int]:
    """Draw every dim once, in order. A :func:`sizes` dim is capped so that every tensor stays
    within its ``max_numel`` given the dims drawn so far and the smallest sizes of the rest:
    the bound is derived, so no draw is thrown away for being too big."""
    drawn: dict[str, int] = {}
    derived = {k: v for k, v in strategies.items() if is_derived(v)}
    for name, strategy in strategies.items():
        if name in derived:
            continue
        cap: int | None = None
        for limit in limits:
            k = limit.counts.get(name, 0)
            if not k:
                continue
            rest = limit.fixed
            for other, j in limit.counts.items():
                if other != name:
                    if other in drawn:
                        v = drawn[other]
                    else:
                        v = max(smallest(strategies.get(other)), 1)
                    rest *= v**j
            if rest:
                c = iroot(limit.max_numel // rest, k)
                cap = c if cap is None else min(cap, c)
        if cap is not None and isinstance(strategy, SizesStrategy):
            strategy.check()
            if cap < strategy.lowest:
                # Only reachable when an earlier dim came from a strategy we cannot bound.
                reject()
            value = data.draw(strategy.up_to(cap))
        else:
            value = data.draw(strategy)
        if not is_int(value) or value < 0:
            raise InvalidArgument(
                f"Expected dim {name} to draw an int >= 0 but got {describe(name, value)}. "
                f"Draw dims from fks.sizes(...) or another strategy of non-negative ints."
            )
        drawn[name] = value
    drawn.update(derive_dims(derived, drawn))
    return {k: drawn[k] for k in strategies}


def is_derived(spec: object) -> bool:
    """A dim computed from other dims: an expression (``"G*K"``) or a callable."""
    return isinstance(spec, str) or (callable(spec) and not isinstance(spec, st.SearchStrategy))


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def dim_expression(text: str) -> tuple[ast.expr, tuple[str, ...]]:
    """Parse a derived dim's expression: dim names, ints, ``+ - * // % **`` and parentheses
    (parsed, never evaluated as code). Returns the tree and the names it uses."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        fail("an expression of dim names and ints such as \"G*K\"", "dim", text)
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.append(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _OPS:
                fail("only + - * // % ** in a dim expression", "dim", text)
        elif isinstance(node, ast.Constant):
            if not is_int(node.value):
                fail("only int constants in a dim expression", "dim", text)
        elif not isinstance(node, (ast.Load, ast.operator, ast.expr_context)):
            fail("an expression of dim names and ints such as \"G*K\"", "dim", text)
    return tree, tuple(dict.fromkeys(names))


def _evaluate(node: ast.expr, dims: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant):
        assert is_int(node.value)
        return int(node.value)  # type: ignore[arg-type]
    if isinstance(node, ast.Name):
        return dims[node.id]
    assert isinstance(node, ast.BinOp)
    return int(_OPS[type(node.op)](_evaluate(node.left, dims), _evaluate(node.right, dims)))


def dim_inputs(spec: object) -> tuple[str, ...]:
    """The dims a derived dim reads."""
    if isinstance(spec, str):
        return dim_expression(spec)[1]
    from fuzzkern.calls import _accepts

    return tuple(sorted(_accepts(spec)[0]))  # type: ignore[arg-type]


def derive_dims(derived: Mapping[str, object], dims: Mapping[str, int]) -> dict[str, int]:
    """The values of the ``derived`` dims (in order; each may read earlier ones) from
    ``dims``."""
    from fuzzkern.calls import call_with

    known = dict(dims)
    out: dict[str, int] = {}
    for name, spec in derived.items():
        missing = [d for d in dim_inputs(spec) if d not in known]
        if missing:
            fail(f"dims drawn before {name!r} (known: {', '.join(known) or 'none'})",
                 f"dims[{name!r}]", spec, f"Declare {missing[0]!r} in dims.")
        if isinstance(spec, str):
            value = _evaluate(dim_expression(spec)[0], known)
        else:
            value = call_with(spec, known)  # type: ignore[arg-type]
        if not is_int(value) or value < 0:
            raise InvalidArgument(
                f"Expected dim {name} to compute an int >= 0 but got {describe(name, value)} "
                f"from dims {dict(known)}.")
        known[name] = out[name] = value
    return out


# --------------------------------------------------------------------------------------------


def check_shape(shape: object) -> tuple[int | str, ...]:
    fix = 'A shape is a tuple of sizes and dim names, e.g. shape=("M", 64).'
    if isinstance(shape, str) or is_int(shape):
        fix = f"For one dim pass shape=({shape!r},)."
    if not isinstance(shape, (tuple, list)):
        fail("a tuple of sizes (ints) and dim names (strs)", "shape", shape, fix)
    for i, item in enumerate(shape):
        if isinstance(item, str):
            if not item:
                fail("a non-empty dim name", f"shape[{i}]", item, fix)
        elif not is_int(item) or item < 0:
            fail("a size (an int >= 0) or a dim name (a str)", f"shape[{i}]", item, fix)
    return tuple(shape)


class TensorsStrategy(FuzzkernStrategy[TensorCase]):
    def __init__(
        self,
        shape: Sequence[int | str],
        *,
        dtypes: Sequence[str] | None,
        dtype_of: str | None,
        layout: bool | st.SearchStrategy[Layout],
        expand: bool,
        values: st.SearchStrategy[Values] | None,
        max_numel: int | None,
        shown: str,
    ) -> None:
        super().__init__(shown)
        self._shape_arg = shape
        self._dtypes_arg = dtypes
        self.dtype_of = dtype_of
        self._layout_arg = layout
        self.expand = expand
        self._values_arg = values
        self.max_numel = max_numel
        # Filled in by _check:
        self.shape: tuple[int | str, ...] = ()
        self.symbols: tuple[str, ...] = ()
        self._dtypes: st.SearchStrategy[str] = st.nothing()
        self._layouts: st.SearchStrategy[Layout] | None = None
        self._layouts_inplace: st.SearchStrategy[Layout] | None = None
        self._values: st.SearchStrategy[Values] = st.nothing()

    def layout_kinds(self) -> set[str]:
        """The layout kinds (``fuzzkern.case.model.Layout.kinds`` and ``contiguous``) this strategy
        can draw: the HTML report hides the others instead of showing them as gaps."""
        self.check()
        layout = self._layout_arg
        if layout is False:
            return {"contiguous"}
        if layout is not True:  # a strategy of the user's: anything it may draw
            return {"contiguous", "permuted", "strided", "offset", "expanded"}
        kinds = {"contiguous", "strided", "offset"}
        if len(self.shape) >= 2:
            kinds.add("permuted")
        if self.expand:
            kinds.add("expanded")
        return kinds

    def _check(self) -> None:
        self.shape = check_shape(self._shape_arg)
        ndim = len(self.shape)
        self.symbols = tuple(dict.fromkeys(s for s in self.shape if isinstance(s, str)))
        if self.dtype_of is not None:
            if not isinstance(self.dtype_of, str):
                fail(
                    "the name of an earlier tensor input",
                    "dtype_of",
                    self.dtype_of,
                    'Pass e.g. dtype_of="a".',
                )
            if self._dtypes_arg is not None:
                fail(
                    "dtypes=None when dtype_of is given",
                    "dtypes",
                    self._dtypes_arg,
                    f"The dtype is copied from input {self.dtype_of!r}; drop one of the two.",
                )
        names = DEFAULT_DTYPES if self._dtypes_arg is None else self._dtypes_arg
        self._dtypes = st.sampled_from(check_dtype_names("dtypes", names))
        layout = self._layout_arg
        check_bool("expand", self.expand)
        if isinstance(layout, bool):
            if layout:
                self._layouts = layouts(ndim, expand=self.expand)
                self._layouts_inplace = layouts(ndim)
            elif self.expand:
                fail(
                    "expand=False with layout=False",
                    "expand",
                    self.expand,
                    "Expanded dims need a layout; pass layout=True.",
                )
        else:
            check_strategy(
                "layout", layout, f"Pass True, False, or a strategy such as fks.layouts({ndim})."
            )
            if self.expand:
                fail(
                    "expand=False with a layout strategy",
                    "expand",
                    self.expand,
                    f"Pass expand=True to the strategy instead: fks.layouts({ndim}, expand=True).",
                )
            if isinstance(layout, LayoutsStrategy):
                layout.check()
                if layout.ndim != ndim:
                    fail(
                        f"a layout strategy for {ndim} dims",
                        "layout",
                        layout,
                        f"Pass fks.layouts({ndim}) for shape {self.shape}.",
                    )
            self._layouts = self._layouts_inplace = layout
        v = self._values_arg
        if v is None:
            self._values = default_values()
        else:
            check_strategy("values", v, 'Pass e.g. values=fks.values(distributions=["normal"]).')
            if isinstance(v, ValuesStrategy):
                v.check()
                if v.rows is not None and self.expand:
                    fail("expand=False with probability rows", "expand", self.expand,
                         "A row along a stride-0 dim repeats one value; it cannot sum to 1.")
                if self.dtype_of is None:
                    for dtype in check_dtype_names("dtypes", names):
                        v.for_dtype(dtype)  # its distributions must fit every dtype drawn
            self._values = v
        if self.max_numel is not None:
            check_int("max_numel", self.max_numel, min_value=0)
            fixed = self.fixed
            if fixed > self.max_numel:
                fail(
                    f"max_numel >= {fixed} (the product of the fixed sizes in {self.shape})",
                    "max_numel",
                    self.max_numel,
                )

    @property
    def fixed(self) -> int:
        return math.prod(s for s in self.shape if isinstance(s, int))

    def limit(self) -> NumelLimit | None:
        self.check()
        if self.max_numel is None:
            return None
        counts: dict[str, int] = {}
        for s in self.shape:
            if isinstance(s, str):
                counts[s] = counts.get(s, 0) + 1
        return NumelLimit(counts, self.fixed, self.max_numel)

    def draw_in(
        self,
        data: ConjectureData,
        dims: Mapping[str, int],
        *,
        dtype: str | None = None,
        inplace: bool = False,
        env: Mapping[str, Any] | None = None,
    ) -> TensorCase:
        """Draw this tensor with its symbolic dims taken from ``dims`` (already drawn) and, when
        given, the dtype fixed (``dtype_of``). In-place tensors never get stride-0 dims. Value
        bounds that name a dim or scalar are read from ``env`` (default: ``dims``)."""
        self.check()
        shape = tuple(dims[s] if isinstance(s, str) else s for s in self.shape)
        if self.max_numel is not None and math.prod(shape) > self.max_numel:
            reject()  # only when a dim came from a strategy whose bound we cannot derive
        if dtype is None:
            dtype = data.draw(self._dtypes)
        strategy = self._layouts_inplace if inplace else self._layouts
        layout = Layout.contiguous(len(shape)) if strategy is None else data.draw(strategy)
        if not isinstance(layout, Layout):
            fail(
                "a strategy of fuzzkern.case.model.Layout",
                "layout",
                self._layout_arg,
                f"It drew {layout!r}; use fks.layouts({len(shape)}).",
            )
        if inplace and layout.expanded:
            fail(
                "no expanded dims for a tensor updated in place",
                "layout",
                layout,
                "Writing through a stride-0 dim races; drop expand for in-place inputs.",
            )
        if isinstance(self._values, ValuesStrategy):
            positions = math.prod(1 if d in layout.expanded else n for d, n in enumerate(shape))
            recipe = self._values.draw_for(data, dtype, positions,
                                           dims if env is None else env)
        else:
            recipe = data.draw(self._values)
            check_recipe(recipe, dtype)
        try:
            return TensorCase.build(shape, dtype, layout, recipe)
        except CaseError as e:
            raise InvalidArgument(
                f"Expected a layout that fits shape {shape} but got {describe('layout', layout)}"
                f" ({e}). Draw layouts from fks.layouts({len(shape)})."
            ) from e

    def _draw(self, data: ConjectureData) -> TensorCase:
        if self.dtype_of is not None:
            fail(
                "dtype_of=None for a tensor drawn on its own",
                "dtype_of",
                self.dtype_of,
                "dtype_of names another input, so use this tensor inside fks.inputs(...).",
            )
        limit = self.limit()
        dims = draw_dims(
            data, dict.fromkeys(self.symbols, STANDALONE_DIM), [limit] if limit else []
        )
        return self.draw_in(data, dims)


def check_recipe(recipe: object, dtype: str) -> None:
    """A user's values strategy must draw a :class:`Values` that fits ``dtype``."""
    if not isinstance(recipe, Values):
        fail("a strategy of fuzzkern.case.model.Values", "values", recipe, "Use fks.values(...).")
    kind = dtype_kind(dtype)
    if recipe.distribution not in DISTRIBUTIONS[kind]:
        fail(
            f"a distribution for {dtype} ({', '.join(DISTRIBUTIONS[kind])})",
            "distribution",
            recipe.distribution,
            "Use fks.values(...).",
        )
    for _, special in recipe.specials:
        if special not in SPECIALS[kind] and not special.startswith("="):
            fail(
                f"a special value for {dtype} ({', '.join(SPECIALS[kind])})",
                "special",
                special,
                "Use fks.values(...).",
            )


def tensors(
    shape: Sequence[int | str],
    *,
    dtypes: Sequence[str] | None = None,
    dtype_of: str | None = None,
    layout: bool | st.SearchStrategy[Layout] = True,
    expand: bool = False,
    values: st.SearchStrategy[Values] | None = None,
    max_numel: int | None = None,
) -> st.SearchStrategy[TensorCase]:
    """Tensor arguments (:class:`fuzzkern.case.model.TensorCase`): pure data, built on the CPU
    later.

    ``shape`` holds sizes and dim names: ``("M", "K")`` or ``("N", 4)``. Inside
    :func:`inputs`, named dims come from the target's ``dims`` and are shared by every tensor
    of a case; drawn on its own, each name is drawn once from ``sizes(max_value=64)``.
    ``max_numel`` bounds the element count by lowering the bounds of :func:`sizes` dims.

    The dtype comes from ``dtypes`` (default float32, float16, bfloat16) or, with
    ``dtype_of="a"``, is that of the earlier input ``a``. The layout is drawn by
    ``layouts(ndim, expand=expand)``; ``layout=False`` keeps the tensor contiguous, and a
    strategy such as ``fks.layouts(2, permute=False)`` replaces the default. Values come from
    ``values`` (default :func:`values`), bound to the drawn dtype.

    Each part shrinks on its own: to size ``min_value``, float32, contiguous, seed 0,
    ``"small_ints"`` and no special values.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> find(fks.tensors(("N", 4)), lambda t: t.shape[0] > 1).describe()
    'float32[2,4] values=small_ints'
    """
    options = {
        "dtypes": dtypes,
        "dtype_of": dtype_of,
        "layout": layout,
        "expand": expand,
        "values": values,
        "max_numel": max_numel,
    }
    defaults: dict[str, Any] = {
        "dtypes": None,
        "dtype_of": None,
        "layout": True,
        "expand": False,
        "values": None,
        "max_numel": None,
    }
    return TensorsStrategy(
        shape,
        dtypes=dtypes,
        dtype_of=dtype_of,
        layout=layout,
        expand=expand,
        values=values,
        max_numel=max_numel,
        shown=call_repr("tensors", (shape,), options, defaults),
    )
