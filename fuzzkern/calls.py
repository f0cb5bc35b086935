"""Calling user functions (launchers, references, derived dims) with the arguments they
name: the one place that reads a user callable's signature for that."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any


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
