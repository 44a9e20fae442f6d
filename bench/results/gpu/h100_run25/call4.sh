#!/usr/bin/env bash
# Session 25's fourth device call: arl_norm_rope_kv_cache_write (Qwen3's q/k norms and a scaled
# RoPE's table with RoPE and the cache write, one kernel). Library .dev/s25b.so.xz (sm_90, this
# tree) against .dev/s25.so.xz (call 2's: no such entry, so the model takes the separate calls);
# carry [".dev"]. About 3 minutes on an H100. Logs go to $OUT.
#   - its op cases and the Qwen3/Llama cached-decode cases against the CPU library;
#   - batch-1 decode of Qwen3-0.6B's and Llama-3.2-1B's shapes, s25 against s25b in alternating
#     processes (decode_ab --model);
#   - the whole benchmark for Qwen3-0.6B's shape with s25b (batch 32 included).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in s25 s25b; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
grep -q arl_norm_rope_kv_cache_write /tmp/s25b.so || { echo "stale .dev/s25b.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s25b.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="normRope|ropeKv|Qwen3|Llama|decodeLayer" timeout 90 $D run -A \
  bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)|skipped" "$OUT/ops.log" | head -5
for m in qwen3_0_6b llama3_2_1b; do
  timeout 100 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m \
    --variant s25:AGENTRL_KERNELS_CUDA=/tmp/s25.so --variant s25b: > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_$m.log"
done
timeout 60 $D run -A bench/gpu/bench.ts --decode-only --model qwen3_0_6b > "$OUT/decode_qwen3.log" 2>&1
grep -E "batch 1:|fraction" "$OUT/decode_qwen3.log"
timeout 90 $D run -A bench/gpu/bench.ts --model qwen3_0_6b > "$OUT/bench_qwen3.log" 2>&1
echo "bench qwen3 rc $? ($((SECONDS - T0)) s)"
grep -E "tokens/s|fraction" "$OUT/bench_qwen3.log"
echo "== done ($((SECONDS - T0)) s)"
