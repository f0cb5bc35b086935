"""The ``FUZZKERN_*`` environment variables, checked up front by every front end.

A variable is read where it is used (deep in the execution or corpus stage, sometimes in a
worker); a bad value there would be a traceback in the middle of a run. :func:`check` reads
each once, before anything runs, so a bad value is one usage error line instead (exit 2 from
``fuzzkern run``, ``replay`` and ``repro``; a usage error from the pytest plugin).

>>> check({"FUZZKERN_AHEAD": "8"})
>>> check({"FUZZKERN_AHEAD": "many"})
Traceback (most recent call last):
  ...
fuzzkern.errors.FuzzkernError: Expected FUZZKERN_AHEAD to be a number of compile processes ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fuzzkern.errors import FuzzkernError

#: the most compile processes ``FUZZKERN_AHEAD`` may ask for
MAX_AHEAD = 256

#: how long a variable's value shown in an error may be (the rest is cut)
_SHOWN = 80


def check(env: Mapping[str, str] | None = None) -> None:
    """Raise :class:`FuzzkernError` (one line) for the first ``FUZZKERN_*`` variable of
    ``env`` (default: this process's environment) that holds a value fuzzkern cannot use."""
    from fuzzkern.corpus import limits
    from fuzzkern.execution import ahead, devices
    from fuzzkern.search import profiles

    env = os.environ if env is None else env
    for name, value in env.items():
        if name.startswith("FUZZKERN_") and ("\n" in value or "\r" in value or "\0" in value):
            raise FuzzkernError(f"Expected {name} to be one line but got {_cut(value)}.")
    try:
        limits.parse_limits(env.get(limits.LIMITS_VARIABLE, ""))
        if env.get(ahead.AHEAD_ENV) and ahead.size_of(env[ahead.AHEAD_ENV]) > MAX_AHEAD:
            raise FuzzkernError(f"Expected {ahead.AHEAD_ENV} to be at most {MAX_AHEAD} compile "
                                f"processes but got {_cut(env[ahead.AHEAD_ENV])}.")
        if (env.get("FUZZKERN_GPUS") or "").strip():
            devices.visible_devices({"FUZZKERN_GPUS": env["FUZZKERN_GPUS"]}, list)
        if env.get("FUZZKERN_PROFILE"):
            profiles.select(None, None, {"FUZZKERN_PROFILE": env["FUZZKERN_PROFILE"]})
    except (ValueError, OverflowError) as e:  # ahead.size_of's
        raise FuzzkernError(_cut(str(e), 400)) from None
    except FuzzkernError as e:
        raise FuzzkernError(_cut(str(e), 400)) from None


def _cut(text: str, most: int = _SHOWN) -> str:
    shown = repr(text) if most == _SHOWN else text
    shown = " ".join(shown.split())
    return shown if len(shown) <= most else f"{shown[:most]}... ({len(text)} characters)"
