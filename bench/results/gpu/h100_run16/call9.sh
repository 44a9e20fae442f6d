#!/usr/bin/env bash
# session 14, device call 9: the final kernels (b40aed2, "rm"): every op against the CPU library,
# bench.ts (our rates and the fraction of the bound), and three more batch-1 decode runs.
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/rm.so
xz -d -c .dev/rm.so.xz > /tmp/rm.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
timeout 100 /tmp/deno run -A bench/gpu/ops_compare.ts > $OUT/ops.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $OUT/ops.log)"; grep -v ' ok *$' $OUT/ops.log | tail -4
timeout 120 /tmp/deno run -A bench/gpu/bench.ts > $OUT/bench.log 2>&1; echo "bench rc $? ($((SECONDS-T0)) s)"
tail -8 $OUT/bench.log
for i in 1 2 3; do timeout 60 /tmp/deno run -A bench/gpu/bench.ts --decode-only 2>&1 | tail -1; done
echo "== done ($((SECONDS-T0)) s)"
