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

summary=()
row() { summary+=("$(printf '%-12s %-52s %-22s %-10s %s' "$1" "$2" "$3" "$4" "$5")"); }

# 1. build
if timeout 300 "$DENO" run -A kernels/build.ts >"$OUT/build.log" 2>&1; then
  row build "libagentrl_cpu.so, libagentrl_cuda.so" built - ok
else
  row build "see $OUT/build.log" failed - FAIL
  cat "$OUT/build.log"
fi

# 2. every op: CUDA vs CPU
timeout 300 "$DENO" run -A bench/gpu/ops_compare.ts >"$OUT/ops.log" 2>&1
rc=$?
line=$(grep -E '^[0-9]+ of [0-9]+ outputs' "$OUT/ops.log" | tail -1)
row ops "CUDA vs CPU, every op (bench/gpu/ops_compare.ts)" "${line%% outputs*}" "all" \
  "$([ $rc = 0 ] && echo ok || echo FAIL)"
[ $rc = 0 ] || grep -v ' ok ' "$OUT/ops.log" | tail -40

# 3. the model vs Hugging Face transformers
REF="$OUT/hf_ref"
rm -rf "$REF"
if timeout 300 python3 bench/gpu/hf_reference.py "$REF" >"$OUT/hf_reference.log" 2>&1; then
  timeout 300 "$DENO" run -A bench/gpu/reference.ts "$REF" --device cuda --json "$OUT/reference.json" \
    >"$OUT/reference.log" 2>&1
  rc=$?
  cat "$OUT/reference.log"
  while IFS=$'\t' read -r what err ok; do row reference "$what" "$err" "<= tol" "$ok"; done < <(
    python3 -c 'import json,sys
for r in json.load(open(sys.argv[1])):
    print(f"{r[\"what\"][:52]}\trel err {r[\"relErr\"]:.1e}\t{\"ok\" if r[\"ok\"] else \"FAIL\"}")' \
      "$OUT/reference.json" 2>/dev/null)
  [ -s "$OUT/reference.json" ] || row reference "see $OUT/reference.log" "rc $rc" - FAIL
else
  row reference "hf_reference.py failed: see $OUT/hf_reference.log" - - FAIL
  tail -20 "$OUT/hf_reference.log"
fi

# 4. benchmark against PyTorch eager
if timeout 400 python3 bench/gpu/torch_bench.py "$OUT/torch.json" >"$OUT/torch.log" 2>&1; then
  for mode in tf32 bf16; do
    AGENTRL_CUDA_MATMUL=$mode timeout 400 "$DENO" run -A bench/gpu/bench.ts --torch "$OUT/torch.json" \
      --json "$OUT/bench_$mode.json" >"$OUT/bench_$mode.log" 2>&1
    cat "$OUT/bench_$mode.log"
    while IFS=$'\t' read -r what val target ok; do row "bench $mode" "$what" "$val" "$target" "$ok"; done < <(
      python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); o, t = d["ours"], d["torch"]
for name, ours, base in [("training tokens/s vs PyTorch eager", o["trainTokensS"], t["train_tokens_s"]),
                         ("log-prob forward tokens/s vs PyTorch eager", o["logprobTokensS"], t["logprob_tokens_s"]),
                         ("decode tokens/s, batch 32, vs PyTorch eager", o["decodeTokensS"], t["decode_tokens_s"]),
                         ("decode tokens/s, batch 1, vs PyTorch eager", o["decode1TokensS"], t["decode1_tokens_s"])]:
    r = ours / base
    print(f"{name}\t{r:.2f}x ({ours:.0f}/{base:.0f})\t>= 1.0\t{\"ok\" if r >= 1 else \"below\"}")
f = o["decode1BwFraction"]
print(f"decode batch 1, fraction of the bandwidth bound\t{f:.2f}\t>= 0.6\t{\"ok\" if f >= 0.6 else \"below\"}")' \
        "$OUT/bench_$mode.json" 2>/dev/null)
    [ -s "$OUT/bench_$mode.json" ] || row "bench $mode" "see $OUT/bench_$mode.log" - - FAIL
  done
else
  row bench "torch_bench.py failed: see $OUT/torch.log" - - FAIL
  tail -20 "$OUT/torch.log"
fi

echo
echo "agentrl GPU check ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
printf '%-12s %-52s %-22s %-10s %s\n' part metric value target ok
printf '%s\n' "${summary[@]}"
