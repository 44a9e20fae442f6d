#!/usr/bin/env bash
# session 14, device call 8: kernel 2's cluster merge read straight into registers ("rm") against
# call 7's library ("cl": the records staged in shared memory), alternated 3 times; rm's chain
# times; the decode ops against the CPU library.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
for v in rm cl; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1
B="bench/gpu/bench.ts --decode-only"
one() { echo "$1: $(AGENTRL_KERNELS_CUDA=/tmp/$1.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"; }
for i in 1 2 3; do one cl; one rm; done
echo "rm, chain times:"; AGENTRL_KERNELS_CUDA=/tmp/rm.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decode AGENTRL_KERNELS_CUDA=/tmp/rm.so timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops_decode.log 2>&1
echo "ops (decode) rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops_decode.log)"; grep -v ' ok *$' $OUT/ops_decode.log | tail -4
echo "== done ($((SECONDS-T0)) s)"
