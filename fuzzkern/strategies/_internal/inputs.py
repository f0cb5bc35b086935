"""``inputs()``: every argument of a kernel launch, drawn together into a :class:`Case`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from hypothesis import strategies as st

from fuzzkern.case.codec import encode_scalar
from fuzzkern.case.model import COMPILE_CHOICES, Case, TensorCase
from fuzzkern.errors import CaseError, InvalidArgument, describe
from fuzzkern.strategies._internal.base import FuzzkernStrategy
from fuzzkern.strategies._internal.tensors import (
    STANDALONE_DIM,
    TensorsStrategy,
    dim_inputs,
    draw_dims,
    is_derived,
    smallest,
)
from fuzzkern.strategies._internal.validation import check_strategy, fail

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData


class Target(Protocol):
    """What the strategies read of a target: the strategies stage sits below the target
    stage (:class:`fuzzkern.target.declare.Target` has this shape), so it names the shape, not
    the class."""

    @property
    def launcher(self) -> Callable[..., Any]: ...
    @property
    def dims(self) -> Mapping[str, Any]: ...
    @property
    def inplace_names(self) -> tuple[str, ...]: ...
    @property
    def id(self) -> str: ...
    @property
    def compile_options(self) -> Mapping[str, Sequence[Any]] | None: ...


def canonical_scalar(value: Any) -> Any:
    """NaN as the one object ``math.nan`` (also inside tuples and lists).

    JSON keeps no NaN payload or sign, and containers compare items by identity first, so a
    case holding ``math.nan`` equals itself after a JSON round trip.
    """
    if isinstance(value, float) and math.isnan(value):
        return math.nan
    if isinstance(value, tuple):
        return tuple(canonical_scalar(v) for v in value)
    if isinstance(value, list):
        return [canonical_scalar(v) for v in value]
    return value


def autotune_counts(launcher: Any) -> dict[str, int]:
    """Autotuned kernel name -> number of configs the launcher's kernels offer ({} if none)."""
    from fuzzkern.introspect import autotuner_config_counts  # imports triton: only when asked

    return dict(autotuner_config_counts(launcher))


#: autotuned kernels the cases of a target reached at run time that its launcher's code does
#: not name (a library's launch wrapper such as FlagGems' ``@libentry``, an
#: ``autograd.Function``), by target id: kernel name -> number of configs. Filled by the search
#: from the cases' ``config_counts`` (:func:`discover`); the target's cases draw a config for
#: them from then on, in this process.
DISCOVERED: dict[str, dict[str, int]] = {}


def discover(target_id: str, counts: Mapping[str, int]) -> list[str]:
    """Add the autotuned kernels a case of ``target_id`` ran (name -> number of configs) to
    :data:`DISCOVERED`; the names new to it (a kernel the strategy already draws for is
    never added)."""
    known = DISCOVERED.setdefault(target_id, {})
    new = [k for k, n in counts.items() if k not in known and isinstance(n, int) and n > 0]
    for k in new:
        known[k] = counts[k]
    return new


