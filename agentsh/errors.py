"""The root of every error agentsh raises on purpose, and the process exit codes.

Each package keeps its own exception classes next to the code that raises them (a session
lock, a tool's bad argument, a memory write the guard blocked), but all of them derive from
:class:`AgentshError`, so a front end can tell "agentsh said no" from a bug with one
``except``. Classes that callers already catch as a built-in (``ValueError``,
``LookupError``, ``RuntimeError``) keep that base beside this one.

This module is at the bottom of the layers: standard library only, so ``agentsh --help``
stays fast and every package may import it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process Ctrl+C ended


class AgentshError(Exception):
    """Something agentsh refused or could not do, with a message meant for a person."""


class CliError(AgentshError):
    """A user-facing failure: printed as ``agentsh: <message>``, exit code 1 (or ``code``)."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code
