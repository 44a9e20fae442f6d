"""Picks the switches to combine from decode_ab's table (h100_run20/call1.sh).

Reads the table on stdin; prints the environment (NAME=VALUE ...) of every single-switch variant
whose pipelined median beats the `default` row's by more than 1%, keeping the better of two
variants that set the same variable. Prints nothing if none does.
"""
import sys

# the single-switch variants of call1.sh's decode_ab run, and what each sets
SWITCHES = {
    "attn_wait": ("AGENTRL_CUDA_DECODE_ATTN_TRIGGER", "wait"),
    "attn_merge": ("AGENTRL_CUDA_DECODE_ATTN_TRIGGER", "merge"),
    "down_rows": ("AGENTRL_CUDA_DECODE_DOWN_TRIGGER", "rows"),
    "pieces2": ("AGENTRL_CUDA_DECODE_MLP_PIECES", "2"),
    "pieces4": ("AGENTRL_CUDA_DECODE_MLP_PIECES", "4"),
    "dot_rows5": ("AGENTRL_CUDA_DECODE_MLP_DOT_ROWS", "5"),
    "down_pieces": ("AGENTRL_CUDA_DECODE_DOWN_PIECES", "1"),
    "upload_kernel": ("AGENTRL_CUDA_UPLOAD", "kernel"),
}

medians = {}
for line in sys.stdin:
    cols = line.split()
    if len(cols) > 2 and cols[0] != "variant":
        try:
            medians[cols[0]] = float(cols[1])
        except ValueError:
            pass  # (a variant whose runs failed: "-")
base = medians.get("default")
best = {}  # variable -> (ratio, value)
if base:
    for name, (var, value) in SWITCHES.items():
        ratio = medians.get(name, 0.0) / base
        if ratio > 1.01 and ratio > best.get(var, (0.0, ""))[0]:
            best[var] = (ratio, value)
# kernel 3 in 4 pieces dots 4 rows at once whatever MLP_DOT_ROWS says: keep the better of the two
pieces, rows = "AGENTRL_CUDA_DECODE_MLP_PIECES", "AGENTRL_CUDA_DECODE_MLP_DOT_ROWS"
if best.get(pieces, (0.0, ""))[1] == "4" and rows in best:
    del best[rows if best[rows][0] < best[pieces][0] else pieces]
print(" ".join(f"{var}={value}" for var, (_, value) in sorted(best.items())))
