#!/usr/bin/env python3
"""Plot test accuracy against the bytes a worker moved, up, down and both ways, from
data/bench/compression-both.json (written by `python3 scripts/bench-compression.py`: the
digits MLP, 4 workers, 400 rounds, mean of three seeds, the bar showing the seeds' spread).

    python3 scripts/plot-compression.py   # writes docs/compression-vs-accuracy.png
"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    try:
        import matplotlib
    except ImportError:
        # Rerun in the plotting environment (made once from scripts/plot-requirements.txt).
        python = subprocess.check_output(
            ["bash", str(ROOT / "scripts/venv.sh"), "venv-plot",
             str(ROOT / "scripts/plot-requirements.txt"), "import matplotlib"], text=True).strip()
        sys.exit(subprocess.call([python, __file__]))
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    doc = json.loads((ROOT / "data/bench/compression-both.json").read_text())
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=120)
    directions = [("bytes_up_per_worker", "^", "up"), ("bytes_down_per_worker", "v", "down"),
                  ("bytes_total_per_worker", "o", "both ways")]
    for i, case in enumerate(doc["cases"]):
        acc = case["test_accuracy_pct"]
        y, spread = acc["mean"], [[acc["mean"] - acc["min"]], [acc["max"] - acc["mean"]]]
        colour = f"C{i}"
        xs = [case[key] for key, _, _ in directions]
        ax.plot(xs, [y] * 3, color=colour, alpha=0.4)
        for (key, marker, _), x in zip(directions, xs):
            ax.errorbar([x], [y], yerr=spread, fmt=marker, color=colour, ms=7, capsize=3)
        ax.annotate(f'{case["case"]}: {y:.2f}%, {case["both_directions_vs_dense"]:.0f}x both ways',
                    (case["bytes_total_per_worker"], y), textcoords="offset points",
                    xytext=(6, 6 if i % 2 else -12), fontsize=7, color=colour)
    for key, marker, label in directions:
        ax.scatter([], [], marker=marker, color="grey", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("bytes per worker over the whole run (log scale): sent up, received down, both")
    ax.set_ylabel("test accuracy (%), mean of three seeds (bars: min–max)")
    ax.set_title(f'{doc["model"]}, {doc["workers"]} workers, {doc["rounds"]} rounds, seeds '
                 f'{", ".join(map(str, doc["seeds"]))}')
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out = ROOT / "docs/compression-vs-accuracy.png"
    fig.savefig(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
