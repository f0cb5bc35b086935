"""The code of every reproducer script (:mod:`fuzzkern.corpus.repro`), kept as a real module so
that ruff and mypy check it like the rest of the package. It is never imported by fuzzkern:
:func:`fuzzkern.corpus.repro.script` copies the text below the stand-ins into each script,
after the entry's data. The script needs only torch, triton, safetensors and the code under
test; nothing below may import fuzzkern.
"""

# ---- stand-ins: each script defines these from its ENTRY (not copied into scripts) ---------
ENTRY_ID: str = ""
TARGET_ID: str = ""
VERDICT: str = ""
SOURCE: "dict[str, Any]" = {}
ASSUME_GPU: str | None = None
TENSORS: "dict[str, tuple[Any, ...]]" = {}
SCALARS: "dict[str, Any]" = {}
ORDER: list[str] = []
DIMS: dict[str, int] = {}
CONFIGS: "list[dict[str, Any]]" = []
COMPILE: "dict[str, Any]" = {}
INPLACE: tuple[str, ...] = ()
CLOBBERS: tuple[str, ...] = ()
UPCAST: bool = True
REDUCTION: str | None = None
REDUCTION_LENGTH: int = 1
TOLERANCE: "dict[str, Any]" = {}
FAILING_MODES: tuple[str, ...] = ()
TIMEOUT: float = 60.0
OOB: "dict[str, Any] | None" = None
DEBUG: bool = False
INPUTS_FILE: str = ""
INPUTS_FILE_RELATIVE: str | None = None
EXPECT: "dict[str, Any]" = {}
# ---- end of stand-ins ----------------------------------------------------------------------

# ---- the reproducer (no fuzzkern below) ---------------------------------------------------
import argparse  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

#: bytes of red zone on each side of every tensor
GUARD_BYTES = 1 << 16
#: dtypes the interpreter computes wrongly: run as exact float32 copies there
SUBSTITUTED = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
#: torch.testing's defaults (rtol, atol), and fp8's
DEFAULT_TOLERANCE = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "float8_e4m3fn": (0.125, 2.0 ** -9),
    "float8_e5m2": (0.25, 2.0 ** -16), "float8_e4m3fnuz": (0.125, 2.0 ** -10),
    "float8_e5m2fnuz": (0.25, 2.0 ** -17),
}
#: float32's rtol for compiled GPU code (approximate exp/div, FMA contraction): fuzzkern's
#: oracle.COMPILED_RTOL
COMPILED_RTOL = {"float32": 2.0 ** -17, "complex64": 2.0 ** -17}


class Hang(BaseException):
    """The launch ran past the timeout (a BaseException: Triton wraps Exceptions)."""


def _say(text=""):
    """Print ``text`` with control characters escaped (a message may come from an entry or a
    kernel: no terminal escape sequence reaches the terminal)."""
    text = "".join(ch if ch in "\n\t" or ch.isprintable() else ascii(ch)[1:-1]
                   for ch in str(text))
    print(text, flush=True)


#: what the script can see, for each verdict family fuzzkern records: a read out of bounds
#: shows here as NaN (or a sentinel) in an output, a write as damaged red zones or a written gap
_SEEN_AS = {
    "hang": ("hang",), "error": ("error",), "overflow": ("error",),
    "reference-error": ("reference-error",), "input-mutated": ("input-mutated",),
    "nondeterministic": ("nondeterministic",),
    "oob": ("oob-write", "view-write", "mismatch", "structure"),
    "kernel-bug": ("mismatch", "structure"), "compiled-only": ("mismatch", "structure"),
    "interpreter-divergence": ("mismatch", "structure", "error"),
    "accuracy": ("mismatch",), "precision-bug": ("mismatch",),
}


def _problem(kind, place, text, frames=()):
    """One failure the script saw: its kind (as :data:`_SEEN_AS` names them), where (an
    output, an input, an exception type), the line to print, the traceback's frames."""
    return {"kind": kind, "place": place, "text": text, "frames": list(frames)}


