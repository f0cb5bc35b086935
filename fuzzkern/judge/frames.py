"""Where an exception was raised, in words: the innermost frame in the kernel's or library's own
code, and fuzzkern's own frame when fuzzkern's instrumentation sits between that code and the
raise (a patched autotuner, a poisoned ``torch.empty``, the interpreter's shims).

Read from the traceback text a mode result keeps (``detail["traceback"]``), so it works the
same on a fresh outcome, a corpus entry and a worker's JSON:

>>> tb = '''Traceback (most recent call last):
...   File "/venv/lib/python3.12/site-packages/fuzzkern/calls.py", line 40, in call_with
...   File "/venv/lib/python3.12/site-packages/flag_gems/ops/mm.py", line 120, in mm
...   File "/venv/lib/python3.12/site-packages/fuzzkern/introspect.py", line 301, in run
... TypeError: 'int' object is not iterable'''
>>> where = raised_at(tb, fuzzkern_dir="/venv/lib/python3.12/site-packages/fuzzkern")
>>> where.own, where.fuzzkern, where.by_fuzzkern
('flag_gems/ops/mm.py:120 (mm)', 'fuzzkern/introspect.py:301 (run)', True)
>>> for part in where.words().split(", "):
...     print(part)
raised in fuzzkern's own code at fuzzkern/introspect.py:301 (run)
called from flag_gems/ops/mm.py:120 (mm)
"""

from __future__ import annotations

import os
import re
import sysconfig
from dataclasses import dataclass

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_FUZZKERN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: code that is neither the kernel's nor the library's nor fuzzkern's: frames skipped
_FOREIGN = ("triton", "torch", "numpy", "hypothesis", "_pytest", "pytest", "pluggy")


@dataclass(frozen=True)
class RaisedAt:
    #: the innermost frame in the kernel's, launcher's or library's own code ("path:line (fn)")
    own: str | None
    #: the innermost frame in fuzzkern's own code below ``own`` (None: fuzzkern is not between)
    fuzzkern: str | None
    #: the innermost frame that is not Python's or a foundation library's is fuzzkern's: the
    #: exception came from fuzzkern's instrumentation, not from the code under test
    by_fuzzkern: bool

    def words(self) -> str:
        """"raised at X", "raised at X, through fuzzkern's Y", or "raised in fuzzkern's own code
        at Y, called from X"; "" when nothing is known."""
        if self.by_fuzzkern and self.fuzzkern:
            return (f"raised in fuzzkern's own code at {self.fuzzkern}"
                    + (f", called from {self.own}" if self.own else ""))
        if self.own and self.fuzzkern:
            return f"raised at {self.own}, through fuzzkern's {self.fuzzkern}"
        return f"raised at {self.own}" if self.own else ""


def _kind(path: str, fuzzkern_dir: str, stdlib: str) -> str:
    norm = path.replace("\\", "/")
    if norm.startswith(fuzzkern_dir.replace("\\", "/") + "/"):
        return "fuzzkern"
    if path.startswith("<") or (stdlib and norm.startswith(stdlib)):
        return "python"
    parts = norm.split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        i = max(i for i, p in enumerate(parts) if p in ("site-packages", "dist-packages"))
        if i + 1 < len(parts) and parts[i + 1] in _FOREIGN:
            return "foreign"
    return "own"


def shown_path(path: str) -> str:
    """A frame's file as a reader finds it: below site-packages for an installed library, below
    the working directory for the user's files, else the file name."""
    norm = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in norm:
            return norm.rsplit(marker, 1)[1]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    return rel if not rel.startswith("..") else os.path.basename(path)


def frames_of(traceback_text: str) -> list[tuple[str, str, str]]:
    """The (file, line, function) of each frame of a formatted traceback, outermost first."""
    return [(path, line, fn) for path, line, fn in _FRAME.findall(traceback_text)]


def raised_at(traceback_text: str, fuzzkern_dir: str = _FUZZKERN) -> RaisedAt:
    """Where the exception of ``traceback_text`` was raised (see the module doc)."""
    stdlib = (sysconfig.get_paths().get("stdlib") or "").replace("\\", "/")
    frames = [(path, line, fn, _kind(path, fuzzkern_dir, stdlib))
              for path, line, fn in frames_of(traceback_text)]
    own_i = max((i for i, f in enumerate(frames) if f[3] == "own"), default=None)
    if own_i is None:
        return RaisedAt(None, None, False)

    def label(f: tuple[str, str, str, str]) -> str:
        path = f[0]
        if f[3] == "fuzzkern":
            path = "fuzzkern/" + os.path.relpath(path, fuzzkern_dir).replace("\\", "/")
        else:
            path = shown_path(path)
        return f"{path}:{f[1]} ({f[2]})"

    below = [f for f in frames[own_i + 1:] if f[3] in ("fuzzkern", "own")]
    ours = [f for f in below if f[3] == "fuzzkern"]
    relevant = [f for f in frames if f[3] not in ("python",)]
    by_fuzzkern = bool(relevant) and relevant[-1][3] == "fuzzkern" and bool(ours)
    return RaisedAt(label(frames[own_i]), label(ours[-1]) if ours else None, by_fuzzkern)


__all__ = ["RaisedAt", "frames_of", "raised_at", "shown_path"]
