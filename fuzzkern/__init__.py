"""fuzzkern: differential testing and fuzzing for Triton kernels.

Besides :class:`Target` and :func:`fuzz_test`, three functions put fuzzkern's parts inside a
user's own Hypothesis tests (see docs/pytest.md)::

    @given(case=add.cases())            # fuzzkern's strategies: Case objects (data)
    def test_add(case):
        fuzzkern.check(add, case)        # run it like a worker: checks, reference, oracle

- :func:`materialize`: a case's inputs as tensors (exact strides, offsets, gaps) and scalars;
- :func:`check`: run a case of a target in this process, raise ``AssertionError`` with the
  diagnosis when it fails;
- ``fuzzkern.compare`` is :func:`fuzzkern.judge.oracle.compare`, the tolerance rule on its own.

:func:`compile_phase` marks a launcher's own compilation work, so that it does not count against
the case's timeout (docs/verdicts.md, "Timeouts").

``import fuzzkern`` imports neither torch nor triton: these functions import them when called.
"""

import os as _os
import sys as _sys
from typing import TYPE_CHECKING, Any

try:
    _os.getcwd()
except FileNotFoundError:  # Hypothesis, imported next, reads the current folder on import
    _sys.stderr.write("fuzzkern: error: the current folder no longer exists (removed while a "
                      "shell stood in it): cd to a folder that exists\n")
    raise SystemExit(2) from None

from fuzzkern.errors import FuzzkernError, InvalidArgument  # noqa: E402
from fuzzkern.execution.progress import compile_phase
from fuzzkern.target.declare import Target, Tolerance
from fuzzkern.testing import fuzz_test

if TYPE_CHECKING:
    from fuzzkern.case.model import Case
    from fuzzkern.judge.oracle import compare
    from fuzzkern.judge.outcome import Outcome

from fuzzkern._version import __version__

__all__ = ["FuzzkernError", "InvalidArgument", "Target", "Tolerance", "__version__", "check",
           "compare", "compile_phase", "fuzz_test", "materialize"]


def materialize(case: "Case") -> dict[str, Any]:
    """The inputs of ``case`` as a launcher receives them: each tensor a CPU view with the
    case's exact shape, strides and storage offset over a storage whose gaps hold NaN (an
    integer sentinel), filled from its value recipe; each scalar as is. Move them to a GPU
    with :func:`fuzzkern.case.model.rebuild_like` (``t.cuda()`` would drop the layout)."""
    from fuzzkern.case.model import Case
    from fuzzkern.case.model import materialize as tensor

    if not isinstance(case, Case):
        from fuzzkern.errors import describe

        raise InvalidArgument(f"Expected a fuzzkern Case (drawn from target.cases()) but got "
                              f"{describe('case', case)}.")
    return {name: tensor(v) if name in case.tensors else v for name, v in case.inputs.items()}


def check(target: Target, case: "Case", *, modes: tuple[str, ...] = ("interpret",),
          checks: dict[str, bool] | None = None) -> "Outcome":
    """Run ``case`` of ``target`` in this process as fuzzkern's workers do: every mode in
    ``modes`` with the hygiene checks (``checks`` turns some off by name), the reference,
    the oracle, the verdict. Returns the :class:`~fuzzkern.judge.outcome.Outcome`; raises
    ``AssertionError`` with the diagnosis when the verdict is a failure.

    Unlike ``fuzzkern run``, a kernel that crashes or hangs takes this process with it."""
    from fuzzkern.case.model import Case
    from fuzzkern.execution.runner import run_case
    from fuzzkern.judge.outcome import Verdict
    from fuzzkern.report.text import failure_text
    from fuzzkern.search.engine import Failure

    if not isinstance(target, Target):
        from fuzzkern.errors import describe

        raise InvalidArgument(f"Expected a fuzzkern.Target but got {describe('target', target)}.")
    if not isinstance(case, Case):
        from fuzzkern.errors import describe

        raise InvalidArgument(f"Expected a fuzzkern Case (drawn from target.cases()) but got "
                              f"{describe('case', case)}.")
    outcome = run_case(target, case, {"modes": tuple(modes), "checks": dict(checks or {})})
    if outcome.verdict in Verdict.FAILURES:
        text = failure_text(Failure(target.id, case, outcome))
        raise AssertionError("\n".join(ln for ln in text.splitlines()
                                       if not ln.startswith("to repeat: fuzzkern run ")))
    return outcome


def __getattr__(name: str) -> Any:
    if name == "compare":  # imports torch: only when asked for
        from fuzzkern.judge.oracle import compare

        return compare
    raise AttributeError(f"module 'fuzzkern' has no attribute {name!r}")
