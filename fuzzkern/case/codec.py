"""fuzzkern's one JSON codec for values JSON cannot hold: every JSON fuzzkern writes (cases,
corpus entries, reports) is strict JSON, with no ``NaN`` or ``Infinity`` tokens.

- A non-finite float is ``{"$float": "nan"}``, ``{"$float": "inf"}`` or ``{"$float": "-inf"}``
  (``repr`` of the float; ``float()`` of the text reads it back and runs no code). A NaN reads
  back as the one object :data:`math.nan`, as strategies draw it: containers compare items by
  identity first, so a decoded value equals the value that was encoded.
- :func:`encode_scalar`/:func:`decode_scalar`: a case's scalar inputs, where a tuple stays a
  tuple (``{"$tuple": [...]}``) and anything but None, bool, int, float, str, list and tuple is
  an error (a case must replay exactly).
- :func:`encode_document`/:func:`decode_document`: whole documents (corpus entries, reports):
  mappings and lists recursed, tuples written as lists, any other value as its ``str``.

>>> encode_scalar((1.5, float("-inf")))
{'$tuple': [1.5, {'$float': '-inf'}]}
>>> decode_scalar(encode_scalar((1.5, float("-inf"))))
(1.5, -inf)
>>> encode_document({"max_ulp": float("inf"), "shape": (2, 3)})
{'max_ulp': {'$float': 'inf'}, 'shape': [2, 3]}
>>> decode_document({"x": {"$float": "nan"}})["x"] is math.nan
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from fuzzkern.errors import CaseError


def encode_float(v: float) -> float | dict[str, str]:
    """``v`` itself when finite, else ``{"$float": repr(v)}``."""
    return v if math.isfinite(v) else {"$float": repr(v)}


def decode_float(text: str) -> float:
    """The float ``{"$float": text}`` stands for (a NaN is :data:`math.nan`)."""
    f = float(text)  # "nan", "inf" parse too; float() runs no code
    return math.nan if math.isnan(f) else f


def encode_scalar(v: Any) -> Any:
    """A case's scalar input as JSON (tuples kept as ``{"$tuple": [...]}``)."""
    if isinstance(v, float):
        return encode_float(v)
    if isinstance(v, tuple):
        return {"$tuple": [encode_scalar(x) for x in v]}
    if isinstance(v, list):
        return [encode_scalar(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    raise CaseError(
        f"Expected a JSON-representable scalar (None, bool, int, float, str or a tuple of them) "
        f"but got value={v!r} (type={type(v).__name__}). Draw plain values from the strategy."
    )


def decode_scalar(v: Any) -> Any:
    """The scalar :func:`encode_scalar` wrote."""
    if isinstance(v, dict):
        if "$float" in v:
            return decode_float(v["$float"])
        if "$tuple" in v:
            return tuple(decode_scalar(x) for x in v["$tuple"])
        raise CaseError(f"unknown scalar encoding {v!r}")
    if isinstance(v, list):
        return [decode_scalar(x) for x in v]
    return v


def encode_document(v: Any) -> Any:
    """A document (mappings, sequences, plain values) as strict JSON: non-finite floats
    encoded, keys as strings, tuples as lists, any other value as its ``str``."""
    if isinstance(v, float):
        return encode_float(v)
    if isinstance(v, Mapping):
        return {str(k): encode_document(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode_document(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    return str(v)


def decode_document(v: Any) -> Any:
    """The document :func:`encode_document` wrote (an object whose only key is ``$float`` is
    a float)."""
    if isinstance(v, dict):
        if set(v) == {"$float"}:
            return decode_float(v["$float"])
        return {k: decode_document(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode_document(x) for x in v]
    return v
