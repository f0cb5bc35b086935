"""The case model: one fuzzing case as pure, JSON-serializable data.

A :class:`Case` says everything needed to rebuild a kernel's inputs bit for bit: per tensor its
shape, strides, storage offset, storage size, dtype and a value recipe; plus scalars,
meta-parameters and the autotune config to force. Tensors are built from it on the CPU by
:func:`materialize`; nothing here depends on a GPU, and this module imports torch lazily so the
parent (Hypothesis) process can handle cases without touching it.

Layout model (docs/architecture.md, case): a tensor is a view over a larger storage. The view is
derived from a :class:`Layout` (permutation, per-dim step and start, extra storage offset, expanded
dims), but the case stores the *resulting* strides and offsets as the truth, so a saved case replays
with the same layout even if the derivation changes later.

Example::

    >>> from fuzzkern.case.model import Layout, TensorCase, Values, view_of
    >>> strides, offset, size = view_of((3, 4), Layout.contiguous(2))
    >>> (strides, offset, size)
    ((4, 1), 0, 12)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fuzzkern.case.codec import decode_scalar, encode_scalar
from fuzzkern.errors import CaseError

if TYPE_CHECKING:  # pragma: no cover
    import torch

CASE_VERSION = 1

#: Dtype names fuzzkern knows, in shrink order (the first is the most boring).
FLOAT_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
)
INT_DTYPES = ("int32", "int64", "int16", "int8", "uint8", "bool")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES

#: Value distributions, most boring first (what the shrinker aims for).
FLOAT_DISTRIBUTIONS = ("small_ints", "normal", "uniform", "negative", "wide", "large")
INT_DISTRIBUTIONS = ("small_ints", "uniform", "negative", "extreme")

#: Special values a case can plant at chosen positions.
FLOAT_SPECIALS = ("nan", "inf", "-inf", "-0.0", "subnormal", "max", "lowest", "tiny")
INT_SPECIALS = ("max", "min", "zero", "minus_one")

Scalar = None | bool | int | float | str | tuple[Any, ...]


def is_float_dtype(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


@dataclass(frozen=True)
class Layout:
    """How a view was cut from its storage; every field shrinks to the contiguous case.

    - ``permutation``: logical dims listed from outermost to innermost in memory
      (identity = row-major).
    - ``steps``: per logical dim, the step between neighbours in the base buffer (1 = dense).
    - ``starts``: per logical dim, how many base-buffer elements to skip before the view.
    - ``offset``: extra elements before everything (odd values break 16-byte alignment).
    - ``expanded``: logical dims broadcast with stride 0 (inputs only).
    """

    permutation: tuple[int, ...]
    steps: tuple[int, ...]
    starts: tuple[int, ...]
    offset: int = 0
    expanded: tuple[int, ...] = ()

    @staticmethod
    def contiguous(ndim: int) -> Layout:
        return Layout(tuple(range(ndim)), (1,) * ndim, (0,) * ndim, 0, ())

    @property
    def is_contiguous(self) -> bool:
        return self == Layout.contiguous(len(self.permutation))

    def kinds(self) -> list[str]:
        """Short words for what makes this layout unusual (empty when contiguous)."""
        out = []
        if self.permutation != tuple(range(len(self.permutation))):
            out.append("permuted")
        if any(s != 1 for s in self.steps):
            out.append("strided")
        if any(s != 0 for s in self.starts) or self.offset:
            out.append("offset")
        if self.expanded:
            out.append("expanded")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "permutation": list(self.permutation),
            "steps": list(self.steps),
            "starts": list(self.starts),
            "offset": self.offset,
            "expanded": list(self.expanded),
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Layout:
        return Layout(
            tuple(d["permutation"]),
            tuple(d["steps"]),
            tuple(d["starts"]),
            int(d.get("offset", 0)),
            tuple(d.get("expanded", ())),
        )


def view_of(shape: tuple[int, ...], layout: Layout) -> tuple[tuple[int, ...], int, int]:
    """Strides, storage offset and storage size (all in elements) of ``shape`` cut by ``layout``.

    The base buffer holds, per logical dim ``d``, ``starts[d] + (shape[d]-1)*steps[d] + 1``
    elements (1 for an expanded dim), laid out row-major in ``permutation`` order.
    """
    ndim = len(shape)
    if len(layout.permutation) != ndim or sorted(layout.permutation) != list(range(ndim)):
        raise CaseError(f"layout permutation {layout.permutation} does not fit shape {shape}")
    base = [1] * ndim
    for d in range(ndim):
        if d in layout.expanded or shape[d] == 0:
            base[d] = 1
        else:
            base[d] = layout.starts[d] + (shape[d] - 1) * layout.steps[d] + 1
    base_strides = [0] * ndim
    acc = 1
    for d in reversed(layout.permutation):
        base_strides[d] = acc
        acc *= base[d]
    storage_size = layout.offset + acc
    strides = []
    offset = layout.offset
    for d in range(ndim):
        if d in layout.expanded:
            strides.append(0)
        else:
            strides.append(base_strides[d] * layout.steps[d])
            offset += base_strides[d] * layout.starts[d]
    if any(s == 0 for s in shape):
        storage_size = layout.offset
    return tuple(strides), offset, storage_size


#: Row domains: each row along ``Domain.dim`` is a probability vector (non-negative, sums to
#: 1), or its logarithm (non-positive, logsumexp 0).
ROWS = ("probability", "log_probability")


def _number(v: Any, what: str) -> int | float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise CaseError(f"{what} must be a number or null, got {v!r}")
    return v


@dataclass(frozen=True)
class Domain:
    """Where a tensor's values lie, as data: a range and/or a row constraint.

    - ``min_value``/``max_value``: bounds (None: unbounded), inclusive unless
      ``exclude_min``/``exclude_max``. Integer tensors use whole numbers; ``[0, V)`` is
      ``min_value=0, max_value=V, exclude_max=True``.
    - ``min_from``/``max_from``: the dim or scalar input a bound was read from when the case was
      drawn (the number is stored too: a case is data); the minimizer re-reads it when it
      changes that dim.
    - ``rows``: ``"probability"`` or ``"log_probability"`` along dim ``dim`` (float tensors).

    Values are drawn from the recipe's distribution, then folded into the range (reflected at
    the bounds, wrapped for integers); special values move to the bounds or are skipped when
    they fall outside (see :func:`apply_domain`).
    """

    min_value: int | float | None = None
    max_value: int | float | None = None
    exclude_min: bool = False
    exclude_max: bool = False
    min_from: str | None = None
    max_from: str | None = None
    rows: str | None = None
    dim: int = -1

    def describe(self) -> str:
        parts = []
        if self.min_value is not None or self.max_value is not None:
            lo = "-inf" if self.min_value is None else repr(self.min_value)
            hi = "inf" if self.max_value is None else repr(self.max_value)
            parts.append(f"{'(' if self.exclude_min or self.min_value is None else '['}{lo},"
                         f"{hi}{')' if self.exclude_max or self.max_value is None else ']'}")
        if self.rows:
            parts.append(f"{self.rows} rows(dim={self.dim})")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k in ("min_value", "max_value", "min_from", "max_from", "rows"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        for k in ("exclude_min", "exclude_max"):
            if getattr(self, k):
                d[k] = True
        if self.rows is not None:
            d["dim"] = self.dim
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Domain:
        if not isinstance(d, Mapping):
            raise CaseError(f"a value domain must be a JSON object, got {type(d).__name__}")
        rows = d.get("rows")
        if rows is not None and rows not in ROWS:
            raise CaseError(f"unknown row domain {rows!r}; expected one of {ROWS}")
        names = {k: d.get(k) for k in ("min_from", "max_from")}
        for k, v in names.items():
            if v is not None and not isinstance(v, str):
                raise CaseError(f"{k} must be a name or null, got {v!r}")
        dom = Domain(_number(d.get("min_value"), "min_value"),
                     _number(d.get("max_value"), "max_value"),
                     bool(d.get("exclude_min", False)), bool(d.get("exclude_max", False)),
                     names["min_from"], names["max_from"], rows, int(d.get("dim", -1)))
        for k in ("min_value", "max_value"):
            v = getattr(dom, k)
            if isinstance(v, float) and not math.isfinite(v):
                raise CaseError(f"{k} must be finite, got {v!r}")
        return dom


def literal_special(kind: str) -> int | float | None:
    """The number a literal special value (``"=-100"``) stands for; None for a named kind."""
    if not kind.startswith("="):
        return None
    text = kind[1:]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)  # "nan", "inf" parse too; float() runs no code
    except ValueError:
        raise CaseError(f"unknown special value {kind!r}") from None


@dataclass(frozen=True)
class Values:
    """Recipe for a tensor's values: a seed, a distribution and sparse special values.

    ``specials`` holds ``(position, kind)`` pairs; ``position`` indexes the tensor's distinct
    elements in row-major order (expanded dims count once) and wraps around. A kind is a name
    (:data:`FLOAT_SPECIALS`, :data:`INT_SPECIALS`) or a literal number written ``"=-100"``
    (planted as is, even outside the ``domain``). ``domain`` (optional) says where the values
    lie (:class:`Domain`). ``block`` (optional, ``(count, index)``): the values are member
    ``index`` of ``count`` tensors' worth drawn together from ``seed`` (value variants,
    :meth:`Case.variant`, so that a batch of them is drawn at once).
    """

    seed: int = 0
    distribution: str = "small_ints"
    specials: tuple[tuple[int, str], ...] = ()
    domain: Domain | None = None
    block: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.block is not None and not (
                len(self.block) == 2 and 0 <= self.block[1] < self.block[0]):
            raise CaseError(f"Expected block=(count, index) with 0 <= index < count, but got "
                            f"{self.block!r}.")

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "seed": self.seed,
            "distribution": self.distribution,
            "specials": [[i, k] for i, k in self.specials],
        }
        if self.domain is not None:
            d["domain"] = self.domain.to_json()
        if self.block is not None:
            d["block"] = list(self.block)
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Values:
        domain = d.get("domain")
        block = d.get("block")
        return Values(
            int(d.get("seed", 0)),
            str(d.get("distribution", "small_ints")),
            tuple((int(i), str(k)) for i, k in d.get("specials", ())),
            None if domain is None else Domain.from_json(domain),
            None if block is None else (int(block[0]), int(block[1])),
        )


@dataclass(frozen=True)
class TensorCase:
    """One tensor argument of a case: an exact strided view plus its value recipe."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    storage_offset: int
    storage_size: int
    values: Values = field(default_factory=Values)
    layout: Layout | None = None

    @staticmethod
    def build(
        shape: tuple[int, ...],
        dtype: str,
        layout: Layout | None = None,
        values: Values | None = None,
    ) -> TensorCase:
        layout = layout or Layout.contiguous(len(shape))
        strides, offset, size = view_of(tuple(shape), layout)
        return TensorCase(tuple(shape), dtype, strides, offset, size, values or Values(), layout)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_contiguous(self) -> bool:
        return self.layout is None or self.layout.is_contiguous

    def describe(self) -> str:
        dims = ",".join(str(s) for s in self.shape)
        text = f"{self.dtype}[{dims}]"
        if not self.is_contiguous:
            kinds = "+".join(self.layout.kinds()) if self.layout else "strided"
            text += f" {kinds} strides={self.strides} offset={self.storage_offset}"
        v = self.values
        text += f" values={v.distribution}"
        if v.seed:
            text += f"(seed={v.seed})"
        if v.specials:
            text += " specials=" + ",".join(f"{k.lstrip('=')}@{i}" for i, k in v.specials)
        if v.domain is not None:
            text += f" in {v.domain.describe()}"
        return text

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "strides": list(self.strides),
            "storage_offset": self.storage_offset,
            "storage_size": self.storage_size,
            "values": self.values.to_json(),
        }
        if self.layout is not None:
            d["layout"] = self.layout.to_json()
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TensorCase:
        try:
            tc = TensorCase(
                tuple(int(s) for s in d["shape"]),
                str(d["dtype"]),
                tuple(int(s) for s in d["strides"]),
                int(d["storage_offset"]),
                int(d["storage_size"]),
                Values.from_json(d.get("values", {})),
                Layout.from_json(d["layout"]) if d.get("layout") else None,
            )
        except (KeyError, TypeError, ValueError) as e:
            raise CaseError(f"malformed tensor in case: {e!r}") from e
        if tc.dtype not in ALL_DTYPES:
            raise CaseError(f"unknown dtype {tc.dtype!r} in case; expected one of {ALL_DTYPES}")
        if len(tc.strides) != len(tc.shape):
            raise CaseError(f"tensor has shape {tc.shape} but strides {tc.strides}")
        return tc


