#!/usr/bin/env bash
# session 13, device call 2: no register caps (v2n, the default now), K2/K4 capped at 64 (v4), kernel 2's
# early keys off (v2n with AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0), the committed chain (base); the gap
# between tokens (chain stamps) and the host's share of a step.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in base v2n v4; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/v2n.so AGENTRL_OPS_ONLY=decode timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_v2n.log 2>&1
echo "ops v2n rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_v2n.log)"
AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0 AGENTRL_KERNELS_CUDA=/tmp/v2n.so AGENTRL_OPS_ONLY=decode timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_v2n_late.log 2>&1
echo "ops v2n kv late rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_v2n_late.log)"
B="bench/gpu/bench.ts --decode-only"
run() { local v=$1; shift; env AGENTRL_KERNELS_CUDA=/tmp/$v.so "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1; }
{
for i in 1 2 3; do
  echo "base: $(run base X=1)"
  echo "v2n: $(run v2n X=1)"
  echo "v2n kv late: $(run v2n AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0)"
  echo "v4: $(run v4 X=1)"
done
for v in v2n v4; do
  echo "$v, times: $(env AGENTRL_KERNELS_CUDA=/tmp/$v.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4 | tr '\n' ' ')"
done
echo "v2n kv late, times: $(env AGENTRL_KERNELS_CUDA=/tmp/v2n.so AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4 | tr '\n' ' ')"
echo "host share (v2n):"; AGENTRL_KERNELS_CUDA=/tmp/v2n.so timeout 60 /tmp/deno run -A .dev/decode_host.ts 2>&1 | tail -3
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
