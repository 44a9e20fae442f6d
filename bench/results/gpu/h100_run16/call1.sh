#!/usr/bin/env bash
# session 14, device call 1: measurements. (1) arl_upload_async (b09e392) against 81b828a (ids through
# arl_copy), alternated 3 times; (2) kernel 1's new time stamps; (3) an Nsight Systems timeline of the
# decode steps (bench/gpu/step_timeline.py), or Nsight Compute kernel times where nsys is missing.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=$OUT/g; mkdir -p $G
for v in head old; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}; ncu: $(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)"
B="bench/gpu/bench.ts --decode-only"
{
for i in 1 2 3; do
  echo "81b828a: $(AGENTRL_KERNELS_CUDA=/tmp/old.so timeout 60 /tmp/deno run -A .dev/old_tree/$B 2>&1 | tail -1)"
  echo "head:    $(AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
done
echo "head, chain times:"; AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -5
} 2>&1 | tee $G/decode.txt
echo "== decode done ($((SECONDS-T0)) s)"
if [ -n "$NSYS" ]; then
  AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 120 $NSYS profile -t cuda --cuda-graph-trace=node -o /tmp/p -f true \
    --export sqlite /tmp/deno run -A $B > $G/nsys.log 2>&1; echo "nsys rc $? ($((SECONDS-T0)) s)"
  tail -3 $G/nsys.log
  python3 bench/gpu/step_timeline.py /tmp/p.sqlite 2>&1 | tee $G/timeline_node.txt
  AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 120 $NSYS profile -t cuda,osrt -o /tmp/q -f true \
    --export sqlite /tmp/deno run -A $B > $G/nsys2.log 2>&1; echo "nsys (graph level) rc $? ($((SECONDS-T0)) s)"
  python3 bench/gpu/step_timeline.py /tmp/q.sqlite 2>&1 | tee $G/timeline_graph.txt
  cp /tmp/q.sqlite $G/ 2>/dev/null
else
  NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum \
    -k regex:'greedy|rmsnorm_forward|embedding|gemv_rows' --print-summary per-kernel --csv /tmp/deno run -A $B > $G/ncu.csv 2>&1
  echo "ncu rc $? ($((SECONDS-T0)) s)"; tail -12 $G/ncu.csv
fi
echo "== done ($((SECONDS-T0)) s)"
