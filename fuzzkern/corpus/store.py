"""The regression corpus: every failure fuzzkern finds, saved as reviewed data and replayed on
every later run (docs/architecture.md, "Two stores").

One entry is two files in the target's folder::

    corpus/<target>/<id>.json          schema_version, target, case, verdict, diagnosis, modes,
                                       explanations, environment, input checksums
    corpus/<target>/<id>.safetensors   the exact input bytes: per tensor input, its whole storage
                                       as a 1-D tensor (the JSON holds shape, strides, offset)

``<id>`` hashes the target id, the verdict and the minimal case, so the same failure found twice
is one entry. Inputs are stored as bytes, never regenerated, so a replay does not depend on the
RNG of the torch version at hand; nothing is pickled. Both files are written atomically (a
temporary file in the same folder, then ``os.replace``), the ``.safetensors`` first and the JSON
last: a visible JSON always has its inputs beside it, and a writer killed mid-write leaves only
a hidden ``.*.tmp`` file that readers ignore.

Example::

    >>> from fuzzkern.case.model import Case, TensorCase
    >>> case = Case({"N": 3}, {"x": TensorCase.build((3,), "float32")})
    >>> entry_id("ops.add", "kernel-bug", case)
    'f0fd0019549de5c9'
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import re
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fuzzkern.case.codec import decode_document, encode_document
from fuzzkern.case.model import Case
from fuzzkern.case.storage import storages_of
from fuzzkern.corpus import limits
from fuzzkern.errors import CaseError, CorpusError
from fuzzkern.judge.outcome import Outcome

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.target.declare import Target
    from fuzzkern.target.loader import LoadedTarget

#: Version of the entry format this fuzzkern writes. Older entries are migrated on load.
SCHEMA_VERSION = 1

#: ``version -> function`` turning an entry dict of that version into one of ``version + 1``.
#: Add one here whenever :data:`SCHEMA_VERSION` is bumped, so older entries keep loading.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

#: Marks a JSON file as a fuzzkern corpus entry (a foreign JSON file lacks it).
FORMAT = "fuzzkern-corpus-entry"

STILL_FAILING = "still-failing"
NOW_PASSING = "now-passing"
CANNOT_REPLAY = "cannot-replay"


# --------------------------------------------------------------------------------------------
# Ids and names


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def entry_id(target_id: str, verdict: str, case: Case) -> str:
    """16 hex digits naming the entry of ``case`` failing ``target_id`` with ``verdict``."""
    text = _canonical({"target": target_id, "verdict": verdict, "case": case.to_json()})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: what an entry id may be: it names the entry's files and its reproducer
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def target_dirname(target_id: str) -> str:
    """The folder name of a target's entries: its id with anything but ``[A-Za-z0-9._-]``
    replaced by ``_`` (``misbehaving::aborts`` -> ``misbehaving_aborts``)."""
    name = _UNSAFE.sub("_", target_id).strip("._") or "target"
    return name[:120]


# --------------------------------------------------------------------------------------------
# Reviewable JSON (non-finite floats: fuzzkern.case.codec)


def dumps(obj: Any, indent: int = 0) -> str:
    """JSON for people reviewing a diff: objects one key a line, lists of plain values on one
    line (shapes, strides), strict JSON (no NaN tokens)."""
    pad = "  " * (indent + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(str(k))}: {dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(obj, list):
        if all(not isinstance(x, (dict, list)) for x in obj):
            return json.dumps(obj, allow_nan=False)
        items = [f"{pad}{dumps(x, indent + 1)}" for x in obj]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return json.dumps(obj, allow_nan=False)


# --------------------------------------------------------------------------------------------
# The entry


@dataclass
class Entry:
    """One corpus entry, as loaded from its JSON file (see the module doc)."""

    id: str
    target_id: str
    #: the target source the entry was saved from, as the user named it (shown; never loaded)
    ref: str
    verdict: str
    message: str
    case: Case
    outcome: Outcome
    modes: tuple[str, ...]
    explanations: list[str] = field(default_factory=list)
    #: per tensor input: dtype, elements and sha256 of its storage bytes
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    #: launcher/reference locations, tolerance, in-place names, ... (what repro scripts need)
    target: dict[str, Any] = field(default_factory=dict)
    shrunk: bool = True
    flaky: bool = False
    #: run options the failure needs (``debug``: Triton's device asserts and overflow checks)
    options: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    #: where the entry was loaded from (None before it is saved)
    path: str | None = None

    @property
    def storages_path(self) -> str | None:
        if self.path is None:
            return None
        return os.path.splitext(self.path)[0] + ".safetensors"

    @property
    def failing_modes(self) -> list[str]:
        """Execution modes whose result was wrong (empty for a crash or hang, which the
        worker reports as a whole)."""
        return [m for m, r in self.outcome.modes.items() if m in ("interpret", "compiled")
                and r.status not in ("ok", "precondition", "unsupported")]

    def to_json(self) -> dict[str, Any]:
        return encode_document({
            "format": FORMAT,
            "schema_version": self.schema_version,
            "id": self.id,
            "verdict": self.verdict,
            "message": self.message,
            "case_text": self.case.describe(),
            "explanations": list(self.explanations),
            "target": {"id": self.target_id, "ref": self.ref, **self.target},
            "case": self.case.to_json(),
            "modes": list(self.modes),
            "options": self.options,
            "shrunk": self.shrunk,
            "flaky": self.flaky,
            "inputs": self.inputs,
            "storages": f"{self.id}.safetensors",
            "outcome": self.outcome.to_json(),
            "environment": self.environment,
        })


def _from_json(d: Any, where: str) -> Entry:
    if not isinstance(d, dict):
        raise CorpusError(f"{where}: not a fuzzkern corpus entry (a JSON {type(d).__name__}, "
                          "not an object)")
    if d.get("format") != FORMAT or "schema_version" not in d:
        raise CorpusError(f"{where}: not a fuzzkern corpus entry (no format={FORMAT!r} and "
                          "schema_version fields)")
    version = d["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CorpusError(f"{where}: bad schema_version={version!r}")
    if version > SCHEMA_VERSION:
        raise CorpusError(
            f"{where}: schema too new (schema_version {version}; this fuzzkern reads up to "
            f"{SCHEMA_VERSION}); upgrade fuzzkern to replay it"
        )
    while version < SCHEMA_VERSION:
        migrate = MIGRATIONS.get(version)
        if migrate is None:
            raise CorpusError(f"{where}: no migration from schema_version {version}")
        d = migrate(dict(d))
        version += 1
        d["schema_version"] = version
    eid = d.get("id")
    if not isinstance(eid, str) or not _ID.fullmatch(eid):
        raise CorpusError(f"{where}: bad entry id {eid!r} (expected 1-64 letters, digits, _ "
                          "or -; an id names files, so no path separators or dots)")
    limits.check_case(d.get("case"), limits.current(), where)
    _check_fields(d, where)
    try:
        d = _bounded_texts(d)
        d = decode_document(d)
        target = _data_only(dict(d["target"]))
        case = Case.from_json(d["case"])
        outcome = Outcome.from_json(d["outcome"])
        entry = Entry(
            id=str(d["id"]),
            target_id=str(target.pop("id")),
            ref=str(target.pop("ref", "")),
            verdict=str(d["verdict"]),
            message=str(d.get("message", "")),
            case=case,
            outcome=outcome,
            modes=tuple(d.get("modes", ())),
            explanations=[str(x) for x in d.get("explanations", [])[:EXPLANATIONS]],
            inputs={str(k): dict(v) for k, v in d.get("inputs", {}).items()},
            environment=dict(d.get("environment", {})),
            target=target,
            shrunk=bool(d.get("shrunk", True)),
            flaky=bool(d.get("flaky", False)),
            options=dict(d.get("options", {})),
            schema_version=version,
        )
    except CaseError as e:
        raise CorpusError(f"{where}: malformed case: {e}") from e
    except Exception as e:  # whatever else a hand-edited entry holds: one line, no traceback
        raise CorpusError(f"{where}: malformed entry: {type(e).__name__}: {e}") from e
    missing = sorted(set(case.tensors) - set(entry.inputs))
    if missing:
        raise CorpusError(f"{where}: malformed entry: no checksum for input(s) {missing}")
    want = entry_id(entry.target_id, entry.verdict, entry.case)
    if want != entry.id:
        raise CorpusError(f"{where}: refused: its id {entry.id} is not the hash of its target, "
                          f"verdict and case ({want}): an entry edited or written by hand")
    return entry


#: the most explanations an entry's failure is shown and saved again with (fuzzkern writes a
#: handful; an entry of 100000 printed 100000 lines at every run that replayed it)
EXPLANATIONS = 32


def _bounded_texts(d: dict[str, Any]) -> dict[str, Any]:
    """Raw entry ``d`` with every text but its case's (whose scalars its id hashes) cut to
    8 KiB, head and tail, as a worker cuts an outcome's: a 10 MB explanation or message in an
    entry is never printed, reported or saved again whole."""
    from fuzzkern.execution.pool import bounded

    return {k: v if k == "case" else bounded(v) for k, v in d.items()}


#: what an entry keeps of where an autotuned kernel's config came from: data, no locations
_AUTOTUNER_FIELDS = ("kernel", "index", "count", "config", "name", "reached")


def _data_only(target: dict[str, Any]) -> dict[str, Any]:
    """An entry's ``target`` fields less the code locations older fuzzkerns wrote (modules,
    qualnames, files of the launcher, reference and autotuners): nothing reads them."""
    target.pop("ref_relative", None)
    target.pop("launcher", None)
    target.pop("reference", None)
    autotuners = target.get("autotuners")
    if isinstance(autotuners, list):
        target["autotuners"] = [{k: v for k, v in a.items() if k in _AUTOTUNER_FIELDS}
                                for a in autotuners if isinstance(a, dict)]
    return target


#: the most times an entry may ask for the compiled kernel to run per case
MAX_REPEATS = 100


def _check_fields(d: dict[str, Any], where: str) -> None:
    """Raise :class:`CorpusError` unless the modes, options and input checksums of raw entry
    ``d`` have the types and ranges a replay uses (the case: :func:`limits.check_case`)."""
    from fuzzkern.target.declare import MODES

    problems = []
    modes = d.get("modes", [])
    if not isinstance(modes, list) or not all(m in MODES for m in modes):
        problems.append(f"modes must be a list of {', '.join(MODES)}")
    options = d.get("options", {})
    if not isinstance(options, dict):
        problems.append("options must be a JSON object")
    else:
        if not isinstance(options.get("debug", False), bool):
            problems.append("options.debug must be true or false")
        repeats = options.get("repeat_compiled", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or \
                not 1 <= repeats <= MAX_REPEATS:
            problems.append(f"options.repeat_compiled must be a whole number in [1, "
                            f"{MAX_REPEATS}]")
        checks = options.get("checks", {})
        if not isinstance(checks, dict) or not all(isinstance(v, bool) for v in checks.values()):
            problems.append("options.checks must map check names to true or false")
    inputs = d.get("inputs", {})
    if not isinstance(inputs, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("sha256"), str)
            and type(v.get("elements")) is int for v in inputs.values()):
        problems.append("inputs must map each tensor input to its elements and sha256")
    if problems:
        raise CorpusError(f"{where}: refused: {'; '.join(problems)}")


def _unclosed(text: str) -> bool:
    """Whether JSON ``text`` ends inside a string, object or array (a cut-off file)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0