def _same_place(p):
    """Whether problem ``p`` is the failure fuzzkern recorded: the same verdict family at the
    same place (the same output, input or exception and frame)."""
    family = EXPECT.get("family") or VERDICT
    where = EXPECT.get("location") or ""
    if p["kind"] not in _SEEN_AS.get(family, ()):
        return False
    if p["kind"] == "mismatch" and where.startswith("output "):
        return p["place"] == where
    if p["kind"] == "input-mutated":
        return not where or p["place"] == where
    if family == "overflow":  # Triton's overflow check fired again (fuzzkern records the
        return "overflow detected" in p["text"]  # operation, the script sees the assert)
    if p["kind"] in ("error", "reference-error") and where:
        kind, _, frame = where.partition(" at ")
        if p["place"] != kind:
            return False
        # the frame's file counts where the script ran through it (fuzzkern's own
        # interpreter frames are not the bare interpreter's; a line moves with an edit)
        files = [f.rsplit(":", 1)[0] for f in p["frames"]]
        return not frame or not files or files[-1] == frame.rsplit(":", 1)[0] or \
            frame.rsplit(":", 1)[0] not in files
    return True


def _conclude(problems):
    """Print what was seen and say whether it is the recorded failure: exit 1 when it is,
    3 for a different failure, 0 for none."""
    where = EXPECT.get("location") or ""
    recorded = VERDICT + (f" at {where}" if where else "")
    for p in problems:
        _say(("FAILURE: " if not p["text"].startswith("  ") else "") + p["text"])
    if not problems:
        _say(f"no failure: the outputs match the reference and no red zone was touched "
             f"(recorded verdict: {recorded}); the kernel may be fixed")
        return 0
    if any(_same_place(p) for p in problems if p["kind"]):
        _say(f"the failure reproduces (recorded verdict: {recorded})")
        return 1
    first = next(p["text"] for p in problems if p["kind"])
    _say(f"a different failure: {first}; fuzzkern recorded {recorded}")
    return 3


# -- finding the code under test ------------------------------------------------------------

def _load_file(path):
    """The module of file ``path``, loaded once under a name of its own (a file named
    html.py never replaces the standard library's html)."""
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f) == path:
            return mod
    if os.path.dirname(path) not in sys.path:
        sys.path.append(os.path.dirname(path))
    name = "repro_" + hashlib.sha1(path.encode()).hexdigest()[:8] + "_" + \
        os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _function(attr):
    """The target's launcher or reference (``attr``): from its own module (its place, found
    by ``fuzzkern repro`` in the declared target's code: no fuzzkern needed when that module
    does not import it), else through the declared target."""
    place = SOURCE.get(attr)
    if place:
        _search_path()
        try:
            obj = _module_at(place.get("module"), place.get("file"))
            for part in place["qualname"].split("."):
                obj = getattr(obj, part)
            return obj
        except (ImportError, AttributeError):
            pass
    return getattr(_load_target(), attr)


def _module_at(name, path):
    """Module ``name`` when it imports from ``path`` (or ``path`` is gone), else the file."""
    if name and not name.startswith(("fuzzkern_target_", "__main__")):
        try:
            mod = importlib.import_module(name)
            f = getattr(mod, "__file__", None)
            if not path or not os.path.exists(path) or (f and os.path.samefile(f, path)):
                return mod
        except ImportError:
            pass
    if path and os.path.exists(path):
        return _load_file(path)
    raise ImportError(f"cannot find module {name!r} (file {path!r})")


def _search_path():
    site = next((i for i, p in enumerate(sys.path) if "-packages" in p), len(sys.path))
    for folder in reversed(SOURCE.get("path") or []):
        if folder not in sys.path:
            sys.path.insert(site, folder)


def _load_target():
    """The target from its declared source (SOURCE: the file or module fuzzkern loaded it
    from, written by ``fuzzkern repro``; nothing here comes from the entry), with the project's
    folders on ``sys.path`` as fuzzkern puts them: before the installed packages, after the
    standard library, the file's own folder last."""
    _search_path()
    path = SOURCE.get("file")
    if path:
        module = _load_file(path)
    else:
        module = importlib.import_module(SOURCE["module"])
    return getattr(module, SOURCE["attr"])


