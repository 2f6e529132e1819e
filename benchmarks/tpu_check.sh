#!/usr/bin/env bash
# arrayx on a TPU (issue 41): the probe of what XLA:TPU refuses or aborts on, the jax test tier,
# the differential table, the official array-api-tests and the TPU benchmark, with the chip as the
# jax executor's default device.  For a session lent the device tool (one TPU v5e, JAX preinstalled,
# no numba/dask, no network; one program at a time holds the chip, so every step runs alone).
#
#   1. here, once (needs the package registry and the search tool's fetch; the device has neither):
#        bash benchmarks/tpu_check.sh prepare [/path/to/array-api-tests]
#      downloads the wheels the TPU image lacks (array-api-compat, optree, pytest-json-report,
#      pytest-metadata, ndindex; cp311) into .whl-tpu/, copies the official suite (its tests and the
#      spec files it reads, no .git) into .official/ and a snapshot of the committed tree (git archive
#      HEAD) into .tpu_tree/; .git/info/exclude keeps all three out of git.  Run it again after a commit:
#      the device runs the snapshot, not the working tree (other work in progress stays here).
#   2. on the device, one call per step group (each call's command under 10 minutes):
#        run(command="bash benchmarks/tpu_check.sh probe", carry=[".whl-tpu", ".tpu_tree"], timeout_s=590)
#        run(command="bash benchmarks/tpu_check.sh run", carry=[".whl-tpu", ".tpu_tree", ".official"], timeout_s=590)
#      `probe` writes tpu_probe.json (python -m conformance.tpu_probe: every case in a child process
#      that may die); `run` writes tpu.txt (versions, devices), tests_chip.log and tests.log (the
#      chip's own tests, then tests -m jax on the chip), differential.txt (python -m conformance.report
#      on numpy and jax), official-jax-tpu.json (python -m conformance.official --label tpu),
#      tpu_bench.json (benchmarks/bench_tpu.py) and tpu_defaults.json (benchmarks/bench_tpu_defaults.py);
#      the device returns at most 8 files a call, so split STEPS over calls (e.g. "env tests main
#      differential bench", then "official").
#      STEPS="tests official" limits `run` to some of: env tests main probe differential official bench cnn hang linalg one
#      (official: OFFICIAL_ARGS are passed to pytest, e.g. --deselect ID; OFFICIAL_PART=K/N runs the K-th
#      share of the suite's files, one call per share, folded here with `python -m conformance.official
#      --executor jax --label tpu --merge N`; a test past FAULT_S seconds prints
#      Python's stacks; hang: python -m conformance.tpu_hang_probe, tpu_hang_probe.json; one: ONE_TEST=ID
#      alone with every drawn example printed, one_test.log; linalg: python -m conformance.tpu_linalg_accuracy,
#      tpu_linalg_accuracy.json)
#      (cnn: bench_tpu's CNN rows alone with a long row limit, tpu_bench_cnn.json: a call of its own;
#      CNN_VARIANTS=1 adds arrayx's step with XLA's convolution for the kernel gradient; bench:
#      BENCH_SKIP=cnn leaves the CNN rows to that call, DEFAULTS_S=0 leaves out bench_tpu_defaults)
#      (probe: the hand-picked examples in crash-proof children, 32-bit and 64-bit under emulate;
#      main: python -m arrayx; differential: python -m conformance.report, one process).
#   3. here: copy what came back to conformance/results/ (tpu_probe.json, official-jax-tpu.json,
#      parity-tpu.json) and benchmarks/results/ (tpu_bench.json), and commit.
set -u
MODE=${1:-run}
cd "$(dirname "$0")/.."
ROOT=$PWD

if [ "$MODE" = prepare ]; then
    SUITE=${2:-/work/official/array-api-tests}
    exclude=$(git rev-parse --git-path info/exclude)
    for d in /.whl-tpu/ /.official/ /.tpu_tree/; do
        grep -qx "$d" "$exclude" 2>/dev/null || echo "$d" >> "$exclude"
    done
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl-tpu \
        "array-api-compat==1.16.0" "optree==0.18.0" "pytest-json-report==1.5.0" "pytest-metadata==3.1.1" \
        "ndindex==1.10.1"
    if [ -d "$SUITE/array_api_tests" ]; then
        rm -rf .official && mkdir -p .official/array-api
        cp -r "$SUITE/array_api_tests" "$SUITE/conftest.py" "$SUITE/pytest.ini" "$SUITE/reporting.py" .official/
        cp -r "$SUITE/array-api/src" "$SUITE/array-api/spec" .official/array-api/
    else
        echo "no array-api-tests at $SUITE: the official step will be skipped on the device"
    fi
    rm -rf .tpu_tree && mkdir .tpu_tree && git archive HEAD | tar -x -C .tpu_tree
    du -sh .whl-tpu .official .tpu_tree 2>/dev/null
    exit 0
