#!/usr/bin/env python3
"""Plot test accuracy against bytes sent per worker from data/bench/compression.json
(written by `cargo run --release -p gpuchain-compute --example bench -- compression`).

    /tmp/refvenv/bin/pip install matplotlib
    /tmp/refvenv/bin/python scripts/plot-compression.py   # writes docs/compression-vs-accuracy.png
"""
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
doc = json.loads((ROOT / "data/bench/compression.json").read_text())
fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
for row in doc["rows"]:
    x, y = row["bytes_per_worker"], 100 * row["test_accuracy"]
    marker = "s" if "dense" in row["case"] else ("x" if "no-EF" in row["case"] else ("^" if "DGC" in row["case"] else "o"))
    ax.scatter([x], [y], marker=marker, s=48, label=f'{row["case"]}: {y:.2f}%, {row["compression_ratio"]:.0f}x')
ax.set_xscale("log")
ax.set_xlabel("bytes sent per worker over the whole run (log scale)")
ax.set_ylabel("test accuracy (%)")
ax.set_title(f'Digits MLP, {doc["workers"]} workers, {doc["rounds"]} rounds x {doc["local_steps"]} local steps')
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
out = ROOT / "docs/compression-vs-accuracy.png"
fig.savefig(out)
print(f"wrote {out}")
