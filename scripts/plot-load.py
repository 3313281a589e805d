#!/usr/bin/env python3
"""Plot a long `loadgen` run: node 0's live state and height, the localnet's disk and app
state, and the nodes' resident memory, one point a minute, from the JSON loadgen prints on
stdout or, for a run cut short, the `sample {…}` lines it prints on stderr as it goes.

    python3 -m venv /tmp/plotvenv && /tmp/plotvenv/bin/pip install matplotlib
    ~/.cache/gpuchain/target/debug/examples/loadgen 4 3600 300 100 20 1000 1000 2000 > load.json
    /tmp/plotvenv/bin/python scripts/plot-load.py load.json docs/load-60min.png

A third argument titles a plot drawn from the stderr samples.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    lines = open(source).read().strip().splitlines()
    if lines and lines[0].startswith("sample "):
        samples = [json.loads(line[len("sample "):]) for line in lines if line.startswith("sample ")]
        title = sys.argv[3] if len(sys.argv) > 3 else "load run, from its per-minute samples"
    else:
        run = json.loads(lines[-1])
        samples = [s for s in run["resources"] if "live_state_bytes" in s]
        title = (
            f"{run['validators']} validators, {run['offered_rate_per_sec']} tx/s offered "
            f"({run['market_percent']}% market orders), "
            f"{run['committed_tx_per_sec']:.0f} tx/s committed"
        )
    minutes = [s["at_secs"] / 60 for s in samples]
    fig, axes = plt.subplots(4, 1, figsize=(8, 11), sharex=True)
    axes[0].plot(minutes, [s["live_state_bytes"] / 2**20 for s in samples], marker=".")
    axes[0].set_ylabel("live state, node 0 (MiB)")
    twin = axes[0].twinx()
    twin.plot(minutes, [s["open_orders"] for s in samples], color="tab:orange", alpha=0.6)
    twin.set_ylabel("open orders", color="tab:orange")
    axes[1].plot(minutes, [s["app_state_mib"] for s in samples], marker=".", label="app state, 4 nodes")
    axes[1].plot(minutes, [s["disk_mib"] for s in samples], marker=".", label="whole localnet")
    axes[1].set_ylabel("disk (MiB)")
    axes[1].legend()
    axes[2].plot(minutes, [s["rss_mib"] for s in samples], marker=".")
    axes[2].set_ylabel("RSS, 8 processes (MiB)")
    per_minute = [0] + [b["height"] - a["height"] for a, b in zip(samples, samples[1:])]
    axes[3].plot(minutes, per_minute, marker=".")
    axes[3].set_ylabel("blocks in the minute")
    axes[3].set_xlabel("minutes of load")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(target, dpi=110)


if __name__ == "__main__":
    main()
