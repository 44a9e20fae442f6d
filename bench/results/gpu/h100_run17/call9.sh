#!/usr/bin/env bash
# session 15, device call 9: the persistent kernel with its waits, signals and atomics moved off the
# thread that issues the bulk copies, and the slots armed with a relaxed arrive (tok9); with and
# without its waits (AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT=1), against tok8 and the chain a layer.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_CUDA_DECODE_TOKEN=1 AGENTRL_KERNELS_CUDA=/tmp/tok9.so
xz -d -c .dev/tok9.so.xz > /tmp/tok9.so; xz -d -c .dev/tok8.so.xz > /tmp/tok8.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decodeLayers timeout 60 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops_decode.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops_decode.log)"
B="timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only"
echo "== times"; AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 $B 2>&1 | tail -11
echo "== times, no waits"; AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT=1 AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 $B 2>&1 | tail -11
echo "tok9: $($B 2>&1 | tail -1)"
echo "tok8: $(AGENTRL_KERNELS_CUDA=/tmp/tok8.so $B 2>&1 | tail -1)"
echo "chain: $(AGENTRL_CUDA_DECODE_TOKEN=0 $B 2>&1 | tail -1)"
echo "== done ($((SECONDS-T0)) s)"
