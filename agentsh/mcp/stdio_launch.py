"""A stdio MCP server's launch, made safe before anything is spawned: its folder, a ``PATH``
of absolute entries only, and a command that exists and can be run (the launch shell would
only say so on the server's stderr). Used by :mod:`agentsh.mcp.connection`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentsh.errors import AgentshError


class CommandProblem(AgentshError):
    """The server's command cannot be run (checked before spawning: the launch shell would
    only say so on the server's stderr)."""


def check_command(command: str, cwd: Path, path: str | None) -> None:
    if "/" in command:
        target = cwd / Path(command).expanduser()
        if not target.exists():
            raise CommandProblem(f"cannot run {command!r}: no such file")
        if target.is_dir() or not os.access(target, os.X_OK):
            raise CommandProblem(f"cannot run {command!r}: not an executable file")
        return
    if shutil.which(command, path=path) is None:
        raise CommandProblem(f"cannot run {command!r}: command not found")


def absolute_path_only(env: dict[str, str]) -> dict[str, str]:
    """The server's environment with only the absolute entries of its ``PATH`` (its own, else
    agentsh's): a ``.`` there would run the folder's own ``npx`` or ``uvx`` (and ``sleep``, in
    the watchdog) in place of the real one, and your servers start in untrusted folders."""
    path = env.get("PATH") or os.environ.get("PATH", os.defpath)
    kept = [entry for entry in path.split(os.pathsep) if Path(entry).is_absolute()]
    return {**env, "PATH": os.pathsep.join(kept)}


def working_dir(configured: str, default: Path) -> Path:
    """The server's folder: its ``cwd`` (``~`` expanded, relative to the project), or the
    project's."""
    return default / Path(configured).expanduser() if configured else default
