#!/usr/bin/env bash
# The GPU check in one command, from the repository root, on a machine with an
# NVIDIA GPU, nvcc, and python3 with torch + transformers + safetensors (no
# network needed):
#   DENO=/path/to/deno bash bench/gpu/run.sh
# 1. builds the kernels (kernels/build.ts), 2. compares every CUDA op with the
# CPU backend (ops_compare.ts), 3. compares the model with Hugging Face
# transformers (hf_reference.py, then reference.ts on cuda and on our CPU
# backend), 4. benchmarks against PyTorch eager (torch_bench.py, then bench.ts),
# and prints one summary table (summary.py). Each part runs under `timeout`
# (its own limit, capped by what is left of BUDGET, default 400 s) and a failed
# part does not stop the others. Logs and JSON go to $OUT (default
# /tmp/agentrl_gpu).
#
# Environment: DENO (default deno), OUT, AGENTRL_CUBLAS (libcublas path; found
# here when the loader cannot), AGENTRL_CUDA_ARCH (default: the GPU's own, e.g.
# sm_90), BUDGET (seconds, default 400), SKIP (parts to skip, space-separated: build ops
# hf_reference ref ref_f32 ref_cpu hf_reference_qwen3 ref_qwen3 hf_reference_llama3 ref_llama3 hf_reference_yarn ref_yarn torch_bench bench bench_f32 bench_attn_fp32 decode_fused
# decode_unfused decode_nopdl decode_layer decode_chain_times decode_qkv_in_attn decode_l2_head
# decode_layer_coop decode_layer_phase
# decode_layer_noprefetch ops_stream
# decode_stream decode_stream_wide primitives decode_structure profile_decode profile_decode_stream
# profile_decode_layer).
# The model runs with bf16 weights (the CUDA default); ref_f32 and bench_f32 repeat those
# parts with fp32; bench_attn_fp32 repeats the benchmark with the fp32 attention kernels
# (AGENTRL_CUDA_ATTENTION=fp32) instead of the tensor-core ones; decode_fused / decode_unfused
# time batch-1 decode with the decode fusions and without them (AGENTRL_DECODE_FUSION=0), and
# decode_nopdl without programmatic dependent launch (AGENTRL_CUDA_PDL=0). By default each layer
# is one arl_decode_layer_bf16 call (four chained kernels); decode_layer runs the separate fused
# calls instead (AGENTRL_DECODE_LAYER=0), decode_chain_times the default with its blocks' time
# stamps (AGENTRL_CUDA_DECODE_CHAIN_TIMES=1), decode_qkv_in_attn the chain with kernel 1 of its
# own (AGENTRL_CUDA_DECODE_QKV_IN_ATTN=0; by default kernel 2 does its work), decode_l2_head
# the LM head's weights kept in an L2 set-aside (AGENTRL_CUDA_L2_PERSIST=max; AGENTRL_L2_OFFER
# picks other weights), decode_layer_coop
# the call as one cooperative kernel
# (AGENTRL_CUDA_DECODE_LAYER=coop; its mean phase times, AGENTRL_CUDA_DECODE_LAYER_TIMES=1), and
# decode_layer_phase / _noprefetch that kernel prefetching its weights a phase ahead or not at all
# (AGENTRL_CUDA_DECODE_PREFETCH).
# ops_stream and decode_stream repeat every op's comparison and batch-1 decode with the streaming
# one-row GEMV (AGENTRL_CUDA_GEMV_STREAM=1, an experiment); decode_stream_wide gives it only the
# GEMVs with two column groups a block or more (AGENTRL_CUDA_GEMV_STREAM=2).
# primitives (bench/gpu/primitives.cu) measures the building blocks of a one-block-per-SM kernel:
# streaming rates (loads, cp.async and bulk-copy rings, one-shot copies) against many blocks per
# SM, a grid barrier, and a dependent read from L2 and from DRAM. decode_structure
# (bench/gpu/decode_structure.cu) times one batch-1 token of the benchmark model as kernels
# that only read their bytes, for each way of cutting it into kernels (5, 2 or 1 a layer in a
# graph, or one cooperative kernel with grid barriers): each structure's floor as a fraction of
# the bound. profile_decode and profile_decode_layer run Nsight Compute (when `ncu` is there) on
# nine of batch-1 decode's kernels and on one layer kernel: speed of light, memory, warp states
# and the source lines warps stall on (the library is built with -lineinfo); the summary lists
# each kernel's time and DRAM throughput.
set -u
cd "$(dirname "$0")/../.." || exit 1
DENO=${DENO:-deno}
OUT=${OUT:-/tmp/agentrl_gpu}
SKIP=${SKIP:-}
mkdir -p "$OUT"
for f in build ops hf_reference ref ref_f32 ref_cpu hf_reference_qwen3 ref_qwen3 hf_reference_llama3 ref_llama3 hf_reference_yarn ref_yarn torch_bench bench bench_f32 bench_attn_fp32 decode_fused decode_unfused decode_nopdl decode_layer decode_chain_times decode_qkv_in_attn decode_l2_head decode_layer_coop decode_layer_phase decode_layer_noprefetch ops_stream decode_stream decode_stream_wide primitives decode_structure profile_decode profile_decode_stream profile_decode_layer; do rm -f "$OUT/$f.log" "$OUT/$f.status"; done
rm -f "$OUT"/reference_*.json "$OUT/torch.json" "$OUT"/bench*.json "$OUT/primitives.json" "$OUT/decode_structure.json"
export PYTHONUNBUFFERED=1 DENO_NO_UPDATE_CHECK=1 DENO_NO_PROMPT=1 NO_COLOR=1
T0=$SECONDS

