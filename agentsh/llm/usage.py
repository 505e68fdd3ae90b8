"""What one model call consumed and what it costs.

:func:`parse_usage` reads litellm's usage into ours: ``input_tokens`` is every prompt token not
read from the prompt cache (cache writes included), ``cache_read_tokens`` and
``cache_write_tokens`` apart. :func:`call_cost` prices it: litellm's price table for the model,
or the config's overrides, which price the cache too (reads at 0.1x and writes at 1.25x of the
input override, or litellm's own ratios for a model it knows, or the explicit cache prices) and
never charge a cache read at the full input price.
"""

from __future__ import annotations

from typing import Any

from agentsh.config import ModelSettings
from agentsh.llm.env import import_litellm, litellm_loaded
from agentsh.llm.models import model_info
from agentsh.values import Usage


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def parse_usage(raw: Any) -> Usage:
    """Our Usage from litellm's: input excludes cache reads (they are counted apart)."""
    if raw is None:
        return Usage()
    prompt = int(_get(raw, "prompt_tokens") or 0)
    completion = int(_get(raw, "completion_tokens") or 0)
    details = _get(raw, "prompt_tokens_details")
    cache_read = int((_get(details, "cached_tokens") if details is not None else 0) or 0)
    cache_read = cache_read or int(_get(raw, "cache_read_input_tokens") or 0)
    cache_write = int(_get(raw, "cache_creation_input_tokens") or 0)
    return Usage(
        input_tokens=max(0, prompt - cache_read),
        output_tokens=completion,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def call_cost(model: str, usage: Usage, settings: ModelSettings) -> float:
    """USD for one call. litellm prices what the config does not; an input-price override
    also prices the cache (reads at 0.1x and writes at 1.25x of it, or litellm's own ratios for
    a model it knows, or the cache overrides), never cache reads at the full input price."""
    in_override = settings.input_cost_per_mtok
    out_override = settings.output_cost_per_mtok
    prompt_cost = completion_cost = 0.0
    if in_override < 0 or out_override < 0:
        info = model_info(model)
        if info.known:
            litellm = import_litellm()
            try:
                prompt_cost, completion_cost = litellm.cost_per_token(
                    model=model,
                    prompt_tokens=usage.input_tokens + usage.cache_read_tokens,
                    completion_tokens=usage.output_tokens,
                    cache_read_input_tokens=usage.cache_read_tokens,
                    cache_creation_input_tokens=usage.cache_write_tokens,
                )
            except Exception:  # noqa: BLE001 - an unpriced model costs 0, never a crash
                prompt_cost = completion_cost = 0.0
    if in_override >= 0:
        read_ratio, write_ratio = _cache_ratios(model)
        read = settings.cache_read_cost_per_mtok
        write = settings.cache_write_cost_per_mtok
        read = read if read >= 0 else in_override * read_ratio
        write = write if write >= 0 else in_override * write_ratio
        # input_tokens holds what was not read from the cache, writes included.
        fresh = max(0, usage.input_tokens - usage.cache_write_tokens)
        prompt_cost = (
            fresh * in_override + usage.cache_read_tokens * read + usage.cache_write_tokens * write
        ) / 1_000_000
    if out_override >= 0:
        completion_cost = usage.output_tokens * out_override / 1_000_000
    return float(prompt_cost) + float(completion_cost)


_DEFAULT_CACHE_RATIOS = (0.1, 1.25)  # Anthropic's: read a tenth, write a quarter more


def _cache_ratios(model: str) -> tuple[float, float]:
    """Cache read and write prices as fractions of the input price, from litellm's cost map."""
    if not litellm_loaded():
        return _DEFAULT_CACHE_RATIOS
    litellm = import_litellm()
    try:
        raw = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - unmapped: the defaults
        return _DEFAULT_CACHE_RATIOS
    base = float(raw.get("input_cost_per_token") or 0.0)
    if base <= 0:
        return _DEFAULT_CACHE_RATIOS
    read = raw.get("cache_read_input_token_cost")
    write = raw.get("cache_creation_input_token_cost")
    return (
        float(read) / base if read is not None else _DEFAULT_CACHE_RATIOS[0],
        float(write) / base if write is not None else _DEFAULT_CACHE_RATIOS[1],
    )
