"""Replaying a corpus entry in tests: against a target the test itself names (``ref``), else the
target the test saved it from (``entry.ref``, the test's own target file). fuzzkern itself
never loads what an entry names: ``fuzzkern replay`` takes targets from declared sources."""

from __future__ import annotations

from typing import Any

from fuzzkern.corpus import store as corpus
from fuzzkern.target import loader


def replay(entry: Any, pool: Any, ref: str | None = None, **kwargs: Any) -> Any:
    loaded = loader.load(ref or entry.ref)
    lt = loaded[0] if len(loaded) == 1 else corpus.target_of(entry, loaded)
    assert lt is not None, f"{entry.target_id} is not in {ref or entry.ref}"
    return corpus.replay(entry, pool, lt, **kwargs)
