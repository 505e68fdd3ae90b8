"""Slash commands: a frozen table mapping names and aliases to controller handlers.

The same table feeds three places: typing ``/name args`` in the editor (:func:`parse`),
completion while typing ``/`` (:func:`complete`), and Textual's command palette (Ctrl+P,
:class:`agentsh.tui.palette.SlashCommandProvider`). Handlers live on the chat controller
(:class:`agentsh.tui.controller.ChatController`) as ``async def cmd_<name>(self, arg: str)``;
this module holds no behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsh.errors import AgentshError


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    summary: str
    argument: str = ""  # usage hint, e.g. "[tier]"
    aliases: tuple[str, ...] = ()

    @property
    def handler(self) -> str:
        """The controller method that runs this command."""
        return f"cmd_{self.name}"

    @property
    def usage(self) -> str:
        return f"/{self.name} {self.argument}".rstrip()


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "List commands and keys", aliases=("?",)),
    SlashCommand("model", "Show or switch the model", "[model]"),
    SlashCommand(
        "compact",
        "Compact the context now (tier: move_to_workspace, summarize or truncate); "
        "undo restores the context from before the newest compaction",
        "[tier|undo]",
    ),
    SlashCommand("tree", "Open the session tree (text: list it in the chat)", "[text]"),
    SlashCommand("fork", "Continue in a new session file from here (or from the selected message)"),
    SlashCommand("label", "Label the current entry (empty clears)", "[text]"),
    SlashCommand("resume", "Open another session of this project", "[id-prefix]"),
    SlashCommand("new", "Start a new session", aliases=("clear",)),
    SlashCommand("memory", "Open the memory pane (text: list the files in the chat)", "[text]"),
    SlashCommand("theme", "Choose a theme (previews live)", "[name]"),
    SlashCommand("export", "Export this session as md (default), html or jsonl", "[format] [file]"),
    SlashCommand("cost", "Tokens and cost of this session"),
    SlashCommand("quit", "Quit agentsh", aliases=("exit", "q")),
)

_BY_NAME: dict[str, SlashCommand] = {}
for _command in COMMANDS:
    _BY_NAME[_command.name] = _command
    for _alias in _command.aliases:
        _BY_NAME[_alias] = _command


class UnknownCommand(AgentshError):
    def __init__(self, word: str) -> None:
        names = ", ".join(f"/{c.name}" for c in COMMANDS)
        super().__init__(f"Unknown command /{word}. Commands: {names}.")
        self.word = word


def find(word: str) -> SlashCommand | None:
    return _BY_NAME.get(word.lower())


def is_command(text: str) -> bool:
    """A line starting with one ``/`` and a word is a command; ``//x`` or a path is text."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return False
    word = stripped[1:].split(maxsplit=1)[0] if len(stripped) > 1 else ""
    return bool(word) and "/" not in word


def parse(text: str) -> tuple[SlashCommand, str]:
    """``"/compact summarize"`` -> (the compact command, ``"summarize"``).

    Raises :class:`UnknownCommand` for an unknown word; call only when :func:`is_command`.
    """
    body = text.strip()[1:]
    word, _, arg = body.partition(" ")
    command = find(word)
    if command is None:
        raise UnknownCommand(word)
    return command, arg.strip()


def complete(prefix: str) -> list[SlashCommand]:
    """Commands whose name or alias starts with ``prefix`` (without the slash)."""
    prefix = prefix.lower()
    return [
        c
        for c in COMMANDS
        if c.name.startswith(prefix) or any(a.startswith(prefix) for a in c.aliases)
    ]


def commands_table() -> str:
    """Every command as a markdown table (``/help`` in the chat, and F1).

    A ``|`` inside a cell ends the cell in markdown, even inside backticks (``/compact
    [tier|undo]``), so it is escaped.
    """
    rows = ["| Command | What it does |", "|---|---|"]
    for c in COMMANDS:
        aliases = ", ".join(f"/{a}" for a in c.aliases)
        usage = c.usage.replace("|", "\\|")
        summary = c.summary.replace("|", "\\|") + (f" (also {aliases})" if aliases else "")
        rows.append(f"| `{usage}` | {summary} |")
    return "\n".join(rows)
