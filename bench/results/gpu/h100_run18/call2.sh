#!/usr/bin/env bash
# Session 18, device call 2: q|k|v in kernel 2 by default (call 1: 1.020x); what the step's tail
# costs (the final norm in the head's GEMV, the head inside the decode graph, the greedy kernel
# under programmatic dependent launch: sessions 16-17, never timed), each switched off alone; then
# the full benchmark for the fraction of the bound. .dev/s18b.so.xz: sm_90 from this tree.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s18b.so.xz > /tmp/s.so
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s.so
D=/tmp/deno
which nsys ncu
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="decodeLayer|decode with graphs|sample" timeout 60 \
  $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)" "$OUT/ops.log" | head -5
timeout 200 $D run -A bench/gpu/decode_ab.ts --runs 2 --variant default: \
  --variant kernel1:AGENTRL_CUDA_DECODE_QKV_IN_ATTN=0 \
  --variant head_norm_apart:AGENTRL_DECODE_HEAD_NORM=0 \
  --variant head_after_graph:AGENTRL_DECODE_HEAD_GRAPH=0 \
  --variant greedy_nopdl:AGENTRL_CUDA_GREEDY_PDL=0 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
tail -7 "$OUT/ab.log"
pkill -f "bench/gpu/bench.ts"
timeout 200 $D run -A bench/gpu/bench.ts > "$OUT/bench.log" 2>&1
echo "bench rc $? ($((SECONDS - T0)) s)"
tail -14 "$OUT/bench.log"
echo "== done ($((SECONDS - T0)) s)"
