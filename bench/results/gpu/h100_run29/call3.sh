#!/usr/bin/env bash
# Session 29's third device call: the library with AGENTRL_CUDA_DECODE_MLP_PER_SM's default at 2
# (.dev/s29c.so.xz, sm_90, this tree): the chain where kernels 3 and 4 take at most two blocks an
# SM, the separate calls past that. Its default against the model's separate calls
# (AGENTRL_DECODE_LAYER=0) for the three wide shapes. carry [".dev"]; about 2-3 minutes on an
# H100; run with timeout_s 240. Logs go to $OUT.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s29c.so.xz > /tmp/s29c.so
grep -q AGENTRL_CUDA_DECODE_MLP_PER_SM /tmp/s29c.so || { echo "stale .dev/s29c.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s29c.so
D=/tmp/deno
nvidia-smi -L | head -1
for m in qwen2_5_1_5b llama3_2_1b qwen2_5_3b; do
  timeout 70 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m --variant default: \
    --variant apart:AGENTRL_DECODE_LAYER=0 > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
