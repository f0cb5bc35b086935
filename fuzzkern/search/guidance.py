"""Coverage-guided generation: kernel coverage fed to Hypothesis's search as targets.

Each case run in the interpreter brings its kernel coverage
(:class:`fuzzkern.execution.coverage.KernelCoverage`); :class:`Guide` merges it into the
target's and turns it into ``hypothesis.target()`` observations, which Hypothesis's targeted
phase climbs by mutating the best cases it saw (it interleaves that with generation):

* ``coverage``: how many coverage features (lines, branch sides, trip-count classes, mask and
  condition classes) the case reached: cases that go deeper into a kernel are kept and
  mutated;
* ``reach <site>``: for a branch side no case of this slice has taken yet whose test is one
  comparison (``if n > SPLIT:``, ``if rem == 1:``), minus how far this case came from taking
  it (the *branch distance*, as search-based testing tools use): Hypothesis climbs the inputs
  toward the comparison's other side. At most :data:`OPEN_SIDES` sides at once, the nearest.

The case itself stays a function of Hypothesis's choices, so replaying and shrinking are as
without guidance. ``CampaignOptions.guide=False`` (``fuzzkern run --no-guide``) turns the
observations off; coverage is still measured and reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from fuzzkern.execution.coverage import KernelCoverage

__all__ = ["OPEN_SIDES", "Guide"]

#: branch sides with a distance that one slice climbs toward at once (each is a target label)
OPEN_SIDES = 2


class Guide:
    """The coverage of one target's slice and the observations it makes for each case."""

    def __init__(self, coverage: KernelCoverage, enabled: bool = True,
                 observe: Callable[..., Any] | None = None) -> None:
        """``observe``: what each observation calls (``hypothesis.target`` by default)."""
        import hypothesis

        self.coverage = coverage
        self.enabled = enabled
        self._observe: Callable[..., Any] = hypothesis.target if observe is None else observe
        #: the sides climbed toward, chosen when first seen open (stable labels)
        self.open: list[str] = []

    def add(self, case_coverage: Mapping[str, Any] | None) -> list[str]:
        """Merge one case's coverage (its JSON); returns the features it reached first."""
        if not case_coverage:
            return []
        return self.coverage.merge(case_coverage)

    def steer(self, case_coverage: Mapping[str, Any] | None) -> None:
        """The ``hypothesis.target()`` observations of one case (inside the test body)."""
        if not self.enabled or not case_coverage:
            return
        case = KernelCoverage.from_json(case_coverage)
        self._observe(float(len(case.features())), label="coverage")
        near = case.distances()
        if not near:
            return
        opened = self.coverage.distances()
        self.open = [s for s in self.open if s in opened]
        for side in sorted(opened, key=opened.__getitem__):
            if len(self.open) >= OPEN_SIDES:
                break
            if side not in self.open:
                self.open.append(side)
        measured = [near[s] for s in self.open if s in near and math.isfinite(near[s])]
        if measured:  # one label: Hypothesis spends its climbing budget per label
            self._observe(-float(min(measured)), label="reach")


def _short(side: str) -> str:
    """``kernels.py:41:8 if true`` of a feature named ``/path/kernels.py:12|41:8 if true``."""
    key, _, rest = side.partition("|")
    return f"{key.rsplit('/', 1)[-1].rsplit(':', 1)[0]}:{rest}"
