"""Prints the one summary table of bench/gpu/run.sh (part, metric, value,
target, ok) from the statuses, logs and JSON files in OUT_DIR. Anything
missing or unreadable becomes a FAIL row; nothing here raises.

Usage: python3 bench/gpu/summary.py OUT_DIR
"""
import json
import os
import re
import sys


KERNEL_LINE = re.compile(r"^\s+(?:void\s+)?(.+?)(?:\((?:[^()]|\([^()]*\))*\))? "
                         r"\((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")


def ncu_kernels(text):
    """(kernel, duration us, DRAM %) for each kernel in ncu's details output, in order."""
    found = []
    for line in text.splitlines():
        m = KERNEL_LINE.match(line)
        if m:
            name = re.sub(r"(<unnamed>|arl|\(anonymous namespace\))::", "", m[1])
            grid = ",".join(m[i] for i in (2, 3, 4))
            block = ",".join(m[i] for i in (5, 6, 7))
            found.append([f"{name} ({grid})x({block})", "-", "-"])
            continue
        if not found:
            continue
        d = re.match(r"^\s+Duration\s+(\S+)\s+([\d.,]+)", line)
        if d and found[-1][1] == "-":
            value = float(d[2].replace(",", ""))
            scale = {"m": 1e3, "n": 1e-3, "s": 1e6}.get(d[1][0], 1.0)  # us, usecond: 1
            found[-1][1] = format(value * scale, ".2f")
        t = re.match(r"^\s+DRAM Throughput\s+%\s+([\d.]+)", line)
        if t and found[-1][2] == "-":
            found[-1][2] = t[1]
    return [tuple(k) for k in found]