BUDGET=${BUDGET:-400} # seconds for all the parts together: no part runs past it

# part NAME LIMIT_S CMD...: runs CMD under timeout (LIMIT_S, or what is left of
# BUDGET) with its output in $OUT/NAME.log; writes "STATUS SECONDS RC" to
# $OUT/NAME.status, STATUS one of ok, failed, timeout, skipped, no-time
part() {
  local name=$1 limit=$2 t=$SECONDS rc status left
  shift 2
  case " $SKIP " in *" $name "*)
    echo "skipped 0 -" >"$OUT/$name.status"
    echo "== $name: skipped"
    return 1
    ;;
  esac
  left=$((BUDGET - (SECONDS - T0)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    echo "no-time 0 -" >"$OUT/$name.status"
    echo "== $name: not run, the ${BUDGET}s budget is spent"
    return 1
  fi
  echo "== $name (limit ${limit}s): $*"
  timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status=ok ;;
    124 | 137) status=timeout ;;
    *) status=failed ;;
  esac
  echo "$status $((SECONDS - t)) $rc" >"$OUT/$name.status"
  echo "== $name: $status (rc $rc, $((SECONDS - t)) s)"
  # on failure, the end of the log (for ops_compare: its failing rows)
  [ "$rc" -ne 0 ] && grep -v ' ok *$' "$OUT/$name.log" | tail -40
  return $rc
}

echo "deno: $("$DENO" --version 2>&1 | head -1)"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
nvidia-smi -L 2>&1 | head -2
command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -2 | head -1 || echo "nvcc: not on PATH (build.ts also tries /usr/local/cuda/bin/nvcc)"

# cuBLAS: the CUDA library dlopens libcublas.so.13/.12 by soname; else AGENTRL_CUBLAS
if [ -n "${AGENTRL_CUBLAS:-}" ]; then
  echo "cuBLAS: AGENTRL_CUBLAS=$AGENTRL_CUBLAS (given)"
elif ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[23] '; then
  echo "cuBLAS: found by the loader: $(ldconfig -p | grep -o '/[^ ]*libcublas\.so\.1[23]$' | head -1)"
else
  found=$(python3 - <<'EOF' 2>/dev/null
import glob, os, site, sys
dirs = []
try:
    import nvidia.cublas as m  # the pip wheel torch depends on
    dirs += [os.path.join(p, "lib") for p in m.__path__]
except Exception:
    pass
try:
    import torch
    dirs.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(sp, "nvidia", "cu*", "lib")) + glob.glob(os.path.join(sp, "nvidia", "cublas", "lib"))
dirs += sorted(glob.glob("/usr/local/cuda*/lib64"), reverse=True) + sorted(glob.glob("/usr/local/cuda*/targets/*/lib"), reverse=True)
for d in dirs:
    for v in ("13", "12"):
        p = os.path.join(d, "libcublas.so." + v)
        if os.path.exists(p):
            print(p)
            sys.exit(0)
EOF
)
  [ -z "$found" ] && found=$(find /usr/local /opt /usr/lib -name 'libcublas.so.1[23]' 2>/dev/null | head -1)
  if [ -n "$found" ]; then
    export AGENTRL_CUBLAS=$found
    echo "cuBLAS: not found by soname; AGENTRL_CUBLAS=$AGENTRL_CUBLAS"
  else
    echo "cuBLAS: NOT FOUND (the CUDA library falls back to its own GEMM: slow)"
  fi
