#!/usr/bin/env python3
"""Reference dequantisation of the GGUF K-quant blocks, from llama.cpp's own Python package.

Writes data/gguf/kquants.json: for Q4_K, Q5_K and Q6_K, two blocks of seeded random bytes
(with finite f16 scales) and the f32 values `gguf.quants.dequantize` gives for them. The
Rust dequantiser in compute/src/gguf/dequant.rs must give the same values.

Usage: python3 -m venv v && v/bin/pip install gguf numpy && v/bin/python scripts/gen-gguf-vectors.py
"""
import json
import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

# (type, bytes per block, byte offsets of the f16 scales in a block)
LAYOUT = {
    "Q4_K": (T.Q4_K, 144, [0, 2]),
    "Q5_K": (T.Q5_K, 176, [0, 2]),
    "Q6_K": (T.Q6_K, 210, [208]),
}

rng = np.random.default_rng(20261201)
out = {"source": "gguf (llama.cpp gguf-py) quants.dequantize", "cases": []}
for name, (kind, size, scales) in LAYOUT.items():
    blocks = rng.integers(0, 256, size=(2, size), dtype=np.uint8)
    for b in blocks:
        for at in scales:
            b[at:at + 2] = np.frombuffer(np.float16(rng.uniform(-0.1, 0.1)).tobytes(), np.uint8)
    raw = blocks.reshape(-1)
    values = dequantize(raw, kind).reshape(-1).astype(np.float32)
    out["cases"].append({
        "type": name,
        "ggml_type": int(kind),
        "blocks_hex": raw.tobytes().hex(),
        "values": [float(v) for v in values],
    })
path = pathlib.Path(__file__).resolve().parent.parent / "data" / "gguf" / "kquants.json"
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps(out) + "\n")
print(f"wrote {path}")
