"""Imported once by the worker fork server, so a forked worker starts with these loaded.

Nothing here may run torch or triton code: the server forks workers, and a forked copy of a
process that started torch's thread pools or a CUDA context is unsafe.
"""

import numpy  # noqa: F401
import torch  # noqa: F401
import triton  # noqa: F401
import triton.language  # noqa: F401

import fuzzkern.case  # noqa: F401
import fuzzkern.executors.run  # noqa: F401
