#!/usr/bin/env bash
# Session 29's second device call: the decode chain for MLPs wider than a block an SM holds
# (kernels 3 and 4 in waves). Call 1 found Llama-3.2-1B's chained layer 0.83x the separate calls.
# Library .dev/s29b.so.xz (sm_90, this tree): by default such a layer now takes the separate calls
# (AGENTRL_CUDA_DECODE_MLP_PER_SM=1); `waves` brings the chain in waves back (=4, as before);
# `apart` is the model's separate calls (AGENTRL_DECODE_LAYER=0). carry [".dev"]; about 4 minutes
# on an H100; run with timeout_s 330. Logs go to $OUT.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s29b.so.xz > /tmp/s29b.so
grep -q AGENTRL_CUDA_DECODE_MLP_PER_SM /tmp/s29b.so || { echo "stale .dev/s29b.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s29b.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
# the decode layer's cases against the CPU, by default and in waves
for v in 1 4; do
  AGENTRL_CUDA_DECODE_MLP_PER_SM=$v AGENTRL_OPS_ONLY="decodeLayer|normRope|decode with graphs" \
    timeout 60 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops_$v.log" 2>&1
  echo "ops per_sm=$v rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops_$v.log")"
  grep -E " FAIL( |$)" "$OUT/ops_$v.log" | head -5
done
for m in llama3_2_1b qwen2_5_1_5b qwen2_5_3b; do
  timeout 75 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m --variant default: \
    --variant waves:AGENTRL_CUDA_DECODE_MLP_PER_SM=4 --variant apart:AGENTRL_DECODE_LAYER=0 \
    > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -4 "$OUT/ab_$m.log"
done
for m in llama3_2_1b qwen2_5_1_5b qwen2_5_3b; do
  timeout 40 $D run -A bench/gpu/bench.ts --decode-only --model $m > "$OUT/decode_$m.log" 2>&1
  echo "== $m ($((SECONDS - T0)) s)"
  grep -E "batch 1:|fraction" "$OUT/decode_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
