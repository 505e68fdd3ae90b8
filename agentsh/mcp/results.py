"""An MCP tool result as the model reads it: text, with notes for what text cannot carry.

A result is a list of content blocks. Text is kept; an image or audio clip becomes a one-line
note (its type and size: the model cannot see it here, and base64 would only fill the
window); a resource link is its name, URI and type; an embedded text resource is its text
under its URI; structured content is used as JSON when no block says the same in text. The
server's ``isError`` becomes the tool result's error flag. Escape sequences and other control
characters are removed (a server's output is untrusted and ends up on a terminal). The text is
then capped like ``read`` output (head kept); when cut, the whole text is saved to a file the
model can page through with ``read``. Blocks are read by their ``type`` field, so this module
needs no SDK import.

A server is untrusted, and so is what it returns: a web page it fetched, an issue it read, or
its own words. What the model reads of a result (and of a server's error text) is scanned by
the injection guard like a project's AGENTS.md; text it flags goes to the model inside the
``<project-data>`` fence (tags inside it removed, so it cannot close the fence), after a line
from agentsh naming what was found and saying the text is the server's data, not the user
(the one path every tool's output takes: :mod:`agentsh.tools.untrusted`).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsh.fsutil import atomic_write
from agentsh.llm.client import environment_secrets, redact
from agentsh.termsafe import strip_ansi
from agentsh.tools import untrusted
from agentsh.tools.base import ToolResult, format_size, truncate_head
from agentsh.tools.untrusted import Guarded

# After the escape sequences: any C0/C1 control character except tab and newline.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean_text(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (``\\r\\n`` -> ``\\n``)."""
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", strip_ansi(text))


def _size_of_base64(data: Any) -> str:
    if not isinstance(data, str):
        return "unknown size"
    # Decoded size without decoding a possibly huge payload: 3 bytes per 4 characters.
    padding = len(data) - len(data.rstrip("="))
    return format_size(max(0, len(data) * 3 // 4 - padding))


def block_text(block: Any) -> str:
    """One content block as text (see the module docstring for each kind)."""
    kind = getattr(block, "type", None)
    match kind:
        case "text":
            return str(getattr(block, "text", ""))
        case "image" | "audio":
            mime = getattr(block, "mime_type", "") or "unknown type"
            size = _size_of_base64(getattr(block, "data", None))
            return f"[{kind}: {mime}, {size}; not shown: agentsh passes MCP {kind} as this note]"
        case "resource_link":
            name = getattr(block, "name", "") or getattr(block, "title", "") or "resource"
            line = f"[resource link] {name}: {getattr(block, 'uri', '')}"
            if mime := getattr(block, "mime_type", None):
                line += f" ({mime})"
            if description := getattr(block, "description", None):
                line += f" - {description}"
            return line
        case "resource":
            resource = getattr(block, "resource", None)
            uri = getattr(resource, "uri", "")
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                return f"[resource {uri}]\n{text}"
            mime = getattr(resource, "mime_type", None) or "binary"
            size = _size_of_base64(getattr(resource, "blob", None))
            return f"[resource {uri}: {mime}, {size}; binary, not shown]"
    return f"[content of type {kind!r}; not shown]"


def result_text(content: Sequence[Any], structured: Any = None) -> str:
    """All blocks, one after another, or the structured content as JSON if there are none."""
    parts = [block_text(block) for block in content]
    if structured is not None and not any(getattr(b, "type", None) == "text" for b in content):
        try:
            parts.append(json.dumps(structured, ensure_ascii=False, indent=2))
        except (TypeError, ValueError):
            parts.append(str(structured))
    return clean_text("\n".join(parts))


def guarded(text: str, *, tool: str, server: str, max_bytes: int = 0) -> Guarded:
    """``text`` unchanged when the injection guard finds nothing in it, else fenced as data of
    MCP server ``server`` (``tool``: the provider-safe tool name); scanned like a project's
    AGENTS.md (see :func:`agentsh.tools.untrusted.guarded`)."""
    from agentsh.memory.guard import Scope

    return untrusted.guarded(
        text,
        tool=tool,
        origin=f"returned by MCP server '{server}'",
        source=f"mcp:{tool}",
        scope=Scope.CONTEXT_FILE,
        max_bytes=max_bytes,
    )


@dataclass(frozen=True, slots=True)
class Caps:
    max_bytes: int
    max_lines: int
    spool_dir: Path


def to_tool_result(
    content: Sequence[Any],
    *,
    is_error: bool,
    structured: Any,
    caps: Caps,
    label: str,
    tool: str,
    server: str,
    secrets: Sequence[str] = (),
) -> ToolResult:
    """The model's view of a result: converted, capped, guarded, and the whole saved when cut.
    ``secrets``: the servers' own header and env values, kept out of the saved copy. A result
    the injection guard flagged names the patterns in ``details["injection"]``."""
    text = result_text(content, structured)
    if not text.strip():
        text = "(the tool reported an error without a message)" if is_error else "(no output)"
    cut = truncate_head(text, max_lines=caps.max_lines, max_bytes=caps.max_bytes)
    shown = guarded(cut.text, tool=tool, server=server, max_bytes=caps.max_bytes)
    flagged: dict[str, Any] = {"injection": list(shown.flagged)} if shown.flagged else {}
    if not cut.truncated:
        return ToolResult(shown.text, is_error=is_error, details=flagged)
    # The saved copy is redacted like the model's view (the agent redacts that one): a key or
    # a server's own token it echoes must not sit in a cache file in clear.
    saved = _spool(redact(text, (*environment_secrets(), *secrets)), caps.spool_dir, label)
    where = f"; the whole result is in {saved} (read it in parts)" if saved else ""
    note = (
        f"\n\n[Result cut: showing {cut.kept_lines} of {cut.total_lines} lines, "
        f"{format_size(cut.kept_bytes)} of {format_size(cut.total_bytes)}{where}.]"
    )
    details: dict[str, Any] = {"full_output_path": str(saved)} if saved else {}
    details.update(flagged)
    return ToolResult(shown.text + note, is_error=is_error, truncated=True, details=details)


def _spool(text: str, folder: Path, label: str) -> Path | None:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:80] or "mcp"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    token = base64.urlsafe_b64encode(time.time_ns().to_bytes(8, "big")).decode().rstrip("=")
    path = folder / f"{safe}-{stamp}-{token[-6:]}.txt"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"), mode=0o600)
    except OSError:
        return None
    return path
