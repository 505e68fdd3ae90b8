"""Where file contents come from and where commands run, when a front end offers its own.

An editor front end (ACP) can hand the tools the text of a file as the editor holds it, unsaved
changes included, save their writes through its buffers, and run commands in terminals it
shows the user. A :class:`ToolHost` in the :class:`~agentsh.tools.base.ToolContext` says which
of these it offers; without one (the TUI, ``-p``) the tools use the local disk and processes.

A host only changes where bytes come from and go to. Every rule the tools keep runs before it is
asked, exactly as for a local write: the approval (inside the project, ``.git/`` and agentsh's
settings protected, hard links), the path resolved with no link followed out of the project,
binary files refused. Only files inside the folder the front end opened (the session's cwd) go
through the host: the host is untrusted too, and is never handed a path outside it; anything
else is read and written locally, as without a host.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from agentsh.errors import AgentshError


@dataclass(frozen=True, slots=True)
class CommandRun:
    """A command the host ran to its end (or stopped)."""

    output: str  # stdout and stderr as the host captured them
    exit_code: int | None
    signal: str = ""  # the signal that ended it, by name ("SIGKILL"), when one did
    truncated: bool = False  # the host kept only the end of the output
    ending: str = "exited"  # "exited", "timeout" or "aborted" (cancelled by the user)


class HostError(AgentshError, OSError):
    """The host could not do what it was asked; the message says what and why."""


class HostCapabilities(Protocol):
    """Which of the three a host serves (all that :func:`hosted_path` needs to know)."""

    @property
    def reads_files(self) -> bool:
        """Reads of project files go through :meth:`ToolHost.read_text`."""
        ...

    @property
    def writes_files(self) -> bool:
        """Writes of project files go through :meth:`ToolHost.write_text`."""
        ...

    @property
    def runs_commands(self) -> bool:
        """``bash`` runs through :meth:`ToolHost.run_command`."""
        ...


class ToolHost(HostCapabilities, Protocol):
    """What a front end serves in place of the local file system and processes."""

    async def read_text(self, path: Path) -> str:
        """The file's text as the host holds it; raises :class:`HostError`."""
        ...

    async def write_text(self, path: Path, text: str) -> None:
        """Replace the file's text; raises :class:`HostError`."""
        ...

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit_s: float,
        cancelled: asyncio.Event,
        call_id: str,
        output_limit: int,
    ) -> CommandRun:
        """Run ``bash -c command`` until it ends, ``time_limit_s`` pass or ``cancelled`` is set
        (then it is killed); raises :class:`HostError` when it cannot be started."""
        ...


def hosted_path(
    path: Path, root: Path, host: HostCapabilities | None, *, write: bool
) -> Path | None:
    """Where ``host`` knows ``path``, when it serves it: a file inside ``root`` (the session's
    folder), links resolved, spelt under ``root`` as the front end gave it. None: the disk, as
    without a host (outside ``root``, or a hard-linked file, whose write must get a new inode
    so that its other names keep their content)."""
    if host is None or not (host.writes_files if write else host.reads_files):
        return None
    real = Path(os.path.realpath(path))
    real_root = Path(os.path.realpath(root))
    if real == real_root or not real.is_relative_to(real_root):
        return None
    if write:
        try:
            if real.stat().st_nlink > 1:
                return None
        except OSError:
            pass  # a new file
    return root / real.relative_to(real_root)
