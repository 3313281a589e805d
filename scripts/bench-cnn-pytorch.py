#!/usr/bin/env python3
"""The digits CNN of compute/src/models/cnn.rs in PyTorch, timed the way
`compute/examples/cpu_bench.rs cnn` times ours: 1,797 images of 8 x 8 pixels in batches, a
warm-up pass, then PASSES timed passes; prints one JSON line. Weights are random: the
speed of a forward pass does not depend on their values.

    python scripts/bench-cnn-pytorch.py [--threads T] [--batch B] [--passes P]
"""
import argparse
import json
import time

import torch
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--passes", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    net = nn.Sequential(
        nn.Unflatten(1, (1, 8, 8)),
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64, 10),
    ).eval()
    images = torch.rand(1797, 64)

    def run() -> None:
        with torch.inference_mode():
            for start in range(0, len(images), args.batch):
                net(images[start:start + args.batch])

    run()
    start = time.perf_counter()
    for _ in range(args.passes):
        run()
    seconds = time.perf_counter() - start
    n = len(images) * args.passes
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": args.threads,
                      "batch": args.batch, "images": n, "seconds": seconds, "per_s": n / seconds}))


if __name__ == "__main__":
    main()
