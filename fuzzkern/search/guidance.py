"""Coverage-guided generation: kernel coverage fed to Hypothesis's search as targets.

Each case run in the interpreter brings its kernel coverage
(:class:`fuzzkern.execution.interpreter.coverage.KernelCoverage`); :class:`Guide` merges it into the
target's and turns it into ``hypothesis.target()`` observations, which Hypothesis's targeted
phase climbs by mutating the best cases it saw (it interleaves that with generation):

* ``coverage``: how many coverage features (lines, branch sides, trip-count classes, mask and
  condition classes) the case reached: cases that go deeper into a kernel are kept and
  mutated;
* ``reach <site>``: for a branch side no case of this slice has taken yet whose test is one
  comparison (``if n > SPLIT:``, ``if rem == 1:``), minus how far this case came from taking
  it (the *branch distance*, as search-based testing tools use): Hypothesis climbs the inputs
  toward the comparison's other side. At most :data:`OPEN_SIDES` sides at once, the nearest.

Hypothesis's climbing is spread over every label and every choice of a case (its values' seeds
too), so between its passes :meth:`Guide.climb` climbs the nearest open side itself: every
:data:`CLIMB_EVERY` drawn cases, from the case that came closest to it, it moves one dim or
integer scalar at a time (by 1, 2, 4, ... in the direction that brings the side nearer, within
the strategy's bounds; the knob that helped last goes first; where no small step helps, a jump
by half the knob's range, a quarter, ... to a place no farther) for at most :data:`CLIMB_RUNS` runs,
and gives a side up after :data:`GIVE_UP` rounds that came no nearer (a side no input reaches,
such as a trip count a branch above the loop forbids). A climbed case that fails ends the
Hypothesis run (:class:`Climbed`) and is shrunk by :mod:`fuzzkern.search.minimize` instead of
Hypothesis.

The drawn cases stay a function of Hypothesis's choices, so replaying and shrinking are as
without guidance. ``CampaignOptions.guide=False`` (``fuzzkern run --no-guide``) turns the
observations off; coverage is still measured and reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from fuzzkern.execution.interpreter.coverage import KernelCoverage

__all__ = ["CLIMB_EVERY", "CLIMB_RUNS", "GIVE_UP", "OPEN_SIDES", "Climbed", "Guide"]

#: branch sides with a distance that one slice climbs toward at once (each is a target label)
OPEN_SIDES = 3
#: drawn cases between two rounds of :meth:`Guide.climb`, and the runs a round may make
CLIMB_EVERY = 10
CLIMB_RUNS = 8
#: rounds in a row that come no nearer to a side before the climb gives up on it
GIVE_UP = 2


class Climbed(BaseException):  # noqa: N818 - a signal to the engine, like StopIteration
    """A case :meth:`Guide.climb` ran failed: the engine ends the Hypothesis run (the drawn
    case did not fail) and shrinks that case with :mod:`fuzzkern.search.minimize`."""


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
        #: per open side: the case that came nearest, its outcome and its distance
        self.nearest: dict[str, tuple[Any, Any, float]] = {}
        #: rounds in a row that came no nearer, per side; sides given up on (unreachable
        #: ones: a loop inside a branch that forbids its trip count)
        self.stalls: dict[str, int] = {}
        self.abandoned: set[str] = set()
        #: per side, the knob that last brought it nearer (tried first)
        self.last_knob: dict[str, str] = {}
        self._drawn = 0

    def add(self, case_coverage: Mapping[str, Any] | None) -> list[str]:
        """Merge one case's coverage (its JSON); returns the features it reached first."""
        if not case_coverage:
            return []
        return self.coverage.merge(case_coverage)

    def steer(self, case_coverage: Mapping[str, Any] | None, case: Any = None,
              outcome: Any = None) -> None:
        """The ``hypothesis.target()`` observations of one drawn case (inside the test
        body); ``case`` and ``outcome`` are kept when it came nearest to an open side."""
        if not self.enabled or not case_coverage:
            return
        self._drawn += 1
        cov = KernelCoverage.from_json(case_coverage)
        self._observe(float(len(cov.features())), label="coverage")
        near = cov.distances()
        if not near:
            return
        opened = self.coverage.distances()
        self.open = [s for s in self.open if s in opened]
        for side in sorted(opened, key=opened.__getitem__):
            if len(self.open) >= OPEN_SIDES:
                break
            if side not in self.open and side not in self.abandoned:
                self.open.append(side)
        for side in self.open:  # a label per side: each climbs its own distance
            d = near.get(side)
            if d is not None and math.isfinite(d):
                self._observe(-float(d), label=f"reach {_short(side)}")
                if case is not None and d < self.nearest.get(side, (None, None, math.inf))[2]:
                    self.nearest[side] = (case, outcome, d)

    def climb(self, target: Any, run: Callable[[Any], Any]) -> tuple[Any, Any] | None:
        """One round of climbing toward the nearest open side, every :data:`CLIMB_EVERY`
        drawn cases: ``run(case)`` runs a case and returns its outcome (merged into the
        coverage by the caller). Returns (case, outcome) of a climbed case that failed."""
        if not self.enabled or self._drawn % CLIMB_EVERY or not self.open:
            return None
        opened = self.coverage.distances()
        sides = [s for s in self.open if s in opened and s in self.nearest]
        if not sides:
            return None
        side = min(sides, key=lambda s: self.nearest[s][2])
        climb = _Climb(target, side, *self.nearest[side], run, self)
        before = climb.d
        found = climb.round()
        if climb.d < before:
            self.stalls[side] = 0
        else:
            self.stalls[side] = self.stalls.get(side, 0) + 1
            if self.stalls[side] >= GIVE_UP:
                self.abandoned.add(side)
                self.open = [s for s in self.open if s != side]
        return found


