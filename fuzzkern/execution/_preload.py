"""Imported once by the worker fork server, so a forked worker starts with these loaded.

Nothing here may run torch or triton code: the server forks workers, and a forked copy of a
process that started torch's thread pools or a CUDA context is unsafe.
"""

import os

from fuzzkern.execution.pool import SAFEPATH_MARK, die_with_parent

# PYTHONSAFEPATH kept the current folder off this server's sys.path (fuzzkern.execution.pool.
# _start_forkserver); the processes a case starts must not inherit it
if os.environ.pop(SAFEPATH_MARK, None):
    os.environ.pop("PYTHONSAFEPATH", None)

# The fork server dies with the fuzzkern process that started it (PR_SET_PDEATHSIG), and its
# workers die with it: SIGKILL of fuzzkern leaves no process behind.
die_with_parent()

import numpy  # noqa: F401, E402
import torch  # noqa: F401, E402
import triton  # noqa: F401, E402
import triton.language  # noqa: F401, E402

import fuzzkern.case.model  # noqa: F401, E402
import fuzzkern.execution.runner  # noqa: F401, E402
