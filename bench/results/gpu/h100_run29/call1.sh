#!/usr/bin/env bash
# Session 29's first device call: the issue's GPU check (bench/gpu/run.sh) at this tree, with the
# library .dev/s29.so.xz (sm_90, built from this tree's kernels) and .dev/deno.xz; carry [".dev"].
# About 6 minutes on an H100; run with timeout_s 480. Logs go to $OUT (run.sh's as run.tar.gz).
#   - run.sh: every op against the CPU library; Qwen2 (bf16, f32, and our CPU backend), Qwen3,
#     scaled-RoPE Llama and YaRN Qwen2 against transformers; PyTorch eager and our benchmark;
#     batch-1 decode through separate calls and the chain's time stamps;
#   - batch-1 decode of Qwen3-0.6B's and Llama-3.2-1B's shapes, the chained layer call
#     (arl_decode_layer_norms_bf16, new since session 25) against the separate calls with the
#     norms-and-RoPE kernel (AGENTRL_DECODE_LAYER_NORMS=0, session 25's call 5), alternating;
#   - bench.ts --decode-only for those two shapes (the fractions of their bounds).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s29.so.xz > /tmp/s29.so
grep -q arl_decode_layer_norms_bf16 /tmp/s29.so || { echo "stale .dev/s29.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s29.so AGENTRL_CUDA_ARCH=sm_90
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
KEEP="ops hf_reference ref ref_f32 ref_cpu hf_reference_qwen3 ref_qwen3 hf_reference_llama3 \
ref_llama3 hf_reference_yarn ref_yarn torch_bench bench decode_layer decode_chain_times"
ALL=$(sed -n 's/^for f in \(.*\); do rm -f.*/\1/p' bench/gpu/run.sh)
SKIP=""
for p in $ALL; do case " $KEEP " in *" $p "*) ;; *) SKIP="$SKIP $p" ;; esac; done
DENO=$D OUT=/tmp/agentrl_gpu BUDGET=300 SKIP="$SKIP" timeout 320 bash bench/gpu/run.sh \
  > "$OUT/run.log" 2>&1
echo "run.sh rc $? ($((SECONDS - T0)) s)"
tar -czf "$OUT/run.tar.gz" -C /tmp --exclude='*.safetensors' --exclude='hf_ref*' agentrl_gpu
grep -E "^== .*: (ok|failed|timeout|not run)" "$OUT/run.log"
grep -E "outputs within tolerance|^logp|^grads within|^rope|batch 1:|fraction|ours / PyTorch" \
  "$OUT/run.log" | head -40
for m in qwen3_0_6b llama3_2_1b; do
  timeout 90 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m \
    --variant apart:AGENTRL_DECODE_LAYER_NORMS=0 --variant chain: > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -3 "$OUT/ab_$m.log"
done
for m in qwen3_0_6b llama3_2_1b; do
  timeout 45 $D run -A bench/gpu/bench.ts --decode-only --model $m > "$OUT/decode_$m.log" 2>&1
  echo "== $m ($((SECONDS - T0)) s)"
  grep -E "batch 1:|fraction" "$OUT/decode_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
