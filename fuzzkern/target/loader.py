"""Finding targets: ``path.py``, ``path.py::name``, ``package.module`` or ``package.module:name``.

Every module-level :class:`fuzzkern.Target` of a file or module is a target. Each loaded target
carries a canonical *ref* (an absolute ``path.py::name`` or ``module:name``) that loads exactly
it again, which is how worker processes find the same target as the parent.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from types import ModuleType

from fuzzkern.errors import TargetError
from fuzzkern.target.declare import Target

BUILTIN_MODULE = "fuzzkern.targets.builtin"


@dataclass(frozen=True)
class LoadedTarget:
    ref: str
    target: Target

    @property
    def id(self) -> str:
        return self.target.id


_file_modules: dict[str, ModuleType] = {}


def _import_file(path: str) -> ModuleType:
    path = os.path.abspath(path)
    if path in _file_modules:
        return _file_modules[path]
    if not os.path.isfile(path):
        raise TargetError(f"target file {path!r} does not exist")
    stem = os.path.splitext(os.path.basename(path))[0]
    # A unique module name keeps two `kernels.py` in different folders apart; the file's folder
    # goes on sys.path so it can import its siblings, as pytest's rootdir-relative imports do.
    name = f"fuzzkern_target_{stem}_{hashlib.sha1(path.encode()).hexdigest()[:8]}"
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import target file {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise TargetError(f"importing {path!r} failed: {type(e).__name__}: {e}") from e
    except SystemExit as e:  # sys.exit() at import must not end fuzzkern with its status
        del sys.modules[name]
        raise TargetError(f"importing {path!r} failed: it called sys.exit({e.code!r}) at "
                          "import") from None
    _file_modules[path] = module
    return module


def _import_module(name: str) -> ModuleType:
    # `python -m` semantics: a module in the current folder is found (the `fuzzkern` console
    # script's sys.path[0] is its own bin folder, not the current folder).
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise TargetError(f"cannot import module {name!r}: {e}") from e
    except Exception as e:
        raise TargetError(f"importing module {name!r} failed: {type(e).__name__}: {e}") from e
    except SystemExit as e:  # sys.exit() at import must not end fuzzkern with its status
        raise TargetError(f"importing module {name!r} failed: it called sys.exit({e.code!r}) "
                          "at import") from None


def _targets_in(module: ModuleType, prefix: str, default_name: str) -> list[LoadedTarget]:
    found = []
    for attr, value in vars(module).items():
        if isinstance(value, Target):
            t = value
            if t.name is None:
                # Name unnamed targets after the variable they are bound to: stable across runs
                # and what the user sees in their file.
                object.__setattr__(t, "name", f"{default_name}::{attr}")
            found.append(LoadedTarget(f"{prefix}{attr}", t))
    return found


def load(spec: str) -> list[LoadedTarget]:
    """Load the targets ``spec`` names; raises :class:`TargetError` with one clear message."""
    spec = spec.strip()
    if not spec:
        raise TargetError("empty target spec; expected path.py, path.py::name or module[:name]")
    if ".py" in spec and (spec.endswith(".py") or "::" in spec):
        path, _, name = spec.partition("::")
        if not path.endswith(".py"):
            raise TargetError(f"bad target spec {spec!r}: expected path.py::name")
        module = _import_file(path)
        prefix = f"{os.path.abspath(path)}::"
        default = os.path.splitext(os.path.basename(path))[0]
    else:
        modname, _, name = spec.partition(":")
        module = _import_module(modname)
        prefix = f"{modname}:"
        default = modname
    targets = _targets_in(module, prefix, default)
    if name:
        return _named(spec, module, name, prefix, targets)
    if not targets:
        raise TargetError(f"{spec!r} defines no module-level fuzzkern.Target")
    return targets


def _named(spec: str, module: ModuleType, name: str, prefix: str,
           targets: list[LoadedTarget]) -> list[LoadedTarget]:
    """The target ``::NAME`` (or ``:NAME``) names: the module-level variable, else the target
    whose ``name=`` it is. A name that is neither is an error saying what the file holds and
    the nearest names ("did you mean ...")."""
    import difflib

    chosen = [t for t in targets if t.ref == prefix + name]
    if not chosen:
        chosen = [t for t in targets if t.target.name == name]
    if chosen:
        return chosen[:1]
    value = getattr(module, name, None)
    if value is not None:
        raise TargetError(f"{spec!r}: {name!r} is a {type(value).__name__}, not a "
                          "fuzzkern.Target")
    where = spec.rpartition("::")[0] if "::" in spec else spec.rpartition(":")[0]
    names = {t.ref[len(prefix):]: t.target.name for t in targets}
    candidates = list(names) + [n for n in names.values() if n and "::" not in n]
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    listed = ", ".join(f"{attr} (name={n!r})" if n and "::" not in n else attr
                       for attr, n in names.items())
    raise TargetError(
        f"{where} has no target {name!r}"
        + (f"; did you mean {' or '.join(map(repr, close))}?" if close else ".")
        + (f" Its targets: {listed}" if listed else " It defines no module-level "
           "fuzzkern.Target")
        + " (::NAME is the variable a Target is bound to, or its name=)")


def load_all(specs: list[str]) -> list[LoadedTarget]:
    out: list[LoadedTarget] = []
    seen = set()
    for spec in specs or [BUILTIN_MODULE]:
        for t in load(spec):
            if t.ref not in seen:
                seen.add(t.ref)
                out.append(t)
    _check_unique_ids(out)
    return out


def load_ref(ref: str) -> Target:
    """The one target a canonical ref names (used by workers)."""
    targets = load(ref)
    if len(targets) != 1:
        raise TargetError(f"ref {ref!r} names {len(targets)} targets")
    return targets[0].target


#: folders a folder target never looks into (besides hidden ones)
_SKIP_DIRS = ("__pycache__", "node_modules", "site-packages")


def target_files(folder: str) -> list[str]:
    """The ``.py`` files under ``folder`` that may define targets, sorted: every file whose text
    mentions ``Target`` (files that cannot are never imported), skipping hidden folders,
    ``__pycache__``, ``.venv*``/``venv*`` and ``node_modules``."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not d.startswith("venv"))
        for f in sorted(files):
            if not f.endswith(".py") or f.startswith("."):
                continue
            path = os.path.join(root, f)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if "Target" not in fh.read():
                        continue
            except OSError:
                continue
            found.append(path)
    return found


