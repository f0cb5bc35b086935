"""Calling user functions (launchers, references, derived dims) with the arguments they
name: the one place that reads a user callable's signature for that."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any


def _read_signature(fn: Callable[..., Any]) -> tuple[frozenset[str], bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return frozenset(), True
    names = set()
    var_kw = False
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.add(p.name)
    return frozenset(names), var_kw


#: signatures read once per callable (a case calls its launcher and reference each time, and
#: ``inspect.signature`` costs tens of microseconds); functions are hashed by identity
_cached_signature = functools.lru_cache(maxsize=1024)(_read_signature)


def _accepts(fn: Callable[..., Any]) -> tuple[frozenset[str], bool]:
    """Parameter names ``fn`` takes by keyword, and whether it takes ``**kwargs``."""
    try:
        return _cached_signature(fn)
    except TypeError:  # unhashable callable
        return _read_signature(fn)


def names(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn``'s signature names ``name`` explicitly (what ``named_only`` needs)."""
    return name in _accepts(fn)[0]


def call_with(fn: Callable[..., Any], values: Mapping[str, Any],
              named_only: Mapping[str, Any] | None = None) -> Any:
    """Call ``fn`` with the subset of ``values`` its signature names (all of them for ``**kw``),
    and each of ``named_only`` its signature names explicitly (never through ``**kw``)."""
    names, var_kw = _accepts(fn)
    kwargs = dict(values) if var_kw else {k: v for k, v in values.items() if k in names}
    for k, v in (named_only or {}).items():
        if k in names and k not in values:
            kwargs[k] = v
    return fn(**kwargs)
