"""agentsh's slash commands in an editor: listed with ``available_commands_update``, run when a
prompt starts with one.

Only commands that mean the same in a thread as in the TUI are offered: ``/compact`` (with
optional words steering the summary) and ``/context`` (how full the window is). A prompt that
starts with any other ``/word`` is an ordinary prompt for the model, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp.helpers import update_available_commands
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from agentsh.events import ContextStatus


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    arguments: str  # "" when the command takes nothing after its name


COMMANDS = (
    AvailableCommand(
        name="compact",
        description="Compact the conversation now: older turns become a summary (the full "
        "turns are kept in the archive)",
        input=AvailableCommandInput(
            root=UnstructuredCommandInput(hint="what the summary should keep (optional)")
        ),
    ),
    AvailableCommand(
        name="context",
        description="How full the context window is, and how often it was compacted",
    ),
)
_NAMES = frozenset(command.name for command in COMMANDS)


def available() -> AvailableCommandsUpdate:
    return update_available_commands(COMMANDS)


def parse(text: str) -> Command | None:
    """The command a prompt's text runs, or None when it is a prompt for the model."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    name = name.strip()
    if name not in _NAMES:
        return None
    return Command(name, rest.strip())


def context_text(status: ContextStatus) -> str:
    """``/context`` as one note."""
    used = f"{status.used:,}{'?' if status.estimated else ''}"
    share = f" ({status.pct:.0f} %)" if status.window else ""
    window = f" of {status.window:,}" if status.window else ""
    parts = [f"agentsh: context {used}{window} tokens{share}"]
    if status.mcp_tools:
        parts.append(f"MCP tool definitions {status.mcp_tools:,}")
    parts.append(f"compacted {status.compactions}x" if status.compactions else "not compacted")
    if status.paused:
        parts.append("automatic compaction paused")
    parts.append(
        f"session {status.session_input_tokens:,} in / {status.session_output_tokens:,} out, "
        f"${status.session_cost:.4f}"
    )
    if status.problem:
        parts.append(status.problem)
    return "; ".join(parts) + "."
