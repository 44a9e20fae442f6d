#!/usr/bin/env bash
# session 15, device call 8: the persistent kernel with one unit a dot again, the merge in one round
# trip and a switch for the poll's sleep (tok7: AGENTRL_CUDA_DECODE_TOKEN_POLL_NS 20, 200, 1000),
# against tok5 and the chain a layer.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_CUDA_DECODE_TOKEN=1
xz -d -c .dev/tok7.so.xz > /tmp/tok7.so; xz -d -c .dev/tok5.so.xz > /tmp/tok5.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
export AGENTRL_KERNELS_CUDA=/tmp/tok7.so
AGENTRL_OPS_ONLY=decodeLayers timeout 60 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops_decode.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops_decode.log)"
echo "== times"; AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -11
B="timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only"
for i in 1 2; do
  for ns in 20 200 1000; do echo "tok7 poll $ns: $(AGENTRL_CUDA_DECODE_TOKEN_POLL_NS=$ns $B 2>&1 | tail -1)"; done
  echo "tok5: $(AGENTRL_KERNELS_CUDA=/tmp/tok5.so $B 2>&1 | tail -1)"
  echo "chain: $(AGENTRL_DECODE_LAYERS=0 $B 2>&1 | tail -1)"
done
echo "== done ($((SECONDS-T0)) s)"
