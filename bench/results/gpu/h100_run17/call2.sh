#!/usr/bin/env bash
# session 15, device call 2: where the persistent kernel's layer goes (AGENTRL_CUDA_DECODE_TOKEN_TIMES)
# and whether the ring's depth matters (AGENTRL_CUDA_DECODE_TOKEN_SLOTS).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/tok.so
xz -d -c .dev/tok2.so.xz > /tmp/tok.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
echo "== times"; AGENTRL_CUDA_DECODE_TOKEN_TIMES=1 timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -12
for n in 7 4 2; do
  echo "slots $n: $(AGENTRL_CUDA_DECODE_TOKEN_SLOTS=$n timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -1)"
done
echo "chain: $(AGENTRL_DECODE_LAYERS=0 timeout 40 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -1)"
echo "== done ($((SECONDS-T0)) s)"
