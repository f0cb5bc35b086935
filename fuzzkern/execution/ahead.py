"""Compile ahead: while cases run, the specializations the search will draw next compile in
other processes, on the host's idle cores, into Triton's on-disk cache; a case that needs one
of them later only loads it.

Why: docs/scaling.md, "Compile ahead". In compiled mode a case that needs a new
specialization (another autotune config, another drawn ``num_warps``, another dtype, another
divisibility of a dim or alignment of a pointer) waits while its worker compiles it, one
kernel at a time.
The specializations a search draws next are mostly predictable from the one it needed now:

- **in a worker** (:func:`install`): every compilation a kernel asks for (Triton's
  ``JITFunction._do_compile``, an in-memory cache miss) is captured as a :class:`Spec` (the
  function, its signature, constexprs, attributes, options and target, Triton 3.6 to 3.9) and
  its neighbours derived (:func:`neighbours`): the other configs of the autotuner that launched
  it, the other values of the target's drawn compile options, the case's float dtype's
  pointers retyped to the target's other float dtypes, each pointer or int argument's
  divisibility by 16 flipped. Each neighbour becomes a *job* (:func:`job_of`), plain data
  naming the kernel by module and qualified name (and the target's reference, to load the
  target the way a worker does when the module is a target file, and the module's file);
  the jobs go to the parent as an ``("ahead", jobs)`` event, before the worker compiles what
  it needs itself;
- **in the parent's compile processes** (:class:`fuzzkern.execution.pool.AheadPool`):
  :func:`compile_job` imports the kernel again, checks that its source hashes as the
  worker's did, and calls ``triton.compile`` for the worker's target, with the worker's
  cache-relevant environment, into the worker's cache directory. Triton's cache is safe
  across processes: the worker's later compile of the same specialization is a cache hit.

No user object crosses a process: a job holds strings, numbers and tuples; nothing from a
corpus entry runs as code. A job that fails (a kernel that cannot be imported again, a
compile error) is counted and dropped: it never touches a case. While a compile process
compiles a job it holds a lock on the job's key (:func:`lock_path`), and a worker that needs
that very specialization waits for it (at most :data:`WAIT_AHEAD` seconds) rather than
compiling it a second time. Whatever fails in compiling ahead, the worker compiles as it would
without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

#: environment variable: how many compile processes compile ahead (0 or ``off``: none, the
#: default; ``auto``: :func:`host_size`)
AHEAD_ENV = "FUZZKERN_AHEAD"
#: environment variable: the folder of the jobs' lock files (set by the worker pool)
LOCKS_ENV = "FUZZKERN_AHEAD_LOCKS"
#: environment variable: the host-wide folder where worker pools register and compile
#: processes take a compile slot (default: one per user in the temporary folder)
HOST_ENV = "FUZZKERN_AHEAD_HOST"
#: the most jobs one captured compilation asks for (of those not asked for before)
MOST_AHEAD = 96
#: compiling ahead measures its hit rate (the worker's compilations served from it, per job
#: it compiled) once this many jobs compiled, and stops below :data:`MIN_HIT_RATE`
AHEAD_WARMUP = 100
MIN_HIT_RATE = 0.05
#: Triton options an autotune config sets
CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
_INTS = ("i1", "i8", "i16", "i32", "i64", "u1", "u8", "u16", "u32", "u64")
#: the float dtypes a dtype neighbour retypes pointers between: torch's name, Triton's
FLOATS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
_DIVISIBLE = ["tt.divisibility", 16]


class AheadError(Exception):
    """A job that cannot be compiled ahead (its kernel not found again, or changed)."""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_size() -> int:
    """Compile processes when none are asked for: none. Measured on an H200 (Liger-Kernel,
    FlagGems, fla-core libraries, docs/scaling.md "Compile ahead"), compiling ahead served
    0.4-2% of what it compiled and did not beat compiling in the worker: it is opt-in."""
    return 0


def host_size(cores: int | None = None, sharers: int | None = None) -> int:
    """Compile processes for ``auto``: the host's cores but one (the worker's), shared by the
    ``sharers`` worker pools of the host (default: pytest-xdist's worker count, else 1);
    none on a host of two cores or fewer (there they would only slow the worker down)."""
    if cores is None:
        cores = _cores()
    if sharers is None:
        try:
            sharers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        except ValueError:
            sharers = 1
    if cores <= 2:
        return 0
    return max(0, cores // max(1, sharers) - 1)


def size_of(given: int | str | None = None) -> int:
    """Compile processes for ``given`` (a count, ``"off"``, ``"auto"``), else
    :data:`AHEAD_ENV`, else :func:`default_size` (none)."""
    if given is None:
        given = os.environ.get(AHEAD_ENV)
    if given is None or given == "":
        return default_size()
    word = given.strip().lower() if isinstance(given, str) else None
    if word in ("off", "no", "false"):
        return 0
    if word == "auto":
        return host_size()
    try:
        n = int(given)
    except ValueError:
        raise ValueError(f"Expected {AHEAD_ENV} to be a number of compile processes (0: off, "
                         f"auto: the host's cores but one) but got {given!r}; set it to e.g. "
                         "8, auto or off.") from None
    if n < 0:
        raise ValueError(f"Expected {AHEAD_ENV} to be 0 or more but got {n}.")
    return n


# -- the host's share: compile processes below the workers, within the idle cores -----------


def host_folder() -> str:
    """The host-wide folder of worker pools' registrations and compile slots."""
    import tempfile

    return os.environ.get(HOST_ENV) or os.path.join(tempfile.gettempdir(),
                                                     f"fuzzkern-ahead-{os.getuid()}")


def register_pool(folder: str | None = None) -> Callable[[], None] | None:
    """Register a worker pool (one worker) on the host until the returned function is called
    (an exclusive lock on a file of its own; once the process is gone it no longer counts
    either); None when the folder cannot be written."""
    folder = folder or host_folder()
    name = f"{os.getpid()}-{os.urandom(6).hex()}.lock"
    path = os.path.join(folder, "pool-" + name)
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(os.path.join(folder, "new-" + name), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # locked before it is counted: never taken as stale
        os.rename(os.path.join(folder, "new-" + name), path)
    except OSError:
        os.close(fd)
        return None

    def unregister() -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.close(fd)

    return unregister


def pools_on_host(folder: str | None = None) -> int:
    """Worker pools registered on the host now (:func:`register_pool`); stale files (their
    lock free) are removed."""
    folder = folder or host_folder()
    try:
        names = [n for n in os.listdir(folder) if n.startswith("pool-")]
    except OSError:
        return 0
    count = 0
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            count += 1
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)
    return count


def host_slots(cores: int | None = None, pools: int | None = None) -> int:
    """Compilations all compile processes of the host may run at once: the cores the worker
    pools' workers leave (one each), at least one (compile processes run at idle priority:
    on a core a worker needs they only get what it leaves)."""
    cores = _cores() if cores is None else cores
    pools = pools_on_host() if pools is None else pools
    return max(1, cores - max(1, pools))


@contextlib.contextmanager
def compile_slot(folder: str | None = None, poll: float = 0.05) -> Iterator[int]:
    """One of the host's :func:`host_slots` compile slots for the block (an exclusive lock on
    ``slot-<i>.lock``), waiting while all are taken; yields its number. The count is read
    again while waiting (pools come and go)."""
    folder = folder or host_folder()
    os.makedirs(folder, exist_ok=True)
    while True:
        for i in range(host_slots(pools=pools_on_host(folder))):
            fd = os.open(os.path.join(folder, f"slot-{i}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield i
                return
            finally:
                os.close(fd)
        time.sleep(poll)


def below_workers() -> None:
    """This (compile) process at the lowest priority the host gives: ``SCHED_IDLE`` where
    there is one (it runs only on a core nothing else wants; what it starts, ``ptxas``,
    inherits it), else ``nice 19``."""
    with contextlib.suppress(OSError):
        os.nice(19)
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]


# -- a compilation, as data ----------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One specialization of a ``JITFunction``: what ``triton.compile`` needs besides it."""

    fn: Any
    signature: Mapping[str, Any]
    constexprs: Mapping[tuple[int, ...], Any]
    attrs: Mapping[tuple[int, ...], Any]
    options: Mapping[str, Any]
    #: (backend, arch, warp_size) of Triton's ``GPUTarget``
    target: tuple[Any, ...]


class _NotPlain(Exception):
    pass


def _encode(value: Any) -> Any:
    """A constexpr's value as plain data (tagged dicts for dtypes, constexprs, kernels,
    tuples); anything else is :class:`_NotPlain`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    import triton.language as tl
    from triton.runtime.jit import JITFunction

    if isinstance(value, tl.dtype):
        return {"dtype": str(value)}
    if isinstance(value, tl.constexpr):
        return {"constexpr": _encode(value.value)}
    if isinstance(value, JITFunction):
        return {"jit": [value.fn.__module__, value.fn.__qualname__]}
    raise _NotPlain(type(value).__name__)


def _decode(value: Any, ref: str | None) -> Any:
    if not isinstance(value, dict):
        return value
    import triton.language as tl

    if "tuple" in value:
        return tuple(_decode(v, ref) for v in value["tuple"])
    if "dtype" in value:
        return tl.dtype(value["dtype"])
    if "constexpr" in value:
        return tl.constexpr(_decode(value["constexpr"], ref))
    module, qualname = value["jit"]
    return resolve(module, qualname, ref)


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and all(_plain(v) for v in value)


def _tuples(value: Any) -> Any:
    """Lists back to tuples, all the way down (Triton's options hold tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


def key_of(spec: Spec) -> str:
    """A digest that tells specializations apart (the kernel's source hash and every field)."""
    text = repr((spec.fn.cache_key, sorted(spec.signature.items()),
                 sorted((k, repr(_encode(v))) for k, v in spec.constexprs.items()),
                 sorted((k, repr(v)) for k, v in spec.attrs.items()),
                 sorted((k, repr(v)) for k, v in spec.options.items()), spec.target))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def job_of(spec: Spec, *, ref: str | None = None, env: Mapping[str, str] | None = None,
           cache_dir: str | None = None) -> dict[str, Any] | None:
    """``spec`` as a job for :func:`compile_job` (plain data), or None when it cannot travel
    (a kernel defined inside a function, a constexpr whose value is no plain data)."""
    fn = spec.fn
    module, qualname = fn.fn.__module__, fn.fn.__qualname__
    if "<locals>" in qualname or not all(_plain(v) for v in spec.options.values()):
        return None
    try:
        constexprs = [[list(k), _encode(v)] for k, v in spec.constexprs.items()]
    except _NotPlain:
        return None
    file = getattr(sys.modules.get(module), "__file__", None)
    return {"key": key_of(spec), "module": module, "qualname": qualname,
            "file": file if isinstance(file, str) else None,
            "cache_key": fn.cache_key, "ref": ref, "signature": dict(spec.signature),
            "constexprs": constexprs, "attrs": [[list(k), v] for k, v in spec.attrs.items()],
            "options": dict(spec.options), "target": list(spec.target),
            "env": dict(env or {}), "cache_dir": cache_dir}


# -- neighbours: what the search will draw next --------------------------------------------


def _with_config(spec: Spec, config: Any, bound: Mapping[str, Any] | None,
                 heuristics: tuple[Any, ...]) -> Spec | None:
    """``spec`` as autotune ``config`` would compile it: the config's constexprs (and the
    heuristics over them, from ``bound``, the launch's arguments by name) and options. None
    when that cannot be worked out (a config setting a non-constexpr argument, heuristics
    without the arguments)."""
    fn = spec.fn
    names = list(fn.arg_names)
    values = dict(bound or {})
    values.update(config.kwargs)
    changed = list(config.kwargs)
    if heuristics and bound is None:
        return None
    for h in heuristics:  # outermost first, as Heuristics.run calls them
        for name, heur in h.values.items():
            try:
                values[name] = heur(values)
            except Exception:
                return None
            changed.append(name)
    constexprs = dict(spec.constexprs)
    for name in changed:
        if name not in names or not fn.params[names.index(name)].is_constexpr:
            return None
        constexprs[(names.index(name),)] = values[name]
    options = dict(spec.options)
    for name in CONFIG_OPTIONS:
        v = getattr(config, name, None)
        if name in options and (v is not None or name == "maxnreg"):
            options[name] = v
    return replace(spec, constexprs=constexprs, options=options)


def _flips(spec: Spec) -> list[Spec]:
    """``spec`` with one pointer's or int's divisibility by 16 flipped, argument by
    argument (an aligned pointer misaligned, an irregular dim a multiple of 16)."""
    out = []
    params = spec.fn.params
    for path, attr in spec.attrs.items():
        if len(path) != 1 or path[0] >= len(params):
            continue
        p = params[path[0]]
        kind = spec.signature.get(p.name)
        if not isinstance(kind, str) or p.is_constexpr or p.do_not_specialize:
            continue
        if kind.startswith("*"):
            if p.do_not_specialize_on_alignment:
                continue
        elif kind not in _INTS:
            continue
        attr = list(attr or [])
        has = _DIVISIBLE in attr
        new = [a for a in attr if a != _DIVISIBLE] if has else [*attr, list(_DIVISIBLE)]
        out.append(replace(spec, attrs={**spec.attrs, path: new}))
    return out


def _with_dtype(spec: Spec, old: str, new: str,
                following: frozenset[str] | None = None) -> Spec | None:
    """``spec`` with every pointer to ``old`` (Triton's name: ``fp16``) one to ``new``; with
    ``following``, only the pointers of those arguments."""
    signature = {k: "*" + new if v == "*" + old and (following is None or k in following)
                 else v for k, v in spec.signature.items()}
    return None if signature == dict(spec.signature) else replace(spec, signature=signature)


def neighbours(spec: Spec, *, configs: tuple[Any, ...] = (), config: Any = None,
               bound: Mapping[str, Any] | None = None, heuristics: tuple[Any, ...] = (),
               choices: Mapping[str, Sequence[Any]] | None = None,
               drawn: Mapping[str, Any] | None = None, dtype: str | None = None,
               dtypes: Sequence[str] = (), following: frozenset[str] | None = None,
               flips: bool = True, most: int | None = None) -> list[Spec]:
    """The specializations a search is likely to need after ``spec``, most likely first, at
    most ``most`` (None: all), ``spec`` itself left out:

    - ``configs``: the autotuner's configs (``config``: the one that launched ``spec``),
      each as it would compile (:func:`_with_config`);
    - ``choices``/``drawn``: the target's compile options and this case's drawn values
      (:attr:`fuzzkern.target.declare.Target.compile_options`): every other value of an
      option the launch took from the case (an autotune config's own options win);
    - ``dtype``/``dtypes``: the case's float dtype and the others its target draws (Triton's
      names): every pointer to ``dtype`` retyped to each other (:func:`_with_dtype`; the
      heuristics and the host's choices for that dtype are not worked out again); with
      ``following`` (the arguments seen to follow the case's dtype), only those when
      ``dtype`` is ``fp32``, which a kernel's own buffers often are whatever the inputs;
    - ``flips``: each pointer's or int's divisibility by 16 flipped (:func:`_flips`)."""
    bases = [spec]
    for c in configs:
        if c is config:
            continue
        s = _with_config(spec, c, bound, heuristics)
        if s is not None:
            bases.append(s)
    out = bases[1:]
    for name, values in (choices or {}).items():
        if drawn is None or name not in drawn or spec.options.get(name) != drawn[name]:
            continue
        if config is not None and getattr(config, name, None) is not None:
            continue  # the config sets it: the drawn value never applies
        out += [replace(b, options={**b.options, name: v})
                for b in bases for v in values if v != drawn[name]]
    if dtype is not None:
        only = following if dtype == "fp32" else None
        out += [s for s in (_with_dtype(spec, dtype, d, only) for d in dtypes if d != dtype)
                if s]
    if flips:
        out += _flips(spec)
    seen = {key_of(spec)}
    unique = []
    for s in out:
        k = key_of(s)
        if k not in seen:
            seen.add(k)
            unique.append(s)
    return unique if most is None else unique[:most]


# -- the compile process side ----------------------------------------------------------------


@functools.cache
def _target(ref: str) -> Any:
    """The target ``ref`` names, loaded once per process (as a worker loads it)."""
    from fuzzkern.target import loader

    return loader.load_ref(ref)


def _import_file(module: str, file: str) -> Any:
    """``file`` imported as module ``module``, its folder on ``sys.path`` (as the target
    loader imports a target file)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(module, file)
    if spec is None or spec.loader is None:
        raise AheadError(f"Expected {file!r} to be a Python file, but it cannot be imported.")
    folder = os.path.dirname(os.path.abspath(file))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[module]
        raise
    return mod


def _module(module: str, ref: str | None, file: str | None) -> Any:
    """Module ``module`` in this process: imported by name, else defined by loading the
    target ``ref`` (a target file's module), else imported from the worker's ``file``."""
    mod = sys.modules.get(module)
    if mod is not None:
        return mod
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    if ref:
        _target(ref)
        mod = sys.modules.get(module)
    if mod is None and file and file.endswith(".py") and os.path.isfile(file):
        mod = _import_file(module, file)
    if mod is None:
        raise AheadError(f"Expected module {module!r} to be importable, to be defined by "
                         f"loading target {ref!r} or to be file {file!r}, but it is none.")
    return mod


def resolve(module: str, qualname: str, ref: str | None = None,
            file: str | None = None) -> Any:
    """The ``JITFunction`` named ``module:qualname``, imported again (:func:`_module`: by
    name, through its target's reference ``ref`` loaded the way a worker loads it, or from
    the worker's ``file``); autotuner and heuristics wrappers are seen through."""
    from triton.runtime.jit import JITFunction

    mod = _module(module, ref, file)
    obj: Any = mod
    for part in qualname.split("."):
        obj = getattr(obj, part)
    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 16:
        obj = obj.fn
        seen += 1
    if not isinstance(obj, JITFunction):
        raise AheadError(f"Expected {module}:{qualname} to be a Triton kernel but got "
                         f"{type(obj).__name__}.")
    return obj


#: per kernel (module, qualified name): whether a compile process finds it again
_findable: dict[tuple[str, str], bool] = {}


def findable(fn: Any) -> bool:
    """In a worker: whether a compile process finds the ``JITFunction`` ``fn`` again the way
    :func:`resolve` will, by module name and qualified name: the module is in
    ``sys.modules`` under its name (not ``__main__``), importable by that name or a Python
    file that exists (a target file's module), and the name reaches ``fn``. A library's
    generated module, loaded from a file without a place in ``sys.modules`` (FlagGems'
    ``_gen_module_*``), is not: its jobs are never submitted."""
    import importlib.util

    module, qualname = fn.fn.__module__, fn.fn.__qualname__
    known = _findable.get((module, qualname))
    if known is None:
        known = False
        mod = sys.modules.get(module) if module != "__main__" else None
        if mod is not None and "<locals>" not in qualname:
            try:
                named = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                named = False
            file = getattr(mod, "__file__", None)
            on_disk = isinstance(file, str) and file.endswith(".py") and os.path.isfile(file)
            obj: Any = mod
            with contextlib.suppress(AttributeError):
                for part in qualname.split("."):
                    obj = getattr(obj, part)
                known = (named or on_disk) and _reaches(obj, fn)
        _findable[(module, qualname)] = known
    return known


def lock_path(key: str, folder: str | None = None) -> str | None:
    """The lock file of a job's key in ``folder`` (default: :data:`LOCKS_ENV`); None: no
    folder."""
    folder = folder or os.environ.get(LOCKS_ENV)
    return os.path.join(folder, key + ".lock") if folder else None


#: seconds a worker waits at most for a compile process compiling what it needs (then it
#: compiles it itself)
WAIT_AHEAD = 60.0


@contextlib.contextmanager
def held(key: str, exclusive: bool, wait: float = WAIT_AHEAD) -> Iterator[bool]:
    """The lock of ``key`` for the block (exclusive: a compile process compiling it; shared:
    a worker waiting, at most ``wait`` seconds, until that compile ends); yields whether it
    is held. Without a lock folder, nothing is locked."""
    path = lock_path(key)
    if path is None:
        yield False
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if exclusive:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield True
            return
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.01)
        yield True
    finally:
        os.close(fd)


@contextlib.contextmanager
def _environment(env: Mapping[str, str], cache_dir: str | None) -> Iterator[None]:
    """The worker's cache-invalidating environment (and cache folder) for the block."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    wanted = dict(env)
    if cache_dir:
        wanted["TRITON_CACHE_DIR"] = cache_dir
    names = set(get_cache_invalidating_env_vars()) | set(wanted)
    saved = {n: os.environ.get(n) for n in names}
    try:
        for n in names:
            if n in wanted:
                os.environ[n] = wanted[n]
            elif n != "TRITON_CACHE_DIR":
                os.environ.pop(n, None)
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _compile(fn: Any, job: Mapping[str, Any]) -> bool:
    """``triton.compile`` of the job; whether Triton's cache had it already."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    ref = job.get("ref")
    src = ASTSource(fn, dict(job["signature"]),
                    {tuple(p): _decode(v, ref) for p, v in job["constexprs"]},
                    {tuple(p): v for p, v in job["attrs"]})
    hits: list[bool] = []
    before = knobs.compilation.listener

    def listener(*, cache_hit: bool, **kw: Any) -> None:
        hits.append(cache_hit)

    knobs.compilation.listener = listener
    try:
        triton.compile(src, target=GPUTarget(*job["target"]),
                       options={k: _tuples(v) for k, v in job["options"].items()},
                       _env_vars=dict(job["env"]))
    finally:
        knobs.compilation.listener = before
    return bool(hits and hits[-1])


def compile_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Compile one job (in a compile process): ``{"key", "ok", "cached", "seconds"}`` and,
    when it failed, ``"error"``. Never raises."""
    start = time.monotonic()
    out: dict[str, Any] = {"key": job.get("key"), "ok": False, "cached": False}
    try:
        with _environment(job.get("env") or {}, job.get("cache_dir")):
            fn = resolve(job["module"], job["qualname"], job.get("ref"), job.get("file"))
            if fn.cache_key != job["cache_key"]:
                raise AheadError(f"Expected {job['module']}:{job['qualname']} to hash as in "
                                 "the worker, but its source or globals differ here.")
            with held(str(job["key"]), exclusive=True):
                out["cached"] = _compile(fn, job)
        out["ok"] = True
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"[:400]
    out["seconds"] = round(time.monotonic() - start, 6)
    return out


# -- the worker side ---------------------------------------------------------------------------


@dataclass
class _Case:
    """What the worker's compilations need to know of the case running now."""

    ref: str | None = None
    drawn: Mapping[str, Any] | None = None
    inputs: Mapping[str, Any] | None = None


_case = _Case()
#: per kernel (its ``JITFunction``'s id), the pointer arguments seen to follow the case's
#: float dtype (pointers to it in a case of a dtype other than fp32)
_following: dict[int, frozenset[str]] = {}
#: keys this worker compiled itself or asked for ahead
_known: set[str] = set()
_asked: set[str] = set()
#: sends an event to the parent (default: :func:`fuzzkern.execution.progress.notify`)
_send: Callable[..., None] | None = None


def begin_case(ref: str, case_json: Mapping[str, Any]) -> None:
    """In a worker, before a case: its target's reference, its drawn compile options and
    its inputs (never raises: what it cannot read is left out)."""
    _case.ref = ref if isinstance(ref, str) else None
    drawn = case_json.get("compile") if isinstance(case_json, Mapping) else None
    _case.drawn = dict(drawn) if isinstance(drawn, Mapping) else None
    inputs = case_json.get("inputs") if isinstance(case_json, Mapping) else None
    _case.inputs = inputs if isinstance(inputs, Mapping) else None


def dtype_choices(target: Any, inputs: Mapping[str, Any] | None) -> tuple[str | None,
                                                                          tuple[str, ...]]:
    """The one float dtype a case (its JSON ``inputs``) drew for the tensors whose dtype the
    target draws, and the other float dtypes the target draws for them, in Triton's names;
    (None, ()) when the case drew none or several."""
    from fuzzkern.strategies._internal.dtypes import DEFAULT_DTYPES

    tensors = getattr(getattr(target, "inputs", None), "tensors", None) or {}
    drawn: set[str] = set()
    others: set[str] = set()
    for name, strategy in tensors.items():
        if getattr(strategy, "dtype_of", None):
            continue  # follows another input's dtype
        arg = getattr(strategy, "_dtypes_arg", None)
        names = DEFAULT_DTYPES if arg is None else arg
        entry = (inputs or {}).get(name)
        got = entry.get("tensor", {}).get("dtype") if isinstance(entry, Mapping) else None
        if not isinstance(names, (list, tuple)) or len(names) < 2 or got not in FLOATS:
            continue
        drawn.add(got)
        others |= {n for n in names if n in FLOATS}
    if len(drawn) != 1:
        return None, ()
    (got,) = drawn
    return FLOATS[got], tuple(FLOATS[n] for n in sorted(others) if n != got)


def _reaches(obj: Any, fn: Any) -> bool:
    seen = 0
    while obj is not fn and hasattr(obj, "fn") and seen < 16:
        obj = obj.fn
        seen += 1
    return obj is fn


def launch_context(fn: Any, frame: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any] | None]:
    """From the frames above a compilation of ``fn``: the autotuner that launched it (None:
    none), the heuristics between the two (outermost first), and the launch's arguments by
    name (``bound_args`` of ``JITFunction.run``)."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    bound = None
    heuristics: list[Any] = []
    depth = 0
    while frame is not None and depth < 40:
        me = frame.f_locals.get("self")
        if me is fn and bound is None and isinstance(frame.f_locals.get("bound_args"), dict):
            bound = dict(frame.f_locals["bound_args"])
        elif isinstance(me, Heuristics) and _reaches(me, fn) and me not in heuristics:
            heuristics.append(me)
        elif isinstance(me, Autotuner) and _reaches(me, fn):
            return me, tuple(reversed(heuristics)), bound
        frame = frame.f_back
        depth += 1
    return None, tuple(reversed(heuristics)), bound


def _drawn_choices(ref: str | None) -> tuple[Mapping[str, Sequence[Any]] | None, str | None,
                                              tuple[str, ...]]:
    """The target's compile options, the case's float dtype and the target's others."""
    if ref is None:
        return None, None, ()
    try:
        target = _target(ref)
        return (target.compile_options, *dtype_choices(target, _case.inputs))
    except Exception:
        return None, None, ()


def capture(fn: Any, signature: Any, device: Any, constexprs: Any, options: Any,
            attrs: Any, frame: Any) -> tuple[str, list[dict[str, Any]]]:
    """A compilation the worker is about to do: its key, and the jobs of its neighbours
    not asked for yet."""
    from triton import knobs
    from triton._C.libtriton import get_cache_invalidating_env_vars

    target = fn.device_caches[device][2]
    spec = Spec(fn, dict(signature), dict(constexprs), dict(attrs), dict(vars(options)),
                (target.backend, target.arch, target.warp_size))
    key = key_of(spec)
    _known.add(key)
    if not findable(fn):  # a compile process would fail on every job of it
        return key, []
    autotuner, heuristics, bound = launch_context(fn, frame)
    config = getattr(autotuner, "best_config", None) if autotuner is not None else None
    choices, dtype, dtypes = _drawn_choices(_case.ref)
    if dtype is not None and dtype != "fp32":
        _following[id(fn)] = frozenset(k for k, v in spec.signature.items() if v == "*" + dtype)
    more = neighbours(spec, configs=tuple(getattr(autotuner, "configs", None) or ()),
                      config=config, bound=bound, heuristics=heuristics, choices=choices,
                      drawn=_case.drawn, dtype=dtype, dtypes=dtypes,
                      following=_following.get(id(fn)))
    env = dict(get_cache_invalidating_env_vars())
    jobs: list[dict[str, Any]] = []
    for s in more:
        if len(jobs) >= MOST_AHEAD:
            break
        if key_of(s) in _known:
            continue
        job = job_of(s, ref=_case.ref, env=env, cache_dir=knobs.cache.dir)
        if job is not None:
            _known.add(job["key"])
            _asked.add(job["key"])
            jobs.append(job)
    return key, jobs


#: the parameters of ``JITFunction._do_compile`` after ``self``
_DO_COMPILE = ("key", "signature", "device", "constexprs", "options", "attrs", "warmup")


def install(send: Callable[..., None] | None = None) -> bool:
    """In a worker: capture every compilation from now on and ask for its neighbours ahead
    (``send("ahead", jobs)``; default: the event channel to the parent); a compilation of a
    specialization asked for ahead waits for the compile process compiling it, and when it
    is then served from the cache, ``send("ahead-served", 1)``. Installed once; a failure
    to derive never touches the compilation. Whether it is installed (never raises)."""
    try:
        return _install(send)
    except Exception:
        return False


def _install(send: Callable[..., None] | None) -> bool:
    global _send
    from triton.runtime.jit import JITFunction

    from fuzzkern.execution import progress

    _send = send or progress.notify
    do_compile = JITFunction.__dict__.get("_do_compile")
    if do_compile is None:
        return False
    if getattr(do_compile, "_fuzzkern_ahead", False):
        return True

    @functools.wraps(do_compile)
    def ahead(self: Any, *args: Any, **kwargs: Any) -> Any:
        mine = None
        try:  # (key, signature, device, constexprs, options, attrs, warmup), Triton 3.6-3.9
            given = dict(zip(_DO_COMPILE, args, strict=False), **kwargs)
            mine, jobs = capture(self, given["signature"], given["device"],
                                 given["constexprs"], given["options"], given["attrs"],
                                 sys._getframe(1))
            if jobs and _send is not None:
                _send("ahead", jobs)
        except Exception:
            pass
        if mine is None or mine not in _asked:
            return do_compile(self, *args, **kwargs)
        return _served(mine, lambda: do_compile(self, *args, **kwargs))

    ahead._fuzzkern_ahead = True  # type: ignore[attr-defined]
    JITFunction._do_compile = ahead  # type: ignore[method-assign]
    return True


def _served(key: str, compile_now: Callable[[], Any]) -> Any:
    """A compilation asked for ahead: wait while a compile process holds it, then compile
    (a cache hit when it was compiled ahead); tell the parent when it was."""
    from fuzzkern.execution import compiled, progress

    with progress.compile_phase():
        hits: int | None = None
        try:
            with held(key, exclusive=False):
                pass
            hits = compiled.counter.cache_hits
        except Exception:  # no lock to wait on: compile as without compiling ahead
            pass
        result = compile_now()
        if hits is not None and compiled.counter.cache_hits > hits and _send is not None:
            with contextlib.suppress(Exception):
                _send("ahead-served", 1)
    return result
