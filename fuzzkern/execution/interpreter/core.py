"""Run ``@triton.jit`` kernels in Triton's interpreter, in-process, with a bounds checker.

Why in-process, and what it must get right: docs/architecture.md, execution. While
:func:`interpreter_mode` is active, every launch of a ``JITFunction`` in this process
(``kernel[grid](...)``, ``.run(...)``, through ``@triton.autotune``/``@triton.heuristics`` stacks)
runs in Triton's numpy interpreter on the tensors it is given, and so do nested ``@jit`` helpers,
``tl.standard`` functions and tensor member functions (``x.sum()``). No environment variable, no
change to user code. On exit Triton is exactly as before, also when the kernel raised.

What is patched, only while active (the minimal set that works on Triton 3.6 and 3.9):

* ``JITFunction.run``: redirected to a cached ``InterpretedFunction`` per kernel;
* ``JITFunction.__call__``: nested device calls, with Triton's language patch scope restored
  afterwards (upstream ``InterpretedFunction.__call__`` leaks it and breaks later compiles);
* ``JITFunction.__get__`` (added, then removed): binds tensor member functions;
* ``Autotuner.run``: never benchmarks; a forced config, else the first pruned config;
  ``Autotuner.cache``/``best_config`` are restored on exit;
* ``interpreter._patch_lang_tensor``: the ``tensor.__index__`` fix of triton#9171 (Triton 3.6
  with numpy >= 2.4), only on versions that lack it;
* ``ReduceScanOpInterface.to_tensor``: a full reduction to a scalar narrows to the result
  dtype (wraps, as the GPU does) instead of raising ``OverflowError`` under numpy >= 2 (an
  int32 ``tl.sum`` past 2**31 - 1); Triton 3.9's own fix, only on versions that lack it;
* ``GridExecutor.__call__``/``_init_args_hst`` and the ``InterpreterBuilder`` memory ops: the
  bounds checker, which validates every active lane before the C++ ``memcpy`` (so a far access
  raises :class:`OOBAccess` instead of killing the process), and the view checker, which also
  requires the lane to address an element of a view the launch passed, not a gap of its
  storage (:class:`OOBView`; a byte coverage mask per storage, computed once per launch);
* ``interpreter_builder.options``: ``debug`` (device asserts, int overflow checks).

Everything is serialized by :data:`INTERPRETER_LOCK`, held for the whole ``with`` block: another
thread that launches a kernel meanwhile waits and then runs it normally (compiled). Code that
compiles kernels in other threads should hold the lock too.

>>> import torch, triton, triton.language as tl
>>> @triton.jit
... def double(x_ptr, n, BLOCK: tl.constexpr):
...     offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
...     tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
>>> x = torch.ones(5)
>>> with interpreter_mode():
...     kernel = double[(1,)](x, 5, BLOCK=8)  # as compiled, the launch returns the kernel
>>> x.tolist()
[2.0, 2.0, 2.0, 2.0, 2.0]
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import linecache
import operator
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import triton
import triton.language as tl
import triton.language.core as tl_core
import triton.language.math as tl_math
import triton.language.standard as tl_standard
import triton.runtime.interpreter as _interp
from triton.compiler.compiler import CompiledKernel
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.errors import InterpreterError
from triton.runtime.jit import JITFunction, TensorWrapper

from fuzzkern.errors import ForcedConfigError
from fuzzkern.execution.interpreter import fidelity as interp_fidelity
from fuzzkern.execution.interpreter.fidelity import FidelityInterpretedFunction
from fuzzkern.execution.interpreter.formats import widened_patches
from fuzzkern.execution.progress import LaunchMeter
from fuzzkern.execution.stages import stage
from fuzzkern.introspect import (
    LaunchCaches,
    OneConfig,
    autotuner_classes,
    cache_snapshot,
    kernel_name,
    record_config,
    restore_autotuner,
)

__all__ = [
    "INTERPRETER_LOCK",
    "ForcedConfigError",
    "InterpreterSession",
    "OOBAccess",
    "OOBView",
    "current_program_id",
    "interpreter_mode",
    "kernel_location",
    "live_allocations",
    "run_interpreted",
]

#: Serializes interpreter runs (the interpreter and its language patches are process-global).
#: Held by :func:`interpreter_mode` for its whole ``with`` block; re-entrant.
INTERPRETER_LOCK = threading.RLock()

_MISSING = object()


# ---------------------------------------------------------------------------------------------
# Errors


class OOBAccess(Exception):
    """An active lane of a load, store or atomic addressed memory outside every allocation.

    Raised (before memory is touched) by the bounds checker of :func:`interpreter_mode`. It is a
    kernel outcome, not a fuzzkern misuse error, hence not a ``FuzzkernError``.

    Fields: ``op`` (``'load'``, ``'store'``, ``'atomic_add'``, ``'atomic_cas'``, ...),
    ``program_id`` (x, y, z), ``lane`` (flat index of the first bad lane in the block),
    ``address`` (of that lane), ``n_bad`` / ``n_lanes`` (bad and total lanes of the access),
    ``parameter`` (the kernel parameter whose allocation is nearest), ``argument`` (its label
    when the caller gave one, else ``parameter``), ``distance_bytes`` / ``distance_elements``
    (how far the access reaches past the end, or before the start when ``before_start``),
    ``element_size`` and ``allocation_bytes`` (size of that nearest allocation), ``location``
    (``file.py:line: source`` of the kernel line that made the access, when found).
    """

    def __init__(self, *, op: str, program_id: tuple[int, int, int], lane: int, address: int,
                 n_bad: int, n_lanes: int, parameter: str | None, argument: str | None,
                 distance_bytes: int | None, distance_elements: int | None,
                 before_start: bool, element_size: int, allocation_bytes: int | None,
                 location: str | None = None) -> None:
        self.location = location
        self.op = op
        self.program_id = program_id
        self.lane = lane
        self.address = address
        self.n_bad = n_bad
        self.n_lanes = n_lanes
        self.parameter = parameter
        self.argument = argument
        self.distance_bytes = distance_bytes
        self.distance_elements = distance_elements
        self.before_start = before_start
        self.element_size = element_size
        self.allocation_bytes = allocation_bytes
        super().__init__(self.describe())

    def _fields(self) -> dict[str, Any]:
        names = inspect.signature(type(self).__init__).parameters
        return {k: getattr(self, k) for k in names if k != "self"}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_make_error, (type(self), self._fields()))

    def describe(self) -> str:
        """One line for a person, e.g. ``store to out_ptr at program (3,0,0) lane 5: 4 elements
        (16 bytes) past the end of `out` (8 of 16 lanes out of bounds)``."""
        x, y, z = self.program_id
        direction = "to" if self.op == "store" else "from" if self.op == "load" else "on"
        where = f"at program ({x},{y},{z}) lane {self.lane}"
        lanes = f"({self.n_bad} of {self.n_lanes} lane{_s(self.n_lanes)} out of bounds)"
        if self.parameter is None or self.distance_bytes is None:
            return (f"{self.op} {where}: address {self.address:#x} is outside every tensor "
                    f"argument {lanes}")
        side = "before the start" if self.before_start else "past the end"
        n_el, n_b = self.distance_elements, self.distance_bytes
        return (f"{self.op} {direction} {self.parameter} {where}: {n_el} element{_s(n_el)} "
                f"({n_b} byte{_s(n_b)}) {side} of `{self.argument}` {lanes}")


def _make_oob(fields: dict[str, Any]) -> OOBAccess:
    return OOBAccess(**fields)


def _make_error(cls: type[OOBAccess], fields: dict[str, Any]) -> OOBAccess:
    return cls(**fields)


_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(path)) + os.sep
    for path in (triton.__file__, np.__file__, __file__)
)


def kernel_location(frames: Any = None) -> str | None:
    """``file.py:line: source`` of the innermost frame of user code (the kernel, or a ``@jit``
    helper it called) in a traceback or, by default, the current stack; None if there is
    none. The interpreter runs kernels as Python, with their own file names and lines."""
    stack: list[tuple[str, int]] = []
    if isinstance(frames, types.TracebackType):
        tb: types.TracebackType | None = frames
        while tb is not None:
            stack.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
            tb = tb.tb_next
        stack.reverse()
    else:
        f = sys._getframe(1) if frames is None else frames
        while f is not None:
            stack.append((f.f_code.co_filename, f.f_lineno))
            f = f.f_back
    for filename, line in stack:  # innermost first
        if filename.startswith("<") or os.path.abspath(filename).startswith(_LIBRARY_DIRS):
            continue
        source = linecache.getline(filename, line).strip()
        return f"{os.path.basename(filename)}:{line}" + (f": {source}" if source else "")
    return None


class OOBView(OOBAccess):
    """An active lane addressed memory inside a tensor argument's storage but outside the view
    that was passed to the kernel: a gap of a strided view, or storage before or after the
    view's elements.

    Raised by the view checker of :func:`interpreter_mode` (``check_views``). Such an access
    never faults, on a GPU either: a read sees data that is not the kernel's (fuzzkern fills
    gaps with NaN), a write corrupts it. Only the views a launch actually passes count: a
    launcher that passes the base tensor gives the kernel the whole storage.

    Fields besides :class:`OOBAccess`'s: ``storage_index`` (the address as an index into the
    storage, in elements of the access's size), ``region`` (``"gap"``, ``"before the view"``,
    ``"after the view"``) and ``view`` (the shape, strides and offset of the view(s) passed).
    """

    def __init__(self, *, op: str, program_id: tuple[int, int, int], lane: int, address: int,
                 n_bad: int, n_lanes: int, parameter: str | None, argument: str | None,
                 storage_index: int, region: str, view: str, element_size: int,
                 allocation_bytes: int | None, location: str | None = None) -> None:
        self.storage_index = storage_index
        self.region = region
        self.view = view
        super().__init__(op=op, program_id=program_id, lane=lane, address=address, n_bad=n_bad,
                         n_lanes=n_lanes, parameter=parameter, argument=argument,
                         distance_bytes=None, distance_elements=None, before_start=False,
                         element_size=element_size, allocation_bytes=allocation_bytes,
                         location=location)

    def describe(self) -> str:
        """One line, e.g. ``load from x_ptr at program (0,0,0) lane 1: storage element 1 of
        `x` is not part of the view passed to the kernel (a gap of the view; shape (2,),
        strides (2,), offset 0) (1 of 16 lanes outside the view)``."""
        x, y, z = self.program_id
        direction = "to" if self.op == "store" else "from" if self.op == "load" else "on"
        lanes = f"({self.n_bad} of {self.n_lanes} lane{_s(self.n_lanes)} outside the view)"
        what = {"gap": "a gap of the view", "before the view": "before the view's first element",
                "after the view": "after the view's last element"}.get(self.region, self.region)
        return (f"{self.op} {direction} {self.parameter} at program ({x},{y},{z}) lane "
                f"{self.lane}: storage element {self.storage_index} of `{self.argument}` is not "
                f"part of the view passed to the kernel ({what}; {self.view}) {lanes}")


def _s(n: int | None) -> str:
    return "" if n == 1 else "s"


# ---------------------------------------------------------------------------------------------
# Session and process state


@dataclasses.dataclass
class InterpreterSession:
    """What one :func:`interpreter_mode` block is configured with and what it saw.

    ``configs_used`` maps each autotuned kernel name launched to the index of the config it ran
    with; ``launches`` counts kernel launches; ``leaked`` lists Triton attributes found changed
    on exit and restored by the safety net (empty unless Triton misbehaved).
    """

    check_bounds: bool = True
    check_views: bool = True
    #: with ``check_views``: a load outside the views raises (else it is recorded in
    #: ``view_reads`` and the caller judges it by the outputs)
    strict_views: bool = True
    debug: bool = False
    configs: Mapping[str, int] = dataclasses.field(default_factory=dict)
    labels: Mapping[int, str] = dataclasses.field(default_factory=dict)
    launches: int = 0
    configs_used: dict[str, int] = dataclasses.field(default_factory=dict)
    leaked: tuple[str, ...] = ()
    #: with ``strict_views=False``: the first load outside the views passed (an
    #: :class:`OOBView` not raised) and how many such loads there were; None if none
    view_reads: tuple[OOBView, int] | None = None
    #: a ModeResult detail to record ``configs_used`` and ``config_counts`` in as well
    #: (:func:`fuzzkern.introspect.record_config`), set by the caller inside the block
    record: dict[str, Any] | None = None
    # the config each autotuner runs, per tuning key (the first call with a key is "cold")
    _choices: OneConfig | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class _Allocation:
    lo: int
    hi: int  # one past the last byte
    parameter: str
    label: str | None
    #: (shape, strides, storage offset, element size) of every view of this storage passed
    views: list[tuple[tuple[int, ...], tuple[int, ...], int, int]] = dataclasses.field(
        default_factory=list)
    #: bytes covered by those views (None: all of them, or views are not checked)
    coverage: np.ndarray | None = None


class _State:
    def __init__(self) -> None:
        self.depth = 0
        self.owner: int | None = None
        self.sessions: list[InterpreterSession] = []
        self.patched: list[tuple[Any, str, Any]] = []
        self.snapshots: list[tuple[Any, dict[str, Any]]] = []
        self.saved_options: Any = None
        self.autotuners: dict[int, tuple[Autotuner, dict[Any, Any] | None, Any]] = {}
        #: the ``run`` of Autotuner and of each subclass with its own, while installed
        self.autotuner_runs: dict[type, Any] = {}
        #: library launch caches emptied for the block (fuzzkern.introspect.LaunchCaches)
        self.launch_caches: LaunchCaches | None = None
        self.allocs: list[_Allocation] | None = None
        self.options_on: Any = None
        self.options_off: Any = None
        #: per open _patch_lang scope, innermost last: the language modules (ids) patched
        #: while it is open, and the helper scopes kept open until it closes
        self.scopes: list[tuple[frozenset[int], list[Any]]] = []

    @property
    def session(self) -> InterpreterSession:
        return self.sessions[-1]

    def mine(self) -> bool:
        return self.owner == threading.get_ident()


_STATE = _State()
#: one InterpretedFunction per Python kernel function (Triton caches the rewritten AST itself)
_INTERPRETED: dict[Callable[..., Any], Any] = {}


def _interpreted(jit_fn: JITFunction) -> Any:
    interp = _INTERPRETED.get(jit_fn.fn)
    if interp is None:
        interp = _INTERPRETED[jit_fn.fn] = FidelityInterpretedFunction(jit_fn.fn)
    # share the kernel's pre-run hooks, as JITFunction.run would call them
    interp.pre_run_hooks = getattr(jit_fn, "pre_run_hooks", [])
    return interp


# originals, captured at import (the patches are only ever installed over these)
_ORIG_JIT_RUN = JITFunction.run
_ORIG_JIT_CALL = JITFunction.__call__
_ORIG_AUTOTUNER_RUN = Autotuner.run
_ORIG_GRID_CALL = _interp.GridExecutor.__call__
_ORIG_INIT_ARGS_HST = _interp.GridExecutor._init_args_hst
_ORIG_PATCH_LANG_TENSOR = _interp._patch_lang_tensor
_ORIG_PATCH_LANG = _interp._patch_lang
_Builder = _interp.InterpreterBuilder
_TensorDescriptor = _interp.TensorDescriptor


_ORIG_REDUCE_TO_TENSOR = _interp.ReduceScanOpInterface.to_tensor


def _source_has(fn: Any, text: str, unknown: bool) -> bool:
    """Whether ``fn``'s source contains ``text`` (``unknown`` when the source is not found)."""
    try:
        return text in inspect.getsource(fn)
    except (OSError, TypeError):
        return unknown