fi
case "$MODE" in probe|run) ;; *) echo "usage: $0 prepare|probe|run"; exit 2 ;; esac

OUT=${OUT:-/tmp/tpu_check_out}
mkdir -p "$OUT"
if ls .whl-tpu/*.whl >/dev/null 2>&1; then
    PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
        --no-cache-dir --upgrade --target /tmp/site .whl-tpu/*.whl || exit 1
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site
fi
TREE=$ROOT
[ -d .tpu_tree/arrayx ] && TREE=$ROOT/.tpu_tree
cd "$TREE"
export PYTHONPATH=$TREE:$PYTHONPATH PYTHONUNBUFFERED=1 ARRAYX_JAX_CACHE_DIR=/tmp/arrayx-jax-cache
unset JAX_PLATFORMS  # the chip is the jax executor's default device
PY=python3

if [ "$MODE" = probe ]; then
    $PY -c "import jax, arrayx; print('jax', jax.__version__, jax.devices()); print(arrayx.executors())" 2>&1 | tail -3
    $PY -m conformance.tpu_probe --budget "${BUDGET:-450}" --json "$OUT/tpu_probe.json" 2>&1 | tail -40
    exit 0
fi

STEPS=${STEPS:-env tests main probe bench official}
for step in $STEPS; do
    case $step in
    env)
        { $PY -c "import sys, numpy, jax; print(sys.version.split()[0], 'numpy', numpy.__version__, 'jax', jax.__version__, jax.devices())"
          $PY -c "import arrayx; info = arrayx.__array_namespace_info__(); print(info.devices()); chip = [d for d in info.devices() if 'tpu' in str(d)][0]; print('defaults on', chip, info.default_dtypes(device=chip))"
          # numpy_rules' round_large correction: does plain jnp.round give large integral floats back here?
          $PY -c "
import numpy as np, jax, jax.numpy as jnp
for dt in (np.float32, jnp.bfloat16):
    x = np.array([2.0**23, 2.0**23 + 1, 2.0**24 + 2, 355269935104.0, -3.0e38, 1.5e30, 2.5, -0.5, 8388607.5], dtype=dt)
    want = np.round(x.astype(np.float64)).astype(dt)
    for how, f in (('eager', jnp.round), ('jit', jax.jit(jnp.round))):
        got = np.asarray(f(jnp.asarray(x)))
        bad = [(float(a), float(b)) for a, b, c in zip(x, got, want) if float(b) != float(c)]
        print('round_large check', np.dtype(dt).name, how, 'jnp.round == numpy' if not bad else f'DIFFERS at {bad}')
"
        } > "$OUT/tpu.txt" 2>&1; cat "$OUT/tpu.txt" ;;
    tests)
        echo "== the chip's own tests (tests/executors/test_tpu_chip.py), then -m jax tests with the chip as default"
        timeout 180 $PY -m pytest -q -p no:cacheprovider -rs tests/executors/test_tpu_chip.py \
            tests/executors/test_jax_precision.py tests/executors/test_jax_numpy_rules.py > "$OUT/tests_chip.log" 2>&1
        echo "pytest exit $?"; tail -8 "$OUT/tests_chip.log"
        timeout "${TESTS_S:-150}" $PY -m pytest -q -p no:cacheprovider -m jax --maxfail=200 \
            --junitxml=/tmp/tests.xml ${TEST_PATHS:-tests/executors/test_jax.py tests/transforms/test_jit.py tests/api/test_extension_dtypes.py} \
            > "$OUT/tests.log" 2>&1
        echo "pytest exit $?"; tail -6 "$OUT/tests.log" ;;
    main)
        echo "== python -m arrayx on the chip"
        timeout 150 $PY -m arrayx --executor jax > "$OUT/main_job.txt" 2>&1
        echo "main exit $?"; cat "$OUT/main_job.txt" ;;
    probe)
        echo "== the table's hand-picked examples on the chip, 32-bit and as they are (emulate), highest precision"
        # PROBE_ONLY: the groups (examples32,examples,linalg64,sweep); PROBE_FROM: the case id to start at
        ARRAYX_TPU_64BIT=emulate ARRAYX_MATMUL_PRECISION=highest timeout "${PROBE_S:-300}" $PY -m conformance.tpu_probe \
            --only "${PROBE_ONLY:-examples32,examples}" ${PROBE_FROM:+--from "$PROBE_FROM"} --budget "${PROBE_BUDGET:-280}" \
            --json "$OUT/tpu_probe_final.json" 2>&1 | tail -25 ;;
    differential)
        echo "== differential table (hand-picked examples) on numpy and jax"
        timeout "${DIFF_S:-150}" $PY -m conformance.report --executors numpy,jax --json "$OUT/parity-tpu.json" \
            > "$OUT/differential.txt" 2>&1
        echo "report exit $?"; tail -15 "$OUT/differential.txt" ;;
    official)
        if [ -d "$ROOT/.official/array_api_tests" ]; then
            echo "== official array-api-tests on the jax executor (the chip)"
            timeout "${OFFICIAL_S:-280}" $PY -m conformance.official --suite "$ROOT/.official" --executor jax \
                --label tpu --skip-dtypes float64,complex128,int64,uint64 -n 0 --max-examples "${MAX_EXAMPLES:-20}" \
                --no-shrink ${OFFICIAL_PART:+--part "$OFFICIAL_PART"} \
                -- -o faulthandler_timeout="${FAULT_S:-90}" ${OFFICIAL_ARGS:-} > "$OUT/official.log" 2>&1
            echo "official exit $?"; tail -15 "$OUT/official.log"
            cp conformance/results/official-jax-tpu*.json "$OUT/" 2>/dev/null
        fi ;;
    hang)
        echo "== linear algebra on NaN, infinities, huge, subnormal, zero and empty inputs, each case in a child with a limit"
        timeout "${HANG_S:-200}" $PY -m conformance.tpu_hang_probe --limit "${HANG_LIMIT:-25}" --budget "${HANG_BUDGET:-180}" \
            ${HANG_ONLY:+--only "$HANG_ONLY"} --json "$OUT/tpu_hang_probe.json" 2>&1 | tail -30 ;;
    linalg)
        # LINALG_DTYPES=float64,complex128: the 64-bit types instead, emulated (ARRAYX_TPU_64BIT=emulate)
        echo "== linalg at extreme magnitudes against LAPACK in the same dtype (highest matmul precision) ${LINALG_DTYPES:-}"
        ARRAYX_MATMUL_PRECISION=highest timeout "${LINALG_S:-200}" env ${LINALG_DTYPES:+ARRAYX_TPU_64BIT=emulate} \
            $PY -m conformance.tpu_linalg_accuracy ${LINALG_DTYPES:+--dtypes "$LINALG_DTYPES"} \
            --json "$OUT/tpu_linalg_accuracy${LINALG_DTYPES:+_64}.json" 2>&1 | tail -30 ;;
    one)
        # one official test alone, each drawn example printed before it runs, Python's stacks after FAULT_S
        echo "== official $ONE_TEST, verbose"
        (cd "$ROOT/.official" && ARRAY_API_TESTS_MODULE=arrayx ARRAYX_EXECUTOR=jax \
            ARRAY_API_TESTS_SKIP_DTYPES=float64,complex128,int64,uint64 timeout "${ONE_S:-120}" $PY -m pytest -q -s \
            -p no:cacheprovider "$ONE_TEST" --max-examples="${MAX_EXAMPLES:-20}" --disable-deadline \
            --hypothesis-verbosity=verbose -o faulthandler_timeout="${FAULT_S:-40}" > "$OUT/one_test.log" 2>&1
         echo "exit $?")
        tail -c 6000 "$OUT/one_test.log" ;;
    bench)
        echo "== bench_tpu"
        timeout "${BENCH_S:-240}" $PY benchmarks/bench_tpu.py ${BENCH_SKIP:+--skip "$BENCH_SKIP"} \
            --output "$OUT/tpu_bench.json" 2>&1 | tail -30
        [ -n "${DEFAULTS_S:-}" ] && [ "$DEFAULTS_S" = 0 ] && continue
        echo "== bench_tpu_defaults (the default-dtype MLP, each side in its own process)"
        timeout "${DEFAULTS_S:-120}" $PY benchmarks/bench_tpu_defaults.py --output "$OUT/tpu_defaults.json" 2>&1 | tail -12 ;;
    cnn)
        # the CNN rows alone, with room for XLA:TPU's compile of JAX's side (minutes at batch 256:
        # the kernel gradient's wide-window convolution; benchmarks/tpu_aot.py measures it on a CPU)
        echo "== bench_tpu --only cnn"
        # (CNN_VARIANTS=1: also arrayx's step with XLA's convolution for the kernel gradient, JAX's form)
        timeout "${CNN_S:-560}" $PY benchmarks/bench_tpu.py --only cnn --row-timeout "${CNN_ROW_S:-270}" \
            ${CNN_VARIANTS:+--cnn-variants} --output "$OUT/tpu_bench_cnn.json" 2>&1 | tail -20 ;;
    esac
done
