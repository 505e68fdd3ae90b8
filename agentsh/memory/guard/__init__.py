"""The injection guard: threat patterns, the scan, and the fences around quoted data.

Memory outlives the session that wrote it, so it is a channel for prompt injection that keeps
working long after the poisoned web page or file is gone. This package owns every pattern that
guards it (SPEC §5): each :class:`ThreatPattern` has a name, a human description, the
:class:`Scope` set it applies to and a matcher. :func:`scan` runs the patterns of one scope over
a text and returns a :class:`Threat` per pattern that hit; :func:`fence_recalled` wraps recalled
memory in ``<memory-context>`` tags and :func:`fence_project` what the system prompt quotes from
AGENTS.md, MEMORY.md and USER.md in ``<project-data>`` tags, after stripping any fence tags or
fence notes inside them.

Where things are: :mod:`.threats` (scopes, threats), :mod:`.reading` (invisible characters,
normalisation, the projection), :mod:`.matching` (the matching machinery), :mod:`.patterns` (the
English pattern tables), :mod:`.latin` (Spanish, French, German, Portuguese and Italian, on the
same projection), :mod:`.phrases` (Korean, Japanese, Chinese and Russian phrase rules),
:mod:`.scanner` (the scan) and :mod:`.fence`. The pattern-table modules are data.

How text is read. Invisible characters are looked for on the RAW text (normalising would erase
the evidence). Patterns run on a normalised copy: NFKC (fullwidth and mathematical letters
become ASCII), casefolded, default-ignorable characters removed (a soft hyphen inside "ign­ore"
does not hide it) and the common Cyrillic and Greek look-alikes of Latin letters folded. The
patterns are English keywords and paths, so they run on an ASCII projection of that copy
(accented Latin letters become their base letter, every other character "?", one for one, so
positions still line up), which the regex engine and ``str.find`` handle several times faster
than mixed-script text. Only the lines that are not ASCII are normalised and projected; the rest
already are both. The same injections written in Korean, Japanese, Chinese or Russian are
looked for by phrase rules on those non-ASCII lines themselves, reported under the English
pattern's name. A zero-width joiner between two emoji (👩‍💻) is how emoji are built, not a
hidden character.

Why it is fast and cannot hang. Python's regex engine is slow at trying a keyword pattern at
every position, and a Python loop per keyword or per word is slow too, so nothing does that.
Two Aho-Corasick automata (``ahocorasick-rs``, in Rust) read the projection once each: one
finds every *anchor* of every pattern (its rare strings), the other which words of the
patterns' vocabulary the text holds as whole words. Python then pays per occurrence, a few
hundred in 64 KiB of a developer's text. Each pattern names the words it cannot match without,
and is skipped when one group of them is missing; otherwise its regex runs only at or around
its anchors' positions (:class:`_Doc`). Keywords are separated by a *bounded* number of
filler words, ``(?:SEP WORD){0,n}? SEP`` with SEP and WORD disjoint classes, so a position can
be matched only one way and no quantifier is nested in an unbounded one. A phrase anchored on a
word in its middle is searched in windows around the anchors, and overlapping windows are
merged, so dense anchors ("ignore ignore ignore ...") never make a character be read twice. "A
command, then later on the same line a secret" is not one regex with a free run between (O(n x
run) on "curl curl curl ..."): :class:`_Near` finds the rare side, then looks for the other side
in the stretch of line next to it. HTML comments are walked from one opening to the next. The
Korean, Japanese, Chinese and Russian rules find their anchors with a third automaton.

How much is read. At most ``max_bytes`` (64 KiB by default, ``memory.guard_max_scan_bytes``)
of UTF-8 are scanned. A longer text is scanned on its first three quarters and its last
quarter of that budget (an appended payload is the cheapest attack, so the tail is always
read), and the scan also reports an ``oversized`` threat: the middle was not checked, so the
text is treated as unsafe. Every caller passes far less (MEMORY.md is 2,200 characters,
AGENTS.md 32 KiB, a recalled chunk about 1,600 characters), so this only fires on abuse.
"""

from .fence import (
    FENCE_CLOSE,
    FENCE_NOTE,
    FENCE_OPEN,
    PROJECT_CLOSE,
    PROJECT_NOTE,
    PROJECT_OPEN,
    fence_project,
    fence_recalled,
)
from .matching import ThreatPattern
from .patterns import PATTERN_NAMES, PATTERNS
from .reading import normalize
from .scanner import blocked_note, first_threat, scan
from .threats import (
    ALL_SCOPES,
    DEFAULT_MAX_SCAN_BYTES,
    MEMORY_SCOPES,
    Scope,
    Span,
    Threat,
)

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_MAX_SCAN_BYTES",
    "FENCE_CLOSE",
    "FENCE_NOTE",
    "FENCE_OPEN",
    "MEMORY_SCOPES",
    "PATTERNS",
    "PATTERN_NAMES",
    "PROJECT_CLOSE",
    "PROJECT_NOTE",
    "PROJECT_OPEN",
    "Scope",
    "Span",
    "Threat",
    "ThreatPattern",
    "blocked_note",
    "fence_project",
    "fence_recalled",
    "first_threat",
    "normalize",
    "scan",
]
