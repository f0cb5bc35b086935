"""Finding targets: ``path.py``, ``path.py::name``, ``package.module``, ``package.module:name``
or ``package.module::name`` (the form a target's id takes).

Every module-level :class:`fuzzkern.Target` of a file or module is a target. Each loaded target
carries a canonical *ref* (an absolute ``path.py::name`` or ``module:name``) that loads exactly
it again, which is how worker processes find the same target as the parent.

A target's *id* is its ``name=``, else ``<module>::<variable>`` where ``<module>`` is the file's
dotted path from its project root (:func:`project_root`), so the pytest plugin, ``fuzzkern run
tests/test_fuzz.py`` and ``fuzzkern run tests.test_fuzz`` all name one target alike, and the id
itself loads it back (``fuzzkern run tests.test_fuzz::softmax``).

A file loaded by path runs with the project root and pytest's ``pythonpath`` folders (from
``[tool.pytest.ini_options]``) on ``sys.path``, as pytest's rootdir handling does, and with its
own folder *after* the installed modules: a target file named ``html.py`` never shadows the
standard library's ``html``. Code is only ever loaded from what the user names: the command
line, pytest's collection, or ``targets`` under ``[tool.fuzzkern]`` in pyproject.toml
(:func:`declared`); never from what a corpus entry says.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fuzzkern.errors import TargetError
from fuzzkern.target.declare import Target

BUILTIN_MODULE = "fuzzkern.targets.builtin"


@dataclass(frozen=True)
class LoadedTarget:
    ref: str
    target: Target
    #: ids this target was known by before (``stem::name``, ``module::name``): entries saved
    #: under one of them are this target's (``fuzzkern corpus upgrade`` renames them)
    aliases: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.target.id

    @property
    def source(self) -> str:
        """The target source as a user names it: the file relative to the current folder
        (absolute when outside it), or the module."""
        if "::" in self.ref:
            path = self.ref.partition("::")[0]
            rel = os.path.relpath(path)
            return path if rel.startswith("..") else rel
        return self.ref.partition(":")[0]

    def named(self, target_id: str) -> bool:
        """Whether ``target_id`` (from a corpus entry: data) names this target."""
        return target_id == self.id or target_id in self.aliases


#: files that mark a project's root folder: the nearest ancestor holding one (pytest's rootdir)
ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", ".git")


def project_root(path: str, markers: tuple[str, ...] = ROOT_MARKERS) -> str | None:
    """The nearest folder at or above ``path`` holding one of ``markers``."""
    folder = os.path.realpath(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        if any(os.path.exists(os.path.join(folder, m)) for m in markers):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _pytest_root(path: str) -> str | None:
    """The nearest folder at or above ``path`` holding pytest's configuration (pytest.ini,
    ``[tool.pytest.ini_options]`` in pyproject.toml, ``[pytest]`` in tox.ini, ``[tool:pytest]``
    in setup.cfg): pytest's rootdir, where its plugin keeps the corpus; else the nearest
    holding pyproject.toml, setup.py, setup.cfg or tox.ini."""
    folder = project_root(path, ("pytest.ini",)) or ""
    start = os.path.realpath(path)
    while start and not (folder and start == folder):
        if "ini_options" in pyproject(start).get("tool", {}).get("pytest", {}):
            return start
        for name, section in (("tox.ini", "[pytest]"), ("setup.cfg", "[tool:pytest]")):
            try:
                with open(os.path.join(start, name), encoding="utf-8", errors="replace") as fh:
                    if section in fh.read():
                        return start
            except OSError:
                pass
        parent = os.path.dirname(start)
        start = "" if parent == start else parent
    return folder or project_root(path, tuple(m for m in ROOT_MARKERS if m != ".git"))


def default_corpus(sources: tuple[str, ...] | list[str] = ()) -> str:
    """The corpus folder when none is named: ``corpus`` in the project's root as pytest finds
    its rootdir (:func:`_pytest_root`), the pytest plugin's ``<rootdir>/corpus``, wherever in
    the project a command runs; found from the current folder, else (a run from outside any
    project, whose current folder holds no ``corpus`` of its own) from the first target file
    of ``sources``; else ``corpus`` in the current folder."""
    root = _pytest_root(os.getcwd())
    files = [f for f in (s.strip().partition("::")[0] for s in sources) if f.endswith(".py")
             and os.path.isfile(f)]
    if root is None and files and not os.path.isdir("corpus"):
        root = _pytest_root(files[0])
    if root is None or root == os.path.realpath(os.getcwd()):
        return "corpus"
    return os.path.join(root, "corpus")


def pyproject(root: str | None) -> dict[str, Any]:
    """``root``'s pyproject.toml as a dict (empty when absent or unreadable)."""
    import tomllib

    if root is None:
        return {}
    try:
        with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def module_name(path: str) -> str:
    """The dotted name a target file's targets are named under: its path from its project
    root without ``.py`` (``tests/test_fuzz.py`` -> ``tests.test_fuzz``), else its stem."""
    path = os.path.realpath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    root = project_root(path)
    if root is None:
        return stem
    parts = os.path.relpath(os.path.splitext(path)[0], root).split(os.sep)
    return ".".join(parts) if all(p.isidentifier() for p in parts) else stem