def _no_constant(name: str) -> Any:
    raise ValueError(f"the non-JSON constant {name}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object with each key once: an entry that says ``"case"`` twice shows its
    reviewer the first and would replay the second."""
    out = dict(pairs)
    if len(out) != len(pairs):
        counts = collections.Counter(k for k, _ in pairs)
        twice = next(k for k, n in counts.items() if n > 1)
        raise ValueError(f"the key {twice[:60]!r} twice in one object")
    return out


def load(path: str | os.PathLike[str]) -> Entry:
    """Load the entry at ``path`` (its JSON file). Raises :class:`CorpusError` naming the file
    and why: unreadable, not a regular file, past the size limit, truncated or malformed JSON,
    a foreign file, a schema too new, numbers fuzzkern cannot use (:mod:`.limits`)."""
    path = os.fspath(path)
    caps = limits.current()
    limits.check_folder(path)
    raw = limits.read_regular(path, caps.entry_bytes, "the entry", "entry_bytes")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant,
                          object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path}: not a fuzzkern corpus entry (not UTF-8 text)") from e
    except json.JSONDecodeError as e:
        what = "truncated" if _unclosed(raw.decode("utf-8")) else "malformed"
        raise CorpusError(f"{path}: {what} JSON ({e.msg} at line {e.lineno} column {e.colno})"
                          ) from e
    except RecursionError as e:
        raise CorpusError(f"{path}: refused: JSON nested deeper than the limit of "
                          f"{caps.depth} ({limits.LIMITS_VARIABLE} depth=...)") from e
    except ValueError as e:  # an integer of thousands of digits, NaN or Infinity tokens
        why = ("an integer of more than 4300 digits" if str(e).startswith("Exceeds the limit")
               else str(e))
        raise CorpusError(f"{path}: refused: {why}") from e
    limits.check_document(data, caps, path)
    entry = _from_json(data, path)
    if os.path.basename(path) != f"{entry.id}.json":
        raise CorpusError(f"{path}: refused: the entry's id is {entry.id}, not its file name")
    entry.path = os.path.abspath(path)
    return entry


# --------------------------------------------------------------------------------------------
# Input storages: the exact bytes


def _sha256(t: torch.Tensor) -> str:
    import torch

    raw = t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return hashlib.sha256(raw).hexdigest()


def _safetensors_header(fh: Any, size: int, path: str) -> tuple[dict[str, Any], int]:
    """The JSON header of an open .safetensors file of ``size`` bytes, and where its data
    starts. The format: an 8-byte little-endian header length, a JSON header, then the data."""
    head = fh.read(8)
    if len(head) < 8:
        raise CorpusError(f"{path}: truncated safetensors file")
    n = int.from_bytes(head, "little")
    if n > size - 8:
        raise CorpusError(f"{path}: truncated safetensors file (header)")
    if n > limits.HEADER_BYTES:
        raise CorpusError(f"{path}: refused: a safetensors header of {n} bytes (at most "
                          f"{limits.HEADER_BYTES})")
    try:
        header = json.loads(fh.read(n).decode("utf-8"), parse_constant=_no_constant,
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorpusError(f"{path}: not a safetensors file ({type(e).__name__}: "
                          f"{str(e)[:200]})") from e
    if not isinstance(header, dict):
        raise CorpusError(f"{path}: not a safetensors file")
    limits.check_document(header, limits.current(), path)
    return header, 8 + n


def _span(header: dict[str, Any], name: str, data_bytes: int, path: str) -> tuple[int, int]:
    """``(start, end)`` of tensor ``name``'s bytes after the header, checked to lie in the
    file's ``data_bytes`` bytes of data."""
    info = header.get(name)
    if info is None:
        raise CorpusError(f"{path}: no stored storage for input {name!r}")
    try:
        start, end = (x for x in info["data_offsets"])
    except (KeyError, TypeError, ValueError) as e:
        raise CorpusError(f"{path}: malformed safetensors header for {name!r}") from e
    if not all(type(x) is int for x in (start, end)) or not 0 <= start <= end:
        raise CorpusError(f"{path}: malformed safetensors header for {name!r}")
    if end > data_bytes:
        raise CorpusError(f"{path}: truncated safetensors file (tensor {name!r})")
    return start, end


def _sha256_of_span(fh: Any, start: int, end: int) -> str:
    digest = hashlib.sha256()
    fh.seek(start)
    left = end - start
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)
    return digest.hexdigest()