#: characters of a scalar input's ``repr`` a case's description shows (a 10 MB string from a
#: corpus entry is not printed whole)
SCALAR_CHARS = 200


def _shown(v: Any) -> str:
    """``repr(v)`` of a scalar input, cut to :data:`SCALAR_CHARS` around a note."""
    text = repr(v)
    if len(text) <= SCALAR_CHARS:
        return text
    return f"{text[:SCALAR_CHARS - 40]}...[{len(text)} characters]...{text[-20:]}"


@dataclass(frozen=True)
class Case:
    """Everything one kernel launch gets, as data.

    - ``dims``: the symbolic dims drawn for this case (``{"N": 17}``).
    - ``inputs``: argument name → :class:`TensorCase` or a scalar, in declaration order.
    - ``configs``: autotuned kernel name → index of the ``triton.Config`` forced in every mode.
    - ``compile``: Triton compile options drawn for this case (:data:`COMPILE_CHOICES`), only
      those that differ from Triton's default; compiled mode gives them to every launch that
      does not set them itself (an autotuned config does). The interpreter has none.
    """

    dims: Mapping[str, int]
    inputs: Mapping[str, TensorCase | Any]
    configs: Mapping[str, int] = field(default_factory=dict)
    compile: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tensors(self) -> dict[str, TensorCase]:
        return {k: v for k, v in self.inputs.items() if isinstance(v, TensorCase)}

    @property
    def scalars(self) -> dict[str, Any]:
        return {k: v for k, v in self.inputs.items() if not isinstance(v, TensorCase)}

    def describe(self) -> str:
        """The case in words: shapes, layouts, dtypes, values, scalars and configs."""
        parts = []
        for name, v in self.inputs.items():
            parts.append(f"{name}={v.describe() if isinstance(v, TensorCase) else _shown(v)}")
        for name, idx in self.configs.items():
            parts.append(f"{name}.config[{idx}]")
        parts += [f"{k}={v!r}" for k, v in sorted(self.compile.items())]
        return "; ".join(parts)

    def variant(self, k: int) -> Case:
        """Value variant ``k`` of this case: the same dims, layouts, dtypes, scalars, configs,
        distributions, special values and domains, with every tensor's value seed replaced by
        one derived from it and ``k`` (``variant(0)`` is the case itself). Nothing a Triton
        kernel specializes on changes, so a variant of a compiled case runs without
        compiling: the compiled mode spends a compilation's cost on several cases
        (:func:`fuzzkern.execution.runner.run_variants`).

        >>> from fuzzkern.case.model import Case, TensorCase, Values
        >>> c = Case({"N": 3}, {"x": TensorCase((3,), "float32", (1,), 0, 3, Values(seed=5)),
        ...                     "n": 3})
        >>> v = c.variant(2)
        >>> v.inputs["x"].values.seed != 5, v.inputs["x"].shape, v.inputs["n"], c.variant(0) == c
        (True, (3,), 3, True)
        """
        if k == 0:
            return self
        inputs = {
            name: _variant_of(v, k, i) if isinstance(v, TensorCase) else v
            for i, (name, v) in enumerate(self.inputs.items())
        }
        return Case(self.dims, inputs, self.configs, self.compile)

    def to_json(self) -> dict[str, Any]:
        inputs: dict[str, Any] = {}
        for k, v in self.inputs.items():
            if isinstance(v, TensorCase):
                inputs[k] = {"tensor": v.to_json()}
            else:
                inputs[k] = {"scalar": encode_scalar(v)}
        out = {
            "version": CASE_VERSION,
            "dims": dict(self.dims),
            "inputs": inputs,
            "configs": dict(self.configs),
        }
        if self.compile:  # (absent when every option is Triton's default, as in older cases)
            out["compile"] = dict(self.compile)
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Case:
        if not isinstance(d, Mapping):
            raise CaseError(f"a case must be a JSON object, got {type(d).__name__}")
        version = d.get("version", CASE_VERSION)
        if not isinstance(version, int) or version > CASE_VERSION:
            raise CaseError(
                f"case version {version!r} is newer than this fuzzkern understands "
                f"({CASE_VERSION}); upgrade fuzzkern"
            )
        inputs: dict[str, Any] = {}
        try:
            for k, v in d["inputs"].items():
                if "tensor" in v:
                    inputs[k] = TensorCase.from_json(v["tensor"])
                elif "scalar" in v:
                    inputs[k] = decode_scalar(v["scalar"])
                else:
                    raise CaseError(f"input {k!r} is neither a tensor nor a scalar")
            dims = {str(k): int(n) for k, n in d.get("dims", {}).items()}
            configs = {str(k): int(n) for k, n in d.get("configs", {}).items()}
            compile_options = checked_compile(d.get("compile") or {})
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CaseError(f"malformed case: {e!r}") from e
        return Case(dims, inputs, configs, compile_options)


