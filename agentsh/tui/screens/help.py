"""F1: every key binding (with the user's remapping applied) and every slash command."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

from agentsh.tui.commands import commands_table
from agentsh.tui.keys import KEYS, KeyScope, display_key, effective_key


def help_markdown(keymap: Mapping[str, str]) -> str:
    lines = ["# Keys", ""]
    for scope in KeyScope:
        specs = [s for s in KEYS if s.scope is scope]
        if not specs:
            continue
        lines += [
            f"**{scope.value.capitalize()}**",
            "",
            "| Key | Action | Binding id |",
            "|---|---|---|",
        ]
        for s in specs:
            key = display_key(effective_key(s, keymap)).replace("|", "\\|")
            binding_id = "(fixed)" if s.builtin else f"`{s.id}`"
            lines.append(f"| {key} | {s.description} | {binding_id} |")
        lines.append("")
    lines += [
        'Remap a key in `config.toml`: `[tui.keys]` then `binding_id = "key"`.',
        "",
        "# Commands",
        "",
        commands_table(),
    ]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("escape,f1,q", "dismiss", "Close")]

    def __init__(self, keymap: Mapping[str, str]) -> None:
        super().__init__(id="help-screen")
        self._keymap = dict(keymap)

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # on first use: not needed for the first frame

        with VerticalScroll(id="help-body"):
            yield Markdown(help_markdown(self._keymap))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
