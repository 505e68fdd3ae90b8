"""The Memory pane of the side panel: curated memory, typed docs and hybrid search.

First version: lists the curated files (MEMORY.md, USER.md) with their fill and entries. The
pane needs no constructor arguments; it finds the environment through ``self.app``.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static


class MemoryPane(Widget):
    """Curated memory files and their entries (search and docs follow)."""

    DEFAULT_CSS = """
    MemoryPane { height: 1fr; }
    MemoryPane #memory-body { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="memory-body"):
            yield Static("", id="memory-files", markup=False)

    def on_mount(self) -> None:
        self.refresh_content()

    def refresh_content(self) -> None:
        from agentsh.memory.curated import CuratedMemory, MemoryTarget

        env: Any = getattr(self.app, "env", None)
        if env is None:
            return
        memory = CuratedMemory(env.project, env.user, env.settings.memory)
        lines: list[str] = []
        for target in MemoryTarget:
            used, limit = memory.usage(target)
            lines.append(f"{target.file_name}  {used}/{limit}")
            lines.extend(f"  {e.splitlines()[0] if e else ''}" for e in memory.entries(target))
        self.query_one("#memory-files", Static).update("\n".join(lines))
