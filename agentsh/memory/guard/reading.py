"""How the guard reads a text: invisible characters on the raw text, then a normalised copy
and its ASCII projection (see the package docstring)."""

from __future__ import annotations

import itertools
import operator
import re
import unicodedata
from dataclasses import dataclass, field

from .threats import _INVISIBLE, Threat, _excerpt, _shorten

# -- invisible characters (raw text) ---------------------------------------------------------

# Unicode tag characters spell out hidden ASCII ("ASCII smuggling"). The only legitimate use
# is a subdivision flag: U+1F3F4, a few tag letters, then CANCEL TAG (U+E007F).
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_BLACK_FLAG = "\U0001f3f4"


_ZWJ = "\u200d"
# What may stand on either side of a zero-width joiner in an emoji sequence (👩‍💻, 🏳️‍🌈,
# ❤️‍🔥): pictographs, the symbols and dingbats used in them (♀ ♂ ⚕ ❤), after an optional
# skin tone or variation selector.
_EMOJI_SIDE = re.compile("[\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff]")
_EMOJI_MODIFIERS = frozenset("\ufe0f\ufe0e") | {chr(c) for c in range(0x1F3FB, 0x1F400)}


def _emoji_joiner(raw: str, at: int) -> bool:
    """Whether the ZWJ at ``at`` joins two emoji (a family, a profession, a flag)."""
    before = at - 1
    while before >= 0 and raw[before] in _EMOJI_MODIFIERS:
        before -= 1
    after = at + 1
    return (
        before >= 0
        and after < len(raw)
        and _EMOJI_SIDE.match(raw, before) is not None
        and _EMOJI_SIDE.match(raw, after) is not None
    )


def _first_invisible(raw: str) -> re.Match[str] | None:
    """The first invisible character that is not an emoji's joiner."""
    for found in _INVISIBLE.finditer(raw):
        if found.group() != _ZWJ or not _emoji_joiner(raw, found.start()):
            return found
    return None


def _invisible(raw: str, *, tags: bool | None = None) -> Threat | None:
    """The first hidden character of ``raw`` as a threat, or ``None``.

    ``tags`` says whether ``raw`` may hold tag characters (``None``: look). :func:`_prepare`
    reads it off the UTF-8 bytes with one ``bytes.find``; the regex it spares walks the whole
    text, which in a text with an emoji or two is most of what this function costs.
    """
    found = _first_invisible(raw)
    if found is not None:
        return _invisible_char(raw, found.start())
    return _hidden_tags(raw, tags)


def _hidden(prepared: _Prepared) -> Threat | None:
    """:func:`_invisible` of the scanned text, reading only its lines that are not ASCII.

    Every invisible character is outside ASCII, and a newline on each side of a line is the
    same in the raw text as in its joined foreign lines, so the first one found there is the
    first one of the text (an emoji's joiner looks only at its neighbours, never past one).
    """
    found = _first_invisible(prepared.raw_foreign)
    if found is not None:
        return _invisible_char(prepared.scanned, _raw_position(prepared, found.start()))
    return _hidden_tags(prepared.scanned, prepared.tags)


# The bidirectional embeddings, overrides and isolates: text shown in another order than it is
# read ("Trojan Source"). Not the RLM/LRM marks real Arabic and Hebrew text uses.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _hidden_bidi(prepared: _Prepared) -> Threat | None:
    """The first bidi control of the scanned text (all are outside ASCII: only its foreign
    lines are read), for tool output, where a zero-width space or a BOM is ordinary but
    none of 160 MB of installed packages holds one of these."""
    found = _BIDI.search(prepared.raw_foreign)
    if found is None:
        return None
    return _invisible_char(prepared.scanned, _raw_position(prepared, found.start()))


def _raw_position(prepared: _Prepared, at: int) -> int:
    """Where position ``at`` of the joined foreign lines is in the scanned text."""
    foreign = prepared.raw_foreign
    line = prepared.odd[foreign.count("\n", 0, at)]
    column = at - (foreign.rfind("\n", 0, at) + 1)
    return sum(len(text) + 1 for text in prepared.scanned.split("\n")[:line]) + column


def _invisible_char(raw: str, at: int) -> Threat:
    char = raw[at]
    return Threat(
        "invisible_unicode",
        f"an invisible character U+{ord(char):04X} ({unicodedata.name(char, 'unnamed')})",
        _excerpt(raw, at, at + 1, show_invisible=True),
    )


def _hidden_tags(raw: str, tags: bool | None) -> Threat | None:
    """Unicode tag characters spelling hidden text (a subdivision flag is not hidden)."""
    if tags is None:
        tags = _ASTRAL.search(raw) is not None
    if tags:
        for run in _TAG_RUN.finditer(raw):
            is_flag = (
                run.start() > 0
                and raw[run.start() - 1] == _BLACK_FLAG
                and len(run.group()) <= 7
                and run.group().endswith("\U000e007f")
            )
            if not is_flag:
                hidden = "".join(chr(ord(c) - 0xE0000) for c in run.group() if ord(c) < 0xE007F)
                return Threat(
                    "invisible_unicode",
                    "invisible Unicode tag characters spelling hidden text",
                    _shorten(hidden) or f"{len(run.group())} tag characters",
                )
    return None


