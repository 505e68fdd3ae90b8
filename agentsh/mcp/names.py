"""Tool names every provider accepts: ``mcp__<server>__<tool>``, ``[a-zA-Z0-9_-]``, <= 64.

OpenAI, Anthropic and Gemini all reject a function name with ``.``, ``/`` or a space, or one
longer than 64 characters, and a server is free to name its tools anyhow. So each character
outside the set becomes ``_``, and a name that is then too long, or that two tools would share
(``a.b`` and ``a_b`` both become ``a_b``), is made unique with a short hash of the original
server and tool names: the same configuration always gives the same names, whatever order
the servers answer in, so a resumed session's calls still find their tools.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 6


def sanitize(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _UNSAFE.sub("_", part) or "_"


def plain_name(server: str, tool: str) -> str:
    """The name before any length cut or collision suffix."""
    return f"{PREFIX}{sanitize(server)}{SEPARATOR}{sanitize(tool)}"


def server_prefix(server: str) -> str:
    """What every tool name of ``server`` starts with (``mcp__git__``), for allow rules."""
    return f"{PREFIX}{sanitize(server)}{SEPARATOR}"


def _hashed(server: str, tool: str, salt: int = 0) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}\0{salt}".encode()).hexdigest()[:_HASH_CHARS]
    base = plain_name(server, tool)[: MAX_LENGTH - _HASH_CHARS - 1]
    return f"{base}_{digest}"


def assign_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """A unique provider-safe name for each (server, tool) pair.

    Pairs are taken in sorted order, so which of two colliding tools keeps the plain name
    does not depend on the order they were listed in.
    """
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for server, tool in sorted(set(pairs)):
        name = plain_name(server, tool)
        salt = 0
        while len(name) > MAX_LENGTH or name in taken:
            name = _hashed(server, tool, salt)
            salt += 1
        taken.add(name)
        names[(server, tool)] = name
    return names
