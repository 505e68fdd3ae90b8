"""What arrives on standard input when agentsh runs without a terminal.

Three cases, as Claude Code handles them: ``-p`` without a prompt (or ``-p -``) takes the prompt
from stdin; ``-p PROMPT`` with something piped in (``git diff | agentsh -p "review this"``)
attaches the piped text to the prompt; plain ``agentsh`` without a terminal runs what is piped
in as if it were ``-p``. A pipe that stays open and silent (a CI runner that never closes
stdin) must not hang a script: when stdin is only optional, agentsh waits
:data:`FIRST_BYTE_WAIT_S` for its first byte and goes on without it, saying so.
"""

from __future__ import annotations

import os
import select
import sys
from typing import BinaryIO, TextIO

from agentsh.errors import AgentshError

#: ``-p`` without a value, or ``-p -``: the prompt comes from stdin.
PROMPT_FROM_STDIN = "-"
#: How long optional piped input may take to start arriving.
FIRST_BYTE_WAIT_S = 3.0
#: More than this on stdin is refused: it would not fit any model's context anyway.
MAX_STDIN_BYTES = 8 * 1024 * 1024


class StdinError(AgentshError):
    """Stdin could not be used as asked; the message says why."""


def terminal(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal; a stream without a file descriptor (a test's
    replacement) counts as one, so agentsh never tries to read from it."""
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return True


def read_stdin(*, wait_s: float | None, stream: TextIO | None = None) -> str | None:
    """All of stdin as text, or None when nothing started to arrive within ``wait_s`` seconds
    (``None``: wait as long as it takes). An empty string means stdin was closed empty."""
    stream = stream or sys.stdin
    raw: BinaryIO = stream.buffer
    if wait_s is not None:
        try:
            ready, _, _ = select.select([raw], [], [], wait_s)
        except (OSError, ValueError):
            ready = [raw]  # not selectable (a regular file is always ready anyway)
        if not ready:
            return None
    data = raw.read(MAX_STDIN_BYTES + 1)
    if len(data) > MAX_STDIN_BYTES:
        raise StdinError(
            f"more than {MAX_STDIN_BYTES // (1024 * 1024)} MiB arrived on stdin; pass a "
            "smaller excerpt, or save it to a file and ask agentsh to read the file"
        )
    return data.decode("utf-8", errors="replace")


def attach(prompt: str, piped: str) -> str:
    """The prompt with piped text after it, marked as what it is so the model can tell the
    request from the material."""
    body = piped.rstrip("\n")
    if not body.strip():
        return prompt
    return f"{prompt.rstrip()}\n\n<stdin>\n{body}\n</stdin>"
