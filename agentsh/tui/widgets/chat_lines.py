"""The chat's own one-line rows: a compaction's archived turns folded into a line, and the
marker above the first entry of a branch (which of its fork's branches the path takes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.binding import BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from agentsh.events import Tier
from agentsh.tui.keys import KeyScope, bindings_for
from agentsh.tui.projection import ArchiveItem, BranchItem


class ArchiveLine(Static, can_focus=True):
    """The entries a compaction archived, folded into one line; Enter shows them in place."""

    FOCUS_ON_CLICK = False  # a click leaves the focus (and typing) in the editor

    BINDINGS: ClassVar[list[BindingType]] = bindings_for(KeyScope.TOOL_BLOCK)

    @dataclass
    class Toggled(Message):
        line: ArchiveLine

    def __init__(self, item: ArchiveItem, *, expanded: bool = False) -> None:
        super().__init__(classes="archive-line")
        self.item = item
        self.expanded = expanded

    def on_mount(self) -> None:
        self._render_line()

    def action_toggle_expand(self) -> None:
        self.post_message(self.Toggled(self))

    def set_expanded(self, expanded: bool) -> None:
        self.expanded = expanded
        self._render_line()

    def _render_line(self) -> None:
        item = self.item
        tier = Tier.label_of(item.tier)
        what = (
            f"{item.turns} turn{'s' if item.turns != 1 else ''}"
            if item.turns
            else f"{len(item.items)} entr{'ies' if len(item.items) != 1 else 'y'}"
        )
        arrow, verb = ("▾", "hide") if self.expanded else ("▸", "show")
        self.update(
            Content.assemble(
                f"{arrow} {what} archived by a compaction ({tier}), not in the model's context  ",
                (f"[enter: {verb}]", "$text-muted"),
            )
        )


class BranchMarker(Static):
    """Above the first entry of a branch: which of its fork's branches the path takes."""

    def __init__(self, item: BranchItem, keys: str = "") -> None:
        super().__init__(classes="branch-marker")
        self.item = item
        self.keys = keys  # shown on the fork nearest the leaf, where the keys switch

    def on_mount(self) -> None:
        item = self.item
        mark = f"↪ branch {item.index}/{item.count}"
        if self.keys:
            self.update(Content.assemble(f"{mark}  ·  ", (f"{self.keys} to switch", "dim")))
        else:
            self.update(Content(mark))
