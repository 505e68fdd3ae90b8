"""A tiny cache of what the status bar showed last time, so the first frame can show it too.

Before the agent is built (litellm loads in a worker) the bar shows the last model and window
from ``UserPaths.ui_state_file`` with "loading…". The file is a cache: unreadable or odd content
is ignored, and writes are atomic and best-effort.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from agentsh.fsutil import atomic_write


@dataclass(frozen=True, slots=True)
class UiState:
    model: str = ""
    window: int = 0


def load_ui_state(path: Path) -> UiState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return UiState()
    if not isinstance(data, dict):
        return UiState()
    model = data.get("model")
    window = data.get("window")
    return UiState(
        model=model if isinstance(model, str) else "",
        window=window if isinstance(window, int) and window > 0 else 0,
    )


def save_ui_state(path: Path, state: UiState) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(asdict(state)).encode("utf-8"))
    except OSError:
        pass  # a cache; the next start just shows less