def main(out: str) -> int:
    rows = []

    def row(part, metric, value, target, ok):
        rows.append((part, str(metric), str(value), str(target), ok))

    def read(name):
        try:
            with open(os.path.join(out, name)) as f:
                return f.read()
        except OSError:
            return None

    def load(name):
        text = read(name)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    def status(name):
        s = (read(f"{name}.status") or "not-run 0 -").split()
        return s[0], s[1] if len(s) > 1 else "0"

    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    def versus(a, b):
        """'a/b x (a / b tokens/s)', or the two rates with '-' for a missing one."""
        if a and b:
            return f"{a / b:.2f}x ({a:.0f} / {b:.0f} tokens/s)"
        return f"{num(a, '.0f')} / {num(b, '.0f')}"

    # timings of every part
    timing = []
    for name in ("build", "ops", "hf_reference", "ref", "ref_f32", "ref_cpu", "torch_bench",
                 "bench", "bench_f32", "bench_attn_fp32", "decode_fused", "decode_unfused",
                 "decode_nopdl", "decode_layer", "decode_chain_times", "decode_qkv_in_attn",
                 "decode_l2_head", "decode_layer_coop", "decode_layer_phase",
                 "decode_layer_noprefetch",
                 "ops_stream", "decode_stream", "decode_stream_wide", "primitives",
                 "decode_structure", "profile_decode", "profile_decode_stream",
                 "profile_decode_layer"):
        st, secs = status(name)
        timing.append(f"{name} {secs}s" + ("" if st == "ok" else f" ({st})"))

    st, secs = status("build")
    row("build", "kernels/build.ts (cpu + cuda libraries)", f"{st} ({secs} s)", "ok", st == "ok")

    st, secs = status("ops")
    ops = read("ops.log") or ""
    m = re.search(r"(\d+) of (\d+) outputs within tolerance", ops)
    if m:
        row("ops", "CUDA vs CPU backend, every op output", f"{m[1]} of {m[2]} within tol",
            "all", m[1] == m[2])
    else:
        skipped = "skipped" in ops
        row("ops", "CUDA vs CPU backend, every op output",
            "skipped: no CUDA device" if skipped else f"{st} (no result line)", "all", False)

    for part, name, file, hf in (
            ("ref cuda", "ref", "reference_cuda.json", "hf_reference"),
            ("ref cuda f32", "ref_f32", "reference_cuda_f32.json", "hf_reference"),
            ("ref cpu", "ref_cpu", "reference_cpu.json", "hf_reference"),
            ("ref cuda qwen3", "ref_qwen3", "reference_cuda_qwen3.json", "hf_reference_qwen3"),
            ("ref cuda llama3", "ref_llama3", "reference_cuda_llama3.json", "hf_reference_llama3"),
            ("ref cuda yarn", "ref_yarn", "reference_cuda_yarn.json", "hf_reference_yarn")):
        st_hf, _ = status(hf)
        if st_hf != "ok":
            row(part, "hf_reference.py (transformers fp32)", st_hf, "ok", False)
            continue
        ref = load(file)
        st, secs = status(name)
        if ref is None:
            row(part, "reference.ts vs transformers", f"{st}, no JSON", "ok", False)
            continue
        ref_rows = ref if isinstance(ref, list) else ref.get("rows", [])
        for r in ref_rows:
            rel = r.get("relErr")
            row(part, r.get("what", "?")[:60],
                f"rel {num(rel, '.1e')}, max abs {num(r.get('maxAbs'), '.1e')}",
                f"<= {r.get('tol', 0):.0e}", bool(r.get("ok")))

    torch = load("torch.json") or {}
    t_st, _ = status("torch_bench")
    if t_st != "ok":
        row("bench", "torch_bench.py (PyTorch eager)", t_st, "ok", False)
    for e_k, e_v in (torch.get("errors") or {}).items():
        row("bench", f"error in PyTorch {e_k}", str(e_v)[:60], "-", False)
    for part, name, file in (("bench", "bench", "bench.json"),
                             ("bench f32", "bench_f32", "bench_f32.json")):
        bench = load(file)
        if bench is None or bench.get("ours") is None:
            st, _ = status(name)
            err = (bench or {}).get("error", "")
            row(part, "bench.ts (ours)", f"{st}, no results {err[:60]}", "ok", False)
            continue
        ours = bench["ours"]
        row(part, "our backend", ours.get("backend", "?"), "info", "info")
        for e_k, e_v in (ours.get("errors") or {}).items():
            row(part, f"error in ours {e_k}", str(e_v)[:60], "-", False)
        shapes = ours.get("shapes") or torch.get("shapes") or {}
        t_shapes = torch.get("shapes")
        if ours.get("shapes") and t_shapes and (
                list(ours["shapes"]["train"]) != list(t_shapes.get("train", []))
                or list(ours["shapes"]["decode"]) != list(t_shapes.get("decode", []))):
            row(part, "shapes differ: ours vs PyTorch", f"{ours['shapes']} vs {t_shapes}",
                "same", False)
        tb, tl = (shapes.get("train") or [8, 512])[:2]
        db = (shapes.get("decode") or [32])[0]
        for metric, o, t in [
            (f"training tokens/s (fwd+bwd, {tb}x{tl})", ours.get("trainTokensS"),
             torch.get("train_tokens_s")),
            (f"log-prob forward tokens/s ({tb}x{tl})", ours.get("logprobTokensS"),
             torch.get("logprob_tokens_s")),
            (f"decode tokens/s, batch {db}", ours.get("decodeTokensS"),
             torch.get("decode_tokens_s")),
            ("decode tokens/s, batch 1", ours.get("decode1TokensS"),
             torch.get("decode1_tokens_s")),
        ]:
            if o is None or not t:
                row(part, metric + ", ours / PyTorch", f"ours {num(o, '.0f')} / {num(t, '.0f')}",
                    ">= 1.0x", False)
                continue
            r = o / t
            row(part, metric + ", ours / PyTorch", f"{r:.2f}x ({o:.0f} / {t:.0f})", ">= 1.0x",
                r >= 1)
        f = ours.get("decode1BwFraction")
        nbytes = ours.get("bytesPerWeight", 4)
        row(part, f"decode batch 1: ours, fraction of the {nbytes}-byte bandwidth bound",
            f"{num(f, '.2f')} (bw {num(ours.get('boundBwGbs'), '.0f')} GB/s)", ">= 0.6",
            f is not None and f >= 0.6)
    fb = torch.get("decode1_bf16_bw_fraction")
    row("bench", "decode batch 1: PyTorch bf16 weights, of its 2-byte bound",
        f"{num(fb, '.3f')} ({num(torch.get('decode1_bf16_tokens_s'), '.0f')} tokens/s)",
        "info", "info")

    # bf16 training and log-probs with tensor-core attention and with the fp32 kernels (same run)
    tc = (load("bench.json") or {}).get("ours") or {}
    fp = (load("bench_attn_fp32.json") or {}).get("ours") or {}
    for metric, key in (("training", "trainTokensS"), ("log-prob forward", "logprobTokensS")):
        a, b = tc.get(key), fp.get(key)
        value = versus(a, b)
        row("attention", f"{metric}: tensor cores / AGENTRL_CUDA_ATTENTION=fp32", value, "info",
            "info")

    # batch-1 decode with and without the decode fusions (bench.ts --decode-only, same run)
    rates = {}
    for name in ("decode_fused", "decode_unfused", "decode_nopdl", "decode_layer",
                 "decode_qkv_in_attn", "decode_l2_head", "decode_layer_coop", "decode_layer_phase",
                 "decode_layer_noprefetch", "decode_stream",
                 "decode_stream_wide"):
        m = re.search(r"decode tokens/s, batch 1: ([0-9.]+)", read(f"{name}.log") or "")
        rates[name] = float(m[1]) if m else None
    fused, unfused = rates["decode_fused"], rates["decode_unfused"]
    value = versus(fused, unfused)
    row("decode", "batch 1: decode fusions / AGENTRL_DECODE_FUSION=0", value, "info", "info")
    nopdl = rates["decode_nopdl"]
    value = versus(fused, nopdl)
    row("decode", "batch 1: programmatic dependent launch / AGENTRL_CUDA_PDL=0", value, "info",
        "info")
    layer = rates["decode_layer"]
    value = versus(fused, layer)
    g = re.search(r"decode graphs: ([^\n(]*)", read("decode_fused.log") or "")
    value += f", graphs {g[1].strip()}" if g else ""
    row("decode", "batch 1: four chained kernels a layer (default) / separate calls "
        "(AGENTRL_DECODE_LAYER=0)", value, "info", "info")
    value = versus(fused, rates["decode_qkv_in_attn"])
    row("decode", "batch 1: q|k|v inside kernel 2 (the default) / kernel 1 of its own "
        "(AGENTRL_CUDA_DECODE_QKV_IN_ATTN=0)", value, "info", "info")
    value = versus(rates["decode_l2_head"], fused)
    row("decode", "batch 1: the LM head in an L2 set-aside (AGENTRL_CUDA_L2_PERSIST=max) / the "
        "default", value, "info", "info")
    m = re.search(r"decode chain, mean of (\d+) layers, us \(block 0\): (.*)",
                  read("decode_chain_times.log") or "")
    row("decode", "batch 1, four chained kernels a layer: block 0's spans (us)",
        f"{m[2].strip()} ({m[1]} layers)" if m else "-", "info", "info")
    m = re.search(r"phases, mean of (\d+) calls, us [^:]*: (.*)",
                  read("decode_layer_coop.log") or "")
    row("decode", "batch 1, one cooperative kernel a layer: mean phase times (us)",
        f"{m[2].strip()} ({m[1]} calls)" if m else "-", "info", "info")
    rest = [rates["decode_layer_coop"], rates["decode_layer_phase"],
            rates["decode_layer_noprefetch"]]
    row("decode", "batch 1, a cooperative kernel a layer, L2 prefetch: default / a phase ahead / "
        "none", " / ".join(num(r, ".0f") for r in rest) + " tokens/s", "info", "info")

    # the streaming one-row GEMV (AGENTRL_CUDA_GEMV_STREAM=1): every op again, batch-1 decode
    st, _ = status("ops_stream")
    m = re.search(r"(\d+) of (\d+) outputs within tolerance", read("ops_stream.log") or "")
    row("ops stream", "CUDA vs CPU backend, AGENTRL_CUDA_GEMV_STREAM=1",
        f"{m[1]} of {m[2]} within tol" if m else f"{st} (no result line)", "all",
        bool(m) and m[1] == m[2])
    stream = rates["decode_stream"]
    value = versus(stream, layer)
    row("decode", "batch 1: streaming GEMV (AGENTRL_CUDA_GEMV_STREAM=1) / separate calls", value,
        "info", "info")
    wide = rates["decode_stream_wide"]
    value = versus(wide, layer)
    row("decode", "batch 1: streaming GEMV where 2+ groups a block (=2) / separate calls", value,
        "info", "info")

    # the building blocks' ceilings (primitives.cu): streaming with one block per SM against
    # many blocks, a grid barrier, dependent reads
    prim = load("primitives.json")
    if prim is None:
        st, _ = status("primitives")
        row("primitives", "primitives.cu", f"{st}, no JSON", "info", "info")
    else:
        ref = prim.get("read, many blocks (the reference)")
        row("primitives", "read 1 GiB, many blocks per SM (the reference)",
            f"{num(ref, '.0f')} GB/s", "info", "info")
        for name in prim.get("wrong") or []:
            row("primitives", str(name)[len("read, "):], "WRONG SUM", "right", False)
        for name, value in prim.items():
            if name.startswith("read, 1 block/SM") and isinstance(value, (int, float)):
                row("primitives", name[len("read, "):],
                    f"{value:.0f} GB/s ({value / ref:.2f} of the reference)" if ref else
                    f"{value:.0f} GB/s", "info", "info")
        for name in ("grid barrier, one word", "grid barrier, cooperative_groups",
                     "dependent read, L2", "dependent read, DRAM"):
            row("primitives", name + " (us)", num(prim.get(name), ".3f"), "info", "info")

    # batch-1 decode's structure floors (decode_structure.cu): a token as kernels that only
    # read their bytes, cut into kernels each way
    floors = load("decode_structure.json")
    if floors is None:
        st, _ = status("decode_structure")
        row("structure", "decode_structure.cu", f"{st}, no JSON", "info", "info")
    else:
        row("structure", "bound (weights / copy bandwidth)",
            f"{num(floors.get('bound, us a token'), '.1f')} us a token, "
            f"{num(floors.get('copy bandwidth'), '.0f')} GB/s", "info", "info")
        for name in floors.get("wrong") or []:
            row("structure", str(name), "WRONG SUM", "right", False)
        for name, value in floors.items():
            base = name[:-len(", us a token")]
            timed = name.endswith(", us a token") and isinstance(value, (int, float))
            if timed and base != "bound":
                fraction = floors.get(base + ", fraction of the bound")
                row("structure", base, f"{value:.1f} us a token ({num(fraction, '.2f')} of "
                    "the bound)", "info", "info")

    # Nsight Compute's kernel times and DRAM throughput (the logs hold the stall locations)
    for name in ("profile_decode", "profile_decode_stream", "profile_decode_layer"):
        kernels = ncu_kernels(read(f"{name}.log") or "")
        if not kernels:
            st, _ = status(name)
            row(name, "ncu kernels", f"{st}, none profiled", "info", "info")
        for kernel, duration, dram in kernels:
            row(name, kernel[:70], f"{duration} us, DRAM {dram}%", "info", "info")

    header = ("part", "metric", "value", "target", "ok")
    table = [header] + [
        (p, m, v, t, ok if isinstance(ok, str) else ("ok" if ok else "FAIL"))
        for p, m, v, t, ok in rows
    ]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print("times: " + ", ".join(timing))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except Exception as e:  # the summary must never hide the logs
        print(f"summary.py: {type(e).__name__}: {e}")
        sys.exit(1)
