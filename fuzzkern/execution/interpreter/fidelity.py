"""Compiled semantics where Triton's interpreter runs Python's (the gaps fuzzkern closes).

Installed by :func:`fuzzkern.execution.interpreter.core.interpreter_mode` for the length of its
block, on Triton 3.6 and 3.9, and removed on exit. Each gap, the compiled behaviour and the
upstream issue are listed in docs/interpreter.md (generated from tests/fidelity/, the
differential self-check that runs each construct in the interpreter and compiled).

* **Boolean operators on tensors.** The compiler lowers ``a and b`` / ``a or b`` to
  ``logical_and`` / ``logical_or`` (short-circuiting only on compile-time constants) and
  ``not t`` to ``t.__not__()``; the interpreter runs Python's, so a 2x2 mask ``r < 1 and c < 2``
  is whichever operand Python picks. The rewriter below turns them into calls with the
  compiler's rules. A chained comparison ``0 <= x < n`` is ``(0 <= x) and (x < n)`` with ``x``
  evaluated once where the compiler accepts it (Triton 3.9); where the compiler rejects it
  (Triton 3.6: "simultaneous multiple comparison is not supported") the interpreter raises
  the same ``UnsupportedLanguageConstruct``, instead of running what could not be compiled.
* **Scalar arguments.** The compiler types a Python float argument ``fp32`` and an int ``i32``,
  ``i64`` or ``u64`` by its value; the interpreter keeps a float a Python float (``eps.to``
  raises; ``fp16 * 1e-14`` underflows in a weak-typed product) and types ints ``uint32`` in
  ``[2**31, 2**32)``.
* **``tl.dtype`` in helpers.** A dtype passed to a ``@jit`` helper is a ``constexpr`` compiled,
  so ``DT.value`` works; the interpreter passes the bare dtype. ``tl.dtype`` gets ``value``;
  int and float constexprs get it from :mod:`fuzzkern.execution.interpreter.core`, which passes
  them to the kernel and its helpers as int/float subclasses with ``.value``.
* **Interpreter limitations** (:func:`interpreter_limitation`): what the interpreter cannot
  run is told from what the kernel got wrong, so the case is ``unsupported``, not ``error``.
* **libdevice.** ``triton.language.extra.libdevice`` functions are stubs the compiler maps to a
  backend's implementation; the interpreter calls the stub (returns None) or the CUDA/HIP
  wrapper without a semantic ("Did you forget to add @triton.jit"), and
  ``create_extern_elementwise`` raises. Here every libdevice function resolves to the CUDA
  wrapper (same argument typing and result dtype as compiled) and the extern call runs a numpy
  (or torch, for the special functions numpy lacks) equivalent at the result's precision.
* **NaN in max/min/argmax/argmin.** Compiled ``tl.max`` ignores NaN (``maxnumf``) and an
  all-NaN row gives NaN; ``tl.argmax``'s combine function never prefers a NaN and so picks the
  last lane of an all-NaN row. Triton 3.9's interpreter raises on an all-NaN row
  (``np.nanargmax``), Triton 3.6's propagates NaN (``np.max``/``np.argmax``). In a row that
  mixes NaN and numbers, the compiled index depends on the order in which the layout combines
  lanes (a NaN wins whenever it is the second operand): not reproducible without the layout;
  the interpreter picks the first extreme non-NaN element, one of the compiled outcomes.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import operator
import os
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import triton
import triton.language as tl
import triton.language.core as tl_core
import triton.runtime.interpreter as _interp
from triton.compiler.errors import CompilationError, UnsupportedLanguageConstruct

from fuzzkern.errors import text_of
from fuzzkern.execution.interpreter import fastpath
from fuzzkern.execution.interpreter.coverage import PROBES, instrument

__all__ = ["CompileError", "ConstFloat", "ConstInt", "FidelityRewriter",
           "InterpreterUnsupported", "LoopRange", "as_constexpr", "compile_refusal",
           "grouped_patches", "interpreter_limitation", "libdevice_modules",
           "static_limitation"]


class InterpreterUnsupported(NotImplementedError):
    """The interpreter cannot run this construct; the case is ``unsupported``, with the reason.
    ``static``: found in the kernel's source before it ran, on a path every launch takes (every
    case of the kernel would end so)."""

    def __init__(self, message: str, static: bool = False) -> None:
        super().__init__(message)
        self.static = static


#: what Triton's interpreter raises for a construct it does not implement (3.6 to 3.9): the
#: messages of its own ValueError/TypeError ("unsupported semantic", "unsupported rmwOp",
#: "unsupported padding", "unsupported type", "Multiple assignments are not supported")
_LIMITATION_TEXTS = ("not supported in interpreter", "unsupported semantic", "unsupported rmwop",
                     "unsupported padding", "unsupported type", "are not supported")


def _innermost_file(e: BaseException) -> str:
    """The file of the innermost frame of ``e``'s traceback, with forward slashes."""
    tb = e.__traceback__
    last = ""
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last.replace("\\", "/")


def _raised_in_interpreter(e: BaseException) -> bool:
    """Whether the innermost frame of ``e``'s traceback is Triton's interpreter module."""
    return _innermost_file(e).endswith("triton/runtime/interpreter.py")


