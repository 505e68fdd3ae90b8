"""``/export``: write the open session to a file as markdown, HTML or JSONL.

The renderings are the session layer's (the same as ``agentsh sessions export``); this module
only picks the file name and writes it. The default name is ``agentsh-<id prefix>.<ext>`` in
the user's exports folder (``UserPaths.exports_dir``), not the project: an export written into
a repository's work tree shows up in ``git status`` and can be committed by accident. A session
kept in memory (``--no-session``) exports its entries as JSONL. The file is written atomically.
"""

from __future__ import annotations

from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.fsutil import atomic_write
from agentsh.session import export as render
from agentsh.session.entries import encode_line
from agentsh.session.log import SessionError
from agentsh.session.session import Session

FORMATS = ("md", "html", "jsonl")


class ExportError(AgentshError):
    """The export cannot be written; the message says why."""


def export_session(session: Session, fmt: str, target: Path | None, folder: Path) -> Path:
    """Write ``session`` as ``fmt`` to ``target``, else to ``folder`` under a default name."""
    if fmt not in FORMATS:
        raise ExportError(f"Unknown export format {fmt!r}; use one of {', '.join(FORMATS)}.")
    default = folder / f"agentsh-{session.id[:8]}.{fmt}"
    path = target.expanduser() if target is not None else default
    try:
        if fmt == "md":
            data = render.to_markdown(session).encode("utf-8")
        elif fmt == "html":
            data = render.to_html(session).encode("utf-8")
        elif session.path is not None and session.path.exists():
            session.sync()
            data = render.valid_jsonl(session.path.read_bytes())[0]
        else:
            nodes = session.tree.nodes.values()
            data = encode_line(session.header) + b"".join(encode_line(e) for e in nodes)
        if target is None:
            folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    except (OSError, SessionError) as exc:
        raise ExportError(f"Could not export to {path}: {exc}") from exc
    return path
