"""Model facts read from litellm's bundled price list are litellm's own, and a first start gets
them without the model worker (whose litellm import takes seconds)."""

from __future__ import annotations

import json
import sys

import pytest

from agentsh.llm import facts_cache, price_list, remote
from agentsh.llm.models import litellm_base_info
from agentsh.llm.remote import ModelWorker


def _listed_names() -> list[str]:
    path = price_list.price_list_path()
    assert path is not None
    names: set[str] = set()
    for key, entry in json.loads(path.read_bytes()).items():
        if isinstance(entry, dict) and entry.get("litellm_provider") in price_list.PROVIDERS:
            names.update((key, f"{entry['litellm_provider']}/{key}"))
    return sorted(names)


def test_every_fact_read_from_the_price_list_is_what_litellm_answers() -> None:
    answered = 0
    for name in _listed_names():
        listed = price_list.lookup(name)
        if listed is not None:
            answered += 1
            assert listed == litellm_base_info(name), name
    assert answered > 300  # the keyed providers' chat models, by key and provider/key


@pytest.mark.parametrize(
    "model",
    [
        "openai/not-in-the-price-list",
        "OpenAI/GPT-4o",  # litellm matches other spellings by rules of its own
        "anthropic/gpt-4o",  # another provider's entry
        "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",  # a provider with routes
        "openai/text-embedding-3-small",  # not a chat model
        "",
    ],
)
def test_what_is_not_a_plain_lookup_is_left_to_litellm(model: str) -> None:
    assert price_list.lookup(model) is None


def test_a_first_start_learns_a_listed_models_facts_without_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    never = ModelWorker([sys.executable, "-c", "raise SystemExit(3)"])

    def ask(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("the model worker was asked for facts the price list holds")

    monkeypatch.setattr(never, "ask", ask)
    monkeypatch.setattr(remote, "_shared", never)
    assert facts_cache.load("openai/gpt-4o") is None  # a new home
    info = remote.model_facts("openai/gpt-4o")
    assert info.known and info.window >= 128_000 and info.input_cost_per_token > 0
    assert facts_cache.load("openai/gpt-4o") == info  # remembered as the worker's answer is
