"""``fuzzkern init-ci TARGET ...``: a nightly fuzzing workflow for the user's own repository.

It writes two files (docs/ci.md, "Your own repository"):

- ``.github/workflows/fuzzkern-nightly.yml``: a GitHub Actions workflow. Every night (and by
  hand) a CPU job fuzzes the targets in Triton's interpreter; a GPU job on a self-hosted runner
  runs only when the ``gpu`` input of a manual run or the repository variable ``FUZZKERN_GPU``
  (``true``) turns it on, so a repository without such a runner never waits for one. Each job
  installs fuzzkern as a package (``pip install <spec>``, not from a checkout of fuzzkern),
  restores and saves the Hypothesis example database (an Actions cache), fuzzes, uploads the
  HTML and JSON reports with the corpus, opens or updates a pull request with new corpus
  entries, and fails unless the run was clean.
- ``.github/fuzzkern/nightly.sh``: the workflow's script part, runnable anywhere: it runs
  ``fuzzkern run`` on the targets and turns its exit status into the step output
  ``outcome`` (``clean``, ``failures``, ``error``).

The text is built from the arguments, each checked first (targets that load, a budget that
parses, names a shell and YAML take literally): nothing of it is evaluated.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import metadata

from fuzzkern.errors import FuzzkernError

WORKFLOW_PATH = os.path.join(".github", "workflows", "fuzzkern-nightly.yml")
SCRIPT_PATH = os.path.join(".github", "fuzzkern", "nightly.sh")

#: what each value may hold: written into YAML plain scalars, a flow sequence, shell words and
#: comments, so nothing YAML, bash or an Actions expression would read as syntax
_TARGET = re.compile(r"[A-Za-z0-9_./:@=+,-]+")
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_CORPUS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+!-]*")
_BUDGET = re.compile(r"[0-9][0-9a-z.]*")
_URL = re.compile(r"[A-Za-z0-9_./:@=+,%#?&~-]+")
_PLAIN_VERSION = re.compile(r"(?:fuzzkern\s*)?(==|>=|~=|<=|<|>)?\s*([0-9][A-Za-z0-9.+!-]*)")
_GIT = re.compile(r"(?:fuzzkern\s*@\s*)?((?:git\+)?(?:https|ssh|git|file)://\S+|git\+\S+)")


@dataclass
class NightlyOptions:
    """What ``fuzzkern init-ci`` writes the workflow for."""

    targets: tuple[str, ...]
    budget: str = "30m"
    cron: str = "17 3 * * *"
    python: str = "3.11"
    torch: str = "2.13.0"
    #: what ``pip install`` installs fuzzkern from, as ``source()`` resolves it
    fuzzkern: str = "fuzzkern"
    #: the runner label of the GPU job (besides ``self-hosted``)
    gpu_label: str = "gpu"
    #: shell lines that install the project and its requirements ("" for none)
    install: str = "if [ -f requirements.txt ]; then pip install -r requirements.txt; fi"
    corpus: str = "corpus"
    #: what the user should know about the choices above (printed as warnings)
    warnings: list[str] = field(default_factory=list)

    def check(self) -> None:
        """Each value, against what may be written where it goes; one error line naming the
        option otherwise."""
        from fuzzkern.search.engine import parse_budget

        if not self.targets:
            raise FuzzkernError("init-ci needs the target files (or modules) to fuzz, e.g. "
                                "fuzzkern init-ci tests/test_kernels.py")
        for what, value, pattern, expected in [
                *(("target", t, _TARGET, "letters, digits and ./:@=+,-_") for t in self.targets),
                ("--gpu-label", self.gpu_label, _LABEL, "a runner label: letters, digits, ._-"),
                ("--corpus", self.corpus, _CORPUS, "a relative folder: letters, digits, ./_-"),
                ("--python", self.python, _VERSION, "a version such as 3.11"),
                ("--torch", self.torch, _VERSION, "a version such as 2.13.0"),
                ("--budget", self.budget, _BUDGET, "a duration such as 90s, 10m or 1h30m")]:
            if not pattern.fullmatch(value):
                raise FuzzkernError(f"{what} {value!r}: expected {expected} (it is written into "
                                    "the workflow)")
        if os.path.isabs(self.corpus) or ".." in self.corpus.split("/"):
            raise FuzzkernError(f"--corpus {self.corpus!r}: expected a folder inside the "
                                "repository")
        parse_budget(self.budget)
        if not re.fullmatch(r"[0-9*/,-]+( [0-9*/,-]+){4}", self.cron):
            raise FuzzkernError(f"--cron {self.cron!r}: expected five cron fields, e.g. "
                                "'17 3 * * *'")
        for line in self.install.split("\n"):
            check_line("--install", line)
        check_line("--fuzzkern-spec", self.fuzzkern)


def check_line(option: str, text: str) -> None:
    """One line of shell for a ``run: |`` block: printable (no CR, NEL, U+2028, tab or other
    control), and no ``${{`` that Actions would evaluate."""
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        raise FuzzkernError(f"{option} {text!r}: holds the character U+{ord(bad):04X}; expected "
                            "one line of printable text")
    if "${{" in text:
        raise FuzzkernError(f"{option} {text!r}: holds '${{{{', which GitHub Actions would "
                            "evaluate as an expression")


def _inside(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (``./...``) when it lies inside it, else None."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return "." if rel == "." else "./" + rel.replace(os.sep, "/")


def _git(folder: str, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _installed_source(root: str, version: str) -> tuple[str, list[str]]:
    """Where the runner can install this very fuzzkern from: how it was installed here (PEP 610
    ``direct_url.json``), a folder inside the repository, or the checkout's ``origin``."""
    try:
        direct = metadata.distribution("fuzzkern").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if not direct:  # a wheel from an index: the same index serves it to the runner
        return f"fuzzkern=={version}", [
            f"the workflow installs fuzzkern=={version} from the runner's package index; "
            "fuzzkern is not on PyPI, so that index must serve it (or pass --fuzzkern-spec)"]
    info = json.loads(direct)
    url = str(info.get("url", ""))
    vcs = info.get("vcs_info")
    if vcs and vcs.get("vcs") == "git":
        return f"fuzzkern @ git+{url}@{vcs.get('commit_id', '')}".rstrip("@"), []
    if url.startswith("file://"):
        folder = url[len("file://"):]
        rel = _inside(folder, root)
        if rel is not None:
            return rel, []
        origin = _git(folder, "remote", "get-url", "origin")
        head = _git(folder, "rev-parse", "HEAD")
        if origin and head and re.match(r"(https|ssh|git)://|git@", origin):
            remote = origin if "://" in origin else "ssh://" + origin.replace(":", "/", 1)
            return f"fuzzkern @ git+{remote}@{head}", [
                f"the workflow installs fuzzkern from {origin} at commit {head[:12]} (this "
                "checkout's origin): that commit must be pushed there"]
    raise FuzzkernError(
        f"cannot tell where the runner can install fuzzkern from: it is installed here from "
        f"{url or 'an unknown source'}, outside this repository and not a git checkout with a "
        "remote, and it is not on PyPI. Pass --fuzzkern-spec: a git URL "
        "(git+https://host/you/fuzzkern@<commit>), a folder or wheel inside this repository "
        "(./third_party/fuzzkern), or a version your package index serves (0.1.0)")


def source(spec: str | None, root: str, version: str) -> tuple[str, list[str]]:
    """What ``pip install`` gets for ``--fuzzkern-spec`` (None: this fuzzkern's own source), and
    the warnings that go with it. A version, a git URL (``git+https://...[@ref]``, or a plain
    ``https://.../x.git``), a wheel's URL, or a folder or wheel inside the repository."""
    if spec is None:
        return _installed_source(root, version)
    spec = spec.strip()
    check_line("--fuzzkern-spec", spec)
    m = _PLAIN_VERSION.fullmatch(spec)
    if m:
        return f"fuzzkern{m.group(1) or '=='}{m.group(2)}", [
            f"fuzzkern is not on PyPI: the runner's package index must serve fuzzkern "
            f"{m.group(2)} (PIP_INDEX_URL), or the install step fails"]
    m = _GIT.fullmatch(spec)
    if m and (m.group(1).startswith("git+") or m.group(1).endswith(".git")
              or ".git@" in m.group(1)):
        url = m.group(1) if m.group(1).startswith("git+") else "git+" + m.group(1)
        if not _URL.fullmatch(url):
            raise FuzzkernError(f"--fuzzkern-spec {spec!r}: unexpected characters in the URL")
        tail = url.split("://", 1)[-1]
        warnings = [] if "@" in tail.split("/", 1)[-1] else [
            f"--fuzzkern-spec {url}: no @<commit> or @<tag>: every night installs the "
            "branch's newest fuzzkern"]
        return f"fuzzkern @ {url}", warnings
    if re.match(r"https?://", spec):
        if not (_URL.fullmatch(spec) and spec.endswith(".whl")):
            raise FuzzkernError(f"--fuzzkern-spec {spec!r}: a URL should be a git URL "
                                "(git+https://...) or a wheel's (.../fuzzkern-*.whl)")
        return f"fuzzkern @ {spec}", []
    path = os.path.join(root, spec)
    if not os.path.exists(path):
        raise FuzzkernError(f"--fuzzkern-spec {spec!r}: not a version, a git URL, a wheel's URL "
                            f"or a path that exists in {root}")
    rel = _inside(path, root)
    if rel is None:
        raise FuzzkernError(f"--fuzzkern-spec {spec!r}: outside the repository; the runner "
                            "checks out only the repository (put fuzzkern inside it, or pass "
                            "a git URL)")
    if os.path.isdir(path) and not any(os.path.exists(os.path.join(path, f))
                                       for f in ("pyproject.toml", "setup.py")):
        raise FuzzkernError(f"--fuzzkern-spec {spec!r}: the folder has no pyproject.toml")
    if os.path.isfile(path) and not path.endswith(".whl"):
        raise FuzzkernError(f"--fuzzkern-spec {spec!r}: expected a folder or a .whl")
    if not _URL.fullmatch(rel):
        raise FuzzkernError(f"--fuzzkern-spec {spec!r}: unexpected characters in the path")
    return rel, []


def project_install(root: str) -> tuple[str, list[str]]:
    """The lines that install the user's own repository: its requirements file and the project
    itself (editable), as the repository has them; a note when it has neither."""
    lines = []
    if os.path.isfile(os.path.join(root, "requirements.txt")):
        lines.append("pip install -r requirements.txt")
    if any(os.path.isfile(os.path.join(root, f)) for f in ("pyproject.toml", "setup.py")):
        lines.append("pip install -e .")
    notes = [] if lines else [
        "the repository has no pyproject.toml, setup.py or requirements.txt: the workflow "
        "installs nothing of it, and the targets import your modules from the checkout (the "
        "script puts the repository root on PYTHONPATH); pass --install for anything else"]
    return "\n".join(lines), notes


def script(opts: NightlyOptions) -> str:
    """The text of ``.github/fuzzkern/nightly.sh``."""
    targets = " ".join(shlex.quote(t) for t in opts.targets)
    return f'''#!/usr/bin/env bash
# Written by `fuzzkern init-ci` (docs/ci.md): the nightly fuzzing run of this repository's
# targets, and its exit status as the step output `outcome`:
#   0 -> clean      nothing failed
#   1 -> failures   failing cases: new corpus entries, a pull request proposes them
#   * -> error      2: a configuration error or no case ran: nothing to propose
# It exits 0 itself, so the reports and the database are still uploaded; the workflow's last
# step fails the job for any outcome but `clean`. Runs anywhere: bash {SCRIPT_PATH}
#   FUZZKERN_MODES   interpret (default) or interpret,compiled (a GPU)
#   FUZZKERN_BUDGET  wall-clock budget (default {opts.budget})
set -uo pipefail
cd "$(dirname "$0")/../.."
# the targets import this repository's modules from the checkout, as pytest's rootdir does
export PYTHONPATH="$PWD${{PYTHONPATH:+:$PYTHONPATH}}"
status=0
fuzzkern run {targets} \\
    --budget "${{FUZZKERN_BUDGET:-{opts.budget}}}" \\
    --modes "${{FUZZKERN_MODES:-interpret}}" \\
    --db .hypothesis/examples \\
    --corpus {shlex.quote(opts.corpus)} \\
    --report report.json \\
    --html report.html \\
    "$@" || status=$?
case "$status" in
    0) outcome=clean ;;
    1) outcome=failures ;;
    *) outcome=error ;;
esac
{{
    echo "status=$status"
    echo "outcome=$outcome"
}} >> "${{GITHUB_OUTPUT:-/dev/null}}"
echo "fuzzkern exited $status: $outcome"
exit 0
'''


def _job(opts: NightlyOptions, kind: str) -> str:
    """One job of the workflow: ``interpret`` (CPU, always) or ``compiled`` (GPU, switched)."""
    gpu = kind == "compiled"
    if gpu:
        head = (f"  compiled:\n    name: fuzz (interpreter and compiled, GPU)\n"
                "    # only when a manual run's `gpu` input or the repository variable "
                "FUZZKERN_GPU says so:\n    # a repository without a GPU runner never queues "
                "this job\n"
                "    if: ${{ inputs.gpu || vars.FUZZKERN_GPU == 'true' }}\n"
                f"    runs-on: [self-hosted, {opts.gpu_label}]\n")
        torch = f"pip install torch=={opts.torch}"
        modes = "interpret,compiled"
    else:
        head = ("  interpret:\n    name: fuzz (interpreter, CPU)\n"
                "    runs-on: ubuntu-latest\n")
        torch = (f"pip install torch=={opts.torch} --index-url "
                 "https://download.pytorch.org/whl/cpu")
        modes = "interpret"
    install_project = "".join(f"          {line}\n" for line in opts.install.split("\n")
                              if line.strip())
    corpus = opts.corpus.rstrip("/")
    return head + f'''    timeout-minutes: 120
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "{opts.python}"
      # The example database is a cache: restore the newest one, save a new one per run.
      - name: Restore the Hypothesis example database
        uses: actions/cache/restore@v4
        with:
          path: .hypothesis/examples
          key: fuzzkern-db-{kind}-${{{{ github.run_id }}}}
          restore-keys: fuzzkern-db-{kind}-
      - name: Install torch, fuzzkern and the project
        run: |
          python -m pip install --upgrade pip
          {torch}
          pip install {shlex.quote(opts.fuzzkern)}
{install_project}      - name: Fuzz
        id: fuzz
        env:
          FUZZKERN_MODES: {modes}
          FUZZKERN_BUDGET: ${{{{ inputs.budget || '{opts.budget}' }}}}
        run: bash {SCRIPT_PATH}
      - name: Save the Hypothesis example database
        if: always()
        uses: actions/cache/save@v4
        with:
          path: .hypothesis/examples
          key: fuzzkern-db-{kind}-${{{{ github.run_id }}}}
      - name: Upload the reports, the corpus and the database
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: fuzzkern-{kind}-${{{{ github.run_id }}}}
          path: |
            report.json
            report.html
            .hypothesis/examples
            {corpus}
          if-no-files-found: warn
      # With the secret FUZZKERN_PR_TOKEN (contents and pull-requests write) the pull request
      # runs your other workflows; with the default token, allow GitHub Actions to create pull
      # requests (Settings > Actions > General). docs/ci.md says more.
      - name: Propose new corpus entries
        if: steps.fuzz.outputs.outcome == 'failures'
        uses: peter-evans/create-pull-request@v6
        with:
          token: ${{{{ secrets.FUZZKERN_PR_TOKEN || github.token }}}}
          add-paths: {corpus}/**
          branch: fuzzkern/nightly-corpus-{kind}
          delete-branch: true
          commit-message: "corpus: new failures from the nightly fuzzkern run ({kind})"
          title: "fuzzkern nightly: new failing cases ({kind})"
          body: |
            The nightly fuzzing run found failures:
            ${{{{ github.server_url }}}}/${{{{ github.repository }}}}/actions/runs/\
${{{{ github.run_id }}}}
            Review each entry, fix the kernel or keep the entry as a regression test; the
            HTML report is in the run's artifacts.
      - name: Fail unless the run was clean
        if: steps.fuzz.outputs.outcome != 'clean'
        env:
          OUTCOME: ${{{{ steps.fuzz.outputs.outcome }}}}
        run: |
          if [ "$OUTCOME" = failures ]; then
            echo "::error::fuzzkern found failures: see report.html and the corpus pull request"
          else
            echo "::error::the run did not complete (a usage error, or no case ran): see Fuzz"
          fi
          exit 1
'''


def workflow(opts: NightlyOptions) -> str:
    """The text of ``.github/workflows/fuzzkern-nightly.yml``."""
    return f'''# Written by `fuzzkern init-ci {" ".join(opts.targets)}` (docs/ci.md).
name: fuzzkern nightly

on:
  schedule:
    - cron: "{opts.cron}"
  workflow_dispatch:
    inputs:
      budget:
        description: "wall-clock budget per job (90s, 10m, 1h)"
        required: false
        default: "{opts.budget}"
      gpu:
        description: "also run the GPU job (a self-hosted runner labelled {opts.gpu_label})"
        required: false
        type: boolean
        default: false

permissions:
  contents: write
  pull-requests: write

concurrency:
  group: fuzzkern-nightly
  cancel-in-progress: false

jobs:
''' + _job(opts, "interpret") + "\n" + _job(opts, "compiled")


def verify(workflow_text: str, script_text: str) -> list[str]:
    """Check what init-ci is about to write: the script passes ``bash -n``, the workflow parses
    as YAML (when PyYAML is installed) with the steps it was built with, and actionlint (when on
    PATH) finds nothing. A broken file is an error; actionlint's findings come back as warnings
    (it may know newer rules than this template)."""
    with tempfile.TemporaryDirectory(prefix="fuzzkern-init-ci-") as tmp:
        sh = os.path.join(tmp, "nightly.sh")
        yml = os.path.join(tmp, "fuzzkern-nightly.yml")
        for path, text in ((sh, script_text), (yml, workflow_text)):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        bash = shutil.which("bash")
        if bash:
            proc = subprocess.run([bash, "-n", sh], capture_output=True, text=True, timeout=60)
            if proc.returncode:
                raise FuzzkernError(f"the script init-ci built fails bash -n: "
                                    f"{proc.stderr.strip()}")
        try:
            import yaml
        except ImportError:
            yaml = None
        if yaml is not None:
            try:
                doc = yaml.safe_load(workflow_text)
            except yaml.YAMLError as e:
                raise FuzzkernError(f"the workflow init-ci built is not valid YAML: {e}") from e
            if not (isinstance(doc, dict) and set(doc.get("jobs", {})) == {"interpret",
                                                                              "compiled"}
                    and all(len(j["steps"]) == 9 for j in doc["jobs"].values())):
                raise FuzzkernError("the workflow init-ci built does not read back as its two "
                                    "jobs of nine steps each")
        found: list[str] = []
        actionlint = shutil.which("actionlint")
        if actionlint:
            proc = subprocess.run([actionlint, "-oneline", yml], capture_output=True, text=True,
                                  timeout=120)
            found = [f"actionlint: {ln.split(':', 3)[-1].strip()}"
                     for ln in proc.stdout.splitlines() if ln.strip()]
    return found


def write(opts: NightlyOptions, root: str, *, force: bool = False) -> list[str]:
    """Write the workflow and its script under ``root`` once ``verify`` passes them; returns
    their paths (``opts.warnings`` gains actionlint's findings). An existing file is an error
    unless ``force``."""
    opts.check()
    files = [(os.path.join(root, WORKFLOW_PATH), workflow(opts), 0o644),
             (os.path.join(root, SCRIPT_PATH), script(opts), 0o755)]
    for path, _, _ in files:
        if os.path.exists(path) and not force:
            raise FuzzkernError(f"{os.path.relpath(path, root)} exists; pass --force to "
                                "replace it")
    opts.warnings.extend(verify(files[0][1], files[1][1]))
    for path, text, mode in files:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(path, mode)
    return [path for path, _, _ in files]

__all__ = ["NightlyOptions", "SCRIPT_PATH", "WORKFLOW_PATH", "project_install", "script",
           "source", "verify", "workflow", "write", "check_line"]
