"""Model facts and model choice: context window, output limit, prices; which model to use.

:func:`model_info` answers from litellm's model cost map (shipped with the package, read offline)
with the user's ``[model]`` overrides on top and a sane default for models litellm does not
know, so an unknown or self-hosted model never crashes anything. It imports litellm lazily (the
first call costs the import), except in a process whose model calls run in the model worker
(:mod:`agentsh.llm.remote`), which gets the facts from the worker; importing this module
imports neither.

:func:`choose_model` implements SPEC §1's choice when the user named no model: the command line,
then ``AGENTSH_MODEL``, then the config file; else the first provider whose API key is set; else
an Ollama server on ``ollama_url`` if it answers within ~300 ms; else ``None``, and the front end
shows :func:`no_model_help`.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import SupportsFloat, SupportsIndex, SupportsInt

from agentsh.config import ModelSettings
from agentsh.llm.model_name import ModelSource, named_model

DEFAULT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT = 8_192
# Local servers (Ollama, llama.cpp) usually run with a far smaller context than the model
# supports; assume a modest window unless the user sets [model] window.
DEFAULT_LOCAL_WINDOW = 32_768
OLLAMA_PROBE_TIMEOUT_S = 0.3

_LOCAL_PROVIDERS = ("ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What agentsh needs to know about a model. Costs are USD per token."""

    model: str
    window: int
    max_output_tokens: int
    input_cost_per_token: float
    output_cost_per_token: float
    known: bool  # litellm's cost map knows the model (else the figures are defaults)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    model: str  # a litellm model string, e.g. "anthropic/claude-sonnet-4-6"
    api_base: str | None
    source: ModelSource
    detail: str = ""  # e.g. the environment variable that decided it


@dataclass(frozen=True, slots=True)
class Provider:
    prefix: str  # litellm provider prefix
    key_env: str  # the variable litellm reads the key from
    default_model: str


# Checked in this order when no model is named. The models are current, tool-capable ones that
# litellm's cost map knows (window and price come from it).
PROVIDERS: tuple[Provider, ...] = (
    Provider("anthropic", "ANTHROPIC_API_KEY", "anthropic/claude-sonnet-4-6"),
    Provider("openai", "OPENAI_API_KEY", "openai/gpt-4.1"),
    Provider("gemini", "GEMINI_API_KEY", "gemini/gemini-2.5-pro"),
    Provider("openrouter", "OPENROUTER_API_KEY", "openrouter/anthropic/claude-sonnet-4.5"),
    Provider("mistral", "MISTRAL_API_KEY", "mistral/devstral-medium-latest"),
    Provider("deepseek", "DEEPSEEK_API_KEY", "deepseek/deepseek-chat"),
    Provider("xai", "XAI_API_KEY", "xai/grok-code-fast-1"),
    Provider("groq", "GROQ_API_KEY", "groq/openai/gpt-oss-120b"),
)

_KEY_ENV_BY_PREFIX: dict[str, str] = {p.prefix: p.key_env for p in PROVIDERS} | {
    "text-completion-openai": "OPENAI_API_KEY",
    "azure": "AZURE_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "cohere": "COHERE_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
}


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model string (a best guess for bare names)."""
    if "/" in model:
        return model.split("/", 1)[0]
    bare = model.lower()
    if bare.startswith("claude"):
        return "anthropic"
    if bare.startswith("gemini"):
        return "gemini"
    return "openai"


def key_env_var(model: str) -> str | None:
    """The environment variable holding the API key for ``model``'s provider, if there is one."""
    return _KEY_ENV_BY_PREFIX.get(provider_of(model))


# Providers that cache a prompt only where the request marks it (``cache_control``), for the
# Claude models they serve. OpenAI, DeepSeek, xAI and Gemini 2.5+ cache a stable prefix by
# themselves (litellm's docs advise against explicit markers on Gemini).
_MARKED_CACHE_PROVIDERS = (
    "anthropic",
    "bedrock",
    "vertex_ai",
    "azure_ai",
    "openrouter",
    "databricks",
)


def needs_cache_markers(model: str) -> bool:
    """Whether requests to ``model`` must carry prompt-cache markers to be cached at all."""
    return provider_of(model) in _MARKED_CACHE_PROVIDERS and "claude" in model.lower()


def is_local(model: str) -> bool:
    return provider_of(model) in _LOCAL_PROVIDERS


# ---------------------------------------------------------------------------------------------
# Model info

_info_lock = threading.Lock()
_info_cache: dict[tuple[str, int, float, float], ModelInfo] = {}


