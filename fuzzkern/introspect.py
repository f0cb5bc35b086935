"""Find the Triton kernels a host launcher uses, without running anything.

A launcher is plain Python (``def add(x, y): ...; kernel[grid](...)``); the kernels it launches
are names it references. This module resolves those names the way Python would at call time
(its globals, its closure cells, attributes of modules it references) and recurses into plain
Python helpers it calls, so the parent process can learn, e.g., how many configs each
``@triton.autotune`` kernel offers and draw one per case (docs/architecture.md, strategies).

Importing this module imports triton but never launches or compiles a kernel.

>>> import triton, triton.language as tl
>>> @triton.autotune(configs=[triton.Config({"B": 64}), triton.Config({"B": 128})], key=[])
... @triton.jit
... def k(x_ptr, B: tl.constexpr):
...     pass
>>> def launch(x):
...     k[(1,)](x)
>>> autotuner_config_counts(launch)
{'k': 2}
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from triton.compiler.errors import CompileTimeAssertionFailure
from triton.runtime.autotuner import Autotuner, Config, Heuristics
from triton.runtime.errors import OutOfResources, PTXASError
from triton.runtime.jit import JITFunction

from fuzzkern.errors import ConfigDoesNotFit, ForcedConfigError

__all__ = [
    "autotuner_config_counts",
    "autotuners_of",
    "config_description",
    "forced_configs",
    "kernel_name",
]

#: How many levels of plain-Python helpers below the launcher are searched for kernels.
MAX_DEPTH = 3


def kernel_name(obj: Any) -> str:
    """The name of the Python function under a kernel object.

    Sees through any stack of ``Autotuner``/``Heuristics``/``JITFunction`` wrappers (each has
    ``.fn``), so an autotuned kernel and its ``@triton.jit`` function share a name.

    >>> import triton
    >>> @triton.jit
    ... def my_kernel(x_ptr):
    ...     pass
    >>> kernel_name(my_kernel)
    'my_kernel'
    """
    base = getattr(obj, "base_fn", None)
    if inspect.isfunction(base):
        return base.__name__
    seen = 0
    while not inspect.isfunction(obj) and hasattr(obj, "fn") and seen < 16:
        obj = obj.fn
        seen += 1
    name = getattr(obj, "__name__", None)
    return name if isinstance(name, str) else repr(obj)


def _wrapped_autotuners(obj: Any) -> Iterator[Autotuner]:
    """Every Autotuner in a Heuristics/Autotuner/JITFunction ``.fn`` chain starting at ``obj``."""
    seen = 0
    while isinstance(obj, (Autotuner, Heuristics)) and seen < 16:
        if isinstance(obj, Autotuner):
            yield obj
        obj = obj.fn
        seen += 1


def _code_names(code: types.CodeType) -> set[str]:
    """``co_names`` of ``code`` and of the code objects nested in it (lambdas, inner defs,
    comprehensions), whose global lookups resolve in the same globals."""
    names: set[str] = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _referenced_values(fn: types.FunctionType) -> list[Any]:
    """Values ``fn`` can reach by name: the globals named in its code, attributes with those
    names of modules it references, and the contents of its closure cells."""
    names = _code_names(fn.__code__)
    glb = fn.__globals__
    values: list[Any] = []
    modules: list[types.ModuleType] = []
    for name in names:
        if name in glb:
            v = glb[name]
            values.append(v)
            if isinstance(v, types.ModuleType):
                modules.append(v)
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell (variable not yet bound)
            continue
        values.append(v)
        if isinstance(v, types.ModuleType):
            modules.append(v)
    # ``mod.kernel[grid](...)``: co_names holds both "mod" and "kernel".
    for mod in modules:
        mod_dict = vars(mod)
        for name in names:
            if name in mod_dict:
                values.append(mod_dict[name])
    return values


#: modules whose objects never wrap a user's kernel (not searched for attributes)
_FOREIGN = frozenset({"torch", "builtins", "numpy", "triton.runtime.jit"})


def autotuner_classes() -> list[type[Autotuner]]:
    """``Autotuner`` and every subclass of it that defines its own ``run`` (a library's
    autotuner with its own benchmarking): each gets fuzzkern's ``run`` while configs are
    forced, so configs are drawn per case and nothing is benchmarked."""
    out: list[type[Autotuner]] = [Autotuner]
    todo = list(Autotuner.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "run" in vars(cls):
            out.append(cls)
    return out


def autotuners_of(launcher: Callable[..., Any]) -> dict[str, Autotuner]:
    """The ``triton.runtime.autotuner.Autotuner`` objects a host launcher uses, by kernel name.

    Names in the launcher's code are resolved in its globals and closure cells (and as
    attributes of modules it references); plain Python functions found that way are searched
    the same way, up to :data:`MAX_DEPTH` levels deep. ``@triton.heuristics`` over
    ``@triton.autotune`` and the reverse are both seen through. The key is the kernel's name,
    the one :func:`fuzzkern.execution.interpreter.core.interpreter_mode`'s ``configs`` expects.

    >>> autotuners_of(lambda x: x + 1)
    {}
    """
    found: dict[str, Autotuner] = {}
    visited: set[int] = set()

    def visit_value(v: Any, depth: int) -> None:
        if isinstance(v, (Autotuner, Heuristics)):
            for at in _wrapped_autotuners(v):
                found.setdefault(kernel_name(at), at)
            return
        if isinstance(v, JITFunction):
            return
        if isinstance(v, functools.partial):
            visit_value(v.func, depth)
            for a in (*v.args, *v.keywords.values()):
                if isinstance(a, (Autotuner, Heuristics)):
                    visit_value(a, depth)
            return
        if isinstance(v, types.MethodType):
            visit_value(v.__func__, depth)
            return
        if isinstance(v, types.FunctionType):
            wrapped = getattr(v, "__wrapped__", None)  # functools.wraps around a kernel
            if wrapped is not None and wrapped is not v:
                visit_value(wrapped, depth)
            visit_function(v, depth + 1)
            return
        if depth < MAX_DEPTH and not isinstance(v, (type, types.ModuleType)):
            # a library's own wrapper object around a kernel (a launch cache, a decorator
            # class): the kernels it holds as attributes
            visit_attributes(v, depth + 1)

    def visit_attributes(obj: Any, depth: int) -> None:
        attrs = getattr(obj, "__dict__", None)
        if not isinstance(attrs, dict) or id(obj) in visited:
            return
        visited.add(id(obj))
        for a in list(attrs.values())[:64]:
            if isinstance(a, (Autotuner, Heuristics, types.FunctionType, functools.partial,
                              types.MethodType)):
                visit_value(a, depth)
            elif type(a).__module__ not in _FOREIGN and hasattr(a, "__dict__") and not \
                    isinstance(a, (type, types.ModuleType)):
                visit_value(a, depth)

    def visit_function(fn: types.FunctionType, depth: int) -> None:
        if depth > MAX_DEPTH or id(fn) in visited:
            return
        visited.add(id(fn))
        for v in _referenced_values(fn):
            visit_value(v, depth)

    fn = launcher
    if isinstance(fn, functools.partial):
        visit_value(fn, -1)
    elif isinstance(fn, types.MethodType):
        visit_value(fn.__func__, -1)
    elif isinstance(fn, types.FunctionType):
        visit_function(fn, 0)
    elif isinstance(fn, (Autotuner, Heuristics)):
        visit_value(fn, 0)
    else:
        # a callable object: search its class's __call__, and the kernels it holds
        call = next((vars(c)["__call__"] for c in type(fn).__mro__ if "__call__" in vars(c)),
                    None)
        if isinstance(call, types.FunctionType):
            visit_function(call, 0)
        visit_attributes(fn, 0)
    return found


def autotuner_config_counts(launcher: Callable[..., Any]) -> dict[str, int]:
    """Number of ``triton.Config`` entries of each autotuned kernel the launcher uses.

    >>> autotuner_config_counts(lambda x: x)
    {}
    """
    return {name: len(at.configs) for name, at in autotuners_of(launcher).items()}


def _format_config(config: Config) -> str:
    parts = [f"{k}={v!r}" for k, v in config.kwargs.items()]
    parts.append(f"num_warps={config.num_warps}")
    parts.append(f"num_stages={config.num_stages}")
    if getattr(config, "num_ctas", 1) not in (None, 1):
        parts.append(f"num_ctas={config.num_ctas}")
    if getattr(config, "maxnreg", None) is not None:
        parts.append(f"maxnreg={config.maxnreg}")
    return ", ".join(parts)


def config_description(autotuner: Autotuner, index: int) -> str:
    """Config ``index`` of ``autotuner`` in words: its kwargs, then num_warps/num_stages.

    >>> import triton, triton.language as tl
    >>> @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2)], key=[])
    ... @triton.jit
    ... def k(x_ptr, BLOCK: tl.constexpr):
    ...     pass
    >>> config_description(k, 0)
    'BLOCK=64, num_warps=2, num_stages=3'
    """
    configs = autotuner.configs
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(configs):
        raise IndexError(
            f"Expected a config index in [0, {len(configs)}) for autotuned kernel "
            f"{kernel_name(autotuner)!r}, but got index={index!r} (type={type(index).__name__})."
        )
    return _format_config(configs[index])


# ---------------------------------------------------------------------------------------------
# Forcing configs in compiled mode


def cache_snapshot(cache: Any) -> dict[Any, Any] | None:
    """A copy of an autotuner's cache to restore once configs are no longer forced; None for a
    cache that is not a dict (a library's own persistent store, such as FlagGems' ``LibTuner``
    cache backed by a database, which has no keys to copy): a forced run never benchmarks, so it
    never writes one.

    >>> cache_snapshot({("k",): 1}), cache_snapshot(object())
    ({('k',): 1}, None)
    """
    return dict(cache) if isinstance(cache, dict) else None


def restore_autotuner(at: Any, cache: dict[Any, Any] | None, best: Any, missing: Any) -> None:
    """Put back what :func:`cache_snapshot` and ``best_config`` held before (``best`` is
    ``missing`` when the autotuner had no ``best_config``)."""
    if cache is not None and (at.cache != cache or len(at.cache) != len(cache)):
        at.cache.clear()
        at.cache.update(cache)
    if best is missing:
        at.__dict__.pop("best_config", None)
    else:
        at.best_config = best


def tuning_key(at: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The key upstream's ``run`` caches ``at``'s choice under: the values of its ``key``
    arguments and the dtypes of its tensor arguments (a library's ``get_key`` where it has one,
    as FlagGems' ``LibTuner`` does); made hashable."""
    all_args = {**dict(zip(at.arg_names, args, strict=False)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in at.arg_names}
    get_key = getattr(at, "get_key", None)
    key: Any = None
    if callable(get_key):
        with contextlib.suppress(Exception):
            key = get_key(named)
    if key is None:
        key = [named[k] for k in at.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    try:
        hash(tuple(key))
    except TypeError:
        return repr(key)
    return tuple(key)


def config_index(at: Any, config: Any) -> int | None:
    """The position of ``config`` in ``at.configs`` (by identity, else an equal config); None
    for a config the autotuner does not list (one ``early_config_prune`` made up)."""
    for i, c in enumerate(at.configs):
        if c is config:
            return i
    for i, c in enumerate(at.configs):
        if c == config or (isinstance(c, Config) and isinstance(config, Config)
                           and c.all_kwargs() == config.all_kwargs()):
            return i
    return None


class OneConfig:
    """Which config each autotuner's run uses within one scope (a case), never benchmarking:
    the config ``configs`` names for its kernel, else its first config after its own pruning
    (``prune_configs``: ``early_config_prune``, then ``perf_model``'s top-k), chosen once per
    tuning key as upstream caches its choice. :meth:`choose` also says whether upstream would
    reset the autotuner's ``reset_to_zero`` arguments first: a cold key with several configs
    left after pruning (upstream benchmarks those, then resets once before the real run)."""

    def __init__(self, configs: Mapping[str, int]) -> None:
        self.configs = configs
        self.chosen: dict[tuple[int, Any], Config] = {}

    def choose(self, at: Any, args: tuple[Any, ...],
               kwargs: Mapping[str, Any]) -> tuple[Config, int | None, bool]:
        """(config, its index in ``at.configs``, reset first); ``at.nargs`` must be set (the
        pruning reads it)."""
        name = kernel_name(at)
        if name in self.configs:
            index = self.configs[name]
            if not (isinstance(index, int) and 0 <= index < len(at.configs)):
                raise ForcedConfigError(
                    f"Expected a config index in [0, {len(at.configs)}) for autotuned kernel "
                    f"{name!r}, but got configs[{name!r}]={index!r}. "
                    "Use autotuner_config_counts(launcher) for the valid range."
                )
            return at.configs[index], index, False
        if len(at.configs) <= 1:
            return at.configs[0], 0, False
        key = (id(at), tuning_key(at, args, kwargs))
        cold = key not in self.chosen
        if cold:
            pruned = at.prune_configs(dict(kwargs))
            self.chosen[key] = pruned[0]
            cold = len(pruned) > 1
        config = self.chosen[key]
        return config, config_index(at, config), cold


#: what upstream's ``Autotuner._bench`` takes for "this config cannot run here"
_UNFIT = (OutOfResources, CompileTimeAssertionFailure, PTXASError)


def record_config(details: Sequence[dict[str, Any]], at: Any, index: int | None) -> None:
    """Note in each of ``details`` (ModeResult details) the config index ``at`` ran with
    (``configs_used``) and how many configs it has (``config_counts``)."""
    if index is None:
        return
    name = kernel_name(at)
    for detail in details:
        detail.setdefault("configs_used", {})[name] = index
        detail.setdefault("config_counts", {})[name] = len(at.configs)


def launch_cache_classes() -> list[type]:
    """Launch wrappers that are not Triton's own (``KernelInterface`` subclasses other than
    ``JITFunction``, ``Autotuner`` and ``Heuristics``) and define their own ``run``: a
    library's launch cache such as FlagGems' ``@libentry``, which keeps the kernel its
    autotuner's first run returned per argument key and launches it again directly, without
    asking the autotuner."""
    from triton.runtime.jit import KernelInterface

    out: list[type] = []
    todo = list(KernelInterface.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not issubclass(cls, (JITFunction, Autotuner, Heuristics)) and "run" in vars(cls):
            out.append(cls)
    return out


def _cache_dicts(wrapper: Any) -> list[dict[Any, Any]]:
    """The dicts of a launch wrapper's ``kernel_cache`` (one, or one per device)."""
    cache = getattr(wrapper, "kernel_cache", None)
    if isinstance(cache, dict):
        return [cache]
    if isinstance(cache, (tuple, list)) and all(isinstance(d, dict) for d in cache):
        return list(cache)
    return []


class LaunchCaches:
    """The kernel caches of library launch wrappers (:func:`launch_cache_classes`), emptied
    at each wrapper's first launch in a scope (a case) and put back at its end, so that the
    wrapper asks its autotuner again and the case's config is the one that runs (FlagGems'
    ``@libentry`` would otherwise launch the kernel an earlier case's config compiled)."""

    def __init__(self) -> None:
        self.originals = {cls: vars(cls)["run"] for cls in launch_cache_classes()}
        self.saved: dict[int, tuple[Any, list[tuple[dict[Any, Any], dict[Any, Any]]]]] = {}

    def runs(self) -> dict[type, Callable[..., Any]]:
        """The ``run`` to install on each wrapper class while the scope lasts."""
        def run(wrapper: Any, *args: Any, **kwargs: Any) -> Any:
            if id(wrapper) not in self.saved:
                dicts = _cache_dicts(wrapper)
                self.saved[id(wrapper)] = (wrapper, [(d, dict(d)) for d in dicts])
                for d in dicts:
                    d.clear()
            own = next(c for c in type(wrapper).__mro__ if c in self.originals)
            return self.originals[own](wrapper, *args, **kwargs)

        return dict.fromkeys(self.originals, run)

    def restore(self) -> None:
        """The original ``run`` of each class, and each cache as it was."""
        for cls, original in self.originals.items():
            cls.run = original  # type: ignore[attr-defined]
        for _, pairs in self.saved.values():
            for d, before in pairs:
                d.clear()
                d.update(before)
        self.saved.clear()


@contextlib.contextmanager
def forced_configs(configs: Mapping[str, int] | None,
                   details: Sequence[dict[str, Any]] = ()) -> Iterator[None]:
    """While active, every autotuner (Triton's ``Autotuner`` and each subclass with its own
    ``run``, a library's autotuner such as FlagGems' ``LibTuner``, found statically or not)
    runs one config and never benchmarks: the config index ``configs`` names for its kernel,
    as on a tuning-cache hit (only the config's ``pre_hook`` runs), else its first config after
    its own pruning, as upstream runs its choice on a cold key (``reset_to_zero`` reset once
    per tuning key, then the config's ``pre_hook``): :class:`OneConfig`, the same choice
    :func:`fuzzkern.execution.interpreter.core.interpreter_mode` makes. A library's launch cache
    (FlagGems' ``@libentry``) is emptied for the scope (:class:`LaunchCaches`), so its
    autotuner is asked again and the case's config runs. Each dict of ``details``
    gets ``configs_used`` (kernel name -> the config index it ran) and ``config_counts``
    (kernel name -> its number of configs), created on the first autotuned launch.

    ``configs=None``: every autotuner runs upstream's own ``run`` (it benchmarks and caches
    its choice, as upstream does; the config it picked is recorded all the same). Otherwise
    the autotuners' caches and ``best_config`` are restored on exit, so a choice never leaks
    into a later case.
    """
    if configs is None and not details:
        yield
        return
    classes = autotuner_classes()
    originals = {cls: vars(cls)["run"] for cls in classes}
    touched: dict[int, tuple[Any, dict[Any, Any] | None, Any]] = {}
    missing = object()
    choices = OneConfig(configs or {})
    caches = LaunchCaches() if configs is not None else None

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if configs is None:  # upstream's choice, benchmarked (and cached, as upstream does)
            own = next(c for c in type(self).__mro__ if c in originals)
            out = originals[own](self, *args, **kwargs)
            best = getattr(self, "best_config", None)
            record_config(details, self, None if best is None else config_index(self, best))
            return out
        if id(self) not in touched:
            touched[id(self)] = (self, cache_snapshot(self.cache),
                                 getattr(self, "best_config", missing))
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        try:
            try:
                config, index, reset = choices.choose(self, args, kwargs)
            except ForcedConfigError:
                raise
            except Exception as e:  # its own pruning failed: upstream's run decides, as before
                for detail in details:
                    detail.setdefault("autotune_fallback", f"{kernel_name(self)}: "
                                      f"{type(e).__name__}: {e}")
                own = next(c for c in type(self).__mro__ if c in originals)
                return originals[own](self, *args, **kwargs)
            record_config(details, self, index)
            self.best_config = config
            full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
            if reset:
                self.pre_hook(full_nargs, reset_only=True)
            if config.pre_hook is not None:
                config.pre_hook(full_nargs)
            try:
                return self.fn.run(*args, **kwargs, **config.all_kwargs())
            except _UNFIT as e:  # what upstream's benchmarking skips
                raise ConfigDoesNotFit(
                    f"config {index} of {len(self.configs)} of autotuned kernel "
                    f"{kernel_name(self)!r} ({config}) does not run on this GPU "
                    f"({type(e).__name__}: {e}); its autotuner skips it, and a launch never "
                    "runs it") from e
        finally:
            self.nargs = None

    for cls in classes:
        cls.run = run  # type: ignore[method-assign]
    for cls, wrapped in caches.runs().items() if caches is not None else ():
        cls.run = wrapped  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for cls, original in originals.items():
            cls.run = original  # type: ignore[method-assign]
        if caches is not None:
            caches.restore()
        for at, cache, best in touched.values():
            restore_autotuner(at, cache, best, missing)