#: the Triton compile options a case may carry, each with the values it may take, Triton's
#: default first (what a drawn option shrinks to)
COMPILE_CHOICES: dict[str, tuple[Any, ...]] = {
    "num_warps": (4, 1, 2, 8, 16),
    "num_stages": (3, 1, 2, 4),
    "enable_fp_fusion": (True, False),
}


def checked_compile(given: Any) -> dict[str, Any]:
    """``given`` (a case's ``compile``, e.g. read from a corpus entry) checked against
    :data:`COMPILE_CHOICES`: known names, allowed values, nothing else (CaseError).

    >>> checked_compile({"num_warps": 2})
    {'num_warps': 2}
    """
    if not isinstance(given, Mapping):
        raise CaseError(f"a case's compile options must be an object, got {given!r}")
    out: dict[str, Any] = {}
    for name, value in given.items():
        choices = COMPILE_CHOICES.get(name)
        if choices is None:
            raise CaseError(f"unknown compile option {name!r}; expected one of "
                            f"{sorted(COMPILE_CHOICES)}")
        if type(value) is not type(choices[0]) or value not in choices:
            raise CaseError(f"compile option {name}={value!r} is not one of {choices}")
        out[str(name)] = value
    return out


def _variant_seed(seed: int, k: int, position: int) -> int:
    """A value seed for variant ``k`` of the tensor at ``position``: a fixed mix of the three
    (SplitMix64's finalizer), in [1, 2**31)."""
    x = (seed * 0x9E3779B97F4A7C15 + k * 0xBF58476D1CE4E5B9 + position * 0x94D049BB133111EB) \
        & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (x ^ (x >> 31)) % (2**31 - 1) + 1


