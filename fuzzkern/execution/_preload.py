"""Imported once by the worker fork server, so a forked worker starts with these loaded.

Nothing here may run torch or triton code: the server forks workers, and a forked copy of a
process that started torch's thread pools or a CUDA context is unsafe.
"""

from fuzzkern.execution.pool import die_with_parent

# The fork server dies with the fuzzkern process that started it (PR_SET_PDEATHSIG), and its
# workers die with it: SIGKILL of fuzzkern leaves no process behind.
die_with_parent()

import numpy  # noqa: F401, E402
import torch  # noqa: F401, E402
import triton  # noqa: F401, E402
import triton.language  # noqa: F401, E402

import fuzzkern.case.model  # noqa: F401, E402
import fuzzkern.execution.runner  # noqa: F401, E402
