#!/usr/bin/env bash
# The first device call after sessions 16-18 (none of which had a GPU): checks and times what they
# built, with the sm_90 library built from session 18's last kernels (.dev/s18.so.xz; carry
# [".dev"]). At most about 8.5 minutes on an H100 (the timeouts below), likely 4-6; run with
# timeout_s 560. Logs go to $OUT.
#   - every op against the CPU library (session 16's sampling halves, the head in the graph);
#   - the fused q|k|v path (session 17) with the next layer's q|k|v prefetched, and the L2 regions
#     (session 18), on the model's decode cases;
#   - batch-1 decode in alternating processes: default, qkv_in_attn, the LM head in L2 (l2_head),
#     each layer's q|k|v rows in L2 (l2_qkv), and kernel 4 asking L2 for the next layer's q|k|v
#     rows (next_qkv);
#   - the chain's time stamps with and without the fused path.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s18.so.xz > /tmp/s18.so
# a library from before the regions' ABI would crash the first decode step, and one without the
# next_qkv switch would time the default twice: refuse either
grep -q "cannot change the L2 regions" /tmp/s18.so && grep -q "AGENTRL_CUDA_DECODE_NEXT_QKV" \
  /tmp/s18.so || { echo "stale .dev/s18.so.xz"; exit 1; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s18.so
D=/tmp/deno
nvidia-smi -L | head -1
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
timeout 120 $D run -A bench/gpu/ops_compare.ts > "$OUT/ops.log" 2>&1
echo "ops rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops.log")"
grep -E " FAIL( |$)" "$OUT/ops.log" | head -5
ops_with() { # name, then the environment's assignments: the model's decode cases
  local name=$1
  shift
  env "$@" AGENTRL_OPS_ONLY="decode with graphs" timeout 45 \
    $D run -A bench/gpu/ops_compare.ts > "$OUT/ops_$name.log" 2>&1
  echo "ops $name rc $? ($((SECONDS - T0)) s): $(tail -1 "$OUT/ops_$name.log")"
  grep -E "^arl_l2_persist| FAIL( |$)" "$OUT/ops_$name.log" | head -3
}
ops_with qkv AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1 AGENTRL_CUDA_DECODE_NEXT_QKV=1
ops_with l2 AGENTRL_CUDA_L2_PERSIST=max AGENTRL_L2_OFFER=attn,head
L2=AGENTRL_CUDA_L2_PERSIST=max
timeout 210 $D run -A bench/gpu/decode_ab.ts --runs 2 --variant default: \
  --variant qkv_in_attn:AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1 \
  --variant l2_head:$L2 \
  --variant l2_qkv:$L2,AGENTRL_L2_OFFER=qkv \
  --variant next_qkv:AGENTRL_CUDA_DECODE_NEXT_QKV=1 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
pkill -f "bench/gpu/bench.ts" # (a run that decode_ab's timeout left behind)
tail -8 "$OUT/ab.log"
B="timeout 30 $D run -A bench/gpu/bench.ts --decode-only"
echo "== chain times, default"
AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 $B > "$OUT/times.log" 2>&1
tail -6 "$OUT/times.log"
echo "== chain times, q|k|v in kernel 2"
AGENTRL_CUDA_DECODE_QKV_IN_ATTN=1 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 $B > "$OUT/times_qkv.log" 2>&1
tail -6 "$OUT/times_qkv.log"
echo "== done ($((SECONDS - T0)) s)"
