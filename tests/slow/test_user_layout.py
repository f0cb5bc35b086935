"""End to end in a user's own repository laid out as ``src/mypkg`` + ``tests/test_fuzz.py``
(pytest's ``pythonpath = ["src"]``, the package not installed): pytest and ``fuzzkern run``
find the bug, name the target by one id, and every command they print works: the replay and
repro commands, from another folder too, and the printed reproducer script."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.where(offs == 5, x * 3, x * 2)  # BUG: element 5 is tripled
        tl.store(out_ptr + offs, y, mask=mask)


    def double(x):
        out = torch.empty_like(x)
        n = x.numel()
        _double[(triton.cdiv(n, 16),)](x, out, n, BLOCK=16)
        return out
''')

TESTS = textwrap.dedent('''
    import fuzzkern
    from fuzzkern import strategies as fks
    from mypkg.kern import double

    double_t = fuzzkern.Target(
        launcher=double, reference=lambda x: x * 2, dims={"N": fks.sizes(max_value=12)},
        inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"])),
    )
''')


def _repo(root):
    (root / "src" / "mypkg").mkdir(parents=True)
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (root / "src" / "mypkg" / "kern.py").write_text(KERNEL)
    (root / "tests").mkdir()
    (root / "tests" / "test_fuzz.py").write_text(TESTS)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "mypkg"\nversion = "0"\n\n[tool.pytest.ini_options]\n'
        'pythonpath = ["src"]\n')


def _sh(command, cwd):
    # a user's own machine: no CI variable (a CI run's pytest profile writes no corpus)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI", "TF_BUILD")}
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here  # fuzzkern itself, never the user's repository
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True,
                          timeout=400, env=env)


def _printed(output, prefix):
    return [line.split(prefix, 1)[1].strip() for line in output.splitlines() if prefix in line]


def test_pytest_run_and_every_printed_command_in_a_src_layout(tmp_path):
    root = tmp_path / "repo"
    _repo(root)
    py = shlex.quote(sys.executable)
    res = _sh(f"{py} -m pytest tests/test_fuzz.py -p no:randomly -q --fuzzkern-seed 1 "
              "--fuzzkern-max-examples 60 --fuzzkern-budget 120s", root)
    assert res.returncode == 1, res.stdout + res.stderr
    ids = set(re.findall(r"(tests\.test_fuzz::double_t)", res.stdout))
    assert ids == {"tests.test_fuzz::double_t"}, res.stdout
    res = _sh(f"{py} -m fuzzkern list tests/test_fuzz.py", root)
    assert res.returncode == 0 and "tests.test_fuzz::double_t" in res.stdout, res.stderr
    # the id is accepted back by `fuzzkern run`; the pytest entry replays there
    res = _sh(f"{py} -m fuzzkern run tests.test_fuzz::double_t --seed 2 --no-db -j 1 "
              "--max-examples 60 --budget 120s", root)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "still failing" in res.stdout or "regression" in res.stdout, res.stdout
    replays = _printed(res.stdout, "to reproduce this failure: ")
    repros = _printed(res.stdout, "reproduce without fuzzkern: ")
    assert replays and repros, res.stdout
    elsewhere = tmp_path / "elsewhere"  # the script runs from any folder
    elsewhere.mkdir()
    for command in replays:
        got = _sh(command.replace("fuzzkern", f"{py} -m fuzzkern", 1), root)
        assert got.returncode == 1 and "still failing" in got.stdout, got.stdout + got.stderr
    for command in repros:
        got = _sh(command.replace("fuzzkern", f"{py} -m fuzzkern", 1) + " -o r.py", root)
        assert got.returncode == 0, got.stdout + got.stderr
        script = _sh(f"{py} {shlex.quote(str(root / 'r.py'))}", elsewhere)
        assert script.returncode == 1 and "the failure reproduces" in script.stdout, \
            script.stdout + script.stderr


def _monorepo(top):
    """A monorepo: pyproject.toml two levels above the library ``libs/kern``, whose package
    ``nskern`` is a namespace package (no ``__init__.py``) under ``src``; the targets are
    declared in module form under ``[tool.fuzzkern]``."""
    lib = top / "libs" / "kern"
    (lib / "src" / "nskern").mkdir(parents=True)
    (lib / "src" / "nskern" / "kern.py").write_text(KERNEL)
    (lib / "tests").mkdir()
    (lib / "tests" / "test_fuzz.py").write_text(TESTS.replace("mypkg.kern", "nskern.kern"))
    (top / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npythonpath = ["libs/kern/src"]\n\n[tool.fuzzkern]\n'
        'targets = ["libs.kern.tests.test_fuzz::double_t"]\n')
    return lib


def test_a_monorepo_run_from_the_library_folder_keeps_one_corpus(tmp_path):
    """pytest run from the library's folder (``--import-mode=importlib``) writes the entries
    to ``<rootdir>/corpus``. Before, ``fuzzkern replay`` there said "no corpus entries in
    corpus" and exited 0, and ``fuzzkern run`` replayed none of them and saved into a second
    corpus; from outside the project, the module-form targets of pyproject.toml did not
    import. Now every command, from the library's folder or outside, uses the project's one
    corpus, and the printed commands work where they were printed."""
    top = tmp_path / "mono"
    lib = _monorepo(top)
    py = shlex.quote(sys.executable)
    res = _sh(f"{py} -m pytest tests/test_fuzz.py -p no:randomly -q --import-mode=importlib "
              "--fuzzkern-seed 1 --fuzzkern-max-examples 60 --fuzzkern-budget 120s", lib)
    assert res.returncode == 1, res.stdout + res.stderr
    entries = sorted((top / "corpus").rglob("*.json"))
    assert entries and {p.parent.name for p in entries} == {"libs.kern.tests.test_fuzz_double_t"}
    res = _sh(f"{py} -m fuzzkern replay", lib)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.count("still failing") == len(entries), res.stdout
    res = _sh(f"{py} -m fuzzkern run tests/test_fuzz.py --seed 2 --no-db -j 1 "
              "--max-examples 20 --budget 120s", lib)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"corpus: {len(entries)} entries replayed" in res.stdout, res.stdout
    assert not (lib / "corpus").exists()
    replays = _printed(res.stdout, "to reproduce this failure: ")
    repros = _printed(res.stdout, "reproduce without fuzzkern: ")
    assert replays and repros, res.stdout
    got = _sh(replays[0].replace("fuzzkern", f"{py} -m fuzzkern", 1), lib)
    assert got.returncode == 1 and "still failing" in got.stdout, got.stdout + got.stderr
    got = _sh(repros[0].replace("fuzzkern", f"{py} -m fuzzkern", 1) + " -o r.py", lib)
    assert got.returncode == 0, got.stdout + got.stderr
    outside = tmp_path / "outside"
    outside.mkdir()
    script = _sh(f"{py} {shlex.quote(str(lib / 'r.py'))}", outside)
    assert script.returncode == 1 and "the failure reproduces" in script.stdout, \
        script.stdout + script.stderr
    res = _sh(f"{py} -m fuzzkern replay {shlex.quote(str(top / 'corpus'))}", outside)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.count("still failing") == len(entries), res.stdout


@pytest.mark.parametrize("layout", ["workspace member", "plain git", "outside"])
def test_the_default_corpus_is_where_pytest_keeps_it(tmp_path, monkeypatch, layout):
    """The corpus a command names none of is ``<rootdir>/corpus`` as pytest finds rootdir, from
    pytest's own ``--co`` run in the same folder: a workspace member with a pyproject.toml of
    its own but pytest's configuration at the top; a repository with only ``.git`` (pytest's
    rootdir is then the current folder); a run from outside the project naming its file."""
    from fuzzkern.target import loader

    top = tmp_path / "top"
    lib = _monorepo(top)
    here, sources = lib, ()
    if layout == "workspace member":
        (lib / "pyproject.toml").write_text('[project]\nname = "kern"\nversion = "0"\n')
    elif layout == "plain git":
        (top / "pyproject.toml").unlink()
        (top / ".git").mkdir()
    else:
        here = tmp_path / "outside"
        here.mkdir()
        sources = (str(lib / "tests" / "test_fuzz.py"),)
    args = " ".join(shlex.quote(s) for s in sources) or "tests"
    res = _sh(f"{shlex.quote(sys.executable)} -m pytest --co -p no:cacheprovider {args}", here)
    (rootdir,) = [ln.split("rootdir: ", 1)[1].split(",")[0] for ln in res.stdout.splitlines()
                  if ln.startswith("rootdir: ")]
    monkeypatch.chdir(here)
    assert os.path.realpath(os.path.abspath(loader.default_corpus(sources))) == \
        os.path.realpath(os.path.join(rootdir, "corpus")), res.stdout
