#!/usr/bin/env bash
# session 14, device call 3: kernel 2 at 64 registers (its time stamps kept in memory) and kernel 3
# dotting 4 rows at a time with 16-byte loads ("head") against the committed 3e... ("prev": kernel 2
# at 80 registers, the old dots) and 4c72fe3; kernel 3's late trigger and the key/value prefetch
# switched off, alternated; the chain's time stamps with kernel 2's phases.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=$OUT/g; mkdir -p $G
for v in head prev s4c72; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
B="bench/gpu/bench.ts --decode-only"
one() { # label so tree env...
  local label=$1 so=$2 tree=$3; shift 3
  echo "$label: $(env AGENTRL_KERNELS_CUDA=/tmp/$so.so "$@" timeout 60 /tmp/deno run -A $tree$B 2>&1 | tail -1)"
}
{
for i in 1 2 3; do
  one 4c72fe3 s4c72 .dev/t_4c72fe3/ X=1
  one prev prev "" X=1
  one head head "" X=1
  one "head, no kv prefetch" head "" AGENTRL_CUDA_DECODE_KV_PREFETCH=0
  one "head, late trigger" head "" AGENTRL_CUDA_DECODE_MLP_TRIGGER=late
done
for v in "X=1" "AGENTRL_CUDA_DECODE_MLP_TRIGGER=late"; do
  echo "head ($v), chain times:"; env $v AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -6
done
} 2>&1 | tee $G/decode.txt
echo "== decode done ($((SECONDS-T0)) s)"
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decode AGENTRL_KERNELS_CUDA=/tmp/head.so timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_decode.log 2>&1
echo "ops (decode) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_decode.log)"; grep -v ' ok *$' $G/ops_decode.log | tail -4
echo "== done ($((SECONDS-T0)) s)"
