#!/usr/bin/env bash
# Session 25's third device call: batch-1 decode of Qwen3-0.6B's and Llama-3.2-1B's shapes
# (bench.ts --model; they take the separate decode calls, not the fused layer) beside
# Qwen2.5-0.5B's, fused and with separate calls (AGENTRL_DECODE_LAYER=0), each as a fraction of
# its own bandwidth bound; then the whole benchmark for the two new shapes. Library: this tree's
# (.dev/s25.so.xz, sm_90); carry [".dev"]. About 3 minutes on an H100. Logs go to $OUT.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s25.so.xz > /tmp/s25.so
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s25.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
for run in qwen2_5_0_5b: qwen2_5_0_5b:AGENTRL_DECODE_LAYER=0 qwen3_0_6b: llama3_2_1b: \
  qwen3_0_6b:AGENTRL_DECODE_LAYER=0; do
  m=${run%%:*} e=${run#*:}
  log="$OUT/decode_${m}${e:+_layer0}.log"
  env $e timeout 60 $D run -A bench/gpu/bench.ts --decode-only --model "$m" > "$log" 2>&1
  echo "== $m ${e:-default} rc $? ($((SECONDS - T0)) s)"
  grep -E "^decode graphs|batch 1:|fraction|engine" "$log"
done
for m in qwen3_0_6b llama3_2_1b; do
  timeout 90 $D run -A bench/gpu/bench.ts --model "$m" > "$OUT/bench_$m.log" 2>&1
  echo "== bench $m rc $? ($((SECONDS - T0)) s)"
  grep -E "tokens/s|fraction|copy bandwidth" "$OUT/bench_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