class _Climb:
    """One round from one case toward one branch side (see :meth:`Guide.climb`)."""

    def __init__(self, target: Any, side: str, case: Any, outcome: Any, d: float,
                 run: Callable[[Any], Any], guide: Guide) -> None:
        from fuzzkern.search.minimize import _dim_domain, _hypothesis_kind, _Minimizer

        self.side, self.case, self.outcome, self.d = side, case, outcome, d
        self.run, self.guide = run, guide
        self.builder = _Minimizer(target, case, outcome, run, None, CLIMB_RUNS)
        named = target.inputs.named
        #: ("dim" | "scalar", name, lo, hi) of every int the round may move
        self.knobs: list[tuple[str, str, int, int]] = []
        for dim in case.dims:
            dom = _dim_domain(target.dims.get(dim))
            if dim not in self.builder.derived and dom is not None and dom.choices is None \
                    and dom.step == 1 and dom.hi is not None:
                self.knobs.append(("dim", dim, dom.lo or 0, dom.hi))
        for name, v in case.scalars.items():
            kind = _hypothesis_kind(named.get(name))
            if kind is not None and kind[0] == "range" and isinstance(v, int) \
                    and not isinstance(v, bool) and None not in kind[1]:
                self.knobs.append(("scalar", name, kind[1][0], kind[1][1]))
        self.runs = 0

    def _moved(self, knob: tuple[str, str, int, int], value: int) -> Any:
        kind, name, lo, hi = knob
        if not lo <= value <= hi:
            return None
        if kind == "dim":
            return self.builder.build(self.case, dims={**self.case.dims, name: value})
        return self.builder.build(self.case, scalars={**self.case.scalars, name: value})

    def _try(self, knob: tuple[str, str, int, int], value: int,
             lateral: bool = False) -> bool | tuple[Any, Any]:
        """Run the case moved to ``value``: True when it came nearer (or, ``lateral``, no
        farther: it is the new base), a (case, outcome) when it failed."""
        moved = self._moved(knob, value)
        if moved is None or self.runs >= CLIMB_RUNS:
            return False
        self.runs += 1
        outcome = self.run(moved)
        if getattr(outcome, "failed", False):
            return moved, outcome
        cov = KernelCoverage.from_json(getattr(outcome, "coverage", None))
        d = cov.distances().get(self.side)
        if self.side not in self.guide.coverage.distances():
            d = 0.0  # taken: the caller merged its coverage
        if d is None or d > self.d or (d == self.d and not lateral):
            return False
        self.case, self.outcome, self.d = moved, outcome, d
        self.guide.nearest[self.side] = (moved, outcome, d)
        self.guide.last_knob[self.side] = knob[1]
        return True

    def round(self) -> tuple[Any, Any] | None:
        before = self.d
        last = self.guide.last_knob.get(self.side)
        for knob in sorted(self.knobs, key=lambda k: k[1] != last):
            for sign in (1, -1):
                step = 1
                while self.runs < CLIMB_RUNS and self.d > 0:
                    now = self.case.dims[knob[1]] if knob[0] == "dim" else \
                        self.case.scalars[knob[1]]
                    got = self._try(knob, now + sign * step)
                    if isinstance(got, tuple):
                        return got
                    if not got:
                        break
                    step *= 2
                if self.d <= 0 or self.runs >= CLIMB_RUNS:
                    return None
        return self._escape(before)

    def _escape(self, before: float) -> tuple[Any, Any] | None:
        """No knob brought the side nearer by small steps: a local optimum (a remainder at a
        bound: ``n % 256 == 0`` at n = 4096, both neighbours farther). Jump by half the knob's
        range, a quarter, ... and keep the first place no farther, for the next round."""
        if self.d < before:
            return None
        last = self.guide.last_knob.get(self.side)
        for knob in sorted(self.knobs, key=lambda k: k[1] != last):
            step = (knob[3] - knob[2]) // 2
            while step >= 2 and self.runs < CLIMB_RUNS:
                now = self.case.dims[knob[1]] if knob[0] == "dim" else self.case.scalars[knob[1]]
                for sign in (-1, 1):
                    got = self._try(knob, now + sign * step, lateral=True)
                    if got:
                        return got if isinstance(got, tuple) else None
                step //= 2
        return None


def _short(side: str) -> str:
    """``kernels.py:41:8 if true`` of a feature named ``/path/kernels.py:12|41:8 if true``."""
    key, _, rest = side.partition("|")
    return f"{key.rsplit('/', 1)[-1].rsplit(':', 1)[0]}:{rest}"