# --------------------------------------------------------------------------------------------
# Materialization (worker side: imports torch)


def torch_dtype(name: str) -> torch.dtype:
    import torch

    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise CaseError(f"torch {torch.__version__} has no dtype {name!r}")
    return dt


def gap_fill(dtype: torch.dtype) -> float | int | bool:
    """The sentinel written into storage that no view element covers (docs/architecture.md,
    case)."""
    import torch

    if dtype == torch.bool:
        return True
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.uint8:
        return 0xA5
    return torch.iinfo(dtype).min + 0x5A


def _special_value(kind: str, dtype: torch.dtype) -> float | int | bool:
    import torch

    if dtype.is_floating_point:
        fi = torch.finfo(dtype)
        table: dict[str, float] = {
            "nan": float("nan"),
            "inf": float("inf"),
            "-inf": float("-inf"),
            "-0.0": -0.0,
            "subnormal": float(fi.smallest_normal) / 2,
            "max": float(fi.max),
            "lowest": float(fi.min),
            "tiny": float(fi.smallest_normal),
        }
        if kind not in table:
            raise CaseError(f"unknown float special value {kind!r}")
        return table[kind]
    if dtype == torch.bool:
        return kind in ("max", "minus_one")
    ii = torch.iinfo(dtype)
    itable = {"max": ii.max, "min": ii.min, "zero": 0, "minus_one": -1 if ii.min < 0 else ii.max}
    if kind not in itable:
        raise CaseError(f"unknown integer special value {kind!r}")
    return itable[kind]