def expand(specs: list[str]) -> list[LoadedTarget]:
    """:func:`load_all`, plus folders: every module-level Target of the ``.py`` files under a
    folder (:func:`target_files`; files that define none are skipped). A folder with no target
    at all is an error, as is a file under it that fails to import."""
    out: list[LoadedTarget] = []
    seen: set[str] = set()
    for spec in specs or [BUILTIN_MODULE]:
        if os.path.isdir(spec.strip()):
            loaded = []
            for path in target_files(spec.strip()):
                try:
                    loaded += load(path)
                except TargetError as e:
                    if "defines no module-level" in str(e):
                        continue
                    raise
            if not loaded:
                raise TargetError(f"folder {spec!r} has no .py file defining a module-level "
                                  "fuzzkern.Target")
        else:
            loaded = load(spec)
        for t in loaded:
            if t.ref not in seen:
                seen.add(t.ref)
                out.append(t)
    _check_unique_ids(out)
    return out


def _check_unique_ids(loaded: list[LoadedTarget]) -> None:
    """Two targets with one id would share corpus entries and database keys, and one entry
    would show as both still failing and now passing: refuse them up front."""
    by_id: dict[str, str] = {}
    for t in loaded:
        other = by_id.setdefault(t.id, t.ref)
        if other != t.ref:
            raise TargetError(f"two targets are named {t.id!r} ({other} and {t.ref}); give "
                              "one of them another name= (names key the corpus and database)")
