#!/usr/bin/env bash
# Session 18, device call 3: the new defaults (the final norm apart from the head's GEMV, the head
# after the layers' graph: call 2's 1.076x and 1.029x), against the old ones alone and together;
# then the full benchmark for the fraction of the bound. .dev/s18b.so.xz as in call 2 (TS only
# changed since).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s18b.so.xz > /tmp/s.so
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s.so
D=/tmp/deno
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="decode with graphs|sample" timeout 60 \
  $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
timeout 200 $D run -A bench/gpu/decode_ab.ts --runs 3 --variant default: \
  --variant norm_in_head:AGENTRL_DECODE_HEAD_NORM=1 \
  --variant head_in_graph:AGENTRL_DECODE_HEAD_GRAPH=1 \
  --variant both_old:AGENTRL_DECODE_HEAD_NORM=1,AGENTRL_DECODE_HEAD_GRAPH=1 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
tail -5 "$OUT/ab.log"
pkill -f "bench/gpu/bench.ts"
for i in 1 2; do
  timeout 100 $D run -A bench/gpu/bench.ts > "$OUT/bench$i.log" 2>&1
  echo "bench $i rc $? ($((SECONDS - T0)) s)"
  grep -E "copy bandwidth GB/s|batch 1:|fraction" "$OUT/bench$i.log"
done
AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 40 $D run -A bench/gpu/bench.ts --decode-only \
  > "$OUT/times.log" 2>&1
tail -5 "$OUT/times.log"
echo "== done ($((SECONDS - T0)) s)"
