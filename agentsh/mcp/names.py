"""Tool names every provider accepts: ``mcp__<server>__<tool>``, ``[a-zA-Z0-9_-]``, <= 64.

OpenAI, Anthropic and Gemini all reject a function name with ``.``, ``/`` or a space, or one
longer than 64 characters, and a server is free to name its tools anyhow. So each character
outside the set becomes ``_``, and a name that is then too long, or that two tools of a server
would share (``a.b`` and ``a_b`` both become ``a_b``), is made unique with a short hash of the
original server and tool names; a tool whose name needed no cleaning keeps it. The same
configuration always gives the same names, whatever order the servers answer in, so a resumed
session's calls still find their tools.

The server's part never holds ``__`` (the separator) nor starts or ends with ``_``, and no two
servers share it: a name's server is the text between ``mcp__`` and the next ``__``, so an
allow rule for one server's tools (``mcp__git``, ``mcp__git__*``) or "every tool of this
server" covers that server only. Before, a server named ``git__x`` (or ``git_``) had tool names
starting ``mcp__git__`` and was allowed by the rules written for ``git``. Servers whose cleaned
names collide (``my.server`` and ``my_server``) keep them only if they needed no cleaning; the
others get a hash of their own name, so no server can take over another's names, and its
rules, by being configured beside it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_UNDERSCORES = re.compile(r"_{2,}")
_HASH_CHARS = 6
#: A server's part of a name at most (a longer one is cut and hashed): room for the tool's.
MAX_SERVER_PART = 40


def sanitize(part: str) -> str:
    """``part`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _UNSAFE.sub("_", part) or "_"


def _digest(*parts: object) -> str:
    text = "\0".join(str(part) for part in parts)
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_CHARS]


def server_part(server: str) -> str:
    """``server`` cleaned for a tool name: no ``__``, no ``_`` at either end, at most
    :data:`MAX_SERVER_PART` characters (before any collision is resolved)."""
    cleaned = _UNDERSCORES.sub("_", sanitize(server)).strip("_") or "server"
    if len(cleaned) > MAX_SERVER_PART:
        cut = cleaned[: MAX_SERVER_PART - _HASH_CHARS - 1].rstrip("_")
        cleaned = f"{cut}-{_digest(server)}"
    return cleaned


def server_parts(servers: Iterable[str]) -> dict[str, str]:
    """A server part for each server, none shared: a name that needs no cleaning keeps it;
    cleaned names that collide are each hashed from the server's own name."""
    names = sorted(set(servers))
    plain = {name: server_part(name) for name in names}
    counts = Counter(plain.values())
    used = set(plain.values())
    parts: dict[str, str] = {}
    for name in names:
        part = plain[name]
        if part != name and counts[part] > 1:
            salt = 0
            base = part[: MAX_SERVER_PART - _HASH_CHARS - 1].rstrip("_")
            while part in used:
                part = f"{base}-{_digest(name, salt)}"
                salt += 1
            used.add(part)
        parts[name] = part
    return parts


def server_prefix(server: str, parts: Mapping[str, str] | None = None) -> str:
    """What every tool name of ``server`` starts with (``mcp__git__``), given the server parts
    of every configured server (:func:`server_parts`)."""
    part = parts[server] if parts is not None and server in parts else server_part(server)
    return f"{PREFIX}{part}{SEPARATOR}"


def assign_names(
    pairs: Iterable[tuple[str, str]], servers: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """A unique provider-safe name for each (server, tool) pair; ``servers``: every configured
    server (a server that is down still holds its part of the names).

    Tools whose names need no cleaning are named first, then the rest in sorted order, so
    which of two colliding tools keeps the plain name does not depend on the order they were
    listed in.
    """
    unique = set(pairs)
    parts = server_parts({*servers, *(server for server, _tool in unique)})
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for server, tool in sorted(unique, key=lambda pair: (sanitize(pair[1]) != pair[1], pair)):
        prefix = server_prefix(server, parts)
        name = prefix + sanitize(tool)
        salt = 0
        while len(name) > MAX_LENGTH or name in taken:
            room = MAX_LENGTH - len(prefix) - _HASH_CHARS - 1
            name = f"{prefix}{sanitize(tool)[:room]}_{_digest(server, tool, salt)}"
            salt += 1
        taken.add(name)
        names[(server, tool)] = name
    return names