def _float_bounds(dom: Domain) -> tuple[float, float]:
    lo = -math.inf if dom.min_value is None else float(dom.min_value)
    hi = math.inf if dom.max_value is None else float(dom.max_value)
    return lo, hi


def _int_bounds(dom: Domain, dtype: torch.dtype) -> tuple[int, int]:
    """The inclusive integer range of ``dom`` within ``dtype``."""
    import torch

    ii = torch.iinfo(dtype)
    lo, hi = ii.min, ii.max
    if dom.min_value is not None:
        lo = max(lo, math.ceil(dom.min_value) + (1 if dom.exclude_min
                                                 and dom.min_value == math.ceil(dom.min_value)
                                                 else 0))
    if dom.max_value is not None:
        hi = min(hi, math.floor(dom.max_value) - (1 if dom.exclude_max
                                                  and dom.max_value == math.floor(dom.max_value)
                                                  else 0))
    if lo > hi:
        raise CaseError(f"the value domain {dom.describe()} holds no {dtype} value")
    return lo, hi


def _inside(v: float, dom: Domain) -> bool:
    lo, hi = _float_bounds(dom)
    if math.isnan(v):
        return False
    if v < lo or (dom.exclude_min and v == lo) or v > hi or (dom.exclude_max and v == hi):
        return False
    return True


