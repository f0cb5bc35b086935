"""Argument checks shared by the strategies, all speaking the one misuse grammar:
``Expected <what> but got name=value (type=T). <how to fix>``.

>>> check_int("max_step", 0, min_value=1)
Traceback (most recent call last):
    ...
fuzzkern.errors.InvalidArgument: Expected an int >= 1 but got max_step=0 (type=int).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from hypothesis.strategies import SearchStrategy

from fuzzkern.errors import InvalidArgument, describe


def fail(what: str, name: str, value: object, fix: str = "") -> NoReturn:
    """Raise the one kind of misuse error: what was expected, what was got, how to fix it."""
    message = f"Expected {what} but got {describe(name, value)}."
    if fix:
        message += f" {fix}"
    raise InvalidArgument(message)


def is_int(value: object) -> bool:
    """A real int: ``True`` is a bool first, and ``3.0`` is not a size."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(
    name: str,
    value: object,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
    fix: str = "",
) -> int:
    if not is_int(value):
        fail("an int", name, value, fix)
    assert isinstance(value, int)
    if min_value is not None and value < min_value:
        what = f"an int >= {min_value}"
        if max_value is not None:
            what = f"an int in [{min_value}, {max_value}]"
        fail(what, name, value, fix)
    if max_value is not None and value > max_value:
        what = f"an int <= {max_value}"
        if min_value is not None:
            what = f"an int in [{min_value}, {max_value}]"
        fail(what, name, value, fix)
    return value


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        fail("True or False", name, value)
    return value


def check_strategy(name: str, value: object, fix: str = "") -> SearchStrategy[Any]:
    if not isinstance(value, SearchStrategy):
        fail("a Hypothesis strategy", name, value, fix)
    return value


def check_names(
    name: str, value: object, allowed: Sequence[str], *, what: str, example: str
) -> tuple[str, ...]:
    """A non-empty list of names drawn from ``allowed``, returned deduplicated in the order of
    ``allowed`` (that order is the shrink order: the first name is the most boring)."""
    if isinstance(value, str):
        fail(
            f"a list of {what} names",
            name,
            value,
            f"Pass a list even for one name, e.g. {name}=[{value!r}].",
        )
    if not isinstance(value, Sequence) or isinstance(value, (bytes, bytearray)):
        fail(f"a list of {what} names", name, value, f"Pass e.g. {name}={example}.")
    if not value:
        fail(
            f"at least one {what} name",
            name,
            value,
            f"Pass e.g. {name}={example}, or leave it None for the default.",
        )
    for item in value:
        if item not in allowed:
            fail(
                f"one of {', '.join(allowed)}",
                f"{name}[{list(value).index(item)}]",
                item,
                f"Pass e.g. {name}={example}.",
            )
    chosen = set(value)
    return tuple(a for a in allowed if a in chosen)


def call_repr(
    fn: str, args: Sequence[object], kwargs: dict[str, Any], defaults: dict[str, Any]
) -> str:
    """``fn(args, changed=kwargs)``: how a strategy shows itself, naming only non-defaults."""

    def changed(key: str, v: object) -> bool:
        if key not in defaults:
            return True
        d = defaults[key]
        return not (v is d or (type(v) is type(d) and v == d))

    parts = [repr(a) for a in args]
    parts += [f"{k}={v!r}" for k, v in kwargs.items() if changed(k, v)]
    return f"{fn}({', '.join(parts)})"
