"""Where the tools reach without asking: the project, the ``--add-dir`` folders (written like
the project), an editor's additional directories and the folders the user allowed for reads
this session (read only), agentsh's own saved tool output and compaction archives.

:class:`Reach` answers "is this path inside?"; :class:`agentsh.tools.approval.Approver`
decides what follows from the answer (run, ask, refuse).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentsh.tools.base import Tool, ToolContext, outside_reason


class Reach:
    """The folders one agent's tools reach, and the checks against them."""

    def __init__(
        self, project_root: Path, *, added: Sequence[Path] = (), read: Sequence[Path] = ()
    ) -> None:
        self.project_root = project_root.resolve()
        # --add-dir: folders the user gave on the command line, written like the project
        # (the same guards: links followed before the check, hard links, .git/ protected)
        self.added_dirs = tuple(d.resolve() for d in added)
        # An ACP editor's additional directories: read without asking, written only if asked
        # (like a folder the user allowed for reads, for the whole session)
        self.read_dirs = tuple(Path(os.path.realpath(d)) for d in read)
        self._allowed_reads: set[Path] = set()  # folders outside allowed for reads (session)

    def set_folders(
        self, *, added: Sequence[Path] | None = None, read: Sequence[Path] | None = None
    ) -> None:
        """Replace the written (``added``) or read-only (``read``) folders; None keeps them."""
        if added is not None:
            self.added_dirs = tuple(dict.fromkeys(d.resolve() for d in added))
        if read is not None:
            self.read_dirs = tuple(dict.fromkeys(Path(os.path.realpath(d)) for d in read))

    def allow_reads(self, folder: Path) -> None:
        """The user allowed reads beneath ``folder`` for the rest of the session."""
        self._allowed_reads.add(folder)

    def forget_session(self) -> None:
        """The conversation changed: the folders allowed for reads in it are not any more."""
        self._allowed_reads.clear()

    def root_of(self, path: Path) -> Path:
        """The added folder ``path`` resolves into, else the project root."""
        resolved = path.resolve()
        if resolved.is_relative_to(self.project_root):  # the project's own rules first
            return self.project_root
        inside = (d for d in self.added_dirs if resolved.is_relative_to(d))
        return next(inside, self.project_root)

    def outside(
        self, tool: Tool, params: Any, ctx: ToolContext, *, added: bool = True
    ) -> list[tuple[Path, str]]:
        """The call's write targets that count as outside (see ``outside_reason``), each with
        why; ``added=False``: the project alone counts as inside (the memory tool's writes)."""
        found = []
        for path in tool.target_paths(params, ctx):
            why = outside_reason(path, self.root_of(path) if added else self.project_root)
            if why is not None:
                found.append((path, why))
        return found

    def readable(self, path: Path, ctx: ToolContext) -> bool:
        """Whether the read tools may read ``path`` without asking: it is named inside the
        project (a link out of it is refused by the tool itself, naming the target), or it
        resolves into the project, an ``--add-dir`` folder, this project's saved tool output, this
        session's compaction archives, an editor's additional directory or a folder the user
        allowed for reads this session."""
        if path.is_relative_to(ctx.project.root) or path.is_relative_to(self.project_root):
            return True
        real = Path(os.path.realpath(path))
        own = [ctx.user.project_tool_output_dir(ctx.project.root)]  # saved here, not elsewhere
        if ctx.session_id:
            with contextlib.suppress(ValueError):  # this session's compaction archives
                own.append(ctx.user.session_workspace(ctx.session_id))
        roots = (
            self.project_root,
            *self.added_dirs,
            *(Path(os.path.realpath(folder)) for folder in own),
            *self.read_dirs,
            *self._allowed_reads,
        )
        return any(real.is_relative_to(root) for root in roots)

    def read_outside(self, tool: Tool, params: Any, ctx: ToolContext) -> tuple[Path, Path] | None:
        """The first path the call reads that is not :meth:`readable`, resolved, and the
        folder "allow for this session" would cover (itself, or the file's folder)."""
        for path in tool.read_paths(params, ctx):
            if not self.readable(path, ctx):
                real = Path(os.path.realpath(path))
                return real, real if real.is_dir() else real.parent
        return None
