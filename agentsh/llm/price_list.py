"""litellm's facts about a mainstream model, read from its bundled price list without litellm.

A first start in a new home has no remembered facts (:mod:`agentsh.llm.facts_cache`) and would
wait for the model worker's ``import litellm`` (seconds, 13 s on a loaded machine) just to learn
the window and prices of the model. Those figures are a lookup in the JSON file litellm ships
and reads itself (agentsh always runs it with ``LITELLM_LOCAL_MODEL_COST_MAP=True``, so this
file *is* litellm's cost map). :func:`lookup` reads it directly, for the models whose answer is
a plain lookup: an entry of a provider in :data:`PROVIDERS` named by its key, or by
``provider/key``. Everything else (other providers, whose litellm resolution has more rules,
unknown or differently spelled names) answers ``None`` and is asked of the worker as before.
tests/llm/test_price_list.py holds every answer given here equal to litellm's own.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

from agentsh.llm.models import DEFAULT_MAX_OUTPUT, DEFAULT_WINDOW, ModelInfo
from agentsh.llm.models import PROVIDERS as KEYED_PROVIDERS

PRICE_LIST = "model_prices_and_context_window_backup.json"

# The providers agentsh offers when it picks a model by API key: their chat entries are
# answered by litellm from the map as they stand (each is checked against
# litellm.get_model_info by the test). Not here: providers litellm resolves with rules of its
# own (Bedrock and Vertex routes, Azure deployments, local servers).
PROVIDERS = frozenset(p.prefix for p in KEYED_PROVIDERS)

_lock = threading.Lock()
_entries: dict[str, Any] | None = None


def price_list_path() -> Path | None:
    """The JSON file inside the installed litellm, found without importing it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / PRICE_LIST
    return path if path.is_file() else None


def _load() -> dict[str, Any]:
    global _entries
    with _lock:
        if _entries is None:
            path = price_list_path()
            try:
                data = json.loads(path.read_bytes()) if path is not None else {}
            except (OSError, ValueError):
                data = {}
            _entries = data if isinstance(data, dict) else {}
        return _entries


def lookup(model: str) -> ModelInfo | None:
    """litellm's facts about ``model`` when they are a plain lookup in its price list, else
    ``None`` (ask litellm)."""
    entries = _load()
    entry = entries.get(model)
    if entry is None and "/" in model:
        provider, name = model.split("/", 1)
        entry = entries.get(name)
        if not isinstance(entry, dict) or entry.get("litellm_provider") != provider:
            return None
    if not isinstance(entry, dict):
        return None
    if entry.get("mode") != "chat" or entry.get("litellm_provider") not in PROVIDERS:
        return None
    max_input = _int(entry.get("max_input_tokens"))
    max_output = _int(entry.get("max_output_tokens"))
    # As agentsh.llm.models.litellm_base_info reads litellm's answer, whose max_tokens is
    # the entry's max_output_tokens or else its max_input_tokens.
    return ModelInfo(
        model=model,
        window=max_input or max_output or DEFAULT_WINDOW,
        max_output_tokens=max_output or DEFAULT_MAX_OUTPUT,
        input_cost_per_token=_float(entry.get("input_cost_per_token")),
        output_cost_per_token=_float(entry.get("output_cost_per_token")),
        known=True,
    )


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0.0
    try:
        return float(value)
    except ValueError:
        return 0.0
