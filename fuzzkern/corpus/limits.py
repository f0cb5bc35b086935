"""What fuzzkern accepts from a corpus it did not write: an entry may come from a stranger's
pull request, so its files are read as untrusted data (docs/corpus.md, "Untrusted corpora").

- **Files** (:func:`read_regular`, :func:`open_regular`): opened only as regular files, never
  through a symbolic link (``O_NOFOLLOW``), never a device or a FIFO (``O_NONBLOCK``, then
  ``fstat``), and no bigger than a cap; an entry's folder must lie inside its corpus folder
  (:func:`check_folder`: no target folder that is a link to elsewhere).
- **Numbers** (:func:`check_document`, :func:`check_case`): every JSON value is checked before
  use: nesting depth, finite floats, integers within 64 bits, and a case's tensors (whole
  numbers, non-negative, a view that fits its storage, and at most :class:`Limits` elements
  and bytes, counting what each view takes once copied, not only what it stores).

The caps are :class:`Limits`; ``FUZZKERN_CORPUS_LIMITS`` sets any of them, e.g.
``FUZZKERN_CORPUS_LIMITS="storage_bytes=4GiB,case_bytes=8GiB"``:

>>> parse_limits("tensor_elements=1000, entry_bytes=1MiB").entry_bytes
1048576
>>> parse_limits("speed=3")
Traceback (most recent call last):
  ...
fuzzkern.errors.FuzzkernError: FUZZKERN_CORPUS_LIMITS: unknown limit 'speed' (expected ...)
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from fuzzkern.errors import CorpusError, FuzzkernError

#: the environment variable that sets :class:`Limits` (``name=value,...``)
LIMITS_VARIABLE = "FUZZKERN_CORPUS_LIMITS"

KiB, MiB, GiB = 2**10, 2**20, 2**30

#: bytes a ``.safetensors`` header may take (8 bytes of length, then JSON); the data after it
#: is capped by what the entry declares
HEADER_BYTES = 1 * MiB

#: the largest magnitude of an integer anywhere in an entry (fuzzkern writes 64-bit values)
INT_BOUND = 2**64


@dataclass(frozen=True)
class Limits:
    """Caps on what one corpus entry may make fuzzkern read or allocate. The defaults are
    near the largest cases fuzzkern draws itself (a shrunk failure is far smaller)."""

    #: bytes of an entry's JSON file
    entry_bytes: int = 16 * MiB
    #: elements of one tensor input (its view: the product of its shape)
    tensor_elements: int = 2**24
    #: bytes of one tensor input's storage, and of its view (elements x element size: what
    #: a copy of it takes, a stride-0 or expanded view too)
    storage_bytes: int = 1 * GiB
    #: bytes of all of a case's tensor inputs together (each its storage or its view,
    #: whichever is larger)
    case_bytes: int = 2 * GiB
    #: nesting of JSON objects and lists
    depth: int = 32


_SIZE = re.compile(r"\s*(\d+)\s*(|KiB|MiB|GiB)\s*")
_UNITS = {"": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB}


def parse_limits(text: str) -> Limits:
    """:class:`Limits` from ``name=value`` pairs separated by commas (``*_bytes`` sizes in
    bytes, or with ``KiB``, ``MiB``, ``GiB``; the others plain counts); names left out keep
    their defaults."""
    names = [f.name for f in dataclasses.fields(Limits)]
    values: dict[str, int] = {}
    for part in (p for p in text.split(",") if p.strip()):
        name, eq, value = part.partition("=")
        name = name.strip()
        if name not in names:
            raise FuzzkernError(f"{LIMITS_VARIABLE}: unknown limit {name!r} (expected "
                                f"{', '.join(names)})")
        m = _SIZE.fullmatch(value) if eq else None
        in_bytes = name.endswith("_bytes")
        if m is None or int(m[1]) < 1 or (m[2] and not in_bytes):
            what = ("of bytes: optionally with KiB, MiB or GiB" if in_bytes else
                    "of levels" if name == "depth" else "of elements")
            raise FuzzkernError(f"{LIMITS_VARIABLE}: {name} must be a positive whole number "
                                f"({what}), got {value!r}")
        values[name] = int(m[1]) * _UNITS[m[2]]
    return Limits(**values)


def current() -> Limits:
    """The limits in force: the defaults, with ``FUZZKERN_CORPUS_LIMITS`` applied."""
    return parse_limits(os.environ.get(LIMITS_VARIABLE, ""))


def _over(name: str, limits: Limits) -> str:
    return f"the limit of {getattr(limits, name)} ({LIMITS_VARIABLE} {name}=...)"


# --------------------------------------------------------------------------------------------
# Files


def check_folder(path: str) -> None:
    """Raise :class:`CorpusError` unless the folder of the corpus file ``path`` lies inside
    its own parent once links are resolved (a target folder that is a link out is refused)."""
    folder = os.path.dirname(os.path.abspath(path))
    real, parent = os.path.realpath(folder), os.path.realpath(os.path.dirname(folder))
    if real != parent and not real.startswith(parent.rstrip(os.sep) + os.sep):
        raise CorpusError(f"{path}: refused: its folder is a link to {real}, outside the corpus "
                          "folder (corpus folders and files must not be links out)")


@contextmanager
def open_regular(path: str, cap: int, what: str, cap_name: str) -> Iterator[tuple[BinaryIO, int]]:
    """``(file, size)`` of corpus file ``path``, opened only if it is a regular file (not a
    link, device or FIFO) of at most ``cap`` bytes; else :class:`CorpusError` naming ``what``
    the file is and why. ``cap_name`` names the limit that set ``cap``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as e:
        raise CorpusError(f"{path}: {what} {'are' if what.endswith('s') else 'is'} missing"
                          ) from e
    except OSError as e:
        if os.path.islink(path):
            raise CorpusError(f"{path}: refused: a symbolic link (corpus files must be "
                              "regular files)") from e
        raise CorpusError(f"{path}: cannot read {what}: {e.strerror or e}") from e
    fh = os.fdopen(fd, "rb")
    with fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorpusError(f"{path}: refused: not a regular file (a device, FIFO or "
                              "socket)")
        if st.st_size > cap:
            raise CorpusError(f"{path}: refused: {st.st_size} bytes, past {cap_name} ({cap} "
                              "bytes)")
        yield fh, st.st_size