fi
# compile for this GPU only (halves the nvcc time); build.ts adds PTX of the first target
if [ -z "${AGENTRL_CUDA_ARCH:-}" ]; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  case $cap in [0-9][0-9]) export AGENTRL_CUDA_ARCH="sm_$cap" ;; esac
fi
echo "AGENTRL_CUDA_ARCH=${AGENTRL_CUDA_ARCH:-build.ts default}"

# 1. build
part build 180 "$DENO" run -A kernels/build.ts

# 2. every op: CUDA vs CPU
part ops 90 "$DENO" run -A bench/gpu/ops_compare.ts

# 3. the model vs Hugging Face transformers (on the GPU, and our CPU backend too)
REF="$OUT/hf_ref"
rm -rf "$REF"
if part hf_reference 90 python3 bench/gpu/hf_reference.py "$REF"; then
  tail -3 "$OUT/hf_reference.log"
  part ref 60 "$DENO" run -A bench/gpu/reference.ts --dir "$REF" --device cuda \
    --json "$OUT/reference_cuda.json"
  [ -f "$OUT/ref.log" ] && sed -n '1,/^every parameter/p' "$OUT/ref.log"
  part ref_f32 60 env AGENTRL_PRECISION=f32 "$DENO" run -A bench/gpu/reference.ts --dir "$REF" \
    --device cuda --json "$OUT/reference_cuda_f32.json"
  part ref_cpu 60 "$DENO" run -A bench/gpu/reference.ts --dir "$REF" --device cpu \
    --json "$OUT/reference_cpu.json"
  [ -f "$OUT/ref_cpu.log" ] && sed -n '1,/^every parameter/p' "$OUT/ref_cpu.log"
fi
# the same on the GPU, bf16 weights, for another architecture ARCH (hf_reference.py's argument):
# parts hf_reference_ARCH and ref_ARCH, the reference in $OUT/hf_ref_ARCH
arch_reference() {
  local arch=$1 dir="$OUT/hf_ref_$1"
  rm -rf "$dir"
  if part "hf_reference_$arch" 90 python3 bench/gpu/hf_reference.py "$dir" "$arch"; then
    tail -1 "$OUT/hf_reference_$arch.log"
    part "ref_$arch" 60 "$DENO" run -A bench/gpu/reference.ts --dir "$dir" --device cuda \
      --json "$OUT/reference_cuda_$arch.json"
    [ -f "$OUT/ref_$arch.log" ] && sed -n '1,/^every parameter/p' "$OUT/ref_$arch.log"
  fi
}
arch_reference qwen3  # q/k norms, head_dim 128 beside hidden 1024
arch_reference llama3 # Llama 3.2's shape with its RoPE scaling (arl_rope_freqs)
arch_reference yarn   # Qwen2 with YaRN (the ramp's table and the attention factor)

# 4. benchmark against PyTorch eager (ours runs even when PyTorch's side failed)
part torch_bench 150 python3 bench/gpu/torch_bench.py "$OUT/torch.json"
part bench 150 "$DENO" run -A bench/gpu/bench.ts --torch "$OUT/torch.json" --json "$OUT/bench.json" &&
  cat "$OUT/bench.log"
# the same with fp32 weights (TF32 GEMMs), the previous default
part bench_f32 120 env AGENTRL_PRECISION=f32 "$DENO" run -A bench/gpu/bench.ts \
  --torch "$OUT/torch.json" --json "$OUT/bench_f32.json" && tail -12 "$OUT/bench_f32.log"

# the bf16 benchmark with the fp32 attention kernels, same run (the tensor cores' gain)
part bench_attn_fp32 120 env AGENTRL_CUDA_ATTENTION=fp32 "$DENO" run -A bench/gpu/bench.ts \
  --torch "$OUT/torch.json" --json "$OUT/bench_attn_fp32.json" && tail -8 "$OUT/bench_attn_fp32.log"

# 5. batch-1 greedy decode with the decode fusions and without (AGENTRL_DECODE_FUSION=0), same run
part decode_fused 60 "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_fused.log"
part decode_unfused 60 env AGENTRL_DECODE_FUSION=0 "$DENO" run -A bench/gpu/bench.ts --decode-only &&
  tail -1 "$OUT/decode_unfused.log"
part decode_nopdl 60 env AGENTRL_CUDA_PDL=0 "$DENO" run -A bench/gpu/bench.ts --decode-only &&
  tail -1 "$OUT/decode_nopdl.log"
part decode_layer 60 env AGENTRL_DECODE_LAYER=0 "$DENO" run -A bench/gpu/bench.ts --decode-only &&
  tail -1 "$OUT/decode_layer.log"
