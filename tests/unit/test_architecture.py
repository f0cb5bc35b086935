"""The package's import graph, computed from the source: one stage per package in pipeline
order, no import circles, no import from a stage up to a later one (docs/architecture.md).

Every ``import``/``from ... import`` in ``fuzzkern/`` counts: module level, inside a function
(lazy) and under ``if TYPE_CHECKING``. A type-only import still says "this stage knows that
one", and a lazy import is still a dependency, only a deferred one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fuzzkern"

#: The stages, lowest first, each with the modules and packages it holds. A module may import
#: from its own stage (sideways, without a circle) and from any stage before it (down), never
#: from a stage after it. docs/architecture.md describes each stage in this order.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("fuzzkern.errors", "fuzzkern._version", "fuzzkern.calls", "fuzzkern.introspect",
              "fuzzkern.gpus", "fuzzkern.files")),
    ("case", ("fuzzkern.case",)),
    ("strategies", ("fuzzkern.strategies",)),
    ("target", ("fuzzkern.target",)),
    ("judge", ("fuzzkern.judge",)),
    ("execution", ("fuzzkern.execution",)),
    ("corpus", ("fuzzkern.corpus",)),
    ("search", ("fuzzkern.search",)),
    ("front", ("fuzzkern", "fuzzkern.__main__", "fuzzkern.cli", "fuzzkern.initci",
               "fuzzkern.testing",
               "fuzzkern._pytest_plugin", "fuzzkern.report", "fuzzkern.targets")),
]


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: Iterable[str]) -> set[tuple[str, int]]:
    """The fuzzkern modules that module ``name`` imports, with the line of each import.
    ``from a import b`` names module ``a.b`` when that is a module, else ``a``."""
    known = set(known)
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fuzzkern":
                    found.add((alias.name, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "fuzzkern":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add((sub if sub in known else module, node.lineno))
    return {(m, line) for m, line in found if m != name}


def graph(package: Path = PACKAGE) -> dict[str, set[tuple[str, int]]]:
    mods = modules(package)
    return {name: imports(name, path, mods) for name, path in mods.items()}


def stage_of(module: str) -> int | None:
    """The index in :data:`STAGES` of the longest prefix that holds ``module``."""
    best: tuple[int, int] | None = None
    for index, (_, members) in enumerate(STAGES):
        for member in members:
            inside = module == member or (member != "fuzzkern" and module.startswith(member + "."))
            if inside and (best is None or len(member) > best[0]):
                best = (len(member), index)
    return None if best is None else best[1]


def upward_imports(edges: dict[str, set[tuple[str, int]]]) -> list[str]:
    found = []
    for module, targets in sorted(edges.items()):
        for target, line in sorted(targets):
            here, there = stage_of(module), stage_of(target)
            if here is not None and there is not None and there > here:
                found.append(f"{module}:{line} imports {target} "
                              f"({STAGES[here][0]} -> {STAGES[there][0]}, a later stage)")
    return found


def circles(edges: dict[str, set[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    succ = {m: sorted({t for t, _ in ts if t in edges}) for m, ts in edges.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return found


def test_every_module_belongs_to_a_stage():
    assert [m for m in modules() if stage_of(m) is None] == []


def test_no_import_goes_up_to_a_later_stage():
    assert upward_imports(graph()) == []


def test_no_import_circle():
    assert circles(graph()) == []


def test_architecture_doc_names_every_stage_and_module():
    """docs/architecture.md matches the tree: it names each stage's package or module, in
    order, and every module file of the package."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in sorted(PACKAGE.rglob("*.py"))
               if p.name != "__init__.py" and str(p.relative_to(ROOT)) not in doc
               and f"{p.parent.name}/{p.name}" not in doc]
    assert missing == []
    headings = re.findall(r"^## \d+\. (\w+)", doc, re.M)
    assert headings == [name for name, _ in STAGES]


# -- the checks can fail: the same functions over a small package with the faults -------------


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "fuzzkern" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "fuzzkern"


@pytest.mark.parametrize("bad", ["from fuzzkern.search.engine import run\n",
                                 "def f():\n    from fuzzkern.search import engine\n",
                                 "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from fuzzkern.search.engine import run\n",
                                 "from ..search import engine\n"])
def test_an_upward_import_is_found(tmp_path, bad):
    package = _write(tmp_path, {"__init__.py": "", "case/__init__.py": "",
                                "case/model.py": bad, "search/__init__.py": "",
                                "search/engine.py": "from fuzzkern.case.model import X\n"})
    edges = graph(package)
    found = upward_imports(edges)
    assert len(found) == 1 and found[0].startswith("fuzzkern.case.model:")
    assert "case -> search" in found[0]
    assert circles(edges) == [["fuzzkern.case.model", "fuzzkern.search.engine"]]


def test_a_circle_within_a_stage_is_found(tmp_path):
    package = _write(tmp_path, {"__init__.py": "", "search/__init__.py": "",
                                "search/a.py": "from fuzzkern.search import b\n",
                                "search/b.py": "from fuzzkern.search.c import x\n",
                                "search/c.py": "def f():\n    import fuzzkern.search.a\n"})
    edges = graph(package)
    assert upward_imports(edges) == []
    assert circles(edges) == [["fuzzkern.search.a", "fuzzkern.search.b", "fuzzkern.search.c"]]
