"""Kernel coverage in the interpreter: which lines, branches, loop trip counts, masks and
``tl.where`` conditions of a kernel's own source the cases reached.

In the interpreter every line of a ``@triton.jit`` function runs as Python, so coverage is
measured exactly, by *source instrumentation*: when the interpreter rewrites a kernel or
``@jit`` helper (:class:`fuzzkern.execution.interpreter.fidelity.FidelityRewriter`, once per
function and
process), :func:`instrument` adds probes to the rewritten AST, and only there:

* a probe before each statement (line reached);
* ``if``/``elif``, ``while`` and ``a if c else b`` tests wrapped (each side taken; a test that
  is one comparison ``a OP b`` also records how far the side not taken was: the *branch
  distance* the search climbs, :mod:`fuzzkern.search.engine`);
* ``for`` iterables and ``while`` loops counted (trip counts 0, 1 and many, per entry);
* the ``mask`` of ``tl.load``/``tl.store``/``tl.atomic_*`` (all lanes on, some, none) and the
  condition of ``tl.where`` (uniform true, mixed, uniform false).

Each probe returns what it wraps, unchanged, so the kernel computes exactly what it did; a
probe costs a function call, only in the kernel's lines (the numpy work of a kernel line costs
microseconds). Functions of Triton's own library (``tl.standard``) are not instrumented.
Tracing (``sys.settrace``) was not used: on Python 3.11 it calls the tracer on every Python
call of the interpreter and numpy, not only the kernel's (docs/coverage.md has the figures).

:func:`recording` collects one case's probes; :class:`KernelCoverage` is the result as data
(JSON), merged per target by addition, with the counts, the unreached list and the features
the search feeds on. Compiled mode has no line coverage.

This module imports neither torch nor triton (numpy only): the reports read
:class:`KernelCoverage` too.

>>> import ast
>>> tree = ast.parse("def k(x):\\n    if x > 2:\\n        x = 1\\n    return x\\n")
>>> ns = dict(PROBES)
>>> exec(compile(instrument(tree, "<demo>"), "<demo>", "exec"), ns)
>>> with recording() as rec:
...     _ = ns["k"](5)
>>> cov = rec.coverage
>>> cov.counts()["lines"], cov.counts()["branches"]
((3, 3), (1, 2))
>>> cov.unreached()
['k (<demo>:1): line 2 false branch never taken']
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import importlib.util
import linecache
import operator
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

__all__ = ["PROBES", "KernelCoverage", "Recording", "instrument", "recording"]

# ---------------------------------------------------------------------------------------------
# Sites and probes (process-wide: a kernel is rewritten, and instrumented, once per process)


@dataclasses.dataclass
class _Function:
    """What :func:`instrument` found in one function: its statement lines and sites."""

    key: str
    name: str
    file: str
    line: int
    #: statement line -> probe id
    lines: dict[int, int] = dataclasses.field(default_factory=dict)
    #: (kind, line, col, text, op, first probe id); kind: "if", "while", "loop", "mask",
    #: "where"; op: the memory op of a mask ("load", "store", "atomic_add", ...), else ""
    sites: list[tuple[str, int, int, str, str, int]] = dataclasses.field(default_factory=list)
    #: keys of the ``@jit`` helpers it calls (listed, never called, when no case reaches them)
    callees: list[str] = dataclasses.field(default_factory=list)


#: probe id -> (function key, ...) is implied by ranges; one list of functions, one counter
_FUNCTIONS: dict[str, _Function] = {}
_NEXT = [0]
#: probe ids hit since the last :func:`recording` began (never replaced, cleared per case)
_HITS: set[int] = set()
#: branch site's first probe id -> smallest distance seen to the (true, false) side
_DIST: dict[int, list[float]] = {}
#: while loop's first probe id -> trips of the entry running now
_TRIPS: dict[int, int] = {}

#: probe offsets of each kind of site
_SIDES = {"if": ("true", "false"), "while": ("true", "false"), "loop": ("0", "1", "many"),
          "mask": ("all", "partial", "none"), "where": ("all", "mixed", "none")}


def _ids(n: int) -> int:
    first = _NEXT[0]
    _NEXT[0] += n
    return first


def _truth(value: Any) -> Any:
    """The lanes of a mask or condition as a numpy array or a Python bool; None: no mask."""
    if value is None:
        return None
    handle = getattr(value, "handle", None)
    data = getattr(handle, "data", None)
    if data is not None:
        return data
    inner = getattr(value, "value", value)  # tl.constexpr
    try:
        return bool(inner)
    except Exception:
        return None


def _classify(value: Any) -> tuple[int, int]:
    """(0: every lane true, 1: some, 2: none, -1: not a mask; the number of lanes)."""
    lanes = _truth(value)
    if lanes is None:
        return -1, 0
    if isinstance(lanes, bool):
        return (0 if lanes else 2), 1
    try:
        on = np.count_nonzero(lanes)  # one pass (all() then any() costs six times as much)
    except Exception:
        return -1, 0
    return (0 if on == lanes.size else 1 if on else 2), int(lanes.size)


def _number(value: Any) -> float | None:
    """A scalar operand of a comparison as a float (a one-element tensor too); else None."""
    if isinstance(value, (int, float)):
        return float(value)
    data = getattr(getattr(value, "handle", None), "data", None)
    if data is None:
        data = value
    size = getattr(data, "size", None)
    if size != 1:
        return None
    try:
        return float(data.reshape(-1)[0])
    except Exception:
        return None


_OPS = (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)
_OP_INDEX = {ast.Lt: 0, ast.LtE: 1, ast.Gt: 2, ast.GtE: 3, ast.Eq: 4, ast.NotEq: 5}


def _distances(op: int, a: float, b: float) -> tuple[float, float]:
    """How far ``a OP b`` is from being true and from being false (0 on the side it is)."""
    if op in (2, 3):  # a > b is b < a
        a, b, op = b, a, op - 2
    if op == 0:
        return (a - b + 1 if a >= b else 0.0), (b - a if a < b else 0.0)
    if op == 1:
        return (a - b if a > b else 0.0), (b - a + 1 if a <= b else 0.0)
    if op == 4:
        return abs(a - b), (1.0 if a == b else 0.0)
    return (1.0 if a == b else 0.0), abs(a - b)


def _p_branch(k: int, value: Any) -> bool:
    truth = bool(value)
    _HITS.add(k if truth else k + 1)
    return truth


def _p_compare(k: int, op: int, left: Any, right: Any) -> bool:
    truth = bool(_OPS[op](left, right))
    _HITS.add(k if truth else k + 1)
    a, b = _number(left), _number(right)
    if a is not None and b is not None:
        near = _DIST.get(k)
        t, f = _distances(op, a, b)
        if near is None:
            _DIST[k] = [t, f]
        else:
            near[0] = min(near[0], t)
            near[1] = min(near[1], f)
    return truth


def _p_loop(k: int, iterable: Any) -> Iterator[Any]:
    n = 0
    try:
        for item in iterable:
            n += 1
            yield item
    finally:
        _HITS.add(k + min(n, 2))
        near = _DIST.get(k)
        far = (float(n), float(abs(n - 1)), float(max(0, 2 - n)))  # to 0, 1, many trips
        _DIST[k] = list(far) if near is None else [min(x) for x in zip(near, far, strict=True)]


def _p_enter(k: int) -> None:
    pending = _TRIPS.pop(k, None)
    if pending is not None:  # the last entry left by break/return
        _HITS.add(k + 2 + min(pending, 2))
    _TRIPS[k] = 0


def _p_while(k: int, value: Any) -> bool:
    truth = bool(value)
    _HITS.add(k if truth else k + 1)
    if truth:
        _TRIPS[k] = _TRIPS.get(k, 0) + 1
    else:
        _HITS.add(k + 2 + min(_TRIPS.pop(k, 0), 2))
    return truth


def _p_mask(k: int, value: Any) -> Any:
    c, lanes = _classify(value)
    if c >= 0:
        _HITS.add(k + c)
        if lanes > 1:  # a scalar or one-lane condition is never partial
            _HITS.add(k + 3)
    return value


#: whether :func:`instrument` adds probes (bench/coverage.py measures the cost of both)
INSTRUMENT = True

#: names the instrumented code calls; they live in the globals the rewritten kernel runs with
PROBES: dict[str, Any] = {
    "__fuzzkern_hit": _HITS.add, "__fuzzkern_branch": _p_branch,
    "__fuzzkern_compare": _p_compare, "__fuzzkern_loop": _p_loop,
    "__fuzzkern_enter": _p_enter, "__fuzzkern_while": _p_while, "__fuzzkern_mask": _p_mask,
}

# ---------------------------------------------------------------------------------------------
# Instrumentation

#: positional index of ``mask`` in tl.load / tl.store / tl.atomic_* calls
_MASK_ARG = {"load": 1, "store": 2}


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


def _const(v: Any) -> ast.Constant:
    return ast.Constant(value=v)


#: probe ids a site takes past its sides: a while loop's trip counts; a mask's or condition's
#: "had more than one lane" (:func:`_p_mask`)
_EXTRA = {"while": 3, "mask": 1, "where": 1}
_RANGES = frozenset({"range", "static_range"})


def _over_cdiv(it: ast.expr) -> bool:
    """A loop ``for i in range(cdiv(n, B))`` (``range(0, cdiv(...))``, ``tl.range``,
    ``tl.static_range``): it runs 0 times only for an empty ``n``, so its 0-trip class counts
    once some case reaches it, not before (:func:`_side_groups`)."""
    if not (isinstance(it, ast.Call) and _callee(it) in _RANGES and 1 <= len(it.args) <= 3):
        return False
    if len(it.args) > 1 and not (isinstance(it.args[0], ast.Constant) and it.args[0].value == 0):
        return False
    stop = it.args[0] if len(it.args) == 1 else it.args[1]
    return isinstance(stop, ast.Call) and _callee(stop) == "cdiv"


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


class _Instrumenter(ast.NodeTransformer):
    def __init__(self, fn: _Function, filename: str) -> None:
        self.fn = fn
        self.filename = filename

    def _site(self, kind: str, node: ast.AST, op: str = "") -> int:
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        k = _ids(len(_SIDES[kind]) + _EXTRA.get(kind, 0))
        text = linecache.getline(self.filename, line).strip()
        self.fn.sites.append((kind, line, col, text, op, k))
        return k

    def _test(self, kind: str, node: ast.AST, test: ast.expr) -> ast.expr:
        k = self._site(kind, node)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _OP_INDEX):
            return _call("__fuzzkern_compare", _const(k), _const(_OP_INDEX[type(test.ops[0])]),
                         test.left, test.comparators[0])
        return _call("__fuzzkern_branch", _const(k), test)

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            if (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)):
                out.append(s)  # a docstring is no statement that runs
                continue
            k = self.fn.lines.get(s.lineno)
            if k is None:
                k = self.fn.lines[s.lineno] = _ids(1)
            probe = ast.Expr(_call("__fuzzkern_hit", _const(k)))
            ast.copy_location(probe, s)
            new = self.visit(s)
            if isinstance(s, ast.While):
                enter = ast.Expr(_call("__fuzzkern_enter", _const(self._while_ids[id(s)])))
                out += [probe, ast.copy_location(enter, s)]
            else:
                out.append(probe)
            out.extend(new if isinstance(new, list) else [new])
        return out

    _while_ids: dict[int, int]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                setattr(node, field, self._body(stmts))
        for h in getattr(node, "handlers", ()) or ():
            h.body = self._body(h.body)
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody", "handlers"):
                continue
            if isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v
                                      for v in value])
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        test = self.visit(node.test)
        node.test = ast.copy_location(self._test("if", node, test), node.test)
        return self.generic_visit_rest(node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        node.test = ast.copy_location(self._test("if", node, node.test), node.test)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        test = self.visit(node.test)
        k = self._site("while", node)
        self._while_ids[id(node)] = k
        node.test = ast.copy_location(_call("__fuzzkern_while", _const(k), test), node.test)
        return self.generic_visit_rest(node)

    def visit_For(self, node: ast.For) -> ast.AST:
        it = self.visit(node.iter)
        k = self._site("loop", node, op="cdiv" if _over_cdiv(node.iter) else "")
        node.iter = ast.copy_location(_call("__fuzzkern_loop", _const(k), it), node.iter)
        return self.generic_visit_rest(node)

    def generic_visit_rest(self, node: ast.AST) -> ast.AST:
        """The statement lists of an ``if``/``while``/``for`` whose test or iterable is done."""
        for field in ("body", "orelse"):
            stmts = getattr(node, field)
            if stmts:
                setattr(node, field, self._body(stmts))
        if isinstance(node, ast.For):
            node.target = self.visit(node.target)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)  # type: ignore[assignment]
        name = _callee(node)
        kind = ("where" if name == "where" else
                "mask" if name in _MASK_ARG or name.startswith("atomic_") else "")
        if not kind:
            return node
        for kw in node.keywords:
            if kw.arg in ("mask", "condition"):
                kw.value = self._wrap(kind, node, name, kw.value)
                return node
        index = 0 if kind == "where" else _MASK_ARG.get(name, 2)
        if len(node.args) > index and not isinstance(node.args[index], ast.Starred):
            node.args[index] = self._wrap(kind, node, name, node.args[index])
        return node

    def _wrap(self, kind: str, node: ast.Call, name: str, value: ast.expr) -> ast.expr:
        k = self._site(kind, node, op=name if kind == "mask" else "")
        return ast.copy_location(_call("__fuzzkern_mask", _const(k), value), value)


@functools.cache
def _triton_dir() -> str:
    spec = importlib.util.find_spec("triton")  # found, not imported
    origin = spec.origin if spec is not None else None
    return os.path.dirname(os.path.abspath(origin)) + os.sep if origin else "\0"


def _is_library(filename: str) -> bool:
    """Whether ``filename`` is Triton's own (``tl.standard``'s helpers are ``@jit`` too)."""
    return os.path.abspath(filename).startswith(_triton_dir())


def instrument(tree: ast.Module, filename: str, fn: Any = None) -> ast.Module:
    """``tree`` (a module holding one rewritten ``@jit`` function, its lines those of
    ``filename``) with coverage probes added, its function registered; Triton's own library
    functions are returned as they are. The probes' names are :data:`PROBES`. ``fn``: the
    Python function rewritten, whose globals name the ``@jit`` helpers it calls (registered
    from their source, so that a helper no case calls is listed as never called)."""
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not defs or not INSTRUMENT or _is_library(filename):
        return tree
    for fdef in defs:
        key = f"{filename}:{fdef.lineno}"
        found = _FUNCTIONS[key] = _Function(key, fdef.name, filename, fdef.lineno)
        if fn is not None:
            found.callees = _helpers(fdef, getattr(fn, "__globals__", {}))
        inst = _Instrumenter(found, filename)
        inst._while_ids = {}
        fdef.body = inst._body(fdef.body)
    return ast.fix_missing_locations(tree)


def _helpers(fdef: ast.AST, names: Mapping[str, Any]) -> list[str]:
    """Keys of the user ``@jit`` helpers ``fdef`` calls by name (``helper(...)``,
    ``module.helper(...)``), each registered from its source when not registered yet."""
    out = []
    for node in ast.walk(fdef):
        if not isinstance(node, ast.Call):
            continue
        f, obj = node.func, None
        if isinstance(f, ast.Name):
            obj = names.get(f.id)
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            obj = getattr(names.get(f.value.id), f.attr, None)
        py = getattr(obj, "fn", None)  # a JITFunction's Python function
        code = getattr(py, "__code__", None)
        if code is None or _is_library(code.co_filename):
            continue
        key = _register_source(py)
        if key is not None and key not in out:
            out.append(key)
    return out


def _register_source(py: Any) -> str | None:
    """Register a ``@jit`` function from its source, without running it (its probes never
    fire: once the interpreter rewrites it, :func:`instrument` registers it anew)."""
    import inspect
    import textwrap

    try:
        lines, start = inspect.getsourcelines(py)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fdef is None:
        return None
    ast.increment_lineno(tree, start - 1)
    filename = py.__code__.co_filename
    key = f"{filename}:{fdef.lineno}"
    if key not in _FUNCTIONS:
        found = _FUNCTIONS[key] = _Function(key, fdef.name, filename, fdef.lineno)
        inst = _Instrumenter(found, filename)
        inst._while_ids = {}
        inst._body(fdef.body)
    return key


# ---------------------------------------------------------------------------------------------
# One case's coverage


class Recording:
    """What :func:`recording` collected; ``coverage`` is set when its block ends."""

    coverage: KernelCoverage | None = None


@contextlib.contextmanager
def recording(enabled: bool = True) -> Iterator[Recording]:
    """Collect the probes the block's kernel launches hit, as a :class:`KernelCoverage` of the
    functions reached (``rec.coverage`` once the block ends, also when it raised)."""
    rec = Recording()
    if not enabled:
        yield rec
        return
    _HITS.clear()
    _DIST.clear()
    _TRIPS.clear()
    try:
        yield rec
    finally:
        for k, trips in list(_TRIPS.items()):  # entries left by break/return
            _HITS.add(k + 2 + min(trips, 2))
        rec.coverage = KernelCoverage.of_hits(_HITS, _DIST)
        _HITS.clear()


# ---------------------------------------------------------------------------------------------
# The data


def _empty_counts(kind: str) -> dict[str, int]:
    return dict.fromkeys(_SIDES[kind], 0)


@dataclasses.dataclass
class KernelCoverage:
    """Coverage of kernel functions as data: per function (``file:def line``) its name, file,
    def line, ``lines`` (statement line -> cases that reached it) and ``sites`` (one dict per
    branch, loop, mask or ``tl.where``: ``kind``, ``line``, ``col``, ``text``, ``op``, the
    count of cases per side, ``distance`` to each side not taken when it was measured);
    ``cases``: how many cases it sums. JSON in and out; :meth:`merge` adds."""

    functions: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    cases: int = 0

    @staticmethod
    def of_hits(hits: Iterable[int], dist: Mapping[int, list[float]]) -> KernelCoverage:
        hit = set(hits)
        cov = KernelCoverage(cases=1)
        reached = [fn for fn in _FUNCTIONS.values() if any(k in hit for k in fn.lines.values())]
        keys = {fn.key for fn in reached}
        for fn in list(reached):  # and the helpers they call that no case reached
            for key in fn.callees:
                if key not in keys and key in _FUNCTIONS:
                    keys.add(key)
                    reached.append(_FUNCTIONS[key])
        for fn in reached:
            sites = []
            for kind, line, col, text, op, k in fn.sites:
                site: dict[str, Any] = {"kind": kind, "line": line, "col": col, "text": text}
                if op:
                    site["op"] = op
                sides = _SIDES[kind]
                site.update({s: int(k + i in hit) for i, s in enumerate(sides)})
                if kind == "while":  # trip counts after the two sides
                    site.update({f"trips {s}": int(k + 2 + i in hit)
                                 for i, s in enumerate(_SIDES["loop"])})
                if kind in ("mask", "where"):  # cases where it had more than one lane
                    site["multi-lane"] = int(k + 3 in hit)
                if k in dist:
                    site["distance"] = {s: d for s, d in zip(sides, dist[k], strict=True)
                                        if d > 0}
                sites.append(site)
            cov.functions[fn.key] = {
                "name": fn.name, "file": fn.file, "line": fn.line,
                "lines": {str(n): int(k in hit) for n, k in sorted(fn.lines.items())},
                "sites": sites,
            }
        return cov

    # -- JSON ---------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"cases": self.cases, "functions": self.functions}

    @staticmethod
    def from_json(d: Mapping[str, Any] | None) -> KernelCoverage:
        if not d:
            return KernelCoverage()
        return KernelCoverage(functions={k: _copy_function(v)
                                         for k, v in dict(d.get("functions") or {}).items()},
                              cases=int(d.get("cases", 0) or 0))

    def __bool__(self) -> bool:
        return bool(self.functions)

    # -- merging -------------------------------------------------------------------------------
    def merge(self, other: KernelCoverage | Mapping[str, Any] | None) -> list[str]:
        """Add ``other`` (one case's, or a merged one) to this; returns the features it reached
        that this had not (:meth:`features`): what counts as new for the search."""
        if other is None:
            return []
        if not isinstance(other, KernelCoverage):
            other = KernelCoverage.from_json(other)
        before = self.features()
        self.cases += other.cases
        for key, fn in other.functions.items():
            mine = self.functions.get(key)
            if mine is None:
                self.functions[key] = _copy_function(fn)
                continue
            for line, n in fn["lines"].items():
                mine["lines"][line] = mine["lines"].get(line, 0) + n
            index = {_site_key(s): s for s in mine["sites"]}
            for s in fn["sites"]:
                m = index.get(_site_key(s))
                if m is None:
                    mine["sites"].append(dict(s))
                    continue
                for side, n in s.items():
                    if isinstance(n, int) and side not in ("line", "col"):
                        m[side] = m.get(side, 0) + n
                _merge_distance(m, s.get("distance"))
        return sorted(self.features() - before)

    # -- what was reached ---------------------------------------------------------------------
    def features(self) -> set[str]:
        """Every line, branch side, trip-count class, mask and condition class reached, one
        string each (``file:line|41:8 if true``)."""
        out = set()
        for key, fn in self.functions.items():
            for line, n in fn["lines"].items():
                if n:
                    out.add(f"{key}|{line}")
            for s in fn["sites"]:
                for side in _sides_of(s):
                    if s.get(side):
                        out.add(f"{key}|{s['line']}:{s['col']} {s['kind']} {side}")
        return out

    def counts(self) -> dict[str, tuple[int, int]]:
        """(reached, total) of lines, branch sides (``if``/``while``), loop trip-count classes
        (0, 1, many), mask classes (all lanes, partial, none) and ``tl.where`` classes."""
        totals = {"lines": [0, 0], "branches": [0, 0], "loops": [0, 0], "masks": [0, 0],
                  "wheres": [0, 0]}
        group = {"if": ("branches",), "while": ("branches", "loops"), "loop": ("loops",),
                 "mask": ("masks",), "where": ("wheres",)}
        for fn in self.functions.values():
            for n in fn["lines"].values():
                totals["lines"][0] += bool(n)
                totals["lines"][1] += 1
            for s in fn["sites"]:
                for name, sides in zip(group[s["kind"]], _side_groups(s), strict=True):
                    totals[name][0] += sum(bool(s.get(x)) for x in sides)
                    totals[name][1] += len(sides)
        return {k: (v[0], v[1]) for k, v in totals.items()}

    def percent(self) -> float:
        """Reached over total of every line and site class counted by :meth:`counts`, in
        percent (100 when there is nothing to reach)."""
        reached = total = 0
        for r, t in self.counts().values():
            reached += r
            total += t
        return 100.0 * reached / total if total else 100.0

    def unreached(self, most: int | None = None) -> list[str]:
        """What no case reached, in words, one line each, in source order: a line never
        reached, a branch side never taken, a trip count never seen, a mask never partial."""
        out: list[str] = []
        for fn in sorted(self.functions.values(), key=lambda f: (f["file"], f["line"])):
            where = f"{fn['name']} ({os.path.basename(fn['file'])}:{fn['line']})"
            if not any(fn["lines"].values()):
                out.append(f"{where}: never called")
                continue
            items: list[tuple[int, int, str]] = []
            never = [int(n) for n, c in fn["lines"].items() if not c]
            for n in never:
                items.append((n, -1, f"line {n} `{_line_text(fn['file'], n)}` never reached"))
            dead = set(never)
            for s in fn["sites"]:
                if s["line"] in dead:
                    continue  # the line itself says it
                items.extend((s["line"], s["col"], text) for text in _site_gaps(s))
            out.extend(f"{where}: {text}" for _, _, text in sorted(items))
        return out if most is None else out[:most]

    def line_status(self, key: str) -> dict[int, str]:
        """Per source line of function ``key``: ``reached``, ``partly`` (reached, but a
        branch side, trip count or mask class at it was not) or ``never``."""
        fn = self.functions[key]
        status = {int(n): "reached" if c else "never" for n, c in fn["lines"].items()}
        for s in fn["sites"]:
            if status.get(s["line"]) == "reached" and _site_gaps(s):
                status[s["line"]] = "partly"
        return status

    def gaps_at(self, key: str) -> dict[int, list[str]]:
        """Per line of function ``key``: the site classes never reached, in words."""
        out: dict[int, list[str]] = {}
        for s in self.functions[key]["sites"]:
            gaps = _site_gaps(s)
            if gaps:
                out.setdefault(s["line"], []).extend(gaps)
        return out

    def summary(self) -> str:
        """One line: ``lines 12/14, branches 3/4, loop trips 2/3, masks 4/6, where 1/3``."""
        names = {"lines": "lines", "branches": "branches", "loops": "loop trips",
                 "masks": "masks", "wheres": "where"}
        parts = [f"{names[k]} {r}/{t}" for k, (r, t) in self.counts().items() if t]
        return f"{self.percent():.1f}% ({', '.join(parts)})" if parts else "nothing to cover"

    def distances(self) -> dict[str, float]:
        """Per branch side never taken that has a measured distance (``file:line|41:8 if
        true``): the smallest distance any case got to it."""
        out = {}
        for key, fn in self.functions.items():
            for s in fn["sites"]:
                for side, d in (s.get("distance") or {}).items():
                    if not s.get(side):
                        out[f"{key}|{s['line']}:{s['col']} {s['kind']} {side}"] = float(d)
        return out


def _copy_function(fn: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": fn["name"], "file": fn["file"], "line": int(fn["line"]),
            "lines": {str(k): int(v) for k, v in dict(fn["lines"]).items()},
            "sites": [{**s, **({"distance": dict(s["distance"])} if "distance" in s else {})}
                      for s in fn.get("sites", ())]}


def _site_key(s: Mapping[str, Any]) -> tuple[Any, ...]:
    return (s["kind"], s["line"], s["col"], s.get("op", ""))


def _merge_distance(mine: dict[str, Any], theirs: Mapping[str, float] | None) -> None:
    if not theirs:
        return
    near = mine.setdefault("distance", {})
    for side, d in theirs.items():
        near[side] = min(float(d), float(near.get(side, d)))


def _side_groups(s: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The classes of site ``s`` that count, in groups (a while loop: its sides, then its trip
    counts). Only reachable ones: a mask or condition reached only ever with one lane (a scalar
    ``tl.where`` condition) has no partial class; a loop over ``range(cdiv(n, B))`` counts 0
    trips only once a case reached it (an empty ``n``); a ``mask=`` counts "every lane off"
    only once a case reached it (it needs a program past the end of the data, which the usual
    ``cdiv(n, BLOCK)`` grid never starts; a launcher that does start one reaches it). A class
    reached always counts; data from before these rules (no ``multi-lane``) counts every
    class."""
    kind = s["kind"]
    if kind == "while":
        return [_SIDES["while"], tuple(f"trips {x}" for x in _SIDES["loop"])]
    sides = _SIDES[kind]
    if (kind in ("mask", "where") and s.get("multi-lane", 1) == 0
            and any(s.get(x) for x in sides)):
        return [tuple(x for x in sides if x != sides[1] or s.get(x))]
    if kind == "loop" and s.get("op") == "cdiv" and not s.get("0"):
        return [sides[1:]]
    if kind == "mask" and "multi-lane" in s and not s.get("none"):
        return [sides[:2]]  # every lane off: a program past the end (see the docstring)
    return [sides]


def _sides_of(s: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(x for g in _side_groups(s) for x in g)


_WORDS = {
    "if": {"true": "true branch never taken", "false": "false branch never taken"},
    "while": {"true": "loop body never entered", "false": "loop never ended by its test",
              "trips 0": "never ran 0 times", "trips 1": "never ran exactly once",
              "trips many": "never ran more than once"},
    "loop": {"0": "never ran 0 times", "1": "never ran exactly once",
             "many": "never ran more than once"},
    "mask": {"all": "mask never all lanes on", "partial": "mask never partial",
             "none": "mask never all lanes off"},
    "where": {"all": "condition never uniformly true", "mixed": "condition never mixed",
              "none": "condition never uniformly false"},
}


def _site_gaps(s: Mapping[str, Any]) -> list[str]:
    """The classes of site ``s`` never reached, in words (``line 41 `if pid >= n:` true
    branch never taken``); a mask or condition never reached at all says nothing more than
    its line."""
    sides = _sides_of(s)
    if s["kind"] in ("mask", "where") and not any(s.get(x) for x in sides):
        return []
    what = {"mask": f"{s.get('op', 'load')} at", "where": "tl.where at"}.get(s["kind"], "")
    head = f"{what} line {s['line']}".strip()
    text = s.get("text", "")
    if s["kind"] in ("if", "while", "loop") and text:
        head += f" `{text}`"
    return [f"{head} {_WORDS[s['kind']][x]}" for x in sides if not s.get(x)]


def _line_text(file: str, line: int) -> str:
    return linecache.getline(file, line).strip()
