"""The PyTorch side of scripts/bench-llm.sh: SmolLM2 prefill and decode speed on the CPU
with transformers' Llama (eager, f32 weights dequantised by its GGUF loader from the same
file), in the form `llm_bench` prints for the row decoder: one JSON line a run. The prompt is
the row decoder's: "The quick brown fox jumps over the lazy dog. " repeated, cut to N tokens,
for every row; greedy; the prefill reads the prompt and picks one token, the decode takes M
more steps.

Usage: python3 scripts/bench-llm-torch.py FILE.gguf [--threads T] [--prompt-tokens N]
       [--new-tokens M] [--runs R] [--batch B]
Needs torch, transformers and the `gguf` package (scripts/torch-requirements.txt); no network.
"""

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt-tokens", type=int, default=37)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--batch", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    folder, name = os.path.dirname(os.path.abspath(a.file)), os.path.basename(a.file)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32)
    model.eval()
    text = "The quick brown fox jumps over the lazy dog. " * a.prompt_tokens
    prompt = tokenizer(text, add_special_tokens=False)["input_ids"][: a.prompt_tokens]
    ids = torch.tensor([prompt] * a.batch)

    def seconds(new):
        start = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                           min_new_tokens=new, do_sample=False, pad_token_id=0)
        return time.perf_counter() - start

    seconds(2)  # warm-up
    for _ in range(a.runs):
        prefill_s = seconds(1)
        decode_s = max(seconds(a.new_tokens + 1) - prefill_s, 1e-9)
        print(json.dumps({"batch": a.batch, "prefill_tokens": len(prompt), "prefill_s": prefill_s,
                          "decode_tokens": a.new_tokens, "decode_s": decode_s,
                          "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