#: Triton < 3.7 defines ``tensor.__index__`` as ``int(ndarray of shape (1,))``, an error on
#: numpy >= 2.4 (triton#9171); 3.9 squeezes first.
_NEEDS_INDEX_FIX = _source_has(_ORIG_PATCH_LANG_TENSOR, "int(self.handle.data)", True)
#: Triton < 3.9 builds a reduction's scalar result with ``np.array([ret], dtype=...)``, which
#: numpy >= 2 refuses for an out-of-range integer; 3.9 narrows with ``astype`` (wraps).
_NEEDS_REDUCE_FIX = _source_has(_ORIG_REDUCE_TO_TENSOR, "np.array([ret], dtype=np_dtype)", False)


def _reduce_to_tensor(self: Any, ret: Any, dtype: Any) -> Any:
    if not (hasattr(ret, "shape") and ret.shape):
        ret = np.array([ret]).astype(_interp._get_np_dtype(dtype))
        return tl_core.tensor(_interp.TensorHandle(ret, dtype.scalar), dtype)
    return _ORIG_REDUCE_TO_TENSOR(self, ret, dtype)


# ---------------------------------------------------------------------------------------------
# Launch redirection


def _jit_run(self: JITFunction, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
    if not _STATE.mine():
        with INTERPRETER_LOCK:  # wait for the interpreter block to end, then run compiled
            return _ORIG_JIT_RUN(self, *args, grid=grid, warmup=warmup, **kwargs)
    if warmup:
        return _LaunchHandle(self, args, kwargs)
    limitation = interp_fidelity.static_limitation(self.fn)
    if limitation is not None:  # every launch would raise it: say so before running any
        raise interp_fidelity.InterpreterUnsupported(limitation, static=True)
    session = _STATE.session
    session.launches += 1
    debug = bool(session.debug or kwargs.get("debug", getattr(self, "debug", False))
                 or triton.knobs.runtime.debug)
    builder = _interp.interpreter_builder
    before = builder.options
    builder.options = _STATE.options_on if debug else _STATE.options_off
    try:
        _interpreted(self).run(*args, grid=grid, warmup=False, **kwargs)
        return _LaunchHandle(self, args, kwargs)
    finally:
        builder.options = before


# A kernel decorated while ``TRITON_INTERPRET=1`` was set is upstream's InterpretedFunction, not
# a JITFunction: inside a session it runs as the JITFunction of the same Python function would
# (this interpreter's rewriter, fidelity checks and kernel coverage); outside, as upstream runs it.
_ORIG_INTERP_RUN = _interp.InterpretedFunction.run
_ORIG_INTERP_CALL = _interp.InterpretedFunction.__call__
#: Python function -> the JITFunction standing in for upstream's InterpretedFunction of it
_AS_JIT: dict[Callable[..., Any], JITFunction] = {}


def _as_jit(interp: Any) -> JITFunction:
    jit_fn = _AS_JIT.get(interp.fn)
    if jit_fn is None:
        jit_fn = _AS_JIT[interp.fn] = JITFunction(interp.fn)
    jit_fn.pre_run_hooks = interp.pre_run_hooks
    return jit_fn


def _upstream_run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
    if type(self) is _interp.InterpretedFunction and _STATE.mine():
        _jit_run(_as_jit(self), *args, grid=grid, warmup=warmup, **kwargs)
        return None
    return _ORIG_INTERP_RUN(self, *args, grid=grid, warmup=warmup, **kwargs)


def _upstream_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    if type(self) is _interp.InterpretedFunction and _STATE.mine():
        return _jit_call(_as_jit(self), *args, **kwargs)
    return _ORIG_INTERP_CALL(self, *args, **kwargs)


class _LaunchHandle:
    """What an interpreted ``JITFunction.run`` returns in place of the ``CompiledKernel``:
    libraries that cache the compiled kernel and launch it again directly (FlagGems'
    ``@libentry``: ``kernel[grid](*args)``) launch it interpreted. Its arguments are the
    kernel's parameters in order, with or without the constexprs (Triton 3.7 and later
    launch a compiled kernel without them); missing constexprs take this launch's values."""

    def __init__(self, fn: JITFunction, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        self.fn = fn
        params = list(fn.params)
        bound = {**dict(zip([p.name for p in params], args, strict=False)), **kwargs}
        self._constexprs = {p.name: bound[p.name] for p in params
                            if p.is_constexpr and p.name in bound}

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any) -> None:
            params = list(self.fn.params)
            if len(args) < len(params):
                values = iter(args)
                named = {p.name: next(values) for p in params if not p.is_constexpr}
                args = tuple(named[p.name] if p.name in named else self._constexprs[p.name]
                             for p in params if p.name in named or p.name in self._constexprs)
            self.fn.run(*args, grid=grid, warmup=False)

        return launch


_ORIG_COMPILED_GETITEM = CompiledKernel.__getitem__


def _compiled_getitem(self: CompiledKernel, grid: Any) -> Callable[..., Any]:
    """A ``CompiledKernel`` a library cached from an earlier compiled run of this process
    (FlagGems' ``@libentry`` keeps the kernel ``JITFunction.run`` returned and launches it
    again directly), launched inside the interpreter: interpreted, as :class:`_LaunchHandle`
    does (the CPU tensors of an interpreted case cannot reach the GPU kernel). Its constexprs
    are the ones it was compiled with."""
    fn = getattr(getattr(self, "src", None), "fn", None)
    if not _STATE.mine() or not isinstance(fn, JITFunction):
        return _ORIG_COMPILED_GETITEM(self, grid)
    names = list(fn.arg_names)
    constexprs = {names[k[0]]: v for k, v in getattr(self.src, "constants", {}).items()
                  if isinstance(k, tuple) and len(k) == 1 and k[0] < len(names)}
    return _LaunchHandle(fn, (), constexprs)[grid]


#: per @jit helper: (positions, names) of its constexpr parameters
_CONSTEXPR_PARAMS: dict[Any, tuple[tuple[int, ...], frozenset[str]]] = {}


def _constexpr_params(jit_fn: JITFunction) -> tuple[tuple[int, ...], frozenset[str]]:
    key = jit_fn.fn
    if key not in _CONSTEXPR_PARAMS:
        params = [p for p in getattr(jit_fn, "params", ()) if getattr(p, "is_constexpr", False)]
        _CONSTEXPR_PARAMS[key] = (tuple(int(p.num) for p in params),
                                  frozenset(str(p.name) for p in params))
    return _CONSTEXPR_PARAMS[key]


#: plain ints and floats get the .value compiled constexprs have
_as_constexpr = interp_fidelity.as_constexpr


def _jit_call(self: JITFunction, *args: Any, **kwargs: Any) -> Any:
    if not _STATE.mine():
        return _ORIG_JIT_CALL(self, *args, **kwargs)
    # A device-side call of a @jit helper or tl.standard function. Unlike upstream
    # InterpretedFunction.__call__, restore the language patch scope it opens.
    fn = _interpreted(self).rewrite()
    positions, names = _constexpr_params(self)
    if positions or names:  # plain ints and floats get the .value compiled constexprs have
        args = tuple(_as_constexpr(a) if i in positions else a for i, a in enumerate(args))
        kwargs = {k: _as_constexpr(v) if k in names else v for k, v in kwargs.items()}
    if _STATE.scopes:
        # Inside a launch. Patching the language modules again for every call (several
        # hundred attributes through inspect.getmembers, a third of an interpreted launch that
        # calls helpers in each program) would only wrap the patched builtins over themselves:
        # a helper whose modules the launch has not patched (tl.standard's see
        # triton.language.core) patches them once, kept until the launch ends.
        patched, held = _STATE.scopes[-1]
        if not _langs_of(self.fn) <= patched:
            held.append(_interp._patch_lang(self.fn))
        return fn(*args, **kwargs)
    scope = _interp._patch_lang(self.fn)
    try:
        return fn(*args, **kwargs)
    finally:
        scope.restore()


#: per Python function: ids of the language modules its globals hold (what Triton's
#: ``_patch_lang`` patches for it: ``triton.language`` and ``triton.language.core``)
_LANGS: dict[Any, frozenset[int]] = {}


def _langs_of(fn: Any) -> frozenset[int]:
    langs = _LANGS.get(fn)
    if langs is None:
        langs = _LANGS[fn] = frozenset(
            id(v) for v in list(getattr(fn, "__globals__", {}).values())
            if v is tl or v is tl_core)
    return langs


def _patch_lang(fn: Any) -> Any:
    """Triton's ``_patch_lang``, recording which language modules stay patched until the
    scope it returns is restored (see :func:`_jit_call`)."""
    scope = _ORIG_PATCH_LANG(fn)
    if _STATE.mine():
        outer = _STATE.scopes[-1][0] if _STATE.scopes else frozenset()
        held: list[Any] = []
        _STATE.scopes.append((outer | _langs_of(fn), held))
        restore = scope.restore

        def restore_all() -> None:
            while held:  # helper scopes opened inside this one, innermost first
                held.pop().restore()
            restore()
            if _STATE.scopes:
                _STATE.scopes.pop()

        scope.restore = restore_all
    return scope


def _jit_get(self: JITFunction, obj: Any, objtype: Any = None) -> Any:
    # Only tensor member functions (x.sum(), x.argmax()) bind; a kernel kept as an attribute of
    # a user class must stay a JITFunction so ``self.kernel[grid]`` still works.
    if obj is not None and isinstance(obj, tl_core.tensor) and _STATE.mine():
        return types.MethodType(self, obj)
    return self


def _patch_lang_tensor(tensor: Any, scope: Any) -> None:
    _ORIG_PATCH_LANG_TENSOR(tensor, scope)
    # The scope restores in LIFO order, so this second patch unwinds cleanly.
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))


