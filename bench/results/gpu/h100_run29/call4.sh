#!/usr/bin/env bash
# Session 29's fourth device call: kernels 3 and 4 of the decode chain as one kernel
# (AGENTRL_CUDA_DECODE_MLP_FUSED=1: x's sums as int64 fixed point, the last block writes x), an
# experiment, off by default. Library .dev/s29d.so.xz (sm_90, this tree); carry [".dev"]; about 2
# minutes on an H100; run with timeout_s 200. Logs go to $OUT.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s29d.so.xz > /tmp/s29d.so
grep -q AGENTRL_CUDA_DECODE_MLP_FUSED /tmp/s29d.so || { echo "stale .dev/s29d.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s29d.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_CUDA_DECODE_MLP_FUSED=1 AGENTRL_OPS_ONLY="decodeLayer|normRope|decode with graphs" \
  timeout 60 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops_fused.log" 2>&1
echo "ops fused rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops_fused.log")"
grep -E " FAIL( |$)" "$OUT/ops_fused.log" | head -5
for m in qwen2_5_0_5b qwen3_0_6b; do
  timeout 60 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m --variant default: \
    --variant fused:AGENTRL_CUDA_DECODE_MLP_FUSED=1 > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_$m.log"
done
AGENTRL_CUDA_DECODE_MLP_FUSED=1 timeout 30 $D run -A bench/gpu/bench.ts --decode-only \
  > "$OUT/decode_fused.log" 2>&1
echo "== fused qwen2_5_0_5b ($((SECONDS - T0)) s)"
grep -E "batch 1:|fraction" "$OUT/decode_fused.log"
echo "== done ($((SECONDS - T0)) s)"
