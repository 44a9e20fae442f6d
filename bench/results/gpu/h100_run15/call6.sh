#!/usr/bin/env bash
# session 13, device call 6: kernel 1 loads the position and slot and finds the rotation before its
# wait, kernel 3 has 512 threads and loads the residual's 15 values an element at once (hv1),
# against 83f2c8a (head2), alternated 4 times; both libraries' time stamps.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in head2 hv1; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/hv1.so timeout 150 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops.log 2>&1
echo "ops (hv1, all) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops.log)"
grep -v ' ok *$' $G/ops.log | tail -5
B="bench/gpu/bench.ts --decode-only"
run() { local v=$1; shift; env AGENTRL_KERNELS_CUDA=/tmp/$v.so "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1; }
{
for i in 1 2 3 4; do
  echo "head2: $(run head2 X=1)"
  echo "hv1: $(run hv1 X=1)"
done
echo "hv1 separate calls: $(run hv1 AGENTRL_DECODE_LAYER=0)"
for v in head2 hv1; do
  echo "$v, times: $(env AGENTRL_KERNELS_CUDA=/tmp/$v.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4 | tr '\n' ' ')"
done
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
