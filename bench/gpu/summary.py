"""Prints the one summary table of bench/gpu/run.sh from the logs in OUT_DIR.

Usage: python3 bench/gpu/summary.py OUT_DIR
"""
import json
import os
import re
import sys


def main(out: str) -> None:
    rows = []

    def row(part, metric, value, target, ok):
        rows.append((part, metric, value, target, ok))

    def read(name):
        path = os.path.join(out, name)
        return open(path).read() if os.path.exists(path) else None

    build = read("build.status")
    row("build", "libagentrl_cpu.so + libagentrl_cuda.so", build or "not run", "-",
        "ok" if build == "built" else "FAIL")
    ops = read("ops.log") or ""
    m = re.search(r"(\d+) of (\d+) outputs within tolerance", ops)
    row("ops", "CUDA vs CPU backend, every op", f"{m[1]} of {m[2]} within tol" if m else "not run",
        "all", "ok" if m and m[1] == m[2] else "FAIL")
    for device in ("cuda", "cpu"):
        ref = read(f"reference_{device}.json")
        if ref is None:
            row(f"ref {device}", "vs Hugging Face transformers", "not run", "-", "FAIL")
            continue
        for r in json.loads(ref):
            row(f"ref {device}", r["what"][:56], f"rel err {r['relErr']:.1e}", f"<= {r['tol']:.0e}",
                "ok" if r["ok"] else "FAIL")
    modes = sorted(f[6:-5] for f in os.listdir(out) if f.startswith("bench_") and f.endswith(".json"))
    if not modes:
        row("bench", "vs PyTorch eager", "not run", "-", "FAIL")
    for mode in modes:
        b = read(f"bench_{mode}.json")
        d = json.loads(b)
        o, t = d["ours"], d["torch"]
        for name, ours, base in [
            ("training tokens/s (fwd+bwd, 8x512)", o["trainTokensS"], t["train_tokens_s"]),
            ("log-prob forward tokens/s (8x512)", o["logprobTokensS"], t["logprob_tokens_s"]),
            ("decode tokens/s, batch 32", o["decodeTokensS"], t["decode_tokens_s"]),
            ("decode tokens/s, batch 1", o["decode1TokensS"], t["decode1_tokens_s"]),
        ]:
            r = ours / base
            row(f"bench {mode}", name + ", ours / PyTorch", f"{r:.2f}x ({ours:.0f} / {base:.0f})",
                ">= 1.0x", "ok" if r >= 1 else "below")
        f = o["decode1BwFraction"]
        row(f"bench {mode}", "decode batch 1, fraction of bandwidth bound", f"{f:.2f}", ">= 0.6",
            "ok" if f >= 0.6 else "below")
    widths = [max(len(str(r[i])) for r in rows + [("part", "metric", "value", "target", "ok")])
              for i in range(5)]
    for r in [("part", "metric", "value", "target", "ok")] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main(sys.argv[1])