def interpreter_limitation(e: BaseException) -> bool:
    """Whether ``e`` (a kernel's exception under the interpreter, unwrapped from Triton's
    InterpreterError) is a limitation of Triton's interpreter rather than a bug of the kernel:
    ``NotImplementedError`` (inline asm, extern calls, :class:`InterpreterUnsupported`), an
    interpreter builder method that does not exist (an op the interpreter never implemented),
    or a ValueError/TypeError raised by the interpreter module itself saying the construct is
    unsupported. Such a case is ``unsupported``, never ``error``: not shrunk, not saved."""
    if isinstance(e, NotImplementedError):
        return True
    text = text_of(e)
    if isinstance(e, AttributeError) and "'InterpreterBuilder' object has no attribute" in text:
        return True
    if isinstance(e, (ValueError, TypeError)) and _raised_in_interpreter(e):
        low = text.lower()
        return any(t in low for t in _LIMITATION_TEXTS)
    return "not supported in interpreter" in text


#: what Triton's interpreter cannot run, by the name a kernel calls it with, in words
_UNRUNNABLE = {"inline_asm_elementwise": "inline assembly (`tl.inline_asm_elementwise`)"}
#: per kernel function: what it runs on every launch that the interpreter cannot run
_STATIC: dict[Any, str | None] = {}


class _Unconditional(ast.NodeVisitor):
    """The first call of :data:`_UNRUNNABLE` outside every ``if`` (and conditional
    expression) of a function's body: reached by every launch."""

    def __init__(self) -> None:
        self.found: tuple[str, int] | None = None

    def visit_If(self, node: ast.AST) -> None:  # a branch some launches skip
        return None

    visit_IfExp = visit_If

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if self.found is None:
            for stmt in node.body:
                self.visit(stmt)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if self.found is None and name in _UNRUNNABLE:
            self.found = (_UNRUNNABLE[name], node.lineno)
        self.generic_visit(node)


def static_limitation(fn: Callable[..., Any]) -> str | None:
    """What kernel ``fn`` (its Python function) runs on every launch and Triton's interpreter
    cannot (a call of :data:`_UNRUNNABLE` outside every ``if``), in words with its line; None
    when there is none or no source. Found before the kernel runs: the case is ``unsupported``
    at once, and a run that can only interpret the kernel skips its target."""
    if fn in _STATIC:
        return _STATIC[fn]
    found = None
    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        tree = None
    if tree is not None:
        visitor = _Unconditional()
        for node in tree.body:
            visitor.visit(node)
        if visitor.found is not None:
            what, line = visitor.found
            line += start - 1
            filename = fn.__code__.co_filename
            text = linecache.getline(filename, line).strip()
            found = (f"{what} at {os.path.basename(filename)}:{line}" + (f": {text}" if text
                                                                         else "")
                     + ": Triton's interpreter cannot run it; run the target compiled")
    _STATIC[fn] = found
    return found


# ---------------------------------------------------------------------------------------------
# Boolean operators


def _dynamic(value: Any) -> bool:
    """A run-time value (a tensor), as opposed to a compile-time one that short-circuits."""
    return isinstance(value, tl_core.tensor)


def _fk_bool(is_and: bool, *thunks: Callable[[], Any]) -> Any:
    """``and`` (``is_and``) / ``or`` over lazily evaluated operands, as the code generator's
    ``_apply_boolean_values``: a constant operand short-circuits or drops out, tensors combine
    with ``logical_and``/``logical_or``."""
    tensors: list[Any] = []
    value: Any = None
    for thunk in thunks:
        value = thunk()
        if not _dynamic(value):
            truth = bool(value)
            if is_and and not truth:
                return value
            if not is_and and truth:
                return value
        else:
            tensors.append(value)
    if not tensors:
        return value
    while len(tensors) >= 2:
        rhs = tensors.pop()
        lhs = tensors.pop()
        tensors.append(lhs.logical_and(rhs) if is_and else lhs.logical_or(rhs))
    return tensors[0]


def _fk_and(*thunks: Callable[[], Any]) -> Any:
    return _fk_bool(True, *thunks)


def _fk_or(*thunks: Callable[[], Any]) -> Any:
    return _fk_bool(False, *thunks)


def _fk_not(value: Any) -> Any:
    if _dynamic(value):
        return value.__not__()
    return not value


_COMPARE = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_COMPARE_NAMES = {op: i for i, op in enumerate(_COMPARE)}
_COMPARE_FNS = list(_COMPARE.values())


def _fk_chain(left: Any, *rest: Any) -> Any:
    """``left op1 mid op2 right ...`` with the code generator's semantics: the pairwise results
    combined by ``and``, each operand evaluated once (``rest`` alternates op index, thunk)."""
    results: list[Any] = []
    lhs = left
    for i in range(0, len(rest), 2):
        rhs = rest[i + 1]()
        result = _COMPARE_FNS[rest[i]](lhs, rhs)
        if not _dynamic(result) and not bool(result):
            return result
        results.append(result)
        lhs = rhs
    return _fk_and(*(functools.partial(lambda r: r, r) for r in results))


