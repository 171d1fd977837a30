#!/usr/bin/env bash
# The GPU check of the array-API backend (docs/backends.md), on a machine with CuPy, PyTorch
# and a CUDA device, run from tapeflow's source tree:
#   1. the op table on the CuPy backend against the NumPy backend
#      (tests/ops/test_array_api_table.py with TAPEFLOW_TEST_ARRAY_API=cupy);
#   2. bench/gpu.py: W3, W2, W6 eager and traced on CuPy against PyTorch on the same GPU.
# Nothing is downloaded. Wheels in .whl_gpu/ (array-api-compat; scipy and ml_dtypes when the
# machine lacks them) are unpacked into a temporary folder put on PYTHONPATH. Every step
# runs under `timeout`, so the script cannot hang; logs go to $OUT (or ./gpu_check_logs).
#
# Usage: bash tools/gpu_check.sh
# Environment: TEST_LIMIT (seconds, default 230), BENCH_LIMIT (default 200),
#              WORKERS (pytest-xdist workers for step 1, default 6), PYTHON (default python3)
set -u
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
LOGS=${OUT:-$PWD/gpu_check_logs}
mkdir -p "$LOGS"
TEST_LIMIT=${TEST_LIMIT:-230}
BENCH_LIMIT=${BENCH_LIMIT:-200}
WORKERS=${WORKERS:-6}
SITE=$(mktemp -d)
trap 'rm -rf "$SITE"' EXIT

# --- wheels the machine lacks, unpacked (no pip, no network): a module already importable
# there is kept (its build matches the machine's NumPy)
for wheel in .whl_gpu/*.whl; do
    [ -e "$wheel" ] || continue
    module=$(basename "$wheel" | cut -d- -f1)
    if ! "$PYTHON" -c "import $module" 2>/dev/null; then
        "$PYTHON" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
            "$wheel" "$SITE" && echo "unpacked $(basename "$wheel")"
    fi
done
export PYTHONPATH="$PWD/src:$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1 OPENBLAS_NUM_THREADS=1

{
    date -u
    nvidia-smi -L 2>&1 | head -4
    timeout 60 "$PYTHON" - <<'EOF'
import sys, numpy, cupy, torch, array_api_compat, scipy, ml_dtypes
print("python", sys.version.split()[0], "numpy", numpy.__version__, "cupy", cupy.__version__,
      "torch", torch.__version__, "array_api_compat", array_api_compat.__version__,
      "scipy", scipy.__version__)
print("CUDA devices (CuPy):", cupy.cuda.runtime.getDeviceCount(),
      "torch.cuda:", torch.cuda.is_available())
import tapeflow as tf
print("backends:", tf.backend_names(), "default:", tf.get_backend(),
      "GPUs:", tf.config.list_physical_devices("GPU"))
x = tf.constant([1.0, 2.0])
print("smoke:", (x * 2.0).numpy(), type(x._native))
EOF
} 2>&1 | tee "$LOGS/env.log"
env_status=${PIPESTATUS[0]}

echo "== 1. op table on CuPy (limit ${TEST_LIMIT}s)" | tee "$LOGS/op_table.log"
TAPEFLOW_TEST_ARRAY_API=cupy timeout -k 10 "$TEST_LIMIT" "$PYTHON" -m pytest -q -rfE \
    -p no:cacheprovider -n "$WORKERS" --durations=10 tests/ops/test_array_api_table.py \
    2>&1 | tee -a "$LOGS/op_table.log" | tail -60
table_status=${PIPESTATUS[0]}
echo "op table exit status: $table_status (124: the time limit)" | tee -a "$LOGS/op_table.log"

echo "== 2. bench/gpu.py (limit ${BENCH_LIMIT}s)" | tee "$LOGS/bench.log"
timeout -k 10 "$BENCH_LIMIT" "$PYTHON" bench/gpu.py --json "$LOGS/gpu_bench.json" \
    2>&1 | tee -a "$LOGS/bench.log"
bench_status=${PIPESTATUS[0]}
echo "bench exit status: $bench_status" | tee -a "$LOGS/bench.log"
echo "logs in $LOGS"
[ "$table_status" = 0 ] && [ "$bench_status" = 0 ]
