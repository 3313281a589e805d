#!/usr/bin/env python3
"""A tiny random Llama checkpoint and its outputs from HuggingFace transformers.

Writes data/llama/tiny-llama.safetensors (usual Llama tensor names) and
data/llama/tiny-llama-reference.json (prompt logits and greedy tokens from
`LlamaForCausalLM`), which the Rust decoder test compares against. Needs torch and
transformers (see scripts/gen-reference-vectors.py for the venv).
"""
import json
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

OUT = Path(__file__).resolve().parent.parent / "data/llama"
SHAPE = dict(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
PROMPTS = [[1, 5, 9, 2, 7], [40, 41, 42, 43, 44]]
NEW_TOKENS = 10


def main() -> None:
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**SHAPE, attn_implementation="eager")).eval()
    with torch.no_grad():
        # Larger weights than the default init so that logits are well separated.
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / p.shape[-1] ** 0.5)
        ids = torch.tensor(PROMPTS)
        logits = model(ids).logits
        out = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)
    OUT.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, OUT / "tiny-llama.safetensors")
    import transformers
    doc = {
        "generator": f"transformers {transformers.__version__}, torch {torch.__version__}, LlamaForCausalLM (eager attention)",
        "shape": SHAPE,
        "prompts": PROMPTS,
        "prompt_logits": [[[float(f"{x:.8g}") for x in pos] for pos in row] for row in logits.tolist()],
        "greedy_tokens": [row[len(PROMPTS[0]):] for row in out.tolist()],
    }
    (OUT / "tiny-llama-reference.json").write_text(json.dumps(doc) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
