#!/usr/bin/env python3
"""Talks to an OpenAI-compatible gpuchain endpoint with the official `openai` package,
unchanged, and checks what a user of it would: the model list, a greedy chat answer, the
same answer streamed, a text completion, an unknown model refused with NotFoundError, and
embeddings (which the client asks for as base64 by default) that rank a paraphrase above an
unrelated sentence.

    python chat_check.py BASE_URL CHAT_MODEL EMBEDDING_MODEL
"""
import json
import sys

import openai
from openai import OpenAI


def main() -> None:
    base, model, embedder = sys.argv[1], sys.argv[2], sys.argv[3]
    client = OpenAI(base_url=base, api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == [model, embedder]
    question = [{"role": "user", "content": "What is the capital of France?"}]
    answer = client.chat.completions.create(model=model, messages=question, temperature=0,
                                            max_tokens=48)
    text = answer.choices[0].message.content
    assert "Paris" in text, text
    assert answer.choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(model=model, messages=question, temperature=0,
                                            max_tokens=48, stream=True)
    chunks = [c.choices[0].delta.content or "" for c in stream]
    assert "".join(chunks) == text, (chunks, text)
    completion = client.completions.create(model=model, prompt="The capital of France is",
                                           temperature=0, max_tokens=8)
    assert "Paris" in completion.choices[0].text, completion
    try:
        client.chat.completions.create(model="no-such-model", messages=question)
        raise AssertionError("an unknown model was served")
    except openai.NotFoundError:
        pass
    vectors = [d.embedding for d in client.embeddings.create(
        model=embedder,
        input=["The cat sat on the mat.", "A cat is sitting on a rug.", "Stock markets fell today."],
    ).data]
    assert len(vectors) == 3 and len(vectors[0]) == 384
    cos = lambda a, b: sum(x * y for x, y in zip(a, b))
    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2]) + 0.3
    print(json.dumps({"openai": openai.__version__, "answer": text, "chunks": len(chunks),
                      "paraphrase_cosine": cos(vectors[0], vectors[1])}))


if __name__ == "__main__":
    main()
