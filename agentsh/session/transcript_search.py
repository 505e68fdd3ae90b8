"""Full-text search over past transcripts (``agentsh sessions search TEXT``).

The catalog says which files belong to the project; each file is then searched as bytes, one
pass per file, for the text as the log spells it (JSON-escaped, so quotes, backslashes and
newlines in the query match), ignoring ASCII case. Only the lines that hold a hit are parsed,
to show a snippet from the message, tool result or summary they belong to. No index is kept:
a search reads the project's session files, which the page cache usually holds, and listing
stays as fast as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agentsh.session.catalog import Catalog, SessionInfo

SNIPPET_CHARS = 120
_TEXT_FIELDS = ("content", "summary", "label")


@dataclass(frozen=True, slots=True)
class SearchHit:
    info: SessionInfo
    hits: int  # lines of the file holding the text
    snippets: tuple[str, ...]  # the first few, on one line each


def search_sessions(
    catalog: Catalog,
    text: str,
    project_root: Path | None,
    *,
    all: bool = False,
    limit: int = 20,
    snippets: int = 2,
) -> list[SearchHit]:
    """Sessions holding ``text`` (newest activity first), with where it occurs."""
    needle = text.strip()
    if not needle:
        return []
    escaped = json.dumps(needle, ensure_ascii=False)[1:-1].encode("utf-8")
    pattern = re.compile(re.escape(escaped), re.IGNORECASE)
    found: list[SearchHit] = []
    for info in catalog.list(project_root, all=all):
        try:
            data = info.path.read_bytes()
        except OSError:
            continue
        lines = list(_hit_lines(data, pattern))
        if not lines:
            continue
        shown = tuple(s for s in (_snippet(line, needle) for line in lines[:snippets]) if s)
        found.append(SearchHit(info, len(lines), shown))
        if len(found) >= limit:
            break
    return found


def _hit_lines(data: bytes, pattern: re.Pattern[bytes]) -> Iterator[bytes]:
    """Each line holding a match, once, the header excepted."""
    header_end = data.find(b"\n")
    last_end = -1
    for match in pattern.finditer(data, header_end + 1 if header_end >= 0 else len(data)):
        start = data.rfind(b"\n", 0, match.start()) + 1
        if start <= last_end:
            continue
        end = data.find(b"\n", match.end())
        end = len(data) if end < 0 else end
        last_end = end
        yield data[start:end]


def _snippet(line: bytes, needle: str) -> str:
    try:
        entry = json.loads(line)
    except ValueError:
        return ""
    if not isinstance(entry, dict):
        return ""
    for key in _TEXT_FIELDS:
        value = entry.get(key)
        if isinstance(value, list):  # text blocks, as other writers store them
            value = " ".join(str(b.get("text", "")) for b in value if isinstance(b, dict))
        if isinstance(value, str):
            at = value.lower().find(needle.lower())
            if at >= 0:
                return _around(value, at, len(needle), entry)
    calls = entry.get("toolCalls")
    if isinstance(calls, list):
        return _around(json.dumps(calls, ensure_ascii=False), 0, 0, entry)
    return ""


def _around(text: str, at: int, size: int, entry: dict[str, object]) -> str:
    start = max(0, at - SNIPPET_CHARS // 2)
    end = at + size + SNIPPET_CHARS // 2
    body = " ".join(text[start:end].split())
    who = entry.get("role") or entry.get("type") or ""
    return f"{who}: {'…' if start else ''}{body}{'…' if end < len(text) else ''}"
