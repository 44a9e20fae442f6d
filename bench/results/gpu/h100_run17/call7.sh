#!/usr/bin/env bash
# session 15, device call 7: the persistent kernel with a warp's units dotted 4 at a time (independent chains;
# tok6), every chunk wait timed; the chain a layer as the baseline.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/tok.so
xz -d -c .dev/tok6.so.xz > /tmp/tok.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decodeLayers timeout 60 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops_decode.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops_decode.log)"
echo "== times"; AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -11
for i in 1 2; do
  echo "token: $(timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -1)"
  echo "chain: $(AGENTRL_DECODE_LAYERS=0 timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -1)"
done
echo "== done ($((SECONDS-T0)) s)"
