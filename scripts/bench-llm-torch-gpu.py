"""The GPU anchor for SmolLM2 generation speed: PyTorch (transformers' Llama, eager, f32)
on the same GGUF file, dequantised by transformers' GGUF loader, fed the same prompt ids
as `cuda_calibration`'s speed section (37 tokens, 16 new, greedy, batch 1 and 8).
Prints one JSON line in the form of that section.

Usage: python3 scripts/bench-llm-torch-gpu.py FILE.gguf PROMPT_IDS.json [RUNS]
Needs torch with CUDA, transformers and the `gguf` package; runs without a network.
"""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

NEW = 16


def stats(xs):
    xs = sorted(xs)
    return {"median": statistics.median(xs), "min": xs[0], "max": xs[-1], "runs": len(xs)}


def timed_generate(model, ids, new):
    torch.cuda.synchronize()
    t = time.perf_counter()
    with torch.inference_mode():
        model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            pad_token_id=0,
        )
    torch.cuda.synchronize()
    return time.perf_counter() - t


def main():
    path, ids_file = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    prompt = json.load(open(ids_file))
    t = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(os.path.abspath(path)),
        gguf_file=os.path.basename(path),
        torch_dtype=torch.float32,
    ).to("cuda")
    model.eval()
    load_s = time.perf_counter() - t
    speed = {}
    for batch in (1, 8):
        ids = torch.tensor([prompt] * batch, device="cuda")
        timed_generate(model, ids, NEW + 1)
        prefill, decode = [], []
        for _ in range(runs):
            prefill_s = timed_generate(model, ids, 1)
            decode_s = max(timed_generate(model, ids, NEW + 1) - prefill_s, 1e-9)
            prefill.append(batch * len(prompt) / prefill_s)
            decode.append(batch * NEW / decode_s)
        speed[f"batch_{batch}"] = {
            "prefill_tokens_per_s": stats(prefill),
            "decode_tokens_per_s": stats(decode),
        }
    print(
        json.dumps(
            {
                "section": "torch_smollm2_speed",
                "result": {
                    "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name(0),
                    "prompt_tokens": len(prompt),
                    "new_tokens": NEW,
                    "load_s": load_s,
                    "speed": speed,
                },
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
