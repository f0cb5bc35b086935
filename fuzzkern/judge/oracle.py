"""The oracle: is a kernel's output close enough to the reference?

:func:`compare` turns a kernel's outputs and the reference's results into a
:class:`~fuzzkern.judge.outcome.Comparison`. The rules (docs/oracle.md explains them for users):

1. **Structure first.** The number of outputs and every shape must match exactly; a reference
   result is never broadcast, even when it has the same number of elements. A structural problem
   is reported as such and no values are compared.
2. **Round the reference to the output dtype** (FlagGems style): the expected value is computed
   at high precision (usually float64), correctly rounded (round-half-even) to the output
   dtype's grid, and both are compared in float64. A correct kernel that rounds its result once
   is then exactly at 0 error. A finite reference beyond the dtype's range is rounded to the
   largest finite value (saturating), and an infinity is also accepted (see 5).
3. **Floats:** an element passes when
   ``|out - exp| <= atol + rtol*|exp| + lambda*sqrt(R)*eps_acc*|mag|``, with ``exp`` the rounded
   reference, ``R`` the declared reduction length, ``mag`` the reference evaluated on
   ``|inputs|`` (only when given) and ``eps_acc`` the accumulator's epsilon
   (:func:`accumulation_eps`): the probabilistic bound on a length-``R`` sum
   (:func:`accumulation_band`), so cancellation is never a false alarm.
   ``rtol``/``atol`` come from :class:`~fuzzkern.target.declare.Tolerance` (per output and dtype)
   when set, else from :func:`default_tolerance` of the output dtype (for compiled GPU code,
   float32's ``rtol`` allows Triton's approximate ``exp``/``div`` and FMA contraction:
   :data:`COMPILED_RTOL`).
4. **NaN:** with ``Tolerance.equal_nan`` (the default) NaN positions must match: NaN vs NaN
   passes, NaN vs a number (either way) fails. With ``equal_nan=False`` every NaN fails.
5. **±inf** must match in sign and position. Two exceptions, both about overflow being a
   legitimate rounding: an output ``±inf`` for a finite reference passes when the tolerance band
   around the reference reaches the dtype's largest finite value (same sign); and in dtypes
   without infinities (fp8 e4m3fn, the fnuz types) a reference beyond the range or ``±inf``
   expects the saturated ``±max`` (NaN, the non-saturating conversion, is accepted too).
6. **Integers and bool** compare exactly (within ``atol`` when the target sets one; ``rtol`` is
   ignored). A float reference for an integer output is truncated toward zero like
   ``Tensor.to``; a non-finite one is a mismatch. For bool outputs the reference is ``!= 0``.

7. **The reference at the kernel's precision.** Where an element fails against the float64
   reference but passes (by rules 3-5) against the reference computed on the inputs' own
   dtypes, it passes: the runner computes that second reference only for a comparison that
   failed (``compare(native=...)``, :func:`accept_native`). Underflow and overflow of
   intermediates are the format's behaviour, not the kernel's bug: ``silu(-95) * 3e38`` is
   ``-0.63`` in float64 but ``-0.0`` in float32 (``exp(95)`` overflows), in torch as in a
   kernel; ``silu(-100) * inf`` is ``-inf`` in float64 and NaN in float32. A kernel wrong in
   a way torch at the same precision is not (an overflowing softmax, a dropped NaN, a wrong
   index) still fails.

8. **What rounding explains at this input** (only for a comparison that failed rules 3-7, so
   a passing case costs nothing more): each element's band widens by ``C_S*S + C_N*N +
   lambda*sqrt(R)*u_acc*mag``. ``S`` is the reference's sensitivity: how far it moves when each
   floating-point input (Python float arguments included, as float32) moves by about one
   float32 rounding; ``N`` is how far the reference on the inputs' own dtypes is off (at least
   that output's 90th percentile in ulps, and at least the 90th percentile, over elements whose
   terms cancel, in ulps of the terms' magnitude where it is known); the last term is the
   probabilistic bound on the sums behind the element, with ``R`` declared or inferred
   (:class:`~fuzzkern.judge.conditioning.Evidence`, :func:`accumulation_band`).
9. **Two kinds of finding.** What still fails but lies within :data:`ACCURACY_FACTOR` times its
   band (plus :data:`ACCURACY_ULPS` ulps for outputs of 16 bits or fewer) everywhere, with no
   NaN/inf disagreement, is an *accuracy* finding
   (``Comparison.accuracy``); anything else is a mismatch: a logic bug. The worst element is
   explained in words (``Comparison.explanation``) and figures (``Comparison.condition``).
   docs/oracle.md gives the constants and the numbers behind them.

Error figures are taken over every pair where both the output and the rounded reference are
finite (passing elements included, so they show near misses): the largest absolute error, the
largest relative error ``|d|/|exp|`` (``inf`` where ``exp == 0`` and ``d != 0``), and the largest
error in ULPs of the output dtype at ``|exp|`` (``2**(max(floor(log2|exp|), emin) - mantissa)``;
1 for integers). ``mismatched`` counts every failing element, ``nonfinite_mismatches`` those
where the output or the reference is NaN or ±inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fuzzkern.errors import text_of
from fuzzkern.judge.conditioning import Evidence
from fuzzkern.judge.outcome import Comparison, Mismatch, output_label
from fuzzkern.target.declare import Tolerance

__all__ = ["compare", "default_tolerance", "score", "upcast_for_reference", "FloatFormat"]


# -- dtype facts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloatFormat:
    """What the oracle needs to know about a floating-point dtype."""

    #: explicit mantissa (fraction) bits
    mantissa: int
    #: exponent of the smallest normal number (``log2(finfo.tiny)``)
    emin: int
    #: largest finite value
    max: float
    #: whether the format has ±inf (fp8 e4m3fn and the fnuz types do not)
    has_inf: bool


def _fmt(dtype: torch.dtype, mantissa: int, has_inf: bool) -> FloatFormat:
    fi = torch.finfo(dtype)
    return FloatFormat(mantissa, round(math.log2(fi.tiny)), float(fi.max), has_inf)


_FORMATS: dict[torch.dtype, FloatFormat] = {
    torch.float64: _fmt(torch.float64, 52, True),
    torch.float32: _fmt(torch.float32, 23, True),
    torch.float16: _fmt(torch.float16, 10, True),
    torch.bfloat16: _fmt(torch.bfloat16, 7, True),
}
for _name, _mant, _inf in (
    ("float8_e4m3fn", 3, False),
    ("float8_e5m2", 2, True),
    ("float8_e4m3fnuz", 3, False),
    ("float8_e5m2fnuz", 2, False),
):
    _dt = getattr(torch, _name, None)
    if _dt is not None:
        _FORMATS[_dt] = _fmt(_dt, _mant, _inf)


def float_format(dtype: torch.dtype) -> FloatFormat:
    """The :class:`FloatFormat` of a floating-point ``dtype`` (from ``finfo`` if not tabled)."""
    f = _FORMATS.get(dtype)
    if f is None:
        fi = torch.finfo(dtype)
        f = FloatFormat(
            max(0, round(-math.log2(fi.eps))), round(math.log2(fi.tiny)), float(fi.max), True
        )
        _FORMATS[dtype] = f
    return f


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


# torch.testing's defaults (torch.testing._comparison._DTYPE_PRECISIONS), plus fp8: rtol is the
# format's epsilon (one ulp at the bottom of a binade) and atol its smallest subnormal.
_DEFAULTS: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}
for _name, _rtol, _atol in (
    ("float8_e4m3fn", 0.125, 2.0**-9),
    ("float8_e5m2", 0.25, 2.0**-16),
    ("float8_e4m3fnuz", 0.125, 2.0**-10),
    ("float8_e5m2fnuz", 0.25, 2.0**-17),
):
    _dt = getattr(torch, _name, None)
    if _dt is not None:
        _DEFAULTS[_dt] = (_rtol, _atol)


#: float32's default ``rtol`` for compiled GPU code: ``2**-17`` (64 ulp at the bottom of a
#: binade) instead of torch.testing's 1.3e-6 (11 ulp). Triton compiles ``tl.exp`` to
#: ``ex2.approx.f32`` of ``fl(x * log2(e))``: rounding that product alone moves the result by
#: up to ``ln(2) * 127 * 2**-24`` = 5.3e-6 relative (44 ulp) near the ends of float32's range
#: (``tl.sigmoid(-44)``: 24 ulp, seen on the H200), division is ``div.full.f32`` (2 ulp) and FMA
#: contraction rounds products differently (measured: 6 ulp for exp and 27
#: for ``a*b+c`` on ordinary inputs). The interpreter computes with numpy, correctly rounded,
#: and keeps the tight default. fp16/bf16 defaults (1e-3, 1.6e-2) already cover this.
COMPILED_RTOL: dict[torch.dtype, float] = {torch.float32: 2.0**-17, torch.complex64: 2.0**-17}


def default_tolerance(dtype: torch.dtype, compiled: bool = False) -> tuple[float, float, str]:
    """``(rtol, atol, source)`` for comparing outputs of ``dtype``.

    torch.testing's per-dtype defaults for fp16/bf16/fp32/fp64; fp8 e4m3 ``rtol=0.125`` and
    e5m2 ``rtol=0.25`` with ``atol`` = the smallest subnormal; integers and bool are exact.
    With ``compiled``, float32 and complex64 allow GPU code's approximate math
    (:data:`COMPILED_RTOL`).

    >>> default_tolerance(torch.float16)
    (0.001, 1e-05, 'float16 default')
    >>> default_tolerance(torch.float32, compiled=True)
    (7.62939453125e-06, 1e-05, 'float32 default for compiled code: approximate exp/div, FMA')
    """
    name = _dtype_name(dtype)
    if compiled and dtype in COMPILED_RTOL:
        rtol, atol, _ = default_tolerance(dtype)
        return (max(rtol, COMPILED_RTOL[dtype]), atol,
                f"{name} default for compiled code: approximate exp/div, FMA")
    if dtype in _DEFAULTS:
        rtol, atol = _DEFAULTS[dtype]
    elif dtype.is_floating_point:
        fi = torch.finfo(dtype)
        rtol, atol = float(fi.eps), float(fi.smallest_normal)
    elif dtype.is_complex:
        rtol, atol = {torch.complex64: (1.3e-6, 1e-5), torch.complex128: (1e-7, 1e-7)}.get(
            dtype, (1e-3, 1e-5)
        )
    else:
        rtol, atol = 0.0, 0.0
    return rtol, atol, f"{name} default"


# -- conversions ------------------------------------------------------------------------------


def upcast_for_reference(t: torch.Tensor, device: Any = "cpu") -> torch.Tensor:
    """A copy of ``t`` on ``device`` (the CPU by default) for the reference: float dtypes
    (bf16, fp16, fp8 included) as float64, complex as complex128, integers and bool unchanged.
    Same shape; never aliases."""
    t = t.detach()
    if t.is_floating_point():
        return t.to(device=device, dtype=torch.float64, copy=True)
    if t.is_complex():
        return t.to(device=device, dtype=torch.complex128, copy=True)
    return t.to(device=device, copy=True)


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Spacing of ``dtype``'s grid at ``|x|`` (float64 ``x``): ``2**(e - mantissa)`` with
    ``e = max(floor(log2|x|), emin)``; 1 for integer and bool dtypes."""
    if not dtype.is_floating_point:
        return torch.ones_like(x, dtype=torch.float64)
    return torch.from_numpy(np.asarray(_np_ulp(np.abs(_np64(x)), float_format(dtype))))


