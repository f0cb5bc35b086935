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
from dataclasses import dataclass, field, replace
from typing import Any

from fuzzkern.calls import _accepts
from fuzzkern.errors import InvalidArgument, describe
from fuzzkern.gpus import check_gpu_name

MODES = ("interpret", "compiled")
#: ``Target(autotune=...)``: how autotuned kernels pick their config (see :class:`Target`)
AUTOTUNE = ("draw", "benchmark")
#: ``Target(reference_device=...)``: where compiled mode's float64 references run
REFERENCE_DEVICES = ("auto", "cpu", "device")

#: Hygiene checks, on by default but ``view_strict``; a target's ``checks=`` and then
#: ``options["checks"]`` override any of them: ``bounds`` (interpreter: every access inside an
#: argument's storage), ``view`` (interpreter: inside the view passed, not a gap; a *load*
#: outside the view counts only when an output is also wrong: a kernel that uses a re-strided
#: view as a base pointer and reads its storage correctly is not reported), ``view_strict``
#: (with ``view``: every load outside the view is ``oob-view``, whatever the outputs say),
#: ``poison`` (``torch.empty`` memory poisoned, unwritten outputs told apart), ``mutation``
#: (inputs compared bytewise before/after each launch; gaps of every input too), ``redzone``
#: (compiled: guard bands around every storage).
DEFAULT_CHECKS = {"bounds": True, "view": True, "view_strict": False, "poison": True,
                  "mutation": True, "redzone": True}


def _dtype_key(key: Any) -> str:
    if isinstance(key, str):
        return key.removeprefix("torch.")
    name = str(key)
    if name.startswith("torch."):
        return name.removeprefix("torch.")
    raise InvalidArgument(
        f"Expected a dtype name such as 'float32' or a torch.dtype as a key of dtypes= but got "
        f"{describe('key', key)}."
    )


def _check_number(name: str, v: Any) -> None:
    if v is None:
        return
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    if not ok:
        raise InvalidArgument(
            f"Expected a finite, non-negative number but got {describe(name, v)}. "
            f"Pass e.g. Tolerance({name}=1e-3), or leave it None for the dtype default."
        )


@dataclass(frozen=True)
class Tolerance:
    """How close a kernel's output must be to the reference.

    An element passes when its error is within ``atol + rtol*|ref|`` plus what rounding
    explains *at this input*: the accumulation bound of sums, how far the reference itself
    moves when the inputs move by one rounding, and how far torch at the inputs' precision is
    off (docs/oracle.md has the rule and its constants). Errors beyond that but within a small
    factor of the low-precision rounding bound are ``accuracy`` findings, not kernel bugs.

    Left as ``None``, ``rtol``/``atol`` come from the output dtype (torch's per-dtype defaults).

    - ``dtypes``: per output dtype, ``{"float32": (rtol, atol)}``; a single number sets both,
      a :class:`Tolerance` sets its ``rtol``/``atol``. Liger-Kernel's convention in one line:
      ``Tolerance(rtol=1e-2, atol=1e-2, dtypes={"float32": 1e-5})``.
    - ``outputs``: per output, by index (``0``) or name (the target's ``output_names`` or, for
      in-place targets, the input's name), a :class:`Tolerance` used for that output instead.
    - ``adaptive``: ``False`` judges with ``atol + rtol*|ref|`` (and the declared reduction's
      accumulation term) alone.
    - ``equal_nan``: NaN positions must match (``False``: every NaN fails).
    - ``follow``: what ``dtypes`` and the defaults go by: ``"output"`` (each floating-point
      output's own dtype) or ``"inputs"`` (the case's lowest-precision floating-point input:
      a float32 output computed from bfloat16 inputs gets bfloat16's tolerance).

    >>> Tolerance(rtol=1e-2).rtol
    0.01
    >>> t = Tolerance(rtol=1e-2, atol=1e-2, dtypes={"float32": 1e-5})
    >>> t.for_output(0, None, "float32").rtol, t.for_output(0, None, "float16").rtol
    (1e-05, 0.01)
    """

    rtol: float | None = None
    atol: float | None = None
    equal_nan: bool = True
    dtypes: Mapping[Any, Any] | None = None
    outputs: Mapping[int | str, Tolerance] | None = None
    adaptive: bool = True
    follow: str = "output"

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            _check_number(name, getattr(self, name))
        if self.follow not in ("output", "inputs"):
            raise InvalidArgument(f"Expected follow='output' or follow='inputs' but got "
                                  f"{describe('follow', self.follow)}.")
        if self.dtypes is not None:
            if not isinstance(self.dtypes, Mapping):
                raise InvalidArgument(
                    f"Expected a dict of dtype name -> tolerance but got "
                    f"{describe('dtypes', self.dtypes)}.")
            table: dict[str, tuple[float | None, float | None]] = {}
            for key, v in self.dtypes.items():
                if isinstance(v, Tolerance):
                    pair = (v.rtol, v.atol)
                elif isinstance(v, (tuple, list)) and len(v) == 2:
                    pair = (v[0], v[1])
                else:
                    pair = (v, v)
                _check_number(f"dtypes[{key!r}] rtol", pair[0])
                _check_number(f"dtypes[{key!r}] atol", pair[1])
                table[_dtype_key(key)] = (pair[0], pair[1])
            object.__setattr__(self, "dtypes", table)
        if self.outputs is not None:
            if not isinstance(self.outputs, Mapping):
                raise InvalidArgument(
                    f"Expected a dict of output index or name -> Tolerance but got "
                    f"{describe('outputs', self.outputs)}.")
            for key, v in self.outputs.items():
                if not isinstance(key, (int, str)) or isinstance(key, bool):
                    raise InvalidArgument(
                        f"Expected an output index or name as a key of outputs= but got "
                        f"{describe('key', key)}.")
                if not isinstance(v, Tolerance):
                    raise InvalidArgument(
                        f"Expected a fuzzkern.Tolerance for output {key!r} but got "
                        f"{describe('value', v)}.")

    def for_output(self, index: int, name: str | None = None,
                   dtype: Any = None) -> Tolerance:
        """The tolerance for output ``index`` (named ``name``) of ``dtype``: a per-output
        entry first, then a per-dtype entry of that, then this one."""
        tol = self
        if self.outputs:
            hit = self.outputs.get(index)
            if hit is None and name is not None:
                hit = self.outputs.get(name)
            if hit is not None:
                tol = hit
        if dtype is not None and tol.dtypes:
            pair = tol.dtypes.get(_dtype_key(dtype))
            if pair is not None:
                return replace(tol, rtol=pair[0], atol=pair[1], dtypes=None, outputs=None)
        return tol


