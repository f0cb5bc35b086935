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

import os
import re
import shlex
from dataclasses import dataclass

from fuzzkern.errors import FuzzkernError

WORKFLOW_PATH = os.path.join(".github", "workflows", "fuzzkern-nightly.yml")
SCRIPT_PATH = os.path.join(".github", "fuzzkern", "nightly.sh")

#: characters a target, a label or a package spec may hold in the generated files
_SAFE = re.compile(r"^[A-Za-z0-9_./:@=<>!~+,\[\]-]+$")


@dataclass
class NightlyOptions:
    """What ``fuzzkern init-ci`` writes the workflow for."""

    targets: tuple[str, ...]
    budget: str = "30m"
    cron: str = "17 3 * * *"
    python: str = "3.11"
    torch: str = "2.13.0"
    #: what ``pip install`` installs fuzzkern from: a version on your index, a wheel, a URL
    fuzzkern: str = "fuzzkern"
    #: the runner label of the GPU job (besides ``self-hosted``)
    gpu_label: str = "gpu"
    #: a command that installs the project's own requirements ("" for none)
    install: str = "if [ -f requirements.txt ]; then pip install -r requirements.txt; fi"
    corpus: str = "corpus"

    def check(self) -> None:
        from fuzzkern.search.engine import parse_budget

        if not self.targets:
            raise FuzzkernError("init-ci needs the target files (or modules) to fuzz, e.g. "
                                "fuzzkern init-ci tests/test_kernels.py")
        for what, value in [*(("target", t) for t in self.targets),
                            ("--fuzzkern-spec", self.fuzzkern), ("--gpu-label", self.gpu_label),
                            ("--corpus", self.corpus), ("--python", self.python),
                            ("--torch", self.torch)]:
            if not _SAFE.match(value):
                raise FuzzkernError(f"{what} {value!r}: expected letters, digits and "
                                    "./:@=<>!~+,[]-_ only (it is written into the workflow)")
        parse_budget(self.budget)
        if not re.fullmatch(r"[0-9*/,-]+( [0-9*/,-]+){4}", self.cron):
            raise FuzzkernError(f"--cron {self.cron!r}: expected five cron fields, e.g. "
                                "'17 3 * * *'")
        if "\n" in self.install:
            raise FuzzkernError("--install: expected one line of shell")


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
    install_project = f"          {opts.install}\n" if opts.install else ""
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
      - name: Install torch, fuzzkern (a package) and the project
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


def write(opts: NightlyOptions, root: str, *, force: bool = False) -> list[str]:
    """Write the workflow and its script under ``root``; returns their paths. An existing file
    is an error unless ``force``."""
    opts.check()
    files = [(os.path.join(root, WORKFLOW_PATH), workflow(opts), 0o644),
             (os.path.join(root, SCRIPT_PATH), script(opts), 0o755)]
    for path, _, _ in files:
        if os.path.exists(path) and not force:
            raise FuzzkernError(f"{os.path.relpath(path, root)} exists; pass --force to "
                                "replace it")
    for path, text, mode in files:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(path, mode)
    return [path for path, _, _ in files]

__all__ = ["NightlyOptions", "SCRIPT_PATH", "WORKFLOW_PATH", "script", "workflow", "write"]
