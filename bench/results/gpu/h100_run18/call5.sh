#!/usr/bin/env bash
# Session 18, device call 5: the GPU check (bench/gpu/run.sh) at this session's defaults,
# without the experiments' parts (their switches are timed in calls 1-4) and the profiles. Its
# logs go to /tmp/agentrl_gpu and come back as one archive ($OUT/run.tar.gz: the device tool
# returns a limited number of files).
set -u
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
SKIP="bench_f32 bench_attn_fp32 decode_layer_coop decode_layer_phase decode_layer_noprefetch \
ops_stream decode_stream decode_stream_wide primitives decode_structure profile_decode \
profile_decode_stream profile_decode_layer" BUDGET=300 DENO=/tmp/deno OUT=/tmp/agentrl_gpu \
  bash bench/gpu/run.sh
tar -czf "$OUT/run.tar.gz" -C /tmp agentrl_gpu --exclude='*.safetensors' --exclude='hf_ref'
