"""``fuzzkern init-ci`` (issue 32, item 2): a nightly workflow for a user's own repository,
written for their targets, actionlint-clean, with the GPU job behind a switch; its script
part runs here on a scratch repository and tells failures from a clean run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from fuzzkern import cli
from tests.unit.test_workflows import _actionlint

yaml = pytest.importorskip("yaml")

# A user's target file: `scale` ignores x's stride (a bug), `add` is correct.
TARGETS = '''
import torch
import triton
import triton.language as tl

import fuzzkern
from fuzzkern import strategies as fks
from fuzzkern.targets.kernels import vector_add


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 3 * tl.load(x_ptr + offs, mask=mask), mask=mask)


def scale(x):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _scale_kernel[(triton.cdiv(x.numel(), 16),)](x, out, x.numel(), BLOCK=16)
    return out


X = fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]))
scale_t = fuzzkern.Target(launcher=scale, reference=lambda x: 3 * x, inputs=X,
                          dims={"N": fks.sizes(max_value=16)})
add = fuzzkern.Target(
    launcher=lambda x, y: vector_add(x, y, 64), reference=lambda x, y: x + y,
    inputs=fks.inputs(x=fks.tensors(("N",), dtypes=["float32"]),
                      y=fks.tensors(("N",), dtype_of="x")),
    dims={"N": fks.sizes(max_value=64)})
'''


@pytest.fixture
def repo(tmp_path):
    """A scratch repository of the user's, with their target file."""
    root = tmp_path / "myrepo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_kernels.py").write_text(textwrap.dedent(TARGETS))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _init(repo, *args):
    """init-ci in ``repo``; fuzzkern from a git URL unless the test names its own source (this
    checkout is installed editable, with no remote a runner could reach)."""
    if not any(a.startswith("--fuzzkern-spec") for a in args):
        args = (*args, "--fuzzkern-spec", SPEC)
    return CliRunner().invoke(cli.main, ["init-ci", *args, "--root", str(repo)])


SPEC = "git+https://example.org/you/fuzzkern@v0.1.0"


def test_the_workflow_is_the_users_and_the_gpu_job_is_switched(repo):
    res = _init(repo, "tests/test_kernels.py")
    assert res.exit_code == 0, res.output
    # (ids: the dotted path from the project root, tests.test_kernels::...)
    assert re.search(r"2 target\(s\): \S*test_kernels::scale_t, \S*test_kernels::add",
                     res.output), res.output
    path = repo / ".github" / "workflows" / "fuzzkern-nightly.yml"
    wf = yaml.safe_load(path.read_text())
    interpret, compiled = wf["jobs"]["interpret"], wf["jobs"]["compiled"]
    # the CPU job always runs; the GPU job only when an input or a variable turns it on
    assert "if" not in interpret and interpret["runs-on"] == "ubuntu-latest"
    assert compiled["if"] == "${{ inputs.gpu || vars.FUZZKERN_GPU == 'true' }}"
    assert compiled["runs-on"] == ["self-hosted", "gpu"]
    assert wf[True]["workflow_dispatch"]["inputs"]["gpu"]["type"] == "boolean"
    for job in (interpret, compiled):
        steps = {s.get("name", s.get("uses")): s for s in job["steps"]}
        install = steps["Install torch, fuzzkern and the project"]["run"]
        assert f"pip install 'fuzzkern @ {SPEC}'\n" in install
        # the scratch repository has neither requirements.txt nor pyproject.toml
        assert "-r requirements.txt" not in install and "-e ." not in install
        assert steps["Restore the Hypothesis example database"]["uses"].startswith(
            "actions/cache/restore@")
        assert steps["Save the Hypothesis example database"]["if"] == "always()"
        upload = steps["Upload the reports, the corpus and the database"]["with"]["path"]
        assert "report.html" in upload and "corpus" in upload
        pr = steps["Propose new corpus entries"]
        assert pr["uses"].startswith("peter-evans/create-pull-request@")
        assert pr["if"] == "steps.fuzz.outputs.outcome == 'failures'"
        assert pr["with"]["add-paths"] == "corpus/**"
        assert steps["Fuzz"]["run"] == "bash .github/fuzzkern/nightly.sh"
    script = (repo / ".github" / "fuzzkern" / "nightly.sh").read_text()
    assert "fuzzkern run tests/test_kernels.py \\" in script
    # no silent overwrite
    again = _init(repo, "tests/test_kernels.py")
    assert again.exit_code == 2 and "exists; pass --force" in again.output


