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
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fuzzkern.case.codec import decode_document, encode_document
from fuzzkern.case.model import Case
from fuzzkern.case.storage import storages_of
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
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CorpusError(f"{where}: malformed entry: {type(e).__name__}: {e}") from e
    missing = sorted(set(case.tensors) - set(entry.inputs))
    if missing:
        raise CorpusError(f"{where}: malformed entry: no checksum for input(s) {missing}")
    return entry


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


def load(path: str | os.PathLike[str]) -> Entry:
    """Load the entry at ``path`` (its JSON file). Raises :class:`CorpusError` naming the file
    and why: unreadable, truncated or malformed JSON, a foreign file, a schema too new."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise CorpusError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CorpusError(f"{path}: not a fuzzkern corpus entry (not UTF-8 text)") from e
    except json.JSONDecodeError as e:
        what = "truncated" if _unclosed(raw.decode("utf-8")) else "malformed"
        raise CorpusError(f"{path}: {what} JSON ({e.msg} at line {e.lineno} column {e.colno})"
                          ) from e
    entry = _from_json(data, path)
    entry.path = os.path.abspath(path)
    return entry


# --------------------------------------------------------------------------------------------
# Input storages: the exact bytes


def _sha256(t: torch.Tensor) -> str:
    import torch

    raw = t.contiguous().view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return hashlib.sha256(raw).hexdigest()


def _safetensors_tensors(path: str) -> dict[str, tuple[str, list[int], bytes]]:
    """``name -> (dtype code, shape, raw bytes)`` of a .safetensors file, read without torch.

    The format: an 8-byte little-endian header length, a JSON header, then the data."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError as e:
        raise CorpusError(f"{path}: the stored inputs are missing") from e
    except OSError as e:
        raise CorpusError(f"{path}: cannot read the stored inputs: {e.strerror or e}") from e
    if len(data) < 8:
        raise CorpusError(f"{path}: truncated safetensors file")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise CorpusError(f"{path}: truncated safetensors file (header)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorpusError(f"{path}: not a safetensors file ({e})") from e
    if not isinstance(header, dict):
        raise CorpusError(f"{path}: not a safetensors file")
    base = 8 + n
    out: dict[str, tuple[str, list[int], bytes]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = (int(x) for x in info["data_offsets"])
            code, shape = str(info["dtype"]), [int(s) for s in info["shape"]]
        except (KeyError, TypeError, ValueError) as e:
            raise CorpusError(f"{path}: malformed safetensors header for {name!r}") from e
        if base + end > len(data) or start > end:
            raise CorpusError(f"{path}: truncated safetensors file (tensor {name!r})")
        out[name] = (code, shape, data[base + start:base + end])
    return out


def check_storages(entry: Entry) -> None:
    """Raise :class:`CorpusError` unless the entry's .safetensors file holds, for every tensor
    input, a storage of the recorded size whose sha256 matches the JSON."""
    path = entry.storages_path
    if path is None:
        raise CorpusError(f"entry {entry.id} has no file")
    stored = _safetensors_tensors(path)
    for name, tc in entry.case.tensors.items():
        if name not in stored:
            raise CorpusError(f"{path}: no stored storage for input {name!r}")
        _code, shape, raw = stored[name]
        info = entry.inputs.get(name, {})
        if shape != [tc.storage_size] or int(info.get("elements", -1)) != tc.storage_size:
            raise CorpusError(
                f"{path}: input {name!r} has a stored storage of shape {shape}, but the case "
                f"needs {tc.storage_size} elements"
            )
        if hashlib.sha256(raw).hexdigest() != info.get("sha256"):
            raise CorpusError(f"{path}: checksum mismatch for input {name!r}: the stored bytes "
                              "are not the bytes the entry was saved with")


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


def _autotuner_locations(target: Target, case: Case, root: str) -> list[dict[str, Any]]:
    """For each forced autotune config: where the Autotuner object lives and the config."""
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


def _wraps(v: Any, at: Any) -> bool:
    for _ in range(16):
        if v is at:
            return True
        if not hasattr(v, "fn"):
            return False
        v = v.fn
    return False


def target_info(target: Target, case: Case, root: str) -> dict[str, Any]:
    """What a standalone script needs to know about the target besides the case."""
    t = target
    return {
        "launcher": _locate(t.launcher, root),
        "reference": _locate(t.reference, root),
        "autotuners": _autotuner_locations(t, case, root),
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
) -> str:
    """Save a failure as an entry of ``corpus_dir``; returns the path of its JSON file.

    ``run_options`` are the worker options the failure was found with; those a replay needs to
    reproduce it (``repeat_compiled`` for nondeterminism, ``checks``) are stored.

    ``storages`` are the inputs' storages as 1-D tensors (by default: materialized from the
    case). An entry with the same id that loads and checks out is kept as it is (the same
    failure found twice is one entry; its first finding is the record). Safe to call from
    several processes at once: each file appears complete or not at all.
    """
    import safetensors.torch

    corpus_dir = os.path.abspath(os.fspath(corpus_dir))
    root = os.path.dirname(corpus_dir)
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
        target=target_info(target, case, root) if target is not None else {},
        shrunk=shrunk, flaky=flaky, options={
            "debug": bool(debug),
            **{k: v for k, v in (run_options or {}).items() if k in _REPLAY_OPTIONS},
        },
    )
    os.makedirs(folder, exist_ok=True)
    with _locked(folder):
        # Several processes finding one failure write one entry: an unshrunk case yields to an
        # entry of the same failure (target and verdict family) that is shrunk or no larger,
        # and a shrunk one replaces the unshrunk entries of its failure.
        same = _same_failure(folder, target_id, outcome.verdict, exclude=json_path)
        size = _case_bytes(case)
        if not shrunk:
            for other in same:
                if other.shrunk or _case_bytes(other.case) <= size:
                    assert other.path is not None
                    return other.path
        blob = safetensors.torch.save(
            flat, metadata={"format": FORMAT, "schema_version": str(SCHEMA_VERSION),
                            "entry": eid}
        )
        _write_atomic(os.path.join(folder, f"{eid}.safetensors"), blob)
        text = dumps(entry.to_json()) + "\n"
        _write_atomic(json_path, text.encode())
        for other in same:
            if not other.shrunk and (shrunk or _case_bytes(other.case) > size):
                _remove_entry(other)
        _fsync_dir(folder)
    _remove_stale_temporaries(folder)
    return json_path


@contextlib.contextmanager
def _locked(folder: str) -> Iterator[None]:
    """An exclusive lock on a target folder (``flock`` on the folder itself: no lock file
    to commit), held while an entry is checked against its neighbours and written."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
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


def _writer_gone(name: str) -> bool:
    """Whether the process that wrote temporary file ``name`` (``.<file>.<pid>.<random>.tmp``)
    no longer runs on this machine."""
    parts = name.split(".")
    if len(parts) < 4 or not parts[-3].isdigit():
        return False
    try:
        os.kill(int(parts[-3]), 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return False


def _remove_stale_temporaries(folder: str) -> None:
    """Remove temporary files that killed writers left: those whose writer process is gone,
    and any older than :data:`STALE_SECONDS` (a writer on another machine, a reused pid)."""
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(".") and name.endswith(".tmp"):
            path = os.path.join(folder, name)
            try:
                if _writer_gone(name) or now - os.stat(path).st_mtime > STALE_SECONDS:
                    os.unlink(path)
            except OSError:
                pass  # another writer removed it first


# --------------------------------------------------------------------------------------------
# Reading a corpus


#: Files in a corpus that are not entries and not worth a word.
_QUIET = {"README", "README.md", "README.txt", ".gitkeep", ".gitattributes", ".gitignore"}


def scan(corpus_dir: str | os.PathLike[str], target_id: str | None = None
         ) -> list[tuple[str, Entry | CorpusError]]:
    """Every entry under ``corpus_dir`` (or of ``target_id`` only), sorted by path, each as
    ``(path, Entry)`` or, for a file that is malformed, truncated, foreign or too new,
    ``(path, CorpusError)``. Hidden files (temporary files of writers) are skipped; a
    ``.safetensors`` file is part of its entry. ``corpus_dir`` may also be a target folder."""
    corpus_dir = os.fspath(corpus_dir)
    if not os.path.isdir(corpus_dir):
        return []
    if target_id is not None:
        folders = [os.path.join(corpus_dir, target_dirname(target_id))]
    else:
        folders = [d for d, _, _ in os.walk(corpus_dir)]
    out: list[tuple[str, Entry | CorpusError]] = []
    for folder in sorted(folders):
        if not os.path.isdir(folder):
            continue
        _remove_stale_temporaries(folder)
        top = os.path.abspath(folder) == os.path.abspath(corpus_dir) and target_id is None
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.startswith(".") or name in _QUIET or not os.path.isfile(path):
                continue
            if name.endswith(".safetensors"):
                continue
            if not name.endswith(".json"):
                if not top:
                    out.append((path, CorpusError(f"{path}: not a corpus file (entries are "
                                                  "<id>.json with <id>.safetensors)")))
                continue
            try:
                entry = load(path)
            except CorpusError as e:
                out.append((path, e))
                continue
            if target_id is not None and entry.target_id != target_id:
                continue  # another target whose id maps to the same folder name
            out.append((path, entry))
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
            if kernel not in counts:
                problems.append(f"the launcher no longer uses autotuned kernel {kernel!r}")
            elif not 0 <= index < counts[kernel]:
                problems.append(f"autotuned kernel {kernel!r} has {counts[kernel]} config(s), "
                                f"not config {index}")
    return problems


#: top-level modules an entry may name without living under the project root: fuzzkern itself
#: (built-in targets) and the libraries references are commonly taken from (torch.add)
TRUSTED_MODULES = frozenset({"fuzzkern", "torch", "triton", "numpy", "math", "operator"})


def _under(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _module_outside(name: str, root: str) -> bool:
    """Whether importing module ``name`` runs code from outside ``root`` (and fuzzkern's
    trusted libraries). Only the top-level package is located: finding it runs none of it."""
    import importlib.util

    top = name.split(".")[0]
    if top in TRUSTED_MODULES:
        return False
    if not top.isidentifier():
        return True
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return True
    if spec is None:
        return True
    places = list(spec.submodule_search_locations or ()) or ([spec.origin] if spec.origin else [])
    return not places or not all(_under(p, root) for p in places)


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
                and module != "__main__" and _module_outside(module, root):
            out.append(f"module {module}")
    return list(dict.fromkeys(out))


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover
        return False


def replay(entry: Entry, pool: WorkerPool, *, ref: str | None = None,
           modes: Iterable[str] | None = None, timeout: float | None = None,
           debug: bool = False, allow_outside_root: bool = True) -> ReplayResult:
    """Run ``entry``'s case again, from its stored input bytes, in a worker of ``pool``.

    ``ref`` points the entry at another target (e.g. the fixed twin of the one that failed);
    by default it replays against the target it was saved from. ``modes`` defaults to the
    entry's modes, less those this machine cannot run. Never raises for a kernel's behaviour
    or a damaged entry: those are ``cannot-replay`` results with a reason.
    ``allow_outside_root=False`` (``fuzzkern replay``) refuses an entry whose own target lies
    outside its project root (:func:`outside_root`) without importing it.
    """
    from fuzzkern.target import loader

    use_ref = ref or entry.resolved_ref()

    def cannot(reason: str) -> ReplayResult:
        return ReplayResult(CANNOT_REPLAY, reason, None, entry, use_ref)

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
    wanted = tuple(modes) if modes is not None else (entry.modes or ("interpret",))
    run_modes = [m for m in wanted if m in lt.target.modes]
    skipped = []
    if "compiled" in run_modes and not _cuda_available():
        run_modes.remove("compiled")
        skipped.append("compiled (no CUDA GPU here)")
    if not run_modes:
        return cannot("none of the modes " + ", ".join(wanted) + " can run here"
                      + (f": {', '.join(skipped)}" if skipped else ""))
    if entry.failing_modes and not set(entry.failing_modes) & set(run_modes):
        why = f" ({', '.join(skipped)})" if skipped else ""
        return cannot(f"it failed only in {', '.join(entry.failing_modes)} mode, which is not "
                      f"run here{why}")
    options = {"modes": run_modes, "storages": entry.storages_path,
               "debug": bool(debug or entry.options.get("debug", False)),
               **{k: v for k, v in entry.options.items() if k in _REPLAY_OPTIONS}}
    outcome = pool.run(lt.ref, entry.case.to_json(), options,
                       timeout if timeout is not None else lt.target.timeout)
    if "harness" in outcome.modes:
        return ReplayResult(CANNOT_REPLAY, outcome.message, outcome, entry, lt.ref)
    note = f" (skipped {', '.join(skipped)})" if skipped else ""
    if outcome.failed:
        if outcome.verdict == entry.verdict:
            reason = f"{outcome.verdict}: {outcome.message}"
        else:
            reason = (f"verdict changed from {entry.verdict} to {outcome.verdict}: "
                      f"{outcome.message}")
        return ReplayResult(STILL_FAILING, reason + note, outcome, entry, lt.ref)
    reason = "passes" if outcome.verdict == "pass" else f"{outcome.verdict}: {outcome.message}"
    return ReplayResult(NOW_PASSING, reason + note, outcome, entry, lt.ref)
