#!/usr/bin/env bash
# The first device call after session 21 (no GPU in sessions 19-21): checks and times what they
# built, with the sm_90 library of session 21's last kernels (.dev/s21.so.xz: session 20's
# kernels, kernel 2's split q phase stamps and kernel 3's pacing switch) against session 18's
# (.dev/s18b.so.xz, its calls 2-5) and session 19's (.dev/s19.so.xz) in the same call; carry
# [".dev"]. About 4-5 minutes on an H100; run with timeout_s 540. Logs go to $OUT.
#   - every op against the CPU library, and the decode cases with the late starts, the pieces,
#     kernel 3's 5 rows at once, the uploads in a kernel's parameters and the paced pieces;
#   - batch-1 decode in alternating processes (decode_ab, 3 rounds): s18, s19, this session's
#     default (x in shared memory without bank conflicts in kernels 2 and 3), and each switch of
#     sessions 19-20 alone (attn_wait, attn_merge, down_rows, pieces2, pieces4, dot_rows5,
#     down_pieces, upload_kernel), two combinations, and session 21's paced pieces of kernel 3
#     (4 pieces, 2 in flight; 2 pieces, 1 in flight: compare each with pieces4 and pieces2);
#   - the switches that beat the default by more than 1% (pick.py), combined: the decode cases
#     under them, decode_ab against the default, and bench.ts under them (the fraction);
#   - the chain's time stamps (the tail between tokens, kernel 3's dots, kernel 2's q phase) for
#     the default, down_rows, attn_merge (kernel 3's copy held back until kernel 2's merge: does
#     kernel 2's x load wait behind it?), dot_rows5 and upload_kernel;
#   - one-shot copies (bench/gpu/primitives.cu), and bench.ts at the default.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in s18b s19 s21; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
# a library without sessions 20-21's switches would time the default in their place: refuse it
for s in AGENTRL_CUDA_DECODE_MLP_DOT_ROWS AGENTRL_CUDA_UPLOAD AGENTRL_CUDA_DECODE_MLP_PACE \
  "its pairs dotted and stored"; do
  grep -q "$s" /tmp/s21.so || { echo "stale .dev/s21.so.xz: no $s"; exit 1; }
done
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s21.so
D=/tmp/deno
P=AGENTRL_CUDA_DECODE
ops_decode() {  # $1: the log's name; the rest: the environment
  local name=$1
  shift
  env "$@" AGENTRL_OPS_ONLY="decodeLayer|decode with graphs" timeout 60 \
    $D run -A bench/gpu/ops_compare.ts > "$OUT/ops_$name.log" 2>&1
  echo "ops $name rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops_$name.log")"
  grep -E " FAIL( |$)" "$OUT/ops_$name.log" | head -5
}
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
timeout 120 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)" "$OUT/ops.log" | head -5
ops_decode late ${P}_ATTN_TRIGGER=wait ${P}_DOWN_TRIGGER=rows ${P}_MLP_PIECES=4 \
  ${P}_DOWN_PIECES=1
ops_decode rows5 ${P}_MLP_DOT_ROWS=5 ${P}_MLP_PIECES=2
ops_decode upload AGENTRL_CUDA_UPLOAD=kernel
ops_decode pace ${P}_MLP_PIECES=4 ${P}_MLP_PACE=2
timeout 200 $D run -A bench/gpu/decode_ab.ts --runs 3 \
  --variant s18:AGENTRL_KERNELS_CUDA=/tmp/s18b.so --variant s19:AGENTRL_KERNELS_CUDA=/tmp/s19.so \
  --variant default: \
  --variant attn_wait:${P}_ATTN_TRIGGER=wait --variant attn_merge:${P}_ATTN_TRIGGER=merge \
  --variant down_rows:${P}_DOWN_TRIGGER=rows \
  --variant pieces2:${P}_MLP_PIECES=2 --variant pieces4:${P}_MLP_PIECES=4 \
  --variant dot_rows5:${P}_MLP_DOT_ROWS=5 --variant down_pieces:${P}_DOWN_PIECES=1 \
  --variant upload_kernel:AGENTRL_CUDA_UPLOAD=kernel \
  --variant wait_rows:${P}_ATTN_TRIGGER=wait,${P}_DOWN_TRIGGER=rows \
  --variant rows_dot5:${P}_DOWN_TRIGGER=rows,${P}_MLP_DOT_ROWS=5 \
  --variant pace4_2:${P}_MLP_PIECES=4,${P}_MLP_PACE=2 \
  --variant pace2_1:${P}_MLP_PIECES=2,${P}_MLP_PACE=1 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
pkill -f "bench/gpu/bench.ts" # (a run that decode_ab's timeout left behind)
tail -16 "$OUT/ab.log"
# the switches that won, together
BEST=$(python3 bench/results/gpu/h100_run20/pick.py < "$OUT/ab.log")
echo "== switches that beat the default by more than 1%: ${BEST:-none}"
if [ -n "$BEST" ]; then
  read -r -a BEST_ENV <<< "$BEST"
  ops_decode best "${BEST_ENV[@]}"
  timeout 100 $D run -A bench/gpu/decode_ab.ts --runs 3 --variant default: \
    --variant "best:$(echo "$BEST" | tr ' ' ',')" > "$OUT/ab_best.log" 2>&1
  echo "decode_ab best rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_best.log"
  env "${BEST_ENV[@]}" timeout 100 $D run -A bench/gpu/bench.ts > "$OUT/bench_best.log" 2>&1
  echo "bench best rc $? ($((SECONDS - T0)) s)"
  grep -E "copy bandwidth GB/s|batch 1:|fraction" "$OUT/bench_best.log"
fi
B="timeout 30 $D run -A bench/gpu/bench.ts --decode-only"
for v in default DOWN_TRIGGER=rows ATTN_TRIGGER=merge MLP_DOT_ROWS=5 UPLOAD=kernel; do
  echo "== chain times, $v"
  case $v in default) e=() ;; UPLOAD=*) e=("AGENTRL_CUDA_$v") ;; *) e=("${P}_$v") ;; esac
  env "${e[@]}" ${P}_CHAIN_TIMES=1 $B > "$OUT/times_${v%%=*}.log" 2>&1
  grep -E "^decode chain|^decode tokens/s, batch 1:" "$OUT/times_${v%%=*}.log"
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