def _fk_live(scope: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The values a loop's body reassigns, as they are before the loop (its live-ins)."""
    return {name: scope[name] for name in names if name in scope}


def _fk_carried(live: dict[str, Any], scope: dict[str, Any]) -> None:
    """After an iteration: a loop-carried variable must keep its type, and a compile-time
    value (a constexpr) cannot be reassigned in a loop; the code generator refuses both
    (``_verify_loop_carried_variable``), in these words."""
    for name, before in live.items():
        after = scope.get(name, before)
        if after is before:
            continue
        if isinstance(before, tl_core.tensor):
            if isinstance(after, tl_core.tensor) and after.type != before.type:
                raise CompileError(f"Loop-carried variable {name} has initial type "
                                   f"{before.type} but is re-assigned to {after.type} in loop! "
                                   "Please make sure that the type stays consistent.")
        elif isinstance(before, (int, float)) and not isinstance(before, bool):
            raise CompileError(f"Loop carried variable {name} is not a triton value (a "
                               "constexpr cannot be reassigned in a loop)")


#: names the rewritten code calls; they live in the globals the rewritten kernel runs with
HELPERS = {"__fuzzkern_and": _fk_and, "__fuzzkern_or": _fk_or, "__fuzzkern_not": _fk_not,
           "__fuzzkern_chain": _fk_chain, "__fuzzkern_live": _fk_live,
           "__fuzzkern_carried": _fk_carried}


def _assigned(body: list[ast.stmt]) -> tuple[str, ...]:
    """Names a loop body assigns (outside nested functions), in order of first assignment."""
    names: dict[str, None] = {}
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.setdefault(node.id, None)
        todo.extend(ast.iter_child_nodes(node))
    return tuple(names)


def _stored(node: ast.AST) -> set[str]:
    """Names bound anywhere in ``node`` (a simple statement, a loop's or a with's target)."""
    return {n.id for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def bound_before_loops(fn: ast.FunctionDef) -> dict[int, frozenset[str]]:
    """For each ``for``/``while`` of ``fn`` (by ``id`` of its node), the names bound before it
    as Triton's code generator scopes them, which is what makes a name loop-carried there: a
    loop's body is a scope of its own (a name it binds first is gone after the loop), and after
    an ``if`` only the names both arms bind remain (a compile-time condition keeps its taken arm's
    names compiled too: those are left out here, so a check of them is missed, never invented).

    >>> tree = ast.parse("def k(x):\\n for i in r:\\n  a = 1\\n for j in r:\\n  a = 2")
    >>> sorted(sorted(v) for v in bound_before_loops(tree.body[0]).values())
    [['x'], ['x']]
    """
    out: dict[int, frozenset[str]] = {}

    def block(stmts: list[ast.stmt], bound: set[str]) -> set[str]:
        bound = set(bound)
        for st in stmts:
            if isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                out[id(st)] = frozenset(bound)
                inner = bound | (_stored(st.target) if isinstance(st, (ast.For, ast.AsyncFor))
                                 else set())
                block(st.body, inner)
                block(st.orelse, bound)
            elif isinstance(st, ast.If):
                bound |= block(st.body, bound) & block(st.orelse, bound)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                for item in st.items:
                    if item.optional_vars is not None:
                        bound |= _stored(item.optional_vars)
                bound = block(st.body, bound)
            elif isinstance(st, ast.Try):
                bound = block(st.body, bound)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(st.name)
            else:
                bound |= _stored(st)
        return bound

    a = fn.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    params |= {p.arg for p in (a.vararg, a.kwarg) if p is not None}
    block(fn.body, params)
    return out


def _call(name: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])


def _thunk(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                         defaults=[]), body=expr)


def _has_walrus(node: ast.AST) -> bool:
    return any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))


#: the code generator's words when it rejects ``a < b < c`` (Triton 3.6 and older)
CHAINED_COMPARISON_MESSAGE = "simultaneous multiple comparison is not supported"


@functools.cache
def compiler_rejects_chained_comparisons() -> bool:
    """Whether the installed Triton's code generator refuses a chained comparison (3.6 does,
    3.9 compiles it as ``and``): read from its ``visit_Compare``, so a kernel the compiler would
    not compile does not pass in the interpreter either."""
    from triton.compiler.code_generator import CodeGenerator

    try:
        return CHAINED_COMPARISON_MESSAGE in inspect.getsource(CodeGenerator.visit_Compare)
    except (OSError, TypeError):  # no source: assume the newer compiler
        return False


def _upstream_transformer() -> type:
    return type(_interp.FunctionRewriter.ast_transformer)


