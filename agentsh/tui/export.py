"""``/export``: write the session's current path to a file as markdown, HTML or JSONL.

Markdown and HTML show what the chat shows (user and assistant messages, tool calls with their
results, compactions); JSONL copies the entries of the path verbatim, one per line, after the
session header, so the file can be opened again with ``--session``. The default file name is
``agentsh-<session id prefix>.<ext>`` in the current folder.
"""

from __future__ import annotations

import html
from pathlib import Path

from agentsh.session.entries import encode_line
from agentsh.session.session import Session
from agentsh.tui.projection import (
    AssistantItem,
    ChatItem,
    CompactionItem,
    NoteItem,
    ToolItem,
    UserItem,
    project,
)

FORMATS = ("md", "html", "jsonl")


class ExportError(Exception):
    """The export cannot be written; the message says why."""


def export_session(session: Session, fmt: str, target: Path | None, cwd: Path) -> Path:
    if fmt not in FORMATS:
        raise ExportError(f"Unknown export format {fmt!r}; use one of {', '.join(FORMATS)}.")
    path = target.expanduser() if target is not None else cwd / f"agentsh-{session.id[:8]}.{fmt}"
    entries = session.current_path()
    if fmt == "jsonl":
        data = encode_line(session.header) + b"".join(encode_line(e) for e in entries)
    elif fmt == "md":
        data = to_markdown(project(entries)).encode("utf-8")
    else:
        data = to_html(project(entries), session.id).encode("utf-8")
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise ExportError(f"Could not write {path}: {exc.strerror}") from exc
    return path


def to_markdown(items: list[ChatItem]) -> str:
    out: list[str] = []
    for item in items:
        match item:
            case UserItem():
                out.append(f"## User\n\n{item.text}")
            case AssistantItem():
                suffix = " (aborted)" if item.aborted else ""
                error = f"\n\n> error: {item.error}" if item.error else ""
                out.append(f"## Assistant{suffix}\n\n{item.text}{error}")
            case ToolItem():
                body = item.diff or item.output
                state = "error" if item.is_error else "result"
                out.append(f"**Tool** `{item.summary}` ({state})\n\n```\n{body}\n```")
            case CompactionItem():
                out.append(
                    f"> Compaction ({item.tier}): {item.tokens_before} -> {item.tokens_after} "
                    f"tokens\n\n{item.summary}"
                )
            case NoteItem():
                out.append(f"> {item.text}")
    return "\n\n".join(out) + "\n"


def to_html(items: list[ChatItem], session_id: str) -> str:
    parts = [
        "<!doctype html><meta charset='utf-8'>",
        f"<title>agentsh session {html.escape(session_id[:8])}</title>",
        "<style>body{font-family:sans-serif;max-width:50em;margin:auto}"
        "pre{background:#f4f4f4;padding:.5em;overflow:auto}.user{border-left:3px solid #36c;"
        "padding-left:.5em}.err{color:#b00}</style>",
    ]
    for item in items:
        match item:
            case UserItem():
                parts.append(
                    f"<div class='user'><h3>User</h3><pre>{html.escape(item.text)}</pre></div>"
                )
            case AssistantItem():
                parts.append(f"<div><h3>Assistant</h3><pre>{html.escape(item.text)}</pre></div>")
                if item.error:
                    parts.append(f"<p class='err'>{html.escape(item.error)}</p>")
            case ToolItem():
                body = html.escape(item.diff or item.output)
                parts.append(
                    f"<details><summary>{html.escape(item.summary)}</summary><pre>{body}</pre></details>"
                )
            case CompactionItem():
                tier = html.escape(item.tier)
                summary = html.escape(item.summary)
                parts.append(f"<p><em>Compaction ({tier})</em></p><pre>{summary}</pre>")
            case NoteItem():
                parts.append(f"<p><em>{html.escape(item.text)}</em></p>")
    return "\n".join(parts) + "\n"


__all__ = ["FORMATS", "ExportError", "export_session", "to_html", "to_markdown"]