part decode_chain_times 60 env AGENTRL_CUDA_DECODE_CHAIN_TIMES=1 \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -4 "$OUT/decode_chain_times.log"
part decode_qkv_in_attn 60 env AGENTRL_CUDA_DECODE_QKV_IN_ATTN=0 \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_qkv_in_attn.log"
part decode_l2_head 60 env AGENTRL_CUDA_L2_PERSIST=max \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_l2_head.log"
coop="AGENTRL_CUDA_DECODE_LAYER=coop"
part decode_layer_coop 60 env $coop AGENTRL_CUDA_DECODE_LAYER_TIMES=1 \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -3 "$OUT/decode_layer_coop.log"
part decode_layer_phase 60 env $coop AGENTRL_CUDA_DECODE_PREFETCH=phase \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_layer_phase.log"
part decode_layer_noprefetch 60 env $coop AGENTRL_CUDA_DECODE_PREFETCH=none \
  "$DENO" run -A bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_layer_noprefetch.log"
# the streaming one-row GEMV (an experiment): every op again, then batch-1 decode
part ops_stream 90 env AGENTRL_CUDA_GEMV_STREAM=1 "$DENO" run -A bench/gpu/ops_compare.ts &&
  tail -1 "$OUT/ops_stream.log"
# (against the separate calls, whose GEMVs it replaces: AGENTRL_DECODE_LAYER=0)
part decode_stream 60 env AGENTRL_DECODE_LAYER=0 AGENTRL_CUDA_GEMV_STREAM=1 "$DENO" run -A \
  bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_stream.log"
part decode_stream_wide 60 env AGENTRL_DECODE_LAYER=0 AGENTRL_CUDA_GEMV_STREAM=2 "$DENO" run -A \
  bench/gpu/bench.ts --decode-only && tail -1 "$OUT/decode_stream_wide.log"

# 6. the building blocks' ceilings on this GPU
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH=${AGENTRL_CUDA_ARCH:-sm_90}
part primitives 60 bash -c '"$0" -O3 -std=c++17 -arch="$1" bench/gpu/primitives.cu -o "$2/primitives" &&
  "$2/primitives" --json "$2/primitives.json"' "$NVCC" "${ARCH%%,*}" "$OUT" && cat "$OUT/primitives.log"
part decode_structure 60 bash -c '"$0" -O3 -std=c++17 -arch="$1" bench/gpu/decode_structure.cu \
  -o "$2/decode_structure" && "$2/decode_structure" --json "$2/decode_structure.json"' \
  "$NVCC" "${ARCH%%,*}" "$OUT" && cat "$OUT/decode_structure.log"

# 7. where batch-1 decode's kernels spend their time (Nsight Compute, when installed)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [ -x "$NCU" ]; then
  sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section SourceCounters --print-details all"
  # A decode step launches 5 matching kernels a layer (Qwen2.5-0.5B: 24), the LM head's GEMV and
  # the greedy pick (122), after the prefill's LM head and pick (2): skipping 1,335 lands on the
  # 11th step's layer 22 (its gate|up GEMV), so the 9 profiled cover layer 23 and the LM head
  part profile_decode 90 env AGENTRL_DECODE_LAYER=0 "$NCU" --clock-control none $sections \
    -k regex:'gemv_rows|attention_decode|greedy_split' -s 1335 -c 9 \
    "$DENO" run -A bench/gpu/bench.ts --decode-only
  # the same kernels with the streaming GEMV
  part profile_decode_stream 90 env AGENTRL_DECODE_LAYER=0 AGENTRL_CUDA_GEMV_STREAM=1 "$NCU" \
    --clock-control none $sections -k regex:'gemv_|attention_decode|greedy_split' -s 1335 -c 9 \
    "$DENO" run -A bench/gpu/bench.ts --decode-only
  part profile_decode_layer 60 env AGENTRL_DECODE_LAYER=1 "$NCU" --clock-control none $sections \
    -k regex:'decode_qkv|decode_attn_o|decode_gate_up|decode_down' -s 100 -c 4 \
    "$DENO" run -A bench/gpu/bench.ts --decode-only
else
  for f in profile_decode profile_decode_stream profile_decode_layer; do
    echo "skipped 0 -" >"$OUT/$f.status"
  done
  echo "== profile_decode, profile_decode_stream, profile_decode_layer: skipped (no ncu)"
fi

echo
echo "agentrl GPU check ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)), $((SECONDS - T0)) s, logs in $OUT"
python3 bench/gpu/summary.py "$OUT" || echo "summary.py failed; statuses: $(cat "$OUT"/*.status 2>/dev/null)"