def search_folders(path: str) -> list[str]:
    """The folders a target file's imports are looked up in besides the installed ones, as
    pytest puts them on ``sys.path``: pytest's ``pythonpath`` folders and the project root."""
    root = project_root(path)
    if root is None:
        return []
    ini = pyproject(root).get("tool", {}).get("pytest", {}).get("ini_options", {})
    extra = ini.get("pythonpath", [])
    extra = [extra] if isinstance(extra, str) else extra
    return [os.path.join(root, str(f)) for f in extra if isinstance(f, str)] + [root]


def _search_path(path: str) -> None:
    """Put what a target file imports within reach (:func:`search_folders`) before the
    installed packages (the checkout's own package wins over a stale install) and after the
    standard library (a project's statistics.py never replaces it); the file's own folder
    last (its siblings, never before an installed or standard-library module)."""
    site = next((i for i, p in enumerate(sys.path) if "-packages" in p), len(sys.path))
    for folder in reversed(search_folders(path)):
        if folder not in sys.path:
            sys.path.insert(site, folder)
    own = os.path.dirname(path)
    if own not in sys.path:
        sys.path.append(own)


def _hint(e: BaseException, path: str) -> str:
    """One line on what to install or which folder is missing, for a failed import."""
    if not isinstance(e, ModuleNotFoundError) or not e.name:
        return ""
    top = e.name.split(".")[0]
    root = project_root(path) or os.path.dirname(path)
    for base in (root, os.path.join(root, "src")):
        if os.path.exists(os.path.join(base, top)) or os.path.exists(
                os.path.join(base, top + ".py")):
            return (f" (hint: {top!r} is in {base}: `pip install -e {root}` or add "
                    f"pythonpath = [\"{os.path.relpath(base, root)}\"] under "
                    "[tool.pytest.ini_options] in pyproject.toml)")
    return (f" (hint: install the package that provides {top!r}, or put the folder holding "
            f"it on PYTHONPATH; the project root {root} does not hold it)")


_file_modules: dict[str, ModuleType] = {}


