"""Cutting memory files into overlapping chunks for the search index (SPEC §5).

A chunk is a run of whole lines of about ``chunk_tokens`` tokens, and the next chunk starts
with the last ``overlap_tokens`` worth of whole lines of the previous one, so a fact that sits on
a boundary is whole in at least one chunk. Size is measured with the CJK-aware estimate of
:mod:`agentsh.llm.tokens`: a CJK character is one token and other text four characters a token,
so a Korean note is not packed four times denser than an English one. A single line longer than
a chunk is sliced (every slice keeps that line's number). Each chunk carries its path, its
1-based inclusive line range, its text and the sha256 of that text, which keys the embedding
cache: an unchanged chunk is never embedded twice.

MEMORY.md and USER.md are cut by :func:`chunk_entries` instead: every ``§``-separated entry is a
chunk of its own (a long one is split like any text). An entry is the unit the injection guard
judges, so one poisoned entry withholds only itself from recall, never its neighbours, and a
result points at the one fact that matched.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from agentsh.memory.curated_disk import ENTRY_SEPARATOR
from agentsh.text import cjk_count, is_cjk_char

# Weights are in "quarter tokens": a CJK character weighs 4, anything else 1, so a budget of
# N tokens is 4 x N weight units and the arithmetic stays in integers.
_UNITS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class Chunk:
    path: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str
    hash: str


def chunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_weight(text: str) -> int:
    """Size of ``text`` in quarter tokens (4 per CJK character, 1 per other character)."""
    if text.isascii():
        return len(text)
    return len(text) + (_UNITS_PER_TOKEN - 1) * cjk_count(text)


def chunk_text(
    text: str, path: str, *, chunk_tokens: int = 400, overlap_tokens: int = 80
) -> list[Chunk]:
    """Split ``text`` into chunks of about ``chunk_tokens`` with ``overlap_tokens`` of overlap.

    Blank-only text gives no chunks. The overlap is capped at half a chunk so every chunk moves
    the window forward.
    """
    if not text.strip():
        return []
    budget = max(1, chunk_tokens) * _UNITS_PER_TOKEN
    overlap_budget = min(max(0, overlap_tokens) * _UNITS_PER_TOKEN, budget // 2)

    # (line number, piece, weight including its newline); long lines become several pieces.
    pieces: list[tuple[int, str, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for piece in _slice_line(line, budget - 1):
            pieces.append((number, piece, text_weight(piece) + 1))

    chunks: list[Chunk] = []
    current: list[tuple[int, str, int]] = []
    weight = 0
    fresh = 0  # pieces added since the last chunk was cut (the rest is carried overlap)
    for item in pieces:
        if fresh and weight + item[2] > budget:
            chunks.append(_make_chunk(path, current))
            current = _overlap_tail(current, overlap_budget)
            weight = sum(p[2] for p in current)
            fresh = 0
            if current and weight + item[2] > budget:
                # The carried lines and the new piece do not fit together: progress first.
                current, weight = [], 0
        current.append(item)
        weight += item[2]
        fresh += 1
    if fresh:
        chunks.append(_make_chunk(path, current))
    return [c for c in chunks if c.text.strip()]


def chunk_entries(
    text: str, path: str, *, chunk_tokens: int = 400, overlap_tokens: int = 80
) -> list[Chunk]:
    """Chunks of a curated file: one per ``§``-separated entry, with the file's line numbers.

    Separator lines and blank lines around an entry belong to no chunk. An entry longer than
    ``chunk_tokens`` is split by :func:`chunk_text`, with its overlap.
    """
    chunks: list[Chunk] = []
    entry: list[tuple[int, str]] = []
    lines = text.splitlines()
    for number, line in enumerate([*lines, ENTRY_SEPARATOR], start=1):
        if line.strip() != ENTRY_SEPARATOR:
            entry.append((number, line))
            continue
        while entry and not entry[0][1].strip():
            entry.pop(0)
        while entry and not entry[-1][1].strip():
            entry.pop()
        if entry:
            shift = entry[0][0] - 1
            for chunk in chunk_text(
                "\n".join(part for _, part in entry),
                path,
                chunk_tokens=chunk_tokens,
                overlap_tokens=overlap_tokens,
            ):
                chunks.append(
                    replace(
                        chunk, start_line=chunk.start_line + shift, end_line=chunk.end_line + shift
                    )
                )
        entry = []
    return chunks


def _slice_line(line: str, max_weight: int) -> list[str]:
    """A line whose weight passes ``max_weight`` cut into pieces that each fit."""
    if text_weight(line) <= max_weight:
        return [line]
    pieces: list[str] = []
    start = 0
    weight = 0
    for i, char in enumerate(line):
        w = _UNITS_PER_TOKEN if is_cjk_char(char) else 1
        if weight + w > max_weight and i > start:
            pieces.append(line[start:i])
            start, weight = i, 0
        weight += w
    pieces.append(line[start:])
    return pieces


def _overlap_tail(
    lines: list[tuple[int, str, int]], overlap_budget: int
) -> list[tuple[int, str, int]]:
    """The longest run of trailing pieces whose weight fits in the overlap budget."""
    tail: list[tuple[int, str, int]] = []
    weight = 0
    for piece in reversed(lines):
        if weight + piece[2] > overlap_budget:
            break
        tail.append(piece)
        weight += piece[2]
    tail.reverse()
    return tail


def _make_chunk(path: str, pieces: list[tuple[int, str, int]]) -> Chunk:
    # Slices of one long line are rejoined without a newline between them.
    parts: list[str] = []
    previous_line = -1
    for number, piece, _weight in pieces:
        if parts and number != previous_line:
            parts.append("\n")
        parts.append(piece)
        previous_line = number
    text = "".join(parts)
    return Chunk(
        path=path,
        start_line=pieces[0][0],
        end_line=pieces[-1][0],
        text=text,
        hash=chunk_hash(text),
    )
