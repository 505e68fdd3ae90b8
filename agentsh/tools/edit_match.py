"""Where ``edit``'s old text is in a file: exactly, else after folding what models get wrong.

A model copies a line with its trailing spaces dropped, a typographic quote made ASCII (or the
other way round), or a different Unicode form; the exact search fails. The tolerant search
folds both sides (trailing whitespace, NFKC, quotes and dashes) and maps each match back to
the original text, so the edit replaces the file's own characters. When nothing matches,
:func:`closest_hint` names the line that looks most like the first line of the old text.
"""

from __future__ import annotations

import difflib
import unicodedata
from array import array

# The closest-line hint compares every line: above this many lines it is not offered.
_CLOSEST_MAX_LINES = 20_000


def find_all(haystack: str, needle: str) -> list[tuple[int, int]]:
    """Non-overlapping spans of ``needle`` in ``haystack``, left to right."""
    spans: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start >= 0:
        spans.append((start, start + len(needle)))
        start = haystack.find(needle, start + len(needle))
    return spans


# Typographic characters models and word processors swap for ASCII ones.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(_FOLD)


def _fold_with_map(text: str) -> tuple[str, array[int], array[int]]:
    """``text`` folded for a tolerant match, and for each folded character its source span.

    Folding: trailing whitespace of each line dropped (a stray ``\\r`` too), NFKC applied to
    each character with its combining marks, typographic quotes and dashes made ASCII.
    ASCII lines, nearly all of a source file, take the fast path.
    """
    parts: list[str] = []
    starts: array[int] = array("q")
    ends: array[int] = array("q")
    line_start = 0
    size = len(text)
    while True:
        newline = text.find("\n", line_start)
        line_end = size if newline < 0 else newline
        stop = line_end
        while stop > line_start and text[stop - 1].isspace():
            stop -= 1
        segment = text[line_start:stop]
        if segment.isascii():
            parts.append(segment)
            starts.extend(range(line_start, stop))
            ends.extend(range(line_start + 1, stop + 1))
        else:
            i = line_start
            while i < stop:
                j = i + 1
                while j < stop and unicodedata.combining(text[j]):
                    j += 1
                folded = _fold(text[i:j])
                parts.append(folded)
                starts.extend([i] * len(folded))
                ends.extend([j] * len(folded))
                i = j
        if newline < 0:
            break
        parts.append("\n")
        starts.append(newline)
        ends.append(newline + 1)
        line_start = newline + 1
    return "".join(parts), starts, ends


def _fold_plain(text: str) -> str:
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(_fold(line.rstrip()) for line in lines)


def find_tolerant(body: str, old_text: str) -> list[tuple[int, int]]:
    """Spans of ``body`` whose folded text is ``old_text`` folded (see the module)."""
    needle = _fold_plain(old_text)
    if not needle.strip():
        return []
    folded, starts, ends = _fold_with_map(body)
    return [(starts[s], ends[e - 1]) for s, e in find_all(folded, needle)]


def closest_hint(body: str, old_text: str) -> str:
    """`` The closest line is 12: ...`` when a line resembles old_text's first line."""
    first = next((line.strip() for line in old_text.splitlines() if line.strip()), "")
    lines = body.split("\n")
    if not first or len(lines) > _CLOSEST_MAX_LINES:
        return ""
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(first)
    best_ratio, best_index = 0.0, -1
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        matcher.set_seq1(stripped)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio, best_index = ratio, index
    if best_ratio < 0.6:
        return ""
    shown = lines[best_index].rstrip("\r")
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return f" The closest line is {best_index + 1}: {shown!r}"