def _import_file(path: str) -> ModuleType:
    path = os.path.abspath(path)
    if path in _file_modules:
        return _file_modules[path]
    if not os.path.isfile(path):
        raise TargetError(f"target file {path!r} does not exist")
    stem = os.path.splitext(os.path.basename(path))[0]
    # A unique module name keeps two `kernels.py` in different folders apart, and a target
    # file named html.py from replacing the standard library's html in sys.modules.
    name = f"fuzzkern_target_{stem}_{hashlib.sha1(path.encode()).hexdigest()[:8]}"
    _search_path(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot import target file {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise TargetError(f"importing {path!r} failed: {type(e).__name__}: {e}"
                          + _hint(e, path)) from e
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
        raise TargetError(f"cannot import module {name!r}: {e}" + _hint(e, cwd)) from e
    except Exception as e:
        raise TargetError(f"importing module {name!r} failed: {type(e).__name__}: {e}") from e
    except SystemExit as e:  # sys.exit() at import must not end fuzzkern with its status
        raise TargetError(f"importing module {name!r} failed: it called sys.exit({e.code!r}) "
                          "at import") from None


def targets_in(module: ModuleType, prefix: str, default_name: str,
               old_names: tuple[str, ...] = ()) -> list[LoadedTarget]:
    """The module-level targets of ``module``, refs ``prefix + variable``; an unnamed one is
    named ``default_name::variable`` (and known by ``old_name::variable`` too)."""
    found = []
    for attr, value in vars(module).items():
        if isinstance(value, Target):
            t = value
            if t.name is None:
                # Name unnamed targets after the variable they are bound to: stable across runs
                # and what the user sees in their file.
                object.__setattr__(t, "name", f"{default_name}::{attr}")
            aliases = tuple(f"{o}::{attr}" for o in old_names
                            if t.name == f"{default_name}::{attr}" and o != default_name)
            found.append(LoadedTarget(f"{prefix}{attr}", t, aliases))
    return found


def file_targets(module: ModuleType, path: str) -> list[LoadedTarget]:
    """The targets of target file ``path`` (imported as ``module``), named as everywhere."""
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    return targets_in(module, f"{path}::", module_name(path), (stem,))


def load(spec: str) -> list[LoadedTarget]:
    """Load the targets ``spec`` names; raises :class:`TargetError` with one clear message."""
    spec = spec.strip()
    if not spec:
        raise TargetError("empty target spec; expected path.py, path.py::name or module[:name]")
    if ".py" in spec and (spec.endswith(".py") or ".py::" in spec):
        path, _, name = spec.partition("::")
        module = _import_file(path)
        targets = file_targets(module, path)
        prefix = f"{os.path.abspath(path)}::"
    else:
        modname, sep, name = spec.partition("::")
        if not sep:
            modname, _, name = spec.partition(":")
        if not all(p.isidentifier() for p in modname.split(".")):
            raise TargetError(f"bad target spec {spec!r}: expected path.py[::name] or "
                              "module[:name]")
        try:
            module = _import_module(modname)
        except TargetError:
            as_file = _module_file(spec)
            if as_file is None:
                raise
            return load(as_file)
        prefix = f"{modname}:"
        file = getattr(module, "__file__", None)
        olds = (module_name(file),) if file else ()
        targets = targets_in(module, prefix, modname, olds)
    if name:
        return _named(spec, module, name, prefix, targets)
    if not targets:
        raise TargetError(f"{spec!r} defines no module-level fuzzkern.Target")
    return targets


def _module_file(spec: str, root: str | None = None) -> str | None:
    """A module spec (``tests.test_fuzz::name``, as target ids read) that does not import,
    naming a file of the current folder's project (or of ``root``'s): the file spec that
    loads it (``<root>/tests/test_fuzz.py::name``), so an id is accepted back even where the
    folder is no package, or another ``tests`` package shadows it."""
    if ".py" in spec or "/" in spec:
        return None
    modname, sep, name = spec.partition("::")
    if not sep:
        modname, sep, name = spec.partition(":")
    parts = modname.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for base in dict.fromkeys([os.getcwd(), project_root(os.getcwd()) or os.getcwd(),
                               *([root] if root else [])]):
        path = os.path.join(base, *parts) + ".py"
        if os.path.isfile(path) and module_name(path) == modname:
            return path + (f"::{name}" if name else "")
    return None


def declared(specs: list[str] | tuple[str, ...], start: str = ".") -> tuple[
        list[LoadedTarget], list[str]]:
    """The targets of the project's declared target sources: ``specs`` (the command line), else
    ``targets`` under ``[tool.fuzzkern]`` in the pyproject.toml of ``start``'s project (paths
    relative to it). Returns the targets and, per source that failed to load, one line why.
    Raises :class:`TargetError` when no source is declared at all."""
    root = project_root(start)
    if not specs:
        listed = pyproject(root).get("tool", {}).get("fuzzkern", {}).get("targets")
        if not isinstance(listed, list) or not all(isinstance(x, str) for x in listed):
            raise TargetError(
                "no target source: name the file or module that defines the entries' targets "
                "(--target tests/test_fuzz.py), or list them under [tool.fuzzkern] targets = "
                "[...] in pyproject.toml")
        assert root is not None
        # paths are relative to the project root, and so are modules that are its files
        # (``tests.test_fuzz::add``, as ids read), wherever the command runs
        specs = [os.path.join(root, x) if x.endswith(".py") or ".py::" in x or "/" in x
                 else _module_file(x, root) or x for x in listed]
    out: list[LoadedTarget] = []
    problems = []
    for spec in specs:
        try:
            out += expand([spec])
        except TargetError as e:
            problems.append(f"could not load {spec}: {e}")
    return out, problems


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
    ``__pycache__``, ``.venv*``/``venv*``, ``node_modules`` and corpus folders (a corpus is
    data: a ``.py`` a pull request put there is never imported)."""
    found = []
    corpora: set[str] = set()
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not d.startswith("venv"))
        if any(f.endswith(".json") and f[:-5] + ".safetensors" in files for f in files):
            here = os.path.abspath(root)  # a target folder of a corpus: it and its corpus
            corpora.add(here)
            if os.path.dirname(here) != os.path.abspath(folder):
                corpora.add(os.path.dirname(here))
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
    return [p for p in found
            if not any(os.path.commonpath([os.path.abspath(p), c]) == c for c in corpora)]


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
