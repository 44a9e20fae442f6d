#!/usr/bin/env bash
# session 13, device call 4 (final): commit 606c69c (head) against accf9f9 (base): every op, then
# batch-1 decode alternated (base / head / the separate calls) 4 times, head's time stamps, and the
# host's share of a decode step.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in base head; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 150 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops.log 2>&1
echo "ops (head, all) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops.log)"
grep -v ' ok *$' $G/ops.log | tail -5
B="bench/gpu/bench.ts --decode-only"
run() { local v=$1; shift; env AGENTRL_KERNELS_CUDA=/tmp/$v.so "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1; }
{
for i in 1 2 3 4; do
  echo "base: $(run base X=1)"
  echo "head: $(run head X=1)"
  echo "separate calls: $(run head AGENTRL_DECODE_LAYER=0)"
done
echo "head, times: $(env AGENTRL_KERNELS_CUDA=/tmp/head.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4 | tr '\n' ' ')"
echo "host parts (head):"; AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A .dev/decode_host_prof.ts 2>&1 | tail -4
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
