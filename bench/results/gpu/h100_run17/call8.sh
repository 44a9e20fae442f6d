#!/usr/bin/env bash
# session 15, device call 8: the persistent kernel (tok8: one unit a dot, the merge in one round
# trip) with its waits skipped (AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT=1: wrong results, the blocks' own
# work alone), with polls that sleep 200 ns, and as is; the chain a layer as the baseline.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_CUDA_DECODE_TOKEN=1 AGENTRL_KERNELS_CUDA=/tmp/tok8.so
xz -d -c .dev/tok8.so.xz > /tmp/tok8.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
B="timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only"
echo "== times, no waits"; AGENTRL_CUDA_DECODE_TOKEN_NO_WAIT=1 AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 $B 2>&1 | tail -11
echo "== times"; AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 $B 2>&1 | tail -11
echo "tok8: $($B 2>&1 | tail -1)"
echo "poll 200: $(AGENTRL_CUDA_DECODE_TOKEN_POLL_NS=200 $B 2>&1 | tail -1)"
echo "chain: $(AGENTRL_CUDA_DECODE_TOKEN=0 $B 2>&1 | tail -1)"
echo "== done ($((SECONDS-T0)) s)"
