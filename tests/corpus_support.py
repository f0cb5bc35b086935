"""Replaying a corpus entry in tests: against a target the test itself names (``ref``), else the
target the test saved it from (``entry.ref``, the test's own target file). fuzzkern itself
never loads what an entry names: ``fuzzkern replay`` takes targets from declared sources."""

from __future__ import annotations

from typing import Any

from fuzzkern.corpus import repro
from fuzzkern.corpus import store as corpus
from fuzzkern.target import loader


def target(entry: Any, ref: str | None = None) -> Any:
    """The loaded target of ``entry`` in ``ref`` (default: the source it was saved from)."""
    loaded = loader.load(ref or entry.ref)
    lt = loaded[0] if len(loaded) == 1 else corpus.target_of(entry, loaded)
    assert lt is not None, f"{entry.target_id} is not in {ref or entry.ref}"
    return lt


def replay(entry: Any, pool: Any, ref: str | None = None, **kwargs: Any) -> Any:
    return corpus.replay(entry, pool, target(entry, ref), **kwargs)


def write_repro(entry: Any, path: str, ref: str | None = None) -> str:
    return repro.write(entry, target(entry, ref), path)


def script(entry: Any, path: str | None = None, ref: str | None = None) -> str:
    return repro.script(entry, target(entry, ref), path)
