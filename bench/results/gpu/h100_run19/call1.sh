#!/usr/bin/env bash
# The first device call after session 19 (no GPU): checks and times what it built, with the sm_90
# library built from session 19's last kernels (.dev/s19.so.xz) against session 18's
# (.dev/s18b.so.xz, the library of its calls 2-5) in the same call; carry [".dev"]. About 3-4
# minutes on an H100; run with timeout_s 450. Logs go to $OUT.
#   - every op against the CPU library, and the decode cases with both late starts and the
#     pieces;
#   - batch-1 decode in alternating processes, ratios to session 18's library (s18): this
#     session's default (the length read before the wait, the cluster's arrival before the kv
#     word), kernel 2 letting kernel 3 start at its wait or after its merge (attn_wait,
#     attn_merge), kernel 4 letting kernel 2 start once its rows are in (down_rows), both
#     (wait_rows), kernel 3's rows in 2 or 4 pieces (pieces2, pieces4, and 2 with
#     down_rows), and kernel 4's rows by its warps' columns (down_pieces);
#   - the chain's time stamps (kernel 4's spread, kernel 3's residual apart from its rows' wait,
#     kernel 4's landing) for the default, down_rows, attn_wait and pieces2;
#   - one-shot copies of 32-200 KiB a block (bench/gpu/primitives.cu), plain and under PDL, against
#     the ring and many blocks;
#   - the full benchmark once (the fraction of the bound at the default).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s19.so.xz > /tmp/s19.so
xz -d -c .dev/s18b.so.xz > /tmp/s18b.so
# a library without this session's switches would time the default five times: refuse it
grep -q "AGENTRL_CUDA_DECODE_DOWN_PIECES" /tmp/s19.so || { echo "stale .dev/s19.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s19.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
timeout 120 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)" "$OUT/ops.log" | head -5
AGENTRL_CUDA_DECODE_ATTN_TRIGGER=wait AGENTRL_CUDA_DECODE_DOWN_TRIGGER=rows \
  AGENTRL_CUDA_DECODE_MLP_PIECES=4 AGENTRL_CUDA_DECODE_DOWN_PIECES=1 \
  AGENTRL_OPS_ONLY="decodeLayer|decode with graphs" timeout 60 \
  $D run -A bench/gpu/ops_compare.ts > "$OUT/ops_late.log" 2>&1
echo "ops late starts and pieces rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops_late.log")"
grep -E " FAIL( |$)" "$OUT/ops_late.log" | head -5
P=AGENTRL_CUDA_DECODE
timeout 240 $D run -A bench/gpu/decode_ab.ts --runs 3 \
  --variant s18:AGENTRL_KERNELS_CUDA=/tmp/s18b.so --variant default: \
  --variant attn_wait:${P}_ATTN_TRIGGER=wait --variant attn_merge:${P}_ATTN_TRIGGER=merge \
  --variant down_rows:${P}_DOWN_TRIGGER=rows \
  --variant wait_rows:${P}_ATTN_TRIGGER=wait,${P}_DOWN_TRIGGER=rows \
  --variant pieces2:${P}_MLP_PIECES=2 --variant pieces4:${P}_MLP_PIECES=4 \
  --variant rows_pieces2:${P}_DOWN_TRIGGER=rows,${P}_MLP_PIECES=2 \
  --variant down_pieces:${P}_DOWN_PIECES=1 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
pkill -f "bench/gpu/bench.ts" # (a run that decode_ab's timeout left behind)
tail -12 "$OUT/ab.log"
B="timeout 30 $D run -A bench/gpu/bench.ts --decode-only"
for v in default DOWN_TRIGGER=rows ATTN_TRIGGER=wait MLP_PIECES=2; do
  echo "== chain times, $v"
  case $v in default) e=() ;; *) e=("AGENTRL_CUDA_DECODE_$v") ;; esac
  env "${e[@]}" AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 $B > "$OUT/times_${v%%=*}.log" 2>&1
  tail -10 "$OUT/times_${v%%=*}.log"
done
# one-shot copies against the ring and the reference (bench/gpu/primitives.cu, new in session 19)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
timeout 120 "$NVCC" -O3 -std=c++17 -arch=sm_90 bench/gpu/primitives.cu -o /tmp/primitives \
  > "$OUT/primitives_build.log" 2>&1 &&
  timeout 60 /tmp/primitives > "$OUT/primitives.log" 2>&1
echo "primitives rc $? ($((SECONDS - T0)) s)"
grep -E "reference|one-shot|ring 2 x 64|wrong" "$OUT/primitives.log"
timeout 100 $D run -A bench/gpu/bench.ts > "$OUT/bench.log" 2>&1
echo "bench rc $? ($((SECONDS - T0)) s)"
grep -E "copy bandwidth GB/s|batch 1:|fraction" "$OUT/bench.log"
echo "== done ($((SECONDS - T0)) s)"
