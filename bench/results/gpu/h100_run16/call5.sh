#!/usr/bin/env bash
# session 14, device call 5: the #8 check (bench/gpu/run.sh, built on the device) at the session's
# final kernels, the slow experiment parts skipped as in session 13's call 7; then the final
# library ("final", built here for sm_90) against 4c72fe3, alternated 3 times, with kernel 3's
# early trigger as a third arm, and the chain's time stamps.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
for v in final s4c72; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
RESULT_DIR=$OUT
B="bench/gpu/bench.ts --decode-only"
one() { # label so tree env...
  local label=$1 so=$2 tree=$3; shift 3
  echo "$label: $(env NO_COLOR=1 AGENTRL_KERNELS_CUDA=/tmp/$so.so "$@" timeout 60 /tmp/deno run -A $tree$B 2>&1 | tail -1)"
}
{
for i in 1 2 3; do
  one 4c72fe3 s4c72 .dev/t_4c72fe3/ X=1
  one final final "" X=1
  one "final, early trigger" final "" AGENTRL_CUDA_DECODE_MLP_TRIGGER=early
done
echo "final, chain times:"; NO_COLOR=1 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/final.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -6
} 2>&1 | tee $RESULT_DIR/decode.txt
echo "== A/B done ($((SECONDS-T0)) s)"
export OUT=/tmp/agentrl_gpu AGENTRL_CUDA_ARCH=sm_90 BUDGET=300
SKIP="ref_f32 bench_f32 bench_attn_fp32 decode_unfused decode_nopdl decode_layer_coop decode_layer_phase decode_layer_noprefetch ops_stream decode_stream decode_stream_wide primitives decode_structure profile_decode profile_decode_stream" \
  DENO=/tmp/deno bash bench/gpu/run.sh > $RESULT_DIR/run.txt 2>&1
echo "run.sh rc $? ($((SECONDS-T0)) s)"
tail -45 $RESULT_DIR/run.txt
