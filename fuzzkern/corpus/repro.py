"""Standalone reproducers: a Python script per corpus entry that shows the failure with only
torch, triton, safetensors and the code under test (``fuzzkern repro ENTRY.json``).

The script is meant to be attached to a bug report or read by someone who never installed
fuzzkern. It holds the case as plain Python data, reads the exact input bytes from the entry's
``.safetensors`` file, rebuilds every input with its shape, strides and storage offset, runs the
launcher in the failing mode, runs the reference on float64 copies and compares them with the
entry's tolerance. It never imports fuzzkern (the user's own target file, when the script needs
it for a reference written as a lambda, may).

What the bare Triton interpreter cannot do, the script does in a few lines of its own:

- **bounds**: ``TRITON_INTERPRET=1`` does not check addresses. Every input and every tensor the
  launcher allocates (``torch.empty``, ``zeros``, ``full``, ... and their ``_like``/``new_``
  forms) is placed between two red zones filled with NaN (or an integer sentinel): a write out
  of bounds shows as changed red-zone bytes, a read as NaN in the output. (Far accesses can
  still land outside the red zones and crash the process, which also shows the bug.)
- **hangs**: the launch runs under a timer (the target's timeout, ``--timeout`` to change it);
  past it the script reports the hang and exits.
- **autotuned kernels**: the entry's config is forced by leaving it the only config of the
  ``Autotuner``, so nothing is benchmarked.
- **bfloat16/fp8 in the interpreter**: run as exact float32 copies, as fuzzkern does (the
  interpreter computes them wrongly), compared at the original dtype's tolerance.
- **Triton 3.6 with numpy >= 2.4**: the interpreter's ``tensor.__index__`` bug (triton#9171) is
  patched.

Exit status: 1 when the failure shows, 0 when it does not (the kernel may be fixed), 2 when the
script cannot run here (no GPU for the compiled mode, inputs missing).
"""

from __future__ import annotations

import json
import os
from typing import Any

from fuzzkern.case.model import TensorCase
from fuzzkern.corpus.store import Entry
from fuzzkern.errors import CorpusError


def _quoted(text: str) -> str:
    """``text`` JSON-escaped, without the quotes: ASCII, no line breaks (safe in a comment)."""
    return json.dumps(str(text), ensure_ascii=True)[1:-1]


