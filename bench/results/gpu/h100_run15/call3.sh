#!/usr/bin/env bash
# session 13, device call 3: kernel 2 waits for kernel 1's ready word to load its first keys early (v5), against v2n
# early keys off (v2n with AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0), the committed chain (base); the gap
# between tokens (chain stamps) and the host's share of a step.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
for v in base v2n v5; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_KERNELS_CUDA=/tmp/v5.so timeout 150 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_v5.log 2>&1
echo "ops v5 (all) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_v5.log)"
grep -v ' ok *$' $G/ops_v5.log | tail -5
AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0 AGENTRL_KERNELS_CUDA=/tmp/v5.so AGENTRL_OPS_ONLY=decode timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_v5_late.log 2>&1
echo "ops v5 kv late rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_v5_late.log)"
B="bench/gpu/bench.ts --decode-only"
run() { local v=$1; shift; env AGENTRL_KERNELS_CUDA=/tmp/$v.so "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1; }
{
for i in 1 2 3; do
  echo "base: $(run base X=1)"
  echo "v2n: $(run v2n X=1)"
  echo "v5: $(run v5 X=1)"
  echo "v5 kv late: $(run v5 AGENTRL_CUDA_DECODE_CHAIN_KV_EARLY=0)"
done
echo "separate calls: $(run v5 AGENTRL_DECODE_LAYER=0)"
echo "v5, times: $(env AGENTRL_KERNELS_CUDA=/tmp/v5.so AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -4 | tr '\n' ' ')"
echo "host share (v5):"; AGENTRL_KERNELS_CUDA=/tmp/v5.so timeout 60 /tmp/deno run -A .dev/decode_host.ts 2>&1 | tail -3
echo "host parts (v5):"; AGENTRL_KERNELS_CUDA=/tmp/v5.so timeout 60 /tmp/deno run -A .dev/decode_host_prof.ts 2>&1 | tail -4
} 2>&1 | tee $G/decode.txt
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
