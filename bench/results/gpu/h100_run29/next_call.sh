#!/usr/bin/env bash
# The next device call (prepared in session 29, not run): where the fused MLP kernel
# (AGENTRL_CUDA_DECODE_MLP_FUSED=1) loses at Qwen2.5-0.5B (0.954x) and wins at Qwen3-0.6B (1.020x).
# .dev/ does not survive between sessions: build the library first, here (about a minute):
#   git archive HEAD | tar -x -C /tmp/next && cd /tmp/next &&
#   AGENTRL_CUDA_ARCH=sm_90 deno run -A kernels/build.ts && cd - &&
#   mkdir -p .dev && xz -T2 -c /tmp/next/build/libagentrl_cuda.so > .dev/next.so.xz &&
#   xz -T2 -c "$(command -v deno || echo /root/.npm/_npx/*/node_modules/deno/deno)" > .dev/deno.xz
# Then `run` this with carry [".dev"] and timeout_s 420 (about 4-5 minutes on an H100).
#   - the chain's time stamps at the default and fused (kernel 3's "rows in" span is the question),
#     and with the placement's upload left out (session 30: AGENTRL_DECODE_KEEP_PLACEMENT=1, wrong
#     tokens; the tail's "ids' copy and graph launch" span without the copy); each run also prints
#     the step without its sampling (bench.ts, session 30);
#   - decode_ab, default against fused, for Qwen2.5-0.5B and Qwen3-0.6B, and for Qwen2.5-0.5B
#     against the step without the upload (keep) and with it beside the step before (session 30's
#     AGENTRL_DECODE_ALTERNATE_PLACEMENT=1, whose device-ids decode cases run first: its stream
#     ordering can only be checked on a GPU).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/next.so.xz > /tmp/next.so
grep -q arl_upload_alternating /tmp/next.so || { echo "stale .dev/next.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/next.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
AGENTRL_OPS_ONLY="decode with graphs" timeout 90 $D run -A bench/gpu/ops_compare.ts \
  > "$OUT/ops_graphs.log" 2>&1
echo "ops (decode with graphs, the alternating placements among them) rc $? ($((SECONDS - T0)) s)"
grep -E "FAIL|outputs within" "$OUT/ops_graphs.log" | tail -4
for v in 0 1 keep alt; do
  fused=0; [ "$v" = 1 ] && fused=1
  keep=0; [ "$v" = keep ] && keep=1
  alt=0; [ "$v" = alt ] && alt=1
  AGENTRL_CUDA_DECODE_MLP_FUSED=$fused AGENTRL_DECODE_KEEP_PLACEMENT=$keep \
    AGENTRL_DECODE_ALTERNATE_PLACEMENT=$alt AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 50 $D run -A \
    bench/gpu/bench.ts --decode-only > "$OUT/times_$v.log" 2>&1
  echo "== stamps, $v ($((SECONDS - T0)) s)"
  grep -E "^decode chain|without the sampling" "$OUT/times_$v.log" | head -9
done
for m in qwen2_5_0_5b qwen3_0_6b; do
  keep=""; [ $m = qwen2_5_0_5b ] && keep="--variant keep:AGENTRL_DECODE_KEEP_PLACEMENT=1
    --variant alt:AGENTRL_DECODE_ALTERNATE_PLACEMENT=1"
  timeout 150 $D run -A bench/gpu/decode_ab.ts --runs 3 --model $m --variant default: \
    --variant fused:AGENTRL_CUDA_DECODE_MLP_FUSED=1 $keep > "$OUT/ab_$m.log" 2>&1
  echo "decode_ab $m rc $? ($((SECONDS - T0)) s)"
  pkill -f "bench/gpu/bench.ts"
  tail -5 "$OUT/ab_$m.log"
done
echo "== done ($((SECONDS - T0)) s)"
