"""The slash commands in Textual's command palette (Ctrl+P).

Kept apart from :mod:`agentsh.tui.slash.registry` so the palette machinery (``textual.command``) is
imported when the palette first opens, not on the way to the first frame.
"""

from __future__ import annotations

from collections.abc import Awaitable
from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from agentsh.tui.slash.command import SlashCommand
from agentsh.tui.slash.registry import COMMANDS


class CommandRunner(Protocol):
    def run_command(self, command: SlashCommand, arg: str) -> Awaitable[None]: ...


class SlashCommandProvider(Provider):
    """Every slash command in the command palette (Ctrl+P)."""

    def _runner(self) -> CommandRunner:
        runner: CommandRunner = self.app.controller  # type: ignore[attr-defined]
        return runner

    async def _run(self, command: SlashCommand) -> None:
        await self._runner().run_command(command, "")

    async def discover(self) -> Hits:
        for command in COMMANDS:
            yield DiscoveryHit(
                f"/{command.name}", partial(self._run, command), help=command.summary
            )

    async def search(self, query: str) -> Hits:
        words = query.strip().lstrip("/")
        if not words:
            # A bare "/" is how people look for commands: list them all. (Textual's matcher
            # raises on an empty query, which showed "No matches found".)
            for command in COMMANDS:
                label = f"/{command.name}"
                yield Hit(1.0, label, partial(self._run, command), help=command.summary)
            return
        matcher = self.matcher(words)
        for command in COMMANDS:
            label = f"/{command.name}"
            score = max(matcher.match(command.name), matcher.match(command.summary) * 0.5)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(label),
                    partial(self._run, command),
                    help=command.summary,
                )


class PaneProvider(Provider):
    """The side panel's panes in the command palette: each entry toggles one pane."""

    def _entries(self) -> list[tuple[str, str, str]]:
        from agentsh.tui.keys import display_key, spec

        keymap: dict[str, str] = getattr(self.app, "keymap", {})
        entries = []
        for name in ("memory", "summaries", "tree"):
            binding = f"toggle_{name}"
            key = display_key(keymap.get(binding, spec(binding).key))
            entries.append(
                (name, f"Toggle the {name} pane", f"{spec(binding).description} ({key})")
            )
        return entries

    async def _toggle(self, name: str) -> None:
        await self.app.run_action(f"toggle_pane('{name}')")

    async def discover(self) -> Hits:
        for name, title, help_text in self._entries():
            yield DiscoveryHit(title, partial(self._toggle, name), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, title, help_text in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self._toggle, name), help=help_text
                )