class DimStrategy(FuzzkernStrategy[int]):
    """A plain-int input equal to one of the case's dims. See :func:`dim`."""

    def __init__(self, name: str) -> None:
        super().__init__(f"dim({name!r})")
        self.name = name

    def _check(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            fail("a dim name (an identifier, e.g. 'G')", "name", self.name,
                 'Pass e.g. group=fks.dim("G") with dims={"G": fks.sizes(max_value=8)}.')

    def _draw(self, data: ConjectureData) -> int:
        return int(data.draw(STANDALONE_DIM))


def dim(name: str) -> DimStrategy:
    """A plain-int launcher argument that takes the value of dim ``name``, drawn (and shrunk)
    from the target's ``dims`` like the dims of its tensors: a group size, a chunk length, a
    head count that shapes no tensor by itself.

    >>> from hypothesis import find
    >>> from fuzzkern import strategies as fks
    >>> spec = fks.inputs(x=fks.tensors(("T",)), chunk=fks.dim("C"))
    >>> case = find(spec, lambda c: c.scalars["chunk"] > 2)
    >>> case.scalars["chunk"] == case.dims["C"], case.scalars["chunk"]
    (True, 3)
    """
    return DimStrategy(name)


def dim_scalars(named: Mapping[str, Any]) -> dict[str, str]:
    """Input name -> dim name of the inputs that are :func:`dim`."""
    return {k: v.name for k, v in named.items() if isinstance(v, DimStrategy)}


class InputsStrategy(FuzzkernStrategy[Case]):
    """The inputs of a target, in declaration order. See :func:`inputs`."""

    def __init__(self, named: Mapping[str, Any], shown: str) -> None:
        super().__init__(shown)
        self.named = dict(named)

    @property
    def tensors(self) -> dict[str, TensorsStrategy]:
        return {k: v for k, v in self.named.items() if isinstance(v, TensorsStrategy)}

    @property
    def symbols(self) -> tuple[str, ...]:
        """Every dim name the tensors use, in order of first use."""
        self.check()
        names: dict[str, None] = {}
        for t in self.tensors.values():
            names.update(dict.fromkeys(t.symbols))
        names.update(dict.fromkeys(dim_scalars(self.named).values()))
        return tuple(names)

    def _check(self) -> None:
        order = list(self.named)
        for name, strategy in self.named.items():
            check_strategy(
                name,
                strategy,
                "Wrap a constant in st.just(...), or use fks.tensors(...) for a tensor.",
            )
            if not isinstance(strategy, TensorsStrategy):
                continue
            try:
                strategy.check()
            except InvalidArgument as e:
                raise InvalidArgument(f"In input {name!r}: {e}") from e
            source = strategy.dtype_of
            if source is None:
                continue
            tensors = [k for k in order[: order.index(name)] if k in self.tensors]
            fix = (
                f"Earlier tensor inputs: {', '.join(tensors)}."
                if tensors
                else f"No tensor input comes before {name!r}; declare the source first."
            )
            if source not in self.named:
                fail(f"the name of an earlier tensor input of {name!r}", "dtype_of", source, fix)
            if source not in self.tensors:
                fail(
                    f"the name of a tensor input (not a scalar) for {name!r}",
                    "dtype_of",
                    source,
                    fix,
                )
            if order.index(source) >= order.index(name):
                fail(
                    f"an input declared before {name!r} (inputs are drawn in order)",
                    "dtype_of",
                    source,
                    fix,
                )

    def validate_against(self, target: Target) -> None:
        """Raise ``InvalidArgument`` if these inputs do not fit ``target``: a dim name missing
        from ``target.dims``, a dim that is not a strategy, or an in-place input that is not a
        tensor (or may be expanded)."""
        self.check()
        dims = target.dims
        if not isinstance(dims, Mapping):
            fail(
                "a dict of dim name -> strategy",
                "dims",
                dims,
                'Pass e.g. dims={"N": fks.sizes(max_value=4096)}.',
            )
        for dim, strategy in dims.items():
            if not isinstance(dim, str):
                fail("dim names that are strs", "dim", dim, 'Pass e.g. dims={"N": fks.sizes()}.')
            if is_derived(strategy):
                for used in dim_inputs(strategy):
                    if used not in dims or used == dim:
                        fail(f"a dim named in the target's dims for derived dim {dim!r}",
                             f"dims[{dim!r}]", strategy,
                             f"Add {used!r} to dims, e.g. dims={{{used!r}: fks.sizes()}}.")
                continue
            check_strategy(
                f"dims[{dim!r}]",
                strategy,
                "Draw dims from fks.sizes(...), or wrap a constant in st.just(...).",
            )
        uses = [(name, sym) for name, t in self.tensors.items() for sym in t.symbols]
        for name, sym in [*uses, *dim_scalars(self.named).items()]:
            if sym not in dims:
                known = ", ".join(map(repr, dims)) or "none"
                fail(
                    f"a dim named in the target's dims (known: {known}) for input {name!r}",
                    "dim",
                    sym,
                    f"Add it, e.g. dims={{{sym!r}: fks.sizes()}}.",
                )
        for name in target.inplace_names:
            if name not in self.named:
                fail(f"the name of an input (one of {', '.join(self.named)})", "inplace", name)
            if name not in self.tensors:
                fail(
                    "the name of a tensor input, since a scalar cannot be updated in place",
                    "inplace",
                    name,
                )
            if self.tensors[name].expand:
                fail(
                    f"expand=False for input {name!r}, which is updated in place",
                    "expand",
                    True,
                    "A write through a stride-0 dim races with itself.",
                )
        self._check_numel_feasible(dims)

    def _check_numel_feasible(self, dims: Mapping[str, Any]) -> None:
        for name, tensor in self.tensors.items():
            limit = tensor.limit()
            if limit is None:
                continue
            least = limit.fixed * math.prod(
                smallest(dims.get(d)) ** k for d, k in limit.counts.items()
            )
            if least > limit.max_numel:
                fail(
                    f"max_numel >= {least} for input {name!r} (its dims at their min_value)",
                    "max_numel",
                    limit.max_numel,
                    "Raise it or lower those dims' min_value.",
                )

    def cases_for(self, target: Target, compiled: bool = True) -> st.SearchStrategy[Case]:
        """The strategy of :class:`~fuzzkern.case.model.Case` for ``target``: dims, then inputs in
        order, then one config index per autotuned kernel of the launcher's code (shrinks to
        config 0), then the target's compile options (shrink to the first value given), then
        one config index per autotuned kernel earlier cases reached at run time
        (:data:`DISCOVERED`, read as each case is drawn: last, so a case drawn before a
        discovery decodes the same after it). ``target.autotune == "benchmark"``: no config
        is drawn."""
        self.validate_against(target)
        drawn = getattr(target, "autotune", "draw") == "draw"
        static = autotune_counts(target.launcher) if drawn else {}
        return CasesStrategy(
            self,
            dict(target.dims),
            target.inplace_names,
            static,
            shown=f"{self!r}.cases_for({target.id!r})",
            compile_choices=target.compile_options if compiled else None,
            discovered=DISCOVERED.setdefault(target.id, {}) if drawn else None,
        )

    def draw_case(
        self,
        data: ConjectureData,
        dims: Mapping[str, st.SearchStrategy[int]],
        inplace: Sequence[str] = (),
        configs: Mapping[str, int] | None = None,
        compile_choices: Mapping[str, Sequence[Any]] | None = None,
        discovered: Mapping[str, int] | None = None,
    ) -> Case:
        self.check()
        limits = [lim for t in self.tensors.values() if (lim := t.limit()) is not None]
        sizes: dict[str, int] = draw_dims(data, dims, limits)
        drawn: dict[str, TensorCase | Any] = {}
        env: dict[str, Any] = dict(sizes)  # what a value bound may name: dims, earlier scalars
        for name, strategy in self.named.items():
            if isinstance(strategy, TensorsStrategy):
                dtype = drawn[strategy.dtype_of].dtype if strategy.dtype_of else None
                drawn[name] = strategy.draw_in(data, sizes, dtype=dtype, inplace=name in inplace,
                                               env=env)
            elif isinstance(strategy, DimStrategy):
                strategy.check()
                drawn[name] = env[name] = int(sizes[strategy.name])
            else:
                drawn[name] = env[name] = scalar(name, data.draw(strategy))
        chosen = _draw_configs(data, configs or {})
        options: dict[str, Any] = {}
        for option, choices in sorted((compile_choices or {}).items()):
            value = data.draw(st.sampled_from(tuple(choices)))  # shrinks to the first: default
            if value != COMPILE_CHOICES[option][0]:
                options[option] = value
        if discovered:
            chosen.update(_draw_configs(data, {k: n for k, n in discovered.items()
                                               if k not in chosen}))
        return Case(sizes, drawn, chosen, options)

    def _draw(self, data: ConjectureData) -> Case:
        return self.draw_case(data, dict.fromkeys(self.symbols, STANDALONE_DIM))


def _draw_configs(data: ConjectureData, counts: Mapping[str, int]) -> dict[str, int]:
    """One config index per autotuned kernel (name -> number of configs), by name."""
    chosen: dict[str, int] = {}
    for kernel, n in sorted(counts.items()):
        if n > 1:
            chosen[kernel] = data.draw(st.integers(0, n - 1))
        elif n == 1:
            chosen[kernel] = 0
    return chosen


def scalar(name: str, value: Any) -> Any:
    """A drawn scalar or meta-parameter as case data; it must survive JSON."""
    value = canonical_scalar(value)
    try:
        encode_scalar(value)
    except CaseError as e:
        raise InvalidArgument(
            f"Expected input {name!r} to draw a JSON-representable scalar (None, bool, int, "
            f"float, str, or a tuple of them) but got {describe(name, value)}. Draw plain "
            f"Python values, e.g. with .map(int) or .map(float)."
        ) from e
    return value


class CasesStrategy(st.SearchStrategy[Case]):
    """The cases of one target; built by :meth:`InputsStrategy.cases_for`."""

    def __init__(
        self,
        inputs: InputsStrategy,
        dims: Mapping[str, st.SearchStrategy[int]],
        inplace: Sequence[str],
        configs: Mapping[str, int],
        shown: str,
        compile_choices: Mapping[str, Sequence[Any]] | None = None,
        discovered: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__()
        self.inputs = inputs
        self.dims = dims
        self.inplace = tuple(inplace)
        self.configs = dict(configs)
        self.compile_choices = dict(compile_choices or {})
        #: read at each draw (a live mapping: :data:`DISCOVERED`'s entry for the target)
        self.discovered = discovered
        self._shown = shown

    def __repr__(self) -> str:
        return self._shown

    def do_draw(self, data: ConjectureData) -> Case:
        return self.inputs.draw_case(data, self.dims, self.inplace, self.configs,
                                     self.compile_choices, self.discovered)


def inputs(**named: Any) -> InputsStrategy:
    """All the inputs of a kernel launch, drawn together as one :class:`fuzzkern.case.model.Case`.

    Each keyword is an argument of the launcher: :func:`tensors` for tensors, any Hypothesis
    strategy for scalars and meta-parameters (``st.floats(-4, 4)``,
    ``st.sampled_from([64, 128])``). Inputs are drawn in declaration order, so ``dtype_of``
    may only name an earlier tensor. Named dims come from the target's ``dims`` and are shared
    by every tensor of a case (drawn on its own, each dim comes from ``sizes(max_value=64)``).
    Scalars must be JSON-representable: None, bool, int, float, str or tuples of them.

    >>> from hypothesis import find, strategies as st
    >>> from fuzzkern import strategies as fks
    >>> spec = fks.inputs(
    ...     a=fks.tensors(("N",)),
    ...     b=fks.tensors(("N",), dtype_of="a"),
    ...     BLOCK=st.sampled_from([64, 128]),
    ... )
    >>> case = find(spec, lambda c: c.inputs["a"].dtype == "float16")
    >>> case.describe()
    'a=float16[1] values=small_ints; b=float16[1] values=small_ints; BLOCK=64'
    """
    shown = "inputs(" + ", ".join(f"{k}={v!r}" for k, v in named.items()) + ")"
    return InputsStrategy(named, shown)
