#!/usr/bin/env bash
# Session 25's second device call: the library of this tree (.dev/s25.so.xz, sm_90, with kernel
# 3's 5-row dots now the default and arl_rope_freqs) against session 21's (.dev/s21.so.xz); carry
# [".dev"]. About 5 minutes on an H100; run with timeout_s 480. Logs go to $OUT.
#   - every op against the CPU library (the rope_freqs and Qwen3/Llama cases included);
#   - Qwen3-0.6B-shaped and Llama-3.2-1B-shaped (scaled RoPE) models against transformers
#     (bench/gpu/run.sh's four parts of session 24, nothing else of it);
#   - batch-1 decode in alternating processes: s21, this tree, this tree at 4-row dots;
#   - bench.ts at this tree's defaults (the fraction of the bandwidth bound).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in s21 s25; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
grep -q arl_rope_freqs /tmp/s25.so || { echo "stale .dev/s25.so.xz: no arl_rope_freqs"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s25.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
timeout 120 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)|skipped" "$OUT/ops.log" | head -5
KEEP="hf_reference_qwen3 ref_qwen3 hf_reference_llama3 ref_llama3"
ALL=$(sed -n 's/^for f in \(.*\); do rm -f.*/\1/p' bench/gpu/run.sh)
SKIP=""
for p in $ALL; do case " $KEEP " in *" $p "*) ;; *) SKIP="$SKIP $p" ;; esac; done
DENO=$D OUT="$OUT/run" BUDGET=200 SKIP="$SKIP" timeout 220 bash bench/gpu/run.sh \
  > "$OUT/run.log" 2>&1
echo "run.sh rc $? ($((SECONDS - T0)) s)"
grep -vE "^== .*: skipped|^$" "$OUT/run.log" | tail -40
timeout 100 $D run -A bench/gpu/decode_ab.ts --runs 3 \
  --variant s21:AGENTRL_KERNELS_CUDA=/tmp/s21.so --variant s25: \
  --variant s25_rows4:AGENTRL_CUDA_DECODE_MLP_DOT_ROWS=4 > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
pkill -f "bench/gpu/bench.ts"
tail -4 "$OUT/ab.log"
timeout 100 $D run -A bench/gpu/bench.ts > "$OUT/bench.log" 2>&1
echo "bench rc $? ($((SECONDS - T0)) s)"
grep -E "copy bandwidth GB/s|batch 1:|fraction" "$OUT/bench.log"
echo "== done ($((SECONDS - T0)) s)"
