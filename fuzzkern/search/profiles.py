"""Profiles: how hard, how repeatably and with which stores a pytest session fuzzes.

=========  ==============  ============  ==================  ===========  ====================
profile    budget per      max examples  randomness          database     corpus
           fuzz item       per item
=========  ==============  ============  ==================  ===========  ====================
dev        10 s            100           random              read-write   writes new failures
ci         60 s (a cap)    100           derandomized        off [#]_     read only
nightly    10 min          unbounded     random              read-write   writes new failures
=========  ==============  ============  ==================  ===========  ====================

.. [#] Hypothesis never uses the database in a seeded run. A ``fuzzkern-ci`` registered
   without ``derandomize`` reads an explicit ``--fuzzkern-db`` and never writes it.

``ci`` mirrors Hypothesis's own CI profile: the same cases every run, so a red build is the
code's fault and not the dice's; the corpus, reviewed in git, is what carries regressions into
CI. The profile is chosen by ``--fuzzkern-profile``, then ``$FUZZKERN_PROFILE``, then the
``fuzzkern_profile`` ini key, then ``ci`` when a CI environment is detected (``$CI`` or
``$TF_BUILD`` set, as Hypothesis detects it), else ``dev``.

Each profile is also a Hypothesis settings profile, registered as ``fuzzkern-dev``,
``fuzzkern-ci`` and ``fuzzkern-nightly`` the first time a fuzzkern item runs — unless a profile
of that name is registered already. fuzzkern takes ``max_examples`` and ``derandomize`` from
it, so a project changes them with one line in its ``conftest.py``::

    from hypothesis import settings
    settings.register_profile("fuzzkern-ci", derandomize=True, max_examples=500, deadline=None)

>>> PROFILES["ci"].seed
0
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fuzzkern.errors import FuzzkernError


@dataclass(frozen=True)
class Profile:
    name: str
    #: wall-clock seconds per fuzz item (shrinking may take a grace period past it)
    budget: float
    #: cases per fuzz item; None: until the budget runs out
    max_examples: int | None
    #: a fixed Hypothesis seed (derandomized runs), or None for a fresh random seed
    seed: int | None
    #: "read-write": use the example database; "off": none, and an explicit one is only read
    database: str
    #: whether failures found are written to the corpus
    write_corpus: bool
    description: str

    def hypothesis_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"deadline": None,
                              "max_examples": self.max_examples or UNBOUNDED_EXAMPLES}
        if self.seed is not None:
            kw["derandomize"] = True  # implies database=None in Hypothesis's own terms
        return kw


#: what "no limit" is in Hypothesis's max_examples, which must be a number
UNBOUNDED_EXAMPLES = 10**9

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("dev", budget=10.0, max_examples=100, seed=None, database="read-write",
                write_corpus=True, description="quick, random, remembers what it finds"),
        Profile("ci", budget=60.0, max_examples=100, seed=0, database="off",
                write_corpus=False, description="repeatable, writes nothing"),
        Profile("nightly", budget=600.0, max_examples=None, seed=None, database="read-write",
                write_corpus=True, description="long, random, writes the corpus"),
    )
}


def in_ci(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    return "CI" in env or "TF_BUILD" in env


def select(option: str | None, ini: str | None = None,
           env: Mapping[str, str] | None = None) -> tuple[Profile, str]:
    """The profile in force and where the choice came from (for the report header)."""
    env = os.environ if env is None else env
    for value, source in ((option, "--fuzzkern-profile"),
                          (env.get("FUZZKERN_PROFILE"), "$FUZZKERN_PROFILE"),
                          (ini, "fuzzkern_profile ini key")):
        if value:
            name = value.strip()
            if name not in PROFILES:
                raise FuzzkernError(
                    f"Expected a profile among {', '.join(PROFILES)} but got profile={name!r} "
                    f"(from {source})."
                )
            return PROFILES[name], source
    if in_ci(env):
        return PROFILES["ci"], "CI detected"
    return PROFILES["dev"], "default"


def hypothesis_settings(profile: Profile) -> Any:
    """The Hypothesis settings profile ``fuzzkern-<name>``, registering fuzzkern's own unless
    the project registered one under that name first."""
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    key = f"fuzzkern-{profile.name}"
    try:
        return settings.get_profile(key)
    except InvalidArgument:
        # Parent on Hypothesis's built-in defaults, not the active profile: under $CI
        # Hypothesis loads its own derandomized "ci" profile, which would leak into every one.
        settings.register_profile(key, parent=settings.get_profile("default"),
                                  **profile.hypothesis_kwargs())
        return settings.get_profile(key)


def effective(profile: Profile) -> tuple[int | None, int | None]:
    """``(max_examples, seed)`` after the Hypothesis profile of the same name has its say."""
    return _limits(hypothesis_settings(profile))


def limits_of(name: str) -> tuple[int | None, int | None]:
    """``(max_examples, seed)`` of the registered Hypothesis profile ``name`` (what
    ``pytest --hypothesis-profile NAME`` loads)."""
    from hypothesis import settings

    return _limits(settings.get_profile(name))


def _limits(hs: Any) -> tuple[int | None, int | None]:
    max_examples = hs.max_examples
    seed = 0 if hs.derandomize else None
    return (None if max_examples >= UNBOUNDED_EXAMPLES else max_examples), seed
