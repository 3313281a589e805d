#!/usr/bin/env python3
"""Talks to an OpenAI-compatible gpuchain endpoint with the official `openai` package,
unchanged, and checks what a user of it would: the model list, a greedy chat answer, the
same answer streamed, and an unknown model refused with NotFoundError.

    python chat_check.py BASE_URL MODEL
"""
import json
import sys

import openai
from openai import OpenAI


def main() -> None:
    base, model = sys.argv[1], sys.argv[2]
    client = OpenAI(base_url=base, api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == [model]
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
    try:
        client.chat.completions.create(model="no-such-model", messages=question)
        raise AssertionError("an unknown model was served")
    except openai.NotFoundError:
        pass
    print(json.dumps({"openai": openai.__version__, "answer": text, "chunks": len(chunks)}))


if __name__ == "__main__":
    main()
