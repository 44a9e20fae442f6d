"""Picks the switches to combine from decode_ab's table (h100_run20/call1.sh).

Reads the table on stdin; prints the environment (NAME=VALUE ...) of the variants below whose
pipelined median beats the `default` row's by more than 1%, taken best first and skipping any
that would set a variable to another value than one already taken (or combine kernel 3's 4
pieces with its 5 rows at once, which the library does not). Prints nothing if none does.
"""
import sys

D = "AGENTRL_CUDA_DECODE_"
# the variants of call1.sh's decode_ab run that may be combined, and what each sets
SWITCHES = {
    "attn_wait": {D + "ATTN_TRIGGER": "wait"},
    "attn_merge": {D + "ATTN_TRIGGER": "merge"},
    "down_rows": {D + "DOWN_TRIGGER": "rows"},
    "pieces2": {D + "MLP_PIECES": "2"},
    "pieces4": {D + "MLP_PIECES": "4"},
    "dot_rows5": {D + "MLP_DOT_ROWS": "5"},
    "down_pieces": {D + "DOWN_PIECES": "1"},
    "upload_kernel": {"AGENTRL_CUDA_UPLOAD": "kernel"},
    "pace4_2": {D + "MLP_PIECES": "4", D + "MLP_PACE": "2"},
    "pace2_1": {D + "MLP_PIECES": "2", D + "MLP_PACE": "1"},
}


def excluded(env):
    # kernel 3 in 4 pieces dots 4 rows at once whatever MLP_DOT_ROWS says
    return env.get(D + "MLP_PIECES") == "4" and env.get(D + "MLP_DOT_ROWS") == "5"


medians = {}
for line in sys.stdin:
    cols = line.split()
    if len(cols) > 2 and cols[0] != "variant":
        try:
            medians[cols[0]] = float(cols[1])
        except ValueError:
            pass  # (a variant whose runs failed: "-")
base = medians.get("default")
taken = {}
if base:
    ranked = sorted(SWITCHES, key=lambda name: -medians.get(name, 0.0))
    for name in ranked:
        if medians.get(name, 0.0) / base <= 1.01:
            break
        env = SWITCHES[name]
        merged = {**taken, **env}
        if any(taken.get(k, v) != v for k, v in env.items()) or excluded(merged):
            continue
        taken = merged
print(" ".join(f"{k}={v}" for k, v in sorted(taken.items())))
