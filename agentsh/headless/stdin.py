"""What arrives on standard input when agentsh runs without a terminal.

Three cases, as Claude Code handles them: ``-p`` without a prompt (or ``-p -``) takes the prompt
from stdin; ``-p PROMPT`` with something piped in (``git diff | agentsh -p "review this"``)
attaches the piped text to the prompt; plain ``agentsh`` without a terminal runs what is piped
in as if it were ``-p``. A pipe that stays open and silent (a CI runner that never closes
stdin) must not hang a script: when stdin is only optional, agentsh waits
:data:`FIRST_BYTE_WAIT_S` for its first byte and goes on without it, saying so.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
from typing import BinaryIO, TextIO

from agentsh.errors import EXIT_USAGE, AgentshError, CliError
from agentsh.text import attach_piped

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


def resolve_prompt(args: argparse.Namespace, stdin: TextIO, err: TextIO) -> str:
    """The prompt to run: from ``-p``/the words, from stdin, or both (see :mod:`.stdin`)."""
    implied = bool(getattr(args, "implied_print", False))
    given: str | None = args.prompt if args.prompt != PROMPT_FROM_STDIN else None
    piped_wanted = not terminal(stdin)
    if given is None:
        if not piped_wanted:
            if implied:
                raise CliError(
                    "stdout is not a terminal, and the interactive shell needs one; run a "
                    'prompt headless with agentsh -p "PROMPT" (or pipe the prompt in)',
                    EXIT_USAGE,
                )
            raise CliError("no prompt: give it after -p, or pipe it in", EXIT_USAGE)
        try:
            # Plain `agentsh` without a terminal only runs what is piped in: a stdin left
            # open and silent must not hang it. After -p, stdin is the prompt: wait for it.
            piped = read_stdin(wait_s=FIRST_BYTE_WAIT_S if implied else None, stream=stdin)
        except StdinError as exc:
            raise CliError(str(exc)) from exc
        if not piped or not piped.strip():
            if implied:
                what = "nothing" if piped is None else "no prompt"
                wait = f" in {FIRST_BYTE_WAIT_S:.0f}s" if piped is None else ""
                raise CliError(
                    f"no terminal, and {what} arrived on stdin{wait}; the interactive shell "
                    'needs a terminal; run a prompt headless with agentsh -p "PROMPT"',
                    EXIT_USAGE,
                )
            raise CliError("no prompt: give it after -p, or pipe it in", EXIT_USAGE)
        return piped.rstrip("\n")
    if not given.strip():
        raise CliError("the prompt is empty")
    if not piped_wanted:
        return given
    try:
        piped = read_stdin(wait_s=FIRST_BYTE_WAIT_S, stream=stdin)
    except StdinError as exc:
        raise CliError(str(exc)) from exc
    if piped is None:
        err.write(
            f"agentsh: warning: nothing arrived on stdin in {FIRST_BYTE_WAIT_S:.0f}s; going on "
            "without it (redirect stdin from /dev/null to skip the wait)\n"
        )
        err.flush()
        return given
    return attach_piped(given, piped)
