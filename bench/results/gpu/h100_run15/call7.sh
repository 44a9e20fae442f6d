#!/usr/bin/env bash
# session 13, device call 7: the #8 check (bench/gpu/run.sh) at 13cd16e, the slow experiment parts skipped
set -u
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
RESULT_DIR=$OUT; export OUT=/tmp/agentrl_gpu AGENTRL_CUDA_ARCH=sm_90 BUDGET=330
SKIP="ref_f32 bench_f32 bench_attn_fp32 decode_unfused decode_nopdl decode_layer_coop decode_layer_phase decode_layer_noprefetch ops_stream decode_stream decode_stream_wide primitives decode_structure profile_decode profile_decode_stream" \
  DENO=/tmp/deno bash bench/gpu/run.sh 2>&1 | tail -60
tar czf /tmp/r.tgz -C /tmp agentrl_gpu && cp /tmp/r.tgz "$RESULT_DIR/r.tgz"
