"""F1: every key binding (with the user's remapping applied) and every slash command.

The screen draws plain tables (Rich tables in Statics), not Markdown: Textual's Markdown
builds a widget per table cell, and the ~70 rows here took about two seconds to appear on a
busy machine. :func:`help_markdown` renders the same rows as markdown for text output.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from agentsh.tui.keys import KEYS, KeyScope, display_key, effective_key
from agentsh.tui.slash.registry import COMMANDS, commands_table

CLOSE_HINT = "Esc or F1 closes this window · ↑↓ PgUp PgDn scroll"
REMAP_HINT = 'Remap a key in config.toml: [tui.keys] then binding_id = "key".'


@dataclass(frozen=True, slots=True)
class HelpTable:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def key_tables(keymap: Mapping[str, str]) -> list[HelpTable]:
    """One table per key scope: the key (as remapped), what it does, its binding id."""
    tables = []
    for scope in KeyScope:
        specs = [s for s in KEYS if s.scope is scope]
        if not specs:
            continue
        rows = tuple(
            (
                display_key(effective_key(s, keymap)),
                s.description,
                "(fixed)" if s.builtin else s.id,
            )
            for s in specs
        )
        tables.append(HelpTable(scope.value.capitalize(), ("Key", "Action", "Binding id"), rows))
    return tables


def command_table() -> HelpTable:
    rows = []
    for c in COMMANDS:
        aliases = ", ".join(f"/{a}" for a in c.aliases)
        rows.append((c.usage, c.summary + (f" (also {aliases})" if aliases else "")))
    return HelpTable("Commands", ("Command", "What it does"), tuple(rows))


def help_markdown(keymap: Mapping[str, str]) -> str:
    lines = ["# Keys", ""]
    for table in key_tables(keymap):
        lines += [f"**{table.title}**", "", "| Key | Action | Binding id |", "|---|---|---|"]
        for key, action, binding_id in table.rows:
            shown_id = binding_id if binding_id == "(fixed)" else f"`{binding_id}`"
            lines.append(f"| {key.replace('|', chr(92) + '|')} | {action} | {shown_id} |")
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
        from rich import box
        from rich.table import Table
        from rich.text import Text

        def render(table: HelpTable) -> Table:
            # No colours of its own: the table takes the screen's theme colours.
            rich_table = Table(
                *table.columns,
                title=table.title,
                title_justify="left",
                title_style="bold",
                header_style="bold",
                box=box.SQUARE,
                expand=True,
            )
            for row in table.rows:
                # Text, not str: "/model [model]" would be read as console markup.
                rich_table.add_row(*(Text(cell) for cell in row))
            return rich_table

        with VerticalScroll(id="help-body") as body:
            # On the frame, so it shows wherever the window is scrolled to.
            body.border_subtitle = CLOSE_HINT
            yield Static(Content(CLOSE_HINT), classes="help-hint")
            yield Static("Keys", classes="help-heading")
            for table in key_tables(self._keymap):
                yield Static(render(table), classes="help-table")
            yield Static(REMAP_HINT, classes="help-hint", markup=False)
            yield Static("Commands", classes="help-heading")
            yield Static(render(command_table()), classes="help-table")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
