#!/usr/bin/env bash
# The first device call after session 25 (prepared without a device): arl_decode_layer_norms_bf16,
# the decode chain for Qwen3's q/k norms and a scaled RoPE's table, built after session 25's
# device time ran out. Library .dev/s25d.so.xz (sm_90, commit 3b0d371 or later) against
# .dev/s25c.so.xz (call 5's: the norms kernel, the separate calls otherwise); carry [".dev"].
# About 2-3 minutes on an H100 before the YaRN part; run with timeout_s 360. Logs go to $OUT.
#   - the decode layer's, the norms kernel's and the Qwen3/Llama model cases against the CPU;
#   - batch-1 decode of Qwen3-0.6B's and Llama-3.2-1B's shapes, s25c against s25d, alternating;
#   - bench.ts --decode-only for both shapes and Qwen2.5-0.5B's (the fractions);
#   - (session 28) a YaRN-scaled Qwen2 against transformers (hf_reference.py yarn, reference.ts).
# About 3-4 minutes with the last part.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in s25c s25d; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
grep -q arl_decode_layer_norms_bf16 /tmp/s25d.so || { echo "stale .dev/s25d.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s25d.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="decodeLayer|normRope|Qwen3|Llama|decode with graphs" timeout 120 $D run -A \
  bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)|skipped" "$OUT/ops.log" | head -5
for m in qwen3_0_6b llama3_2_1b; do
  timeout 100 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m \
    --variant s25c:AGENTRL_KERNELS_CUDA=/tmp/s25c.so --variant s25d: > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_$m.log"
done
for m in qwen3_0_6b llama3_2_1b qwen2_5_0_5b; do
  timeout 60 $D run -A bench/gpu/bench.ts --decode-only --model $m > "$OUT/decode_$m.log" 2>&1
  echo "== $m"
  grep -E "batch 1:|fraction" "$OUT/decode_$m.log"
done
# YaRN (session 28, TS only: the library's arl_rope_freqs takes its table) against transformers:
# the rotary table, attention scaling, log-probs and gradients (the checkpoint stays in /tmp)
timeout 90 python3 bench/gpu/hf_reference.py /tmp/hf_yarn yarn > "$OUT/hf_yarn.log" 2>&1
echo "hf_reference yarn rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/hf_yarn.log" | cut -c1-300)"
timeout 60 $D run -A bench/gpu/reference.ts --dir /tmp/hf_yarn --device cuda > "$OUT/ref_yarn.log" 2>&1
echo "reference yarn rc $? ($((SECONDS - T0)) s)"
sed -n '/^what/,/^grads within/p' "$OUT/ref_yarn.log"
echo "== done ($((SECONDS - T0)) s)"