def _call(fn, values):
    """Call fn with the inputs its signature names (all of them for **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return fn(**values)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return fn(**values)
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return fn(**{k: v for k, v in values.items() if k in names})


def _kernel_name(obj):
    base = getattr(obj, "base_fn", None)
    if inspect.isfunction(base):
        return base.__name__
    for _ in range(16):
        if inspect.isfunction(obj) or not hasattr(obj, "fn"):
            break
        obj = obj.fn
    return getattr(obj, "__name__", repr(obj))


def _autotuner_classes():
    """Triton's Autotuner and each subclass with a ``run`` of its own (a library's autotuner
    that benchmarks its own way)."""
    from triton.runtime.autotuner import Autotuner

    out, todo = [Autotuner], list(Autotuner.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "run" in vars(cls):
            out.append(cls)
    return out


def _find_tuners(c, launcher):
    from triton.runtime.autotuner import Autotuner

    glb = getattr(launcher, "__globals__", {})  # look through the launcher's module
    found = [v for v in glb.values() if _kernel_name(v) == c["kernel"]]
    tuners = []
    for obj in found:
        for _ in range(16):
            if isinstance(obj, Autotuner):
                tuners.append(obj)
            if not hasattr(obj, "fn"):
                break
            obj = obj.fn
    return tuners


def _force_configs(launcher):
    """Run autotuned kernels as fuzzkern did: each with the entry's config, and nothing
    benchmarked (a kernel the entry names no config for runs its first pruned config, with
    its ``reset_to_zero`` arguments reset once per tuning key as upstream does before its
    choice's run). Every autotuner class's ``run`` is replaced, a library's own included, so
    a kernel reached only at run time (behind a library's launch cache or an autograd
    Function) is forced by name when it runs."""
    forced = {}
    for c in CONFIGS:
        if not _find_tuners(c, launcher):
            _say(f"autotuned kernel {c['kernel']!r} is not in the launcher's code: forced "
                 f"to config {c['index']} by name when it runs")
        forced[c["kernel"]] = c["index"]
        _say(f"forced {c['kernel']} config[{c['index']}]"
             + (f": {c['config']}" if c.get("config") else ""))
    originals = {cls: vars(cls)["run"] for cls in _autotuner_classes()}
    seen = set()

    def run(self, *args, **kwargs):
        name = _kernel_name(self)
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        try:
            cold = False
            if name in forced:
                config = self.configs[forced[name]]
            else:
                pruned = self.prune_configs(kwargs) if len(self.configs) > 1 else self.configs
                config = pruned[0]
                named = {**self.nargs, **kwargs}
                key = (id(self), repr([named.get(k) for k in self.keys]
                                      + [str(v.dtype) for v in named.values()
                                         if hasattr(v, "dtype")]))
                cold = len(pruned) > 1 and key not in seen
                seen.add(key)
            self.best_config = config
            full = {**self.nargs, **kwargs, **config.all_kwargs()}
            if cold:
                self.pre_hook(full, reset_only=True)
            if config.pre_hook is not None:
                config.pre_hook(full)
            return self.fn.run(*args, **kwargs, **config.all_kwargs())
        finally:
            self.nargs = None

    for cls in originals:
        cls.run = run


def _compile_options(mode):
    """Compiled mode: the case's drawn compile options (``num_warps=2``, ...) for every launch
    that does not set them itself, as fuzzkern gave them."""
    if mode != "compiled" or not COMPILE:
        return
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    _say("compile options: " + ", ".join(f"{k}={v!r}" for k, v in sorted(COMPILE.items())))

    def run(self, *args, grid, warmup, **kwargs):
        return original(self, *args, grid=grid, warmup=warmup, **{**COMPILE, **kwargs})

    JITFunction.run = run


def _fix_interpreter_index():
    """Triton < 3.7 with numpy >= 2.4: tensor.__index__ is int() of a 1-element array, an
    error (triton#9171); squeeze first, as Triton 3.9 does."""
    try:
        import triton.runtime.interpreter as interp

        original = interp._patch_lang_tensor
        if "int(self.handle.data)" not in inspect.getsource(original):
            return
    except Exception:
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interp._patch_lang_tensor = patched


# -- red zones ------------------------------------------------------------------------------

def _sentinel(torch, dtype):
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.uint8:
        return 0xA5
    return torch.iinfo(dtype).min + 0x5A


_INT_OF_SIZE = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
_COUNTER = [0]


def _zone_bits(torch, dtype, index):
    """The bit pattern of red zone number ``index``: a NaN (an integer sentinel) whose bits
    differ from zone to zone, so bytes a kernel copies from one red zone into another (or NaN
    arithmetic writes) still show as a change."""
    size = torch.empty(0, dtype=dtype).element_size()
    if dtype.is_floating_point:
        if size <= 2:
            every = torch.arange(2 ** (8 * size), dtype=torch.int64).to(
                getattr(torch, _INT_OF_SIZE[size]))
            nans = every[every.view(dtype).float().isnan()].tolist()
            return nans[(index * 5 + 3) % len(nans)]
        if size == 4:
            return 0x7FC00000 | ((0x5A5A0 + index * 0x101) & 0x3FFFFF)
        return 0x7FF8000000000000 | ((0x5A5A5A0 + index * 0x10101) & 0xFFFFFFFFFFFF)
    if dtype == torch.bool:
        return 1
    info = torch.iinfo(dtype)
    return (0xA5 - index) % 256 if dtype == torch.uint8 else info.min + 0x5A + index % 64


class Guarded:
    """A storage of n elements between two red zones of g elements each."""

    def __init__(self, torch, n, dtype, device, label, empty):
        self.torch = torch
        self.label = label
        self.n = n
        size = empty(0, dtype=dtype).element_size()
        self.g = max(1, GUARD_BYTES // size)
        self.buf = empty(self.g + n + self.g, dtype=dtype, device=device)
        _COUNTER[0] += 1
        bits = _zone_bits(torch, dtype, _COUNTER[0])
        if bits >= 2 ** (8 * size - 1):
            bits -= 2 ** (8 * size)  # as the signed integer of the same width
        if dtype == torch.bool:
            self.buf.fill_(True)
        else:
            self.buf.view(getattr(torch, _INT_OF_SIZE[size])).fill_(bits)
        if dtype.is_floating_point or dtype == torch.bool:
            self.data().fill_(_sentinel(torch, dtype))
        self.before = self._zones()

    def _zones(self):
        return (self.buf[: self.g].clone(), self.buf[self.g + self.n:].clone())

    def data(self):
        return self.buf[self.g: self.g + self.n]

    def view(self, shape, strides, offset):
        return self.buf.as_strided(shape, strides, self.g + offset)

    def damage(self):
        """Red-zone elements changed since they were filled: (before the start, past the end)."""
        torch = self.torch
        out = []
        for old, new in zip(self.before, self._zones(), strict=False):
            a = old.cpu().contiguous().view(torch.uint8).reshape(old.numel(), -1)
            b = new.cpu().contiguous().view(torch.uint8).reshape(new.numel(), -1)
            out.append(int((a != b).any(dim=1).sum()))
        return out


class GuardedAllocations:
    """While active, tensors made by torch.empty/zeros/ones/full (and _like, new_ forms) live
    between red zones; torch.empty ones are filled with NaN (or a sentinel) like fuzzkern's
    poisoned allocations, so elements never written show."""

    FACTORIES = ("empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones",
                 "ones_like", "full", "full_like")
    METHODS = ("new_empty", "new_zeros", "new_ones", "new_full")

    def __init__(self, torch):
        self.torch = torch
        self.guards = []
        self.saved = {}
        self.empty = torch.empty

    def _wrap(self, name, fn):
        torch = self.torch

        def wrapped(*args, **kwargs):
            t = fn(*args, **kwargs)
            if ("out" in kwargs or not isinstance(t, torch.Tensor) or t.numel() == 0
                    or t.layout != torch.strided or t.requires_grad):
                return t
            n = t.untyped_storage().nbytes() // t.element_size()
            g = Guarded(torch, n, t.dtype, t.device, f"torch.{name} #{len(self.guards) + 1}",
                        self.empty)
            if "empty" not in name:
                g.data().copy_(t.as_strided((n,), (1,), 0))
            self.guards.append(g)
            return g.view(t.shape, t.stride(), t.storage_offset())

        return wrapped

    def __enter__(self):
        torch = self.torch
        for name in self.FACTORIES:
            self.saved[(torch, name)] = getattr(torch, name)
            setattr(torch, name, self._wrap(name, getattr(torch, name)))
        for name in self.METHODS:
            self.saved[(torch.Tensor, name)] = getattr(torch.Tensor, name)
            setattr(torch.Tensor, name, self._wrap(name, getattr(torch.Tensor, name)))
        return self

    def __exit__(self, *exc):
        for (owner, name), fn in self.saved.items():
            setattr(owner, name, fn)
        return False


# -- comparison -----------------------------------------------------------------------------

def _tolerance(dtype_name, compiled=False):
    rtol, atol = DEFAULT_TOLERANCE.get(dtype_name, (0.0, 0.0))
    if compiled:
        rtol = max(rtol, COMPILED_RTOL.get(dtype_name, 0.0))
    if TOLERANCE.get("rtol") is not None:
        rtol = TOLERANCE["rtol"]
    if TOLERANCE.get("atol") is not None:
        atol = TOLERANCE["atol"]
    return rtol, atol


def _compare(torch, outputs, expected, magnitude, tol_dtype, compiled=False):
    """A problem (:func:`_problem`) per output that differs from the reference, each followed
    by detail lines (kind None); empty when the outputs match."""
    if len(outputs) != len(expected):
        return [_problem("structure", "outputs", f"the launcher returned {len(outputs)} "
                         f"output(s), the reference {len(expected)}")]
    lines = []
    for i, (o, e) in enumerate(zip(outputs, expected, strict=False)):
        label = f"out{i}" if len(outputs) > 1 else "out"
        place = f"output {i}"
        if not isinstance(o, torch.Tensor):
            lines.append(_problem("structure", place, f"{label} is {type(o).__name__}, not a "
                                  "tensor"))
            continue
        o = o.detach().cpu()
        e = torch.as_tensor(e).detach().cpu()
        if tuple(o.shape) != tuple(e.shape):
            lines.append(_problem("structure", place, f"{label} has shape {tuple(o.shape)}, the "
                                  f"reference {tuple(e.shape)}"))
            continue
        if o.is_floating_point():
            name = tol_dtype or str(o.dtype).replace("torch.", "")
            rtol, atol = _tolerance(name, compiled)
            got = o.double()
            # the reference rounded to the output dtype (fp8 casts go through float32)
            e64 = e.double()
            want = (e64.float() if o.element_size() == 1 else e64).to(o.dtype).double()
            band = atol + rtol * want.abs()
            if magnitude is not None and magnitude[i] is not None:
                eps = 2.0 ** -52 if o.dtype == torch.float64 else 2.0 ** -23
                m = torch.nan_to_num(torch.as_tensor(magnitude[i]).double().cpu(), nan=0.0)
                band = band + eps * REDUCTION_LENGTH * m.abs()
            ok = (got - want).abs() <= band
            ok |= got == want  # equal infinities
            if TOLERANCE.get("equal_nan", True):
                ok |= got.isnan() & e.double().isnan()
            text = f"rtol={rtol:g} atol={atol:g} ({name})"
        else:
            got = o.long()
            want = e.double().trunc().long() if e.is_floating_point() else e.long()
            ok = got == want
            text = "exact"
        bad = (~ok).nonzero()
        if len(bad):
            lines.append(_problem("mismatch", place, f"MISMATCH in {label}: {len(bad)}/"
                                  f"{o.numel()} elements differ (tolerance {text})"))
            for idx in bad[:5].tolist():
                idx = tuple(idx)
                lines.append(_problem(None, place, f"  {label}[{','.join(map(str, idx))}]: got "
                                      f"{got[idx].item()!r}, expected {e[idx].item()!r}"))
    return lines


# -- the run --------------------------------------------------------------------------------

def _inputs_file(arg):
    if arg:
        return arg
    here = os.path.dirname(os.path.abspath(__file__))
    if INPUTS_FILE_RELATIVE and os.path.exists(os.path.join(here, INPUTS_FILE_RELATIVE)):
        return os.path.join(here, INPUTS_FILE_RELATIVE)
    return INPUTS_FILE


def _pick_mode(requested):
    if requested:
        return requested
    for mode in FAILING_MODES:
        if mode == "interpret":
            return mode
        if mode == "compiled":
            import torch

            if torch.cuda.is_available():
                return mode
    return "interpret"


def _dense_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return list(reversed(out))


def _as_tuple(r):
    if r is None:
        return None
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


#: whether bfloat16/fp8 run as given in the interpreter (:func:`_widen_low_precision`)
_WIDENED: list[bool] = []


def _widen_low_precision():
    """Keep bfloat16/fp8 inputs as given in the interpreter, with fuzzkern's exact widening
    and rounding (fuzzkern.execution.interpreter.formats; the target's source imports fuzzkern
    already):
    a bf16 bug stays a bf16 bug. Without fuzzkern: float32 copies, said on the output."""
    try:
        formats = importlib.import_module("fuzzkern.execution.interpreter.formats")
    except ImportError:
        return
    for obj, name, value in formats.widened_patches():
        setattr(obj, name, value)
    _WIDENED.append(True)


class Inputs:
    """The case's tensors, each its stored storage between red zones, viewed with the entry's
    exact shape, strides and offset (bfloat16/fp8 as float32 copies in the interpreter)."""

    def __init__(self, torch, stored, mode, device):
        self.torch = torch
        self.guards, self.tensors, self.substituted = {}, {}, []
        for name, (dtype, shape, strides, offset, size, _sha) in TENSORS.items():
            flat = stored[name]
            run_dtype = flat.dtype
            if mode == "interpret" and dtype in SUBSTITUTED and not _WIDENED:
                run_dtype = torch.float32
                self.substituted.append(dtype)
            g = Guarded(torch, size, run_dtype, device, f"input `{name}`", torch.empty)
            g.data().copy_(flat.to(run_dtype))
            g.before = g._zones()
            self.guards[name] = g
            self.tensors[name] = g.view(shape, strides, offset)
        self.snapshot = {n: g.data().clone() for n, g in self.guards.items()}

    def values(self):
        return {n: self.tensors[n] if n in self.tensors else SCALARS[n] for n in ORDER}

    def changes(self):
        """What the launch wrote into the inputs' storages: outside the views (gaps, before or
        after them) and, for inputs not declared in-place, inside them."""
        torch = self.torch
        out = []
        for name, g in self.guards.items():
            dtype, shape, strides, offset, size, _sha = TENSORS[name]
            if not size:
                continue
            old = self.snapshot[name].cpu().contiguous().view(torch.uint8).reshape(size, -1)
            new = g.data().cpu().contiguous().view(torch.uint8).reshape(size, -1)
            changed = (old != new).any(dim=1)
            covered = torch.zeros(size, dtype=torch.bool)
            if all(shape):
                covered[torch.arange(size).as_strided(shape, strides, offset).reshape(-1)] = True
            outside = int((changed & ~covered).sum())
            inside = int((changed & covered).sum())
            if outside:
                out.append(_problem("view-write", name, f"WRITE OUTSIDE THE VIEW: {outside} "
                                    f"element(s) of `{name}`'s storage that its view does not "
                                    "cover (gaps, or before/after it) changed"))
            if inside and name not in INPLACE and name not in CLOBBERS:
                out.append(_problem("input-mutated", name, f"INPUT MUTATED: {inside} element(s) "
                                    f"of input `{name}` changed, and the target does not "
                                    "declare it in-place"))
        return out


def _launch(torch, launcher, inputs, device, timeout):
    """Run the launcher once under red zones and a timer: (result, allocations); raises Hang."""
    import faulthandler

    def on_alarm(signum, frame):
        raise Hang()

    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    # a launch blocked in C (a GPU spin) never returns to Python: dump the stack and exit 1
    faulthandler.dump_traceback_later(timeout + 10, exit=True)
    try:
        with GuardedAllocations(torch) as allocations:
            result = _call(launcher, inputs.values())
            if device == "cuda":
                torch.cuda.synchronize()
        return result, allocations
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


def _hang(timeout):
    return _problem("hang", "launch", f"HANG: the launch ran past the timeout of {timeout:g} s")


def _text_of(e):
    """``str(e)`` of the user's exception, never raising (its ``__str__`` may raise or recurse
    without end)."""
    try:
        return str(e)
    except Exception as why:
        return f"<str() of a {type(e).__name__} raised {type(why).__name__}>"


def _raised(e, timeout):
    """The problem of a launch that raised ``e`` (a hang when the timer's exception is among
    its causes: Triton wraps exceptions); the traceback goes to stderr."""
    cause: BaseException | None = e
    for _ in range(8):
        if cause is None:
            break
        if isinstance(cause, Hang):
            return _hang(timeout)
        cause = cause.__cause__ or cause.__context__
    traceback.print_exc()
    frames = [f"{os.path.basename(f.filename)}:{f.lineno}"
              for f in traceback.extract_tb(e.__traceback__)]
    text = _text_of(e)
    first = text.splitlines()[0] if text else ""
    return _problem("error", type(e).__name__, f"the launcher raised {type(e).__name__}: "
                    f"{first} (traceback on stderr)", frames)


def _outputs(result, inputs):
    if INPLACE:
        return tuple(inputs.tensors[n] for n in INPLACE)
    return _as_tuple(result) or ()


def _bits(torch, outputs):
    # reshape(-1): a 0-dim tensor (every loss) cannot be viewed as bytes
    return [o.detach().cpu().contiguous().reshape(-1).view(torch.uint8).clone()
            if isinstance(o, torch.Tensor) else o for o in outputs]


def main(argv=None):
    parser = argparse.ArgumentParser(description=f"Reproduce fuzzkern entry {ENTRY_ID} "
                                     f"({TARGET_ID}, {VERDICT}).")
    parser.add_argument("--mode", choices=("interpret", "compiled"),
                        help="interpret (CPU, TRITON_INTERPRET=1) or compiled (GPU); "
                             f"default: the failing one ({', '.join(FAILING_MODES)})")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds before the launch counts as a hang (default {TIMEOUT:g})")
    parser.add_argument("--inputs", help="the entry's .safetensors file (default: beside the "
                        "entry)")
    args = parser.parse_args(argv)
    mode = _pick_mode(args.mode)
    if mode == "interpret":
        if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
            _say("warning: triton was imported before TRITON_INTERPRET=1 could be set")
        os.environ["TRITON_INTERPRET"] = "1"
    if DEBUG:
        os.environ["TRITON_DEBUG"] = "1"  # device asserts and integer overflow checks
    import torch
    from safetensors.torch import load_file

    if mode == "compiled" and not torch.cuda.is_available():
        _say("the compiled mode needs a CUDA GPU, and torch sees none; try --mode interpret")
        return 2
    device = "cuda" if mode == "compiled" else "cpu"
    import triton

    if mode == "interpret":
        _fix_interpreter_index()
        _widen_low_precision()
        if DEBUG:
            import dataclasses

            import triton.runtime.interpreter as interp

            builder = interp.interpreter_builder
            builder.options = dataclasses.replace(builder.options, debug=True,
                                                  sanitize_overflow=True)
    _say(f"fuzzkern entry {ENTRY_ID}: {TARGET_ID}, recorded verdict {VERDICT}")
    _say(f"mode: {mode}{' with debug checks' if DEBUG else ''} (torch {torch.__version__}, "
         f"triton {triton.__version__})")
    path = _inputs_file(args.inputs)
    if not os.path.lexists(path):
        _say(f"the stored inputs are missing: {path} (pass --inputs FILE)")
        return 2
    # (an untrusted file: a regular one, no link, and no bigger than the entry declares)
    declared = 8 + 2**20 + sum(size * getattr(torch, dtype).itemsize
                               for dtype, _shape, _strides, _offset, size, _sha in TENSORS.values())
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > declared:
        _say(f"refused: {path} is not a regular file of at most the {declared} bytes the entry "
             "declares")
        return 2
    stored = load_file(path)
    originals = {}
    for name, (dtype, shape, strides, offset, size, sha) in TENSORS.items():
        flat = stored.get(name)
        raw = flat.contiguous().view(torch.uint8).numpy().tobytes() if flat is not None and \
            flat.numel() else b""
        if flat is None or hashlib.sha256(raw).hexdigest() != sha or flat.numel() != size:
            _say(f"input {name!r}: the stored bytes do not match the entry's checksum")
            return 2
        if flat.dtype != getattr(torch, dtype) or flat.dim() != 1:
            _say(f"input {name!r}: stored as {flat.dtype} of shape {tuple(flat.shape)}, but the "
                 f"entry says {dtype} of {size} elements")
            return 2
        originals[name] = flat.as_strided(shape, strides, offset)
        layout = "" if list(strides) == _dense_strides(shape) and offset == 0 and \
            size == originals[name].numel() else f" strides={tuple(strides)} offset={offset}"
        _say(f"input {name}: {dtype}{list(shape)}{layout}")
    for name, value in SCALARS.items():
        _say(f"{name} = {value!r}")

    launcher, reference = _function("launcher"), _function("reference")
    _force_configs(launcher)
    _compile_options(mode)

    # the reference, on float64 copies of the original inputs
    def ref_inputs(absolute):
        out = {}
        for name in ORDER:
            if name not in originals:
                out[name] = SCALARS[name]
                continue
            t = originals[name]
            c = t.to(dtype=torch.float64, copy=True) if UPCAST and t.is_floating_point() \
                else t.clone()
            out[name] = c.abs() if absolute and c.is_floating_point() else c
        return out

    try:
        with torch.no_grad():
            expected = _as_tuple(_call(reference, ref_inputs(False)))
    except Exception as e:
        traceback.print_exc()
        return _conclude([_problem("reference-error", type(e).__name__, "the reference raised "
                                   f"{type(e).__name__} (traceback on stderr)")])
    magnitude = None
    if REDUCTION:
        try:
            with torch.no_grad():
                magnitude = _as_tuple(_call(reference, ref_inputs(True)))
        except Exception:
            magnitude = None

    runs = 3 if VERDICT == "nondeterministic" else 1
    if VERDICT in ("hang", "crash"):
        _say(f"launching (fuzzkern saw a {VERDICT}; timeout {args.timeout:g} s) ...")
    problems: list[dict[str, Any]] = []
    first_bits: list[Any] = []
    for run in range(runs):
        inputs = Inputs(torch, stored, mode, device)
        if run == 0 and inputs.substituted:
            _say(f"note: {', '.join(sorted(set(inputs.substituted)))} inputs run as exact "
                 "float32 copies: the interpreter cannot compute in these dtypes")
        try:
            result, allocations = _launch(torch, launcher, inputs, device, args.timeout)
        except Hang:
            return _conclude([_hang(args.timeout)])
        except Exception as e:
            return _conclude([_raised(e, args.timeout)])
        outputs = _outputs(result, inputs)
        if run == 0:
            first_bits = _bits(torch, outputs)
        else:
            bits = _bits(torch, outputs)
            differ = sum(int((a != b).any()) if hasattr(a, "shape") and hasattr(b, "shape")
                         and a.shape == b.shape else int(a is not b)
                         for a, b in zip(first_bits, bits, strict=False))
            if differ:
                problems.append(_problem("nondeterministic", "outputs", f"NONDETERMINISTIC: run "
                                         f"{run + 1} gave bitwise different output(s) from run "
                                         f"1 ({differ} of {len(bits)} differ)"))
    labels = {}
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            labels[o.untyped_storage().data_ptr()] = f"output {i}" if len(outputs) > 1 \
                else "the output"
    for g in list(inputs.guards.values()) + allocations.guards:
        before, after = g.damage()
        label = labels.get(g.buf.untyped_storage().data_ptr(), g.label)
        if before or after:
            where = " and ".join(x for x in (
                f"{before} element(s) before the start" if before else "",
                f"{after} element(s) past the end" if after else "") if x)
            problems.append(_problem("oob-write", g.label, f"OUT-OF-BOUNDS WRITE: {where} of "
                                     f"{label} ({g.label}) were overwritten"))
    problems += inputs.changes()
    tol_dtype = None
    if inputs.substituted:
        tol_dtype = max(set(inputs.substituted), key=lambda n: DEFAULT_TOLERANCE[n][0])
    if expected is None:
        problems.append(_problem("structure", "outputs", "the reference returned nothing"))
    else:
        problems += _compare(torch, list(outputs), list(expected), magnitude, tol_dtype,
                             compiled=mode == "compiled")
    if OOB:
        _say(f"fuzzkern's interpreter checks saw: {OOB.get('message')}")
        _say("(the bare interpreter checks no addresses: here a write out of bounds shows as "
             "damaged red zones, a read as NaN or sentinel values in the output)")
    return _conclude(problems)


def _assumed():
    """The target's declared GPU (``assume_gpu``) for its host code on a machine without
    CUDA, as fuzzkern runs it (the target's source imports fuzzkern already)."""
    import contextlib

    if not ASSUME_GPU:
        return contextlib.nullcontext()
    return importlib.import_module("fuzzkern.gpus").assumed_gpu(ASSUME_GPU)


if __name__ == "__main__":
    try:
        with _assumed():
            status = main()
        sys.exit(status)
    except Exception as e:  # the script's own problem, not the kernel's: never exit 1
        traceback.print_exc()
        _say(f"error: this script could not reproduce the entry: {type(e).__name__}: "
             f"{_text_of(e)}")
        sys.exit(2)