def test_the_written_workflow_is_actionlint_clean(repo):
    assert _init(repo, "tests/test_kernels.py", "--gpu-label", "gpu").exit_code == 0
    assert _actionlint([str(repo / ".github" / "workflows" / "fuzzkern-nightly.yml")]) == []


def test_a_mistyped_target_or_bad_option_writes_nothing(repo):
    res = _init(repo, "tests/test_kernels.py::scale_tt")
    assert res.exit_code == 2 and "did you mean 'scale_t'?" in res.output, res.output
    res = _init(repo, "tests/test_kernels.py", "--budget", "5x")
    assert res.exit_code == 2 and "unknown unit 'x'" in res.output, res.output
    res = _init(repo, "tests/test_kernels.py", "--fuzzkern-spec", "fuzzkern; rm -rf /")
    assert res.exit_code == 2 and "--fuzzkern-spec" in res.output
    assert not (repo / ".github").exists()


def _script(repo, budget, *args):
    out = repo / "github_output"
    out.write_text("")
    env = {**os.environ, "GITHUB_OUTPUT": str(out), "FUZZKERN_BUDGET": budget,
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(["bash", ".github/fuzzkern/nightly.sh", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(line.split("=", 1) for line in out.read_text().splitlines()), proc.stdout


def test_the_script_part_runs_on_a_scratch_repository(repo):
    assert _init(repo, "tests/test_kernels.py::add").exit_code == 0
    outputs, log = _script(repo, "30s", "--no-db", "--max-examples", "10")  # ends at 10 cases
    assert outputs == {"status": "0", "outcome": "clean"}, log
    assert (repo / "report.html").exists() and not (repo / "corpus").exists()
    assert _init(repo, "tests/test_kernels.py", "--force").exit_code == 0
    outputs, log = _script(repo, "60s", "--no-db", "--max-examples", "60", "--seed", "1")
    assert outputs == {"status": "1", "outcome": "failures"}, log
    # (the folder is named after the target's id, tests.test_kernels::scale_t)
    assert [p for p in (repo / "corpus").rglob("*.json") if "scale_t" in str(p)], log
    assert "test_kernels::scale_t" in (repo / "report.html").read_text()
    outputs, log = _script(repo, "soon")
    assert outputs["outcome"] == "error" and outputs["status"] == "2", log


def test_the_source_of_fuzzkern_is_the_users_choice_and_checked(repo):
    """Issue 43, point 2: a version (with the warning that PyPI has none), a git URL, a folder
    inside the repository; a folder outside it, or a URL that is neither, is refused."""
    def install_lines(*args):
        res = _init(repo, "tests/test_kernels.py", "--force", *args)
        assert res.exit_code == 0, res.output
        wf = yaml.safe_load((repo / ".github" / "workflows" / "fuzzkern-nightly.yml").read_text())
        step = wf["jobs"]["interpret"]["steps"][3]
        return step["run"].splitlines()[2:], res.output

    lines, out = install_lines("--fuzzkern-spec", "0.1.0")
    assert lines == ["pip install fuzzkern==0.1.0"]
    assert "warning: fuzzkern is not on PyPI: the runner's package index must serve" in out
    lines, out = install_lines("--fuzzkern-spec", "https://example.org/you/fuzzkern.git")
    assert lines == ["pip install 'fuzzkern @ git+https://example.org/you/fuzzkern.git'"]
    assert "no @<commit> or @<tag>" in out
    (repo / "third_party" / "fuzzkern").mkdir(parents=True)
    (repo / "third_party" / "fuzzkern" / "pyproject.toml").write_text("[project]\n")
    (repo / "pyproject.toml").write_text("[project]\nname = 'mykernels'\n")
    (repo / "requirements.txt").write_text("numpy\n")
    lines, out = install_lines("--fuzzkern-spec", "third_party/fuzzkern")
    # fuzzkern from the folder, then the user's requirements and their project itself
    assert lines == ["pip install ./third_party/fuzzkern", "pip install -r requirements.txt",
                     "pip install -e ."], lines
    assert "warning" not in out
    for spec, said in [(str(repo.parent), "outside the repository"),
                       ("https://example.org/fuzzkern.tar", "a git URL"),
                       ("nowhere/fuzzkern", "not a version, a git URL")]:
        res = _init(repo, "tests/test_kernels.py", "--force", "--fuzzkern-spec", spec)
        assert res.exit_code == 2 and said in res.output, (spec, res.output)


def test_the_default_source_is_where_this_fuzzkern_came_from(repo):
    """With no --fuzzkern-spec: this fuzzkern's own source when a runner can reach it, else an
    error that says what to pass (never a workflow whose install step cannot work)."""
    from fuzzkern import initci
    from fuzzkern._version import __version__

    try:
        spec, _ = initci.source(None, str(repo), __version__)
    except cli.FuzzkernError as e:
        assert "Pass --fuzzkern-spec" in str(e)
        res = CliRunner().invoke(cli.main, ["init-ci", "tests/test_kernels.py",
                                            "--root", str(repo)])
        assert res.exit_code == 2 and "Pass --fuzzkern-spec" in res.output
        assert not (repo / ".github").exists()
    else:
        assert spec.startswith(("fuzzkern @ git+", "./", "fuzzkern==")), spec


@pytest.mark.parametrize("option, value", [
    ("--install", "pip install -r requirements.txt\r- run: curl evil | sh"),
    ("--install", "pip install .\x85- name: injected"),
    ("--install", "pip install .\u2028x"),
    ("--install", "echo ${{ secrets.TOKEN }}"),
    ("--budget", "30m\n"),
    ("--budget", "30m\"\nx: y"),
    ("--corpus", "!corpus"),
    ("--corpus", "../outside"),
    ("--corpus", "/abs"),
    ("--gpu-label", "gpu]"),
    ("--gpu-label", "gpu\n"),
    ("--python", "3.11\n"),
    ("--torch", "2.13.0; rm -rf /"),
    ("--fuzzkern-spec", "git+https://example.org/x.git\r\n- run: evil"),
])
def test_every_value_written_is_validated(repo, option, value):
    """Issue 42: a value that would add a step, write invalid YAML or break the script is one
    error line, exit 2, nothing written."""
    res = _init(repo, "tests/test_kernels.py", option, value)
    assert res.exit_code == 2 and option in res.output, res.output
    assert not (repo / ".github").exists()


def test_what_is_written_passes_bash_n_yaml_and_actionlint(repo):
    """The odd but valid values: the script passes bash -n, the workflow reads back and is
    actionlint-clean."""
    (repo / "corpus.d").mkdir()
    res = _init(repo, "tests/test_kernels.py::add", "--budget", "1h30m", "--corpus",
                "fuzz/corpus.d", "--gpu-label", "h100_x-2", "--install",
                "pip install -r 'requirements dev.txt' && echo \"done: 100%\"")
    assert res.exit_code == 0, res.output
    script = repo / ".github" / "fuzzkern" / "nightly.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    path = repo / ".github" / "workflows" / "fuzzkern-nightly.yml"
    wf = yaml.safe_load(path.read_text())
    assert wf["jobs"]["compiled"]["runs-on"] == ["self-hosted", "h100_x-2"]
    assert len(wf["jobs"]["interpret"]["steps"]) == 9
    assert wf["jobs"]["interpret"]["steps"][3]["run"].splitlines()[-1] == (
        "pip install -r 'requirements dev.txt' && echo \"done: 100%\"")
    # a custom runner label is the user's to declare (their .github/actionlint.yaml)
    found = _actionlint([str(path)])
    assert [e for e in found if 'label "h100_x-2" is unknown' not in e] == [], found