def _declared(entry: Entry) -> tuple[str, dict[str, int], int]:
    """The entry's .safetensors path, the bytes it declares per input, and the most bytes the
    file may hold."""
    from fuzzkern.case.model import torch_dtype

    path = entry.storages_path
    if path is None:
        raise CorpusError(f"entry {entry.id} has no file")
    declared = {name: tc.storage_size * torch_dtype(tc.dtype).itemsize
                for name, tc in entry.case.tensors.items()}
    return path, declared, 8 + limits.HEADER_BYTES + sum(declared.values())


def check_storages(entry: Entry) -> None:
    """Raise :class:`CorpusError` unless the entry's .safetensors file is a regular file no
    bigger than the entry declares and holds, for every tensor input, a storage of the
    recorded size whose sha256 matches the JSON (read in pieces: never the whole file)."""
    path, declared, cap = _declared(entry)
    with limits.open_regular(path, cap, "the stored inputs",
                             "the size its entry declares") as (fh, size):
        header, base = _safetensors_header(fh, size, path)
        for name, tc in entry.case.tensors.items():
            start, end = _span(header, name, size - base, path)
            info = entry.inputs.get(name, {})
            shape = header[name].get("shape") if isinstance(header[name], dict) else None
            if shape != [tc.storage_size] or info.get("elements") != tc.storage_size \
                    or end - start != declared[name]:
                raise CorpusError(
                    f"{path}: input {name!r} has a stored storage of shape {shape} "
                    f"({end - start} bytes), but the case needs {tc.storage_size} elements"
                )
            if _sha256_of_span(fh, base + start, base + end) != info.get("sha256"):
                raise CorpusError(f"{path}: checksum mismatch for input {name!r}: the stored "
                                  "bytes are not the bytes the entry was saved with")


def _stored_bytes(entry: Entry) -> bytes:
    """The bytes of the entry's .safetensors file, checked (:func:`check_storages`) and read
    only as a regular file of at most the size the entry declares."""
    check_storages(entry)
    path, _declared_bytes, cap = _declared(entry)
    return limits.read_regular(path, cap, "the stored inputs", "the size its entry declares")


# --------------------------------------------------------------------------------------------
# Writing


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _file_mode()


