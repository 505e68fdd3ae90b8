"""What the guard reports: the scopes texts come from, and the threats found in them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_MAX_SCAN_BYTES = 64 * 1024


class Scope(StrEnum):
    """Where a text comes from; each pattern declares the scopes it guards."""

    MEMORY_WRITE = "memory_write"  # a write through the memory tool or `agentsh memory add`
    SNAPSHOT = "snapshot"  # an entry of MEMORY.md / USER.md loaded into the system prompt
    CONTEXT_FILE = "context_file"  # AGENTS.md / CLAUDE.md project instructions
    RECALL = "recall"  # recalled memory: search results, prior-knowledge docs
    TOOL_OUTPUT = "tool_output"  # what read, bash, grep, find and ls hand the model


ALL_SCOPES = frozenset(Scope)
# Tool output is source code, docs and command output: it names curl, .env files, ~/.ssh,
# agentsh's config and system prompts all the time (an install line, a Makefile, an LLM
# library's prompt templates), so there only the patterns that are orders to the model count
# (those of ALL_SCOPES in patterns.py, and hidden text in tag characters).
PROSE_SCOPES = ALL_SCOPES - {Scope.TOOL_OUTPUT}
# Memory is held to the strictest set. Project instruction files are the user's own prose about
# their setup and legitimately name an ~/.ssh key, show an example key or a CI command line, so
# those patterns do not block a whole AGENTS.md.
MEMORY_SCOPES = frozenset({Scope.MEMORY_WRITE, Scope.SNAPSHOT, Scope.RECALL})


@dataclass(frozen=True, slots=True)
class Threat:
    """One pattern that matched: its name, what it means, and the text it matched."""

    name: str
    description: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.name} ({self.description}): “{self.excerpt}”"


Span = tuple[int, int]


# -- the matching machinery ------------------------------------------------------------------


# SPEC §5 list: zero-width space/joiners, word joiner, invisible operators, BOM, bidi
# embeddings/overrides and isolates.
_INVISIBLE = re.compile("[\u200b-\u200d\u2060\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069]")

_EXCERPT_CONTEXT = 24
_EXCERPT_MAX = 120


def _excerpt(text: str, start: int, end: int, *, show_invisible: bool = False) -> str:
    piece = text[max(0, start - _EXCERPT_CONTEXT) : end + _EXCERPT_CONTEXT]
    if show_invisible:
        piece = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", piece)
    return _shorten(piece)


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= _EXCERPT_MAX:
        return flat
    return flat[: _EXCERPT_MAX - 1] + "…"
