"""fuzzkern's parts inside a user's own Hypothesis tests: materialize, check, compare."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import find, given, settings

import fuzzkern
from fuzzkern.targets.builtin import vector_add


def test_materialize_builds_the_exact_layout_and_keeps_scalars():
    case = find(vector_add.cases(), lambda c: not c.inputs["x"].is_contiguous)
    inputs = fuzzkern.materialize(case)
    assert set(inputs) == {"x", "y", "BLOCK"}
    x = inputs["x"]
    assert x.stride() == case.inputs["x"].strides
    assert x.storage_offset() == case.inputs["x"].storage_offset
    assert inputs["BLOCK"] == case.inputs["BLOCK"]
    with pytest.raises(fuzzkern.InvalidArgument, match="Expected a fuzzkern Case"):
        fuzzkern.materialize({"x": 1})


@settings(max_examples=5, deadline=None, database=None)
@given(case=vector_add.cases())
def test_check_passes_a_correct_kernel_in_a_given_test(case):
    outcome = fuzzkern.check(vector_add, case)
    assert outcome.verdict in ("pass", "precondition")


def test_check_raises_the_diagnosis_for_a_bug(tmp_path):
    from fuzzkern.target import loader
    from tests.pytest.test_plugin import TARGETS  # `bad`: a vector add without its mask

    path = tmp_path / "kernels_for_check.py"
    path.write_text(TARGETS)
    (lt,) = loader.load(f"{path}::bad")
    case = find(lt.target.cases(), lambda c: c.dims["N"] == 3)
    with pytest.raises(AssertionError) as e:
        fuzzkern.check(lt.target, case)
    text = str(e.value)
    assert text.startswith(f"{lt.id}: oob — interpret: load from x_ptr")
    assert "minimal case: x=float32[3]" in text and "to repeat: fuzzkern run" not in text


def test_compare_is_the_oracle():
    import torch

    from fuzzkern.judge import oracle

    assert fuzzkern.compare is oracle.compare
    c = fuzzkern.compare(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5], dtype=torch.float64))
    assert not c.ok and c.mismatched == 1


def test_import_fuzzkern_imports_neither_torch_nor_triton():
    code = ("import sys, fuzzkern; assert callable(fuzzkern.check); "
            "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", ["fuzzkern.search.engine", "fuzzkern.search.schedule",
                                    "fuzzkern.corpus.store", "fuzzkern.report.text",
                                    "fuzzkern.report.html", "fuzzkern.cli",
                                    "fuzzkern._pytest_plugin", "fuzzkern.execution.pool"])
def test_the_parent_side_imports_neither_torch_nor_triton(module):
    """The process that runs Hypothesis (CLI, pytest plugin, schedule) imports torch and triton
    only when it needs them: kernels run in workers."""
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('torch', 'triton') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", module
