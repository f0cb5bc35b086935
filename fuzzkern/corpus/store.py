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

import contextlib
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
from fuzzkern.errors import CaseError, CorpusError, FuzzkernError
from fuzzkern.judge.outcome import Outcome

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from fuzzkern.execution.pool import WorkerPool
    from fuzzkern.target.declare import Target

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
    #: the canonical ref that loaded the target when the entry was saved
    ref: str
    #: the same ref with its file relative to the corpus's parent folder (None for module refs)
    ref_relative: str | None
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
    def root(self) -> str | None:
        """The corpus folder's parent (what relative paths are relative to)."""
        if self.path is None:
            return None
        return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(self.path))))

    def resolve_path(self, absolute: str | None, relative: str | None) -> str | None:
        """A stored file location: the relative one when it exists under :attr:`root` (a
        checkout moved elsewhere), else the absolute one."""
        if relative and self.root:
            candidate = os.path.join(self.root, relative)
            if os.path.exists(candidate):
                return os.path.abspath(candidate)
        return absolute

    def resolved_ref(self) -> str:
        """The ref to replay: through the relative file path when that file exists."""
        if self.ref_relative and "::" in self.ref_relative:
            rel, _, name = self.ref_relative.partition("::")
            path = self.resolve_path(None, rel)
            if path:
                return f"{path}::{name}"
        return self.ref

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
            "target": {"id": self.target_id, "ref": self.ref, "ref_relative": self.ref_relative,
                       **self.target},
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
        d = decode_document(d)
        target = dict(d["target"])
        case = Case.from_json(d["case"])
        outcome = Outcome.from_json(d["outcome"])
        entry = Entry(
            id=str(d["id"]),
            target_id=str(target.pop("id")),
            ref=str(target.pop("ref")),
            ref_relative=target.pop("ref_relative", None),
            verdict=str(d["verdict"]),
            message=str(d.get("message", "")),
            case=case,
            outcome=outcome,
            modes=tuple(d.get("modes", ())),
            explanations=[str(x) for x in d.get("explanations", [])],
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
    return entry


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


def load(path: str | os.PathLike[str]) -> Entry:
    """Load the entry at ``path`` (its JSON file). Raises :class:`CorpusError` naming the file
    and why: unreadable, not a regular file, past the size limit, truncated or malformed JSON,
    a foreign file, a schema too new, numbers fuzzkern cannot use (:mod:`.limits`)."""
    path = os.fspath(path)
    caps = limits.current()
    limits.check_folder(path)
    raw = limits.read_regular(path, caps.entry_bytes, "the entry", "entry_bytes")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
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
        header = json.loads(fh.read(n).decode("utf-8"), parse_constant=_no_constant)
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


def check_storages(entry: Entry) -> None:
    """Raise :class:`CorpusError` unless the entry's .safetensors file is a regular file no
    bigger than the entry declares and holds, for every tensor input, a storage of the
    recorded size whose sha256 matches the JSON (read in pieces: never the whole file)."""
    from fuzzkern.case.model import torch_dtype

    path = entry.storages_path
    if path is None:
        raise CorpusError(f"entry {entry.id} has no file")
    declared = {name: tc.storage_size * torch_dtype(tc.dtype).itemsize
                for name, tc in entry.case.tensors.items()}
    cap = 8 + limits.HEADER_BYTES + sum(declared.values())
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


def _relative(path: str | None, root: str) -> str | None:
    if not path:
        return None
    rel = os.path.relpath(os.path.abspath(path), root)
    return None if rel.startswith("..") or os.path.isabs(rel) else rel.replace(os.sep, "/")


def _locate(fn: Any, root: str) -> dict[str, Any] | None:
    """Where a module-level function lives, for scripts that import it without fuzzkern."""
    import inspect

    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    try:
        file: str | None = inspect.getsourcefile(fn)
    except TypeError:
        file = None
    return {"module": module, "qualname": qualname,
            "file": os.path.abspath(file) if file else None, "file_relative": _relative(file, root)}


def _autotuner_locations(target: Target, case: Case, root: str,
                         outcome: Outcome | None = None) -> list[dict[str, Any]]:
    """For each forced autotune config: where the Autotuner object lives and the config. A
    kernel the launcher's code does not name (reached at run time: a library's launch
    wrapper) has only its index, its config count from the outcome's ``config_counts`` and
    ``"reached": "at run time"``; it is forced by name when the case runs again."""
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
            out.append(loc)
            continue
        loc["count"] = len(at.configs)
        try:
            loc["config"] = config_description(at, index)
        except IndexError:
            pass
        fn: Any = at
        for _ in range(16):
            if not hasattr(fn, "fn"):
                break
            fn = fn.fn
        glb = getattr(fn, "__globals__", {})
        attr = next((k for k, v in glb.items() if _wraps(v, at)), None)
        file = glb.get("__file__")
        loc.update(module=glb.get("__name__"), attr=attr,
                   file=os.path.abspath(file) if file else None,
                   file_relative=_relative(file, root), name=kernel_name(at))
        out.append(loc)
    return out


def _run_time_count(outcome: Outcome | None, kernel: str) -> int | None:
    """How many configs ``kernel`` has, as a mode of ``outcome`` reported it."""
    for m in (outcome.modes.values() if outcome is not None else ()):
        n = (m.detail.get("config_counts") or {}).get(kernel)
        if isinstance(n, int):
            return n
    return None


def _wraps(v: Any, at: Any) -> bool:
    for _ in range(16):
        if v is at:
            return True
        if not hasattr(v, "fn"):
            return False
        v = v.fn
    return False


def target_info(target: Target, case: Case, root: str,
                outcome: Outcome | None = None) -> dict[str, Any]:
    """What a standalone script needs to know about the target besides the case."""
    t = target
    return {
        "launcher": _locate(t.launcher, root),
        "reference": _locate(t.reference, root),
        "autotuners": _autotuner_locations(t, case, root, outcome),
        "inplace": list(t.inplace_names),
        "clobbers": list(t.clobber_names),
        "reduction": t.reduction,
        "upcast": t.upcast,
        "timeout": t.timeout,
        "tolerance": {"rtol": t.tolerance.rtol, "atol": t.tolerance.atol,
                      "equal_nan": t.tolerance.equal_nan},
        "inputs": list(t.inputs.named),
    }


def _ref_relative(ref: str, root: str) -> str | None:
    if "::" not in ref:
        return None
    path, _, name = ref.partition("::")
    rel = _relative(path, root)
    return f"{rel}::{name}" if rel else None


#: worker options stored with an entry because replaying it needs them
_REPLAY_OPTIONS = ("repeat_compiled", "checks")


#: seconds a save waits at most for another process's lock on a target folder
LOCK_WAIT = 30.0


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
    """Save a failure as an entry of ``corpus_dir``; returns the path of its JSON file.

    ``run_options`` are the worker options the failure was found with; those a replay needs to
    reproduce it (``repeat_compiled`` for nondeterminism, ``checks``) are stored.

    ``storages`` are the inputs' storages as 1-D tensors (by default: materialized from the
    case). An entry with the same id that loads and checks out is kept as it is (the same
    failure found twice is one entry; its first finding is the record). Safe to call from
    several processes at once: each file appears complete or not at all.

    The target folder's lock is waited for until ``lock_until`` (a ``time.monotonic()``
    instant, e.g. the end of ``--budget``) and at most :data:`LOCK_WAIT` seconds; when another
    process holds it longer (one stopped while saving), the entry is written without it, not
    checked against the folder's other entries, and a warning is appended to ``problems``
    (or issued as a :class:`RuntimeWarning`): never a hang, never a lost finding.
    """
    corpus_dir = os.path.abspath(os.fspath(corpus_dir))
    eid = entry_id(target_id, outcome.verdict, case)
    folder = os.path.join(corpus_dir, target_dirname(target_id))
    json_path = os.path.join(folder, f"{eid}.json")
    if os.path.exists(json_path):
        try:
            existing = load(json_path)
            check_storages(existing)
            return json_path
        except CorpusError:
            pass  # a damaged entry of the same failure: write it again
    entry, blob = _new_entry(eid, os.path.dirname(corpus_dir), target_id, ref, case, outcome,
                             storages, target, modes=modes, explanations=explanations,
                             shrunk=shrunk, flaky=flaky, debug=debug, run_options=run_options)
    os.makedirs(folder, exist_ok=True)
    until = time.monotonic() + LOCK_WAIT
    if lock_until is not None:
        until = min(until, lock_until)
    waited = time.monotonic()
    with _locked(folder, until) as locked:
        if not locked:
            warning = (f"the corpus folder {folder} stayed locked by another process for "
                       f"{time.monotonic() - waited:.0f} s; saved {json_path} without checking "
                       "it against the folder's other entries")
            if problems is None:
                warnings.warn(warning, RuntimeWarning, stacklevel=2)
            else:
                problems.append(warning)
        path = _write_entry(folder, entry, blob, checked=locked)
    _remove_stale_temporaries(folder)
    return path


def _new_entry(eid: str, root: str, target_id: str, ref: str, case: Case, outcome: Outcome,
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
        id=eid, target_id=target_id, ref=ref, ref_relative=_ref_relative(ref, root),
        verdict=outcome.verdict, message=outcome.message, case=case, outcome=outcome,
        modes=tuple(modes), explanations=list(explanations), inputs=inputs,
        environment=environment(outcome),
        target=target_info(target, case, root, outcome) if target is not None else {},
        shrunk=shrunk, flaky=flaky, options={
            "debug": bool(debug),
            **{k: v for k, v in (run_options or {}).items() if k in _REPLAY_OPTIONS},
        },
    )
    blob = safetensors.torch.save(
        flat, metadata={"format": FORMAT, "schema_version": str(SCHEMA_VERSION), "entry": eid}
    )
    return entry, blob


def _write_entry(folder: str, entry: Entry, blob: bytes, *, checked: bool) -> str:
    """Write ``entry`` into ``folder`` (inputs first, JSON last); with ``checked`` (the
    folder's lock is held), against the folder's other entries of the same failure: several
    processes finding one failure write one entry, an unshrunk case yields to an entry of the
    same failure (target and verdict family) that is shrunk or no larger, and a shrunk one
    replaces the unshrunk entries of its failure."""
    json_path = os.path.join(folder, f"{entry.id}.json")
    same = _same_failure(folder, entry.target_id, entry.verdict, exclude=json_path) \
        if checked else []
    size = _case_bytes(entry.case)
    if not entry.shrunk:
        for other in same:
            if other.shrunk or _case_bytes(other.case) <= size:
                assert other.path is not None
                return other.path
    _write_atomic(os.path.join(folder, f"{entry.id}.safetensors"), blob)
    _write_atomic(json_path, (dumps(entry.to_json()) + "\n").encode())
    for other in same:
        if not other.shrunk and (entry.shrunk or _case_bytes(other.case) > size):
            _remove_entry(other)
    _fsync_dir(folder)
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


def _case_bytes(case: Case) -> int:
    """How big a case's inputs are (elements weighted by their dtype's width)."""
    import torch

    return sum(tc.storage_size * getattr(torch, tc.dtype, torch.float32).itemsize
               for tc in case.tensors.values())


def _same_failure(folder: str, target_id: str, verdict: str, exclude: str) -> list[Entry]:
    """The entries in ``folder`` of ``target_id`` whose verdict is of ``verdict``'s family."""
    from fuzzkern.judge.verdict import verdict_family

    family = verdict_family(verdict)
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or not name.endswith(".json") or path == exclude:
            continue
        try:
            entry = load(path)
        except CorpusError:
            continue
        if entry.target_id == target_id and verdict_family(entry.verdict) == family:
            out.append(entry)
    return out


def _remove_entry(entry: Entry) -> None:
    """Delete an entry superseded by a better one (JSON first: never a JSON without inputs)."""
    for path in (entry.path, entry.storages_path):
        if path:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


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


def _folders(corpus_dir: str, target_id: str | None) -> list[str]:
    """The folders :func:`scan` reads: the target's, or every folder under ``corpus_dir``
    but hidden ones (``.git``, ``.hypothesis``) and links (never followed)."""
    if target_id is not None:
        return [os.path.join(corpus_dir, target_dirname(target_id))]
    out = []
    for folder, dirs, _files in os.walk(corpus_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out.append(folder)
    return sorted(out)


def _scan_folder(folder: str, top: bool, target_id: str | None
                 ) -> list[tuple[str, Entry | CorpusError]]:
    out: list[tuple[str, Entry | CorpusError]] = []
    with os.scandir(folder) as it:
        items = sorted(it, key=lambda d: d.name)
    for item in items:
        path, name = os.path.join(folder, item.name), item.name
        if name.startswith(".") or name in _QUIET:
            continue
        if item.is_symlink():  # (an entry's .safetensors link: its replay says so)
            if name.endswith(".json") or item.is_dir() or not (
                    top or name.endswith(".safetensors")):
                dangling = "" if os.path.exists(path) else " (dangling)"
                out.append((path, CorpusError(f"{path}: refused: a symbolic link{dangling} "
                                              "(corpus files and folders must not be links)")))
            continue
        if item.is_dir() or name.endswith(".safetensors"):
            continue
        if not item.is_file():
            out.append((path, CorpusError(f"{path}: refused: not a regular file (a device, "
                                          "FIFO or socket)")))
        elif not name.endswith(".json"):
            if not top:
                out.append((path, CorpusError(f"{path}: not a corpus file (entries are "
                                              "<id>.json with <id>.safetensors)")))
        else:
            try:
                entry = load(path)
            except CorpusError as e:
                out.append((path, e))
                continue
            if target_id is not None and entry.target_id != target_id:
                continue  # another target whose id maps to the same folder name
            out.append((path, entry))
    return out


def scan(corpus_dir: str | os.PathLike[str], target_id: str | None = None
         ) -> list[tuple[str, Entry | CorpusError]]:
    """Every entry under ``corpus_dir`` (or of ``target_id`` only), sorted by path, each as
    ``(path, Entry)`` or, for a file that is malformed, truncated, foreign, too new, a link
    (dangling or not) or not a regular file, ``(path, CorpusError)``. Hidden files (temporary
    files of writers) and hidden folders are skipped; a ``.safetensors`` file is part of its
    entry. ``corpus_dir`` may also be a target folder. Target folders are swept of the
    temporary files killed writers left (:func:`_remove_stale_temporaries`)."""
    corpus_dir = os.fspath(corpus_dir)
    if not os.path.isdir(corpus_dir):
        return []
    out: list[tuple[str, Entry | CorpusError]] = []
    for folder in _folders(corpus_dir, target_id):
        if os.path.islink(folder) and target_id is not None:
            out.append((folder, CorpusError(f"{folder}: refused: the target's corpus folder is "
                                            "a symbolic link (corpus folders must not be links)")))
            continue
        if not os.path.isdir(folder):
            continue
        _remove_stale_temporaries(folder)
        top = os.path.abspath(folder) == os.path.abspath(corpus_dir) and target_id is None
        out += _scan_folder(folder, top, target_id)
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


#: top-level modules an entry may name without living under the project root: fuzzkern itself
#: (built-in targets) and the libraries references are commonly taken from (torch.add)
TRUSTED_MODULES = frozenset({"fuzzkern", "torch", "triton", "numpy", "math", "operator"})


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _module_outside(name: str, root: str, file: str | None = None) -> bool:
    """Whether importing module ``name`` runs code from outside ``root`` (and fuzzkern's
    trusted libraries). Only the top-level package is located: finding it runs none of it.

    ``file`` is where the entry says the module lives. The module is looked up first in the
    folders from that file's up to ``root`` (where pytest, a ``conftest.py`` or the user put
    it on ``sys.path`` when the entry was written; a reproducer puts the file's folder there
    too), then on this process's ``sys.path``. A module found nowhere but whose file lies
    under ``root`` is loaded from that file: not outside."""
    import importlib.machinery
    import importlib.util

    top = name.split(".")[0]
    if top in TRUSTED_MODULES:
        return False
    if not top.isidentifier():
        return True
    spec = None
    if file and _under(file, root):
        spec = importlib.machinery.PathFinder.find_spec(top, _folders_up(file, root))
    if spec is None:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return True
    if spec is None:
        return not (file and _under(file, root))
    places = list(spec.submodule_search_locations or ()) or ([spec.origin] if spec.origin else [])
    return not places or not all(_under(p, root) for p in places)


def _folders_up(file: str, root: str) -> list[str]:
    """The folders from ``file``'s up to ``root``, nearest first."""
    out = []
    folder = os.path.dirname(os.path.realpath(file))
    top = os.path.realpath(root)
    while _under(folder, top):
        out.append(folder)
        if folder == top:
            break
        folder = os.path.dirname(folder)
    return out


def outside_root(entry: Entry, ref: str | None = None, *, locators: bool = True) -> list[str]:
    """The code ``entry`` would import (its target file or module, its launcher's, reference's
    and autotuners' files and modules) that lies outside the entry's project root (the corpus
    folder's parent): an entry may come from someone else's pull request, so replaying or
    reproducing it must not import files it names elsewhere. ``ref`` (given by the user, e.g.
    ``--ref``) replaces the entry's own target ref and is trusted. ``locators=False``: only the
    target ref (what a replay imports; a reproducer imports the locators too)."""
    root = entry.root
    if root is None:
        return []
    out: list[str] = []

    def check_ref(r: str) -> None:
        if "::" in r:
            path = r.partition("::")[0]
            if not _under(path, root):
                out.append(f"target file {path}")
        elif _module_outside(r.partition(":")[0], root):
            out.append(f"target module {r.partition(':')[0]}")

    if ref is None:
        check_ref(entry.resolved_ref())
    locs = [entry.target.get("launcher"), entry.target.get("reference"),
            *list(entry.target.get("autotuners") or ())] if locators else []
    for loc in locs:
        if not isinstance(loc, dict):
            continue
        file = entry.resolve_path(loc.get("file"), loc.get("file_relative"))
        if file and not _under(str(file), root):
            out.append(f"file {file}")
        module = loc.get("module")
        if isinstance(module, str) and module and not module.startswith("fuzzkern_target_") \
                and module != "__main__" and _module_outside(module, root, file):
            out.append(f"module {module}")
    return list(dict.fromkeys(out))


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
    """The modes to replay ``entry`` in (the wanted ones the target has and this machine
    can run: an entry only narrows them), and those skipped here, in words."""
    wanted = tuple(modes) if modes is not None else (entry.modes or ("interpret",))
    run_modes = [m for m in wanted if m in target.modes]
    skipped = []
    if "compiled" in run_modes and not _cuda_available():
        run_modes.remove("compiled")
        skipped.append("compiled (no CUDA GPU here)")
    return run_modes, skipped


def replay(entry: Entry, pool: WorkerPool, *, ref: str | None = None,
           modes: Iterable[str] | None = None, timeout: float | None = None,
           debug: bool = False, allow_outside_root: bool = True,
           checks: Mapping[str, bool] | None = None) -> ReplayResult:
    """Run ``entry``'s case again, from its stored input bytes, in a worker of ``pool``.

    ``ref`` points the entry at another target (e.g. the fixed twin of the one that failed);
    by default it replays against the target it was saved from. ``modes`` defaults to the
    entry's modes, less those this machine cannot run. Never raises for a kernel's behaviour
    or a damaged entry: those are ``cannot-replay`` results with a reason.
    ``allow_outside_root=False`` (``fuzzkern replay``) refuses an entry whose own target lies
    outside its project root (:func:`outside_root`) without importing it. The hygiene checks
    and tolerance are the target's, with ``checks`` (the run's ``--no-check``) on top, never
    the entry's (:func:`recorded_differences`, shown in the reason); the entry may ask for
    more: ``debug`` launches, repeated compiled runs.
    """
    from fuzzkern.target import loader

    use_ref = ref or entry.resolved_ref()

    def cannot(reason: str, here: bool = False) -> ReplayResult:
        return ReplayResult(CANNOT_REPLAY, reason, None, entry, use_ref, here)

    if not allow_outside_root and ref is None:
        outside = outside_root(entry, ref, locators=False)
        if outside:
            return cannot(f"refused: it names code outside the project root {entry.root}: "
                          f"{', '.join(outside)} (pass --allow-outside-root if you trust it)")

    try:
        loaded = loader.load(use_ref)
    except FuzzkernError as e:
        return cannot(f"target missing: {e}")
    if len(loaded) != 1:
        return cannot(f"target missing: {use_ref!r} names {len(loaded)} targets, not one")
    lt = loaded[0]
    problems = signature_problems(lt.target, entry.case)
    if problems:
        return cannot("signature changed: " + "; ".join(problems))
    try:
        check_storages(entry)
    except CorpusError as e:
        return cannot(str(e))
    run_modes, skipped = _run_modes(entry, lt.target, modes)
    if not run_modes:
        return cannot("none of the modes " + ", ".join(modes or entry.modes or ("interpret",))
                      + " can run here" + (f": {', '.join(skipped)}" if skipped else ""),
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
    notes = [f"skipped {', '.join(skipped)}"] if skipped else []
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
