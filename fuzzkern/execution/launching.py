"""What the interpreted and the compiled mode share around a launch: the checks in force, the
launcher's result read as outputs, its exceptions read (a declared precondition, Triton's
wrapper unwrapped, the integer-overflow assertion, a short traceback)."""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping
from typing import Any

import torch

from fuzzkern.errors import text_of
from fuzzkern.target.declare import DEFAULT_CHECKS, Target


def checks_of(options: Mapping[str, Any], target: Any = None) -> dict[str, bool]:
    """:data:`DEFAULT_CHECKS` updated with ``target.checks`` and then ``options["checks"]``
    (unknown names are errors)."""
    given = dict(getattr(target, "checks", None) or {})
    given.update(options.get("checks") or {})
    unknown = sorted(set(given) - set(DEFAULT_CHECKS))
    if unknown:
        raise ValueError(f"Expected check names among {sorted(DEFAULT_CHECKS)} but got "
                         f"{unknown}.")
    return {k: bool(given.get(k, v)) for k, v in DEFAULT_CHECKS.items()}


_OVERFLOW = re.compile(r"(u?int\d+) overflow detected for operation (\w+)")


def overflow_of(text: str) -> dict[str, str] | None:
    """The dtype and operation of Triton's integer overflow assertion in ``text``, if any."""
    m = _OVERFLOW.search(text)
    return {"dtype": m.group(1), "operation": m.group(2)} if m else None


def short_traceback(e: BaseException, limit: int = 30) -> str:
    return "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-limit))


def exception_text(e: BaseException) -> str:
    """``"Type: message"``; an exception without a message (a bare ``assert``) gets the source
    line that raised it instead: ``"AssertionError: assert x.numel() < 10"``."""
    message = text_of(e)
    if not message.strip():
        frames = traceback.extract_tb(e.__traceback__)
        line = (frames[-1].line or "").strip() if frames else ""
        if line:
            return f"{type(e).__name__}: {line}"
    return f"{type(e).__name__}: {message}"


#: how deep a launcher's or reference's lists and tuples may nest before they are compared
#: as the flat sequence of their leaves (a list nested 3000 deep would overflow the stack of
#: every recursive step after: comparing, describing, copying)
OUTPUT_DEPTH = 32


#: the most leaves a launcher's or reference's nested lists and tuples are flattened to: past
#: it (or at a list that holds itself), the rest stays one leaf, the list itself: not a
#: tensor, so a usage error that names it, never a worker that loops until the budget ends
OUTPUT_LEAVES = 1 << 16


def as_outputs(result: Any) -> tuple[Any, ...] | None:
    """A launcher's or reference's result as a tuple of outputs. Lists and tuples nested
    deeper than :data:`OUTPUT_DEPTH` (or holding more than :data:`OUTPUT_LEAVES` items in
    all) become the flat tuple of their leaves, in order (both sides alike, so a wrong value
    deep inside is still found)."""
    if result is None:
        return None
    if isinstance(result, torch.Tensor):
        return (result,)
    if isinstance(result, (tuple, list)):
        return tuple(result) if _depth(result) <= OUTPUT_DEPTH else _leaves(result)
    return (result,)


def _depth(value: Any) -> int:
    """How deep ``value``'s lists and tuples nest (iterative; stops past :data:`OUTPUT_DEPTH`,
    or past :data:`OUTPUT_LEAVES` items in all: then it says one more than the depth)."""
    deepest, todo, seen = 0, [(value, 1)], 0
    while todo:
        v, d = todo.pop()
        seen += 1
        if seen > OUTPUT_LEAVES:
            return OUTPUT_DEPTH + 1
        if isinstance(v, (tuple, list)):
            deepest = max(deepest, d)
            if deepest > OUTPUT_DEPTH:
                return deepest
            todo.extend((x, d + 1) for x in v)
    return deepest


_END = object()


def _leaves(value: Any) -> tuple[Any, ...]:
    """The non-list, non-tuple items of ``value``, depth first, in order (iterative). A list
    or tuple that holds itself, and every one met past :data:`OUTPUT_LEAVES` leaves, is a
    leaf itself."""
    out: list[Any] = []
    stack, on_path = [(iter(value), id(value))], {id(value)}
    while stack:
        items, ident = stack[-1]
        v = next(items, _END)
        if v is _END:
            stack.pop()
            on_path.discard(ident)
        elif (isinstance(v, (tuple, list)) and id(v) not in on_path
              and len(out) < OUTPUT_LEAVES):
            stack.append((iter(v), id(v)))
            on_path.add(id(v))
        else:
            out.append(v)
    return tuple(out)


def storage_labels(tensors: Mapping[str, torch.Tensor]) -> dict[int, str]:
    return {t.untyped_storage().data_ptr(): name for name, t in tensors.items()}


def is_precondition(target: Target, e: BaseException) -> bool:
    return bool(target.preconditions) and isinstance(e, target.preconditions)


def unwrap(e: BaseException) -> BaseException:
    """The user's exception inside Triton's InterpreterError wrapper, when there is one."""
    seen = 0
    while seen < 5 and e.__cause__ is not None and type(e).__name__ == "InterpreterError":
        e = e.__cause__
        seen += 1
    return e
