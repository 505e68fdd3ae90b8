"""TokenCounter: tiktoken with litellm's shipped encodings, an estimate when they are missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsh.llm import tokens
from agentsh.llm.tokens import TokenCounter, encoding_name_for, estimate_tokens


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai/gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("openai/gpt-4.1", "o200k_base"),
        ("gpt-5.1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("openai/o1", "o200k_base"),
        ("groq/openai/gpt-oss-120b", "o200k_base"),
        ("anthropic/claude-sonnet-4-6", "cl100k_base"),
        ("gpt-4", "cl100k_base"),
        ("ollama_chat/llama3", "cl100k_base"),
        ("openai/test-model", "cl100k_base"),
        ("openai/omni-moderation", "cl100k_base"),
    ],
)
def test_the_encoding_follows_the_model_family(model: str, encoding: str) -> None:
    assert encoding_name_for(model) == encoding


def test_counts_are_exact_with_the_shipped_encodings() -> None:
    o200k = TokenCounter("openai/gpt-4o")
    cl100k = TokenCounter("anthropic/claude-sonnet-4-6")

    assert o200k.exact and cl100k.exact
    assert o200k.count("hello world") == 2
    assert cl100k.count("hello world") == 2
    # The encodings differ: the same text is not always the same number of tokens.
    text = "Déjà vu: 日本語のテキストとコード def f(x): return x ** 2"
    assert o200k.count(text) != cl100k.count(text)
    assert o200k.count("") == 0


def test_special_token_text_is_counted_not_rejected() -> None:
    assert TokenCounter("gpt-4o").count("<|endoftext|>") > 1


def test_count_messages_adds_per_message_overhead_tool_calls_and_schemas() -> None:
    counter = TokenCounter("openai/gpt-4o")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    ]
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]

    bare = sum(counter.count(t) for t in ("You are terse.", "list files", "a.py\nb.py"))
    total = counter.count_messages(messages)

    assert total > bare + 4 * 3  # every message costs its separators
    assert counter.count_messages(messages, tools) > total
    assert counter.count_messages([]) == 0


def test_a_missing_encoding_file_falls_back_to_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An empty tokenizer folder: tiktoken would download, so the counter must not ask it.
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr("agentsh.llm.env._tokenizer_dir", tmp_path)
    monkeypatch.setattr("agentsh.llm.env._prepared", True)

    counter = TokenCounter("openai/gpt-4o")
    text = "a fairly ordinary sentence of English text " * 5

    assert not counter.exact
    assert counter.count(text) == estimate_tokens(text)
    assert counter.count("日本語") == 3


def test_a_corrupt_encoding_file_falls_back_to_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    url = tokens._ENCODING_URLS["cl100k_base"]
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"not an encoding\n")
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr("agentsh.llm.env._tokenizer_dir", tmp_path)
    monkeypatch.setattr("agentsh.llm.env._prepared", True)

    counter = TokenCounter("anthropic/claude-x")

    assert not counter.warm()
    assert counter.count("abcdefgh") == 2
