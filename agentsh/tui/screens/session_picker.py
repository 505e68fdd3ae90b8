"""The session picker (``/resume``, ``agentsh -r``): this project's sessions, newest first.

Built on the session catalog, so listing never parses whole session files. Each row is one
line: the first message (cut to what the terminal leaves it; for a ``-p`` run with text piped
in, its prompt without that text), then age, size, tokens, cost and
the id prefix; typing filters by the first message (and the id). "Tokens" is what the status
bar's ``Σ`` and ``/cost`` show and ``agentsh sessions`` lists: input plus output over every
reply in the file, all branches.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from textual.content import Content

from agentsh.config import Environment
from agentsh.text import has_piped
from agentsh.tui.screens.picker import PickerItem, PickerScreen
from agentsh.tui.status_format import human_cost, human_tokens

if TYPE_CHECKING:
    from agentsh.session.catalog import SessionInfo

# The cells around a row: the picker's border and padding, the list's padding, a scrollbar.
PICKER_CHROME = 8
# Age, size, tokens, cost and id, with the two-cell gaps before each.
META_CELLS = (2 + 8) + (2 + 7) + (2 + 9) + (2 + 7) + (2 + 8)
MIN_MESSAGE_CELLS = 16


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


def session_row(info: SessionInfo, *, width: int = 120, now: datetime | None = None) -> PickerItem:
    """One session as one line of a picker on a terminal ``width`` cells wide."""
    cells = max(MIN_MESSAGE_CELLS, width - PICKER_CHROME - META_CELLS)
    first_message = info.first_message
    if has_piped(first_message):
        # `git diff | agentsh -p "review this"`: the prompt, as its title, not the diff.
        first_message = info.title
    message = " ".join((first_message or info.title or "(no messages)").split())
    if info.name:
        message = f"{' '.join(info.name.split())} · {message}"
    if info.parent_session:
        # A fork starts with its parent's first message: without a mark the two rows read
        # the same.
        message = f"↳ fork of {info.parent_session[:8]}: {message}"
    first = message if len(message) <= cells else message[: cells - 1] + "…"
    when = datetime.fromtimestamp(info.last_activity, UTC)
    label = Content.assemble(
        (f"{first:<{cells}}", "bold"),
        "  ",
        (f"{age(when, now):>8}", "$foreground-muted"),
        "  ",
        (f"{human_size(info.size_bytes):>7}", "$foreground-muted"),
        "  ",
        (f"{human_tokens(info.tokens) + ' tok':>9}", "$foreground-muted"),
        "  ",
        (f"{human_cost(info.cost):>7}", "$secondary"),
        "  ",
        (info.short_id, "$foreground-muted"),
    )
    return PickerItem(str(info.path), label, search_text=f"{message} {info.id}")


def session_items(env: Environment, *, width: int = 120) -> list[PickerItem]:
    """Rows for this project's sessions (thread-safe; runs off the UI thread)."""
    from agentsh.session.catalog import Catalog

    infos = Catalog(env.user).list(env.project.root)
    return [session_row(info, width=width) for info in infos]


class SessionPicker(PickerScreen):
    def __init__(
        self,
        items: Sequence[PickerItem],
        *,
        title: str = "Resume a session (type to search the name and first message)",
    ) -> None:
        super().__init__(
            title,
            items,
            placeholder="search",
            empty_text="no sessions in this project yet",
        )
