#!/usr/bin/env bash
# Session 18, device call 4: with call 3's defaults (the head's norm apart, the head after the
# graph), the switches that lost before them again: the L2 regions, the next layer's q|k|v
# prefetch, the streaming GEMV (which the LM head can take). .dev/s18b.so.xz as in call 2.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
xz -d -c .dev/s18b.so.xz > /tmp/s.so
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/s.so
D=/tmp/deno
timeout 60 $D run -A kernels/build.ts --cpu-only > "$OUT/build.log" 2>&1
echo "build rc $? ($((SECONDS - T0)) s)"
L2=AGENTRL_CUDA_L2_PERSIST=max
timeout 200 $D run -A bench/gpu/decode_ab.ts --runs 2 --variant default: \
  --variant l2_head:$L2 --variant l2_qkv:$L2,AGENTRL_L2_OFFER=qkv \
  --variant next_qkv:AGENTRL_CUDA_DECODE_NEXT_QKV=1 \
  --variant gemv_stream:AGENTRL_CUDA_GEMV_STREAM=1 \
  --variant gemv_stream_wide:AGENTRL_CUDA_GEMV_STREAM=2 \
  > "$OUT/ab.log" 2>&1
echo "decode_ab rc $? ($((SECONDS - T0)) s)"
tail -7 "$OUT/ab.log"
echo "== done ($((SECONDS - T0)) s)"