def read_regular(path: str, cap: int, what: str, cap_name: str) -> bytes:
    """The bytes of corpus file ``path`` (see :func:`open_regular`)."""
    with open_regular(path, cap, what, cap_name) as (fh, size):
        data = fh.read(size + 1)
    if len(data) > size:  # it grew while being read
        raise CorpusError(f"{path}: refused: it grew while it was read")
    return data


# --------------------------------------------------------------------------------------------
# Numbers


def check_document(doc: Any, limits: Limits, where: str) -> None:
    """Raise :class:`CorpusError` unless every value of the parsed JSON ``doc`` is nested at
    most ``limits.depth`` deep, every float is finite (``1e400`` reads as infinity) and every
    integer is within :data:`INT_BOUND`. Iterative: no recursion for a hostile depth."""
    todo: list[tuple[Any, int]] = [(doc, 1)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, (dict, list)):
            if depth > limits.depth:
                raise CorpusError(f"{where}: refused: JSON nested deeper than "
                                  f"{_over('depth', limits)}")
            items = v.values() if isinstance(v, dict) else v
            todo.extend((x, depth + 1) for x in items)
        elif isinstance(v, float) and not math.isfinite(v):
            raise CorpusError(f"{where}: refused: a number that is not finite ({v!r}; "
                              "non-finite floats are written {\"$float\": ...})")
        elif isinstance(v, int) and not isinstance(v, bool) and not -INT_BOUND <= v <= INT_BOUND:
            raise CorpusError(f"{where}: refused: the integer {_digits(v)} is beyond 64 bits")


