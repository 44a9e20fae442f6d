#!/usr/bin/env bash
# session 14, device call 2: the tail of a step (greedy sampler writing to pinned memory without
# settings, copies or a memset; the embedding inside the decode graph), kernel 2's key/value L2
# prefetch and kernel 1's L2 prefetch of the MLP weights, each against the others, alternated;
# 4c72fe3 (session 13's end) and 81b828a (ids through arl_copy) as baselines. Then ops_compare
# (decode and sample ops) against the CPU library.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=$OUT/g; mkdir -p $G
for v in head s4c72 s81b8; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
B="bench/gpu/bench.ts --decode-only"
one() { # label so tree env...
  local label=$1 so=$2 tree=$3; shift 3
  echo "$label: $(env AGENTRL_KERNELS_CUDA=/tmp/$so.so "$@" timeout 60 /tmp/deno run -A $tree$B 2>&1 | tail -1)"
}
{
for i in 1 2 3; do
  one 81b828a s81b8 .dev/t_81b828a/ X=1
  one 4c72fe3 s4c72 .dev/t_4c72fe3/ X=1
  one "head, no prefetch" head "" AGENTRL_CUDA_DECODE_KV_PREFETCH=0 AGENTRL_CUDA_DECODE_MLP_PREFETCH=0
  one "head, kv" head "" AGENTRL_CUDA_DECODE_MLP_PREFETCH=0
  one "head, kv + gate|up" head "" AGENTRL_CUDA_DECODE_MLP_PREFETCH=1
  one "head, kv + gate|up + down" head ""
done
echo "head, no prefetch, chain times:"; AGENTRL_CUDA_DECODE_KV_PREFETCH=0 AGENTRL_CUDA_DECODE_MLP_PREFETCH=0 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -5
echo "head, default, chain times:"; AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -5
} 2>&1 | tee $G/decode.txt
echo "== decode done ($((SECONDS-T0)) s)"
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
for only in decode sample; do
  AGENTRL_OPS_ONLY=$only AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_$only.log 2>&1
  echo "ops ($only) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_$only.log)"; grep -v ' ok *$' $G/ops_$only.log | tail -4
done
echo "== done ($((SECONDS-T0)) s)"
