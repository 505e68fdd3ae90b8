"""The slash-command table, and the lookups every place that offers commands uses.

Typing ``/name args`` (:func:`parse`), completion while typing ``/`` (:func:`complete`, and
:func:`complete_argument` after the name), Textual's command palette (Ctrl+P), ``/help`` and
F1 (:func:`commands_table`) all read :data:`COMMANDS`. Add a command by adding a line here;
see :mod:`agentsh.tui.slash.command`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentsh.errors import AgentshError
from agentsh.tui.slash import agent_cmds, app_cmds, conversation, file_cmds, mcp_cmds
from agentsh.tui.slash.command import Need, SlashCommand

if TYPE_CHECKING:
    from agentsh.tui.current import Current

IDLE, AGENT, WRITABLE = Need.IDLE, Need.AGENT, Need.WRITABLE

COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "List commands and keys", app_cmds.help_, aliases=("?",)),
    SlashCommand("model", "Show or switch the model", agent_cmds.model, "[model]"),
    SlashCommand(
        "compact",
        "Compact the context now (tier: move_to_workspace, summarize or truncate; any other "
        "text steers the summary); undo restores the context from before the newest compaction",
        agent_cmds.compact,
        "[tier] [instructions] | undo",
        needs=frozenset({IDLE, AGENT, WRITABLE}),
        choices=agent_cmds.COMPACT_CHOICES,
    ),
    SlashCommand(
        "tree",
        "Open the session tree (text: list it in the chat; other words: search it)",
        conversation.tree,
        "[text|words]",
        choices=("text",),
    ),
    SlashCommand(
        "fork",
        "Continue in a new session file from here (or from the selected message)",
        conversation.fork,
        needs=frozenset({IDLE}),
    ),
    SlashCommand(
        "label",
        "Label the current entry (empty clears)",
        conversation.label,
        "[text]",
        needs=frozenset({IDLE, WRITABLE}),
    ),
    SlashCommand(
        "name",
        "Name this session (agentsh -r NAME resumes it); no argument: say its name",
        conversation.name,
        "[name]",
        needs=frozenset({IDLE, WRITABLE}),
    ),
    SlashCommand(
        "resume",
        "Open another session: by name, id prefix, or words its transcript holds",
        conversation.resume,
        "[name|id|text]",
        needs=frozenset({IDLE}),
    ),
    SlashCommand(
        "new", "Start a new session", conversation.new, aliases=("clear",), needs=frozenset({IDLE})
    ),
    SlashCommand(
        "rewind",
        "Go back to a message you sent: the conversation, the files, or both",
        file_cmds.rewind,
        needs=frozenset({IDLE, AGENT, WRITABLE}),
    ),
    SlashCommand(
        "checkpoints",
        "List this session's file checkpoints (the files each changed)",
        file_cmds.checkpoints,
        needs=frozenset({AGENT}),
    ),
    SlashCommand(
        "memory",
        "Open the memory pane (text: list the files in the chat)",
        app_cmds.memory,
        "[text]",
        choices=("text",),
    ),
    SlashCommand("theme", "Choose a theme (previews live)", app_cmds.theme, "[name]"),
    SlashCommand(
        "export",
        "Export this session as md (default), html or jsonl",
        conversation.export,
        "[format] [file]",
        choices=("md", "html", "jsonl"),
    ),
    SlashCommand("cost", "Tokens and cost of this session", agent_cmds.cost),
    SlashCommand(
        "mcp",
        "MCP servers: state, tools, context share; enable, disable or restart one "
        "(text: the overview in the chat; NAME: its tools)",
        mcp_cmds.mcp,
        "[text|NAME|enable|disable|restart NAME]",
        choices=mcp_cmds.MCP_CHOICES,
        words=mcp_cmds.argument_words,
    ),
    SlashCommand("quit", "Quit agentsh", app_cmds.quit_, aliases=("exit", "q")),
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


def complete_argument(word: str, typed: str, current: Current | None = None) -> list[str]:
    """What the last word of ``typed`` (command ``word``'s argument so far) may become: the
    command's ``choices`` for its first word, or its session-dependent ``words`` (``/mcp
    restart g`` -> the MCP servers whose names start with ``g``)."""
    command = find(word)
    if command is None:
        return []
    *before, prefix = typed.split(" ")
    before = [w for w in before if w]
    if command.words is not None and current is not None:
        offered: Sequence[str] = command.words(current, before)
    else:
        offered = () if before else command.choices
    prefix = prefix.lower()
    return [choice for choice in offered if choice.lower().startswith(prefix)]


def commands_list() -> str:
    """Every command as a markdown list, one line each where it fits (``/help`` in the chat:
    a table drew a rule between every two rows, fifty lines at 80x24)."""
    lines = []
    for c in COMMANDS:
        aliases = ", ".join(f"/{a}" for a in c.aliases)
        lines.append(f"- `{c.usage}` — {c.summary}" + (f" (also {aliases})" if aliases else ""))
    return "\n".join(lines)


def commands_table() -> str:
    """Every command as a markdown table (F1).

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
