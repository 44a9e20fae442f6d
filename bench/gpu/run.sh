#!/usr/bin/env bash
# The GPU check in one command, on a machine with an NVIDIA GPU, nvcc, and
# python3 with torch + transformers (no network needed):
#   DENO=/path/to/deno bash bench/gpu/run.sh
# It builds the kernels, compares every CUDA op with the CPU backend, compares
# the model with Hugging Face transformers, benchmarks against PyTorch eager,
# and prints one summary table. Logs go to $OUT (default /tmp/agentrl_gpu).
set -u
cd "$(dirname "$0")/../.."
DENO=${DENO:-deno}
OUT=${OUT:-/tmp/agentrl_gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 DENO_NO_UPDATE_CHECK=1 NO_COLOR=1
if [ -z "${AGENTRL_CUBLAS:-}" ] && ! ldconfig -p | grep -q 'libcublas.so.1[23] '; then
  AGENTRL_CUBLAS=$(find /usr/local /opt /usr/lib -name 'libcublas.so.1[23]' 2>/dev/null | head -1)
  export AGENTRL_CUBLAS
fi
echo "cuBLAS: ${AGENTRL_CUBLAS:-found by the loader}"
nvidia-smi -L 2>&1 | head -2

# 1. build
if timeout 300 "$DENO" run -A kernels/build.ts >"$OUT/build.log" 2>&1; then
  echo -n built >"$OUT/build.status"
else
  echo -n failed >"$OUT/build.status"
  cat "$OUT/build.log"
fi

# 2. every op: CUDA vs CPU
timeout 300 "$DENO" run -A bench/gpu/ops_compare.ts >"$OUT/ops.log" 2>&1 || grep -v ' ok ' "$OUT/ops.log" | tail -40

# 3. the model vs Hugging Face transformers (on the GPU, and our CPU backend too)
REF="$OUT/hf_ref"
rm -rf "$REF"
if timeout 300 python3 bench/gpu/hf_reference.py "$REF" >"$OUT/hf_reference.log" 2>&1; then
  for device in cuda cpu; do
    timeout 300 "$DENO" run -A bench/gpu/reference.ts "$REF" --device $device \
      --json "$OUT/reference_$device.json" >"$OUT/reference_$device.log" 2>&1
    cat "$OUT/reference_$device.log"
  done
else
  tail -20 "$OUT/hf_reference.log"
fi

# 4. benchmark against PyTorch eager (BENCH_MODES: AGENTRL_CUDA_MATMUL values, default tf32)
if timeout 400 python3 bench/gpu/torch_bench.py "$OUT/torch.json" >"$OUT/torch.log" 2>&1; then
  for mode in ${BENCH_MODES:-tf32}; do
    AGENTRL_CUDA_MATMUL=$mode timeout 400 "$DENO" run -A bench/gpu/bench.ts --torch "$OUT/torch.json" \
      --json "$OUT/bench_$mode.json" >"$OUT/bench_$mode.log" 2>&1
    cat "$OUT/bench_$mode.log"
  done
else
  tail -20 "$OUT/torch.log"
fi

echo
echo "agentrl GPU check ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
python3 bench/gpu/summary.py "$OUT"
