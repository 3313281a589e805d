#!/usr/bin/env python3
"""Compression against accuracy over three seeds, bytes counted both ways: runs
`compute/examples/bench.rs train` (built by `cargo build --workspace --all-targets --locked`)
for dense f32 and four compressed cases with seeds 1, 2, 3 (minibatch order; 400 rounds, 4
workers, the digits MLP) and prints a Markdown table: mean and spread of test accuracy, the
gap to dense with the same seed, bytes up and down per worker, and the ratio of both
directions against dense f32 both ways. The same figures per case go to
data/bench/compression-both.json, which scripts/plot-compression.py plots.

    python3 scripts/bench-compression.py
"""
import json
import os
import statistics
import subprocess

EXE = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/gpuchain/target")),
                   "debug/examples/bench")
CASES = [
    ("dense f32", {"topk_ppm": 1000000, "value_bits": "32"}),
    ("top-1 % + EF, f16", {"topk_ppm": 10000, "value_bits": "16"}),
    ("top-1 % + EF, int8", {"topk_ppm": 10000, "value_bits": "8"}),
    ("top-0.1 % + EF, f16", {"topk_ppm": 1000, "value_bits": "16"}),
    ("top-0.1 % + EF, int8", {"topk_ppm": 1000, "value_bits": "8"}),
]
SEEDS = [1, 2, 3]


def main() -> None:
    res = {}
    for name, overrides in CASES:
        for seed in SEEDS:
            spec = dict(overrides, rounds=400, seed=seed)
            res[(name, seed)] = json.loads(subprocess.check_output([EXE, "train", json.dumps(spec)]))
    rows = []
    print("| case | test accuracy, mean (min–max) | vs dense, same seed, points: mean (min–max) "
          "| bytes up / worker | bytes down / worker | both directions vs dense |")
    print("|---|---|---|---|---|---|")
    for name, _ in CASES:
        runs = [res[(name, s)] for s in SEEDS]
        acc = [100 * r["test_accuracy"] for r in runs]
        gap = [100 * (r["test_accuracy"] - res[("dense f32", s)]["test_accuracy"]) for r, s in zip(runs, SEEDS)]
        up = statistics.mean(r["bytes_per_worker"] for r in runs)
        down = statistics.mean(r["bytes_down_per_worker"] for r in runs)
        total = statistics.mean(r["total_ratio"] for r in runs)
        print(f"| {name} | {statistics.mean(acc):.2f} % ({min(acc):.2f}–{max(acc):.2f}) "
              f"| {statistics.mean(gap):+.2f} ({min(gap):+.2f} to {max(gap):+.2f}) "
              f"| {up:,.0f} | {down:,.0f} | {total:.1f}× |")
        rows.append({
            "case": name,
            "test_accuracy_pct": {"mean": statistics.mean(acc), "min": min(acc), "max": max(acc)},
            "bytes_up_per_worker": up,
            "bytes_down_per_worker": down,
            "bytes_total_per_worker": up + down,
            "dense_both_ways_per_worker": 2 * runs[0]["dense_bytes_per_worker"],
            "both_directions_vs_dense": total,
        })
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "bench", "compression-both.json")
    with open(out, "w") as f:
        json.dump({"seeds": SEEDS, "rounds": 400, "workers": 4, "model": "digits MLP", "cases": rows}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
