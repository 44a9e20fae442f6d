#!/usr/bin/env bash
# Session 12's last device call (call 9): every op against the CPU library, then batch-1 decode
# alternating the separate calls, the chain and the chain with the fused GEMV as its kernel 1
# (4 each), then the chain's time stamps. Run from the repository root with OUT set, on a machine
# with a GPU and .dev/deno.xz (a deno binary).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno AGENTRL_CUDA_ARCH=sm_90 NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 200 /tmp/deno run -A kernels/build.ts > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
timeout 120 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops.log)"
grep -v ' ok *$' $G/ops.log | tail -8
B="bench/gpu/bench.ts --decode-only"
{
for i in 1 2 3 4; do
  echo "separate calls: $(AGENTRL_DECODE_LAYER=0 timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
  echo "chain: $(timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
  echo "chain, gemv qkv: $(AGENTRL_CUDA_DECODE_CHAIN_QKV=gemv timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
done
echo "chain, times: $(AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -3 | tr '\n' ' ')"
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
