#!/usr/bin/env python3
"""Tiny random GGUF checkpoints of the Llama-family variants the decoder reads beyond plain
Llama, written with llama.cpp's own `gguf` Python package:

- data/gguf/variants/llama3-rope.gguf: `llama` with Llama 3.1 rope scaling (the per-pair
  `rope_freqs.weight` factors its converter writes) and an explicit head size
  (`attention.key_length` 32 with width 64 and 4 heads, so Q is 128 rows); Q and K stored
  in llama.cpp's pair layout, as its converter permutes them.
- data/gguf/variants/qwen2-bias.gguf: `qwen2` with Q/K/V biases, linear rope scaling (factor
  2) and a separate output layer; Q and K in HuggingFace's layout (llama.cpp rotates halves
  for this architecture).
- data/gguf/variants/qwen3-qk-norm.gguf: `qwen3` with per-head RMSNorm of Q and K and an
  explicit head size (key_length 24 with width 48 and 4 heads).
- data/gguf/variants/llama2-spm.gguf: plain `llama` with a SentencePiece tokenizer
  (`tokenizer.ggml.model = llama`, as Llama 2 and Mistral files have): pieces with scores,
  `<unk>`, `<s>`, `</s>` and the 256 byte pieces `<0x00>`… for characters no piece covers.

All tensors are f32, so that llama.cpp's figures on them (scripts/llama-cpp-anchor.mjs
`reference`, written next to each file as .llama-cpp.json) test the architecture rather
than quantisation rounding. The tokenizer is a byte-level BPE of 256 bytes, fifteen merges
and the control tokens of ChatML and Llama 3, with the pre-tokenizer of its family
(`llama-bpe` for Llama 3, `qwen2`), so that llama.cpp's token ids on
data/gguf/variants/tokenizer-prompts.json (`tokenize`, written as .llama-cpp-tokens.json)
test the pre-tokenizers too. Each file has a chat template of its family (Llama 3's headers;
ChatML with and without a default system message), which the anchor's `chat` command renders
with the same Jinja engine node-llama-cpp uses (.llama-cpp-chat.json).

Usage: python3 -m venv v && v/bin/pip install gguf numpy && v/bin/python scripts/gen-gguf-variants.py
"""
import math
import pathlib

import numpy as np
from gguf import GGUFWriter, RopeScalingType

OUT = pathlib.Path(__file__).resolve().parent.parent / "data" / "gguf" / "variants"


def byte_tokens():
    """GPT-2's printable stand-in for each byte, in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


CONTROL = ["<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>",
           "<|end_header_id|>", "<|eot_id|>", "<|endoftext|>"]

# Chat templates in the two formats the decoder reads, written for these files: ChatML with
# a default system message (as SmolLM2's and Qwen2.5's templates have), ChatML without one
# (Qwen3), and Llama 3's headers with the BOS token and trimmed content.
CHATML_DEFAULT_SYSTEM = (
    "{% for m in messages %}{% if loop.first and m['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
LLAMA3 = (
    "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
    "'<|end_header_id|>\n\n' + (m['content'] | trim) + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")


def tokenizer(w: GGUFWriter, pre: str, chat: str):
    tokens = byte_tokens()
    # Merges that cross the boundaries where pre-tokenizers differ (digit runs, a space
    # before digits, punctuation before letters, runs of spaces and newlines), so that a
    # wrong split gives other ids.
    merges = ["3 4", "1 2", "12 3", "Ġ t", "h e", "Ġt he", "! t", "' s", "Ġ Ġ", "Ċ Ċ",
              "e d", "i n", "in g", "Ã ©", "Ġ 1"]
    tokens += ["".join(m.split(" ")) for m in merges]
    plain = len(tokens)
    tokens += CONTROL
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([1] * plain + [3] * len(CONTROL))
    w.add_token_merges(merges)
    w.add_chat_template(chat)
    if chat == LLAMA3:
        w.add_bos_token_id(tokens.index("<|begin_of_text|>"))
        w.add_eos_token_id(tokens.index("<|endoftext|>"))
        w.add_eot_token_id(tokens.index("<|eot_id|>"))
        w.add_add_bos_token(True)
    else:
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_eos_token_id(tokens.index("<|im_end|>"))
        w.add_add_bos_token(False)
    return len(tokens)


def spm_tokenizer(w: GGUFWriter):
    """A SentencePiece vocabulary: every printable ASCII character and a few accented ones as
    pieces, pieces joined from them with scores that decide the merge order (some pieces can
    be made in two ways, some merges compete for a character), and byte pieces for the rest
    (CJK, emoji, tabs)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0] * len(tokens)
    singles = ["\u2581"] + [chr(c) for c in range(0x21, 0x7F)] + list("éèïüåÅ\n")
    for i, s in enumerate(singles):
        tokens.append(s)
        types.append(1)
        scores.append(-1000.0 - i)
    joined = ["\u2581t", "he", "\u2581the", "\u2581th", "in", "ing", "er", "\u2581a", "an", "\u2581an",
              "\u2581\u2581", "\u2581\u2581\u2581", "12", "123", "\u25811", "34", "\u2581w", "or", "ld",
              "\u2581wor", "\u2581world", "ll", "He", "Hell", "Hello", "\u2581qu", "ick", "\u2581f", "ox",
              "\u2581fox", "\u2581is", "is", "\u2581c", "ap", "it", "al", "ti", "on", "\u2581Caf", "é\u2581",
              "\n\n", "\u2581s", "pa", "ce", "es", "\u2581spa", "\u2581spaces", "aï", "\u2581r", "é",
              "ré", "su", "mé", "\u2581ré"]
    for i, s in enumerate(joined):
        if s in tokens:
            continue
        tokens.append(s)
        types.append(1)
        scores.append(-float(i))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_scores(scores)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    return len(tokens)


