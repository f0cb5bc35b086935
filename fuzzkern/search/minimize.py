"""Minimization after the shrink: smaller failing cases that take several changes at once.

Hypothesis shrinks the choices a case was drawn from, a few at a time, and keeps a change
only if the case still fails. Tensor values are not drawn element by element but from a
recipe (seed, distribution, special values: docs/architecture.md, case), and the tensors' sizes come
from shared dims, so some smaller failing cases are out of its reach:

- the failure shows only in row 1 of an ``M=2`` case: ``M=1`` fails only with another seed
  or distribution as well (lowering ``M`` alone keeps row 0, which passes);
- a softmax overflows on the ``inf`` at element 0 of ``N=2``: ``N=1`` needs values of a
  larger magnitude instead (an ``inf`` alone gives NaN in both kernel and reference);
- a remainder tile is dropped with ``M=17, N=17`` (4 tiles on 3 programs): ``M=1`` needs
  ``N`` to *grow* past the next tile boundary and the program count to fall at the same time.

:func:`minimize` runs once Hypothesis has shrunk a failure, on the case it settled on, and
tries such combined moves in passes; the first candidate a pass accepts restarts from pass 1:

1. values, dims unchanged: special values dropped (all, or one), seed 0, simpler
   distributions;
2. one scalar or meta-parameter lowered (an earlier element of ``sampled_from``, an integer
   toward its shrink target, ``True`` to ``False``) or one autotune config lowered;
3. dims: one dim lowered (to its strategy's minimum, 1, 2, half, minus one, or a size below it
   just past a power of two or a multiple of 16), or a pair traded: one dim to its minimum
   while another grows to a size above it just past a power of two or a multiple of 16;
4. each move of pass 3 with one scalar or config of pass 2;
5. each move of pass 3 with every tensor's values re-drawn: seeds 0, 1 and 2 with each
   distribution the tensor's strategy allows, with and without its special values, or its
   special values turned into another kind (an ``inf`` into the dtype's max).

Candidates stay inside what the target's strategies can draw: a dim within its ``sizes()``
bounds (or ``st.integers``/``st.sampled_from``; a dim drawn otherwise is left alone) and
every tensor's ``max_numel``; tensors keep their dtype and layout (rebuilt for a new shape by
:meth:`~fuzzkern.case.model.TensorCase.build`, special-value positions wrapped into it); values use
only the distributions and special values the tensor's ``fks.values()`` allows (a tensor with
another values strategy keeps its recipe); scalars move only inside ``sampled_from``,
``integers`` and ``booleans`` strategies.

"Smaller" is, in order: fewer tensor elements in total; the dims in declaration order; simpler
values (fewer special values, fewer non-zero seeds, distributions nearer ``small_ints``, smaller
seeds); lower scalars; lower configs. A pass tries only candidates smaller than the current
case, smallest first, each through the same worker pool, and accepts one when it fails with a
verdict of the same family at the same location (:func:`fuzzkern.judge.verdict.failure_key`: another
distinct failure is reported on its own, not swapped in); a pass, a precondition or
another kind of failure rejects it.

The search is greedy and deterministic (the same case gives the same candidates in the same
order) and bounded: at most ``max_runs`` worker runs per failure (default
:data:`MAX_RUNS`), none started after ``deadline`` (the engine passes its shrink deadline).
Hangs are not minimized: every run of one waits for the timeout. The result is the smallest
failing case the pass reached, not a proven minimum.

Example::

    m = minimize(target, case, outcome, run_case, deadline=time.monotonic() + 20)
    m.case, m.outcome  # the smaller failing case and its outcome (or the ones given)
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from fuzzkern.case.model import (
    FLOAT_DISTRIBUTIONS,
    FLOAT_SPECIALS,
    INT_DISTRIBUTIONS,
    INT_SPECIALS,
    Case,
    Layout,
    TensorCase,
    Values,
    is_float_dtype,
)
from fuzzkern.errors import CaseError, FuzzkernError
from fuzzkern.judge.outcome import Outcome, Verdict
from fuzzkern.strategies._internal.inputs import dim_scalars
from fuzzkern.strategies._internal.tensors import derive_dims, is_derived

if TYPE_CHECKING:  # pragma: no cover
    from fuzzkern.target.declare import Target

#: Most worker runs one failure's minimization may make.
MAX_RUNS = 60
#: Seeds pass 5 re-draws values with.
SEEDS = (0, 1, 2)
#: Sizes just past a multiple of the smallest common tile (16) are tried up to this many tiles.
TILE = 16
MAX_TILES = 8

Key = tuple[Any, ...]


@dataclass
class Minimized:
    """What :func:`minimize` reached: the smallest failing case and its outcome."""

    case: Case
    outcome: Outcome
    #: worker runs made, and candidates accepted (0: the case given was kept)
    runs: int = 0
    steps: int = 0
    #: why it stopped before running out of candidates ("runs", "deadline"), or None
    stopped: str | None = None


# --------------------------------------------------------------------------------------------
# What the target's strategies allow


def _unwrap(strategy: Any) -> Any:
    for _ in range(8):  # LazyStrategy -> the strategy it builds
        inner = getattr(strategy, "wrapped_strategy", None)
        if inner is None or inner is strategy:
            break
        strategy = inner
    return strategy


def _hypothesis_kind(strategy: Any) -> tuple[str, Any] | None:
    """("choices", elements), ("range", (start, end)) or ("bool", None) for the plain
    Hypothesis strategies whose values can be enumerated; None for anything else."""
    try:
        from hypothesis.strategies._internal.misc import BooleansStrategy
        from hypothesis.strategies._internal.numbers import IntegersStrategy
        from hypothesis.strategies._internal.strategies import SampledFromStrategy
    except ImportError:  # pragma: no cover - Hypothesis moved its internals
        return None
    s = _unwrap(strategy)
    if isinstance(s, SampledFromStrategy):
        if getattr(s, "_transformations", ()):  # .map/.filter: the values are not the elements
            return None
        return "choices", tuple(s.elements)
    if isinstance(s, IntegersStrategy):
        return "range", (s.start, s.end)
    if isinstance(s, BooleansStrategy):
        return "bool", None
    return None


def _boundaries(lo: int, hi: int) -> list[int]:
    """Sizes in ``[lo, hi]`` just past a power of two or a multiple of :data:`TILE`: the
    smallest sizes that need one more block of a blocked kernel."""
    out = {2**k + 1 for k in range(1, max(hi, 2).bit_length() + 1)}
    out.update(TILE * m + 1 for m in range(1, MAX_TILES + 1))
    return sorted(v for v in out if lo <= v <= hi)


@dataclass(frozen=True)
class _IntDomain:
    """The ints a dim or an integer scalar may take: ``[lo, hi]`` (``hi`` None: unbounded
    above) or, when ``choices`` is set, only those (in the strategy's shrink order)."""

    lo: int | None = None
    hi: int | None = None
    choices: tuple[int, ...] | None = None
    #: sizes(multiple_of=m): only multiples of m
    step: int = 1

    def lower(self, n: int) -> list[int]:
        if self.choices is not None:
            return [v for v in dict.fromkeys(self.choices) if v < n]
        lo = 0 if self.lo is None else self.lo
        m = self.step
        vals = {lo, 1, 2, n // 2, n - 1, *_boundaries(lo, n - 1)}
        if m > 1:
            vals = {v // m * m for v in vals} | {n - m}
        return sorted(v for v in vals if lo <= v < n and v % m == 0)

    def floor(self, n: int) -> list[int]:
        """Where a dim goes when it trades its size to another: its minimum (and 1 too when
        that minimum is 0, an empty tensor)."""
        if self.choices is not None:
            low = [v for v in self.choices if v < n]
            return [min(low)] if low else []
        lo = 0 if self.lo is None else self.lo
        if self.step > 1:
            return [lo] if lo < n else []
        return [v for v in dict.fromkeys((lo, 1) if lo == 0 else (lo,)) if v < n]

    def higher(self, n: int) -> list[int]:
        if self.choices is not None:
            return sorted(v for v in dict.fromkeys(self.choices) if v > n)
        if self.hi is None:
            return []
        if self.step > 1:
            m = self.step
            return sorted({-(-v // m) * m for v in _boundaries(n + 1, self.hi)
                           if -(-v // m) * m <= self.hi})
        return _boundaries(n + 1, self.hi)


def _dim_domain(strategy: Any) -> _IntDomain | None:
    from fuzzkern.strategies._internal.sizes import SizesStrategy

    if isinstance(strategy, SizesStrategy):
        strategy.check()
        return _IntDomain(strategy.lowest, strategy.max_value, step=strategy.multiple_of)
    kind = _hypothesis_kind(strategy)
    if kind is None:
        return None
    if kind[0] == "choices":
        ints = tuple(v for v in kind[1] if isinstance(v, int) and not isinstance(v, bool)
                     and v >= 0)
        return _IntDomain(choices=ints) if ints else None
    if kind[0] == "range":
        start, end = kind[1]
        return _IntDomain(max(0, start or 0), end)
    return None


@dataclass(frozen=True)
class _ValuesDomain:
    """The recipes a tensor's ``fks.values()`` strategy may draw for its dtype."""

    distributions: tuple[str, ...]
    specials: tuple[str, ...]
    max_seed: int


def _values_domain(strategy: Any, dtype: str) -> _ValuesDomain | None:
    from fuzzkern.strategies._internal.tensors import TensorsStrategy
    from fuzzkern.strategies._internal.values import ValuesStrategy

    if not isinstance(strategy, TensorsStrategy):
        return None
    strategy.check()
    values = strategy._values
    if not isinstance(values, ValuesStrategy):
        return None
    try:
        values.check()
        distributions, specials = values.for_dtype(dtype)
    except FuzzkernError:
        return None
    return _ValuesDomain(distributions, specials, values.max_seed)


def _reread_bounds(recipe: Values, env: Mapping[str, Any]) -> Values | None:
    """``recipe`` with the bounds its domain read from a dim or scalar read again from ``env``
    (the candidate's dims and scalars); None when the range became empty."""
    dom = recipe.domain
    assert dom is not None
    changes = {}
    for side in ("min", "max"):
        source = getattr(dom, f"{side}_from")
        if source is not None and source in env:
            changes[f"{side}_value"] = env[source]
    if not changes:
        return recipe
    dom = replace(dom, **changes)
    lo, hi = dom.min_value, dom.max_value
    if lo is not None and hi is not None and (
            lo > hi or (lo == hi and (dom.exclude_min or dom.exclude_max))
            or (isinstance(lo, int) and isinstance(hi, int) and dom.exclude_min
                and dom.exclude_max and hi - lo < 2)):
        return None
    return replace(recipe, domain=dom)


def _distribution_rank(dtype: str, distribution: str) -> int:
    order = FLOAT_DISTRIBUTIONS if is_float_dtype(dtype) else INT_DISTRIBUTIONS
    return order.index(distribution) if distribution in order else len(order)


def _special_rank(dtype: str, kind: str) -> int:
    order = FLOAT_SPECIALS if is_float_dtype(dtype) else INT_SPECIALS
    return order.index(kind) if kind in order else len(order)


def _positions(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Distinct elements a recipe fills (stride-0 dims count once), as materialize does."""
    return math.prod(1 if st == 0 else s for s, st in zip(shape, strides, strict=True))


def _json(case: Case) -> str:
    return json.dumps(case.to_json(), sort_keys=True)


# --------------------------------------------------------------------------------------------
# The search


class _Minimizer:
    def __init__(self, target: Target, case: Case, outcome: Outcome,
                 run: Callable[[Case], Outcome], deadline: float | None,
                 max_runs: int) -> None:
        self.target = target
        self.run = run
        self.deadline = deadline
        self.max_runs = max_runs
        self.family = _key(outcome)
        self.runs = 0
        self.seen = {_json(case)}
        named = target.inputs.named
        self.derived = {d: s for d, s in target.dims.items() if is_derived(s)}
        self.dims = {d: _dim_domain(target.dims.get(d)) for d in case.dims
                     if d not in self.derived}
        self.shapes: dict[str, tuple[int | str, ...]] = {}
        self.max_numel: dict[str, int | None] = {}
        self.values: dict[str, _ValuesDomain | None] = {}
        for name, tc in case.tensors.items():
            strategy = named.get(name)
            shape = getattr(strategy, "shape", None)
            if shape is not None and len(shape) == len(tc.shape):
                self.shapes[name] = tuple(shape)
            self.max_numel[name] = getattr(strategy, "max_numel", None)
            self.values[name] = _values_domain(strategy, tc.dtype)
        self.scalars: dict[str, tuple[str, Any] | None] = {
            name: _hypothesis_kind(named.get(name)) for name in case.scalars}
        #: inputs that are a dim's value (fks.dim): they follow it, never move alone
        self.dim_scalars = dim_scalars(named)

    # -- order ---------------------------------------------------------------------------------

    def key(self, case: Case) -> Key:
        tensors = list(case.tensors.values())
        numel = sum(t.numel for t in tensors)
        dims = tuple(case.dims.values())
        values = (
            sum(len(t.values.specials) for t in tensors),
            sum(1 for t in tensors if t.values.seed),
            sum(_distribution_rank(t.dtype, t.values.distribution) for t in tensors),
            sum(t.values.seed for t in tensors),
            tuple(sorted(_special_rank(t.dtype, k) for t in tensors
                         for _, k in t.values.specials)),
        )
        scalars = tuple(self.scalar_rank(n, v) for n, v in case.scalars.items())
        return (numel, dims, values, scalars, tuple(sorted(case.configs.items())),
                len(case.compile))

    def scalar_rank(self, name: str, value: Any) -> int:
        kind = self.scalars.get(name)
        if kind is None:
            return 0
        if kind[0] == "choices":
            for i, v in enumerate(kind[1]):
                if v is value or (type(v) is type(value) and v == value):
                    return i
            return 0
        if kind[0] == "range" and isinstance(value, int) and not isinstance(value, bool):
            return abs(value - _shrink_target(*kind[1]))
        if kind[0] == "bool" and isinstance(value, bool):
            return int(value)
        return 0

    # -- building candidates -------------------------------------------------------------------

    def build(self, base: Case, dims: Mapping[str, int] | None = None,
              values: Mapping[str, Values] | None = None,
              scalars: Mapping[str, Any] | None = None,
              configs: Mapping[str, int] | None = None) -> Case | None:
        """``base`` with the given dims, recipes, scalars and configs; None when a tensor
        cannot take the new shape (its strategy's max_numel, or no layout to rebuild from)."""
        dims = dict(base.dims) if dims is None else dict(dims)
        if self.derived:
            try:
                dims.update(derive_dims(self.derived, dims))
            except FuzzkernError:
                return None
        inputs: dict[str, Any] = {}
        env: dict[str, Any] = dict(dims)
        for name, v in base.inputs.items():
            if not isinstance(v, TensorCase):
                if name in self.dim_scalars and self.dim_scalars[name] in dims:
                    inputs[name] = env[name] = int(dims[self.dim_scalars[name]])
                    continue
                inputs[name] = env[name] = scalars[name] if scalars and name in scalars else v
                continue
            recipe = values[name] if values and name in values else v.values
            if recipe.domain is not None:
                reread = _reread_bounds(recipe, env)
                if reread is None:
                    return None
                recipe = reread
            spec = self.shapes.get(name)
            shape = v.shape if spec is None else tuple(
                dims[s] if isinstance(s, str) else s for s in spec)
            if shape == v.shape:
                inputs[name] = replace(v, values=recipe)
                continue
            limit = self.max_numel.get(name)
            if limit is not None and math.prod(shape) > limit:
                return None
            layout = v.layout
            if layout is None:
                if not v.is_contiguous or v.storage_offset:  # pragma: no cover - not drawn
                    return None
                layout = Layout.contiguous(len(shape))
            try:
                tc = TensorCase.build(shape, v.dtype, layout, recipe)
            except CaseError:  # pragma: no cover - layouts fit every shape of their ndim
                return None
            n = _positions(tc.shape, tc.strides)
            specials = tuple((p % n, k) for p, k in recipe.specials) if n else ()
            inputs[name] = replace(tc, values=replace(recipe, specials=specials))
        return Case(dims, inputs, dict(base.configs) if configs is None else dict(configs),
                    base.compile)

    def dim_moves(self, case: Case) -> list[dict[str, int]]:
        """Pass 3's dims: one dim lowered, or one dim to its floor while another grows."""
        current = dict(case.dims)
        moves: list[dict[str, int]] = []
        for d, dom in self.dims.items():
            if dom is not None:
                moves += [{**current, d: v} for v in dom.lower(current[d])]
        for a, dom_a in self.dims.items():
            if dom_a is None:
                continue
            for b, dom_b in self.dims.items():
                if b == a or dom_b is None:
                    continue
                for low in dom_a.floor(current[a]):
                    moves += [{**current, a: low, b: high}
                              for high in dom_b.higher(current[b])]
        return moves

    def scalar_moves(self, case: Case) -> list[tuple[dict[str, Any], dict[str, int]]]:
        """Pass 2's changes: (scalars, configs) with one of them lowered."""
        scalars = dict(case.scalars)
        configs = dict(case.configs)
        out: list[tuple[dict[str, Any], dict[str, int]]] = []
        for name, value in scalars.items():
            out += [({**scalars, name: v}, configs) for v in self._lower_scalar(name, value)]
        for kernel, idx in configs.items():
            out += [(scalars, {**configs, kernel: i}) for i in range(idx)]
        return out

    def _lower_scalar(self, name: str, value: Any) -> list[Any]:
        kind = self.scalars.get(name)
        if kind is None:
            return []
        rank = self.scalar_rank(name, value)
        if kind[0] == "choices":
            return list(kind[1][:rank])
        if kind[0] == "bool":
            return [False] if value is True else []
        if kind[0] == "range" and isinstance(value, int) and not isinstance(value, bool):
            t = _shrink_target(*kind[1])
            step = 1 if value > t else -1
            return list(dict.fromkeys(v for v in (t, t + (value - t) // 2, value - step)
                                      if v != value))
        return []

    def value_variants(self, case: Case) -> list[dict[str, Values]]:
        """Pass 5's recipes, each applied to every tensor whose strategy allows it: seeds
        :data:`SEEDS` with each distribution, without and with the tensor's special values;
        and the special values turned into each other kind the strategy allows."""
        tensors = {n: t for n, t in case.tensors.items() if self.values.get(n) is not None}
        domains = {n: d for n in tensors if (d := self.values[n]) is not None}
        dists = dict.fromkeys(x for d in domains.values() for x in d.distributions)
        keeps = (False, True) if any(t.values.specials for t in tensors.values()) else (False,)
        out = []
        for seed in SEEDS:
            for dist in dists:
                for keep in keeps:
                    out.append({n: replace(
                        t.values,
                        seed=seed if seed <= domains[n].max_seed else t.values.seed,
                        distribution=(dist if dist in domains[n].distributions
                                      else t.values.distribution),
                        specials=t.values.specials if keep else ()) for n, t in tensors.items()})
        if True in keeps:
            kinds = dict.fromkeys(k for d in domains.values() for k in d.specials)
            for kind in kinds:
                out.append({n: replace(t.values, specials=tuple(
                    (p, kind if kind in domains[n].specials else k) for p, k in t.values.specials))
                    for n, t in tensors.items()})
        return out

    def simpler_values(self, case: Case) -> list[dict[str, Values]]:
        """Pass 1's recipes: one tensor's specials dropped (all, or one), its seed to 0, or
        a simpler distribution; or every tensor's recipe at its most boring at once."""
        out: list[dict[str, Values]] = []
        boring: dict[str, Values] = {}
        for name, t in case.tensors.items():
            dom = self.values.get(name)
            if dom is None:
                continue
            v = t.values
            boring[name] = replace(v, seed=0, distribution=dom.distributions[0], specials=())
            options = []
            if v.specials:
                options.append(replace(v, specials=()))
                if len(v.specials) > 1:
                    options += [replace(v, specials=v.specials[:i] + v.specials[i + 1:])
                                for i in range(len(v.specials))]
            if v.seed:
                options.append(replace(v, seed=0))
            rank = _distribution_rank(t.dtype, v.distribution)
            for dist in dom.distributions:
                if _distribution_rank(t.dtype, dist) < rank:
                    options.append(replace(v, distribution=dist))
                    options.append(replace(v, seed=0, distribution=dist))
            out += [{name: o} for o in options]
        if boring:
            out.append(boring)
        return out

    # -- passes --------------------------------------------------------------------------------

    def passes(self) -> list[Callable[[Case], list[Case | None]]]:
        def values(c: Case) -> list[Case | None]:
            return [self.build(c, values=v) for v in self.simpler_values(c)]

        def scalars(c: Case) -> list[Case | None]:
            moves: list[Case | None] = [self.build(c, scalars=s, configs=k)
                                        for s, k in self.scalar_moves(c)]
            if c.compile:  # Triton's default compile options
                moves.append(replace(c, compile={}))
            return moves

        def dims(c: Case) -> list[Case | None]:
            return [self.build(c, dims=d) for d in self.dim_moves(c)]

        def dims_scalars(c: Case) -> list[Case | None]:
            moves = self.scalar_moves(c)
            return [self.build(c, dims=d, scalars=s, configs=k)
                    for d in self.dim_moves(c) for s, k in moves]

        def dims_values(c: Case) -> list[Case | None]:
            variants = self.value_variants(c)
            return [self.build(c, dims=d, values=v) for d in self.dim_moves(c) for v in variants]

        return [values, scalars, dims, dims_scalars, dims_values]

    def minimize(self, case: Case, outcome: Outcome) -> Minimized:
        result = Minimized(case, outcome)
        current = self.key(case)
        improved = True
        while improved:
            improved = False
            for make in self.passes():
                candidates = [(k, c) for c in make(result.case)
                              if c is not None and (k := self.key(c)) < current]
                candidates.sort(key=lambda kc: kc[0])
                for k, c in candidates:
                    text = _json(c)
                    if text in self.seen:
                        continue
                    if self.runs >= self.max_runs:
                        result.stopped = "runs"
                    elif self.deadline is not None and time.monotonic() > self.deadline:
                        result.stopped = "deadline"
                    if result.stopped:
                        result.runs = self.runs
                        return result
                    self.seen.add(text)
                    self.runs += 1
                    got = self.run(c)
                    if got.failed and _key(got) == self.family:
                        result.case, result.outcome, current = c, got, k
                        result.steps += 1
                        improved = True
                        break
                if improved:
                    break
        result.runs = self.runs
        return result


def _shrink_target(start: int | None, end: int | None) -> int:
    """Where Hypothesis shrinks an integer in ``[start, end]``: 0 if inside, else the bound
    nearest to it."""
    if start is not None and start > 0:
        return start
    if end is not None and end < 0:
        return end
    return 0


def _key(outcome: Outcome) -> str:
    from fuzzkern.judge.verdict import failure_key

    return failure_key(outcome)


def minimize(target: Target, case: Case, outcome: Outcome, run: Callable[[Case], Outcome], *,
             deadline: float | None = None, max_runs: int = MAX_RUNS) -> Minimized:
    """The smallest failing case reachable from ``case`` (which failed with ``outcome``) by the
    passes above, and its outcome. ``run(case)`` runs one candidate (through the worker pool)
    and returns its outcome; at most ``max_runs`` runs are made, none after ``deadline`` (a
    ``time.monotonic()`` value). Hangs and passing outcomes are returned unchanged."""
    if not outcome.failed or outcome.verdict == Verdict.HANG or max_runs <= 0:
        return Minimized(case, outcome)
    return _Minimizer(target, case, outcome, run, deadline, max_runs).minimize(case, outcome)


def resizer(target: Target, case: Case, outcome: Outcome
            ) -> tuple[Callable[[Mapping[str, int]], Case | None], dict[str, tuple[int, int | None,
                                                                                 int]]]:
    """For explanations (:mod:`fuzzkern.search.explain`): a function giving ``case`` at other
    dims (tensors rebuilt to the new shapes with their recipes and layouts; None when one
    cannot take them), and each free dim's range ``(lowest, highest or None, multiple_of)``
    (dims with a choice list or no known range are left out)."""
    m = _Minimizer(target, case, outcome, lambda c: outcome, None, 0)
    ranges = {d: (dom.lo or 0, dom.hi, dom.step) for d, dom in m.dims.items()
              if dom is not None and dom.choices is None}
    return (lambda dims: m.build(case, dims=dims)), ranges


__all__ = ["MAX_RUNS", "Minimized", "minimize", "resizer"]