# ---------------------------------------------------------------------------------------------
# Autotuner: no benchmarking, forced or first pruned config


def _autotuner_run(self: Autotuner, *args: Any, **kwargs: Any) -> Any:
    if not _STATE.mine():
        with INTERPRETER_LOCK:
            runs = _STATE.autotuner_runs or {Autotuner: _ORIG_AUTOTUNER_RUN}
            own = next(c for c in type(self).__mro__ if c in runs)
            return runs[own](self, *args, **kwargs)
    session = _STATE.session
    if id(self) not in _STATE.autotuners:  # first touch in this block: snapshot for exit
        _STATE.autotuners[id(self)] = (self, cache_snapshot(self.cache),
                                       getattr(self, "best_config", _MISSING))
    self.nargs = dict(zip(self.arg_names, args, strict=False))
    try:
        if session._choices is None:
            session._choices = OneConfig(session.configs)
        # forced, or the first pruned config once per tuning key: never benchmarked (a cold
        # upstream call with several surviving configs benchmarks, then resets
        # `reset_to_zero` once before the real run: `reset` mirrors that)
        config, index, reset = session._choices.choose(self, args, kwargs)
        if index is not None:
            session.configs_used[kernel_name(self)] = index
            record_config([session.record] if session.record is not None else (), self, index)
        self.best_config = config
        full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
        if reset:
            self.pre_hook(full_nargs, reset_only=True)
        if config.pre_hook is not None:
            config.pre_hook(full_nargs)
        return self.fn.run(*args, **kwargs, **config.all_kwargs())
    finally:
        self.nargs = None