def pair_layout(w, heads):
    """HuggingFace's rotate-half rows of each head to llama.cpp's adjacent pairs: HF row
    `p * half + i` of a head is stored as row `2i + p`."""
    rows, cols = w.shape
    head = rows // heads
    half = head // 2
    out = np.empty_like(w)
    for h in range(heads):
        for i in range(half):
            for p in range(2):
                out[h * head + 2 * i + p] = w[h * head + p * half + i]
    return out


def llama3_rope_factors(head_dim, theta, factor, low, high, original_context):
    """The divisor of each pair's frequency under Llama 3.1 rope scaling (what llama.cpp's
    converter stores as `rope_freqs.weight`)."""
    out = []
    low_wavelen, high_wavelen = original_context / low, original_context / high
    for i in range(0, head_dim, 2):
        freq = 1.0 / theta ** (i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (original_context / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write(name, arch, *, vocab_pre, chat, hidden, ffn, layers, heads, kv_heads, head_dim, theta,
          bias=False, qk_norm=False, pair=False, rope_freqs=None, linear_scale=None,
          separate_output=False, seed=0, split_max_tensors=0):
    rng = np.random.default_rng(seed)
    out = OUT / "split" if split_max_tensors else OUT
    out.mkdir(parents=True, exist_ok=True)
    w = GGUFWriter(out / name, arch, split_max_tensors=split_max_tensors)
    w.add_name(name)
    vocab = spm_tokenizer(w) if vocab_pre == "spm" else tokenizer(w, vocab_pre, chat)
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_block_count(layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)  # all f32
    if linear_scale is not None:
        w.add_rope_scaling_type(RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(linear_scale)

    def mat(rows, cols):
        return (rng.standard_normal((rows, cols)) / math.sqrt(cols)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    q_dim, kv_dim = heads * head_dim, kv_heads * head_dim
    w.add_tensor("token_embd.weight", (0.25 * rng.standard_normal((vocab, hidden))).astype(np.float32))
    w.add_tensor("output_norm.weight", norm(hidden))
    if separate_output:
        w.add_tensor("output.weight", mat(vocab, hidden))
    if rope_freqs is not None:
        w.add_tensor("rope_freqs.weight", rope_freqs)
    for l in range(layers):
        q, k = mat(q_dim, hidden), mat(kv_dim, hidden)
        if pair:
            q, k = pair_layout(q, heads), pair_layout(k, kv_heads)
        w.add_tensor(f"blk.{l}.attn_norm.weight", norm(hidden))
        w.add_tensor(f"blk.{l}.attn_q.weight", q)
        w.add_tensor(f"blk.{l}.attn_k.weight", k)
        w.add_tensor(f"blk.{l}.attn_v.weight", mat(kv_dim, hidden))
        if bias:
            for t, n in (("q", q_dim), ("k", kv_dim), ("v", kv_dim)):
                w.add_tensor(f"blk.{l}.attn_{t}.bias", (0.5 * rng.standard_normal(n)).astype(np.float32))
        if qk_norm:
            w.add_tensor(f"blk.{l}.attn_q_norm.weight", norm(head_dim))
            w.add_tensor(f"blk.{l}.attn_k_norm.weight", norm(head_dim))
        w.add_tensor(f"blk.{l}.attn_output.weight", mat(hidden, q_dim))
        w.add_tensor(f"blk.{l}.ffn_norm.weight", norm(hidden))
        w.add_tensor(f"blk.{l}.ffn_gate.weight", mat(ffn, hidden))
        w.add_tensor(f"blk.{l}.ffn_up.weight", mat(ffn, hidden))
        w.add_tensor(f"blk.{l}.ffn_down.weight", mat(hidden, ffn))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {out / name}")


write("llama3-rope.gguf", "llama", vocab_pre="llama-bpe", chat=LLAMA3, hidden=64, ffn=96, layers=2, heads=4,
      kv_heads=2, head_dim=32, theta=500.0, pair=True,
      rope_freqs=llama3_rope_factors(32, 500.0, 8.0, 1.0, 4.0, 64), seed=1)
write("qwen2-bias.gguf", "qwen2", vocab_pre="qwen2", chat=CHATML_DEFAULT_SYSTEM, hidden=64, ffn=96, layers=2, heads=4,
      kv_heads=2, head_dim=16, theta=1000.0, bias=True, linear_scale=2.0,
      separate_output=True, seed=2)
# The same qwen2 file split into files of at most 12 tensors, as llama.cpp's gguf-split does
# (qwen2-bias-00001-of-00003.gguf, …): the loader must read it as the whole file.
write("qwen2-bias.gguf", "qwen2", vocab_pre="qwen2", chat=CHATML_DEFAULT_SYSTEM, hidden=64, ffn=96,
      layers=2, heads=4, kv_heads=2, head_dim=16, theta=1000.0, bias=True, linear_scale=2.0,
      separate_output=True, seed=2, split_max_tensors=12)
write("qwen3-qk-norm.gguf", "qwen3", vocab_pre="qwen2", chat=CHATML, hidden=48, ffn=96, layers=2, heads=4,
      kv_heads=2, head_dim=24, theta=1000.0, qk_norm=True, seed=3)
write("llama2-spm.gguf", "llama", vocab_pre="spm", chat=None, hidden=32, ffn=64, layers=2, heads=4,
      kv_heads=4, head_dim=8, theta=10000.0, pair=True, seed=4)
