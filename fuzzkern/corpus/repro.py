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
- **autotuned kernels**: run as fuzzkern ran them: the ``run`` of Triton's ``Autotuner`` and
  of every subclass with its own (a library's autotuner) is replaced while the script runs, so
  each kernel runs the entry's config (in the interpreter, one the entry names none for runs
  its first pruned config) and nothing is benchmarked.
- **bfloat16/fp8 in the interpreter**: run as exact float32 copies, as fuzzkern does (the
  interpreter computes them wrongly), compared at the original dtype's tolerance.
- **Triton 3.6 with numpy >= 2.4**: the interpreter's ``tensor.__index__`` bug (triton#9171) is
  patched.

Exit status: 1 when the recorded failure shows (the same verdict family at the same place:
the same output, input, or exception and frame; ``EXPECT`` in the script), 3 when a different
failure shows instead ("a different failure: ..."), 0 when none does (the kernel may be fixed),
2 when the script cannot run here (no GPU for the compiled mode, inputs missing).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from fuzzkern.case.model import TensorCase
from fuzzkern.corpus.store import Entry
from fuzzkern.errors import CorpusError
from fuzzkern.judge.verdict import failure_location, verdict_family

if TYPE_CHECKING:  # pragma: no cover
    from fuzzkern.target.loader import LoadedTarget


def _quoted(text: str) -> str:
    """``text`` JSON-escaped, without the quotes: ASCII, no line breaks (safe in a comment)."""
    return json.dumps(str(text), ensure_ascii=True)[1:-1]


def _comment(text: str, width: int = 96) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def _place(fn: Any) -> dict[str, Any] | None:
    """Where a module-level function of the declared target lives (taken from the loaded
    code, never from the entry), so the script can import it without fuzzkern when its module
    does not import fuzzkern itself."""
    import inspect

    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    try:
        file: str | None = inspect.getsourcefile(fn)
    except TypeError:
        file = None
    return {"module": module, "qualname": qualname,
            "file": os.path.abspath(file) if file else None}


def _source(target: LoadedTarget) -> dict[str, Any]:
    """Where the script imports the target from: its declared source (never the entry)."""
    from fuzzkern.target.loader import search_folders

    places = {"launcher": _place(target.target.launcher),
              "reference": _place(target.target.reference)}
    if "::" in target.ref:
        path, _, attr = target.ref.partition("::")
        return {"file": os.path.abspath(path), "module": None, "attr": attr,
                "path": search_folders(path), **places}
    module, _, attr = target.ref.partition(":")
    return {"file": None, "module": module, "attr": attr, "path": [os.getcwd()], **places}


def script(entry: Entry, target: LoadedTarget, script_path: str | None = None) -> str:
    """The text of a standalone script reproducing ``entry`` on ``target`` (the declared
    target the entry names; see the module doc).

    ``script_path`` is where it will be written, so the path to the inputs can also be stored
    relative to it."""
    if entry.storages_path is None:
        raise CorpusError(f"entry {entry.id} was not loaded from a file")
    t = target.target
    configs = [{"kernel": kernel, "index": index, "count": None, "config": None}
               for kernel, index in entry.case.configs.items()]
    for c in configs:
        for at in entry.target.get("autotuners") or ():
            if isinstance(at, dict) and at.get("kernel") == c["kernel"]:
                c.update(count=at.get("count"), config=at.get("config"))
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
    reduction = t.reduction
    tolerance = {"rtol": t.tolerance.rtol, "atol": t.tolerance.atol,
                 "equal_nan": t.tolerance.equal_nan}
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
        "3 a different failure shows, 2 cannot run here.",
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
    # What the script loads and how: from the project's declared target source and the
    # target itself, never from the entry (which may come from someone else's pull request).
    header += [
        "",
        "# the target, from its declared source (not from the entry)",
        f"SOURCE = {_source(target)!r}",
        f"ASSUME_GPU = {t.assume_gpu!r}",
    ]
    document = {
        "entry_id": entry.id,
        "target_id": entry.target_id,
        "verdict": entry.verdict,
        "message": entry.message,
        # name -> [dtype, shape, strides, storage offset, storage elements, sha256]
        "tensors": tensors,
        "scalars": scalars,
        "order": list(entry.case.inputs),
        "dims": dict(entry.case.dims),
        # autotuned kernels: the config forced in every mode
        "configs": configs,
        # Triton compile options drawn for this case (compiled mode), e.g. {"num_warps": 2}
        "compile": dict(entry.case.compile),
        "inplace": list(t.inplace_names),
        "clobbers": list(t.clobber_names),
        "upcast": bool(t.upcast),
        "reduction": reduction,
        "reduction_length": entry.case.dims.get(reduction, 1) if reduction else 1,
        "tolerance": dict(tolerance),
        "failing_modes": list(entry.failing_modes or entry.modes or ("interpret",)),
        "timeout": float(t.timeout),
        "oob": oob,
        "debug": bool(entry.options.get("debug", False)),
        "inputs_file": inputs_abs,
        # the same file relative to this script's folder
        "inputs_file_relative": inputs_rel,
        # the failure to see again: its verdict family and where it showed
        "expect": {"family": verdict_family(entry.verdict),
                   "location": failure_location(entry.outcome)},
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
        'TENSORS = {name: tuple(t) for name, t in ENTRY["tensors"].items()}',
        'SCALARS = ENTRY["scalars"]',
        'ORDER = ENTRY["order"]',
        'DIMS = ENTRY["dims"]',
        'CONFIGS = ENTRY["configs"]',
        'COMPILE = ENTRY.get("compile", {})',
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
        'EXPECT = ENTRY["expect"]',
        "",
    ]
    return "\n".join(header + data) + _body()


#: what :func:`script` copies from :mod:`fuzzkern.corpus.repro_template`: the text after its
#: stand-ins (the script defines those from its ENTRY)
_STAND_INS_END = "# ---- end of stand-ins "


def _body() -> str:
    """The reproducer's code: :mod:`fuzzkern.corpus.repro_template`'s source after its
    stand-ins, read as text (never imported here)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "repro_template.py")
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    return "\n" + source.split(_STAND_INS_END, 1)[1].split("\n", 1)[1]



def write(entry: Entry, target: LoadedTarget, out_path: str) -> str:
    """Write the reproducer of ``entry`` on ``target`` to ``out_path`` (atomically, an
    executable file; a device, FIFO or link is written through, never replaced); returns
    the path."""
    from fuzzkern.files import write_named, written_through

    text = script(entry, target, out_path)
    if written_through(out_path):  # /dev/null, a FIFO, a link: written through, as it is
        write_named(out_path, text.encode())
        return out_path
    folder = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(folder, exist_ok=True)
    write_named(os.path.abspath(out_path), text.encode(), 0o777)
    return out_path


__all__ = ["script", "write"]
