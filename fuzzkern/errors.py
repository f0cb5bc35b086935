"""The one error hierarchy of fuzzkern.

Misuse (a bad argument, a bad target spec, a malformed corpus file) is an error and raises.
What a kernel does with a case (wrong numbers, a crash, an out-of-bounds access) is a result,
an :class:`~fuzzkern.judge.outcome.Outcome`, never one of these exceptions.
"""

from __future__ import annotations

from collections.abc import Callable

import hypothesis.errors


class FuzzkernError(Exception):
    """Root of every error fuzzkern raises on purpose."""


class InvalidArgument(FuzzkernError, hypothesis.errors.InvalidArgument):
    """A strategy or value object got an argument it cannot use.

    Also a :class:`hypothesis.errors.InvalidArgument`, so Hypothesis reports it as misuse
    (at the first draw) rather than as a failing example.
    """


class TargetError(FuzzkernError):
    """A target spec could not be loaded or is not a valid :class:`fuzzkern.Target`."""


class CaseError(FuzzkernError):
    """A serialized case is malformed or of an unknown schema."""


class CorpusError(FuzzkernError):
    """A corpus file is malformed, truncated, foreign, of a newer schema, or its stored inputs
    are missing or do not match their checksums. The message names the file and the reason."""


class BudgetError(FuzzkernError):
    """A budget string such as ``90s``, ``10m`` or ``1h`` could not be parsed."""


def describe(name: str, value: object) -> str:
    """``name=value (type=T)``: the one way misuse messages name a bad value."""
    return f"{name}={value!r} (type={type(value).__name__})"


def text_of(value: object, how: Callable[[object], str] = str) -> str:
    """``how(value)`` (``str`` or ``repr``) of a value or exception the user's code made,
    never raising: an exception whose ``__str__`` raises or recurses without end is still
    a finding of the kernel, never a failure of fuzzkern's own code."""
    try:
        return how(value)
    except Exception as e:  # RecursionError too
        return (f"<{getattr(how, '__name__', 'str')}() of a {type(value).__name__} raised "
                f"{type(e).__name__}>")


class ForcedConfigError(FuzzkernError, IndexError):
    """A forced autotuner config (``interpreter_mode(configs=...)``, a case's ``configs``) named
    a config index the autotuner does not have."""


class ConfigDoesNotFit(FuzzkernError):
    """The autotuner config a case chose cannot run on this GPU: compiling it ran out of a
    resource (shared memory, registers), ptxas refused it, or a compile-time assertion of the
    config failed. Upstream's autotuner skips such a config while it benchmarks (it is never
    the one a user's launch runs), so the case is ``unsupported``, not a finding."""