def model_info(model: str, settings: ModelSettings | None = None) -> ModelInfo:
    """Window, output limit and prices of ``model``, with ``settings`` overrides applied.

    Never raises for an unknown model and never prints; cached per (model, overrides). The first
    call imports litellm (seconds), or in a process whose model calls run in the model worker,
    reads the facts remembered on disk or asks the worker: call it off the UI thread.
    """
    settings = settings or ModelSettings()
    key = (model, settings.window, settings.input_cost_per_mtok, settings.output_cost_per_mtok)
    with _info_lock:
        cached = _info_cache.get(key)
    if cached is not None:
        return cached
    info = _apply_overrides(_base_info(model), settings)
    with _info_lock:
        _info_cache[key] = info
    return info


def _base_info(model: str) -> ModelInfo:
    if not model or is_local(model):
        # litellm asks a running Ollama server for local models' facts over HTTP; the window
        # it reports is not the one the server runs with anyway.
        return unknown_model(model)
    from agentsh.llm import remote

    if remote.in_use():
        return remote.model_facts(model)  # remembered on disk, else asked of the model worker
    return litellm_base_info(model)


def unknown_model(model: str) -> ModelInfo:
    """The defaults for a model nobody has figures for."""
    return ModelInfo(
        model=model,
        window=DEFAULT_LOCAL_WINDOW if is_local(model) else DEFAULT_WINDOW,
        max_output_tokens=DEFAULT_MAX_OUTPUT,
        input_cost_per_token=0.0,
        output_cost_per_token=0.0,
        known=False,
    )


def litellm_base_info(model: str) -> ModelInfo:
    """litellm's own facts about ``model`` (no overrides); imports litellm in this process."""
    from agentsh.llm.env import import_litellm

    litellm = import_litellm()
    try:
        raw = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises assorted types for unmapped models
        return unknown_model(model)
    window = _int(raw.get("max_input_tokens")) or _int(raw.get("max_tokens")) or DEFAULT_WINDOW
    return ModelInfo(
        model=model,
        window=window,
        max_output_tokens=_int(raw.get("max_output_tokens")) or DEFAULT_MAX_OUTPUT,
        input_cost_per_token=_float(raw.get("input_cost_per_token")),
        output_cost_per_token=_float(raw.get("output_cost_per_token")),
        known=True,
    )


def _apply_overrides(info: ModelInfo, settings: ModelSettings) -> ModelInfo:
    window = settings.window or info.window
    max_output = settings.max_output_tokens or info.max_output_tokens
    in_cost = info.input_cost_per_token
    out_cost = info.output_cost_per_token
    if settings.input_cost_per_mtok >= 0:
        in_cost = settings.input_cost_per_mtok / 1_000_000
    if settings.output_cost_per_mtok >= 0:
        out_cost = settings.output_cost_per_mtok / 1_000_000
    return ModelInfo(
        model=info.model,
        window=window,
        max_output_tokens=min(max_output, window),
        input_cost_per_token=in_cost,
        output_cost_per_token=out_cost,
        known=info.known,
    )


def _int(value: object) -> int:
    if not isinstance(value, str | bytes | SupportsInt | SupportsIndex):
        return 0  # None, or nothing a number can be read from
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _float(value: object) -> float:
    if not isinstance(value, str | bytes | SupportsFloat | SupportsIndex):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


# ---------------------------------------------------------------------------------------------
# Model choice

OllamaProbe = Callable[[str, float], "str | None"]


def choose_model(
    settings: ModelSettings,
    env: Mapping[str, str],
    *,
    cli_model: str | None = None,
    cli_api_base: str | None = None,
    probe_ollama: OllamaProbe | None = None,
) -> ModelChoice | None:
    """The model to use (SPEC §1), or ``None`` when nothing is configured.

    Order: ``cli_model``; ``AGENTSH_MODEL``; ``settings.name`` (config.toml ``[model] name``);
    the first provider in :data:`PROVIDERS` whose key is set in ``env``; an Ollama server at
    ``settings.ollama_url`` answering within 300 ms (skipped when ``AGENTSH_NO_OLLAMA_PROBE=1``).
    The API base follows the same order: ``cli_api_base``, ``AGENTSH_API_BASE``,
    ``settings.api_base``. May block up to the probe timeout: call it off the UI thread.
    """
    api_base = chosen_api_base(settings, env, cli_api_base)
    named = named_model(settings, env, cli_model)
    if named is not None:
        return ModelChoice(named[0], api_base, named[1], named[2])
    for provider in PROVIDERS:
        if env.get(provider.key_env, "").strip():
            return ModelChoice(
                provider.default_model, api_base, ModelSource.PROVIDER_KEY, provider.key_env
            )
    if env.get("AGENTSH_NO_OLLAMA_PROBE", "") not in ("", "0"):
        return None
    probe = probe_ollama or find_ollama_model
    url = settings.ollama_url.rstrip("/")
    found = probe(url, OLLAMA_PROBE_TIMEOUT_S)
    if found is None:
        return None
    return ModelChoice(f"ollama_chat/{found}", api_base or url, ModelSource.OLLAMA, url)