def round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Float64 ``x`` correctly rounded (half to even) to ``dtype``'s grid, kept as float64.

    Finite values beyond the range saturate to ``±max``; ±inf stay (or saturate to ``±max`` in
    dtypes without infinities); NaN stays NaN. Done in float64 arithmetic (exact for every
    narrower format), so there is no double rounding through float32.
    """
    return torch.from_numpy(np.asarray(_np_round_to(_np64(x), dtype)))


def _np64(x: torch.Tensor) -> np.ndarray:
    return x.detach().to(device="cpu", dtype=torch.float64).numpy()


def _np_ulp(a: np.ndarray, f: FloatFormat) -> np.ndarray:
    """:func:`ulp` of float64 ``|x|`` values ``a``."""
    e = np.frexp(a)[1].astype(np.int64) - 1
    # anything below the smallest normal uses emin (frexp's exponent of a subnormal is smaller)
    e = np.where(a < 2.0**f.emin, f.emin, np.maximum(e, f.emin))
    return np.ldexp(1.0, e - f.mantissa)


def _np_round_to(x: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """:func:`round_to` of float64 values ``x``."""
    f = float_format(dtype)
    with np.errstate(all="ignore"):
        if dtype == torch.float64:
            r = x.copy()
        else:
            finite = np.isfinite(x)
            xf = np.where(finite, x, 0.0)
            step = _np_ulp(np.abs(xf), f)
            r = np.where(finite, np.round(xf / step) * step, x)  # np.round: half to even
        if f.has_inf:
            return np.where(np.isfinite(r), np.clip(r, -f.max, f.max), r)
        return np.clip(r, -f.max, f.max)  # NaN stays NaN; ±inf saturates


def _to_cpu_tensor(v: Any) -> torch.Tensor | None:
    if isinstance(v, torch.Tensor):
        return v.detach().cpu()
    if isinstance(v, (bool, int, float)):
        return torch.as_tensor(v)
    return None


def _describe_value(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"a {_dtype_name(v.dtype)} tensor of shape {tuple(v.shape)}"
    return f"{type(v).__name__} {text_of(v, repr)}"[:80]


# -- tolerance text ---------------------------------------------------------------------------


def _resolve(tolerance: Tolerance, dtype: torch.dtype,
             compiled: bool = False) -> tuple[float, float, str]:
    d_rtol, d_atol, d_src = default_tolerance(dtype, compiled)
    if not (dtype.is_floating_point or dtype.is_complex):
        if tolerance.atol is None:
            return 0.0, 0.0, d_src
        return 0.0, float(tolerance.atol), "target override"
    rtol = d_rtol if tolerance.rtol is None else float(tolerance.rtol)
    atol = d_atol if tolerance.atol is None else float(tolerance.atol)
    if tolerance.rtol is not None and tolerance.atol is not None:
        src = "target override"
    elif tolerance.rtol is not None:
        src = f"target override; atol: {d_src}"
    elif tolerance.atol is not None:
        src = f"target override; rtol: {d_src}"
    else:
        src = d_src
    return rtol, atol, src


def _tolerance_text(
    dtype: torch.dtype, rtol: float, atol: float, src: str, has_mag: bool, r: int
) -> str:
    if not dtype.is_floating_point:
        text = f"exact ({src})" if atol == 0 else f"atol={atol:g} ({src})"
        return text
    text = f"rtol={rtol:g} atol={atol:g} ({src})"
    if has_mag:
        text += (f" + {SUM_LAMBDA:g}·sqrt(R)·{accumulation_eps(dtype):.3g}·|ref(|inputs|)| "
                 f"(R={r})")
    return text


def accumulation_eps(dtype: torch.dtype) -> float:
    """Machine epsilon of the accumulator a correct kernel sums in: float64 for float64
    outputs, float32 for everything else (fp16/bf16/fp8 kernels accumulate in fp32; one that
    accumulates in its low-precision dtype is exactly the bug the bound should catch)."""
    return 2.0**-52 if dtype == torch.float64 else 2.0**-23


#: the ``lambda`` of the probabilistic bound on a length-R sum (:func:`accumulation_band`)
SUM_LAMBDA = 4.0


def accumulation_band(mag: torch.Tensor, r: Any, dtype: torch.dtype) -> torch.Tensor:
    """``lambda*sqrt(R)*eps_acc*|mag|``: the probabilistic bound on the rounding error of a
    length-``R`` sum of terms whose absolute values sum to ``mag``, in any summation order
    (Higham and Mary, 2019). ``R`` is an int or a per-element tensor.

    Rounding errors of a sum are sums of independent, mean-zero terms: the error exceeds
    ``lambda*sqrt(R)*u*sum|x|`` with probability below ``2R*exp(-lambda**2/2)`` even for
    sequential summation (``lambda = 4``: the worst sequential fp32 sum of 4096 positive terms
    is off by ``0.58*sqrt(R)*u*sum|x|`` on average). The worst case ``R*u*sum|x|`` is ``sqrt(R)``
    times looser and would hide one missing term of a K=4096 dot product."""
    m = torch.nan_to_num(mag.to(torch.float64), nan=0.0, posinf=math.inf).abs()
    rr = r.to(torch.float64) if isinstance(r, torch.Tensor) else float(r)
    root = rr.sqrt() if isinstance(rr, torch.Tensor) else math.sqrt(max(rr, 1.0))
    return (SUM_LAMBDA * accumulation_eps(dtype)) * root * m


# -- comparison -------------------------------------------------------------------------------


@dataclass
class _Checked:
    mismatch: torch.Tensor  # bool, output's shape
    nonfinite: torch.Tensor  # bool, output's shape
    abs_err: float
    rel_err: float
    ulp_err: float
    got: torch.Tensor  # for reporting (float64 or int64)
    expected: torch.Tensor  # raw reference for reporting (float64 or int64)
    #: per element: error over the element's bound where both are finite (0 elsewhere)
    ratio: torch.Tensor | None = None


def _stats(
    o: torch.Tensor, e: torch.Tensor, both_finite: torch.Tensor, dtype: torch.dtype
) -> tuple[float, float, float]:
    """:func:`_np_stats` over the pairs of ``o`` and ``e`` (float64) where both are finite."""
    if not bool(both_finite.any()):
        return 0.0, 0.0, 0.0
    ef = _np64(e[both_finite])
    with np.errstate(all="ignore"):
        return _np_stats(np.abs(_np64(o[both_finite]) - ef), np.abs(ef),
                         float_format(dtype) if dtype.is_floating_point else None)


def _same_non_finite(xp: Any, o: Any, x: Any, xr: Any, band: Any, f: FloatFormat,
                     equal_nan: bool) -> Any:
    """Where a non-finite output passes as the general path passes it, in ``xp``'s operations
    (numpy or torch, on float64 arrays: output ``o``, reference ``x``, reference rounded to the
    output's format ``xr``, tolerance ``band``): the same infinity on both sides, NaN and NaN
    with ``equal_nan``, and an overflow of a finite reference whose band reaches the format's
    largest value (to ±inf, or to NaN in a format without infinities)."""
    o_inf = xp.isinf(o)
    same = o_inf & (o == xr)
    if equal_nan:
        same |= xp.isnan(o) & xp.isnan(xr)
    if f.has_inf:
        # overflow is rounding: ±inf for a finite reference whose band reaches ±max
        same |= (o_inf & xp.isfinite(x) & (xp.sign(o) == xp.sign(x))
                 & (xp.abs(x) + band >= f.max))
    elif equal_nan:
        # no infinities: an out-of-range reference may also become NaN
        same |= xp.isnan(o) & (xp.isinf(x) | (xp.isfinite(x) & (xp.abs(x) + band > f.max)))
    return same


def _check_float_fast(
    out: torch.Tensor,
    exp: torch.Tensor,
    mag: torch.Tensor | None,
    rtol: float,
    atol: float,
    r: Any,
    extra: torch.Tensor | None,
    equal_nan: bool = True,
) -> _Checked | None:
    """:func:`_check_float` for the common case, in a few numpy operations: every element is
    finite in the output and the rounded reference, or non-finite in a way the general path
    passes (NaN and NaN with ``equal_nan``, an infinity and the same infinity, an overflow to
    ±inf, or to NaN in a format without infinities, of a reference whose band reaches the
    format's largest value: such an element passes and counts in no error figure, as in the
    general path). None otherwise (a NaN or an infinity on one side only, a difference that
    overflows): the general path decides. The
    results are the general path's, bit for bit (the same float64 arithmetic in the same order;
    tested against it)."""
    dtype = out.dtype
    f = float_format(dtype)
    x = exp.detach().to(torch.float64).numpy()
    o = out.detach().to(torch.float64).numpy()
    with np.errstate(all="ignore"):
        if dtype == torch.float64:
            xr = x
        elif dtype == torch.float32:  # an IEEE cast rounds half to even, like round_to
            # beyond the range: inf, where the general path saturates to max; an infinite
            # output passes either way (there by the overflow rule), a finite one goes there
            xr = x.astype(np.float32).astype(np.float64)
        else:
            xr = _np_round_to(x, dtype)
        both = np.isfinite(o) & np.isfinite(xr)
        every = bool(both.all())
        ae = np.abs(xr)
        band = atol + rtol * ae
        if mag is not None:
            band = band + accumulation_band(mag, r, dtype).numpy()
        if extra is not None:
            band = band + extra.numpy()
        band = np.broadcast_to(band, o.shape)
        same = None
        if not every:
            same = _same_non_finite(np, o, x, xr, band, f, equal_nan)
            if not (both | same).all():
                return None
        d = np.abs(o - xr)
        if not every:
            d = np.where(both, d, 0.0)
        if not np.isfinite(d).all():  # the difference overflows
            return None
        mismatch = ~(d <= band) if same is None else ~(both & (d <= band)) & ~same
        if every and d.size:
            stats = _np_stats(d, ae, f)
        elif not every and both.any():
            stats = _np_stats(d[both], ae[both], f)
        else:
            stats = (0.0, 0.0, 0.0)
        ratio = np.where(band > 0, d / np.maximum(band, 1e-300),
                         np.where(d > 0, math.inf, 0.0))
        # a mismatching element has a finite output and rounded reference; its raw reference
        # may still be ±inf (a format without infinities rounds it to ±max)
        nonfinite = mismatch & ~np.isfinite(x)
    return _Checked(torch.from_numpy(np.asarray(mismatch)),
                    torch.from_numpy(np.asarray(nonfinite)),
                    *stats,
                    torch.from_numpy(np.asarray(o)), torch.from_numpy(np.asarray(x)),
                    torch.from_numpy(np.asarray(ratio)))


def _np_stats(d: np.ndarray, ae: np.ndarray,
              f: FloatFormat | None) -> tuple[float, float, float]:
    """Largest absolute, relative and ulp error of differences ``d`` at references ``|xr|``
    ``ae`` (float64 arrays of finite pairs); ``f`` the output's format (None: an integer
    output, whose ulp is 1)."""
    rel = np.where(ae > 0, d / ae, np.where(d > 0, math.inf, 0.0))
    # ulps against an exact 0, or a normal-sized error at a subnormal, count subnormal steps
    # (2e+45 of them): left out
    tiny = 0.0 if f is None else 2.0 ** f.emin
    u = d if f is None else np.where((ae > 0) & ((ae >= tiny) | (d < tiny)),
                                     d / _np_ulp(ae, f), 0.0)
    return float(d.max()), float(rel.max()), float(u.max())


def _check_float(
    out: torch.Tensor,
    exp: torch.Tensor,
    mag: torch.Tensor | None,
    rtol: float,
    atol: float,
    r: Any,
    equal_nan: bool,
    extra: torch.Tensor | None = None,
) -> _Checked:
    checked = _check_float_fast(out, exp, mag, rtol, atol, r, extra, equal_nan)
    if checked is not None:
        return checked
    return _check_float_general(out, exp, mag, rtol, atol, r, equal_nan, extra)


def _check_float_general(
    out: torch.Tensor,
    exp: torch.Tensor,
    mag: torch.Tensor | None,
    rtol: float,
    atol: float,
    r: Any,
    equal_nan: bool,
    extra: torch.Tensor | None = None,
) -> _Checked:
    dtype = out.dtype
    f = float_format(dtype)
    o = out.to(torch.float64)
    x = exp.to(torch.float64)  # raw reference (bool/int → exact float64)
    xr = round_to(x, dtype)
    band = atol + rtol * xr.abs()
    if mag is not None:
        band = band + accumulation_band(mag, r, dtype)
    if extra is not None:
        band = band + extra
    o_fin = torch.isfinite(o)
    xr_fin = torch.isfinite(xr)
    both = o_fin & xr_fin
    d = (o - xr).abs()
    passing = both & (d <= band)
    o_nan = torch.isnan(o)
    x_nan = torch.isnan(x)
    if equal_nan:
        passing |= o_nan & x_nan
    o_inf = torch.isinf(o)
    if f.has_inf:
        # infinities must match exactly (xr keeps the reference's ±inf)
        passing |= o_inf & (o == xr)
        # overflow is rounding: ±inf for a finite reference whose band reaches ±max
        x_fin = torch.isfinite(x)
        reach = x.abs() + band >= f.max
        passing |= o_inf & x_fin & (torch.sign(o) == torch.sign(x)) & reach
    elif equal_nan:
        # no infinities: an out-of-range reference may also become NaN (non-saturating cast)
        out_of_range = torch.isinf(x) | (torch.isfinite(x) & (x.abs() + band > f.max))
        passing |= o_nan & out_of_range
    mismatch = ~passing
    nonfinite = mismatch & ~(o_fin & torch.isfinite(x))
    abs_err, rel_err, ulp_err = _stats(o, xr, both, dtype)
    dd = torch.where(both, d, 0.0)
    bb = band.expand_as(dd) if isinstance(band, torch.Tensor) else torch.full_like(dd, band)
    ratio = torch.where(bb > 0, dd / bb.clamp_min(1e-300), torch.where(dd > 0, math.inf, 0.0))
    return _Checked(mismatch, nonfinite, abs_err, rel_err, ulp_err, o, x, ratio)


_INT64_MAX = float(2**63 - 1024)


def _check_int(out: torch.Tensor, exp: torch.Tensor, atol: float) -> _Checked:
    dtype = out.dtype
    o = out.to(torch.int64)
    bad = torch.zeros(out.shape, dtype=torch.bool)
    if dtype == torch.bool:
        xr = (exp != 0).to(torch.int64)
        raw = exp.to(torch.float64) if exp.is_floating_point() else exp.to(torch.int64)
    elif exp.is_floating_point():
        x = exp.to(torch.float64)
        fin = torch.isfinite(x)
        bad = ~fin
        t = torch.where(fin, torch.trunc(x), 0.0).clamp(-_INT64_MAX, _INT64_MAX)
        xr = t.to(torch.int64).to(dtype).to(torch.int64)
        raw = x
    else:
        raw = exp.to(torch.int64)
        xr = exp.to(dtype).to(torch.int64)  # wraps like the kernel's integer arithmetic
    eq = o == xr
    if atol > 0:
        eq |= (o.to(torch.float64) - xr.to(torch.float64)).abs() <= atol
    mismatch = bad | ~eq
    nonfinite = mismatch & bad
    of = o.to(torch.float64)
    abs_err, rel_err, ulp_err = _stats(of, xr.to(torch.float64), ~bad, dtype)
    return _Checked(mismatch, nonfinite, abs_err, rel_err, ulp_err, o, raw)


def _item(t: torch.Tensor, idx: tuple[int, ...]) -> float | int:
    v = t[idx].item()
    return v


def compare(
    outputs: Sequence[Any] | torch.Tensor,
    expected: Sequence[Any] | torch.Tensor,
    *,
    tolerance: Tolerance | None = None,
    magnitude: Sequence[Any] | None = None,
    reduction_length: int = 1,
    max_report: int = 5,
    masks: list[torch.Tensor] | None = None,
    native: Callable[[], Sequence[Any] | None] | None = None,
    compiled: bool = False,
    evidence: Evidence | None = None,
    names: Sequence[str | None] | None = None,
) -> Comparison:
    """Compare a kernel's ``outputs`` with the reference's ``expected`` (see the module doc).

    ``outputs`` and ``expected`` are tuples of tensors (a bare tensor counts as a 1-tuple);
    ``magnitude``, when given, holds the reference evaluated on ``|inputs|``, one entry per
    output (``None`` entries skip the term for that output); ``reduction_length`` is ``R`` of
    the accumulation term (:func:`accumulation_band`). Returns a
    :class:`~fuzzkern.judge.outcome.Comparison` with up to ``max_report`` mismatching elements in
    row-major order. When ``masks`` is a list, the bool mismatch mask of each output is
    appended to it (nothing on a structural problem). ``native``, when given, returns the
    reference computed on the inputs' own dtypes (or None); it is called only when values
    mismatch, for rule 7. ``compiled``: the outputs come from GPU code, whose float32 default
    tolerance allows approximate math (:func:`default_tolerance`). ``evidence``
    (:class:`~fuzzkern.judge.conditioning.Evidence`): what the reference says about this input's
    conditioning, consulted only when the plain comparison fails (rules 8 and 9); it also
    supplies ``native`` when that is not given. ``names``: output names for per-output
    tolerances (``Tolerance(outputs={...})``).
    """
    if native is None and evidence is not None and evidence.has_native:
        native = evidence.native
    own: list[torch.Tensor] = []
    kw: dict[str, Any] = dict(tolerance=tolerance, magnitude=magnitude,
                              reduction_length=reduction_length, compiled=compiled, names=names)
    c = _compare(outputs, expected, max_report=max_report, masks=own, **kw)
    if c.ok or c.structural is not None:
        if masks is not None:
            masks.extend(own)
        return c
    expected_now = _as_tuple(expected)
    notes: list[str] = []
    n = native() if native is not None else None
    if n is not None:
        native_masks: list[torch.Tensor] = []
        _compare(outputs, n, masks=native_masks, **kw)
        adjusted = accept_native(expected_now, n, own, native_masks) if native_masks else None
        if adjusted is not None:
            expected_now, accepted = adjusted
            own.clear()
            c = _compare(outputs, expected_now, max_report=max_report, masks=own, **kw)
            notes.append(f"{accepted} element{'s' if accepted != 1 else ''} judged against the "
                         "reference at the inputs' precision (oracle rule 7)")
    if not c.ok and evidence is not None and _adaptive(tolerance) and c.nonfinite_mismatches:
        adjusted = accept_overflow(_as_tuple(outputs), expected_now, n, evidence)
        if adjusted is not None:
            expected_now, accepted = adjusted
            own.clear()
            c = _compare(outputs, expected_now, max_report=max_report, masks=own, **kw)
            notes.append(f"{accepted} non-finite element{'s' if accepted != 1 else ''} accepted "
                         "where the terms overflow the accumulator's range (oracle rule 8)")
    # a NaN/inf disagreement is a mismatch whatever rounding explains: skip the sensitivity
    if not c.ok and evidence is not None and _adaptive(tolerance) \
            and c.nonfinite_mismatches == 0:
        c = _judge_conditioning(outputs, expected_now, n, evidence, c, own, max_report, kw)
    if not c.ok and evidence is not None and _adaptive(tolerance) and not c.accuracy:
        extreme = evidence.extreme_inputs()
        if extreme:
            # a product of two such values overflows the accumulator: what fails may be the
            # format's overflow of an intermediate (a kernel's robustness, not its logic)
            c.accuracy = True
            name, value, why = extreme[0]
            c.explanation = (f"{name} holds {value:.3g}, {why}"
                             + (f"; {c.explanation}" if c.explanation else ""))
            c.condition = {**c.condition, "extreme_input": name, "extreme_value": value}
    if notes:
        c.tolerance += "; " + "; ".join(notes)
    if masks is not None:
        masks.extend(own)
    return c


#: a group of a batch's comparisons with at least this many output elements is checked on
#: the GPU its outputs lie on (:func:`passes`); below it, the host is faster (one H200 host,
#: 2026-12-02: a group of ~26k elements cost ~0.5-1.9 ms in numpy and ~1-1.4 ms in some sixty
#: eager torch operations on the GPU)
DEVICE_ELEMENTS = 1 << 17


def passes(
    comparisons: Sequence[tuple[Sequence[Any], Sequence[Any], Sequence[Any] | None]],
    *,
    tolerance: Tolerance | None = None,
    reduction_length: int = 1,
    compiled: bool = False,
    names: Sequence[str | None] | None = None,
    host: Callable[[int], Sequence[Any]] | None = None,
) -> list[bool]:
    """Which of several comparisons (``(outputs, expected, magnitude)`` triples, as
    :func:`compare` takes them) pass for certain, decided together: comparisons whose outputs
    have the same dtypes and shapes are stacked and checked in one go per output (rules 1-3 and
    6 on the fast path). True: :func:`compare` returns ``ok``. False: not decided
    here (call :func:`compare`: it may still pass, by rules 4-8, or fail). The batches of value
    variants in compiled mode (:mod:`fuzzkern.execution.batch`) judge their cases this way, so
    that a case that passes costs a share of a few array operations.

    A group of float outputs is decided by :func:`_clear_on` (the fast path's decision per
    member, in torch operations, without the error figures a failure needs): on the GPU the
    outputs lie on when the group holds :data:`DEVICE_ELEMENTS` elements or more (the expected
    values copied over once), since the host's passes grow with the outputs' size and the
    device's cost a fixed ~10 us per operation, or when the expected values lie on that device
    already (references computed there); on the CPU otherwise, with ``host(j)``
    (comparison ``j``'s outputs on the CPU, where the caller has them already) or else the
    outputs copied over one by one."""
    tolerance = tolerance if tolerance is not None else Tolerance()
    r = int(reduction_length)
    decided = [False] * len(comparisons)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for j, (outputs, expected, magnitude) in enumerate(comparisons):
        outs, exps = _as_tuple(outputs), _as_tuple(expected)
        mags = _as_tuple(magnitude) if magnitude is not None else (None,) * len(exps)
        if len(outs) != len(exps) or len(mags) != len(exps):
            continue
        layout: list[Any] = []
        for o, e, m in zip(outs, exps, mags, strict=True):
            if not (isinstance(o, torch.Tensor) and isinstance(e, torch.Tensor)) \
                    or o.is_complex() or e.is_complex() or o.shape != e.shape \
                    or (m is not None and not isinstance(m, torch.Tensor)):
                break
            layout.append((o.dtype, e.dtype, tuple(o.shape),
                           None if m is None else (m.dtype, tuple(m.shape))))
        else:
            groups.setdefault(tuple(layout), []).append(j)
    for key, members in groups.items():
        try:
            ok = _pass_group(comparisons, key, members, tolerance, r, compiled, names, host)
        except (RuntimeError, ValueError):  # e.g. a magnitude that does not broadcast
            continue
        for j, good in zip(members, ok, strict=True):
            decided[j] = bool(good)
    return decided


def _pass_group(comparisons: Sequence[tuple[Sequence[Any], Sequence[Any], Sequence[Any] | None]],
                key: tuple[Any, ...], members: list[int], tolerance: Tolerance, r: int,
                compiled: bool, names: Sequence[str | None] | None,
                host: Callable[[int], Sequence[Any]] | None = None) -> np.ndarray:
    """:func:`passes` for comparisons of one layout (``key``): a bool per member."""
    ok = np.ones(len(members), dtype=bool)
    for i in range(len(key)):
        first = _as_tuple(comparisons[members[0]][0])[i]
        # on the device: many elements, or references computed there already
        # (fuzzkern.execution.references)
        on = (first.device if first.device.type != "cpu" and first.is_floating_point()
              and (_as_tuple(comparisons[members[0]][1])[i].device == first.device
                   or len(members) * math.prod(key[i][2]) >= DEVICE_ELEMENTS) else None)

        # outputs off the CPU, checked on it: the caller's host copies where it has them
        hosted = on is None and host is not None and first.device.type != "cpu"

        def stacked(which: int, i: int = i, on: Any = on, hosted: bool = hosted
                    ) -> torch.Tensor:
            if which == 0 and hosted:
                assert host is not None
                parts = [_as_tuple(host(j))[i].detach() for j in members]
            else:
                parts = [_as_tuple(comparisons[j][which])[i].detach()  # type: ignore[arg-type]
                         for j in members]
            where = on if on is not None else torch.device("cpu")
            if all(p.device == where for p in parts):
                return torch.stack([p.broadcast_to(key[i][2]) for p in parts])
            # stacked on the CPU, then over in one copy (the expected values for the GPU)
            return torch.stack([p.cpu().broadcast_to(key[i][2]) for p in parts]).to(where)

        o, e = stacked(0), stacked(1)
        m = None if key[i][3] is None else stacked(2)
        name = names[i] if names is not None and i < len(names) else None
        tol = tolerance.for_output(i, name, o.dtype)
        rtol, atol, _ = _resolve(tol, o.dtype, compiled)
        if o.is_floating_point():
            # each member decided as the fast path decides it, without its error figures
            ok &= _clear_on(o, e, m, rtol, atol, r, tol.equal_nan).cpu().numpy()
            continue
        c = _check_int(o, e, atol)
        ok &= ~c.mismatch.reshape(len(members), -1).any(dim=1).numpy()
    return ok


def _round_to_on(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """:func:`_np_round_to` in torch operations on ``x``'s device, bit for bit: the grid's
    spacing is built from the exponent bits (no ``pow``), the rounding is ``round`` (half to
    even), and every other step is one IEEE operation, exact or correctly rounded alike on any
    device."""
    f = float_format(dtype)
    if dtype == torch.float64:
        return x.clone()
    finite = torch.isfinite(x)
    xf = torch.where(finite, x, 0.0)
    a = xf.abs()
    # floor(log2 a) of a normal float64 is its unbiased exponent (what _np_ulp's frexp gives);
    # anything below the format's smallest normal, float64 subnormals included, takes emin
    e = torch.clamp(((a.view(torch.int64) >> 52) & 0x7FF) - 1023, min=f.emin)
    step = ((e - f.mantissa + 1023) << 52).view(torch.float64)  # 2**(e - mantissa), exactly
    r = torch.where(finite, torch.round(xf / step) * step, x)
    if f.has_inf:
        return torch.where(torch.isfinite(r), torch.clamp(r, -f.max, f.max), r)
    return torch.clamp(r, -f.max, f.max)


def _clear_on(o: torch.Tensor, e: torch.Tensor, m: torch.Tensor | None, rtol: float,
              atol: float, r: int, equal_nan: bool) -> torch.Tensor:
    """Per member of stacked outputs ``o`` (a float dtype) and float64 references ``e`` (and
    magnitudes ``m``), on ``o``'s device: whether :func:`_check_float_fast` on that member
    returns no mismatch, the same decision in the same float64 arithmetic (tested against it),
    without the error figures that only a failure needs. A bool tensor on the device."""
    dtype = o.dtype
    f = float_format(dtype)
    x = e.to(torch.float64)
    if dtype == torch.float64:
        xr = x
    elif dtype == torch.float32:  # an IEEE cast rounds half to even, as numpy's astype
        xr = x.to(torch.float32).to(torch.float64)
    else:
        xr = _round_to_on(x, dtype)
    ov = o.to(torch.float64)
    ae = xr.abs()
    band = atol + rtol * ae
    if m is not None:
        band = band + accumulation_band(m, r, dtype)
    band = band.broadcast_to(ov.shape)
    d = (ov - xr).abs()
    finite = torch.isfinite(d)  # false where a side is NaN or inf, or the difference overflows
    good = (d <= band) & finite  # an overflowing difference goes to the general path, as there
    if not bool(finite.all()):
        # the non-finite rules, which hold only where the output is NaN or inf
        good = good | _same_non_finite(torch, ov, x, xr, band, f, equal_nan)
    return good.reshape(len(o), -1).all(dim=1)


def accept_overflow(outputs: tuple[Any, ...], expected: tuple[Any, ...],
                    native: Sequence[Any] | None, evidence: Evidence
                    ) -> tuple[tuple[Any, ...], int] | None:
    """``expected`` with every element where the kernel's output is NaN or ±inf, unlike the
    reference, and overflow explained, set to the output's value; and how many. Overflow is
    explained where the magnitude of the terms (the reference on ``|inputs|``) exceeds the
    accumulator's largest finite value (float32 for all but float64 outputs: ``1.5*fmax +
    -2*fmax`` overflows in any order), or where torch at the inputs' precision is not finite
    either. None when there is none."""
    mag = evidence.magnitude()
    adjusted: list[Any] = []
    accepted = 0
    for i, (o, e) in enumerate(zip(outputs, expected, strict=True)):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()
                and isinstance(e, torch.Tensor) and e.shape == o.shape):
            adjusted.append(e)
            continue
        out = o.detach().cpu().to(torch.float64)
        x = e.detach().cpu().to(torch.float64)
        explained = torch.zeros(o.shape, dtype=torch.bool)
        m = mag[0][i] if mag is not None and i < len(mag[0]) else None
        if m is not None and m.shape == o.shape:
            fmax = float(torch.finfo(torch.float64 if o.dtype == torch.float64
                                     else torch.float32).max)
            explained |= torch.nan_to_num(m.abs(), nan=0.0) > fmax
        if native is not None and i < len(native) and isinstance(native[i], torch.Tensor) \
                and native[i].shape == o.shape:
            explained |= ~torch.isfinite(native[i].detach().cpu().to(torch.float64))
        take = explained & ~torch.isfinite(out) & ~((out == x) | (torch.isnan(out)
                                                             & torch.isnan(x)))
        k = int(take.sum())
        adjusted.append(torch.where(take, out, x) if k else e)
        accepted += k
    return (tuple(adjusted), accepted) if accepted else None


def _adaptive(tolerance: Tolerance | None) -> bool:
    return tolerance is None or getattr(tolerance, "adaptive", True)


#: rule 8's multiple of the reference's sensitivity (:attr:`Evidence.sensitivity`)
SENSITIVITY_FACTOR = 8.0
#: rule 8's multiple of the error of the same computation in torch at the inputs' precision
NATIVE_FACTOR = 2.0
#: rule 9: a mismatch within this factor of its element's bound is an accuracy finding, not a
#: kernel bug
ACCURACY_FACTOR = 8.0
#: rule 9: for outputs of 16 bits or fewer, a mismatch within this many ulps of the output
#: (beyond rule 8's widening) is an accuracy finding: a kernel that stores an intermediate in
#: the output's format (a fused kernel's own fp16 output reused, ``(x * rstd).to(x.dtype)``)
#: pays up to an ulp per such rounding, by design, where a float32 reference does not
ACCURACY_ULPS = 4.0
#: the share of elements whose native error sets the output-wide native level (rule 8)
NATIVE_QUANTILE = 0.9
#: rule 8: an element whose terms' magnitude is this many times its value or more cancels;
#: torch's error there, in ulps of the magnitude, is its level of intermediate rounding
CANCELLING = 8.0
#: ... measured only from at least this many cancelling elements
CANCELLING_MIN = 8


def _rounding_extras(outputs: tuple[Any, ...], expected: tuple[Any, ...],
                     native: Sequence[Any] | None, evidence: Evidence, *,
                     with_acc: bool = True) -> tuple[list[torch.Tensor | None], dict[str, Any]]:
    """Per output, the extra band of rule 8, and the parts for the explanation."""
    sens = evidence.sensitivity()
    mag = evidence.magnitude()
    extras: list[torch.Tensor | None] = []
    parts: dict[str, Any] = {"sens": [], "native": [], "acc": []}
    for i, (o, e) in enumerate(zip(outputs, expected, strict=True)):
        if not (isinstance(o, torch.Tensor) and o.is_floating_point()
                and isinstance(e, torch.Tensor)):
            extras.append(None)
            for key in parts:
                parts[key].append(None)
            continue
        x = e.detach().cpu().to(torch.float64)
        total = torch.zeros(o.shape, dtype=torch.float64)
        # sensitivity: the inputs' effects add in quadrature (independent roundings)
        sq = torch.zeros(o.shape, dtype=torch.float64)
        per_input = []
        for s in sens:
            dlt = s.deltas[i] if i < len(s.deltas) else None
            if dlt is None or dlt.shape != o.shape:
                continue
            sq = sq + dlt * dlt
            per_input.append((s, dlt))
        sensitivity = sq.sqrt()
        total = total + SENSITIVITY_FACTOR * sensitivity
        parts["sens"].append(per_input)
        m = mag[0][i] if mag is not None and i < len(mag[0]) else None
        if m is not None and m.shape != o.shape:
            m = None
        # native: as far off as torch at the inputs' precision, here and output-wide
        nat_err = None
        if native is not None and i < len(native) and isinstance(native[i], torch.Tensor) \
                and native[i].shape == o.shape:
            nv = native[i].detach().cpu().to(torch.float64)
            fin = torch.isfinite(nv) & torch.isfinite(x)
            err = torch.where(fin, (nv - x).abs(), 0.0)
            u = ulp(torch.where(fin, x, 0.0), o.dtype)
            in_ulps = (err / u)[fin]
            level = float(torch.quantile(in_ulps, NATIVE_QUANTILE)) if in_ulps.numel() else 0.0
            nat_err = torch.maximum(err, level * u)
            if m is not None:
                # the level in ulps of the terms' magnitude, where the terms cancel: a
                # computation that rounds its terms (p in attention, x*rstd in a norm) is off
                # in proportion to them, not to the result they cancel down to. Measured only
                # on elements at most 1/8 of their terms (CANCELLING), where rounding the
                # output itself is negligible at that scale: what is left is torch's rounding
                # of intermediates, which fp32 accumulation does not have (an fp16 accumulator
                # stays a bug)
                ma = torch.nan_to_num(m.abs(), nan=0.0, posinf=0.0)
                um = ulp(ma, o.dtype)
                keep = fin & (ma > 0) & (x.abs() * CANCELLING <= ma)
                in_mag = (err / um)[keep]
                if in_mag.numel() >= CANCELLING_MIN:
                    level_m = float(torch.quantile(in_mag, NATIVE_QUANTILE))
                    nat_err = torch.maximum(nat_err, torch.where(ma > 0, level_m * um, 0.0))
            total = total + NATIVE_FACTOR * nat_err
        parts["native"].append(nat_err)
        acc = None
        if mag is not None and with_acc and m is not None:
            acc = accumulation_band(m, mag[1][i], o.dtype)
            total = total + acc
        parts["acc"].append(acc)
        extras.append(total)
    return extras, parts


def _accuracy_extras(outputs: tuple[Any, ...], expected: tuple[Any, ...],
                     extras: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """Rule 9's widening: :data:`ACCURACY_FACTOR` times rule 8's, plus, for outputs of 16 bits
    or fewer, :data:`ACCURACY_ULPS` ulps of the output at the element."""
    out: list[torch.Tensor | None] = []
    for o, e, ex in zip(outputs, expected, extras, strict=True):
        if ex is None:
            out.append(None)
            continue
        t = ACCURACY_FACTOR * ex
        if isinstance(o, torch.Tensor) and o.element_size() <= 2 and isinstance(e, torch.Tensor):
            x = e.detach().cpu().to(torch.float64)
            x = torch.where(torch.isfinite(x), x, 0.0)
            t = t + ACCURACY_ULPS * ulp(x, o.dtype)
        out.append(t)
    return out


def _judge_conditioning(outputs: Sequence[Any] | torch.Tensor, expected: tuple[Any, ...],
                        native: Sequence[Any] | None, evidence: Evidence, first: Comparison,
                        own: list[torch.Tensor], max_report: int, kw: dict[str, Any]
                        ) -> Comparison:
    """Rules 8 and 9: widen each element's band by what rounding explains at this input; what
    still fails is an accuracy finding when every failing element is within
    :data:`ACCURACY_FACTOR` times its bound (and no NaN/inf position differs), else stays a
    mismatch."""
    outs = _as_tuple(outputs)
    # a declared magnitude already put the accumulation term in the plain band
    with_acc = kw.get("magnitude") is None
    extras, parts = _rounding_extras(outs, expected, native, evidence, with_acc=with_acc)
    masks: list[torch.Tensor] = []
    checked: list[_Checked] = []
    c = _compare(outs, expected, max_report=max_report, masks=masks, extra=extras,
                 checked=checked, **kw)
    c.tolerance += " + rounding explained at this input (oracle rule 8)"
    if not c.ok and c.nonfinite_mismatches == 0:
        c.accuracy = _compare(outs, expected, extra=_accuracy_extras(outs, expected, extras),
                              **kw).ok
    if not c.ok:
        c.explanation, c.condition = _explain(outs, checked, parts, evidence, extras, c.names)
    own.clear()
    own.extend(masks)
    return c


def _explain(outputs: tuple[Any, ...], checked: list[_Checked], parts: dict[str, Any],
             evidence: Evidence, extras: Sequence[torch.Tensor | None] = (),
             names: Sequence[str | None] | None = None) -> tuple[str, dict[str, Any]]:
    """A sentence about the worst element (largest error over bound), in a kernel author's
    words, and its figures: the bound, and the limit up to which it is an accuracy finding
    (rule 9), so the figure printed and the verdict agree."""
    best: tuple[float, int, tuple[int, ...]] | None = None
    for i, ch in enumerate(checked):
        if ch.ratio is None or not bool(ch.mismatch.any()):
            continue
        r = torch.where(ch.mismatch, ch.ratio, -1.0)
        flat = int(torch.argmax(r.reshape(-1)))
        idx = tuple(int(k) for k in torch.unravel_index(torch.tensor(flat), tuple(r.shape))) \
            if r.dim() else ()
        val = float(r.reshape(-1)[flat])
        if best is None or val > best[0]:
            best = (val, i, idx)
    if best is None:
        return "", {}
    ratio, i, idx = best
    o = outputs[i]
    ch = checked[i]
    got = float(ch.got[idx])
    exp = float(ch.expected[idx])
    xr = float(round_to(torch.tensor(exp, dtype=torch.float64), o.dtype))
    err = abs(got - xr)
    one = float(ulp(torch.tensor(xr, dtype=torch.float64), o.dtype))
    where = output_label(i, names, len(outputs) > 1)
    where += "[" + ",".join(str(k) for k in idx) + "]"
    dtype = _dtype_name(o.dtype)
    bound = err / ratio if ratio > 0 and math.isfinite(ratio) else 0.0
    fig: dict[str, Any] = {"output": i, "index": list(idx), "error": err,
                           "error_ulp": err / one, "bound": bound, "ratio": ratio}
    # ulps against an exact 0 (or a subnormal) count subnormal steps: a figure that means
    # nothing, as does the reference's move there
    f = float_format(o.dtype) if o.dtype.is_floating_point else None
    tiny = 0.0 if f is None else 2.0 ** f.emin
    normal = f is None or (xr != 0 and (abs(xr) >= tiny or err < tiny))
    ulps = f" ({err / one:.3g} {dtype} ulp)" if normal else ""
    text = f"{where}: off by {err:.3g}{ulps}, {ratio:.3g}x the bound {bound:.3g}"
    ex = extras[i] if i < len(extras) else None
    if ex is not None and ex.numel() in (1, ch.got.numel()):
        widening = float(ex.reshape(ch.got.shape)[idx]) if ex.numel() > 1 else float(ex)
        limit = bound - widening + ACCURACY_FACTOR * widening
        if isinstance(o, torch.Tensor) and o.element_size() <= 2:
            limit += ACCURACY_ULPS * one
        fig["accuracy_limit"] = limit
        text += (f" (an accuracy finding up to {limit:.3g}, {ACCURACY_FACTOR:g}x its rounding "
                 f"part: {err / limit:.3g}x that)" if limit > 0 else "")
    sens = parts["sens"][i] or []
    s, dlt = max(sens, key=lambda p: float(p[1][idx])) if sens else (None, None)
    moved = float(dlt[idx]) if dlt is not None else 0.0
    if s is not None and normal and moved > 0 and math.isfinite(moved):  # an input that moves
        # nothing here (one this element does not use) says nothing about it
        fig["sensitivity"] = moved
        fig["sensitive_input"] = s.name
        fig["condition_ulp"] = moved / one
        text += (f"; the reference itself moves by {moved:.3g} ({moved / one:.3g} ulp) when "
                 f"{s.name} moves by about one float{'64' if s.unit < 2**-30 else '32'} "
                 "rounding")
    nat = parts["native"][i]
    if nat is not None:
        ne = float(nat[idx])
        fig["native_error"] = ne
        text += f"; torch at the inputs' precision is off by {ne:.3g} at this element's scale"
    acc = parts["acc"][i]
    if acc is not None:
        fig["accumulation_bound"] = float(acc[idx])
    return text, fig


def _as_tuple(x: Sequence[Any] | torch.Tensor) -> tuple[Any, ...]:
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def _compare(
    outputs: Sequence[Any] | torch.Tensor,
    expected: Sequence[Any] | torch.Tensor,
    *,
    tolerance: Tolerance | None = None,
    magnitude: Sequence[Any] | None = None,
    reduction_length: int = 1,
    max_report: int = 5,
    masks: list[torch.Tensor] | None = None,
    compiled: bool = False,
    names: Sequence[str | None] | None = None,
    extra: Sequence[torch.Tensor | None] | None = None,
    checked: list[_Checked] | None = None,
) -> Comparison:
    """:func:`compare` by rules 1-6; ``extra`` widens each output's band elementwise (rule 8's
    widening, or rule 9's from :func:`_accuracy_extras`: only what rounding explains is
    stretched, never the tolerance itself, so an error that no rounding explains stays a
    mismatch)."""
    tolerance = tolerance if tolerance is not None else Tolerance()
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    if isinstance(magnitude, torch.Tensor):
        magnitude = (magnitude,)
    outputs, expected = tuple(outputs), tuple(expected)
    if len(outputs) != len(expected):
        return Comparison(
            ok=False,
            structural=f"the kernel returned {len(outputs)} output(s) but the reference returned "
            f"{len(expected)}",
        )
    if magnitude is not None and len(magnitude) != len(expected):
        raise ValueError(
            f"Expected one magnitude per reference result ({len(expected)}) but got "
            f"{len(magnitude)}."
        )
    r = int(reduction_length)
    if r < 0:
        raise ValueError(f"Expected reduction_length >= 0 but got {reduction_length!r}.")

    pairs: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]] = []
    problems: list[str] = []
    many = len(outputs) > 1
    for i, (o_raw, e_raw) in enumerate(zip(outputs, expected, strict=True)):
        label = f"output {output_label(i, names) if names else i}" if many else "the output"
        o = o_raw.detach().cpu() if isinstance(o_raw, torch.Tensor) else None
        e = _to_cpu_tensor(e_raw)
        if o is None:
            problems.append(f"{label} is {_describe_value(o_raw)}, not a tensor")
            continue
        if e is None:
            problems.append(f"reference result {i} is {_describe_value(e_raw)}, not a tensor")
            continue
        if o.is_complex() or e.is_complex():
            problems.append(
                f"{label}: complex values are not supported "
                f"(kernel {_dtype_name(o.dtype)}, reference {_dtype_name(e.dtype)})"
            )
            continue
        if o.shape != e.shape:
            problems.append(
                f"{label} has shape {tuple(o.shape)} but the reference has shape "
                f"{tuple(e.shape)}"
            )
            continue
        m = None
        if magnitude is not None and magnitude[i] is not None:
            m = _to_cpu_tensor(magnitude[i])
            if m is None:
                raise ValueError(f"magnitude {i} is {_describe_value(magnitude[i])}")
            try:
                m = m.broadcast_to(o.shape)
            except RuntimeError as err:
                raise ValueError(
                    f"magnitude {i} has shape {tuple(m.shape)}, which does not fit the "
                    f"output's {tuple(o.shape)}"
                ) from err
        pairs.append((o, e, m))
    if problems:
        return Comparison(ok=False, structural="; ".join(problems))

    texts: list[str] = []
    checked = checked if checked is not None else []
    for i, (o, e, m) in enumerate(pairs):
        name = names[i] if names is not None and i < len(names) else None
        tol = tolerance.for_output(i, name, o.dtype)
        rtol, atol, src = _resolve(tol, o.dtype, compiled)
        if o.is_floating_point():
            ex = extra[i] if extra is not None and i < len(extra) else None
            c = _check_float(o, e, m, rtol, atol, r, tol.equal_nan, ex)
        else:
            c = _check_int(o, e, atol)
        checked.append(c)
        texts.append(_tolerance_text(o.dtype, rtol, atol, src, m is not None, r))
    if masks is not None:
        masks.extend(c.mismatch for c in checked)

    if len(set(texts)) <= 1:
        tol_text = texts[0] if texts else ""
    else:
        tol_text = "; ".join(f"{output_label(i, names, True)}: {t}" for i, t in enumerate(texts))

    mismatched = 0
    nonfinite = 0
    first: list[Mismatch] = []
    for i, ((o, _e, _m), c) in enumerate(zip(pairs, checked, strict=True)):
        n = int(c.mismatch.sum())
        mismatched += n
        nonfinite += int(c.nonfinite.sum())
        want = max_report - len(first)
        if n and want > 0:
            flat = c.mismatch.contiguous().reshape(-1)
            pos = flat.nonzero()[:want, 0]
            if o.dim() == 0:
                idxs: list[tuple[int, ...]] = [()] * len(pos)
            else:
                coords = torch.unravel_index(pos, tuple(o.shape))
                idxs = [tuple(int(k[j]) for k in coords) for j in range(len(pos))]
            for idx in idxs:
                first.append(Mismatch(i, idx, _item(c.got, idx), _item(c.expected, idx)))

    total = sum(o.numel() for o, _, _ in pairs)
    ratios = [float(c.ratio.max()) for c in checked if c.ratio is not None and c.ratio.numel()]
    return Comparison(
        ok=mismatched == 0,
        mismatched=mismatched,
        total=total,
        max_abs_error=max((c.abs_err for c in checked), default=0.0),
        max_rel_error=max((c.rel_err for c in checked), default=0.0),
        max_ulp_error=max((c.ulp_err for c in checked), default=0.0),
        nonfinite_mismatches=nonfinite,
        first=first,
        tolerance=tol_text,
        bound_ratio=max(ratios, default=0.0),
        names=list(names) if names else None,
    )


def accept_native(expected: Sequence[Any], native: Sequence[Any],
                  mismatch: Sequence[torch.Tensor], native_mismatch: Sequence[torch.Tensor]
                  ) -> tuple[tuple[Any, ...], int] | None:
    """``expected`` with every element the kernel got wrong against it (``mismatch``) but
    right against ``native``, the reference on the inputs' own dtypes (``native_mismatch``
    false there), set to ``native``'s value; and how many elements that is. None when there
    are none or the results do not line up (rule 7).

    >>> import torch
    >>> adj, n = accept_native((torch.tensor([-0.63, 1.0]),), (torch.tensor([-0.0, 1.0]),),
    ...                        [torch.tensor([True, False])], [torch.tensor([False, False])])
    >>> n, adj[0].tolist()
    (1, [-0.0, 1.0])
    """
    if not (len(native) == len(expected) == len(mismatch) == len(native_mismatch)):
        return None
    adjusted: list[Any] = []
    accepted = 0
    for e, n, bad, nbad in zip(expected, native, mismatch, native_mismatch, strict=True):
        take = bad & ~nbad
        k = int(take.sum()) if isinstance(e, torch.Tensor) and isinstance(n, torch.Tensor) \
            and e.shape == n.shape == take.shape else 0
        if k:
            adjusted.append(torch.where(take, n.detach().cpu().to(torch.float64),
                                        e.detach().cpu().to(torch.float64)))
            accepted += k
        else:
            adjusted.append(e)
    return (tuple(adjusted), accepted) if accepted else None


_ULP_CAP = 64.0


def score(comparison: Comparison) -> float:
    """A finite number to maximize with ``hypothesis.target``: ``8*log2(1 + error/bound)`` of the
    element closest to (or furthest past) its bound, capped at 64, plus the mismatching
    fraction, plus 1 when any NaN/inf position differs; a structural problem scores the most
    (66). Climbing error over bound, not raw ulps, steers the search toward inputs where the
    kernel is wrong rather than toward ill-conditioned inputs where every correct kernel is
    far off in ulps."""
    if comparison.structural:
        return _ULP_CAP + 2.0
    r = comparison.bound_ratio
    if r is None:  # a comparison made elsewhere (a user's own): climb the ulps instead
        u = comparison.max_ulp_error
        s = _ULP_CAP if not math.isfinite(u) else min(_ULP_CAP, math.log2(1.0 + max(0.0, u)))
    else:
        s = _ULP_CAP if not math.isfinite(r) else min(_ULP_CAP,
                                                      8.0 * math.log2(1.0 + max(0.0, r)))
    if comparison.total:
        s += comparison.mismatched / comparison.total
    if comparison.nonfinite_mismatches:
        s += 1.0
    return float(s) if math.isfinite(s) else _ULP_CAP
