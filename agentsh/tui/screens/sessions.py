"""The session picker (``/resume``, ``agentsh -r``): this project's sessions, newest first.

Built on the session catalog, so listing never parses whole session files. Each row shows the
first message, age, size and cost; typing filters by the first message (and the id).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from textual.content import Content

from agentsh.config import Environment
from agentsh.tui.screens.picker import PickerItem, PickerScreen
from agentsh.tui.status_format import human_cost


def age(timestamp: datetime, now: datetime | None = None) -> str:
    seconds = max(0.0, ((now or datetime.now(UTC)) - timestamp).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def session_row(info: Any, now: datetime | None = None) -> PickerItem:
    first = " ".join(str(info.first_message or info.title or "(no messages)").split())
    when = _when(info.last_activity)
    label = Content.assemble(
        (f"{first[:60]:<60}", "bold"),
        "  ",
        (f"{age(when, now) if when else '?':>8}", "$foreground-muted"),
        "  ",
        (f"{human_size(int(info.size_bytes)):>7}", "$foreground-muted"),
        "  ",
        (f"{human_cost(float(info.cost)):>7}", "$secondary"),
        "  ",
        (str(info.id)[:8], "$foreground-muted"),
    )
    return PickerItem(str(info.path), label, search_text=f"{first} {info.id}")


def session_items(env: Environment) -> list[PickerItem]:
    """Rows for this project's sessions (thread-safe; runs off the UI thread)."""
    from agentsh.session.catalog import Catalog

    infos = Catalog(env.user).list(env.project.root)
    return [session_row(info) for info in infos]


class SessionPicker(PickerScreen):
    def __init__(self, items: Sequence[PickerItem]) -> None:
        super().__init__(
            "Resume a session (type to search the first message)",
            items,
            placeholder="search",
            empty_text="no sessions in this project yet",
        )