#: what a reference may ask for by name besides the inputs: ``input_dtypes``, the case's own
#: dtype of each tensor input (``{"x": torch.bfloat16}``; the reference sees float64 copies)
REFERENCE_EXTRAS = ("input_dtypes",)


def _names(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


#: what ``Target(compile_options=None)`` draws: the warp count, which changes how a kernel's
#: work (and its reductions) are split, from Triton's default down and up
DEFAULT_COMPILE_OPTIONS: dict[str, tuple[Any, ...]] = {"num_warps": (4, 1, 2, 8)}


def _compile_options(given: Any) -> dict[str, tuple[Any, ...]]:
    from fuzzkern.case.model import COMPILE_CHOICES

    if given is None:
        return dict(DEFAULT_COMPILE_OPTIONS)
    ok = isinstance(given, Mapping) and all(
        name in COMPILE_CHOICES and isinstance(values, (tuple, list)) and values
        and all(type(v) is type(COMPILE_CHOICES[name][0]) and v in COMPILE_CHOICES[name]
                for v in values)
        for name, values in given.items())
    if not ok:
        raise InvalidArgument(
            "Expected compile_options to map option names to non-empty lists of values, among "
            + "; ".join(f"{k}: {v}" for k, v in COMPILE_CHOICES.items())
            + f", but got {describe('compile_options', given)}.")
    return {str(k): tuple(v) for k, v in given.items()}


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
      ``fuzzkern.target.declare.DEFAULT_CHECKS``), e.g. ``{"view": False}`` or
      ``{"view_strict": True}``; a run's own ``checks`` (``--no-check``) apply on top.
    - ``output_names``: names of the launcher's outputs, in order (for per-output tolerances
      and messages).
    - ``strict_accuracy``: an ``accuracy`` finding (beyond the bound, within a small factor of
      what rounding explains) fails like a kernel bug (``fuzzkern run --strict-accuracy``).
    - ``shadow``: a case that fails the tolerance runs again as a float64 shadow in the
      interpreter, which tells rounding from logic (docs/oracle.md). ``False`` for a kernel
      whose logic *is* low precision (saturating casts, quantization, an intended overflow):
      such a case is judged by the reference's conditioning alone.
    - ``assume_gpu``: on a machine without CUDA, the GPU the launcher's host code is written
      for (``"H200"``, a key of :data:`fuzzkern.gpus.GPUS`): while a case runs, its
      ``torch.cuda`` queries (device context, properties, SM count, capability, device count,
      streams, ``synchronize``) answer as that GPU would, tensors stay on the CPU and kernels
      run in the interpreter (docs/interpreter.md, "A declared GPU"). Where CUDA is present
      the real GPU answers. Import such a library inside the launcher: the target file
      itself loads before the GPU is assumed (``fuzzkern run --assume-gpu`` applies earlier).
    - ``compile_options``: Triton compile options drawn per case in compiled mode, by name, with
      the values to draw from (first: what a failing case shrinks to), among
      :data:`fuzzkern.case.model.COMPILE_CHOICES` (``num_warps``, ``num_stages``,
      ``enable_fp_fusion``). Each launch that does not set the option itself gets the drawn
      value (an autotuned kernel's configs set ``num_warps`` and ``num_stages``, so this is for
      kernels that are not autotuned). Default: ``{"num_warps": (4, 1, 2, 8)}``; ``{}`` turns
      it off. The case shows the options it drew (``num_warps=2``).
    - ``autotune``: how the launcher's autotuned kernels (``@triton.autotune`` and any
      ``Autotuner`` subclass, a library's own included) pick their config. ``"draw"`` (the
      default): never benchmarked; each case draws a config index per autotuned kernel (found
      in the launcher's code, or reached at run time by an earlier case), a kernel it draws
      none for runs its first config after its own pruning, and the case records which config
      each kernel ran (``configs_used``). ``"benchmark"``: compiled mode runs the autotuners as
      upstream does (every config benchmarked on a new tuning key, the choice cached); no
      config is drawn, and the interpreter, which cannot time configs, runs the first pruned.
    - ``reference_device``: where compiled mode's float64 reference runs for batches of value
      variants. ``"auto"`` (the default): on the GPU when the batch runs on CUDA, with a parity
      sample judged against the CPU's reference too (a disagreement turns it off for the
      target; docs/strategies.md, "References in compiled mode"); ``"cpu"``: always on the CPU;
      ``"device"``: on the device whatever it is. ``fuzzkern run --reference-device`` wins.
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
    output_names: Sequence[str] | None = None
    strict_accuracy: bool = False
    shadow: bool = True
    assume_gpu: str | None = None
    compile_options: Mapping[str, Sequence[Any]] | None = None
    autotune: str = "draw"
    reference_device: str = "auto"

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
        unknown = sorted(set(self.checks) - set(DEFAULT_CHECKS)) if isinstance(
            self.checks, Mapping) else None
        if unknown is None or unknown:
            raise InvalidArgument(
                f"Expected checks to map check names among {sorted(DEFAULT_CHECKS)} to bools "
                f"but got {describe('checks', self.checks)}."
            )
        if self.assume_gpu is not None:
            object.__setattr__(self, "assume_gpu", check_gpu_name(self.assume_gpu))
        if self.autotune not in AUTOTUNE:
            raise InvalidArgument(
                f"Expected autotune to be one of {AUTOTUNE} but got "
                f"{describe('autotune', self.autotune)}.")
        if self.reference_device not in REFERENCE_DEVICES:
            raise InvalidArgument(
                f"Expected reference_device to be one of {REFERENCE_DEVICES} but got "
                f"{describe('reference_device', self.reference_device)}.")
        object.__setattr__(self, "compile_options", _compile_options(self.compile_options))
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
            known = [*names, *REFERENCE_EXTRAS] if role == "reference" else names
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):  # a builtin without a signature: cannot check
                continue
            missing = [p.name for p in params if p.default is p.empty and (
                p.kind == p.POSITIONAL_ONLY
                or (p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in known))]
            if missing:
                fn_name = getattr(fn, "__qualname__", None) or repr(fn)
                raise InvalidArgument(
                    f"The {role} {fn_name}{inspect.signature(fn)} needs "
                    f"{', '.join(map(repr, missing))}, which the inputs do not define (inputs: "
                    f"{', '.join(map(repr, names)) or 'none'}). Each callable receives, by "
                    "keyword, the inputs its signature names: rename the parameter or the "
                    "input, or give the parameter a default."
                )
        taken: set[str] = set()
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

    def cases(self, compiled: bool = True) -> Any:
        """The Hypothesis strategy of :class:`~fuzzkern.case.model.Case` for this target;
        ``compiled=False`` (a run without the compiled mode) draws no compile options, which
        only compiled mode uses."""
        return self.inputs.cases_for(self, compiled=compiled)
