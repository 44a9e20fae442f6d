#!/usr/bin/env bash
# session 15, device call 4: Nsight Compute on one launch of the persistent kernel (tok3): where its
# warps stall (WarpStateStats, and the stall samples per SASS instruction).
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1 AGENTRL_KERNELS_CUDA=/tmp/tok.so
xz -d -c .dev/tok3.so.xz > /tmp/tok.so
nvidia-smi -L | head -1
timeout 100 /tmp/deno run -A kernels/build.ts --cpu-only > /tmp/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
timeout 200 $NCU --set full --import-source no -k regex:decode_token --launch-skip 20 --launch-count 1 \
  -o /tmp/rep -f /tmp/deno run -A bench/gpu/bench.ts --decode-only > $OUT/ncu.log 2>&1
echo "ncu rc $? ($((SECONDS-T0)) s)"; tail -3 $OUT/ncu.log
$NCU -i /tmp/rep.ncu-rep --page details > $OUT/details.txt 2>&1
$NCU -i /tmp/rep.ncu-rep --page source --csv --print-source sass > $OUT/sass.csv 2>&1
ls -la $OUT; grep -i -A30 'Warp State' $OUT/details.txt | head -40
echo "== done ($((SECONDS-T0)) s)"
