#!/usr/bin/env bash
# The GPU check of the cupy executor and its fused kernels (issue 14), for a session lent the device.
#
#   1. here, once (needs the package registry; the device has none):
#        bash benchmarks/gpu_check.sh prepare
#      downloads the wheels the device image lacks (array-api-compat, optree; cp312) into .whl/,
#      which .git/info/exclude keeps out of git.
#   2. on the device, one call (about 6-8 minutes; the lease is 15 minutes in all):
#        run(command="bash benchmarks/gpu_check.sh run", carry=[".whl"], timeout_s=560)
#      runs, each step under its own timeout, writing to $OUT (what comes back):
#        gpu.txt        nvidia-smi, versions, whether the cupy executor is available
#        tests.log/.xml tests/executors/test_cupy.py and test_cupy_fusion.py on the GPU (NVRTC kernels)
#        conformance/   python -m conformance --quick on numpy and cupy (eager and jit): .json and .html
#        cupy_gpu.json  benchmarks/bench_cupy.py --quick: cupy jit vs cupy eager vs CuPy vs jax.jit on the GPU
#   3. here: copy cupy_gpu.json to benchmarks/results/ (and the conformance JSON where useful), commit.
set -u
MODE=${1:-run}
cd "$(dirname "$0")/.."

if [ "$MODE" = prepare ]; then
    exclude=$(git rev-parse --git-path info/exclude)
    grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >> "$exclude"
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
        "array-api-compat==1.16.0" "optree==0.18.0"
    ls -la .whl
    exit 0
fi
[ "$MODE" = run ] || { echo "usage: $0 prepare|run"; exit 2; }

OUT=${OUT:-/tmp/gpu_check_out}
mkdir -p "$OUT/conformance"
PY=python3
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 ARRAYX_NUMBA_CACHE_DIR=/tmp/arrayx-nbcache

{
    nvidia-smi -L
    $PY -c "import sys, numpy, cupy, jax; print(sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'jax', jax.__version__, jax.devices())"
    $PY -c "import arrayx; ex = arrayx.executors.get('cupy'); print('cupy executor available:', ex.available(), ex.unavailable_reason or '')"
} > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

echo "== tests (cupy executor, fused kernels)"
timeout 240 $PY -m pytest -q -p no:cacheprovider -rs --junitxml="$OUT/tests.xml" \
    tests/executors/test_cupy.py tests/executors/test_cupy_fusion.py > "$OUT/tests.log" 2>&1
echo "pytest exit $?"; tail -15 "$OUT/tests.log"

echo "== conformance --quick (numpy, cupy; eager and jit)"
timeout 150 $PY -m conformance --quick --executors numpy,cupy --transforms eager,jit --no-progress \
    --output "$OUT/conformance" > "$OUT/conformance/log.txt" 2>&1
echo "conformance exit $?"; tail -8 "$OUT/conformance/log.txt"

echo "== bench_cupy --quick"
timeout 120 $PY benchmarks/bench_cupy.py --quick --output "$OUT/cupy_gpu.json"
echo "bench exit $?"
