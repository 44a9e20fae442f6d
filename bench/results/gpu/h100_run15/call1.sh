#!/usr/bin/env bash
# session 13, device call 1: the chain with kernel 3 split in two (no grid barrier) and kernel 2's
# early key/value loads (v1: register caps; v2: none) against the committed chain (base, accf9f9).
# Libraries built here for sm_90 and carried (.dev/*.so.xz).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in base v1 v2; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/v1.so AGENTRL_OPS_ONLY=decode timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_v1.log 2>&1
echo "ops v1 rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_v1.log)"
grep -v ' ok *$' $G/ops_v1.log | tail -6
B="bench/gpu/bench.ts --decode-only"
run() { local v=$1; shift; env AGENTRL_KERNELS_CUDA=/tmp/$v.so "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1; }
{
for i in 1 2 3; do
  for v in base v1 v2; do echo "$v: $(run $v X=1)"; done
  echo "separate calls: $(run v1 AGENTRL_DECODE_LAYER=0)"
done
for v in base v1 v2; do
  echo "$v, times: $(env AGENTRL_KERNELS_CUDA=/tmp/$v.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -3 | tr '\n' ' ')"
done
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
