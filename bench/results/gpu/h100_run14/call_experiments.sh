#!/usr/bin/env bash
# device calls 14-16: the three-kernel decode layer (decode_chain.cu): correctness vs CPU, then
# batch-1 decode tokens/s for each path and knob, then per-kernel times under ncu
set -u
T0=$SECONDS
xz -d -c .dev/deno.xz > /tmp/deno && chmod +x /tmp/deno
export DENO=/tmp/deno AGENTRL_CUDA_ARCH=sm_90 NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
G=/tmp/g; mkdir -p $G
nvidia-smi -L | head -1 | tee $G/gpu.txt
timeout 200 /tmp/deno run -A kernels/build.ts > $G/build.log 2>&1; echo "build rc $? ($((SECONDS-T0)) s)"
AGENTRL_OPS_ONLY=decode timeout 120 /tmp/deno run -A bench/gpu/ops_compare.ts > $G/ops_decode.log 2>&1
echo "ops rc $? ($((SECONDS-T0)) s): $(tail -1 $G/ops_decode.log)"
grep -v ' ok *$' $G/ops_decode.log | tail -12
B="bench/gpu/bench.ts --decode-only"
r() { # name, env...
  local name=$1; shift
  for i in 1 2 3; do
    echo "$name: $(env "$@" timeout 60 /tmp/deno run -A $B 2>&1 | tail -1)"
  done
}
{
r "separate calls (default)" X=1
r "chain" AGENTRL_DECODE_LAYER=1
echo "chain, times: $(AGENTRL_DECODE_LAYER=1 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -3 | tr '\n' ' ')"
r "chain, mlp 256 threads" AGENTRL_DECODE_LAYER=1 AGENTRL_CUDA_DECODE_MLP_THREADS=256
echo "chain, mlp 256, times: $(AGENTRL_DECODE_LAYER=1 AGENTRL_CUDA_DECODE_MLP_THREADS=256 AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 timeout 60 /tmp/deno run -A $B 2>&1 | tail -3 | tr '\n' ' ')"
} 2>&1 | tee $G/decode.txt
echo "== bench done ($((SECONDS-T0)) s)"; command -v nsys || echo "no nsys"
if [ -n "${NCU:-}" ] && command -v ncu >/dev/null; then
  AGENTRL_DECODE_LAYER=1 timeout 90 ncu --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem \
    -s 3000 -c 60 --csv /tmp/deno run -A $B > $G/ncu_chain.csv 2>&1
  echo "ncu rc $? ($((SECONDS-T0)) s)"
  python3 - <<'PY' $G/ncu_chain.csv
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows: sys.exit(print("no ncu rows"))
h = rows[0]; k = h.index("Kernel Name"); m = h.index("Metric Name"); v = h.index("Metric Value")
agg = collections.defaultdict(list)
for r in rows[1:]:
    try: agg[(r[k][:60], r[m])].append(float(r[v].replace(",", "")))
    except ValueError: pass
for (kn, mn), vals in sorted(agg.items()):
    print(f"{kn:60s} {mn:55s} n={len(vals):3d} mean={sum(vals)/len(vals):.4g}")
PY
fi
echo "== done ($((SECONDS-T0)) s)"
tar czf $OUT/g.tgz -C /tmp g
