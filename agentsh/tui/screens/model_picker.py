"""``/model`` without an argument: a picker of models, and the switch itself off the UI thread.

The quick choices show at once: the current model, the configured one, ``AGENTSH_MODEL`` and the
default model of each provider whose key is set. litellm's list of the tool-capable models of
those providers follows from a thread ("loading model list…" until then: the first import of
litellm takes seconds, and the picker must not freeze). Any litellm model string can be typed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping

from agentsh.config import ModelSettings
from agentsh.frontend import AgentAPI
from agentsh.tui.screens.picker import PickerItem, PickerScreen

TITLE = "Model (type any litellm model string, e.g. ollama/qwen2.5-coder)"
LOADING = "loading model list…"


def quick_choices(
    settings: ModelSettings, env: Mapping[str, str], current: str | None
) -> list[PickerItem]:
    """The models offered before litellm loads: each once, with why it is offered."""
    from agentsh.llm.models import PROVIDERS

    candidates: list[tuple[str, str]] = []
    if current:
        candidates.append((current, "current"))
    if settings.name:
        candidates.append((settings.name, "config"))
    if env_model := env.get("AGENTSH_MODEL"):
        candidates.append((env_model, "AGENTSH_MODEL"))
    for provider in PROVIDERS:
        if env.get(provider.key_env):
            candidates.append((provider.default_model, f"{provider.key_env} is set"))
    seen: set[str] = set()
    items = []
    for model, why in candidates:
        if model not in seen:
            seen.add(model)
            items.append(PickerItem(model, f"{model}  ({why})", search_text=model))
    return items


def listed_models(env: Mapping[str, str], current: str | None) -> list[PickerItem]:
    """litellm's tool-capable models for the providers whose key is set and the current
    model's provider (imports litellm: run it in a thread)."""
    from agentsh.llm.models import PROVIDERS, known_models, provider_of

    providers = {p.prefix for p in PROVIDERS if env.get(p.key_env)}
    if current:
        providers.add(provider_of(current))
    return [PickerItem(m, m, search_text=m) for m in known_models(providers)]


def model_picker(settings: ModelSettings, current: str | None) -> PickerScreen:
    env = dict(os.environ)
    return PickerScreen(
        TITLE,
        quick_choices(settings, env, current),
        current=current,
        placeholder="model",
        empty_text="press Enter to use what you typed",
        allow_custom=True,
        load=lambda: listed_models(env, current),
        loading_text=LOADING,
    )


async def switch_model(agent: AgentAPI, model: str, settings: ModelSettings) -> None:
    """``agent.set_model`` with the model's facts (window, prices: litellm's map, seconds on
    the first call) read in a thread first, so the switch itself does not block the UI."""
    from agentsh.llm.models import model_info

    await asyncio.to_thread(model_info, model, settings)
    agent.set_model(model)
