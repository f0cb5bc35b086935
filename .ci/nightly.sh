#!/usr/bin/env bash
# The nightly fuzzing run: the one command both the nightly workflow
# (.github/workflows/nightly.yml) and `tox -e nightly` run, so they cannot drift.
#   FUZZKERN_MODES   interpret (default) or interpret,compiled (the GPU runner)
#   FUZZKERN_BUDGET  wall-clock budget (default 30m)
# Writes report.json and report.html here; new failures go to corpus/ (exit status 1).
set -euo pipefail
cd "$(dirname "$0")/.."
exec fuzzkern run \
    --budget "${FUZZKERN_BUDGET:-30m}" \
    --modes "${FUZZKERN_MODES:-interpret}" \
    --db .hypothesis/examples \
    --corpus corpus \
    --report report.json \
    --html report.html \
    "$@"