def _digits(v: int) -> str:
    text = str(v)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def _whole(v: Any, what: str, lo: int = 0, hi: int = 2**63 - 1) -> int:
    """``v`` when it is a JSON integer in ``[lo, hi]``, else :class:`CorpusError`'s text."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(f"{what} must be a whole number, got {_shown(v)}")
    if not lo <= v <= hi:
        raise _Bad(f"{what} must be in [{lo}, {hi}], got {_digits(v)}")
    return v


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class _Bad(Exception):
    """One problem with a case (the message), turned into a :class:`CorpusError`."""


def _tensor(name: str, t: Any, limits: Limits) -> int:
    """Check one tensor input's view; returns its storage's bytes."""
    from fuzzkern.case.model import ALL_DTYPES, torch_dtype

    if not isinstance(t, Mapping):
        raise _Bad(f"input {name!r}: a tensor must be a JSON object")
    dtype = t.get("dtype")
    if dtype not in ALL_DTYPES:
        raise _Bad(f"input {name!r}: unknown dtype {_shown(dtype)}")
    shape, strides = t.get("shape"), t.get("strides")
    if not isinstance(shape, list) or not isinstance(strides, list) or len(shape) != len(strides):
        raise _Bad(f"input {name!r}: shape and strides must be lists of one length")
    if len(shape) > MAX_DIMS:
        raise _Bad(f"input {name!r}: {len(shape)} dims, past the {MAX_DIMS} a tensor may have")
    dims = [_whole(n, f"input {name!r}: shape", 0) for n in shape]
    steps = [_whole(s, f"input {name!r}: strides", 0) for s in strides]
    offset = _whole(t.get("storage_offset"), f"input {name!r}: storage_offset", 0)
    size = _whole(t.get("storage_size"), f"input {name!r}: storage_size", 0)
    elements = math.prod(dims)
    # a zero dim empties the view, but not what is computed from its other dims (a shape
    # [2**62, 0] is refused like [2**62])
    spanned = math.prod(n for n in dims if n)
    if max(elements, spanned) > limits.tensor_elements:
        raise _Bad(f"input {name!r}: shape {dims} has {max(elements, spanned)} elements"
                   f"{'' if elements else ' besides its zero dims'}, past "
                   f"{_over('tensor_elements', limits)}")
    itemsize = torch_dtype(dtype).itemsize
    nbytes = size * itemsize
    if nbytes > limits.storage_bytes:
        raise _Bad(f"input {name!r}: a storage of {size} {dtype} elements ({nbytes} bytes) is "
                   f"past {_over('storage_bytes', limits)}")
    # memory follows what a case views, not what it stores: every copy of the input (the
    # launcher's output, the float64 reference, a replay's red zones) is the view's size, so a
    # stride-0 view of 2**28 elements over one stored element counts as 2**28 elements
    viewed = view_bytes(dims, itemsize)
    if viewed > limits.storage_bytes:
        raise _Bad(f"input {name!r}: a view of {elements} {dtype} elements ({viewed} bytes, "
                   f"over a storage of {size}) is past {_over('storage_bytes', limits)}")
    last = offset + sum((n - 1) * s for n, s in zip(dims, steps, strict=True))
    if elements and last >= size:
        raise _Bad(f"input {name!r}: the view (shape {dims}, strides {steps}, offset {offset}) "
                   f"reaches element {last} of a storage of {size}")
    _recipe(name, t, dims, steps, offset, size, limits)
    return max(nbytes, viewed)


#: the most dims a tensor input may have (numpy's and torch's conversions refuse more)
MAX_DIMS = 64


def _recipe(name: str, t: Mapping[str, Any], dims: list[int], steps: list[int], offset: int,
            size: int, limits: Limits) -> None:
    """Check what a case rebuilds the tensor from when it changes (a shrink of an unshrunk
    entry draws new values): its layout must give exactly its strides, offset and storage
    size (a layout of steps ``[2**40]`` over a 9-element storage would allocate terabytes
    once a dim shrinks), and its value recipe draws at most :data:`VARIANT_BLOCK` blocks of
    the view's elements, within ``tensor_elements``."""
    from fuzzkern.case.model import VARIANT_BLOCK, Layout, view_of
    from fuzzkern.errors import CaseError

    layout = t.get("layout")
    if layout is not None:
        if not isinstance(layout, Mapping):
            raise _Bad(f"input {name!r}: a layout must be a JSON object")
        lists = {k: layout.get(k, [] if k == "expanded" else None)
                 for k in ("permutation", "steps", "starts", "expanded")}
        if any(not isinstance(v, list) for v in lists.values()):
            raise _Bad(f"input {name!r}: a layout's permutation, steps, starts and expanded "
                       "must be lists")
        for k, v in lists.items():
            for n in v:
                _whole(n, f"input {name!r}: layout {k}", 0)
        _whole(layout.get("offset", 0), f"input {name!r}: layout offset", 0)
        try:
            made = view_of(tuple(dims), Layout.from_json(layout))
        except (CaseError, IndexError, KeyError, TypeError, ValueError):
            made = None
        if made != (tuple(steps), offset, size):
            raise _Bad(f"input {name!r}: its layout does not give its strides {steps}, offset "
                       f"{offset} and storage size {size}")
    values = t.get("values", {})
    if not isinstance(values, Mapping):
        raise _Bad(f"input {name!r}: values must be a JSON object")
    _whole(values.get("seed", 0), f"input {name!r}: values seed", -2**63, 2**64 - 1)
    block = values.get("block")
    if block is not None:
        if not isinstance(block, list) or len(block) != 2:
            raise _Bad(f"input {name!r}: a values block must be [count, index]")
        count = _whole(block[0], f"input {name!r}: values block count", 1, VARIANT_BLOCK)
        _whole(block[1], f"input {name!r}: values block index", 0, count - 1)
        if count * math.prod(dims) > limits.tensor_elements:
            raise _Bad(f"input {name!r}: a values block of {count} x {math.prod(dims)} "
                       f"elements is past {_over('tensor_elements', limits)}")


def view_bytes(shape: list[int], itemsize: int) -> int:
    """The bytes a view of ``shape`` takes once copied (an expanded or stride-0 view too):
    its elements times the element size."""
    return math.prod(shape) * itemsize


def check_case(case: Any, limits: Limits, where: str) -> None:
    """Raise :class:`CorpusError` unless the raw JSON ``case`` of an entry holds only numbers
    fuzzkern can use: whole, non-negative dims, configs and tensor fields; views that fit
    their storages; tensors and storages within ``limits``. Run before the case is built."""
    try:
        if not isinstance(case, Mapping) or not isinstance(case.get("inputs"), Mapping):
            raise _Bad("a case must be a JSON object with inputs")
        for key, hi in (("dims", 2**63 - 1), ("configs", 2**31 - 1)):
            part = case.get(key, {})
            if not isinstance(part, Mapping):
                raise _Bad(f"{key} must be a JSON object")
            for k, n in part.items():
                _whole(n, f"{key}[{k!r}]", 0, hi)
        total = 0
        for name, v in case["inputs"].items():
            if isinstance(v, Mapping) and "tensor" in v:
                total += _tensor(name, v["tensor"], limits)
        if total > limits.case_bytes:
            raise _Bad(f"its views and storages take {total} bytes, past "
                       f"{_over('case_bytes', limits)}")
    except _Bad as e:
        raise CorpusError(f"{where}: refused: {e}") from None