class _Transformer(_upstream_transformer()):  # type: ignore[misc]
    """Upstream's rewriting (assignments, and chained comparisons on 3.9) plus the boolean
    operators. A walrus inside keeps Python's semantics (thunks would rebind its target)."""

    _upstream_compare = hasattr(_upstream_transformer(), "visit_Compare")
    #: :func:`bound_before_loops` of the function being rewritten
    _bound: dict[int, frozenset[str]] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        outer = self._bound
        self._bound = bound_before_loops(node)
        try:
            visit = getattr(super(), "visit_FunctionDef", None)
            return visit(node) if visit is not None else self.generic_visit(node)
        finally:
            self._bound = outer

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) > 1:  # the code generator asserts one target: a compile error
            raise CompileError("simultaneous multiple assignment (`a = b = ...`) is not "
                               "supported", node)
        # Triton 3.6's visit_Assign does not visit the value; 3.9's does (idempotent here)
        node.value = self.visit(node.value)
        return super().visit_Assign(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node = self.generic_visit(node)
        if _has_walrus(node):
            return node
        name = "__fuzzkern_and" if isinstance(node.op, ast.And) else "__fuzzkern_or"
        return ast.copy_location(_call(name, [_thunk(v) for v in node.values]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("__fuzzkern_not", [node.operand]), node)
        return node

    def visit_For(self, node: ast.For) -> Any:
        """A loop over ``range``/``tl.range`` checks, after each iteration, what the compiler
        checks of its loop-carried variables (:func:`_fk_carried`); ``tl.static_range`` is
        unrolled compiled: no loop, nothing carried."""
        bound = self._bound.get(id(node))  # before generic_visit rewrites the body
        node = self.generic_visit(node)
        func = node.iter.func if isinstance(node.iter, ast.Call) else None
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        target = node.target.id if isinstance(node.target, ast.Name) else None
        # carried: what the body reassigns of the names bound before the loop, as the code
        # generator scopes them (a name an earlier loop's body bound is not one of them)
        names = tuple(n for n in _assigned(node.body)
                      if n != target and (bound is None or n in bound))
        if name == "static_range" or not names or _has_walrus(node):
            return node
        live = f"__fuzzkern_live_{node.lineno}_{node.col_offset}"
        scope = _call("locals", [])
        before = ast.Assign(targets=[ast.Name(id=live, ctx=ast.Store())],
                            value=_call("__fuzzkern_live", [
                                scope, ast.Tuple(elts=[ast.Constant(n) for n in names],
                                                 ctx=ast.Load())]))
        check = ast.Expr(value=_call("__fuzzkern_carried", [ast.Name(id=live, ctx=ast.Load()),
                                                             _call("locals", [])]))
        node.body.append(ast.copy_location(check, node))
        return [ast.copy_location(before, node), node]

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        if self._upstream_compare:
            return super().visit_Compare(node)
        node = self.generic_visit(node)
        if len(node.ops) == 1 or _has_walrus(node):
            return node
        args: list[ast.expr] = [node.left]
        for op, right in zip(node.ops, node.comparators, strict=True):
            args += [ast.Constant(_COMPARE_NAMES[type(op)]), _thunk(right)]
        return ast.copy_location(_call("__fuzzkern_chain", args), node)


def _locate(e: BaseException, filename: str, def_line: int) -> None:
    """Give ``e``, refused while rewriting a kernel (the rewriter parses the function's source
    alone, from line 1), ``location``: ``file.py:line: source`` in the kernel's file."""
    line = getattr(getattr(e, "node", None), "lineno", None)
    if line is None or not filename:
        return
    line += def_line - 1
    text = linecache.getline(filename, line).strip()
    e.location = f"{os.path.basename(filename)}:{line}" + (  # type: ignore[attr-defined]
        f": {text}" if text else "")


class FidelityRewriter(_interp.FunctionRewriter):  # type: ignore[misc]
    """Upstream's kernel rewriter with :class:`_Transformer`, executing the rewritten kernel in
    a copy of its module's globals where libdevice functions and modules resolve to
    implementations the interpreter can run (the compiler's ``module_map`` does the same when
    compiling), and where the rewritten code's helpers live (upstream adds its own names to
    the user's module; this does not)."""

    ast_transformer = _Transformer()

    def _transform_ast(self, src: str) -> Any:
        try:
            if compiler_rejects_chained_comparisons():
                for node in ast.walk(ast.parse(src)):
                    if isinstance(node, ast.Compare) and len(node.ops) > 1:
                        raise UnsupportedLanguageConstruct(src, node,
                                                           CHAINED_COMPARISON_MESSAGE)
            transformed = super()._transform_ast(src)
        except (CompileError, UnsupportedLanguageConstruct) as e:
            _locate(e, self.filename, self.def_file_lineno)
            raise
        return instrument(transformed, self.filename, self.fn)  # coverage probes

    def _compile_and_exec(self, transformed_ast: Any) -> Any:
        compiled_code = compile(transformed_ast, filename=self.filename, mode="exec")
        local_namespace = {**self.kwargs}
        fn_globals = {k: _substitute(v) for k, v in self.fn.__globals__.items()}
        for key, value in vars(_interp).items():
            fn_globals.setdefault(key, value)
        fn_globals.update(HELPERS)
        fn_globals.update(PROBES)
        if "range" not in self.fn.__globals__:  # the builtin: a loop over tensors, as compiled
            fn_globals["range"] = loop_range
        exec(compiled_code, fn_globals, local_namespace)
        return local_namespace[self.fn.__name__]


class FidelityInterpretedFunction(_interp.InterpretedFunction):  # type: ignore[misc]
    """``InterpretedFunction`` with :class:`FidelityRewriter` and its own cache of rewritten
    functions (upstream's class-wide cache stays as upstream fills it)."""

    rewritten_fn: dict[Callable[..., Any], Callable[..., Any]] = {}

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        self.rewriter = FidelityRewriter(fn, **kwargs)


# ---------------------------------------------------------------------------------------------
# Scalar arguments


def implicit_cvt(arg: Any) -> Any:
    """The interpreter's argument conversion with the compiler's scalar types: a Python float
    is an ``fp32`` tensor, an int ``i32``/``i64``/``u64`` as ``mangle_type`` types it."""
    if isinstance(arg, bool):
        return tl_core.tensor(_interp.TensorHandle(np.array([arg], dtype=np.bool_), tl.int1),
                              tl.int1)
    if isinstance(arg, int):
        ty = tl.str_to_ty(triton.runtime.jit.mangle_type(arg), None)
        if not isinstance(ty, tl_core.dtype) or not ty.is_int():
            return _ORIG_IMPLICIT_CVT(arg)
        np_dtype = _interp._get_np_dtype(ty)
        return tl_core.tensor(_interp.TensorHandle(np.array([arg], dtype=np_dtype), ty), ty)
    if isinstance(arg, float):
        return tl_core.tensor(_interp.TensorHandle(np.array([arg], dtype=np.float32),
                                                   tl.float32), tl.float32)
    return _ORIG_IMPLICIT_CVT(arg)


_ORIG_IMPLICIT_CVT = _interp._implicit_cvt


# ---------------------------------------------------------------------------------------------
# Loop variables


class ConstInt(int):
    """A Python int where compiled code has a ``tl.constexpr``: a constexpr parameter of the
    kernel or of a ``@jit`` helper, a ``tl.static_range`` loop variable. Still an int to
    everything, with the ``.value`` compiled code's ``tl.constexpr`` has (``N.value``)."""

    @property
    def value(self) -> int:
        return int(self)


class ConstFloat(float):
    """The float counterpart of :class:`ConstInt`."""

    @property
    def value(self) -> float:
        return float(self)


def as_constexpr(value: Any) -> Any:
    """``value`` with ``.value`` when it is a plain int or float (else as it is)."""
    if type(value) is int:
        return ConstInt(value)
    if type(value) is float:
        return ConstFloat(value)
    return value


def _int_type(value: int) -> Any:
    """The type the code generator gives a Python int bound (``semantic.to_tensor``)."""
    if -2**31 <= value < 2**31:
        return tl.int32
    if 2**31 <= value < 2**32:
        return tl.uint32
    if -2**63 <= value < 2**63:
        return tl.int64
    return tl.uint64


def _bound(value: Any, what: str) -> tuple[int, Any]:
    """A loop bound or step: its value and its Triton type, as the code generator types it."""
    value = getattr(value, "value", value) if isinstance(value, tl_core.constexpr) else value
    if isinstance(value, tl_core.tensor):
        if not value.dtype.is_int() or value.type.is_block():
            raise TypeError(f"For loop {what} must be a scalar int, got {value.type}")
        return int(value.handle.data.reshape(-1)[0]), value.dtype
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For loop bounds and step must all be ints, got {what}={value!r}")
    return int(value), _int_type(int(value))


class LoopRange:
    """``range(...)``/``tl.range(...)`` in an interpreted kernel: the iterations of Python's
    range, each loop variable a scalar tensor of the type the code generator gives the
    induction variable (the integer promotion of the bounds' and the step's types), as
    compiled. So ``i.to(tl.int64)``, ``i.cast(...)`` and arithmetic that wraps as compiled
    work; indexing a Python list with it still does (``tensor.__index__``). The options of
    ``tl.range`` (``num_stages``, ``loop_unroll_factor``, ``flatten``, ``warp_specialize``,
    ...) only tell the compiler how to schedule the loop: the interpreter checks their names
    and ignores them."""

    __slots__ = ("numbers", "dtype", "np_dtype")

    def __init__(self, arg1: Any, arg2: Any = None, step: Any = None) -> None:
        start, end = (0, arg1) if arg2 is None else (arg1, arg2)
        step = 1 if step is None else step
        lo, lo_ty = _bound(start, "lower bound")
        hi, hi_ty = _bound(end, "upper bound")
        by, by_ty = _bound(step, "step")
        if by == 0:
            raise ValueError("For loop step must not be zero")
        if by < 0 and not isinstance(step, tl_core.tensor):  # the code generator negates it
            by_ty = _int_type(-by)
        promote = _interp.interpreter_semantic.integer_promote_impl
        self.dtype = promote(promote(lo_ty, hi_ty), by_ty)
        self.np_dtype = _interp._get_np_dtype(self.dtype)
        self.numbers = range(lo, hi, by)

    def __len__(self) -> int:
        return len(self.numbers)

    def __iter__(self) -> Iterator[Any]:
        ty, np_dtype, handle, tensor = self.dtype, self.np_dtype, _interp.TensorHandle, \
            tl_core.tensor
        for i in self.numbers:
            yield tensor(handle(np.array([i], dtype=np_dtype), ty), ty)


#: ``tl.range``'s keyword options, by name (from its signature: they differ across versions)
_RANGE_OPTIONS = frozenset(
    name for name in inspect.signature(tl_core.range.__init__).parameters
    if name not in ("self", "arg1", "arg2", "step"))


def loop_range(arg1: Any, arg2: Any = None, step: Any = None, **options: Any) -> LoopRange:
    """``tl.range`` (and the builtin ``range``) in an interpreted kernel: :class:`LoopRange`."""
    unknown = sorted(set(options) - _RANGE_OPTIONS)
    if unknown:
        raise TypeError(f"range() got an unexpected keyword argument {unknown[0]!r}")
    return LoopRange(arg1, arg2, step)


def static_range(arg1: Any, arg2: Any = None, step: Any = None) -> Iterator[ConstInt]:
    """``tl.static_range`` in an interpreted kernel: compiled, the loop is unrolled and its
    variable is a ``tl.constexpr``: a :class:`ConstInt` here (an int with ``.value``)."""
    start, end = (0, arg1) if arg2 is None else (arg1, arg2)
    numbers = range(_static_int(start), _static_int(end), 1 if step is None else
                    _static_int(step))
    return map(ConstInt, numbers)


def _static_int(value: Any) -> int:
    return operator.index(value.value if isinstance(value, tl_core.constexpr) else value)


def static_assert(cond: Any, msg: Any = "") -> None:
    """``tl.static_assert`` in an interpreted kernel: a failed one is the compile error it is
    compiled (``CompileTimeAssertionFailure``), not a run-time assertion."""
    if not cond:
        raise CompileError(f"static assertion failed: {getattr(msg, 'value', msg)}"
                           if msg != "" else "static assertion failed")


_ORIG_PATCH_LANG_CORE = _interp._patch_lang_core


def patch_lang_core(lang: Any, scope: Any) -> None:
    """Triton's ``_patch_lang_core`` (which makes ``tl.range``/``tl.static_range`` Python's
    range and ``tl.static_assert`` Python's assert), then the compiled semantics above."""
    _ORIG_PATCH_LANG_CORE(lang, scope)
    scope.set_attr(lang, "range", loop_range)
    scope.set_attr(lang, "static_range", static_range)
    scope.set_attr(lang, "static_assert", static_assert)


# ---------------------------------------------------------------------------------------------
# What the compiler refuses


class CompileError(Exception):
    """What the compiler refuses to compile, found while the interpreter runs the kernel: the
    case is ``compile-error``, as it is compiled, not a kernel that ran. ``node``: the AST node
    refused, when found while rewriting the kernel; ``location`` (``file.py:line: source``)
    then says where (else the traceback does)."""

    def __init__(self, message: str, node: ast.AST | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.location: str | None = None


#: the compiler's words for a kernel it refuses, raised by ``triton.language`` itself (which
#: the interpreter runs too) and so by the interpreter: a ``tl.arange`` whose range is not a
#: power of 2, is empty or is not a compile-time value (``H = B // 2`` is a tensor compiled
#: too), a block over the compiler's element limit or with a dimension that is not a power of
#: 2, block pointers where they were removed (Triton 3.9), operands the type promotion has no
#: rule for ("unexpected type fp8e5 and int32", Triton 3.6)
_REFUSALS = ("must be a power of 2", "exceeds triton maximum tensor numel",
             "arange's end argument must be greater than the start argument",
             "arange's arguments must be of type tl.constexpr",
             "Block pointers have been removed", "unexpected type ")


def _raised_in_language(e: BaseException) -> bool:
    return "/triton/language/" in _innermost_file(e)


def compile_refusal(e: BaseException) -> str | None:
    """The compiler's message when ``e`` (a kernel's exception under the interpreter,
    unwrapped) is what compiling the kernel would have refused, else None: a
    :class:`CompileError` raised here, a Triton ``CompilationError`` (a construct the code
    generator rejects, e.g. a chained comparison on Triton 3.6), or one of ``triton.language``'s
    own refusals (:data:`_REFUSALS`)."""
    if isinstance(e, CompileError):
        return str(e)
    if isinstance(e, CompilationError):
        return str(getattr(e, "error_message", None) or e)
    if isinstance(e, (ValueError, TypeError, AssertionError, NotImplementedError)):
        text = text_of(e)
        if _raised_in_language(e) and any(words in text for words in _REFUSALS):
            return text
    return None


def _nvidia_min_dot_size() -> Callable[[Any, Any], tuple[int, int, int]] | None:
    try:
        from triton.backends.nvidia.compiler import min_dot_size
    except ImportError:  # a Triton without the NVIDIA backend
        return None
    return min_dot_size(None)  # type: ignore[no-any-return]


_MIN_DOT_SIZE = _nvidia_min_dot_size()


def min_dot_size(lhs_type: Any, rhs_type: Any) -> tuple[int, int, int]:
    """The interpreter's lower bounds for ``tl.dot`` shapes: none of its own, so the NVIDIA
    backend's (``K >= 16`` for 16-bit inputs, ``K >= 32`` for 8-bit; M and N from 1), checked
    here with the compiler's words ("Input shapes should have M >= 1, N >= 1 and K >= 16")."""
    if _MIN_DOT_SIZE is not None:
        m, n, k = _MIN_DOT_SIZE(lhs_type, rhs_type)
        shape_l, shape_r = lhs_type.shape, rhs_type.shape
        rows, inner, cols = (_static_int(d) for d in (shape_l[-2], shape_l[-1], shape_r[-1]))
        if not (rows >= m and inner >= k and cols >= n):
            raise CompileError(f"Input shapes should have M >= {m}, N >= {n} and K >= {k}")
    return (1, 1, 1)


# ---------------------------------------------------------------------------------------------
# libdevice


def libdevice_modules() -> dict[str, types.ModuleType]:
    """The libdevice modules this Triton has, by name (generic stubs, CUDA, HIP)."""
    out = {}
    for name in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                 "triton.language.extra.hip.libdevice"):
        try:
            __import__(name)
        except ImportError:
            continue
        out[name] = sys.modules[name]
    return out


_LIBDEVICE = libdevice_modules()
_CUDA = _LIBDEVICE.get("triton.language.extra.cuda.libdevice")


@functools.cache
def _libdevice_fn(name: str) -> Callable[..., Any]:
    """The interpreter's version of libdevice function ``name``: the CUDA wrapper (argument
    typing and result dtype as compiled) run with the interpreter's semantic."""
    target = getattr(_CUDA, name, None) if _CUDA is not None else None

    # ``_semantic`` by name: the code generator passes its semantic only to a builtin whose
    # signature names it
    def fn(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        if target is None:
            raise InterpreterUnsupported(
                f"libdevice.{name} has no CUDA implementation in this Triton to interpret")
        # a semantic given is the compiler's: this function outlived interpreter mode in a
        # module imported while it was active (``from ...libdevice import rsqrt`` inside a
        # launcher binds the patched name for good). Compiled, the stub resolves to the CUDA
        # function through the backend's module map: so does this
        semantic = _semantic if _semantic is not None else _interp.interpreter_semantic
        return target(*args, _semantic=semantic, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__triton_builtin__ = True  # type: ignore[attr-defined]
    return fn


class _LibdeviceModule(types.ModuleType):
    """A libdevice module as the interpreted kernel sees it."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        return _libdevice_fn(name) if callable(value) else value


def _substitute(value: Any) -> Any:
    if isinstance(value, types.ModuleType):
        if value.__name__ in _LIBDEVICE:
            return _LibdeviceModule(value)
        return value
    if callable(value) and getattr(value, "__module__", None) in _LIBDEVICE:
        name = getattr(value, "__name__", None)
        if isinstance(name, str):
            return _libdevice_fn(name)
    return value


def _torch_special(name: str) -> Callable[..., np.ndarray]:
    def fn(*args: np.ndarray) -> np.ndarray:
        import torch

        out = getattr(torch.special, name)(*(torch.from_numpy(np.ascontiguousarray(a))
                                             for a in args))
        return np.asarray(out.numpy())

    return fn


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.reciprocal(np.sqrt(x)))


def _rcp(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.asarray(np.reciprocal(x))


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.true_divide(x, y))


#: libdevice base names (CUDA symbol without ``__nv_`` and the ``f`` of fp32 variants) ->
#: numpy function of the same math, evaluated in the symbol's precision
_MATH: dict[str, Callable[..., Any]] = {
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "atan2": np.arctan2,
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(x.dtype.type(10), x),
    "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": _rsqrt, "cbrt": np.cbrt, "rcbrt": lambda x: _rcp(np.cbrt(x)),
    "pow": np.power, "powi": lambda x, n: np.power(x, n.astype(x.dtype)),
    "hypot": np.hypot, "fmod": np.fmod, "remainder": lambda x, y: x - np.round(x / y) * y,
    "fmin": np.fmin, "fmax": np.fmax, "fdim": lambda x, y: np.where(x > y, x - y, 0).astype(
        x.dtype), "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": lambda x:
    np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5)), "rint": np.rint,
    "nearbyint": np.rint, "fabs": np.abs, "copysign": np.copysign,
    "fma": lambda x, y, z: x * y + z,
    "erf": _torch_special("erf"), "erfc": _torch_special("erfc"),
    "erfinv": _torch_special("erfinv"), "erfcx": _torch_special("erfcx"),
    "lgamma": _torch_special("gammaln"), "normcdf": _torch_special("ndtr"),
    "normcdfinv": _torch_special("ndtri"), "tgamma": lambda x: np.exp(
        _torch_special("gammaln")(x)) * np.where((x < 0) & (np.floor(x / 2) * 2 != np.floor(x)),
                                                 -1, 1).astype(x.dtype),
    "saturate": lambda x: np.clip(x, 0, 1), "signbit": lambda x: np.signbit(x).astype(np.int32),
    "isnan": lambda x: np.isnan(x).astype(np.int32), "isinf": lambda x: np.isinf(x).astype(
        np.int32), "finite": lambda x: np.isfinite(x).astype(np.int32),
    "isfinite": lambda x: np.isfinite(x).astype(np.int32),
    "ldexp": lambda x, n: np.ldexp(x, n), "logb": lambda x: np.floor(np.log2(np.abs(x))),
    "ilogb": lambda x: np.floor(np.log2(np.abs(x))).astype(np.int32),
    "nextafter": np.nextafter, "div_rn": _div, "div_rz": _div, "div_rd": _div, "div_ru": _div,
    "fdiv_rn": _div, "fast_fdivide": _div, "fdivide": _div, "rcp_rn": _rcp, "rcp_rz": _rcp,
    "rcp_rd": _rcp, "rcp_ru": _rcp, "frcp_rn": _rcp, "drcp_rn": _rcp,
    "sqrt_rn": np.sqrt, "sqrt_rz": np.sqrt, "sqrt_rd": np.sqrt, "sqrt_ru": np.sqrt,
    "fsqrt_rn": np.sqrt, "dsqrt_rn": np.sqrt,
    "fast_exp": np.exp, "fast_exp10": lambda x: np.power(x.dtype.type(10), x),
    "fast_log": np.log, "fast_log2": np.log2, "fast_log10": np.log10, "fast_pow": np.power,
    "fast_tan": np.tan, "fast_sin": np.sin, "fast_cos": np.cos, "fast_tanh": np.tanh,
    "abs": np.abs, "llabs": np.abs, "min": np.minimum, "max": np.maximum,
    "umin": np.minimum, "umax": np.maximum, "llmin": np.minimum, "llmax": np.maximum,
    "ullmin": np.minimum, "ullmax": np.maximum, "j0": _torch_special("bessel_j0"),
    "j1": _torch_special("bessel_j1"), "y0": _torch_special("bessel_y0"),
    "y1": _torch_special("bessel_y1"), "i0": _torch_special("i0"), "i1": _torch_special("i1"),
}

#: CUDA symbols whose name does not strip to a base name above
_ALIASES = {"fadd_rn": "add", "dadd_rn": "add", "fmul_rn": "mul", "dmul_rn": "mul",
            "fmaf": "fma", "fma_rn": "fma", "fmaf_rn": "fma"}
_MATH["add"] = np.add
_MATH["mul"] = np.multiply


def _math_for(symbol: str) -> Callable[..., Any] | None:
    name = symbol
    for prefix in ("__nv_", "__ocml_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    for suffix in ("_f64", "_f32", "_f16"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    name = _ALIASES.get(name, name)
    for candidate in (name, name[:-1] if name.endswith("f") else None,
                      name.replace("f", "", 1) if name.startswith("f") else None):
        if candidate and candidate in _MATH:
            return _MATH[candidate]
    return None


def create_extern_elementwise(self: Any, libName: str, libPath: str, symbol: str,
                              argList: list[Any], retType: Any, isPure: bool) -> Any:
    """A libdevice call in the interpreter: the numpy equivalent of ``symbol`` on its
    arguments, computed and returned in the symbol's result dtype."""
    fn = _math_for(symbol)
    ret = getattr(retType, "element_ty", retType)
    if fn is None or not isinstance(ret, tl_core.dtype):
        raise InterpreterUnsupported(
            f"the interpreter has no implementation of libdevice symbol {symbol!r}")
    np_ret = _interp._get_np_dtype(ret)
    args = [a.data for a in argList]
    if ret.is_floating():
        # libdevice's fp32 functions are within 1-2 ULPs of the exact result: evaluate in
        # fp64 and round once to the result dtype (numpy's own fp32 kernels are further off)
        args = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*args))
    return _interp.TensorHandle(out.astype(np_ret, copy=False), ret.scalar)


# ---------------------------------------------------------------------------------------------
# NaN-tolerant max/min/argmax/argmin


_ORIG_APPLY_IMPL = _interp.ReduceOps.apply_impl


def _nan_reduce(self: Any, value: Any, is_max: bool, with_index: bool) -> Any:
    data = value.handle.data
    axis = self.axis
    if axis is None:
        flat = data.reshape(-1)
        axis_n = 0
    else:
        flat = data
        axis_n = axis
    nan = np.isnan(flat)
    all_nan = nan.all(axis=axis_n, keepdims=True)
    ufunc = np.fmax if is_max else np.fmin
    val = ufunc.reduce(flat, axis=axis_n, keepdims=True)
    outs = [(val, value.dtype)]
    if with_index:
        filler = np.array(-np.inf if is_max else np.inf, dtype=flat.dtype)
        clean = np.where(nan, filler, flat)
        idx = (np.argmax if is_max else np.argmin)(clean, axis=axis_n, keepdims=True)
        # every combine of compiled argmax/argmin prefers its second operand when a value is
        # NaN: an all-NaN row ends on its last element
        last = np.full_like(idx, flat.shape[axis_n] - 1)
        idx = np.where(all_nan, last, idx).astype(np.int32)
        outs.append((idx, tl.int32))
    result = []
    for arr, dtype in outs:
        if not self.keep_dims:
            arr = np.squeeze(arr, axis=axis_n)
        elif axis is None:
            arr = arr.reshape((1,) * data.ndim)
        if axis is None and not self.keep_dims:
            arr = arr.reshape(())[()]
        result.append(self.to_tensor(arr, dtype))
    return tuple(result) if with_index else result[0]


def apply_impl(self: Any, input: Any) -> Any:
    """``ReduceOps.apply_impl`` with the compiled result for NaN in float max/min/arg*."""
    std = tl.standard
    fn = self.combine_fn
    first = input[0]
    data = getattr(getattr(first, "handle", None), "data", None)
    if isinstance(data, np.ndarray) and data.dtype.kind == "f" and np.isnan(data).any():
        kinds = (("_argmax_combine_tie_break_left", True, True),
                 ("_argmax_combine_tie_break_fast", True, True),
                 ("_argmin_combine_tie_break_left", False, True),
                 ("_argmin_combine_tie_break_fast", False, True),
                 ("_elementwise_max", True, False), ("_elementwise_min", False, False))
        # identity, not a dict: hashing a JITFunction computes its cache key
        kind = next(((is_max, with_index) for name, is_max, with_index in kinds
                     if getattr(std, name, None) is fn), None)
        if kind is not None:
            return _nan_reduce(self, first, *kind)
    return _ORIG_APPLY_IMPL(self, input)


# ---------------------------------------------------------------------------------------------
# What the interpreter session installs


def _dtype_value(self: Any) -> Any:
    return self


def grouped_patches() -> tuple[list[tuple[Any, str, Any]],
                               list[tuple[types.ModuleType, dict[str, Any]]]]:
    """What to set while interpreter mode is active: (object, attribute, value) triples, and
    per libdevice module the module and ``{name: replacement}`` (several hundred names each:
    installed as one update of the module's ``__dict__``)."""
    out: list[tuple[Any, str, Any]] = [
        (_interp, "_implicit_cvt", implicit_cvt),
        (_interp.InterpreterBuilder, "create_extern_elementwise", create_extern_elementwise),
        (_interp.ReduceOps, "apply_impl", apply_impl),
        (_interp, "_patch_lang_core", patch_lang_core),
        (_interp.interpreter_builder, "codegen_fns",
         {**_interp.interpreter_builder.codegen_fns, "min_dot_size": min_dot_size}),
        *fastpath.patches(),
    ]
    if "value" not in vars(tl_core.dtype):
        out.append((tl_core.dtype, "value", property(_dtype_value)))
    modules = [(module, _libdevice_patches(name, module)) for name, module in _LIBDEVICE.items()]
    return out, [(m, values) for m, values in modules if values]


#: per libdevice module: its names and members when last scanned, and the patches found
_SCANNED: dict[str, tuple[tuple[str, ...], tuple[Any, ...], dict[str, Any]]] = {}


def _libdevice_patches(name: str, module: types.ModuleType) -> dict[str, Any]:
    """The replacements of a libdevice module's functions, by name; the scan (several hundred
    members) is redone only when the module's names or members changed since the last one."""
    d = vars(module)
    keys, values = tuple(d), tuple(d.values())
    hit = _SCANNED.get(name)
    if (hit is not None and hit[0] == keys
            and all(map(operator.is_, hit[1], values))):
        return hit[2]
    found = {}
    for attr, member in zip(keys, values, strict=True):
        if attr.startswith("_") or not callable(member) or inspect.isclass(member):
            continue
        if getattr(member, "__module__", None) != name:
            continue
        found[attr] = _libdevice_fn(attr)
    _SCANNED[name] = (keys, values, found)
    return found
