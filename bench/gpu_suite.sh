#!/usr/bin/env bash
# The GPU suite and GPU benchmarks in one go, for the GPU machine (device tool):
#   bash bench/gpu_suite.sh tests     # pytest -m gpu (compiled mode, verdicts, device faults)
#   bash bench/gpu_suite.sh campaign  # every built-in target, both modes, 60 s each + throughput
#   bash bench/gpu_suite.sh all
# Writes logs and JSON under ${OUT:-bench/results/gpu}; results carry date and machine.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-bench/results/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# The GPU machine has every dependency but no package index: install without deps, and put
# the checkout on PYTHONPATH too, so the suite runs even where the editable install fails.
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$out/pip.log" 2>&1 \
  || echo "pip install -e failed (see $out/pip.log); using PYTHONPATH"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
  date -Is
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "numpy", numpy.__version__)'
} | tee "$out/machine.txt"
rc=0
if [[ $what == tests || $what == all ]]; then
  python3 -m pytest -m gpu tests/gpu -v -p no:cacheprovider 2>&1 | tee "$out/gpu-tests.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == campaign || $what == all ]]; then
  # 7 built-in targets x 60 s each, interpreter and compiled
  python3 -m fuzzkern run --modes interpret,compiled --budget 7m --seed 0 --no-db \
    --report "$out/campaign.json" 2>&1 | tee "$out/campaign.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 bench/throughput.py --modes interpret --cases 20 --fresh 2 \
    --out "$out/throughput-gpu.json" 2>&1 | tee "$out/throughput.log"
fi
exit $rc