# ---------------------------------------------------------------------------------------------
# Bounds checker


#: measures each interpreted launch program by program, for the parent's case clock
_METER = LaunchMeter()
_ORIG_SET_GRID_DIM = _Builder.set_grid_dim
_ORIG_SET_GRID_IDX = _Builder.set_grid_idx


def _set_grid_dim(self: Any, nx: int, ny: int, nz: int) -> Any:
    if _STATE.mine():
        _METER.begin(int(nx) * int(ny) * int(nz))
    return _ORIG_SET_GRID_DIM(self, nx, ny, nz)


def _set_grid_idx(self: Any, x: int, y: int, z: int) -> Any:
    if _STATE.mine():
        _METER.tick()
    return _ORIG_SET_GRID_IDX(self, x, y, z)


def _grid_call(self: Any, *args_dev: Any, **kwargs: Any) -> Any:
    if not _STATE.mine():
        return _ORIG_GRID_CALL(self, *args_dev, **kwargs)
    outer = _STATE.allocs
    _STATE.allocs = None
    try:
        return _ORIG_GRID_CALL(self, *args_dev, **kwargs)
    except InterpreterError as e:
        # GridExecutor wraps kernel exceptions as InterpreterError(repr(e)) from e; hand the
        # caller the OOBAccess itself.
        cause: BaseException | None = e
        for _ in range(8):  # nested wrappers, e.g. from upstream InterpretedFunction.__call__
            cause = cause.__cause__ if cause is not None else None
            if isinstance(cause, OOBAccess):
                raise cause.with_traceback(cause.__traceback__) from None
            if not isinstance(cause, InterpreterError):
                break
        raise
    finally:
        _METER.end()
        _STATE.allocs = outer