def _interior(dom: Domain) -> float:
    """A value well inside a float range (what a value rounded onto an excluded bound becomes)."""
    lo, hi = _float_bounds(dom)
    if math.isfinite(lo) and math.isfinite(hi):
        return lo + (hi - lo) / 2
    if math.isfinite(lo):
        return lo + max(1.0, abs(lo))
    if math.isfinite(hi):
        return hi - max(1.0, abs(hi))
    return 0.0


def _fold_float(x: torch.Tensor, dom: Domain) -> torch.Tensor:
    """Reflect ``x`` (float64) into the range at its bounds: continuous, deterministic, keeps
    small integers small integers where the range allows."""
    import torch

    lo, hi = _float_bounds(dom)
    if math.isfinite(lo) and math.isfinite(hi):
        w = hi - lo
        if w <= 0:
            return torch.full_like(x, lo)
        t = torch.remainder(x - lo, 2 * w)
        return lo + torch.where(t <= w, t, 2 * w - t)
    if math.isfinite(lo):
        return lo + (x - lo).abs()
    if math.isfinite(hi):
        return hi - (hi - x).abs()
    return x


def _rows(x: torch.Tensor, shape: tuple[int, ...], dom: Domain, count: int | None = None
          ) -> torch.Tensor:
    """``x`` (float64, flat) turned into probability (or log-probability) rows along
    ``dom.dim`` of ``shape`` (of each of ``count`` tensors of ``shape``, when given); a 0-dim
    tensor is one whole row."""
    if math.prod(shape) == 0:
        return x
    if not shape:
        return x * 0 + (0.0 if dom.rows == "log_probability" else 1.0)
    dim = dom.dim % len(shape)
    if count is None:
        v = x.reshape(shape)
    else:
        v, dim = x.reshape((count, *shape)), dim + 1
    v = v.log_softmax(dim) if dom.rows == "log_probability" else v.softmax(dim)
    return v.reshape(-1)


def _special_in_domain(kind: str, dtype: torch.dtype, dom: Domain | None
                       ) -> float | int | bool | None:
    """The value a special kind plants under ``dom`` (None: it lies outside; skipped). Literal
    kinds (``"=-100"``) are planted as they are; ``max``/``lowest``/``min`` become the range's
    bounds."""
    import torch

    literal = literal_special(kind)
    if literal is not None:
        if dtype.is_floating_point:
            return float(literal)
        if isinstance(literal, float) and not math.isfinite(literal):
            raise CaseError(f"special value {kind!r} does not fit {dtype}")
        return int(literal)
    value = _special_value(kind, dtype)
    if dom is None or dtype == torch.bool or (dom.min_value is None and dom.max_value is None):
        return value
    if not dtype.is_floating_point:
        ilo, ihi = _int_bounds(dom, dtype)
        value = {"max": ihi, "min": ilo}.get(kind, value)
        return value if ilo <= int(value) <= ihi else None
    flo, fhi = _float_bounds(dom)
    if kind == "max" and math.isfinite(fhi):
        value = fhi
    elif kind == "lowest" and math.isfinite(flo):
        value = flo
    if kind == "nan":
        return value  # drawn only when the strategy allows NaN
    return value if _inside(float(value), dom) else None