# -- normalisation ---------------------------------------------------------------------------

# Default-ignorable code points (DerivedCoreProperties.txt) removed before matching, so that a
# soft hyphen or a variation selector inside a keyword does not hide it. The astral ones are a
# separate class: a character class mixing both is several times slower to search.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_IGNORABLE_ASTRAL = re.compile("[\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
# Look-alikes NFKC leaves alone: Cyrillic and Greek letters drawn like Latin ones.
_HOMOGLYPHS = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o",
        "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ї": "i", "ј": "j",
        "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ɡ": "g", "ɩ": "i", "ո": "n",
        "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
        "τ": "t", "υ": "u", "χ": "x", "ϲ": "c", "ϳ": "j",
        # Capitals too: the projection is lowercased after look-alikes are folded.
        "А": "a", "В": "b", "Е": "e", "Ё": "e", "К": "k", "М": "m", "Н": "h", "О": "o",
        "Р": "p", "С": "c", "Т": "t", "У": "y", "Х": "x", "І": "i", "Ї": "i", "Ј": "j",
        "Ѕ": "s", "Ԁ": "d", "Һ": "h", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h",
        "Ι": "i", "Κ": "k", "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y",
        "Χ": "x",
    }
)  # fmt: skip
# Anything the slow steps of normalize() act on: ignorables, astral characters, look-alikes.
_SPECIAL = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\u0250-\u02af\u0370-\u03ff\u0400-\u052f\u0560-\u058f\ud800-\udfff]"
    "|[\U00010000-\U0010ffff]"
)


def _latin_bases() -> dict[int, str]:
    """Accented Latin letters (U+00C0-U+024F) -> their base letter, one character each, so
    the projection reads "précédentes" as "precedentes" and positions still line up."""
    table: dict[int, str] = {}
    for code in range(0xC0, 0x250):
        base = unicodedata.normalize("NFD", chr(code))[0]
        if base.isascii() and base.isalpha():
            table[code] = base
    for char, base in ("ßs", "æa", "Æa", "œo", "Œo", "øo", "Øo", "đd", "Đd", "łl", "Łl", "ıi"):
        table[ord(char)] = base
    return table


_LATIN_BASE = _latin_bases()
_LATIN_ACCENTED = re.compile("[\u00c0-\u024f]")
_LATIN_LEADS = tuple(bytes([lead]) for lead in range(0xC3, 0xCA))
_CYRILLIC_LEADS = tuple(bytes([lead]) for lead in range(0xD0, 0xD4))
_TAG_LEAD = b"\xf3\xa0"  # how every character of U+E0000-U+E0FFF starts in UTF-8


def project(line: str) -> str:
    """The ASCII projection of one normalised line (not lowercased): accented Latin letters
    become their base letter, every other non-ASCII character a "?"."""
    if _LATIN_ACCENTED.search(line) is not None:
        line = line.translate(_LATIN_BASE)
    return line.encode("ascii", "replace").decode("ascii")


def normalize(text: str) -> str:
    """NFKC, ignorables removed, look-alikes folded, casefolded: text as the guard reads it."""
    if text.isascii():
        return text.lower()  # casefold and NFKC are the identity beyond lowercasing here
    return _fold(unicodedata.normalize("NFKC", text)).casefold()


