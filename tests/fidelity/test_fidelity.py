"""The interpreter half of the self-check: each construct of tests/fidelity/corpus.py run in
fuzzkern's interpreter mode gives the compiled result (bitwise, or within the case's ULPs)."""

from __future__ import annotations

import pytest
import torch
import triton

from fuzzkern.execution.interpreter.core import interpreter_mode
from tests.fidelity.corpus import CASES, ulp_distance

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_interpreter_gives_the_compiled_result(case):
    rejected = case.rejected()
    if rejected is not None:  # this Triton's compiler refuses it: so does the interpreter
        with interpreter_mode() as session, pytest.raises(Exception, match=rejected):
            case.run("cpu")
        assert session.leaked == ()
        return
    with interpreter_mode() as session:
        got = case.run("cpu")
    assert session.leaked == ()
    expected = case.expected()
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g.dtype == e.dtype, (i, g.dtype, e.dtype)
        d = ulp_distance(g, e)
        assert d <= case.ulps, f"output {i}: {d} ULPs apart\n got {g}\nwant {e}"


def test_the_gaps_are_real_without_the_adapter():
    """Triton's interpreter alone (TRITON_INTERPRET-style, no fuzzkern patches) gets at least
    the boolean operators wrong: the corpus tests something."""
    import triton.runtime.interpreter as interp

    from tests.fidelity import corpus

    fn = interp.InterpretedFunction(corpus._bool_ops.fn)
    out = torch.full((16,), -1, dtype=torch.int32)
    t = torch.tensor([-100, 3, 5, -100], dtype=torch.int32)
    fn.run(out, t, grid=(1,), warmup=False)
    assert not torch.equal(out, corpus._bool_ops_expected()[0])


def test_a_chained_comparison_runs_as_and_or_is_refused_as_compiled():
    """Where the installed compiler refuses ``1 <= x < n`` the interpreter raises its error
    (Triton 3.6); where it compiles it, the interpreter gives ``(1 <= x) & (x < n)`` (3.9)."""
    from triton.compiler.errors import UnsupportedLanguageConstruct

    from fuzzkern.execution.interpreter.fidelity import compiler_rejects_chained_comparisons
    from tests.fidelity import corpus

    want_refused = triton.__version__.startswith("3.6")
    assert compiler_rejects_chained_comparisons() is want_refused
    with interpreter_mode():
        if want_refused:
            with pytest.raises(UnsupportedLanguageConstruct, match="multiple comparison"):
                corpus._chained_run("cpu")
        else:
            (out,) = corpus._chained_run("cpu")
            assert out.tolist() == [0, 1, 1, 1, 1, 0, 0, 0]


def test_ulp_distance():
    a = torch.tensor([1.0, float("nan"), -0.0])
    b = torch.nextafter(a, torch.tensor(2.0))
    assert ulp_distance(a, a) == 0
    assert ulp_distance(a, torch.tensor([1.0, float("nan"), 0.0])) <= 1
    assert ulp_distance(a[:1], b[:1]) == 1
    assert ulp_distance(torch.tensor([1, 2]), torch.tensor([1, 3])) > 10**9


def test_docs_list_every_construct_of_the_corpus():
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "interpreter.md")
    with open(path) as fh:
        text = fh.read()
    missing = [c.name for c in CASES if f"| {c.construct} |" not in text]
    assert not missing, f"regenerate docs/interpreter.md (bench/fidelity.py --table): {missing}"
