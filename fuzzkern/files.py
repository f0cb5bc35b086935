"""Files the user names for fuzzkern to write (``--report``, ``--html``, ``repro -o``).

A regular file is written atomically: a temporary file beside it, then a rename. Anything
else at that path is written *through*, never replaced: a device (``/dev/null``,
``/dev/full``), a FIFO, or a symbolic link (``/dev/stdout``, a link to a file elsewhere).
A rename over ``/dev/null`` would make it a regular file for every process of the machine
(fuzzkern often runs as root in CI containers).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat


def written_through(path: str) -> bool:
    """Whether ``path`` exists as something a rename must not replace: a symbolic link, a
    device, a FIFO or a socket (anything but a regular file or a folder)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def write_named(path: str, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to the file the user named ``path`` (see the module doc). Raises
    :class:`OSError` when it cannot be written (a full disk, a FIFO nobody reads); no
    temporary file is left then."""
    if written_through(path):
        _write_through(path, data)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0),
                     mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_through(path: str, data: bytes) -> None:
    """Write into what ``path`` is (following a link): never blocking on a FIFO nobody reads
    (``O_NONBLOCK`` at the open: an error then), blocking while writing (a slow reader)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o666)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
