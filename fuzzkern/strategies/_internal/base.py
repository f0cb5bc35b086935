"""The base of fuzzkern's strategies: arguments are checked lazily, at the first draw.

Like Hypothesis's own ``defines_strategy``: building a strategy never raises, so a target file
always imports; misuse surfaces as :class:`~fuzzkern.errors.InvalidArgument` when the strategy
is first validated or drawn from.

>>> from fuzzkern import strategies as fks
>>> s = fks.sizes(min_value=5, max_value=2)   # no error yet
>>> s.validate()
Traceback (most recent call last):
    ...
fuzzkern.errors.InvalidArgument: Expected an int >= 5 but got max_value=2 (type=int). ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from hypothesis.strategies import SearchStrategy

if TYPE_CHECKING:  # pragma: no cover
    from hypothesis.internal.conjecture.data import ConjectureData

Ex = TypeVar("Ex")


class FuzzkernStrategy(SearchStrategy[Ex]):
    """A strategy whose arguments are checked once, before its first draw.

    Subclasses implement ``_check`` (raise ``InvalidArgument``, normalise arguments) and
    ``_draw``. Users never subclass this; it is public only as the type strategies return.
    """

    def __init__(self, shown: str) -> None:
        super().__init__()
        self._shown = shown
        self._checked = False

    def __repr__(self) -> str:
        return self._shown

    def check(self) -> None:
        """Check the arguments (once); raise ``InvalidArgument`` on misuse."""
        if not self._checked:
            self._check()
            self._checked = True

    def _check(self) -> None:
        pass

    def _draw(self, data: ConjectureData) -> Ex:
        raise NotImplementedError(f"{type(self).__name__}._draw")

    def do_validate(self) -> None:
        self.check()

    def do_draw(self, data: ConjectureData) -> Ex:
        self.check()
        return self._draw(data)
