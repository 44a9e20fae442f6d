#!/usr/bin/env bash
# session 14, device call 4: kernel 3 back at 40 registers (one row at a time, 16-byte loads: "head2") against
# call 3's head ("head1": kernel 3 at 52 registers) and 4c72fe3; kernel 3's late trigger; chain times.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=$OUT/g; mkdir -p $G
for v in head1 head2 s4c72; do xz -d -c .dev/$v.so.xz > /tmp/$v.so; done
nvidia-smi -L | head -1 | tee $G/gpu.txt
B="bench/gpu/bench.ts --decode-only"
one() { # label so tree env...
  local label=$1 so=$2 tree=$3; shift 3
  echo "$label: $(env AGENTRL_KERNELS_CUDA=/tmp/$so.so "$@" timeout 60 /tmp/deno run -A $tree$B 2>&1 | tail -1)"
}
{
for i in 1 2 3; do
  one 4c72fe3 s4c72 .dev/t_4c72fe3/ X=1
  one head1 head1 "" X=1
  one head2 head2 "" X=1
  one "head2, late trigger" head2 "" AGENTRL_CUDA_DECODE_MLP_TRIGGER=late
done
for v in "X=1" "AGENTRL_CUDA_DECODE_MLP_TRIGGER=late"; do
  echo "head2 ($v), chain times:"; env $v AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 AGENTRL_KERNELS_CUDA=/tmp/head2.so timeout 60 /tmp/deno run -A $B 2>&1 | tail -6
done
} 2>&1 | tee $G/decode.txt
echo "== decode done ($((SECONDS-T0)) s)"
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decode AGENTRL_KERNELS_CUDA=/tmp/head2.so timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_decode.log 2>&1
echo "ops (decode) rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_decode.log)"; grep -v ' ok *$' $G/ops_decode.log | tail -4
echo "== done ($((SECONDS-T0)) s)"
