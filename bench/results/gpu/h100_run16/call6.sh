#!/usr/bin/env bash
# session 14, device call 6 (experiment): kernels 3 and 4's bulk copies in smaller pieces and from
# more threads (AGENTRL_CUDA_DECODE_COPY_KB / _ISSUERS), alternated 3 times; the chain's times for
# the default and the smallest pieces.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/copyx.so
xz -d -c .dev/copyx.so.xz > /tmp/copyx.so
nvidia-smi -L | head -1
B="bench/gpu/bench.ts --decode-only"
one() { echo "$1: $(env $2 timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"; }
for i in 1 2 3; do
  one "32 KiB x 1 (default)" X=1
  one "8 KiB x 1" "AGENTRL_CUDA_DECODE_COPY_KB=8"
  one "16 KiB x 8" "AGENTRL_CUDA_DECODE_COPY_KB=16 AGENTRL_CUDA_DECODE_COPY_ISSUERS=8"
  one "8 KiB x 32" "AGENTRL_CUDA_DECODE_COPY_KB=8 AGENTRL_CUDA_DECODE_COPY_ISSUERS=32"
  one "4 KiB x 64" "AGENTRL_CUDA_DECODE_COPY_KB=4 AGENTRL_CUDA_DECODE_COPY_ISSUERS=64"
done
for v in "X=1" "AGENTRL_CUDA_DECODE_COPY_KB=4 AGENTRL_CUDA_DECODE_COPY_ISSUERS=64"; do
  echo "$v, chain times:"; env $v AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -5 | head -2
done
echo "== done ($((SECONDS-T0)) s)"
