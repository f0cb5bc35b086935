"""One report per root cause: where a finding showed, and the grouping of a target's failures.

A failure's key (:func:`~fuzzkern.judge.verdict.failure_key`: the verdict family and where it
shows, the float64 shadow's root line for rounding) is what makes two failures one. The
search shrinks and saves one case per key; every other case that showed the same key (another
dtype, another shape, a later slice, a corpus entry of the same failure) is counted here,
in :class:`Shows`, and reported with that one failure: "shows in 14 cases: float16 (9),
bfloat16 (5); dims N=4096; N=2048 ...". Accuracy findings, which are not failures, are kept
the same way: the worst case per key.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzzkern.case.model import Case

#: distinct dims (or shapes) a :class:`Shows` lists; beyond them it counts, up to
#: DIMS_COUNTED (a result crosses processes once per slice: it stays small)
DIMS_LISTED = 8
DIMS_COUNTED = 1024


def dtypes_of(case: Case) -> str:
    """The case's tensor dtypes, distinct, in input order, joined by ``+``.

    >>> from fuzzkern.case.model import TensorCase
    >>> dtypes_of(Case({"N": 4}, {"p": TensorCase.build((4,), "bfloat16"),
    ...                           "q": TensorCase.build((4,), "bfloat16")}))
    'bfloat16'
    """
    seen = dict.fromkeys(t.dtype for t in case.tensors.values())
    return "+".join(seen) or "-"


def dims_of(case: Case) -> str:
    """The case's dims (``M=2, N=256``), or its tensors' shapes where it has none."""
    if case.dims:
        return ", ".join(f"{k}={v}" for k, v in case.dims.items())
    return ", ".join(f"{n}=[{','.join(map(str, t.shape))}]" for n, t in case.tensors.items())


@dataclass
class Shows:
    """Where one finding (``key``) showed: how many cases, in which dtypes, at which dims."""

    key: str
    cases: int = 0
    dtypes: Counter[str] = field(default_factory=Counter)
    #: distinct dims texts (:func:`dims_of`), the first :data:`DIMS_LISTED` seen
    dims: list[str] = field(default_factory=list)
    #: distinct dims seen beyond those listed (counted, not listed)
    unlisted: set[str] = field(default_factory=set, repr=False)

    @property
    def more_dims(self) -> int:
        return len(self.unlisted)

    def add(self, case: Case) -> None:
        self.cases += 1
        self.dtypes[dtypes_of(case)] += 1
        self._dims(dims_of(case))

    def _dims(self, dims: str) -> None:
        if dims in self.dims or dims in self.unlisted:
            return
        if len(self.dims) < DIMS_LISTED:
            self.dims.append(dims)
        elif len(self.unlisted) < DIMS_COUNTED:
            self.unlisted.add(dims)

    def merge(self, other: Shows) -> None:
        """Add ``other``'s cases (another slice's, or a second failure of the same key)."""
        self.cases += other.cases
        self.dtypes.update(other.dtypes)
        for d in other.dims + sorted(other.unlisted):
            self._dims(d)

    def text(self) -> str:
        """``shows in 14 cases: float16 (9), bfloat16 (5); dims N=4096; N=2048``."""
        dtypes = ", ".join(f"{d} ({n})" for d, n in self.dtypes.most_common())
        dims = "; ".join(self.dims)
        more = f" and {self.more_dims}{'+' if self.more_dims >= DIMS_COUNTED else ''} more" \
            if self.more_dims else ""
        return (f"shows in {self.cases} case{'s' if self.cases != 1 else ''}: {dtypes}; "
                f"dims {dims}{more}")

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "cases": self.cases, "dtypes": dict(self.dtypes.most_common()),
                "dims": list(self.dims), "more_dims": self.more_dims}


def note(shows: dict[str, Shows], key: str, case: Case) -> Shows:
    """Count ``case`` as showing the finding ``key``."""
    found = shows.get(key)
    if found is None:
        found = shows[key] = Shows(key)
    found.add(case)
    return found


def merge_shows(into: dict[str, Shows], more: dict[str, Shows]) -> None:
    """Add a slice's :class:`Shows` to a target's."""
    for key, s in more.items():
        if key in into:
            if into[key] is not s:
                into[key].merge(s)
        else:
            into[key] = Shows(key)
            into[key].merge(s)


def group(result: Any) -> None:
    """One failure per key in ``result`` (a :class:`~fuzzkern.search.engine.TargetResult`):
    a second failure of a key already reported (a replayed corpus entry of the same failure
    in another dtype, a slice run beside another that found it too) is folded into the first
    (its case counted in the first's :class:`Shows`, its corpus entry listed in the first's
    ``also``; the entry itself stays in the corpus), and each failure points at its key's
    merged :class:`Shows`."""
    kept: dict[str, Any] = {}
    out = []
    for f in result.failures:
        key = f.key  # as reported now (a hang's re-run, a compiled-only cause, may change it)
        shows = result.shows.get(key)
        if shows is None:
            shows = note(result.shows, key, f.case)
        if f.shows is not None and f.shows is not shows and f.shows.key != key:
            shows.merge(f.shows)  # its cases, counted under the verdict it was found with
            f.shows = shows
        first = kept.get(key)
        if first is None:
            kept[key] = f
            f.shows = shows
            out.append(f)
            continue
        if first.replayed and not f.replayed:  # a failure this run found speaks for the key
            out[out.index(first)] = kept[key] = f
            f.shows = shows
            first, f = f, first
            first.also.extend(p for p in f.also if p not in first.also)
        if f.corpus_path and f.corpus_path != first.corpus_path \
                and f.corpus_path not in first.also:
            first.also.append(f.corpus_path)
        for one in (first, f):  # each case shown, also where no counted case was its own
            if dims_of(one.case) not in shows.dims or dtypes_of(one.case) not in shows.dtypes:
                shows.add(one.case)
    result.failures = out


#: a failure key that names a source line (a shadow's root line, an exception's or an access's
#: line): the same line reached from two targets is one root cause
_LINE = re.compile(r"[^\s:@]+\.py:\d+")


def shared_roots(failures: Sequence[Any]) -> dict[int, Any]:
    """The failures (by index in ``failures``) whose key names a source line that a failure
    of another target, earlier in ``failures``, has: index -> that earlier failure. A kernel
    line (or a host line) reached from two targets (a forward and a backward op, two ops
    built on one helper) is one root cause, reported once; the later targets' failures say
    so. Keys that name an output or an input are a target's own, never shared."""
    first: dict[str, Any] = {}
    out: dict[int, Any] = {}
    for i, f in enumerate(failures):
        if not _LINE.search(f.key):
            continue
        seen = first.setdefault(f.key, f)
        if seen is not f and seen.target_id != f.target_id:
            out[i] = seen
    return out


def keep_accuracy(found: list[tuple[Case, Any]], case: Case, outcome: Any, key: str,
                  most: int) -> list[tuple[Case, Any]]:
    """The accuracy findings to keep: the worst case per key (``key`` is ``outcome``'s), the
    ``most`` keys with the worst cases, highest error score first."""
    from fuzzkern.judge.verdict import failure_key

    score = float(outcome.score or 0.0)
    out = []
    for c, o in found:
        if failure_key(o) == key:
            if float(o.score or 0.0) >= score:
                return found  # a worse case of this finding is kept already
            continue
        out.append((c, o))
    out.append((case, outcome))
    out.sort(key=lambda co: -float(co[1].score or 0.0))
    return out[:most]


__all__ = ["DIMS_COUNTED", "DIMS_LISTED", "Shows", "dims_of", "dtypes_of", "group", "keep_accuracy",
           "merge_shows", "note", "shared_roots"]
