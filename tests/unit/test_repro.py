"""Standalone reproducers run without fuzzkern: in a fresh interpreter where ``import fuzzkern``
fails, the script rebuilds the inputs, runs the user's kernel in the Triton interpreter and
shows the failure; its exit status says whether it did."""

import os
import re
import subprocess
import sys

import pytest

from fuzzkern.case.model import Case, Domain, Layout, TensorCase, Values
from fuzzkern.corpus import repro
from fuzzkern.corpus import store as corpus
from fuzzkern.execution.pool import WorkerPool
from fuzzkern.judge.outcome import Outcome
from fuzzkern.target import loader
from tests import corpus_support

HERE = os.path.dirname(__file__)
PLAIN = os.path.join(HERE, "targets", "plain_targets.py")

# Run a script with fuzzkern unimportable: it and the user's kernel module must not need it.
WITHOUT_FUZZKERN = (
    "import runpy, sys; sys.modules['fuzzkern'] = None; "
    "sys.argv = [sys.argv[1]] + sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _run(script, *args, cwd):
    return subprocess.run([sys.executable, "-c", WITHOUT_FUZZKERN, script, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def entry(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repro")
    (lt,) = loader.load(f"{PLAIN}::scale_target")
    # x strided (every other element), with a NaN and a -0.0: the kernel ignores the stride
    x = TensorCase.build((5,), "float32", Layout((0,), (2,), (0,), 1, ()),
                         Values(0, "small_ints", ((1, "nan"), (3, "-0.0"))))
    case = Case({"N": 5}, {"x": x})
    pool = WorkerPool()
    try:
        outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 60.0)
    finally:
        pool.close()
    assert outcome.failed, outcome.message
    path = corpus.save(str(folder / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target)
    return corpus.load(path)


def test_reproducer_shows_the_failure_without_fuzzkern(entry, tmp_path):
    script = corpus_support.write_repro(entry, str(tmp_path / "repro.py"))
    text = open(script).read()
    assert not re.search(r"^\s*(import|from)\s+fuzzkern\b", text, re.MULTILINE)
    assert "plain_kernel" in text  # the launcher is imported from the user's own module
    proc = _run(script, cwd=tmp_path)
    shown = proc.stdout + proc.stderr
    assert proc.returncode == 1, shown
    assert "input x: float32[5] strides=(2,) offset=1" in proc.stdout
    assert "MISMATCH in out" in proc.stdout
    assert "the failure reproduces" in proc.stdout


def test_reproducer_passes_once_the_kernel_is_fixed(entry, tmp_path):
    # the user fixes the kernel in a copy of their module; the script points at it
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    src = open(os.path.join(HERE, "targets", "plain_kernel.py")).read()
    src = src.replace("tl.load(x_ptr + offs, mask=mask)  # BUG: ignores x's stride",
                      "tl.load(x_ptr + offs * stride_x, mask=mask)")
    src = src.replace("def _scale_kernel(x_ptr, out_ptr, n, BLOCK",
                      "def _scale_kernel(x_ptr, out_ptr, n, stride_x, BLOCK")
    src = src.replace("(x, out, n, BLOCK=BLOCK)", "(x, out, n, x.stride(0), BLOCK=BLOCK)")
    (fixed_dir / "plain_kernel.py").write_text(src)
    text = corpus_support.script(entry, str(tmp_path / "repro.py"))
    text = text.replace(os.path.join(HERE, "targets", "plain_kernel.py"),
                        str(fixed_dir / "plain_kernel.py"))
    (tmp_path / "repro.py").write_text(text)
    proc = _run(str(tmp_path / "repro.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no failure" in proc.stdout


def test_reproducer_refuses_inputs_that_do_not_match(entry, tmp_path):
    script = corpus_support.write_repro(entry, str(tmp_path / "repro.py"))
    other = tmp_path / "other.safetensors"
    import torch
    from safetensors.torch import save_file

    save_file({"x": torch.zeros(entry.case.tensors["x"].storage_size)}, str(other))
    proc = _run(script, "--inputs", str(other), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "checksum" in proc.stdout


def test_reproducer_script_of_a_hang_stops_at_the_timeout(tmp_path):
    case = Case({"N": 1}, {"x": TensorCase.build((1,), "float32"), "MODE": 1})
    ref = os.path.join(HERE, "targets", "misbehaving.py") + "::sleeps"
    (lt,) = loader.load(ref)
    outcome = Outcome("hang", "the case ran past the timeout of 2 s; the worker was killed")
    path = corpus.save(str(tmp_path / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target)
    script = corpus_support.write_repro(corpus.load(path), str(tmp_path / "repro.py"))
    proc = subprocess.run([sys.executable, script, "--timeout", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "HANG: the launch ran past the timeout of 1 s" in proc.stdout


def test_reproducer_tolerances_are_the_oracles():
    """The script judges like fuzzkern: the same per-dtype defaults, and the same wider float32
    rtol for compiled GPU code (a repro that failed where fuzzkern passed would mislead)."""
    import ast

    import torch

    from fuzzkern.judge import oracle

    tables = {}
    for node in ast.parse(repro._body()).body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("DEFAULT_TOLERANCE",
                                                                    "COMPILED_RTOL"):
            expr = ast.Expression(node.value)  # literals and powers like 2.0 ** -9
            tables[node.targets[0].id] = eval(compile(expr, "repro", "eval"), {"__builtins__": {}})
    for name, (rtol, atol) in tables["DEFAULT_TOLERANCE"].items():
        assert oracle.default_tolerance(getattr(torch, name))[:2] == (rtol, atol), name
    assert {getattr(torch, k): v for k, v in tables["COMPILED_RTOL"].items()} == \
        oracle.COMPILED_RTOL


@pytest.mark.parametrize("bug, rc", [(True, 1), (False, 0)])
def test_reproducer_of_0dim_and_integer_outputs_with_a_clobbered_input(tmp_path, bug, rc):
    ref = os.path.join(HERE, "targets", "domain_targets.py") + "::loss_and_ids"
    (lt,) = loader.load(ref)
    labels = TensorCase.build((3,), "int64", None, Values(0, "small_ints", (),
                                                          Domain(min_value=0, max_value=5)))
    case = Case({"N": 3}, {"x": TensorCase.build((3,), "float32"), "labels": labels, "BUG": bug})
    pool = WorkerPool()
    try:
        outcome = pool.run(lt.ref, case.to_json(), {"modes": ["interpret"]}, 60.0)
    finally:
        pool.close()
    assert outcome.failed is bug, outcome.message
    if not bug:  # save it as if it had failed: the script must then report no failure
        outcome = Outcome("kernel-bug", "recorded", outcome.modes)
    path = corpus.save(str(tmp_path / "corpus"), lt.id, lt.ref, case, outcome,
                       modes=("interpret",), target=lt.target)
    script = corpus_support.write_repro(corpus.load(path), str(tmp_path / "repro.py"))
    # (the target module imports fuzzkern, so the script may too)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(HERE)))
    proc = subprocess.run([sys.executable, script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    shown = proc.stdout + proc.stderr
    assert proc.returncode == rc, shown
    assert "changed" not in shown  # x is declared clobbered
    if bug:
        assert "MISMATCH in out0" in proc.stdout and "out1" not in proc.stdout
    else:
        assert "no failure" in proc.stdout