def generate_values(values: Values, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Contiguous tensor of ``shape`` filled as ``values`` says, deterministically from its seed
    (and, for ``values.block = (count, index)``, member ``index`` of ``count`` tensors of
    ``shape`` drawn together: the block is drawn once and kept for the next members)."""
    if values.block is None:
        return _generate(values, shape, dtype)
    count, index = values.block
    key = (values.seed, values.distribution, values.specials, values.domain)
    return _block_of(key, count, tuple(shape), dtype)[index].clone()


@functools.lru_cache(maxsize=8)
def _block_of(key: tuple[Any, ...], count: int, shape: tuple[int, ...], dtype: torch.dtype
              ) -> torch.Tensor:
    """``count`` tensors of ``shape`` drawn together (read it, never write it: cached)."""
    return _generate(Values(*key), shape, dtype, count)


def _generate(values: Values, shape: tuple[int, ...], dtype: torch.dtype,
              count: int | None = None) -> torch.Tensor:
    """:func:`generate_values` of a tensor of ``shape`` (of ``count`` of them, stacked, when
    given: one draw of ``count`` times the values)."""
    import torch

    g = torch.Generator().manual_seed(values.seed)
    n = math.prod(shape) * (count or 1)
    dist = values.distribution
    dom = values.domain
    if dtype.is_floating_point:
        fmax = float(torch.finfo(dtype).max)
        if dist == "small_ints":
            x = torch.randint(-4, 5, (n,), generator=g).double()
        elif dist == "normal":
            x = torch.randn(n, generator=g, dtype=torch.float64)
        elif dist == "uniform":
            x = torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1
        elif dist == "negative":
            x = -torch.rand(n, generator=g, dtype=torch.float64) * 4 - 0.25
        elif dist == "wide":
            emax = min(20, int(math.log2(fmax)) - 3)
            e = torch.randint(-emax, emax + 1, (n,), generator=g).double()
            x = torch.randn(n, generator=g, dtype=torch.float64) * torch.exp2(e)
        elif dist == "large":
            mag = min(1024.0, fmax / 4)
            sign = torch.randint(0, 2, (n,), generator=g).double() * 2 - 1
            x = sign * (torch.rand(n, generator=g, dtype=torch.float64) * 0.75 + 0.25) * mag
        else:
            raise CaseError(f"unknown float distribution {dist!r}")
        if dom is not None and dom.rows:
            x = _rows(x, shape, dom, count)
        if dom is not None and (dom.min_value is not None or dom.max_value is not None):
            x = _fold_float(x, dom)
        x = x.clamp(-fmax, fmax)
        # fp8 casts from float64 are not implemented for every torch build; go through fp32.
        out = x.float().to(dtype) if dtype.itemsize == 1 else x.to(dtype)
        if dom is not None and (dom.min_value is not None or dom.max_value is not None) and n:
            # Rounding to the dtype may land on an excluded bound or just past a bound.
            lo, hi = _float_bounds(dom)
            y = out.double()
            bad = (y < lo) | (y > hi)
            if dom.exclude_min:
                bad |= y == lo
            if dom.exclude_max:
                bad |= y == hi
            if bool(bad.any()):
                out[bad] = torch.tensor(_interior(dom), dtype=torch.float64).to(dtype)
    else:
        if dtype == torch.bool:
            lo, hi = 0, 2
        else:
            ii = torch.iinfo(dtype)
            bounds = {
                "small_ints": (max(-4, ii.min), 5),
                "uniform": (ii.min, ii.max),
                "negative": (ii.min, 0) if ii.min < 0 else (0, 3),
                "extreme": (ii.min, ii.max),
            }
            if dist not in bounds:
                raise CaseError(f"unknown integer distribution {dist!r}")
            lo, hi = bounds[dist]
        if dist == "extreme" and dtype != torch.bool:
            ii = torch.iinfo(dtype)
            pick = torch.randint(0, 4, (n,), generator=g)
            choices = torch.tensor([ii.min, ii.max, ii.min + 1, ii.max - 1], dtype=torch.int64)
            out = choices[pick].to(dtype)
        else:
            # randint's high bound is exclusive and must fit int64
            out = torch.randint(lo, min(hi + 1, 2**63 - 1) if dtype != torch.bool else hi, (n,),
                                generator=g, dtype=torch.int64).to(dtype)
        if (dom is not None and dtype != torch.bool
                and (dom.min_value is not None or dom.max_value is not None)):
            dlo, dhi = _int_bounds(dom, dtype)
            x64 = out.to(torch.int64)
            if (dlo, dhi) != (torch.iinfo(dtype).min, torch.iinfo(dtype).max):
                width = dhi - dlo + 1
                if width >= 2**62:  # one-sided over (nearly) all of int64: clamp
                    x64 = x64.clamp(dlo, dhi)
                else:  # wrap into [dlo, dhi]: small ints stay small (x mod V)
                    x64 = dlo + torch.remainder(x64 - dlo, width)
            out = x64.to(dtype)
    if n:
        each = n // (count or 1)
        rows = out.view(count or 1, each)  # a special goes to the same place in every member
        for pos, kind in values.specials:
            v = _special_in_domain(kind, dtype, dom)
            if v is not None:
                rows[:, pos % each] = v
    return out.reshape(shape) if count is None else out.reshape((count, *shape))


def materialize(tc: TensorCase) -> torch.Tensor:
    """Build the CPU tensor ``tc`` describes: a view with the exact strides and offset over a
    storage whose uncovered elements hold :func:`gap_fill`."""
    import torch

    dtype = torch_dtype(tc.dtype)
    if tc.storage_offset == 0 and tc.storage_size == math.prod(tc.shape) and tc.strides == \
            contiguous_strides(tc.shape):
        # a dense row-major view of its whole storage: no gaps to fill, the generated values
        # are the storage (the same bytes as below)
        return generate_values(tc.values, tc.shape, dtype)
    storage = torch.empty(tc.storage_size, dtype=dtype)
    storage.fill_(gap_fill(dtype))
    view = storage.as_strided(tc.shape, tc.strides, tc.storage_offset)
    if not tc.numel:
        return view  # nothing to write (an expanded dim must not make it one element)
    # Write through a view with expanded (stride-0) dims collapsed to size 1: torch refuses to
    # copy into overlapping memory, and an expanded input repeats one value along that dim.
    dense_shape = tuple(1 if st == 0 else s for s, st in zip(tc.shape, tc.strides, strict=True))
    dst = storage.as_strided(dense_shape, tc.strides, tc.storage_offset)
    dst.copy_(generate_values(tc.values, dense_shape, dtype))
    return view


#: value variants draw the values of up to this many variants of a tensor at once
#: (:meth:`Case.variant`): a batch of variants (:mod:`fuzzkern.execution.batch`) draws them
#: with one set of operations instead of one each
VARIANT_BLOCK = 32
#: ... and at most this many values at once (a variant replayed alone draws its whole block)
BLOCK_VALUES = 1 << 16


def variant_block(numel: int) -> int:
    """How many variants of a tensor of ``numel`` elements draw their values together."""
    return max(1, min(VARIANT_BLOCK, BLOCK_VALUES // max(1, numel)))


def _variant_of(tc: TensorCase, k: int, position: int) -> TensorCase:
    """Variant ``k`` (>= 1) of the tensor at ``position``: member ``(k - 1) % count`` of block
    ``(k - 1) // count`` (:func:`variant_block`), each block with a seed of its own."""
    count = variant_block(tc.numel)
    block, index = divmod(k - 1, count)
    seed = _variant_seed(tc.values.seed, block + 1, position)
    return _reseeded(tc, seed, (count, index) if count > 1 else None)


def variant_values(tc: TensorCase, position: int, ks: Sequence[int],
                   shape: tuple[int, ...]) -> torch.Tensor:
    """The values of variants ``ks`` (each >= 1) of the tensor ``tc`` at ``position``, stacked:
    member ``i`` is :func:`generate_values` of variant ``ks[i]``'s values at ``shape`` (what
    :func:`materialize` writes: the tensor's shape with its expanded dims collapsed), taken
    from the blocks the variants draw together, one slice per block instead of one call per
    variant. Read it, never write it: it may be a slice of a cached block."""
    import torch

    dtype = torch_dtype(tc.dtype)
    count = variant_block(tc.numel)
    parts = []
    for _, run in itertools.groupby(ks, key=lambda k: (k - 1) // count):
        group = list(run)
        values = _variant_of(tc, group[0], position).values
        if values.block is None:  # drawn alone (count 1): one variant in the group
            parts.append(_generate(values, shape, dtype).unsqueeze(0))
            continue
        key = (values.seed, values.distribution, values.specials, values.domain)
        block = _block_of(key, count, tuple(shape), dtype)
        members = [(k - 1) % count for k in group]
        if members == list(range(members[0], members[-1] + 1)):
            parts.append(block[members[0]:members[-1] + 1])
        else:
            parts.append(block[torch.tensor(members)])
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _reseeded(tc: TensorCase, seed: int, block: tuple[int, int] | None) -> TensorCase:
    """``tc`` with its values' seed and block replaced: ``dataclasses.replace`` twice, without
    its per-field work (a variant makes one per tensor; ``block`` is valid by construction)."""
    values = object.__new__(Values)
    values.__dict__.update(tc.values.__dict__, seed=seed, block=block)
    out = object.__new__(TensorCase)
    out.__dict__.update(tc.__dict__, values=values)
    return out


@functools.lru_cache(maxsize=1024)
def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``, as torch gives a contiguous tensor of it."""
    strides = []
    acc = 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def rebuild_like(t: torch.Tensor, device: Any = None) -> torch.Tensor:
    """Copy ``t`` *with its layout*: same strides and offset over a copy of its whole storage.

    ``t.clone()`` of a non-dense view returns a dense tensor; this keeps gaps, offsets and
    stride-0 dims so every executor sees the same memory picture.
    """
    import torch

    nbytes = t.untyped_storage().nbytes()
    n = nbytes // t.element_size()
    flat = torch.empty(n, dtype=t.dtype, device=device if device is not None else t.device)
    src = t.as_strided((n,), (1,), 0)
    flat.copy_(src)
    return flat.as_strided(t.shape, t.stride(), t.storage_offset())
