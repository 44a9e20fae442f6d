#!/usr/bin/env bash
# session 13, device call 5: the host-side fixes (decode views kept; token ids checked on the host,
# the CUDA embedding's check deferred: no synchronize) at 83f2c8a (tree + head2) against 606c69c
# (.dev/old_tree + head), alternated 4 times; the host's parts of a step.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in head head2; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/head2.so timeout 150 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops.log 2>&1
echo "ops (head2, all) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops.log)"
grep -v ' ok *$' $G/ops.log | tail -5
B="bench/gpu/bench.ts --decode-only"
{
for i in 1 2 3 4; do
  echo "606c69c: $(AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A .dev/old_tree/$B 2>&1 | tail -1)"
  echo "83f2c8a: $(AGENTRL_KERNELS_CUDA=/tmp/head2.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
done
echo "83f2c8a separate calls: $(AGENTRL_KERNELS_CUDA=/tmp/head2.so AGENTRL_DECODE_LAYER=0 timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
echo "host parts (83f2c8a):"; AGENTRL_KERNELS_CUDA=/tmp/head2.so timeout 60 /tmp/deno run -A .dev/decode_host_prof.ts 2>&1 | tail -4
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