def _fold(text: str) -> str:
    """Remove default-ignorables and fold look-alikes in NFKC text (no change of case)."""
    text = _IGNORABLE.sub("", text)
    if _ASTRAL.search(text):
        text = _IGNORABLE_ASTRAL.sub("", text)
    return text.translate(_HOMOGLYPHS)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A raw text made ready for the patterns.

    ``scanned`` is the raw text that is scanned: all of it, or its head and tail when it is
    over the byte budget (``truncated``). ``shown`` is its NFKC form with ignorables removed and
    look-alikes folded (threat excerpts quote it); ``projected`` is the lowercased ASCII
    projection of ``shown``, every other character a "?", one for one, so a span in one is the
    same span in the other. ``special`` says the text holds invisible, ignorable, astral or
    look-alike characters; ``cyrillic`` that it holds Cyrillic letters (the Russian rules read
    only such texts); ``tags`` that it may hold Unicode tag characters (U+E0000-U+E0FFF).
    ``foreign`` is the lines of ``shown`` that are not ASCII, joined by newlines: what the
    Korean, Japanese, Chinese and Russian rules read. They are picked from the lines already
    known not to be ASCII, so the whole text is not split into lines a second time.
    ``raw_foreign`` is those lines as they were in ``scanned``, and ``odd`` their line numbers.
    """

    scanned: str
    truncated: bool
    shown: str
    projected: str
    special: bool
    cyrillic: bool = False
    tags: bool = False
    foreign: str = ""
    raw_foreign: str = ""
    odd: list[int] = field(default_factory=list)


def _prepare(raw: str, max_bytes: int) -> _Prepared:
    """Bound, normalise and project ``raw`` (see :class:`_Prepared`).

    Only the lines that are not ASCII are worked on: an ASCII line is already NFKC, has
    nothing to fold or project and takes one byte a character, and in a developer's text
    (source, Markdown, notes with a few CJK lines or a stray "…") those are nearly all of
    them. Finding them is one pass in C (``_non_ascii_lines``). They are then joined and
    folded and projected as one text, each step one call in C however many lines there are,
    and only a line that is not NFKC is normalised: one "…" costs NFKC of its line, not of
    every foreign line. That is the same as treating the whole text at once: a newline is a
    starter that never composes or reorders with a neighbour, so NFKC never acts across one
    (and no character's NFKC form holds one), and folding and projecting act on one
    character at a time.
    """
    if raw.isascii():
        if len(raw) > max_bytes:
            raw = _head_and_tail(raw, max_bytes)
            return _Prepared(raw, True, raw, raw.lower(), False)
        return _Prepared(raw, False, raw, raw.lower(), False)
    data = b""
    if len(raw) <= max_bytes:  # else it is over the budget whatever its characters
        data = raw.encode("utf-8", "surrogatepass")
    truncated = not data or len(data) > max_bytes
    if truncated:
        raw = _head_and_tail(raw, max_bytes)
        data = raw.encode("utf-8", "surrogatepass")
    lines = raw.split("\n")
    odd = _non_ascii_lines(lines)
    if not odd:  # cut to its head and tail, the text became ASCII
        return _Prepared(raw, truncated, raw, raw.lower(), False)
    # Which scripts are there, read off the UTF-8 lead bytes with memchr: accented Latin
    # (U+00C0-U+027F, leads C3-C9) and Cyrillic (U+0400-U+04FF, leads D0-D3). A regex over
    # 64 KiB of CJK would cost a millisecond; these cost microseconds.
    accents = any(lead in data for lead in _LATIN_LEADS)
    cyrillic = any(lead in data for lead in _CYRILLIC_LEADS)
    foreign_lines = list(map(lines.__getitem__, odd))
    foreign = raw_foreign = "\n".join(foreign_lines)
    changed = special = fresh = False
    if not unicodedata.is_normalized("NFKC", foreign):
        # The quick check is far cheaper than normalising a line that is already NFKC.
        foreign = "\n".join(
            line if unicodedata.is_normalized("NFKC", line) else unicodedata.normalize("NFKC", line)
            for line in foreign_lines
        )
        changed = fresh = True
    if _SPECIAL.search(foreign) is not None:
        foreign = _fold(foreign)
        changed = special = True
    shown_foreign = foreign
    # Accented letters are looked for only where some may be: the raw text has some, or
    # NFKC may have made some (CJK prose has none).
    if (accents or fresh) and _LATIN_ACCENTED.search(foreign) is not None:
        foreign = foreign.translate(_LATIN_BASE)
    projected_foreign = foreign.encode("ascii", "replace").decode("ascii")
    tags = special and _TAG_LEAD in data  # tag characters are astral, so special
    if len(odd) == len(lines):
        shown = shown_foreign if changed else raw
        projected = projected_foreign.lower()
        shown_lines = shown_foreign.split("\n")
    else:
        projected_lines = lines.copy()
        for index, line in zip(odd, projected_foreign.split("\n"), strict=True):
            projected_lines[index] = line
        projected = "\n".join(projected_lines).lower()
        shown_lines = shown_foreign.split("\n")
        if changed:
            for index, line in zip(odd, shown_lines, strict=True):
                lines[index] = line
            shown = "\n".join(lines)
        else:
            shown = raw
    # The foreign lines are among the ``odd`` ones (raw ASCII lines are left as they are, and
    # NFKC may make a line ASCII, never a line not ASCII).
    foreign_shown = "\n".join(itertools.filterfalse(str.isascii, shown_lines))
    return _Prepared(
        raw, truncated, shown, projected, special, cyrillic, tags, foreign_shown, raw_foreign, odd
    )


def _non_ascii_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that are not ASCII, found without a Python-level loop."""
    return list(itertools.compress(range(len(lines)), map(operator.not_, map(str.isascii, lines))))


def _head_and_tail(text: str, max_bytes: int) -> str:
    """The first three quarters and the last quarter of the byte budget of an oversized text."""
    data = text.encode("utf-8", "surrogatepass")
    head = data[: max_bytes * 3 // 4].decode("utf-8", "ignore")
    tail = data[len(data) - max_bytes // 4 :].decode("utf-8", "ignore")
    return head + "\n" + tail