def _storage_of(t: Any) -> Any:
    if isinstance(t, TensorWrapper):
        t = t.base
    return t.untyped_storage()


def _collect(dev: Any, hst: Any, name: str, out: dict[int, _Allocation],
             labels: Mapping[int, str]) -> None:
    if isinstance(hst, tuple) and isinstance(dev, tuple):
        for i, (d, h) in enumerate(zip(dev, hst, strict=False)):
            _collect(d, h, f"{name}[{i}]", out, labels)
        return
    if isinstance(hst, _TensorDescriptor):  # its memory is its base tensor's
        _collect(getattr(dev, "base", dev), hst.base, name, out, labels)
        return
    if not hasattr(hst, "data_ptr"):
        return
    st_h = _storage_of(hst)
    lo = st_h.data_ptr()
    if lo not in out:
        try:
            label = labels.get(_storage_of(dev).data_ptr())
        except Exception:
            label = None
        out[lo] = _Allocation(lo, lo + st_h.nbytes(), name, label)
    base = hst.base if isinstance(hst, TensorWrapper) else hst
    try:
        spec = (tuple(base.shape), tuple(base.stride()), int(base.storage_offset()),
                int(base.element_size()))
    except Exception:  # not a torch tensor: its whole storage counts as given
        spec = None
    out[lo].views.append(spec)  # type: ignore[arg-type]


def _coverage(a: _Allocation) -> np.ndarray | None:
    """Bytes of ``a`` covered by its views; None when that is every byte (nothing to check)."""
    from fuzzkern.execution.hygiene import view_coverage

    nbytes = a.hi - a.lo
    if any(v is None for v in a.views):
        return None
    for shape, strides, offset, itemsize in a.views:
        n = 1
        for s in shape:
            n *= s
        dense = _dense_strides(shape)
        contiguous = all(st == c for s, st, c in zip(shape, strides, dense, strict=True) if s > 1)
        if offset == 0 and n * itemsize == nbytes and contiguous:
            return None
    cov = view_coverage(a.views, nbytes).numpy()
    return None if cov.all() else cov


def _dense_strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return out[::-1]


def _as_tensor(arg: Any) -> Any:
    """A library's own tensor-like launch argument (FlagGems' ``StridedBuffer``: ``data_ptr()``,
    ``dtype``, ``untyped_storage()``, ``shape``, ``stride()``, but no torch methods) as a torch
    view of the same memory, which Triton's interpreter can copy; anything else as it is (and
    a view torch cannot express, such as negative strides)."""
    import torch

    if isinstance(arg, (torch.Tensor, TensorWrapper)) or not hasattr(arg, "data_ptr"):
        return arg
    try:
        storage = arg.untyped_storage()
        dtype = arg.dtype
        offset, rest = divmod(int(arg.data_ptr()) - storage.data_ptr(), dtype.itemsize)
        shape, strides = tuple(arg.shape), tuple(arg.stride())
        if rest or offset < 0 or any(st < 0 for st in strides):
            return arg
        return torch.empty(0, dtype=dtype).set_(storage, offset, shape, strides)
    except (AttributeError, TypeError, RuntimeError):
        return arg


def _init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
    if _STATE.mine():
        args_dev = [_as_tensor(a) for a in args_dev]
        kwargs = {k: _as_tensor(v) for k, v in kwargs.items()}
    args_hst, kwargs_hst = _ORIG_INIT_ARGS_HST(self, args_dev, kwargs)
    constexprs = set(getattr(self, "constexprs", ()) or ())
    if _STATE.mine() and constexprs:  # the kernel's constexprs get .value, as compiled
        names = list(self.arg_names)
        args_hst = type(args_hst)(
            _as_constexpr(h) if i < len(names) and names[i] in constexprs else h
            for i, h in enumerate(args_hst))
        kwargs_hst = {k: _as_constexpr(h) if k in constexprs else h
                      for k, h in kwargs_hst.items()}
    if _STATE.mine() and _STATE.session.check_bounds:
        labels = _STATE.session.labels
        allocs: dict[int, _Allocation] = {}
        names = list(self.arg_names)
        for i, (d, h) in enumerate(zip(args_dev, args_hst, strict=False)):
            _collect(d, h, names[i] if i < len(names) else f"arg{i}", allocs, labels)
        for k, h in kwargs_hst.items():
            _collect(kwargs[k], h, k, allocs, labels)
        if _STATE.session.check_views:
            for a in allocs.values():
                a.coverage = _coverage(a)
        _STATE.allocs = list(allocs.values())
    return args_hst, kwargs_hst


_RMW_NAMES = {"FADD": "add", "UMAX": "max", "UMIN": "min"}

# Pointer provenance, for naming the argument of an access that is far outside every
# allocation (nearest-by-address would name whichever storage happens to lie highest).
# ``create_addptr`` results remember the allocation their input pointer was in; numpy views
# (broadcast, expand_dims, reshape) are traced back to that result through ``.base``.
_PROVENANCE: dict[int, tuple[weakref.ref[np.ndarray], _Allocation]] = {}


def _root(arr: np.ndarray) -> np.ndarray:
    for _ in range(32):
        base = arr.base
        if not isinstance(base, np.ndarray):
            break
        arr = base
    return arr


