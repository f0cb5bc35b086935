"""What a user hands fuzzkern: a :class:`Target` (launcher, reference, inputs, dims) and its
:class:`Tolerance`.

Example::

    import fuzzkern
    from fuzzkern import strategies as fks

    add = fuzzkern.Target(
        launcher=vector_add,
        reference=lambda a, b: a + b,
        inputs=fks.inputs(
            a=fks.tensors(("N",), dtypes=["float16", "float32"]),
            b=fks.tensors(("N",), dtype_of="a"),
        ),
        dims={"N": fks.sizes(max_value=4096)},
    )
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzzkern.errors import InvalidArgument, describe

MODES = ("interpret", "compiled")


@dataclass(frozen=True)
class Tolerance:
    """How close a kernel's output must be to the reference.

    An element passes when ``|out - ref| <= atol + rtol*|ref| + rtol*R*mag``, where ``R`` is the
    reduction length (the target's ``reduction`` dim, 1 otherwise) and ``mag`` is the reference
    evaluated on absolute values of the inputs (the scale of the summed terms, so cancellation in
    a correct fp32 reduction is never a false alarm). NaN and ±inf positions must match exactly
    unless ``equal_nan`` is False, in which case any NaN fails.

    Left as ``None``, ``rtol``/``atol`` come from the output dtype (torch's per-dtype defaults).

    >>> Tolerance(rtol=1e-2).rtol
    0.01
    """

    rtol: float | None = None
    atol: float | None = None
    equal_nan: bool = True

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, (int, float)) or not math.isfinite(v)
                                  or v < 0):
                raise InvalidArgument(
                    f"Expected a finite non-negative number but got {describe(name, v)}. "
                    f"Pass e.g. Tolerance({name}=1e-3), or leave it None for the dtype default."
                )


def _accepts(fn: Callable[..., Any]) -> tuple[set[str], bool]:
    """Parameter names ``fn`` takes by keyword, and whether it takes ``**kwargs``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), True
    names = set()
    var_kw = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return names, var_kw


def call_with(fn: Callable[..., Any], values: Mapping[str, Any]) -> Any:
    """Call ``fn`` with the subset of ``values`` its signature names (all of them for ``**kw``)."""
    names, var_kw = _accepts(fn)
    return fn(**(dict(values) if var_kw else {k: v for k, v in values.items() if k in names}))


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True, eq=False)
class Target:
    """A kernel to fuzz: host launcher, torch reference, and how to draw its inputs.

    - ``launcher(**inputs)``: host code that launches the Triton kernel and returns a tensor or a
      tuple of tensors (or nothing, with ``inplace``).
    - ``reference(**inputs)``: torch code computing the expected result; by default called on
      float64 CPU copies of the inputs (``upcast=False`` to keep dtypes). Each callable receives
      only the inputs its signature names.
    - ``inputs``: :func:`fuzzkern.strategies.inputs` of tensors, scalars and meta-parameters.
    - ``dims``: symbolic dim name → strategy of ints, shared by every tensor of a case; or a
      dim computed from the others: an expression (``"G*K"``, ``"2*D"``: names, ints,
      ``+ - * // % **``) or a callable taking dims by name (``lambda G, K: G * K``).
    - ``inplace``: input name(s) the launcher updates in place; those are compared instead of the
      return value, and the reference returns their expected new values.
    - ``clobbers``: input name(s) the launcher may overwrite as scratch (Liger's RoPE rotates
      q and k in place and returns them): not compared, not flagged as ``input-mutated``
      (writes outside their views are still ``oob-write``). The reference gets the original
      values.
    - ``reduction``: name of the dim that is summed over (scales atol; see :class:`Tolerance`).
    - ``preconditions``: exception types the launcher raises to reject an input on purpose;
      such cases are counted, not failures.
    - ``timeout``: seconds one case may run before it is reported as a hang.
    - ``checks``: hygiene checks to turn on or off for this target by name (see
      ``fuzzkern.executors.run.DEFAULT_CHECKS``), e.g. ``{"view": False}`` or
      ``{"view_strict": True}``; a run's own ``checks`` (``--no-check``) apply on top.
    """

    launcher: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Any
    dims: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    inplace: str | Sequence[str] | None = None
    tolerance: Tolerance = field(default_factory=Tolerance)
    reduction: str | None = None
    modes: tuple[str, ...] = MODES
    preconditions: tuple[type[BaseException], ...] = ()
    upcast: bool = True
    timeout: float = 60.0
    clobbers: str | Sequence[str] | None = None
    checks: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from fuzzkern.strategies._internal.inputs import InputsStrategy

        if not callable(self.launcher):
            raise InvalidArgument(
                f"Expected a callable launcher but got {describe('launcher', self.launcher)}."
            )
        if not callable(self.reference):
            raise InvalidArgument(
                f"Expected a callable reference but got {describe('reference', self.reference)}."
            )
        if not isinstance(self.inputs, InputsStrategy):
            raise InvalidArgument(
                f"Expected inputs=fuzzkern.strategies.inputs(...) but got "
                f"{describe('inputs', self.inputs)}."
            )
        if not isinstance(self.tolerance, Tolerance):
            raise InvalidArgument(
                f"Expected a fuzzkern.Tolerance but got {describe('tolerance', self.tolerance)}."
            )
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise InvalidArgument(
                f"Expected modes drawn from {MODES} but got {describe('modes', self.modes)}."
            )
        if isinstance(self.preconditions, type):
            object.__setattr__(self, "preconditions", (self.preconditions,))
        for p in self.preconditions:
            if not (isinstance(p, type) and issubclass(p, BaseException)):
                raise InvalidArgument(
                    f"Expected exception types in preconditions but got {describe('item', p)}."
                )
        if self.reduction is not None and self.reduction not in self.dims:
            raise InvalidArgument(
                f"Expected reduction to name one of dims {sorted(self.dims)} but got "
                f"{describe('reduction', self.reduction)}."
            )
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise InvalidArgument(
                "Expected a positive timeout in seconds but got "
                f"{describe('timeout', self.timeout)}."
            )
        from fuzzkern.executors.run import DEFAULT_CHECKS

        unknown = sorted(set(self.checks) - set(DEFAULT_CHECKS)) if isinstance(
            self.checks, Mapping) else None
        if unknown is None or unknown:
            raise InvalidArgument(
                f"Expected checks to map check names among {sorted(DEFAULT_CHECKS)} to bools "
                f"but got {describe('checks', self.checks)}."
            )
        self.inputs.validate_against(self)
        for name in self.clobber_names:
            if name not in self.inputs.tensors:
                raise InvalidArgument(
                    f"Expected clobbers to name tensor inputs ({', '.join(self.inputs.tensors)})"
                    f" but got {describe('clobbers', name)}.")
            if name in self.inplace_names:
                raise InvalidArgument(
                    f"Expected an input either in inplace (compared) or in clobbers (not "
                    f"compared), not both, but got {describe('clobbers', name)}.")
        self._check_signatures()

    def _check_signatures(self) -> None:
        """Reject inputs that do not fit the callables' parameters now, at definition, rather
        than as an ``error`` verdict on every case (saved to the corpus as a "failure")."""
        names = list(self.inputs.named)
        for role, fn in (("launcher", self.launcher), ("reference", self.reference)):
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):  # a builtin without a signature: cannot check
                continue
            missing = [p.name for p in params if p.default is p.empty and (
                p.kind == p.POSITIONAL_ONLY
                or (p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in names))]
            if missing:
                fn_name = getattr(fn, "__qualname__", None) or repr(fn)
                raise InvalidArgument(
                    f"The {role} {fn_name}{inspect.signature(fn)} needs "
                    f"{', '.join(map(repr, missing))}, which the inputs do not define (inputs: "
                    f"{', '.join(map(repr, names)) or 'none'}). Each callable receives, by "
                    "keyword, the inputs its signature names: rename the parameter or the "
                    "input, or give the parameter a default."
                )
        taken = set()
        for fn in (self.launcher, self.reference):
            accepted, var_kw = _accepts(fn)
            if var_kw:
                return
            taken |= accepted
        unused = [n for n in names if n not in taken]
        if unused:
            raise InvalidArgument(
                f"Expected every input to be a parameter of the launcher or the reference, but "
                f"{', '.join(map(repr, unused))} is neither (launcher"
                f"{inspect.signature(self.launcher)}, reference"
                f"{inspect.signature(self.reference)}). Rename it to the parameter it is "
                "meant for, or remove it."
            )

    @property
    def clobber_names(self) -> tuple[str, ...]:
        return _names(self.clobbers)

    @property
    def inplace_names(self) -> tuple[str, ...]:
        return _names(self.inplace)

    @property
    def id(self) -> str:
        """A stable, user-visible id: ``name`` or ``module:qualname`` of the launcher."""
        if self.name:
            return self.name
        mod = getattr(self.launcher, "__module__", None) or "target"
        qual = getattr(self.launcher, "__qualname__", None) or "launcher"
        return f"{mod}:{qual}"

    def cases(self) -> Any:
        """The Hypothesis strategy of :class:`~fuzzkern.case.Case` for this target."""
        return self.inputs.cases_for(self)
