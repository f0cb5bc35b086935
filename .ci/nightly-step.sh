#!/usr/bin/env bash
# The nightly workflow's Fuzz step: runs .ci/nightly.sh (the command `tox -e nightly` runs) and
# turns its exit status into the step output `outcome`, which the later steps read:
#   0 -> clean      nothing failed
#   1 -> failures   fuzzkern found failing cases: a corpus pull request is opened, the job fails
#   * -> error      2: a configuration error or no case ran (or a crash): the job fails, and
#                   no corpus pull request is opened (there is nothing to propose)
# It exits 0 itself, so the report and the database are still uploaded; the workflow's last
# step fails the job for any outcome but `clean`.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
bash .ci/nightly.sh "$@" || status=$?
case "$status" in
    0) outcome=clean ;;
    1) outcome=failures ;;
    *) outcome=error ;;
esac
{
    echo "status=$status"
    echo "outcome=$outcome"
} >> "${GITHUB_OUTPUT:-/dev/null}"
echo "fuzzkern exited $status: $outcome"
exit 0
