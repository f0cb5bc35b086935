"""fuzzkern: differential testing and fuzzing for Triton kernels."""

from fuzzkern.errors import FuzzkernError, InvalidArgument
from fuzzkern.target import Target, Tolerance
from fuzzkern.testing import fuzz_test

__version__ = "0.1.0"

__all__ = ["FuzzkernError", "InvalidArgument", "Target", "Tolerance", "__version__", "fuzz_test"]