def _write_atomic(path: str, data: bytes) -> None:
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.{os.getpid()}.",
                               suffix=".tmp")
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; entries are shared files
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - not POSIX
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def environment(outcome: Outcome | None = None) -> dict[str, Any]:
    """Versions and machine the entry was found on (no CUDA initialization: the GPU name comes
    from the compiled mode's result, when it ran)."""
    import sys

    env: dict[str, Any] = {}
    try:
        from importlib.metadata import version

        env["fuzzkern"] = version("fuzzkern")
    except Exception:  # pragma: no cover - not installed
        from fuzzkern._version import __version__

        env["fuzzkern"] = __version__
    for mod in ("torch", "triton", "numpy"):
        m = sys.modules.get(mod)
        env[mod] = getattr(m, "__version__", None) if m is not None else None
    env["python"] = platform.python_version()
    env["platform"] = platform.platform()
    gpu = None
    if outcome is not None and "compiled" in outcome.modes:
        gpu = outcome.modes["compiled"].detail.get("device")
    env["gpu"] = gpu
    env["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return env


def _autotuners(target: Target, case: Case, outcome: Outcome | None = None
                ) -> list[dict[str, Any]]:
    """For each forced autotune config: the kernel, its config index, count and description
    (data for people; the case's ``configs`` is what a replay forces). A kernel the launcher's
    code does not name (reached at run time: a library's launch wrapper) has its count from
    the outcome's ``config_counts`` and ``"reached": "at run time"``."""
    from fuzzkern.introspect import autotuners_of, config_description, kernel_name

    out = []
    try:
        found = autotuners_of(target.launcher)
    except Exception:  # pragma: no cover - a launcher kernels.py cannot read
        found = {}
    for name, index in case.configs.items():
        at = found.get(name)
        loc: dict[str, Any] = {"kernel": name, "index": index}
        if at is None:
            count = _run_time_count(outcome, name)
            loc.update({"count": count} if count else {}, reached="at run time")
        else:
            loc.update(count=len(at.configs), name=kernel_name(at))
            with contextlib.suppress(IndexError):
                loc["config"] = config_description(at, index)
        out.append(loc)
    return out


def _run_time_count(outcome: Outcome | None, kernel: str) -> int | None:
    """How many configs ``kernel`` has, as a mode of ``outcome`` reported it."""
    for m in (outcome.modes.values() if outcome is not None else ()):
        n = (m.detail.get("config_counts") or {}).get(kernel)
        if isinstance(n, int):
            return n
    return None


def target_info(target: Target, case: Case, outcome: Outcome | None = None) -> dict[str, Any]:
    """What the entry records of its target besides the case: data for people reviewing it
    and for :func:`recorded_differences` (a replay takes all of it from the target itself)."""
    t = target
    return {
        "autotuners": _autotuners(t, case, outcome),
        "inplace": list(t.inplace_names),
        "clobbers": list(t.clobber_names),
        "reduction": t.reduction,
        "upcast": t.upcast,
        "timeout": t.timeout,
        "tolerance": {"rtol": t.tolerance.rtol, "atol": t.tolerance.atol,
                      "equal_nan": t.tolerance.equal_nan},
        "inputs": list(t.inputs.named),
    }


#: worker options stored with an entry because replaying it needs them
_REPLAY_OPTIONS = ("repeat_compiled", "checks")


#: seconds a save waits at most for another process's lock on a target folder
LOCK_WAIT = 30.0


def corpus_folder(corpus_dir: str | os.PathLike[str]) -> str:
    """``corpus_dir`` as an absolute path, refused (:class:`CorpusError`) when it is a
    symbolic link: the corpus reads and writes only regular files below its own real folder,
    so a link (to ``/``, ``/usr/share``, a folder outside the project) is named, never
    followed."""
    path = os.path.abspath(os.fspath(corpus_dir))
    if os.path.islink(path):
        raise CorpusError(f"{path}: refused: the corpus folder is a symbolic link (to "
                          f"{os.readlink(path)}); name the real folder instead")
    return path


def save(
    corpus_dir: str | os.PathLike[str],
    target_id: str,
    ref: str,
    case: Case,
    outcome: Outcome,
    *,
    modes: Iterable[str],
    explanations: Iterable[str] = (),
    storages: Mapping[str, torch.Tensor] | None = None,
    target: Target | None = None,
    shrunk: bool = True,
    flaky: bool = False,
    debug: bool = False,
    run_options: Mapping[str, Any] | None = None,
    lock_until: float | None = None,
    problems: list[str] | None = None,
) -> str:
    """Save a failure as an entry of ``corpus_dir``; returns the path of its JSON file, read
    back and checked (:class:`CorpusError` when it does not read back as written).

    ``ref`` is the target source as the user named it (recorded for people; never loaded).
    ``run_options`` are the worker options the failure was found with; those a replay needs to
    reproduce it (``repeat_compiled`` for nondeterminism, ``checks``) are stored.

    ``storages`` are the inputs' storages as 1-D tensors (by default: materialized from the
    case). Every distinct failure gets its own entry: the id hashes the target, verdict and
    case, and an entry of that id is kept as it is only when it holds the same input bytes and
    is as shrunk (the same failure found twice is one entry). A shrunk entry replaces the
    unshrunk entries of its failure (same target, verdict family and place:
    :func:`~fuzzkern.judge.verdict.failure_key`); nothing else is ever removed or yielded to.
    Safe to call from several processes at once: each file appears complete or not at all,
    and an entry replaced is there until its replacement is durable.

    The target folder's lock is waited for until ``lock_until`` (a ``time.monotonic()``
    instant, e.g. the end of ``--budget``) and at most :data:`LOCK_WAIT` seconds; when another
    process holds it longer (one stopped while saving), the entry is written without removing
    its failure's unshrunk entries, and a warning is appended to ``problems`` (or issued as a
    :class:`RuntimeWarning`): never a hang, never a lost finding.
    """
    corpus_dir = corpus_folder(corpus_dir)
    eid = entry_id(target_id, outcome.verdict, case)
    folder = os.path.join(corpus_dir, target_dirname(target_id))
    entry, blob = _new_entry(eid, target_id, ref, case, outcome, storages, target, modes=modes,
                             explanations=explanations, shrunk=shrunk, flaky=flaky,
                             debug=debug, run_options=run_options)
    os.makedirs(folder, exist_ok=True)
    until = time.monotonic() + LOCK_WAIT
    if lock_until is not None:
        until = min(until, lock_until)
    waited = time.monotonic()
    with _locked(folder, until) as locked:
        if not locked:
            warning = (f"the corpus folder {folder} stayed locked by another process for "
                       f"{time.monotonic() - waited:.0f} s; saved {entry.id} without the lock")
            if problems is None:
                warnings.warn(warning, RuntimeWarning, stacklevel=2)
            else:
                problems.append(warning)
        path = _write_entry(folder, entry, blob, checked=locked)
    _remove_stale_temporaries(folder)
    try:
        back = load(path)
        check_storages(back)
    except CorpusError as e:
        raise CorpusError(f"saved {path}, but it does not read back: {e}") from e
    if back.inputs != entry.inputs:
        raise CorpusError(f"saved {path}, but it reads back with other input bytes")
    return path


def _new_entry(eid: str, target_id: str, ref: str, case: Case, outcome: Outcome,
               storages: Mapping[str, torch.Tensor] | None, target: Target | None, *,
               modes: Iterable[str], explanations: Iterable[str], shrunk: bool, flaky: bool,
               debug: bool, run_options: Mapping[str, Any] | None) -> tuple[Entry, bytes]:
    """The entry :func:`save` writes, and its .safetensors file's bytes."""
    import safetensors.torch

    if storages is None:
        storages = storages_of(case)
    flat = {}
    inputs: dict[str, dict[str, Any]] = {}
    for name, tc in case.tensors.items():
        if name not in storages:
            raise CorpusError(f"no storage given for input {name!r}")
        s = storages[name].detach().cpu().contiguous().reshape(-1)
        if str(s.dtype).replace("torch.", "") != tc.dtype or s.numel() != tc.storage_size:
            raise CorpusError(
                f"the storage given for input {name!r} is {s.dtype} of {s.numel()} elements, "
                f"but the case needs {tc.dtype} of {tc.storage_size}"
            )
        flat[name] = s.clone()
        inputs[name] = {"dtype": tc.dtype, "elements": tc.storage_size, "sha256": _sha256(s)}
    entry = Entry(
        id=eid, target_id=target_id, ref=ref,
        verdict=outcome.verdict, message=outcome.message, case=case, outcome=outcome,
        modes=tuple(modes), explanations=list(explanations), inputs=inputs,
        environment=environment(outcome),
        target=target_info(target, case, outcome) if target is not None else {},
        shrunk=shrunk, flaky=flaky, options={
            "debug": bool(debug),
            **{k: v for k, v in (run_options or {}).items() if k in _REPLAY_OPTIONS},
        },
    )
    blob = safetensors.torch.save(
        flat, metadata={"format": FORMAT, "schema_version": str(SCHEMA_VERSION), "entry": eid}
    )
    return entry, blob


def _same(existing: str, entry: Entry) -> bool:
    """Whether the entry file ``existing`` already is ``entry``: it loads, its stored bytes
    check out and are ``entry``'s, and it is as shrunk."""
    try:
        old = load(existing)
        check_storages(old)
    except CorpusError:
        return False
    return old.inputs == entry.inputs and (old.shrunk or not entry.shrunk)


def _write_entry(folder: str, entry: Entry, blob: bytes, *, checked: bool) -> str:
    """Write ``entry`` into ``folder`` (inputs first, JSON last, each replaced atomically);
    with ``checked`` (the folder's lock is held) a shrunk entry then removes the unshrunk
    entries of its failure (:func:`save`)."""
    json_path = os.path.join(folder, f"{entry.id}.json")
    if os.path.lexists(json_path) and _same(json_path, entry):
        return json_path
    storages = os.path.join(folder, f"{entry.id}.safetensors")
    had = os.path.lexists(storages)
    _write_atomic(storages, blob)
    try:
        _write_atomic(json_path, (dumps(entry.to_json()) + "\n").encode())
    except BaseException:  # (a full disk) no inputs file without its entry is left behind
        if not had:
            with contextlib.suppress(OSError):
                os.unlink(storages)
        raise
    _fsync_dir(folder)
    if checked and entry.shrunk:
        for other in _unshrunk_of(folder, entry, exclude=json_path):
            remove_entry(other)
    return json_path


@contextlib.contextmanager
def _locked(folder: str, until: float) -> Iterator[bool]:
    """An exclusive lock on a target folder (``flock`` on the folder itself: no lock file
    to commit), held while an entry is checked against its neighbours and written; yields
    whether it was had by ``until`` (a ``time.monotonic()`` instant). A target folder that
    is a symbolic link is refused: nothing is written through a link."""
    import fcntl

    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise CorpusError(f"{folder}: cannot write the corpus entry: "
                          + ("the folder is a symbolic link" if os.path.islink(folder)
                             else str(e.strerror or e))) from e
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
                break
            except BlockingIOError:
                now = time.monotonic()
                if now >= until:
                    locked = False
                    break
                time.sleep(min(0.05, until - now))
        yield locked
    finally:
        os.close(fd)  # releases the lock


def _unshrunk_of(folder: str, entry: Entry, exclude: str) -> list[Entry]:
    """The unshrunk entries in ``folder`` of ``entry``'s failure: its target, and its verdict
    family and place (:func:`~fuzzkern.judge.verdict.failure_key`, as a run counts failures)."""
    from fuzzkern.judge.verdict import failure_key

    key = failure_key(entry.outcome)
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or not name.endswith(".json") or path == exclude:
            continue
        try:
            other = load(path)
        except CorpusError:
            continue
        if not other.shrunk and other.target_id == entry.target_id \
                and failure_key(other.outcome) == key:
            out.append(other)
    return out


def remove_entry(entry: Entry) -> None:
    """Delete an entry superseded by a better one (JSON first: never a JSON without inputs)."""
    for path in (entry.path, entry.storages_path):
        if path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


#: A temporary file older than this is left over from a writer that was killed.
STALE_SECONDS = 600.0


#: The name of a temporary file :func:`_write_atomic` makes for an entry's file:
#: ``.<id>.json.<pid>.<8 random characters>.tmp`` (or ``.safetensors``; see tempfile.mkstemp).
_TEMPORARY = re.compile(r"\.(?P<id>[A-Za-z0-9_-]{1,64})\.(?:json|safetensors)\.(?P<pid>\d{1,10})"
                        r"\.[a-z0-9_]{8}\.tmp")


def _writer_gone(pid: int) -> bool:
    """Whether process ``pid`` (the writer of a temporary file) no longer runs here."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return False


def _is_target_folder(folder: str, names: Iterable[str]) -> bool:
    """Whether ``folder`` (holding ``names``) is a target folder of a corpus: it holds an
    entry's pair of files (``<id>.json`` beside ``<id>.safetensors``) and lies below no
    ``.git`` folder."""
    if ".git" in os.path.abspath(folder).split(os.sep):
        return False
    names = set(names)
    return any(n.endswith(".json") and _ID.fullmatch(n[:-5]) and f"{n[:-5]}.safetensors" in names
               for n in names)


def _remove_stale_temporaries(folder: str) -> None:
    """In a target folder (:func:`_is_target_folder`), remove the temporary files killed
    writers left: only regular files named as :func:`_write_atomic` names them, whose writer
    process is gone or that are older than :data:`STALE_SECONDS` (a writer on another machine,
    a reused pid). Nothing else, nowhere else: a folder of someone's own ``.tmp`` files is
    not a corpus."""
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    if not _is_target_folder(folder, names):
        return
    for name in names:
        m = _TEMPORARY.fullmatch(name)
        if m is None:
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and (_writer_gone(int(m["pid"]))
                                             or now - st.st_mtime > STALE_SECONDS):
                os.unlink(path)
        except OSError:
            pass  # another writer removed it first


# --------------------------------------------------------------------------------------------
# Reading a corpus


#: Files in a corpus that are not entries and not worth a word.
_QUIET = {"README", "README.md", "README.txt", ".gitkeep", ".gitattributes", ".gitignore"}


def _folders(corpus_dir: str, ids: set[str] | None) -> list[str]:
    """The folders :func:`scan` reads: those of the target ``ids``, or every folder under
    ``corpus_dir`` but hidden ones (``.git``, ``.hypothesis``) and links (never followed)."""
    if ids is not None:
        return sorted({os.path.join(corpus_dir, target_dirname(i)) for i in ids})
    out = []
    for folder, dirs, _files in os.walk(corpus_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.append(folder)
    return sorted(out)


def _scan_folder(folder: str, top: bool, ids: set[str] | None
                 ) -> list[tuple[str, Entry | CorpusError]]:
    out: list[tuple[str, Entry | CorpusError]] = []
    try:
        with os.scandir(folder) as it:
            items = sorted(it, key=lambda d: d.name)
    except OSError as e:  # a folder fuzzkern may not read (chmod 000, /proc/1/cwd)
        return [(folder, CorpusError(f"{folder}: cannot read the folder: {e.strerror or e}"))]
    for item in items:
        path, name = os.path.join(folder, item.name), item.name
        if name.startswith(".") or name in _QUIET:
            continue
        try:
            out += _scan_item(item, path, name, top, ids)
        except OSError as e:
            out.append((path, CorpusError(f"{path}: cannot read it: {e.strerror or e}")))
    return out


def _scan_item(item: os.DirEntry[str], path: str, name: str, top: bool, ids: set[str] | None
               ) -> list[tuple[str, Entry | CorpusError]]:
    """What :func:`_scan_folder` makes of one of its folder's items: nothing, a refusal or
    an entry."""
    if item.is_symlink():  # (an entry's .safetensors link: its replay says so)
        if name.endswith(".json") or item.is_dir() or not (
                top or name.endswith(".safetensors")):
            dangling = "" if os.path.exists(path) else " (dangling)"
            return [(path, CorpusError(f"{path}: refused: a symbolic link{dangling} (corpus "
                                       "files and folders must not be links)"))]
        return []
    if item.is_dir() or name.endswith(".safetensors"):
        return []
    if not item.is_file():
        return [(path, CorpusError(f"{path}: refused: not a regular file (a device, FIFO or "
                                   "socket)"))]
    if not name.endswith(".json"):
        return [] if top else [(path, CorpusError(
            f"{path}: not a corpus file (entries are <id>.json with <id>.safetensors)"))]
    try:
        entry = load(path)
    except CorpusError as e:
        return [(path, e)]
    if ids is not None and entry.target_id not in ids:
        return []  # another target whose id maps to the same folder name
    return [(path, entry)]


def scan(corpus_dir: str | os.PathLike[str], target_id: str | None = None,
         aliases: Iterable[str] = ()) -> list[tuple[str, Entry | CorpusError]]:
    """Every entry under ``corpus_dir`` (or of ``target_id`` only), sorted by path, each as
    ``(path, Entry)`` or, for a file that is malformed, truncated, foreign, too new, a link
    (dangling or not) or not a regular file, ``(path, CorpusError)``. Hidden files (temporary
    files of writers) and hidden folders are skipped; a ``.safetensors`` file is part of its
    entry. ``corpus_dir`` may also be a target folder; a ``corpus_dir`` that is a symbolic
    link is one refused item (:func:`corpus_folder`). ``aliases``: other ids of the target
    (entries saved under them are its own). Target folders are swept of the
    temporary files killed writers left (:func:`_remove_stale_temporaries`)."""
    try:
        corpus_dir = corpus_folder(corpus_dir)
    except CorpusError as e:
        return [(os.path.abspath(os.fspath(corpus_dir)), e)]
    if not os.path.isdir(corpus_dir):
        return []
    ids = None if target_id is None else {target_id, *aliases}
    out: list[tuple[str, Entry | CorpusError]] = []
    for folder in _folders(corpus_dir, ids):
        if os.path.islink(folder) and ids is not None:
            out.append((folder, CorpusError(f"{folder}: refused: the target's corpus folder is "
                                            "a symbolic link (corpus folders must not be links)")))
            continue
        if not os.path.isdir(folder):
            continue
        _remove_stale_temporaries(folder)
        top = os.path.abspath(folder) == os.path.abspath(corpus_dir) and ids is None
        out += _scan_folder(folder, top, ids)
    return out


# --------------------------------------------------------------------------------------------
# Replay


@dataclass
class ReplayResult:
    """What replaying one entry gave: ``status`` is ``still-failing``, ``now-passing`` or
    ``cannot-replay``; ``reason`` says why in words; ``outcome`` is the new outcome when the
    case ran."""

    status: str
    reason: str
    outcome: Outcome | None = None
    entry: Entry | None = None
    ref: str | None = None
    #: a ``cannot-replay`` because of this machine (its failing mode cannot run here), not of
    #: the entry: not a problem of the corpus
    here: bool = False

    @property
    def still_failing(self) -> bool:
        return self.status == STILL_FAILING


def signature_problems(target: Target, case: Case) -> list[str]:
    """Why ``case`` no longer fits ``target``'s inputs (empty when it fits)."""
    from fuzzkern.strategies._internal.inputs import autotune_counts

    named = target.inputs.named
    want_tensors = set(target.inputs.tensors)
    problems = []
    missing = [n for n in named if n not in case.inputs]
    extra = [n for n in case.inputs if n not in named]
    if missing:
        problems.append(f"the target now takes input(s) {', '.join(missing)} the case lacks")
    if extra:
        problems.append(f"the case has input(s) {', '.join(extra)} the target no longer takes")
    for n in case.inputs:
        if n in named and (n in case.tensors) != (n in want_tensors):
            kind = "a tensor" if n in want_tensors else "a scalar"
            problems.append(f"input {n!r} is now {kind}")
    if case.configs:
        try:
            counts = autotune_counts(target.launcher)
        except Exception:  # pragma: no cover
            counts = {}
        for kernel, index in case.configs.items():
            # a kernel the launcher's code does not name may be reached at run time (a
            # library's launch wrapper): the run checks its index (ForcedConfigError)
            if kernel in counts and not 0 <= index < counts[kernel]:
                problems.append(f"autotuned kernel {kernel!r} has {counts[kernel]} config(s), "
                                f"not config {index}")
    return problems


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover
        return False


def recorded_differences(entry: Entry, target: Target,
                         checks: Mapping[str, bool] | None = None) -> list[str]:
    """How the options ``entry`` was recorded with differ from those it replays with: the
    target's checks with the run's ``checks`` on top, and the target's tolerance. An entry
    never sets them (it may come from someone else's pull request: editing its checks to
    false must not make a bug pass); the difference is shown."""
    out = []
    from fuzzkern.target.declare import DEFAULT_CHECKS

    recorded = entry.options.get("checks") or {}
    now = {**DEFAULT_CHECKS, **target.checks, **(checks or {})}
    off_then = sorted(k for k, v in recorded.items() if v is False and now.get(k, False))
    if off_then:
        out.append(f"recorded with check(s) {', '.join(off_then)} off; replayed with the "
                   "target's checks")
    off_now = sorted(k for k, v in (checks or {}).items() if v is False
                     and recorded.get(k, True))
    if off_now:
        out.append(f"check(s) {', '.join(off_now)} turned off for this run")
    tolerance = entry.target.get("tolerance")
    current = {"rtol": target.tolerance.rtol, "atol": target.tolerance.atol,
               "equal_nan": target.tolerance.equal_nan}
    if isinstance(tolerance, dict) and encode_document(tolerance) != encode_document(current):
        out.append(f"recorded with tolerance {_canonical(encode_document(tolerance))}; the "
                   f"target's is now {_canonical(encode_document(current))}")
    return out


def _run_modes(entry: Entry, target: Target, modes: Iterable[str] | None
               ) -> tuple[list[str], list[str]]:
    """The modes to replay ``entry`` in: every mode its outcome failed in, and its recorded
    ones (or ``modes``, the run's choice, instead of those), that the target has and this
    machine can run; and those that could not run here, in words."""
    recorded = entry.modes or ("interpret",)
    wanted = list(dict.fromkeys([*entry.failing_modes, *(modes if modes is not None
                                                         else recorded)]))
    run_modes = [m for m in wanted if m in target.modes]
    skipped = [f"{m} (the target does not run in it)" for m in entry.failing_modes
               if m not in target.modes]
    if "compiled" in run_modes and not _cuda_available():
        run_modes.remove("compiled")
        skipped.append("compiled (no CUDA GPU here)")
    return run_modes, skipped


def replay(entry: Entry, pool: WorkerPool, target: LoadedTarget, *,
           modes: Iterable[str] | None = None, timeout: float | None = None,
           debug: bool = False, checks: Mapping[str, bool] | None = None) -> ReplayResult:
    """Run ``entry``'s case again, from its stored input bytes, in a worker of ``pool``, against
    ``target``: a target of the project's declared sources whose id the entry names (or
    another one the user chose, e.g. the fixed twin of the one that failed). Nothing the entry
    says is imported or called: it is data (shapes, strides, dtypes, bytes, configs, scalars).

    The modes: every mode the entry's outcome failed in that this machine can run, besides its
    recorded ones or ``modes`` (:func:`_run_modes`); those it could not run are named in the
    reason. Never raises for a kernel's behaviour or a damaged entry: those are
    ``cannot-replay`` results with a reason. The hygiene checks and tolerance are the
    target's, with ``checks`` (the run's ``--no-check``) on top, never the entry's
    (:func:`recorded_differences`, shown in the reason); the entry may ask for more: ``debug``
    launches, repeated compiled runs.
    """
    lt = target

    def cannot(reason: str, here: bool = False) -> ReplayResult:
        return ReplayResult(CANNOT_REPLAY, reason, None, entry, lt.ref, here)

    problems = signature_problems(lt.target, entry.case)
    if problems:
        return cannot("signature changed: " + "; ".join(problems))
    try:
        check_storages(entry)
    except CorpusError as e:
        return cannot(str(e))
    run_modes, skipped = _run_modes(entry, lt.target, modes)
    if not run_modes:
        return cannot("none of its modes can run here" + (f": {', '.join(skipped)}"
                                                          if skipped else ""),
                      here=bool(skipped))
    if entry.failing_modes and not set(entry.failing_modes) & set(run_modes):
        why = f" ({', '.join(skipped)})" if skipped else ""
        return cannot(f"it failed only in {', '.join(entry.failing_modes)} mode, which is not "
                      f"run here{why}", here=True)
    options: dict[str, Any] = {"modes": run_modes, "storages": entry.storages_path,
                               "case_bytes": limits.current().case_bytes,
                               "debug": bool(debug or entry.options.get("debug", False))}
    if checks:
        options["checks"] = dict(checks)
    if int(entry.options.get("repeat_compiled", 1)) > 1:
        options["repeat_compiled"] = int(entry.options["repeat_compiled"])
    outcome = pool.run(lt.ref, entry.case.to_json(), options,
                       timeout if timeout is not None else lt.target.timeout)
    if "harness" in outcome.modes:
        return ReplayResult(CANNOT_REPLAY, outcome.message, outcome, entry, lt.ref)
    notes = [f"could not run {', '.join(skipped)}"] if skipped else []
    notes += recorded_differences(entry, lt.target, checks)
    note = f" ({'; '.join(notes)})" if notes else ""
    if outcome.failed:
        was, now = _place(entry.outcome), _place(outcome)
        if was != now:
            reason = (f"a different failure: {_key_text(outcome)}, recorded "
                      f"{_key_text(entry.outcome)}: {outcome.message}")
        elif outcome.verdict == entry.verdict:
            reason = f"{outcome.verdict}: {outcome.message}"
        else:
            reason = (f"verdict changed from {entry.verdict} to {outcome.verdict}: "
                      f"{outcome.message}")
        if not entry.shrunk:
            note += (" (not minimal: saved before its shrinking finished; the next fuzzkern run "
                     "shrinks it)")
        return ReplayResult(STILL_FAILING, _first_line(reason) + note, outcome, entry, lt.ref)
    reason = "passes" if outcome.verdict == "pass" else f"{outcome.verdict}: {outcome.message}"
    return ReplayResult(NOW_PASSING, _first_line(reason) + note, outcome, entry, lt.ref)


def _place(outcome: Outcome) -> tuple[str, str]:
    """What makes a replayed failure the recorded one: its verdict family and location, an
    exception's frame by its file alone (a line moves with an edit or another Triton)."""
    from fuzzkern.judge.verdict import failure_location, verdict_family

    location = failure_location(outcome)
    kind, sep, frame = location.partition(" at ")
    if sep and frame.rpartition(":")[2].isdigit():
        location = f"{kind} at {frame.rpartition(':')[0]}"
    return verdict_family(outcome.verdict), location


def _key_text(outcome: Outcome) -> str:
    from fuzzkern.judge.verdict import failure_location

    location = failure_location(outcome)
    return outcome.verdict + (f" at {location}" if location else "")


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else text


def target_of(entry: Entry, loaded: Iterable[LoadedTarget]) -> LoadedTarget | None:
    """The target of the declared ``loaded`` ones that ``entry`` names (by id or an id the
    target had before): the entry's id is compared, never imported."""
    return next((t for t in loaded if t.named(entry.target_id)), None)


def not_declared(entry: Entry, problems: Iterable[str] = ()) -> str:
    """Why ``entry`` cannot replay: its target is in none of the declared sources."""
    failed = list(problems)
    return (f"its target {entry.target_id!r} is in none of the declared target sources "
            "(--target FILE_OR_MODULE, or [tool.fuzzkern] targets in pyproject.toml)"
            + (f"; {'; '.join(failed)}" if failed else ""))


# --------------------------------------------------------------------------------------------
# Upgrading old entries


def upgrade(corpus_dir: str | os.PathLike[str], loaded: Iterable[LoadedTarget]) -> list[str]:
    """Rewrite the entries under ``corpus_dir`` in the current form, one line per entry
    touched or left: an entry saved under an id its target had before (``test_fuzz::add``,
    now ``tests.test_fuzz::add``) moves to the target's id (a new content id and folder), and
    one holding code locations older fuzzkerns wrote is written without them. Each new file
    is read back before the old one is removed; an entry that does not load, or whose target
    is in none of ``loaded``, is left as it is and named: nothing is lost."""
    loaded = list(loaded)
    out = []
    for path, entry in scan(corpus_dir):
        if isinstance(entry, CorpusError):
            out.append(f"left as it is: {entry}")
            continue
        lt = target_of(entry, loaded)
        if lt is None:
            out.append(f"left as it is: {path}: {not_declared(entry)}")
            continue
        raw = json.loads(limits.read_regular(path, limits.current().entry_bytes, "the entry",
                                             "entry_bytes"))
        old_form = any(k in raw.get("target", {}) for k in ("ref_relative", "launcher",
                                                             "reference"))
        if entry.target_id == lt.id and not old_form:
            continue
        new = dataclasses.replace(entry, target_id=lt.id, ref=lt.source,
                                  id=entry_id(lt.id, entry.verdict, entry.case))
        try:  # (a link, FIFO or huge file as its inputs: never followed or read whole)
            blob = _stored_bytes(entry)
        except CorpusError as e:
            out.append(f"left as it is: {e}")
            continue
        folder = os.path.join(corpus_folder(corpus_dir), target_dirname(lt.id))
        os.makedirs(folder, exist_ok=True)
        with _locked(folder, time.monotonic() + LOCK_WAIT):
            _write_atomic(os.path.join(folder, f"{new.id}.safetensors"), blob)
            json_path = os.path.join(folder, f"{new.id}.json")
            _write_atomic(json_path, (dumps(new.to_json()) + "\n").encode())
            _fsync_dir(folder)
        back = load(json_path)
        check_storages(back)
        if os.path.abspath(json_path) != entry.path:
            remove_entry(entry)
        out.append(f"upgraded: {path} -> {json_path}")
    return out
