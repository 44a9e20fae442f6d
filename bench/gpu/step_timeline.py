#!/usr/bin/env python3
"""Where a decode step's time goes on the GPU, from an Nsight Systems export (sqlite).

usage: step_timeline.py REPORT.sqlite [STEP_KERNEL]

A step ends with STEP_KERNEL (default: the greedy sampler, greedy_split_kernel). For the
steps of the run's second half it prints the median step time, the GPU's busy and idle time
within a step, each activity's median time a step, and the idle gaps between activities
(median a step, by the pair of activities around them).
"""
import sqlite3
import statistics
import sys
from collections import defaultdict


def load(path):
    db = sqlite3.connect(path)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    acts = []
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        for start, end, short in db.execute(
            "SELECT start, end, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ):
            acts.append((start, end, names.get(short, "?")))
    kinds = {1: "memcpy HtoD", 2: "memcpy DtoH", 8: "memcpy DtoD", 10: "memcpy PtoP"}
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        for start, end, kind in db.execute(
            "SELECT start, end, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"
        ):
            acts.append((start, end, kinds.get(kind, f"memcpy {kind}")))
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for start, end in db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            acts.append((start, end, "memset"))
    acts.sort()
    return acts


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    step_kernel = sys.argv[2] if len(sys.argv) > 2 else "greedy_split_kernel"
    acts = load(sys.argv[1])
    ends = [i for i, a in enumerate(acts) if step_kernel in a[2]]
    if len(ends) < 4:
        sys.exit(f"{len(ends)} {step_kernel} kernels found: too few steps")
    ends = ends[len(ends) // 2:]
    totals, busys = [], []
    per_name = defaultdict(list)
    per_gap = defaultdict(list)
    for a, b in zip(ends, ends[1:]):
        window = acts[a + 1: b + 1]
        t_begin, t_end = acts[a][1], acts[b][1]
        if t_end - t_begin > 5e6:  # (between runs)
            continue
        totals.append(t_end - t_begin)
        sums = defaultdict(int)
        gaps = defaultdict(int)
        busy, cursor, prev = 0, t_begin, acts[a][2]
        for start, end, name in window:
            sums[name] += end - start
            if start > cursor:
                gaps[(prev, name)] += start - cursor
            if end > cursor:
                busy += end - max(start, cursor)
                cursor = end
                prev = name
        busys.append(busy)
        for k, v in sums.items():
            per_name[k].append(v)
        for k, v in gaps.items():
            per_gap[k].append(v)
    n = len(totals)
    if n == 0:
        sys.exit("no steps within 5 ms")
    med = statistics.median
    step = med(totals)
    print(f"{n} steps: median {step / 1e3:.1f} us a step, GPU busy {med(busys) / 1e3:.1f} us, "
          f"idle {(step - med(busys)) / 1e3:.1f} us")
    print("activity (median us a step, in steps that had it; count of steps):")
    for name, v in sorted(per_name.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {med(v) / 1e3:8.1f}  {len(v):4d}  {name[:90]}")
    print("idle gaps (median us a step, in steps that had them; before -> after):")
    for (p, q), v in sorted(per_gap.items(), key=lambda kv: -sum(kv[1]))[:15]:
        print(f"  {med(v) / 1e3:8.1f}  {len(v):4d}  {p[:45]} -> {q[:45]}")


if __name__ == "__main__":
    main()
