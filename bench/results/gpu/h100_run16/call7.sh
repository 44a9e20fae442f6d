#!/usr/bin/env bash
# session 14, device call 7: kernel 2 as thread-block clusters of 8 splits a head (the records
# shared through distributed shared memory, the cluster's hardware barrier) against
# AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0 (global records and group_barrier), alternated 3 times; the
# chain's times; every op against the CPU library; bench.ts (our rates, the fraction of the bound).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/cl.so
xz -d -c .dev/cl.so.xz > /tmp/cl.so
nvidia-smi -L | head -1
B="bench/gpu/bench.ts --decode-only"
one() { echo "$1: $(env $2 timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"; }
for i in 1 2 3; do
  one "clusters" X=1
  one "no clusters" AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0
done
for v in X=1 AGENTRL_CUDA_DECODE_ATTN_CLUSTER=0; do
  echo "$v, chain times:"; env $v AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4
done
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops.log)"; grep -v ' ok *$' $OUT/ops.log | tail -4
timeout 120 /tmp/deno run -A bench/gpu/bench.ts > $OUT/bench.log 2>&1; echo "bench rc $? ($((SECONDS-T0)) s)"
tail -12 $OUT/bench.log
echo "== done ($((SECONDS-T0)) s)"