def _comment(text: str, width: int = 96) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def _locator(entry: Entry, loc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not loc:
        return None
    return {
        "module": loc.get("module"),
        "qualname": loc.get("qualname") or loc.get("attr"),
        "file": entry.resolve_path(loc.get("file"), loc.get("file_relative")),
    }


def _target_locator(entry: Entry, attr: str) -> dict[str, Any]:
    """The target object itself, for a launcher or reference that is a lambda or a closure."""
    ref = entry.resolved_ref()
    if "::" in ref:
        path, _, name = ref.partition("::")
        return {"module": None, "qualname": f"{name}.{attr}", "file": path}
    module, _, name = ref.partition(":")
    return {"module": module, "qualname": f"{name}.{attr}", "file": None}


def script(entry: Entry, script_path: str | None = None) -> str:
    """The text of a standalone script reproducing ``entry`` (see the module doc).

    ``script_path`` is where it will be written, so the path to the inputs can also be stored
    relative to it."""
    if entry.storages_path is None:
        raise CorpusError(f"entry {entry.id} was not loaded from a file")
    info = entry.target
    launcher = _locator(entry, info.get("launcher")) or _target_locator(entry, "launcher")
    reference = _locator(entry, info.get("reference")) or _target_locator(entry, "reference")
    configs = []
    for at in info.get("autotuners", []):
        configs.append({
            "kernel": at.get("kernel"), "index": at.get("index"), "count": at.get("count"),
            "config": at.get("config"), "module": at.get("module"), "attr": at.get("attr"),
            "file": entry.resolve_path(at.get("file"), at.get("file_relative")),
        })
    known = {c["kernel"] for c in configs}
    for kernel, index in entry.case.configs.items():
        if kernel not in known:
            configs.append({"kernel": kernel, "index": index, "count": None, "config": None,
                            "module": None, "attr": None, "file": None})
    tensors = {}
    for name, tc in entry.case.tensors.items():
        assert isinstance(tc, TensorCase)
        tensors[name] = (tc.dtype, tuple(tc.shape), tuple(tc.strides), tc.storage_offset,
                         tc.storage_size, entry.inputs[name]["sha256"])
    scalars = dict(entry.case.scalars)
    oob = None
    for m in entry.outcome.modes.values():
        if m.status.startswith("oob"):
            fields = ("op", "argument", "program_id", "lane", "distance_elements")
            oob = {"message": m.error, **{k: v for k, v in m.detail.get("oob", {}).items()
                                          if k in fields}}
            break
    inputs_abs = os.path.abspath(entry.storages_path)
    inputs_rel = None
    if script_path is not None:
        inputs_rel = os.path.relpath(inputs_abs, os.path.dirname(os.path.abspath(script_path)))
    reduction = info.get("reduction")
    tolerance = info.get("tolerance") or {}
    mismatch = ""
    for m in entry.outcome.modes.values():
        if m.comparison is not None and not m.comparison.ok:
            mismatch = m.comparison.summary()
            break
    env = entry.environment
    found = (f"{env.get('date', '?')} with fuzzkern {env.get('fuzzkern', '?')}, torch "
             f"{env.get('torch', '?')}, triton {env.get('triton', '?')}, Python "
             f"{env.get('python', '?')}" + (f", {env['gpu']}" if env.get("gpu") else ""))
    # Everything taken from the entry is data: one JSON document in ASCII-only Python string
    # literals (repr), decoded at run time, and JSON-escaped comment lines for people. Nothing
    # from the entry becomes source (a name or message may come from someone else's pull
    # request), and nothing lands on lines 1-2, where a comment could declare the encoding.
    header = [
        "#!/usr/bin/env python3",
        '"""Standalone reproducer of a fuzzkern corpus entry (see ENTRY below).',
        "",
        "Run:  python THIS_SCRIPT [--mode interpret|compiled] [--timeout SECONDS] [--inputs FILE]",
        "",
        "Needs torch, triton, safetensors (the exact input bytes are stored in a .safetensors",
        "file, which fuzzkern uses too) and the code under test. It does not import fuzzkern.",
        "It rebuilds every input with its exact shape, strides, storage offset and gap values,",
        "runs the launcher (interpret mode: TRITON_INTERPRET=1 on the CPU; compiled: on the GPU),",
        "runs the reference on float64 copies and compares. The Triton interpreter checks no",
        "bounds, so every tensor sits between red zones of NaN (or an integer sentinel): a write",
        "out of bounds shows as changed red-zone bytes, a read as NaN in the output. A hang is",
        "stopped after the timeout. Exit status: 1 the failure shows, 0 it does not (fixed?),",
        "2 cannot run here.",
        "",
        "What the entry says (the comments below quote it JSON-escaped; the data is ENTRY).",
        '"""',
        "",
        f"# entry:   {_quoted(entry.id)}",
        f"# target:  {_quoted(entry.target_id)}",
        f"# verdict: {_quoted(entry.verdict)}",
    ]
    header += ["#   " + ln for ln in _comment(_quoted(entry.message))]
    header += ["# case:"] + ["#   " + ln for ln in _comment(_quoted(entry.case.describe()))]
    if entry.explanations:
        header += ["# explanations:"] + [f"#   - {_quoted(e)}" for e in entry.explanations]
    if mismatch:
        header += ["# fuzzkern saw:"] + ["#   " + _quoted(ln) for ln in mismatch.splitlines()]
    header += [f"# found:   {_quoted(found)}"]
    document = {
        "entry_id": entry.id,
        "target_id": entry.target_id,
        "verdict": entry.verdict,
        "message": entry.message,
        # where the code under test lives (a module name to import, else the file to load)
        "launcher": launcher,
        "reference": reference,
        # name -> [dtype, shape, strides, storage offset, storage elements, sha256]
        "tensors": tensors,
        "scalars": scalars,
        "order": list(entry.case.inputs),
        "dims": dict(entry.case.dims),
        # autotuned kernels: the config forced in every mode
        "configs": configs,
        "inplace": list(info.get("inplace", ())),
        "clobbers": list(info.get("clobbers", ())),
        "upcast": bool(info.get("upcast", True)),
        "reduction": reduction,
        "reduction_length": entry.case.dims.get(reduction, 1) if reduction else 1,
        "tolerance": dict(tolerance),
        "failing_modes": list(entry.failing_modes or entry.modes or ("interpret",)),
        "timeout": float(info.get("timeout", 60.0)),
        "oob": oob,
        "debug": bool(entry.options.get("debug", False)),
        "inputs_file": inputs_abs,
        # the same file relative to this script's folder
        "inputs_file_relative": inputs_rel,
    }
    text = json.dumps(document, indent=1, ensure_ascii=True, allow_nan=True)
    data = [
        "",
        "# ---- the entry, as data (JSON) " + "-" * 63,
        "import json  # noqa: E402",
        "",
        "ENTRY = json.loads(",
        *["    " + repr(line + "\n") for line in text.splitlines()],
        ")",
        'ENTRY_ID = ENTRY["entry_id"]',
        'TARGET_ID = ENTRY["target_id"]',
        'VERDICT = ENTRY["verdict"]',
        'LAUNCHER = ENTRY["launcher"]',
        'REFERENCE = ENTRY["reference"]',
        'TENSORS = {name: tuple(t) for name, t in ENTRY["tensors"].items()}',
        'SCALARS = ENTRY["scalars"]',
        'ORDER = ENTRY["order"]',
        'DIMS = ENTRY["dims"]',
        'CONFIGS = ENTRY["configs"]',
        'INPLACE = tuple(ENTRY["inplace"])',
        'CLOBBERS = tuple(ENTRY.get("clobbers", ()))  # may be overwritten: not checked',
        'UPCAST = bool(ENTRY["upcast"])',
        'REDUCTION = ENTRY["reduction"]',
        'REDUCTION_LENGTH = ENTRY["reduction_length"]',
        'TOLERANCE = ENTRY["tolerance"]',
        'FAILING_MODES = tuple(ENTRY["failing_modes"])',
        'TIMEOUT = float(ENTRY["timeout"])',
        'OOB = ENTRY["oob"]',
        'DEBUG = bool(ENTRY["debug"])',
        'INPUTS_FILE = ENTRY["inputs_file"]',
        'INPUTS_FILE_RELATIVE = ENTRY["inputs_file_relative"]',
        "",
    ]
    return "\n".join(header + data) + _BODY


_BODY = r'''
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
    print(text, flush=True)


def _reproduced(*lines):
    for line in lines:
        _say(line)
    _say(f"the failure reproduces (recorded verdict: {VERDICT})")
    return 1


# -- finding the code under test ------------------------------------------------------------

_MODULES = {}


def _load_file(path):
    path = os.path.abspath(path)
    if path in _MODULES:
        return _MODULES[path]
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f) == path:
            _MODULES[path] = mod
            return mod
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "repro_" + hashlib.sha1(path.encode()).hexdigest()[:8] + "_" + os.path.splitext(
        os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[path] = module
    return module


def _module(loc):
    name, path = loc.get("module"), loc.get("file")
    if name and not name.startswith("fuzzkern_target_") and name != "__main__":
        try:
            mod = importlib.import_module(name)
            f = getattr(mod, "__file__", None)
            if not path or not os.path.exists(path) or (f and os.path.samefile(f, path)):
                return mod
        except ImportError:
            pass
    if path and os.path.exists(path):
        return _load_file(path)
    raise SystemExit(f"cannot find the code under test: module {name!r}, file {path!r}")


def _resolve(loc):
    obj = _module(loc)
    for part in loc["qualname"].split("."):
        obj = getattr(obj, part)
    return obj


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
    for _ in range(16):
        if inspect.isfunction(obj) or not hasattr(obj, "fn"):
            break
        obj = obj.fn
    return getattr(obj, "__name__", repr(obj))


def _force_configs(launcher):
    """Leave each autotuned kernel the entry's config as its only one: nothing benchmarks."""
    from triton.runtime.autotuner import Autotuner

    for c in CONFIGS:
        found = []
        if c.get("attr") and (c.get("module") or c.get("file")):
            try:
                found.append(_resolve({"module": c["module"], "file": c["file"],
                                       "qualname": c["attr"]}))
            except (SystemExit, AttributeError, ImportError):
                pass
        if not found:  # look through the launcher's module
            glb = getattr(launcher, "__globals__", {})
            found = [v for v in glb.values() if _kernel_name(v) == c["kernel"]]
        tuners = []
        for obj in found:
            for _ in range(16):
                if isinstance(obj, Autotuner):
                    tuners.append(obj)
                if not hasattr(obj, "fn"):
                    break
                obj = obj.fn
        if not tuners:
            raise SystemExit(f"cannot find autotuned kernel {c['kernel']!r} to force its "
                             f"config {c['index']}")
        for at in tuners:
            if len(at.configs) > 1 or c["index"] != 0:
                at.configs = [at.configs[c["index"]]]
        _say(f"forced {c['kernel']} config[{c['index']}]"
             + (f": {c['config']}" if c.get("config") else ""))


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
        for old, new in zip(self.before, self._zones()):
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
    """Lines describing each mismatch (empty when the outputs match the reference)."""
    if len(outputs) != len(expected):
        return [f"the launcher returned {len(outputs)} output(s), the reference "
                f"{len(expected)}"]
    lines = []
    for i, (o, e) in enumerate(zip(outputs, expected)):
        label = f"out{i}" if len(outputs) > 1 else "out"
        if not isinstance(o, torch.Tensor):
            lines.append(f"{label} is {type(o).__name__}, not a tensor")
            continue
        o = o.detach().cpu()
        e = torch.as_tensor(e).detach().cpu()
        if tuple(o.shape) != tuple(e.shape):
            lines.append(f"{label} has shape {tuple(o.shape)}, the reference {tuple(e.shape)}")
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
            lines.append(f"MISMATCH in {label}: {len(bad)}/{o.numel()} elements differ "
                         f"(tolerance {text})")
            for idx in bad[:5].tolist():
                idx = tuple(idx)
                lines.append(f"  {label}[{','.join(map(str, idx))}]: got {got[idx].item()!r}, "
                             f"expected {e[idx].item()!r}")
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


class Inputs:
    """The case's tensors, each its stored storage between red zones, viewed with the entry's
    exact shape, strides and offset (bfloat16/fp8 as float32 copies in the interpreter)."""

    def __init__(self, torch, stored, mode, device):
        self.torch = torch
        self.guards, self.tensors, self.substituted = {}, {}, []
        for name, (dtype, shape, strides, offset, size, _sha) in TENSORS.items():
            flat = stored[name]
            run_dtype = flat.dtype
            if mode == "interpret" and dtype in SUBSTITUTED:
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
                out.append(f"WRITE OUTSIDE THE VIEW: {outside} element(s) of `{name}`'s storage "
                           "that its view does not cover (gaps, or before/after it) changed")
            if inside and name not in INPLACE and name not in CLOBBERS:
                out.append(f"INPUT MUTATED: {inside} element(s) of input `{name}` changed, and "
                           "the target does not declare it in-place")
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
    if not os.path.exists(path):
        _say(f"the stored inputs are missing: {path} (pass --inputs FILE)")
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
        originals[name] = flat.as_strided(shape, strides, offset)
        layout = "" if list(strides) == _dense_strides(shape) and offset == 0 and \
            size == originals[name].numel() else f" strides={tuple(strides)} offset={offset}"
        _say(f"input {name}: {dtype}{list(shape)}{layout}")
    for name, value in SCALARS.items():
        _say(f"{name} = {value!r}")

    launcher = _resolve(LAUNCHER)
    reference = _resolve(REFERENCE)
    _force_configs(launcher)

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
    except Exception:
        traceback.print_exc()
        return _reproduced("FAILURE: the reference raised (traceback on stderr)")
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
    problems, first_bits = [], None
    for run in range(runs):
        inputs = Inputs(torch, stored, mode, device)
        if run == 0 and inputs.substituted:
            _say(f"note: {', '.join(sorted(set(inputs.substituted)))} inputs run as exact "
                 "float32 copies: the interpreter cannot compute in these dtypes")
        try:
            result, allocations = _launch(torch, launcher, inputs, device, args.timeout)
        except Hang:
            return _reproduced(
                f"FAILURE: HANG: the launch ran past the timeout of {args.timeout:g} s")
        except Exception as e:
            cause = e
            for _ in range(8):
                if isinstance(cause, Hang):
                    return _reproduced(
                        f"FAILURE: HANG: the launch ran past the timeout of {args.timeout:g} s")
                cause = cause.__cause__ or cause.__context__
                if cause is None:
                    break
            traceback.print_exc()
            first = str(e).splitlines()[0] if str(e) else ""
            return _reproduced(f"FAILURE: the launcher raised {type(e).__name__}: {first} "
                               "(traceback on stderr)")
        outputs = _outputs(result, inputs)
        if run == 0:
            first_bits = _bits(torch, outputs)
        else:
            bits = _bits(torch, outputs)
            differ = sum(int((a != b).any()) if hasattr(a, "shape") and hasattr(b, "shape")
                         and a.shape == b.shape else int(a is not b)
                         for a, b in zip(first_bits, bits))
            if differ:
                problems.append(f"NONDETERMINISTIC: run {run + 1} gave bitwise different "
                                f"output(s) from run 1 ({differ} of {len(bits)} differ)")
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
            problems.append(f"OUT-OF-BOUNDS WRITE: {where} of {label} ({g.label}) were "
                            "overwritten")
    problems += inputs.changes()
    tol_dtype = None
    if inputs.substituted:
        tol_dtype = max(set(inputs.substituted), key=lambda n: DEFAULT_TOLERANCE[n][0])
    if expected is None:
        problems.append("the reference returned nothing")
    else:
        problems += _compare(torch, list(outputs), list(expected), magnitude, tol_dtype,
                             compiled=mode == "compiled")
    if OOB:
        _say(f"fuzzkern's interpreter checks saw: {OOB.get('message')}")
        _say("(the bare interpreter checks no addresses: here a write out of bounds shows as "
             "damaged red zones, a read as NaN or sentinel values in the output)")
    if problems:
        return _reproduced(*[("FAILURE: " if not p.startswith("  ") else "") + p
                             for p in problems])
    _say(f"no failure: the outputs match the reference and no red zone was touched "
         f"(recorded verdict: {VERDICT}); the kernel may be fixed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # the script's own problem, not the kernel's: never exit 1
        traceback.print_exc()
        _say(f"error: this script could not reproduce the entry: {type(e).__name__}: {e}")
        sys.exit(2)
'''


def write(entry: Entry, out_path: str) -> str:
    """Write the reproducer of ``entry`` to ``out_path`` (atomically); returns the path."""
    from fuzzkern.corpus.store import _write_atomic

    text = script(entry, out_path)
    folder = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(folder, exist_ok=True)
    _write_atomic(os.path.abspath(out_path), text.encode())
    os.chmod(out_path, os.stat(out_path).st_mode | 0o111)
    return out_path


__all__ = ["script", "write"]