def known_models(providers: Iterable[str]) -> list[str]:
    """The tool-capable chat models litellm's map knows for ``providers`` (prefixes such as
    ``"anthropic"``), as litellm model strings, sorted. Imports litellm (seconds, the first
    time), or in a process whose model calls run in the model worker, asks the worker (blocks):
    call it off the UI thread."""
    wanted = set(providers)
    if not wanted:
        return []
    from agentsh.llm import remote

    if remote.in_use():
        return remote.known_models(sorted(wanted))
    return litellm_known_models(wanted)


def litellm_known_models(wanted: set[str]) -> list[str]:
    """:func:`known_models` from litellm's map; imports litellm in this process."""
    from agentsh.llm.env import import_litellm

    found: set[str] = set()
    for name, facts in import_litellm().model_cost.items():
        if not isinstance(facts, dict) or facts.get("mode") != "chat":
            continue
        provider = facts.get("litellm_provider")
        if provider not in wanted or not facts.get("supports_function_calling"):
            continue
        if not isinstance(name, str) or name.startswith("ft:"):
            continue
        found.add(name if name.startswith(f"{provider}/") else f"{provider}/{name}")
    return sorted(found)


def chosen_api_base(
    settings: ModelSettings, env: Mapping[str, str], cli_api_base: str | None = None
) -> str | None:
    """The server the user named for the model: ``--api-base``, then ``AGENTSH_API_BASE``,
    then ``[model] api_base`` (the user config's; a project's cannot set it)."""
    return cli_api_base or env.get("AGENTSH_API_BASE") or settings.api_base or None


def api_base_for(model: str, chosen: str | None, settings: ModelSettings) -> str | None:
    """Where requests for ``model`` go: the server the user chose, for every model as at
    start; else, for an Ollama model, ``[model] ollama_url``; else the provider's own."""
    if chosen:
        return chosen
    if provider_of(model) in ("ollama", "ollama_chat"):
        return settings.ollama_url.rstrip("/")
    return None


def find_ollama_model(url: str, timeout_s: float = OLLAMA_PROBE_TIMEOUT_S) -> str | None:
    """The first model an Ollama server at ``url`` has pulled, or ``None`` (no server, none)."""
    try:
        with urllib.request.urlopen(f"{url}/api/tags", timeout=timeout_s) as response:
            data = json.loads(response.read(1_000_000))
    except (OSError, ValueError):  # refused, timed out, not Ollama, not JSON
        return None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    for entry in models:
        name = (entry.get("name") or entry.get("model")) if isinstance(entry, dict) else None
        if isinstance(name, str) and name and "embed" not in name:
            return name
    return None


_NO_MODEL_HELP = """\
No model is configured, so agentsh has nothing to send your message to.
Pick one of these (the first that applies wins):

  1. Set a provider key in your shell; agentsh picks a current model:
       export ANTHROPIC_API_KEY=...   -> anthropic/claude-sonnet-4-6
       export OPENAI_API_KEY=...      -> openai/gpt-4.1
       export GEMINI_API_KEY=...      -> gemini/gemini-2.5-pro
     (also OPENROUTER_API_KEY, MISTRAL_API_KEY, DEEPSEEK_API_KEY,
     XAI_API_KEY, GROQ_API_KEY)

  2. Name a model (any litellm model string) when you start agentsh:
       agentsh -m anthropic/claude-opus-4-5
       export AGENTSH_MODEL=openai/gpt-4.1
       agentsh -m openai/my-model --api-base http://localhost:8000/v1

  3. Or write it in your user config file (a project's config cannot
     choose the server):
       {config_file}
       [model]
       name = "openai/my-model"
       # any OpenAI-compatible server
       api_base = "http://localhost:8000/v1"
       # the context size, when litellm does not know the model
       window = 32768

  4. Run a local Ollama server (http://127.0.0.1:11434, or [model]
     ollama_url) with a model pulled, e.g. `ollama pull qwen2.5-coder`.

Sessions, memory, search and themes all work without a model.
"""

HELP_COLUMNS = 72  # the help's widest line: it fits an 80-column chat or terminal unwrapped


def no_model_help(config_file: Path) -> str:
    """How to configure a model, naming the user config file agentsh really reads
    (``AGENTSH_HOME=DIR`` puts it at ``DIR/config/config.toml``)."""
    try:
        shown = "~/" + config_file.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        shown = str(config_file)
    return _NO_MODEL_HELP.format(config_file=shown)
