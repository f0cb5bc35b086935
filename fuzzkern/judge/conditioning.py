"""Conditioning: how far a *correct* implementation can be from the reference at this input.

A kernel's output is judged against a float64 reference. Near cancellation (a row element equal
to its row mean, ``alpha*x + y`` with ``alpha*x ~ -y``, a dot product of large terms of mixed
sign with a small result) the exact answer moves a lot when an input moves by one ulp, so a
correct kernel that rounds anywhere lands far from it in ulps of the result. What the oracle
accepts must therefore depend on the input, not only on the output dtype.

:class:`Evidence` gathers, from the reference alone, three facts about one case (each computed
lazily, the first time the oracle asks, which it does only for a comparison that already failed
the plain per-dtype tolerance: a passing case costs no extra reference call):

- **sensitivity** (the backward-error view): per floating-point input, the largest change of
  every output element when that input is perturbed elementwise by ``unit*g*|x|``, ``g`` a
  standard normal (clipped at 3), over :data:`PROBES` independent draws. ``unit`` is the unit
  roundoff of the precision a kernel computes in: ``2**-24`` (float32: fp16/bf16/fp8 loads are
  upcast, Python float arguments are float32) and ``2**-53`` for float64 inputs. A kernel that
  is the exact function of inputs perturbed by about one rounding is within a small multiple
  of this. Each input is perturbed on its own, so two inputs' effects never cancel.
- **native**: the reference computed on the inputs' own dtypes, as a PyTorch user would run it
  at that precision (FlashAttention's yardstick: a kernel may be as far off as torch at the
  same precision).
- **magnitude** (sum-like references): the reference on ``|inputs|`` and the length ``R`` of
  the sums behind each output element, for the probabilistic bound on a length-``R`` sum in
  any order (Higham and Mary 2019): ``|error| <= lambda*sqrt(R)*u*sum|terms|``. ``R`` is the
  declared ``reduction`` dim, else inferred: the dims of the case that no output has (a matmul's
  ``K``, a loss's batch and class dims), and for references that are positively homogeneous
  of degree >= 1 (linear maps, products, sums, scans) also the reference on all-ones inputs,
  which counts the terms of each output element (a prefix sum's position).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Evidence", "InputSensitivity", "PROBES", "compute_unit", "own_unit"]

#: independent perturbations per input; the largest response counts. With Gaussian draws the
#: chance that all three land below a quarter of the typical response is 0.2**3 < 1%.
PROBES = 3

#: beyond this magnitude (the square root of float32's largest value) an input's square, or
#: its product with another such value, overflows float32
EXTREME = float(torch.finfo(torch.float32).max) ** 0.5

Reference = Callable[[Mapping[str, Any]], "tuple[Any, ...] | None"]


def compute_unit(dtype: torch.dtype) -> float:
    """Unit roundoff of the precision a correct kernel computes in for inputs of ``dtype``:
    float64 for float64, float32 for every narrower float (loads are upcast; fp16/bf16 dots
    accumulate in float32)."""
    return 2.0**-53 if dtype == torch.float64 else 2.0**-24


def own_unit(dtype: torch.dtype) -> float:
    """Unit roundoff of ``dtype`` itself (half an ulp at 1): float16 ``2**-11``, bfloat16
    ``2**-8``, float32 ``2**-24``."""
    return float(torch.finfo(dtype).eps) / 2


@dataclass
class InputSensitivity:
    """How much the reference moves when one input moves by about one rounding."""

    #: the input's name; scalars are listed like tensors
    name: str
    #: its own dtype ("float16"; a Python float argument is "float32", as compiled code sees it)
    dtype: str
    #: relative size of the perturbation (:func:`compute_unit`)
    unit: float
    #: unit roundoff of its own dtype (:func:`own_unit`)
    own: float
    #: per output: the largest |reference(perturbed) - reference| over the probes (float64,
    #: broadcastable to the output's shape), None where the output is not a float tensor
    deltas: tuple[torch.Tensor | None, ...]


def _f64(v: Any) -> torch.Tensor | None:
    if isinstance(v, torch.Tensor) and (v.is_floating_point() or not v.is_complex()):
        return v.detach().to(device="cpu", dtype=torch.float64)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return torch.tensor(float(v), dtype=torch.float64)
    return None


def _finite_abs(t: torch.Tensor) -> torch.Tensor:
    return torch.nan_to_num(t.abs(), nan=0.0, posinf=0.0)


def _sizes_left(dims: Mapping[str, int], shapes: list[tuple[int, ...]]) -> int:
    """The product of the case's dims that no output shape has (matched by size, as a
    multiset): the length of the reductions behind each output element."""
    left = Counter(int(n) for n in dims.values() if int(n) > 1)
    have: Counter[int] = Counter()
    for shape in shapes:
        have |= Counter(int(s) for s in shape if int(s) > 1)
    left -= have
    r = 1
    for size, count in left.items():
        r *= size**count
    return r


class Evidence:
    """Lazily computed facts about the reference at one case (see the module docstring).

    ``reference(values)`` returns the reference's outputs as a tuple (or None); ``values`` are
    the inputs as the reference receives them (float64 CPU copies of the tensors, scalars), or
    a function returning them, called on first use;
    ``dtypes`` gives each input's own dtype (Python floats: float32, as a kernel receives them;
    inputs that are not floating point are left out). ``native()`` returns the reference on the
    inputs' own dtypes. ``reduction`` is the declared reduction length (None: infer from
    ``dims``). ``expected``: the reference's outputs at ``values``, when already computed.
    """

    def __init__(self, reference: Reference,
                 values: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
                 dtypes: Mapping[str, torch.dtype], *,
                 native: Callable[[], tuple[Any, ...] | None] | None = None,
                 reduction: int | None = None, dims: Mapping[str, int] | None = None,
                 expected: tuple[Any, ...] | None = None, seed: int = 0) -> None:
        self._reference = reference
        #: the values, or what makes them (made on first use: most comparisons pass without)
        self._source = values
        self._made: dict[str, Any] | None = None
        self._dtypes = {k: d for k, d in dtypes.items() if d.is_floating_point}
        self._native_fn = native
        self.reduction = reduction
        self.dims = dict(dims or {})
        self.seed = seed
        self._cache: dict[str, Any] = {} if expected is None else {"expected": expected}
        #: reference calls made so far (reported by the benchmarks)
        self.calls = 0

    @property
    def _values(self) -> dict[str, Any]:
        if self._made is None:
            src = self._source
            self._made = dict(src() if callable(src) else src)
        return self._made

    @property
    def has_native(self) -> bool:
        return self._native_fn is not None

    def _call(self, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        self.calls += 1
        try:
            with torch.no_grad():
                return self._reference(values)
        except Exception:
            return None

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    # -- the three facts ---------------------------------------------------------------------

    def native(self) -> tuple[Any, ...] | None:
        """The reference on the inputs' own dtypes (None when unavailable or it raised)."""
        def make() -> tuple[Any, ...] | None:
            if self._native_fn is None:
                return None
            try:
                with torch.no_grad():
                    return self._native_fn()
            except Exception:
                return None
        return self._once("native", make)

    def expected(self) -> tuple[Any, ...] | None:
        return self._once("expected", lambda: self._call(self._values))

    def sensitivity(self) -> list[InputSensitivity]:
        """Per floating-point input, the reference's largest response to :data:`PROBES`
        perturbations of about one rounding (see the module docstring)."""
        return self._once("sensitivity", self._sensitivity)

    def _sensitivity(self) -> list[InputSensitivity]:
        base = self.expected()
        if base is None:
            return []
        base64 = [_f64(b) for b in base]
        found: list[InputSensitivity] = []
        for j, (name, dtype) in enumerate(sorted(self._dtypes.items())):
            v = self._values.get(name)
            unit = compute_unit(dtype)
            worst: list[torch.Tensor | None] = [None] * len(base)
            for k in range(PROBES):
                g = torch.Generator().manual_seed(self.seed * 7919 + j * 101 + k)
                if isinstance(v, torch.Tensor):
                    if not v.is_floating_point():
                        break
                    noise = torch.randn(v.shape, generator=g, dtype=torch.float64).clamp(-3, 3)
                    moved: Any = (v.to(torch.float64) * (1 + unit * noise)).to(v.dtype)
                elif isinstance(v, float):
                    noise = torch.randn((), generator=g, dtype=torch.float64).clamp(-3, 3)
                    moved = v * (1 + unit * float(noise))
                else:
                    break
                out = self._call({**self._values, name: moved})
                if out is None or len(out) != len(base):
                    break
                for i, (o, b) in enumerate(zip(out, base64, strict=True)):
                    o64 = _f64(o)
                    if o64 is None or b is None or o64.shape != b.shape:
                        continue
                    d = torch.nan_to_num((o64 - b).abs(), nan=0.0, posinf=0.0)
                    w = worst[i]
                    worst[i] = d if w is None else torch.maximum(w, d)
            if any(w is not None for w in worst):
                found.append(InputSensitivity(name, str(dtype).replace("torch.", ""), unit,
                                              own_unit(dtype), tuple(worst)))
        return found

    def extreme_inputs(self) -> list[tuple[str, float, str]]:
        """Floating-point inputs (not float64) holding a finite value where the format's
        overflow can explain a failure, with the largest such value and why: beyond
        :data:`EXTREME` in magnitude (a product of two of them overflows float32), or beyond
        half the input dtype's own largest value (a sum of two of them overflows that dtype,
        for a kernel that adds in it: float16's 65504). Rule 9 calls what fails then an
        accuracy finding."""
        found = []
        for name, dtype in sorted(self._dtypes.items()):
            if dtype == torch.float64:
                continue
            v = self._values.get(name)
            t = _f64(v)
            if t is None or t.numel() == 0:
                continue
            a = torch.where(torch.isfinite(t), t.abs(), 0.0)
            half = float(torch.finfo(dtype).max) / 2 if dtype.is_floating_point else math.inf
            limit = min(EXTREME, half)
            if bool((a > limit).any()):
                flat = a.reshape(-1)
                why = ("beyond the square root of the float32 range: intermediates such as its "
                       "square overflow" if limit == EXTREME else
                       f"beyond half the {str(dtype).replace('torch.', '')} range: a sum or "
                       "product computed in that dtype overflows")
                found.append((name, float(t.reshape(-1)[int(torch.argmax(flat))]), why))
        return found

    def magnitude(self) -> tuple[tuple[torch.Tensor | None, ...], tuple[Any, ...]] | None:
        """``(mag, R)``: the reference on ``|inputs|`` and, per output, the sum length (an int
        or a float64 tensor of per-element lengths); None when the reference is not sum-like
        and no reduction was declared or inferred. Non-finite input values count as 0: the
        magnitude of the finite terms (one inf in attention's ``k`` would make every row's
        ``softmax(|q||k|)`` NaN, where the element itself is finite: its key weighs 0)."""
        return self._once("magnitude", self._magnitude)

    def _scaled(self, how: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, Any]:
        values = dict(self._values)
        for name in self._dtypes:
            v = values.get(name)
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                values[name] = how(v)
            elif isinstance(v, float):
                values[name] = float(how(torch.tensor(v, dtype=torch.float64)))
        return values

    def _magnitude(self) -> tuple[tuple[torch.Tensor | None, ...], tuple[Any, ...]] | None:
        base = self.expected()
        if base is None or not self._dtypes:
            return None
        shapes = [tuple(b.shape) for b in base if isinstance(b, torch.Tensor)]
        r_dims = self.reduction if self.reduction is not None else _sizes_left(self.dims, shapes)
        mag_out = self._call(self._scaled(_finite_abs))
        if mag_out is None or len(mag_out) != len(base):
            return None
        mag = tuple(_f64(m) for m in mag_out)
        counts: list[Any] = [r_dims] * len(base)
        degree = self._homogeneity(mag)
        if degree is None and self.reduction is None and r_dims <= 1:
            return None  # not sum-like, no reduction: the sensitivity speaks for it
        if degree is not None:
            ones = self._call(self._scaled(torch.ones_like))
            if ones is not None and len(ones) == len(base):
                for i, o in enumerate(ones):
                    o64 = _f64(o)
                    m = mag[i]
                    if o64 is None or (m is not None and o64.shape != m.shape):
                        continue
                    n = torch.where(torch.isfinite(o64) & (o64 >= 1), o64.round(), 1.0)
                    counts[i] = torch.clamp(n, min=float(r_dims))
        return mag, tuple(counts)

    def _homogeneity(self, mag: tuple[torch.Tensor | None, ...]) -> int | None:
        """The degree d >= 1 with ``ref(2|x|) == 2**d * ref(|x|)`` (to 1e-9) for every finite
        nonzero element of every output, or None."""
        doubled = self._call(self._scaled(lambda t: 2 * _finite_abs(t)))
        if doubled is None or len(doubled) != len(mag):
            return None
        degree: int | None = None
        for m, d in zip(mag, doubled, strict=True):
            d64 = _f64(d)
            if m is None or d64 is None or d64.shape != m.shape:
                continue
            ok = torch.isfinite(m) & torch.isfinite(d64) & (m != 0)
            if not bool(ok.any()):
                continue
            ratio = d64[ok] / m[ok]
            e = math.log2(float(ratio[0])) if float(ratio[0]) > 0 else 0.0
            k = round(e)
            if k < 1 or abs(e - k) > 1e-9:
                return None
            if not bool(torch.allclose(ratio, torch.full_like(ratio, 2.0**k), rtol=1e-9)):
                return None
            if degree is not None and degree != k:
                return None
            degree = k
        return degree
