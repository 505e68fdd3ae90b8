"""litellm's facts about models (window, output limit, prices), remembered on disk.

A front end whose model calls run in the model worker never imports litellm, yet needs the
window of its model before the first turn (the status bar, the context tiers). The worker
answers that in milliseconds once litellm is loaded, but loading takes seconds; so every answer
is kept in ``model-facts.json`` in the user cache folder, stamped with the size and time of
litellm's price list and package. A new litellm (or any other stamp) discards the file. The
file is a cache: anything odd in it is ignored, writes are atomic and best-effort.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

from agentsh.fsutil import atomic_write
from agentsh.llm.models import ModelInfo
from agentsh.paths import UserPaths

FILE_NAME = "model-facts.json"
MAX_MODELS = 64  # a few models per user; the oldest entries go first
_PRICE_LIST = "model_prices_and_context_window_backup.json"

_lock = threading.Lock()


def litellm_stamp() -> str:
    """What the facts depend on: litellm's package and its shipped price list ("" if absent)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return ""
    package = Path(spec.origin)
    parts = []
    for path in (package, package.parent / _PRICE_LIST):
        try:
            stat = path.stat()
        except OSError:
            return ""
        parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
    return f"{package.parent}|{'|'.join(parts)}"


def cache_file() -> Path:
    return UserPaths.from_env().cache_dir / FILE_NAME


def load(model: str, path: Path | None = None) -> ModelInfo | None:
    """The remembered facts of ``model``, or ``None``."""
    entries = _read(path or cache_file(), litellm_stamp())
    value = entries.get(model)
    if not isinstance(value, dict):
        return None
    try:
        info = ModelInfo(**value)
    except TypeError:
        return None
    return info if info.model == model else None


def store(info: ModelInfo, path: Path | None = None) -> None:
    """Remember ``info`` (litellm's own figures, before the user's overrides)."""
    path = path or cache_file()
    stamp = litellm_stamp()
    if not stamp:
        return
    with _lock:
        entries = _read(path, stamp)
        entries.pop(info.model, None)
        entries[info.model] = {
            "model": info.model,
            "window": info.window,
            "max_output_tokens": info.max_output_tokens,
            "input_cost_per_token": info.input_cost_per_token,
            "output_cost_per_token": info.output_cost_per_token,
            "known": info.known,
        }
        while len(entries) > MAX_MODELS:
            entries.pop(next(iter(entries)))
        data = json.dumps({"stamp": stamp, "models": entries}).encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, data)
        except OSError:
            pass  # a cache: the next start asks the worker again


def _read(path: Path, stamp: str) -> dict[str, Any]:
    if not stamp:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("stamp") != stamp:
        return {}
    models = data.get("models")
    return dict(models) if isinstance(models, dict) else {}
