"""Usage errors found before fuzzing (issue 32, item 4), each one line and exit status 2: a
mistyped target name ("did you mean", the file's targets; ``::NAME`` takes the variable or the
target's ``name=``), an unknown duration unit, and a launcher that returns None, a non-tensor,
or another number of outputs than the reference: found on the first case, not fuzzed, shrunk
and reported as a kernel bug."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from fuzzkern.errors import TargetError
from fuzzkern.target import loader

TARGETS = '''
import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.targets.kernels import vector_add

INPUTS = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                    y=fks.tensors(("N",), dtype_of="x"))
DIMS = {"N": fks.sizes(max_value=64)}


def none_launcher(x, y):
    vector_add(x, y, 64)  # forgot the return


def int_launcher(x, y):
    return 3


def two(x, y):
    return vector_add(x, y, 64), x.clone()


softmax_t = fuzzkern.Target(launcher=lambda x, y: vector_add(x, y, 64),
                            reference=lambda x, y: x + y, inputs=INPUTS, dims=DIMS)
returns_none = fuzzkern.Target(launcher=none_launcher, reference=lambda x, y: x + y,
                               inputs=INPUTS, dims=DIMS)
returns_int = fuzzkern.Target(launcher=int_launcher, reference=lambda x, y: x + y,
                              inputs=INPUTS, dims=DIMS)
arity_t = fuzzkern.Target(launcher=two, reference=lambda x, y: x + y, inputs=INPUTS,
                          dims=DIMS, name="arity")
'''


@pytest.fixture
def target_file(tmp_path):
    path = tmp_path / "ops.py"
    path.write_text(textwrap.dedent(TARGETS))
    return path


def _run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "fuzzkern", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=240)


def test_a_mistyped_target_name_says_what_the_file_holds(target_file):
    with pytest.raises(TargetError) as e:
        loader.load(f"{target_file}::softmx_t")
    text = str(e.value)
    assert text.startswith(f"{target_file} has no target 'softmx_t'; did you mean "
                           "'softmax_t'?"), text
    assert "Its targets: softmax_t, returns_none, returns_int, arity_t (name='arity')" in text
    assert "fuzzkern_target_" not in text
    res = _run(target_file.parent, "run", "ops.py::softmx_t", "--budget", "5s")
    assert res.returncode == 2 and "did you mean 'softmax_t'?" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_double_colon_name_takes_the_variable_or_the_targets_name(target_file):
    (by_var,) = loader.load(f"{target_file}::arity_t")
    (by_name,) = loader.load(f"{target_file}::arity")
    assert by_var.ref == by_name.ref == f"{target_file}::arity_t"
    assert by_name.id == "arity"
    with pytest.raises(TargetError, match="'INPUTS' is a .*, not a fuzzkern.Target"):
        loader.load(f"{target_file}::INPUTS")


def test_an_unknown_duration_unit_names_the_unit(target_file):
    res = _run(target_file.parent, "run", "ops.py::softmax_t", "--budget", "5x")
    assert res.returncode == 2
    assert "unknown unit 'x' in '5x': use s, m or h" in res.stderr, res.stderr
    res = _run(target_file.parent, "run", "ops.py::softmax_t", "--budget", "1h5q")
    assert "unknown unit 'q' in '1h5q': use s, m or h" in res.stderr, res.stderr


@pytest.mark.parametrize("name, says", [
    ("returns_none", "the launcher returned None"),
    ("returns_int", "the launcher returned int 3, not a tensor"),
    ("arity_t", "the launcher returned 2 outputs, the reference 1"),
])
def test_a_launcher_that_breaks_its_contract_is_a_usage_error_at_once(target_file, name, says):
    start = time.monotonic()
    res = _run(target_file.parent, "run", f"ops.py::{name}", "--budget", "600s", "--no-db",
               "--no-corpus", "-j", "1")
    elapsed = time.monotonic() - start
    shown = res.stdout + res.stderr
    assert res.returncode == 2, shown
    assert says in shown and "kernel-bug" not in shown, shown
    assert not os.path.exists(target_file.parent / "corpus")
    # found on the first case: nothing was fuzzed or shrunk for the budget's 600 s (the bound
    # leaves a loaded machine minutes to start Python, torch and Triton)
    assert elapsed < 150, (elapsed, shown)
