#!/usr/bin/env bash
# Session 25's fifth device call: arl_norm_rope_kv_cache_write rewritten as a one-warp block a
# head (call 4's block a token made Qwen3's decode 0.991x the separate calls). Library
# .dev/s25c.so.xz (sm_90, this tree) against .dev/s25.so.xz (no such entry: the separate calls)
# and .dev/s25b.so.xz (call 4's block a token); carry [".dev"]. About 2 minutes on an H100.
#   - its op cases and the Qwen3/Llama cached-decode cases against the CPU library;
#   - batch-1 decode of Qwen3-0.6B's and Llama-3.2-1B's shapes in alternating processes.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in s25 s25b s25c; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
grep -q arl_norm_rope_kv_cache_write /tmp/s25c.so || { echo "stale .dev/s25c.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s25c.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="normRope|ropeKv|Qwen3|Llama" timeout 90 $D run -A \
  bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)|skipped" "$OUT/ops.log" | head -5
for m in qwen3_0_6b llama3_2_1b; do
  timeout 100 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m \
    --variant s25:AGENTRL_KERNELS_CUDA=/tmp/s25.so --variant s25b:AGENTRL_KERNELS_CUDA=/tmp/s25b.so \
    --variant s25c: > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -4 "$OUT/ab_$m.log"
done
for m in qwen3_0_6b llama3_2_1b; do
  timeout 60 $D run -A bench/gpu/bench.ts --decode-only --model $m > "$OUT/decode_$m.log" 2>&1
  grep -E "batch 1:|fraction" "$OUT/decode_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
