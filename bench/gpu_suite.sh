#!/usr/bin/env bash
# The GPU suite and GPU benchmarks, for the GPU machine (device tool). Each part fits one call
# (10 minutes) and ends with one line `gpu_suite PART: PASS|FAIL ...`. Every session that
# changes compiled-mode code runs `smoke` first; the other parts follow as the change needs.
#   bash bench/gpu_suite.sh smoke     # the GPU tests that guard compiled mode's correctness,
#                                     # seconds each, 4 xdist workers on one GPU  ~2 min
#   bash bench/gpu_suite.sh tests     # every GPU test but --sanitize (4 workers)  ~5 min
#   bash bench/gpu_suite.sh perf      # compiled throughput: examples/liger (${LIGER_BUDGET:-7m}),
#                                     # examples/flaggems (${GEMS_BUDGET:-5m}) and examples/fla
#                                     # (${FLA_BUDGET:-6m}) side by side, --modes compiled -j 1
#                                     # --no-db --no-corpus --case-floor 0, compiling ahead
#                                     # as ${AHEAD:-off};
#                                     # cases per target and totals (carry .whl/)  ~7 min
# Older parts, each one call:
#   bash bench/gpu_suite.sh sanitize  # the compute-sanitizer test alone            ~3 min
#   bash bench/gpu_suite.sh bench     # bench/run.py: interpreter, compiled, both, and the
#                                     # baselines; ~5 min (throughput apart: both together
#                                     # passed the 10-minute limit twice)
#   bash bench/gpu_suite.sh throughput  # bench/throughput.py, interpreter and compiled
#                                     # (THROUGHPUT_MODES=compiled: compiled alone), with
#                                     # ${VARIANTS:-32} value variants per compiled case
#   bash bench/gpu_suite.sh campaign  # every built-in target, both modes, 60 s each ~8 min
#   bash bench/gpu_suite.sh hygiene   # bench/hygiene.py --mode compiled: red zones' cost ~2 min
#   bash bench/gpu_suite.sh fidelity  # bench/fidelity.py --compiled: the interpreter-vs-compiled
#                                     # self-check (tests/fidelity/corpus.py) and
#                                     # docs/interpreter.md regenerated with its results ~1 min
#   JOBS=2 bash bench/gpu_suite.sh scaling  # fuzzkern run -j $JOBS --modes compiled
#                                     # --budget ${BUDGET:-5m} on the first $JOBS GPUs
#   bash bench/gpu_suite.sh liger     # examples/liger compiled and interpreted (fuzzkern run
#                                     # -j <GPUs> --budget ${BUDGET:-8m}) and the upstream bugs'
#                                     # reproducers (tests/liger) on the GPU. Needs liger-kernel
#                                     # 0.8.5: the GPU machine has no package index, so carry its
#                                     # wheel (pure Python, 0.9 MB) under .whl/ (an ignored path:
#                                     # pip download --no-deps liger-kernel==0.8.5 -d .whl);
#                                     # installed here with pip --no-deps      ~9 min
#   bash bench/gpu_suite.sh flaggems  # examples/flaggems compiled (fuzzkern run --modes compiled
#                                     # -j <GPUs> --budget ${BUDGET:-5m}). Needs FlagGems 5.0.2
#                                     # and what it imports (sqlalchemy, PyYAML, packaging)
#                                     # as wheels under .whl/, downloaded with an index:
#                                     # pip download --no-deps -d .whl flag_gems==5.0.2
#                                     #   packaging==26.0
#                                     # pip download --no-deps -d .whl --only-binary=:all:
#                                     #   --python-version 3.12 --platform manylinux2014_x86_64
#                                     #   sqlalchemy==2.0.48 PyYAML==6.0.3
#                                     # installed here with pip --no-deps      ~6 min
#   bash bench/gpu_suite.sh fla       # examples/fla compiled (fuzzkern run --modes compiled
#                                     # -j <GPUs> --budget ${BUDGET:-5m}), then its chunked op
#                                     # with the most autotune configs alone for
#                                     # ${HEAVY_BUDGET:-2m} (${FLA_HEAVY:-chunk_gla_backward}: 10
#                                     # autotuners, 266 configs, one of 48; the forward
#                                     # chunk_gla: 5, 122; chunk_simple_gla: 3, 55);
#                                     # prints cases per target. Needs fla-core 0.6.0 and einops
#                                     # 0.8.2 as wheels under .whl/ (pure Python):
#                                     # pip download --no-deps -d .whl fla-core==0.6.0
#                                     #   einops==0.8.2
#                                     # installed here with pip --no-deps      ~8 min
#   bash bench/gpu_suite.sh costs     # per-case cost: the GPU tests of device references,
#                                     # compile ahead, forced autotuners and timeouts (-n 3),
#                                     # then bench/throughput.py --modes compiled --variants 32
#                                     # (per value variant against the bare loop, with the
#                                     # device's float64 references and the CPU's, and their
#                                     # parity counts) and bench/shadow_cost.py --modes compiled
#                                     # (carry .whl/: the autotuner test needs FlagGems)  ~9 min
#   bash bench/gpu_suite.sh ahead     # bench/compile_ahead.py: a compile-heavy campaign with
#                                     # compiling ahead off and on, fresh Triton caches (the
#                                     # built-in heavy target, then fla's chunk_gla forward and
#                                     # backward; carry .whl/)                     ~8 min
#   bash bench/gpu_suite.sh autotuned # bench/autotuned_targets.py: examples/fla, flaggems and
#                                     # liger compiled under one ${BUDGET:-5m} budget (every
#                                     # target >= 50 cases?), then fla's chunk_gla alone for
#                                     # ${HEAVY_BUDGET:-2m} (>= 100 cases?); carry .whl/  ~8 min
#   bash bench/gpu_suite.sh speed     # bench/compiled_speed.py on 8 Liger ops (carry .whl/):
#                                     # ${SPEED_CONFIGS:-before,variants}, ${SPEED_BUDGET:-200}
#                                     # s each, fresh Triton cache each; ~7 min
#   bash bench/gpu_suite.sh accuracy  # bench/accuracy.py --modes compiled: the oracle's
#                                     # correct kernels and small bugs, ${ACC_BUDGET:-120} s each,
#                                     # 8 at a time, judged by ${ACC_ORACLES:-shadow,outside}
#                                     # (the float64 shadow and the outside rules side by
#                                     # side); ACC_BUDGET=30: ~5 min
#   bash bench/gpu_suite.sh accuracy-both  # the same in mode both (interpreter and compiled
#                                     # in the same cases), ${ACC_BUDGET:-60} s each; ~5 min
#   bash bench/gpu_suite.sh timeouts  # compile time is not case time (tests/gpu/
#                                     # test_timeouts_gpu.py) and a cold-cache autotuned
#                                     # matmul run with --timeout 2, --budget 40s   ~2 min
#   bash bench/gpu_suite.sh attribution  # compiled attribution: tests/gpu/test_causes_gpu.py,
#                                     # test_compiled.py, test_fidelity_gpu.py, and compiled runs
#                                     # of examples/liger and examples/flaggems side by side
#                                     # (${BUDGET:-4m} each; carry .whl/ as for liger and
#                                     # flaggems)                                  ~6 min
#   BEFORE_DIR=before bash bench/gpu_suite.sh compare  # examples/liger and examples/flaggems
#                                     # compiled with an older tree and this one side by side
#                                     # (${BUDGET:-3m} each), and $COMPARE_TESTS    ~5 min
#   bash bench/gpu_suite.sh all       # tests, sanitize, bench, throughput, campaign, hygiene,
#                                     # fidelity
#                                     # (several calls' worth)
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
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
{
  date -Is
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "numpy", numpy.__version__)'
  echo "cpus $(nproc)"
} | tee "$out/machine-$what.txt"
rc=0
# the pure-Python libraries some GPU tests and benchmarks need, from their carried wheels
need_libs() {
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-deps .whl/*.whl >> "$out/pip.log" 2>&1 \
      || echo "could not install the carried wheels (see $out/pip.log)"
  fi
}
# one line per part: what passed, what failed, how long
result_line() {  # part, pytest log, seconds
  local counts
  counts=$(grep -Eo '[0-9]+ (passed|failed|error|errors|skipped)' "$2" | tr '\n' ' ')
  if grep -Eq '[0-9]+ (failed|error)' "$2" || ! grep -Eq '[0-9]+ passed' "$2"; then
    echo "gpu_suite $1: FAIL ($counts) in $3 s"
  else
    echo "gpu_suite $1: PASS ($counts) in $3 s"
  fi
}
# tests of the smoke part: seconds each; the ones left out take minutes (a sanitizer run, a
# debug-mode compile, a library's whole target file, a multi-GPU host)
SMOKE_SKIP="not sanitize and not overflow_assert and not liger_targets and not compiled_search"
if [[ $what == smoke || $what == tests || $what == all ]]; then
  need_libs
  part=$what; [[ $part == all ]] && part=tests
  select=(-k "not sanitize")
  [[ $part == smoke ]] && select=(-k "$SMOKE_SKIP" --ignore=tests/gpu/test_multi_gpu.py)
  start=$(date +%s)
  python3 -m pytest -m gpu tests/gpu "${select[@]}" -n "${TEST_JOBS:-4}" -rs -q \
    --durations=15 -p no:cacheprovider 2>&1 | tee "$out/gpu-$part.log"
  code=${PIPESTATUS[0]}
  rc=$((rc | code))
  result_line "$part" "$out/gpu-$part.log" "$(( $(date +%s) - start ))" | tee -a "$out/gpu-$part.log"
fi
if [[ $what == perf ]]; then
  need_libs
  start=$(date +%s)
  for lib in liger flaggems fla; do
    case $lib in liger) b=${LIGER_BUDGET:-7m};; flaggems) b=${GEMS_BUDGET:-5m};; fla) b=${FLA_BUDGET:-6m};; esac
    # --case-floor 0: the floor may add up to the budget again (a 7-minute run took over
    # 9.5 minutes on 2026-12-05 and the call ended before the table): throughput within
    # the budget is what this part measures
    python3 -m fuzzkern run "examples/$lib/" --modes compiled -j 1 --no-db --no-corpus \
      --compile-ahead "${AHEAD:-off}" --budget "$b" --seed 0 --case-floor 0 \
      --report "$out/perf-$lib.json" \
      > "$out/perf-$lib.log" 2>&1 &
  done
  wait
  python3 bench/perf_table.py "$out"/perf-liger.json "$out"/perf-flaggems.json \
    "$out"/perf-fla.json --out "$out/perf.json" 2>&1 | tee "$out/perf.txt"
  rc=$((rc | ${PIPESTATUS[0]}))
  echo "gpu_suite perf: done in $(( $(date +%s) - start )) s (table: $out/perf.txt)"
fi
if [[ $what == sanitize || $what == all ]]; then
  python3 -m pytest -m gpu tests/gpu -k sanitize -v -rs --durations=5 -p no:cacheprovider 2>&1 \
    | tee "$out/gpu-sanitize.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == bench || $what == all ]]; then
  python3 bench/run.py --modes interpret,compiled,both --no-throughput \
    --out "$out/run-gpu.json" --results-md "$out/RESULTS-gpu.md" 2>&1 | tee "$out/run.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == throughput || $what == all ]]; then
  for mode in ${THROUGHPUT_MODES:-interpret compiled}; do
    # compiled: also 32 value variants of each case, one by one and in batches
    python3 bench/throughput.py --modes $mode --cases 20 --fresh 2 \
      $([[ $mode == compiled ]] && echo --variants ${VARIANTS:-32}) \
      --out "$out/throughput-$mode.json" 2>&1 | tee "$out/throughput-$mode.log"
    rc=$((rc | ${PIPESTATUS[0]}))
  done
fi
if [[ $what == campaign || $what == all ]]; then
  # 7 built-in targets x 60 s each, interpreter and compiled, on one GPU
  python3 -m fuzzkern run -j 1 --modes interpret,compiled --budget 7m --seed 0 --no-db \
    --report "$out/campaign.json" 2>&1 | tee "$out/campaign.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == hygiene || $what == all ]]; then
  python3 bench/hygiene.py --mode compiled --out "$out/hygiene-compiled.json" 2>&1 \
    | tee "$out/hygiene-compiled.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == fidelity || $what == all ]]; then
  python3 bench/fidelity.py --compiled --out "$out/fidelity.json" 2>&1 | tee "$out/fidelity.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 bench/fidelity.py --table "$out/interpreter.md" --gpu-json "$out/fidelity.json"
fi
if [[ $what == liger ]]; then
  if ! python3 -c "import liger_kernel" 2>/dev/null; then
    python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl \
      || { echo "liger-kernel is missing: carry .whl/liger_kernel-0.8.5-py3-none-any.whl"; exit 2; }
  fi
  # the reproducers on the GPU (the test runs them on the CPU unless told otherwise)
  LIGER_REPRO_DEVICE=cuda python3 -m pytest tests/liger -v -rs -p no:cacheprovider 2>&1 \
    | tee "$out/liger-findings.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 -m fuzzkern run examples/liger/ -j "$((gpus > 0 ? gpus : 1))" \
    --modes interpret,compiled --budget "${BUDGET:-8m}" --seed 0 --no-db \
    --corpus "$out/liger-corpus" --report "$out/liger.json" 2>&1 | tee "$out/liger.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
# need_wheels import:wheel ...: each module that does not import is installed from its carried
# wheel (.whl/<wheel>-*.whl) with --no-deps
need_wheels() {
  for mod in "$@"; do
    if ! python3 -c "import ${mod%%:*}" 2>/dev/null; then
      whl=$(ls .whl/${mod#*:}-*.whl 2>/dev/null | head -1)
      python3 -m pip install -q --no-deps "${whl:-.whl/missing-${mod#*:}.whl}" \
        || { echo "${mod#*:} is missing: carry its wheel under .whl/ (see the header)"; exit 2; }
    fi
  done
}
need_flaggems() { need_wheels yaml:pyyaml packaging:packaging sqlalchemy:sqlalchemy flag_gems:flag_gems; }
need_fla() { need_wheels einops:einops fla:fla_core; }
if [[ $what == attribution ]]; then
  # Compiled attribution in one call: the planted causes, compiled mode's and the fidelity
  # tests, and compiled runs of examples/liger and examples/flaggems (${BUDGET:-4m} each), side
  # by side on one GPU (each finding with its cause: fuzzkern-limit, accuracy, ...)
  need_flaggems
  python3 -c "import liger_kernel" 2>/dev/null \
    || python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl
  python3 -m pytest -m gpu tests/gpu/test_causes_gpu.py tests/gpu/test_compiled.py \
    tests/gpu/test_library_caches_gpu.py ${ATTRIBUTION_TESTS:-tests/gpu/test_fidelity_gpu.py} \
    -v -rs -p no:cacheprovider -n "${TEST_JOBS:-3}" \
    > "$out/attribution-tests.log" 2>&1 &
  tests=$!
  for lib in liger flaggems; do
    python3 -m fuzzkern run "examples/$lib/" --modes compiled --budget "${BUDGET:-4m}" --seed 0 \
      --no-db --corpus "$out/$lib-corpus" --report "$out/$lib-compiled.json" \
      > "$out/$lib-compiled.log" 2>&1 &
  done
  wait "$tests"; rc=$((rc | $?))
  wait
  tail -n 40 "$out/attribution-tests.log" "$out/liger-compiled.log" "$out/flaggems-compiled.log"
fi
if [[ $what == compare ]]; then
  # Before/after on the same GPU in one call: examples/liger and examples/flaggems compiled
  # (${BUDGET:-3m} each) with the fuzzkern of $BEFORE_DIR (an older tree, e.g. `git archive
  # <commit> | tar -x -C before/`, carried as an untracked folder) and with this one, all four
  # side by side, plus $COMPARE_TESTS (pytest paths) with this one.
  need_flaggems
  python3 -c "import liger_kernel" 2>/dev/null \
    || python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl
  [[ -d ${BEFORE_DIR:-before} ]] || { echo "no BEFORE_DIR ${BEFORE_DIR:-before}"; exit 2; }
  if [[ -n ${COMPARE_TESTS:-} ]]; then
    python3 -m pytest -m gpu $COMPARE_TESTS -v -rs -p no:cacheprovider -n "${TEST_JOBS:-3}" \
      > "$out/compare-tests.log" 2>&1 &
  fi
  for lib in liger flaggems; do
    for side in before after; do
      root=$PWD; [[ $side == before ]] && root=$PWD/${BEFORE_DIR:-before}
      targets=$PWD/examples/$lib/; [[ $side == before && -d $root/examples/$lib ]] \
        && targets=$root/examples/$lib/
      (cd "$root" && PYTHONPATH=$root python3 -m fuzzkern run "$targets" --modes compiled \
        --budget "${BUDGET:-3m}" --seed 0 --no-db --corpus "$out/$side-$lib-corpus" \
        --report "$out/$side-$lib.json" > "$out/$side-$lib.log" 2>&1) &
    done
  done
  wait
  tail -n 5 "$out"/*-liger.log "$out"/*-flaggems.log
  [[ -f $out/compare-tests.log ]] && tail -n 30 "$out/compare-tests.log"
fi
if [[ $what == flaggems ]]; then
  need_flaggems
  python3 -m fuzzkern run examples/flaggems/ -j "$((gpus > 0 ? gpus : 1))" \
    --modes compiled --budget "${BUDGET:-5m}" --seed 0 --no-db \
    --corpus "$out/flaggems-corpus" --report "$out/flaggems.json" 2>&1 | tee "$out/flaggems.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == fla ]]; then
  need_fla
  python3 -m fuzzkern run examples/fla/ -j "$((gpus > 0 ? gpus : 1))" \
    --modes compiled --budget "${BUDGET:-5m}" --seed 0 --no-db \
    --corpus "$out/fla-corpus" --report "$out/fla.json" 2>&1 | tee "$out/fla.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 -m fuzzkern run "examples/fla/fla_targets.py::${FLA_HEAVY:-chunk_gla_backward}" -j 1 \
    --modes compiled --budget "${HEAVY_BUDGET:-2m}" --seed 0 --no-db \
    --corpus "$out/fla-corpus" --report "$out/fla-heavy.json" 2>&1 | tee "$out/fla-heavy.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 - "$out/fla.json" "$out/fla-heavy.json" <<'PY' 2>&1 | tee "$out/fla-cases.txt"
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    print(f"{path}: {r['elapsed_seconds']:.0f} s, budget {r['budget_seconds']:.0f} s")
    print(f"  {'target':40s} {'cases':>6s} {'status':10s} {'compiles':>8s} {'compile s':>9s}"
          "  autotuners found (configs)")
    for t in r["targets"]:
        found = t.get("discovered_autotuners") or {}
        print(f"  {t['target']:40s} {t['cases']:6d} {t['status']:10s} {t['compiles']:8d} "
              f"{t['compile_seconds']:9.1f}  {len(found)} ({sum(found.values())})")
    short = [t["target"] for t in r["targets"] if t["cases"] < 50]
    print(f"  targets under 50 cases: {len(short)} {short}")
PY
fi
if [[ $what == speed ]]; then
  # compiled-mode speed on a compile-heavy suite (8 Liger ops, forward and backward, with
  # known upstream bugs in 4): configurations side by side, each with a fresh Triton cache
  if ! python3 -c "import liger_kernel" 2>/dev/null; then
    python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl \
      || { echo "liger-kernel is missing: carry .whl/liger_kernel-0.8.5-py3-none-any.whl"; exit 2; }
  fi
  lt=examples/liger/liger_targets.py
  python3 bench/compiled_speed.py $lt::cross_entropy $lt::rope $lt::relu_squared $lt::tvd \
    $lt::layer_norm $lt::group_norm $lt::rms_norm $lt::geglu \
    --budget "${SPEED_BUDGET:-200}" --configs "${SPEED_CONFIGS:-before,variants}" \
    --out "$out/compiled-speed.json" 2>&1 | tee "$out/compiled-speed.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == accuracy ]]; then
  python3 bench/accuracy.py --modes compiled --budget-per-kernel "${ACC_BUDGET:-120}" \
    --oracles "${ACC_ORACLES:-shadow,outside}" \
    --jobs "${ACC_JOBS:-8}" --out "$out/accuracy-compiled.json" \
    --results-md "$out/ACCURACY-compiled.md" 2>&1 | tee "$out/accuracy-compiled.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == accuracy-both ]]; then
  python3 bench/accuracy.py --modes both --budget-per-kernel "${ACC_BUDGET:-60}" \
    --oracles "${ACC_ORACLES:-shadow,outside}" \
    --jobs "${ACC_JOBS:-8}" --out "$out/accuracy-both.json" \
    --results-md "$out/ACCURACY-both.md" 2>&1 | tee "$out/accuracy-both.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == timeouts ]]; then
  # compile time is not case time, and --budget is a hard stop, compiled on the GPU
  python3 -m pytest -m gpu tests/gpu/test_timeouts_gpu.py -v -rs -p no:cacheprovider 2>&1 \
    | tee "$out/timeouts-tests.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  # an autotuned matmul from a cold Triton cache with a 2 s timeout: every compile counts
  # against nothing, so no case may be a hang; then the wall clock of a 40 s budget
  start=$(date +%s)
  TRITON_CACHE_DIR=$(mktemp -d) python3 -m fuzzkern run fuzzkern.targets.builtin:matmul_autotuned \
    --modes interpret,compiled --timeout 2 --budget 40s --seed 0 --no-db --no-corpus -j 1 \
    --report "$out/timeouts.json" 2>&1 | tee "$out/timeouts.log"
  code=${PIPESTATUS[0]}
  wall=$(( $(date +%s) - start ))
  python3 - "$out/timeouts.json" "$code" "$wall" <<'PY' 2>&1 | tee -a "$out/timeouts.log"
import json, sys
r = json.load(open(sys.argv[1])); (t,) = r["targets"]
print("exit", sys.argv[2], "wall", sys.argv[3], "s; elapsed", r["elapsed_seconds"], "s; cases",
      t["cases"], "failures", t["failures"], "compiles", t["compiles"], "compile_seconds",
      t["compile_seconds"], "slow_cases", t["slow_cases"], "stopped", r["stopped_at_budget"])
assert "hang" not in t["failures"], t["failures"]
assert t["compiles"] > 0 and t["compile_seconds"] > 0
assert r["elapsed_seconds"] < 40 + 5, r["elapsed_seconds"]
PY
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == costs ]]; then
  need_flaggems
  python3 -c "import liger_kernel" 2>/dev/null \
    || python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl
  python3 -m pytest -m gpu tests/gpu/test_references_gpu.py tests/gpu/test_ahead_gpu.py \
    tests/gpu/test_autotuners_gpu.py tests/gpu/test_timeouts_gpu.py tests/gpu/test_variants_gpu.py \
    -v -rs -p no:cacheprovider -n 3 > "$out/costs-tests.log" 2>&1 &
  tests=$!
  python3 bench/throughput.py --modes compiled --variants 32 --cases 8 --fresh 1 \
    --out "$out/throughput-compiled-refs.json" 2>&1 | tee "$out/throughput-compiled-refs.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 bench/shadow_cost.py --modes compiled --cases 20 --rounds 3 \
    --out "$out/shadow-cost-compiled.json" 2>&1 | tee "$out/shadow-cost-compiled.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  wait "$tests"; rc=$((rc | $?))
  tail -n 40 "$out/costs-tests.log"
fi
if [[ $what == ahead ]]; then
  need_fla
  python3 bench/compile_ahead.py --budget 90 --out "$out/compile-ahead.json" 2>&1 \
    | tee "$out/compile-ahead.log"
  rc=$((rc | ${PIPESTATUS[0]}))
  python3 bench/compile_ahead.py examples/fla/fla_targets.py::chunk_gla \
    examples/fla/fla_targets.py::chunk_gla_backward --budget 150 --ahead 0,15 \
    --out "$out/compile-ahead-fla.json" 2>&1 | tee "$out/compile-ahead-fla.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == autotuned ]]; then
  need_fla; need_flaggems
  python3 -c "import liger_kernel" 2>/dev/null \
    || python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl
  python3 bench/autotuned_targets.py examples/fla examples/flaggems examples/liger \
    --budget "${BUDGET:-5m}" --modes compiled \
    --heavy "examples/fla/fla_targets.py::${FLA_HEAVY:-chunk_gla}" \
    --heavy-budget "${HEAVY_BUDGET:-2m}" --out "$out/autotuned-targets.json" 2>&1 \
    | tee "$out/autotuned-targets.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
if [[ $what == scaling ]]; then
  jobs=${JOBS:-$gpus}
  python3 bench/scaling.py --jobs "$jobs" --budget "${BUDGET:-5m}" \
    --out "$out/scaling-j$jobs.json" 2>&1 | tee "$out/scaling-j$jobs.log"
  rc=$((rc | ${PIPESTATUS[0]}))
fi
exit $rc