def _provenance(arr: Any) -> _Allocation | None:
    if not isinstance(arr, np.ndarray):
        return None
    root = _root(arr)
    hit = _PROVENANCE.get(id(root))
    if hit is not None and hit[0]() is root:
        return hit[1]
    allocs = _STATE.allocs
    if allocs and arr.size:
        first = int(arr.reshape(-1)[0])
        for a in allocs:
            if a.lo <= first < a.hi:
                return a
    return None


def _forget(key: int) -> Callable[[Any], None]:
    def forget(_ref: Any) -> None:
        _PROVENANCE.pop(key, None)

    return forget


def _wrap_addptr(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_addptr(self: Any, ptr: Any, offset: Any, *rest: Any, **kw: Any) -> Any:
        out = orig(self, ptr, offset, *rest, **kw)
        if _STATE.allocs is not None and _STATE.mine():
            alloc = _provenance(ptr.data)
            data = getattr(out, "data", None)
            if alloc is not None and isinstance(data, np.ndarray):
                root = _root(data)
                key = id(root)
                try:
                    _PROVENANCE[key] = (weakref.ref(root, _forget(key)), alloc)
                except TypeError:
                    pass
        return out

    return create_addptr


def _check(op: str, ptrs: Any, mask: Any) -> None:
    allocs = _STATE.allocs
    if allocs is None or not _STATE.mine() or not _STATE.session.check_bounds:
        return
    addr = ptrs.data
    if addr.dtype != np.uint64:
        addr = addr.astype(np.uint64)
    size = max(1, ptrs.get_element_ty().primitive_bitwidth // 8)
    if addr.size:
        # fast path: every lane, masked or not, inside one allocation
        amin, amax = int(addr.min()), int(addr.max())
        for a in allocs:
            if a.lo <= amin and amax + size <= a.hi:
                if a.coverage is not None:
                    _check_view(op, addr, mask, size, [a])
                return
    ok = None
    for a in allocs:
        last = a.hi - size
        if last < a.lo:
            continue
        inside = (addr >= np.uint64(a.lo)) & (addr <= np.uint64(last))
        ok = inside if ok is None else (ok | inside)
    bad = ~ok if ok is not None else np.ones(addr.shape, dtype=bool)
    if mask is not None:
        m = _mask_array(mask)
        if m.shape != addr.shape:
            m = np.broadcast_to(m, addr.shape)
        bad &= m.astype(bool, copy=False)
    if bad.any():
        _raise_oob(op, addr, bad, size, allocs, _provenance(ptrs.data))
    viewed = [a for a in allocs if a.coverage is not None]
    if viewed:
        _check_view(op, addr, mask, size, viewed)


def _mask_array(mask: Any) -> np.ndarray:
    """A load's or store's mask as a numpy array: a tensor handle's data, or the bare array a
    block pointer's boundary check makes (Triton 3.6 passes that one as it is)."""
    return np.asarray(mask.data if isinstance(mask, _interp.TensorHandle) else mask)


def _check_view(op: str, addr: np.ndarray, mask: Any, size: int,
                allocs: list[_Allocation]) -> None:
    """Active lanes inside one of ``allocs`` (storages with uncovered bytes) must address
    bytes covered by the views passed to the kernel, first and last byte of the element."""
    active = None
    if mask is not None:
        active = _mask_array(mask).astype(bool, copy=False)
        if active.shape != addr.shape:
            active = np.broadcast_to(active, addr.shape)
    flat = addr.reshape(-1)
    flat_active = None if active is None else active.reshape(-1)
    bad = np.zeros(flat.shape, dtype=bool)
    for a in allocs:
        cov = a.coverage
        assert cov is not None
        sel = (flat >= np.uint64(a.lo)) & (flat <= np.uint64(a.hi - size))
        if flat_active is not None:
            sel &= flat_active
        if not sel.any():
            continue
        offs = (flat[sel] - np.uint64(a.lo)).astype(np.int64)
        inside = cov[offs] & cov[offs + (size - 1)]
        if inside.all():
            continue
        bad[np.flatnonzero(sel)[~inside]] = True
    if not bad.any():
        return
    lane = int(np.flatnonzero(bad)[0])
    address = int(flat[lane])
    a = next(x for x in allocs if x.lo <= address < x.hi)
    cov = a.coverage
    assert cov is not None
    off = address - a.lo
    covered = np.flatnonzero(cov)
    if covered.size == 0 or off < covered[0]:
        region = "before the view"
    elif off > covered[-1]:
        region = "after the view"
    else:
        region = "gap"
    views = "; ".join(
        f"shape {tuple(v[0])}, strides {tuple(v[1])}, offset {v[2]}" for v in a.views if v)
    gx, gy, gz = _interp.interpreter_builder.grid_idx or (0, 0, 0)
    err = OOBView(op=op, program_id=(int(gx), int(gy), int(gz)), lane=lane, address=address,
                  n_bad=int(bad.sum()), n_lanes=int(bad.size), parameter=a.parameter,
                  argument=a.label or a.parameter, storage_index=off // size, region=region,
                  view=views, element_size=size, allocation_bytes=a.hi - a.lo,
                  location=kernel_location())
    session = _STATE.session
    if op == "load" and not session.strict_views:
        # Inside the storage, so reading is safe: let the outputs say whether it mattered.
        first, count = session.view_reads or (err, 0)
        session.view_reads = (first, count + 1)
        return
    raise err


def _distance(a: _Allocation, address: int, size: int) -> tuple[int, bool]:
    """Bytes by which ``size`` bytes at ``address`` overrun ``a`` (>= 1), and whether before
    its start: the element right after the end is 1 element (``size`` bytes) past it."""
    if address < a.lo:
        return a.lo - address, True
    return max(address + size - a.hi, 1), False


def _raise_oob(op: str, addr: np.ndarray, bad: np.ndarray, size: int,
               allocs: list[_Allocation], origin: _Allocation | None) -> None:
    flat_bad = bad.reshape(-1)
    lane = int(np.flatnonzero(flat_bad)[0])
    address = int(addr.reshape(-1)[lane])
    best: tuple[int, bool, _Allocation] | None = None
    if origin is not None:
        best = (*_distance(origin, address, size), origin)
    else:
        for a in allocs:
            if a.hi <= a.lo and a.lo == 0:
                continue
            dist, before = _distance(a, address, size)
            if best is None or dist < best[0]:
                best = (dist, before, a)
    gx, gy, gz = _interp.interpreter_builder.grid_idx or (0, 0, 0)
    where = dict(op=op, program_id=(int(gx), int(gy), int(gz)), lane=lane, address=address,
                 n_bad=int(flat_bad.sum()), n_lanes=int(flat_bad.size), element_size=size)
    if best is None:
        raise _make_oob(dict(parameter=None, argument=None, distance_bytes=None,
                             distance_elements=None, before_start=False, allocation_bytes=None,
                             location=kernel_location(), **where))
    dist, before, a = best
    raise _make_oob(dict(parameter=a.parameter, argument=a.label or a.parameter,
                         distance_bytes=dist, distance_elements=-(-dist // size),
                         before_start=before, allocation_bytes=a.hi - a.lo,
                         location=kernel_location(), **where))


def _bool_mask(mask: Any) -> Any:
    """Triton 3.9's interpreter can build an int32 mask (``block_mask & (scalar < M)``) and
    then rejects it ("mask has unsupported dtype"); compiled Triton keeps such masks i1. Cast
    to bool, as compiled code does, so a correct kernel is not reported."""
    data = getattr(mask, "data", None)
    if isinstance(data, np.ndarray) and data.dtype != np.bool_ and data.dtype.kind in "iu":
        return _interp.TensorHandle(data.astype(np.bool_), tl.int1)
    return mask


def _wrap_load(orig: Callable[..., Any], op: str) -> Callable[..., Any]:
    def create_masked_load(self: Any, ptrs: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        mask = _bool_mask(mask)
        _check(op, ptrs, mask)
        return orig(self, ptrs, mask, *rest, **kw)

    return create_masked_load


def _wrap_store(orig: Callable[..., Any], op: str) -> Callable[..., Any]:
    def create_masked_store(self: Any, ptrs: Any, value: Any, mask: Any, *rest: Any,
                            **kw: Any) -> Any:
        mask = _bool_mask(mask)
        _check(op, ptrs, mask)
        return orig(self, ptrs, value, mask, *rest, **kw)

    return create_masked_store


def _wrap_rmw(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_rmw(self: Any, rmw_op: Any, ptr: Any, val: Any, mask: Any, *rest: Any,
                          **kw: Any) -> Any:
        raw = str(getattr(rmw_op, "name", rmw_op)).split(".")[-1].upper()
        _check("atomic_" + _RMW_NAMES.get(raw, raw.lower()), ptr, mask)
        return orig(self, rmw_op, ptr, val, mask, *rest, **kw)

    return create_atomic_rmw


def _wrap_cas(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_cas(self: Any, ptr: Any, cmp: Any, val: Any, *rest: Any, **kw: Any) -> Any:
        _check("atomic_cas", ptr, None)  # no mask: every lane is active
        return orig(self, ptr, cmp, val, *rest, **kw)

    return create_atomic_cas


def _wrap_atomic_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_load(self: Any, ptr: Any, mask: Any, *rest: Any, **kw: Any) -> Any:
        _check("atomic_load", ptr, mask)
        return orig(self, ptr, mask, *rest, **kw)

    return create_atomic_load


def _wrap_atomic_store(orig: Callable[..., Any]) -> Callable[..., Any]:
    def create_atomic_store(self: Any, ptr: Any, val: Any, mask: Any, *rest: Any,
                            **kw: Any) -> Any:
        _check("atomic_store", ptr, mask)
        return orig(self, ptr, val, mask, *rest, **kw)

    return create_atomic_store


def _builder_patches() -> list[tuple[str, Callable[..., Any]]]:
    """Memory ops of InterpreterBuilder, whichever exist in this Triton. Loads/stores without
    a mask, tensor-pointer (3.6) and tensor-descriptor ops all funnel into the masked ones."""
    wrappers: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
        "create_masked_load": lambda f: _wrap_load(f, "load"),
        "create_masked_store": lambda f: _wrap_store(f, "store"),
        "create_atomic_rmw": _wrap_rmw,
        "create_atomic_cas": _wrap_cas,
        "create_atomic_load": _wrap_atomic_load,  # 3.9 only
        "create_atomic_store": _wrap_atomic_store,  # 3.9 only
        "create_addptr": _wrap_addptr,
    }
    out = []
    for name, wrap in wrappers.items():
        orig = vars(_Builder).get(name)
        if orig is not None:
            out.append((name, wrap(orig)))
    return out


_BUILDER_PATCHES = _builder_patches()


# ---------------------------------------------------------------------------------------------
# Install / uninstall


def _snapshot_targets() -> list[Any]:
    targets: list[Any] = [tl, tl_core, tl_math, tl_standard, _interp, JITFunction, Autotuner,
                          Heuristics, _interp.GridExecutor, _Builder, _interp.InterpretedFunction,
                          tl_core.tensor, tl_core.dtype, _interp.ReduceOps,
                          *interp_fidelity.libdevice_modules().values()]
    for name in ("condition", "tensor_descriptor_base", "tensor_descriptor"):
        cls = getattr(tl_core, name, None)
        if isinstance(cls, type):
            targets.append(cls)
    return targets


_SNAPSHOT_TARGETS = _snapshot_targets()


def _set(obj: Any, name: str, value: Any) -> None:
    _STATE.patched.append((obj, name, vars(obj).get(name, _MISSING)))
    setattr(obj, name, value)


def _set_module(module: types.ModuleType, values: dict[str, Any]) -> None:
    """:func:`_set` for many names of ``module`` at once (one update of its ``__dict__``;
    the libdevice modules take several hundred per install), recorded as one entry
    ``(module, "", {name: previous value})``."""
    d = vars(module)
    # a name the module does not have (yet) is removed again on uninstall
    _STATE.patched.append((module, "", {k: d.get(k, _MISSING) for k in values}))
    d.update(values)


def _install() -> None:
    _STATE.snapshots = [(obj, dict(vars(obj))) for obj in _SNAPSHOT_TARGETS]
    _set(JITFunction, "run", _jit_run)
    _set(CompiledKernel, "__getitem__", _compiled_getitem)
    _set(JITFunction, "__call__", _jit_call)
    _set(JITFunction, "__get__", _jit_get)
    _STATE.autotuner_runs = {cls: vars(cls)["run"] for cls in autotuner_classes()}
    for cls in _STATE.autotuner_runs:
        _set(cls, "run", _autotuner_run)
    _STATE.launch_caches = LaunchCaches()  # a library's launch cache asks the autotuner again
    for cls, run in _STATE.launch_caches.runs().items():
        _set(cls, "run", run)
    # after the launch caches' (they count InterpretedFunction among the launch wrappers)
    _set(_interp.InterpretedFunction, "run", _upstream_run)
    _set(_interp.InterpretedFunction, "__call__", _upstream_call)
    _set(_interp.GridExecutor, "__call__", _grid_call)
    _set(_interp, "_patch_lang", _patch_lang)
    _STATE.scopes = []
    _set(_interp.GridExecutor, "_init_args_hst", _init_args_hst)
    _set(_Builder, "set_grid_dim", _set_grid_dim)
    _set(_Builder, "set_grid_idx", _set_grid_idx)
    for name, fn in _BUILDER_PATCHES:
        _set(_Builder, name, fn)
    singles, modules = interp_fidelity.grouped_patches()
    for obj, name, value in singles:
        _set(obj, name, value)
    for module, values in modules:
        _set_module(module, values)
    if _NEEDS_INDEX_FIX:
        _set(_interp, "_patch_lang_tensor", _patch_lang_tensor)
    if _NEEDS_REDUCE_FIX:
        _set(_interp.ReduceScanOpInterface, "to_tensor", _reduce_to_tensor)
    for obj, name, value in widened_patches():  # last: it wraps the ops set above
        _set(obj, name, value)
    builder = _interp.interpreter_builder
    _STATE.saved_options = builder.options
    # sanitize_overflow only builds checks that a non-debug device_assert then drops: off is
    # the same semantics, faster.
    _STATE.options_on = dataclasses.replace(builder.options, debug=True, sanitize_overflow=True)
    _STATE.options_off = dataclasses.replace(builder.options, debug=False,
                                             sanitize_overflow=False)


def _uninstall() -> tuple[str, ...]:
    while _STATE.patched:
        obj, name, orig = _STATE.patched.pop()
        if name == "":  # a module's names, set by _set_module
            d = vars(obj)
            if _MISSING in orig.values():
                for k in [k for k, v in orig.items() if v is _MISSING]:
                    d.pop(k, None)
                orig = {k: v for k, v in orig.items() if v is not _MISSING}
            d.update(orig)
        elif orig is _MISSING:
            delattr(obj, name)
        else:
            setattr(obj, name, orig)
    if _STATE.saved_options is not None:
        _interp.interpreter_builder.options = _STATE.saved_options
        _STATE.saved_options = None
    for at, cache, best in _STATE.autotuners.values():
        restore_autotuner(at, cache, best, _MISSING)
    _STATE.autotuners.clear()
    if _STATE.launch_caches is not None:  # (its classes' run: put back with the patches)
        _STATE.launch_caches.restore()
        _STATE.launch_caches = None
    _STATE.allocs = None
    _STATE.scopes = []
    # Safety net: anything else Triton left changed (e.g. a leaked language patch) goes back.
    leaked = []
    for obj, snap in _STATE.snapshots:
        current = vars(obj)
        if (len(current) == len(snap) and snap.keys() == current.keys()
                and all(map(operator.is_, map(current.__getitem__, snap), snap.values()))):
            continue  # the same names bound to the same objects (checked in C): as before
        for key, value in snap.items():
            if current.get(key, _MISSING) is not value:
                setattr(obj, key, value)
                leaked.append(f"{getattr(obj, '__name__', obj)}.{key}")
        # Never delete names added to a module: Triton's interpreter copies its own globals
        # (np, interpreter_semantic, ...) into each @jit function's module, and the cached
        # rewritten functions need them on the next interpreted launch (a NameError otherwise).
        if isinstance(obj, type):
            for key in [k for k in current if k not in snap]:
                added = current[key]
                if key == "__annotations__" and added == {}:
                    continue  # created lazily by any getattr (inspect.getmembers): benign
                delattr(obj, key)
                # Triton's own patch scope "restores" an inherited attribute (tensor.__repr__)
                # by setting it on the class: the same object, so no real change.
                if getattr(obj, key, _MISSING) is not added:
                    leaked.append(f"{obj.__name__}.{key} (added)")
    _STATE.snapshots = []
    return tuple(leaked)


@contextlib.contextmanager
def interpreter_mode(*, check_bounds: bool = True, check_views: bool = True,
                     strict_views: bool = True, debug: bool = False,
                     configs: Mapping[str, int] | None = None,
                     labels: Mapping[int, str] | None = None) -> Iterator[InterpreterSession]:
    """Run every ``@triton.jit`` launch inside the block in Triton's interpreter.

    ``check_bounds``: check every active lane of every load, store and atomic against the
    storages of the launch's tensor arguments and raise :class:`OOBAccess` before touching
    memory. ``check_views`` (with ``check_bounds``): an active lane must also address an
    element of a view passed to the launch, not a gap of its storage or storage outside the
    view; else :class:`OOBView`. ``strict_views=False``: a *load* outside the views (inside
    the storage) does not raise; the first one and a count are recorded in the session's
    ``view_reads`` for the caller to judge (a base-pointer use reads correct data).
    ``debug``: turn on ``tl.device_assert`` and integer overflow checks (a kernel launched
    with ``debug=True`` or declared ``@triton.jit(debug=True)`` gets them as well, as
    compiled). ``configs``: autotuned kernel name -> index into its
    ``configs`` to force (names as :func:`~fuzzkern.introspect.autotuner_config_counts`
    reports them); kernels not named run their first pruned config, and nothing is ever
    benchmarked. ``labels``: storage
    ``data_ptr`` -> name to use in :class:`OOBAccess` messages instead of the parameter name.

    Yields an :class:`InterpreterSession`. Re-entrant (an inner block's settings apply inside
    it); exclusive across threads (see :data:`INTERPRETER_LOCK`).

    >>> with interpreter_mode(configs={"matmul_kernel": 1}) as session:
    ...     pass
    >>> session.launches
    0
    """
    forced = dict(configs or {})
    for name, index in forced.items():
        if not isinstance(name, str) or not isinstance(index, int) or isinstance(index, bool):
            raise ForcedConfigError(
                f"Expected configs to map kernel names (str) to config indices (int), but got "
                f"{name!r}: {index!r} (type={type(index).__name__})."
            )
    session = InterpreterSession(check_bounds=bool(check_bounds),
                                 check_views=bool(check_bounds and check_views),
                                 strict_views=bool(strict_views), debug=bool(debug),
                                 configs=forced, labels=dict(labels or {}))
    INTERPRETER_LOCK.acquire()
    try:
        if _STATE.depth == 0:
            _STATE.owner = threading.get_ident()
            try:
                with stage("install"):
                    _install()
            except BaseException:
                _uninstall()
                _STATE.owner = None
                raise
        _STATE.depth += 1
        _STATE.sessions.append(session)
        outer_allocs = _STATE.allocs
        try:
            yield session
        finally:
            _STATE.sessions.pop()
            _STATE.depth -= 1
            _STATE.allocs = outer_allocs
            if _STATE.depth == 0:
                try:
                    with stage("install"):
                        session.leaked = _uninstall()
                finally:
                    _STATE.owner = None
    finally:
        INTERPRETER_LOCK.release()


def live_allocations() -> list[tuple[int, int]]:
    """(first byte, one past the last) of each storage the launch running now was passed
    (empty outside a launch, or without bounds checks)."""
    return [(a.lo, a.hi) for a in _STATE.allocs or ()]


def current_program_id() -> tuple[int, int, int]:
    """The program the interpreter ran last (the failing one, right after a kernel raised)."""
    idx = getattr(_interp.interpreter_builder, "grid_idx", None) or (0, 0, 0)
    return (int(idx[0]), int(idx[1]), int(idx[2]))


def run_interpreted(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` inside :func:`interpreter_mode` with its defaults (bounds checked,
    no debug); use the context manager directly for other options.

    >>> run_interpreted(lambda a, b: a + b, 1, 2)
    3
    """
    with interpreter_mode():
        return fn(*args, **kwargs)
