"""The matching machinery: anchored regexes tried only where their rare words occur.

See the package docstring for why it is built this way (speed, no catastrophic backtracking).
The pattern tables (:mod:`.patterns`, :mod:`.phrases`) are written with these parts.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from .threats import Scope, Span

_WORD_SPLIT = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


class _Doc:
    """The ASCII projection of a normalised text, its words, and where every anchor occurs.

    Two passes of Aho-Corasick automata, in Rust, replace reading the text once per keyword:
    one finds every anchor of every pattern (over the bytes: the projection is ASCII, so a
    byte offset is a character offset), the other which words of the patterns' vocabulary
    the text holds (" word " in the text with every character that is not a letter or digit
    made a space). Python pays only for the occurrences, a few hundred in 64 KiB of a
    developer's text, not for each character or each of the text's ten thousand words.

    ``words`` holds only the vocabulary's words: the ``needs`` of every pattern, the anchors
    of whole-word patterns and what :func:`_known_words` registered. A word outside it is
    never in ``words``, whatever the text says.
    """

    __slots__ = ("_hits", "_starts", "text", "words")

    def __init__(self, text: str) -> None:
        self.text = text
        engine = _engine()
        spaced = f" {text.translate(_WORD_SPLIT)} "
        if not spaced.isascii():  # never the scan's projection; "?" is a separator
            spaced = spaced.encode("ascii", "replace").decode("ascii").replace("?", " ")
        # Each occurrence comes back as " word "; the few distinct ones are then trimmed.
        padded = frozenset(engine.words.find_matches_as_strings(spaced, overlapping=True))
        self.words = frozenset(word[1:-1] for word in padded)
        # A character that is not ASCII becomes one "?" byte, so offsets still line up (the
        # scan's projection has none; no anchor holds a "?").
        found = engine.anchors.find_matches_as_indexes(
            text.encode("ascii", "replace"), overlapping=True
        )
        hits: dict[str, list[int]] = {}
        names = engine.anchor_names
        for index, start, _end in found:  # in order of their ends: each anchor's in order
            positions = hits.get(names[index])
            if positions is None:
                hits[names[index]] = [start]
            else:
                positions.append(start)
        self._hits = hits
        self._starts: dict[str, list[int]] = {}

    def has_all(self, needs: tuple[frozenset[str], ...]) -> bool:
        """Whether every group of ``needs`` has at least one of its words in the text."""
        # map over a bound method: no Python frame per group (this runs for every pattern)
        return not any(map(self.words.isdisjoint, needs))

    def hits(self, anchor: str) -> list[int]:
        """Every position of ``anchor``, in order."""
        return self._hits.get(anchor, _NO_HITS)

    def word_start_hits(self, anchor: str) -> list[int]:
        """The positions of ``anchor`` where a word starts (not after a letter or digit)."""
        found = self._starts.get(anchor)
        if found is None:
            text = self.text
            found = [
                pos
                for pos in self._hits.get(anchor, _NO_HITS)
                if pos == 0 or not text[pos - 1].isalnum()
            ]
            self._starts[anchor] = found
        return found


_NO_HITS: list[int] = []  # shared, never appended to
_ANCHORED: list[_Rx] = []  # every anchored regex of every pattern, as built
_KNOWN_WORDS: set[str] = set()  # words matchers look up in _Doc.words besides the needs
_KNOWN_ANCHORS: set[str] = set()  # strings matchers look up with _Doc.hits besides the anchors


def _known_words(words: frozenset[str]) -> frozenset[str]:
    """Register ``words`` as looked up in :attr:`_Doc.words` by a matcher of its own."""
    _KNOWN_WORDS.update(words)
    return words


def _known_anchors(*anchors: str) -> tuple[str, ...]:
    """Register strings a matcher of its own finds with :meth:`_Doc.hits`."""
    _KNOWN_ANCHORS.update(anchors)
    return anchors


@dataclass(frozen=True, slots=True)
class _Engine:
    """The two automata of :class:`_Doc`, for the patterns built when they were made."""

    built_for: tuple[int, int, int]  # how many patterns, known words and anchors there were
    anchors: BytesAhoCorasick
    anchor_names: tuple[str, ...]
    words: AhoCorasick

    @classmethod
    def build(cls) -> _Engine:
        anchors = sorted({anchor for rx in _ANCHORED for anchor in rx.anchors} | _KNOWN_ANCHORS)
        words = _engine_words()
        return cls(
            _built_for(),
            BytesAhoCorasick(
                [anchor.encode("ascii") for anchor in anchors], implementation=Implementation.DFA
            ),
            tuple(anchors),
            AhoCorasick(
                [f" {word} " for word in sorted(words)] + _NO_PREFILTER,
                implementation=Implementation.DFA,
                store_patterns=True,  # a match comes back as the pattern itself, not a copy
            ),
        )


# Every word pattern starts with a space, so the automaton would use a prefilter that stops at
# every space (every word) and restarts: reading a text takes half as long again as without.
# Patterns that start with other bytes turn it off; these cannot match (the spaced text holds
# no control character: the word split made them spaces).
_NO_PREFILTER = [f"{chr(code)}\x00" for code in range(1, 9)]


def _engine_words() -> frozenset[str]:
    """The vocabulary: every word a pattern or matcher looks up in :attr:`_Doc.words`."""
    words = set(_KNOWN_WORDS)
    for rx in _ANCHORED:
        words.update(*rx.needs)
        if rx.whole_words:
            words.update(rx.anchors)
    return frozenset(words)


_ENGINE: list[_Engine] = []


def _engine() -> _Engine:
    """The automata, built on first use (after the pattern tables), again after a change."""
    if not _ENGINE or _ENGINE[0].built_for != _built_for():
        _ENGINE[:] = [_Engine.build()]
    return _ENGINE[0]


def _built_for() -> tuple[int, int, int]:
    return len(_ANCHORED), len(_KNOWN_WORDS), len(_KNOWN_ANCHORS)


Matcher = Callable[[_Doc], Span | None]

# The patterns read the ASCII projection, so they are compiled with re.ASCII: there a class
# such as \w or \b is a table lookup instead of a call into the Unicode database for every
# character tried, which makes the regex work about a third cheaper. On ASCII text both modes
# agree except for \s, which in a str pattern also takes the four information separators
# U+001C-U+001F (str.isspace() counts them), so the patterns spell \s as _SPACE or, inside
# a class, _SPACE_CHARS: the same characters in either mode.
_SPACE_CHARS = r"\s\x1c-\x1f"
_SPACE = f"[{_SPACE_CHARS}]"
_COMPILED: list[re.Pattern[str]] = []  # every pattern compiled for the projection (tests)


def _compile(pattern: str) -> re.Pattern[str]:
    """Compile a pattern that reads the ASCII projection (see above)."""
    compiled = re.compile(pattern, re.ASCII)
    _COMPILED.append(compiled)
    return compiled


def _words(*groups: str) -> tuple[frozenset[str], ...]:
    """Word groups written as space-separated strings: ``_words("a b", "c")``."""
    return tuple(frozenset(group.split()) for group in groups)


def _forms(*verbs: str) -> str:
    """A verb and its -s, -ed, -ing forms, as a word group."""
    out: list[str] = []
    for verb in verbs:
        stem = verb[:-1] if verb.endswith("e") else verb
        out += [verb, verb + "s", stem + "ed", stem + "ing"]
    return " ".join(out)


class _Mode(StrEnum):
    AT = "at"  # the match starts at the anchor
    WINDOW = "window"  # the match is around the anchor: searched in merged windows
    LINE = "line"  # the match starts at the start of the anchor's line


@dataclass(frozen=True, slots=True)
class _Rx:
    """A regex tried only around the places where one of its anchors occurs.

    ``needs`` are word groups the text must contain before anything else is done. Then, by
    ``mode``: AT matches right at each anchor. WINDOW is for a phrase anchored on a rare word
    in its middle ("new system prompt" on "system"): the regex is searched from ``window``
    characters before each anchor to ``after`` characters past it, overlapping windows merged,
    so dense anchors never make a character be read twice. LINE matches at the start of each
    anchor's line, once per line. With ``word_start`` an anchor counts only at the start of a
    word ("now" but not "know"); with ``whole_words`` anchors are whole words, skipped at once
    when the word set lacks them. The positions are every occurrence that counts by these two
    rules.
    """

    anchors: tuple[str, ...]
    regex: re.Pattern[str]
    needs: tuple[frozenset[str], ...]
    mode: _Mode
    window: int
    after: int
    word_start: bool
    whole_words: bool
    line_has: str = ""  # LINE: a string the line must hold before the regex is tried

    def positions(self, doc: _Doc) -> list[int]:
        if not doc.has_all(self.needs):
            return []
        words = doc.words
        hits = doc.word_start_hits if self.word_start else doc.hits
        found: list[int] = []
        for anchor in self.anchors:
            if self.whole_words and anchor not in words:
                continue
            found += hits(anchor)
        if len(self.anchors) > 1:
            found.sort()
        return found

    def iter_spans(self, doc: _Doc) -> Iterator[Span]:
        positions = self.positions(doc)
        if not positions:
            return
        text = doc.text
        match self.mode:
            case _Mode.AT:
                for pos in positions:
                    found = self.regex.match(text, pos)
                    if found is not None:
                        yield found.span()
            case _Mode.LINE:
                done = -1
                for pos in positions:
                    line = text.rfind("\n", 0, pos) + 1
                    if line == done or pos - line > self.window:
                        continue
                    done = line
                    if self.line_has:
                        end = text.find("\n", pos)
                        if text.find(self.line_has, line, len(text) if end < 0 else end) < 0:
                            continue  # a str.find in C spares a regex on most lines
                    found = self.regex.match(text, line)
                    if found is not None:
                        yield found.span()
            case _Mode.WINDOW:
                yield from self._windows(text, positions)

    def _windows(self, text: str, positions: list[int]) -> Iterator[Span]:
        size = len(text)
        lo, hi = max(0, positions[0] - self.window), positions[0] + self.after
        for pos in positions[1:]:
            if pos - self.window <= hi:
                hi = pos + self.after
                continue
            for found in self.regex.finditer(text, lo, min(hi, size)):
                yield found.span()
            lo, hi = pos - self.window, pos + self.after
        for found in self.regex.finditer(text, lo, min(hi, size)):
            yield found.span()

    def __call__(self, doc: _Doc) -> Span | None:
        return next(self.iter_spans(doc), None)


def _rx(
    anchors: tuple[str, ...],
    pattern: str,
    *,
    needs: tuple[frozenset[str], ...] = (),
    before: str | None = None,
    window: int = 160,
    after: int = 64,
    line: bool = False,
    line_has: str = "",
    word_start: bool = True,
    whole_words: bool = False,
) -> _Rx:
    """An anchored regex; ``before`` makes it WINDOW (or LINE with ``line``), else AT.

    ``after`` bounds how far past its anchor a WINDOW match may reach; ``window`` how far
    before it (or, for LINE, how far into its line the anchor may be).
    """
    if before is None:
        regex, mode, window, after = _compile(pattern), _Mode.AT, 0, 0
    else:
        regex = _compile(f"(?:{before})(?:{pattern})")
        mode = _Mode.LINE if line else _Mode.WINDOW
    rx = _Rx(anchors, regex, needs, mode, window, after, word_start, whole_words, line_has)
    _ANCHORED.append(rx)
    return rx


def _any_of(*matchers: Matcher) -> Matcher:
    def match(doc: _Doc) -> Span | None:
        for matcher in matchers:
            span = matcher(doc)
            if span is not None:
                return span
        return None

    return match


@dataclass(frozen=True, slots=True)
class _Near:
    """``secondary`` next to ``primary`` on the same logical line, within ``gap`` characters.

    ``primary`` is found through its anchors; ``secondary`` is searched only in the stretch of
    line before it (``secondary_first``, e.g. a ``cat`` before ``.env``) or after it (a
    ``$TOKEN`` after ``curl``), with overlapping stretches merged so no character is read
    twice. A backslash-newline continues the line, as in a shell.
    """

    primary: _Rx
    secondary: re.Pattern[str]
    gap: int
    secondary_first: bool

    def __call__(self, doc: _Doc) -> Span | None:
        primaries = list(self.primary.iter_spans(doc))
        if not primaries:
            return None
        primaries.sort()
        text = doc.text
        reach = self.gap + _SECONDARY_MAX
        if self.secondary_first:
            # The secondary may look a few characters past its end ("head" wants an option or
            # a path after it), so each stretch reaches slightly into the primary.
            bounds = [(_line_floor(text, s, max(0, s - reach)), s) for s, _e in primaries]
            stretches = [(lo, min(len(text), s + 8)) for lo, s in bounds]
        else:
            bounds = [(e, _line_ceil(text, e, min(len(text), e + reach))) for _s, e in primaries]
            stretches = bounds
        found = _finditer_merged(self.secondary, text, stretches)
        if not found:
            return None
        if self.secondary_first:
            ends = [m.end() for m in found]
            for (lo, start), (_s, end) in zip(bounds, primaries, strict=True):
                i = bisect.bisect_right(ends, start) - 1
                if i >= 0 and found[i].start() >= lo and start - found[i].end() <= self.gap:
                    return (found[i].start(), end)
        else:
            starts = [m.start() for m in found]
            for (end, hi), (start, _e) in zip(bounds, primaries, strict=True):
                i = bisect.bisect_left(starts, end)
                if i < len(found) and found[i].end() <= hi and found[i].start() - end <= self.gap:
                    return (start, found[i].end())
        return None


_SECONDARY_MAX = 96  # longest secondary match looked for


def _finditer_merged(
    regex: re.Pattern[str], text: str, stretches: list[Span]
) -> list[re.Match[str]]:
    """Every match of ``regex`` inside the stretches (sorted by start), merged when overlapping."""
    found: list[re.Match[str]] = []
    ordered = sorted(stretches)
    lo, hi = ordered[0]
    for next_lo, next_hi in ordered[1:]:
        if next_lo <= hi:
            hi = max(hi, next_hi)
            continue
        found.extend(regex.finditer(text, lo, hi))
        lo, hi = next_lo, next_hi
    found.extend(regex.finditer(text, lo, hi))
    return found


def _line_floor(text: str, pos: int, lo: int) -> int:
    """Where the logical line holding ``pos`` starts, but never before ``lo``."""
    end = pos
    while True:
        newline = text.rfind("\n", lo, end)
        if newline < 0:
            return lo
        if _continued(text, newline):
            end = newline  # a shell line continuation: keep looking further back
            continue
        return newline + 1


def _line_ceil(text: str, pos: int, hi: int) -> int:
    """Where the logical line holding ``pos`` ends, but never after ``hi``."""
    start = pos
    while True:
        newline = text.find("\n", start, hi)
        if newline < 0:
            return hi
        if _continued(text, newline):
            start = newline + 1
            continue
        return newline


def _continued(text: str, newline: int) -> bool:
    before = text[max(0, newline - 2) : newline]
    return before.endswith("\\") or before == "\\\r"


def _near(primary: _Rx, secondary: str, gap: int, *, secondary_first: bool) -> _Near:
    return _Near(primary, _compile(secondary), gap, secondary_first)


@dataclass(frozen=True, slots=True)
class _Addressed:
    """``technical`` (a credentials file dumped, data sent to a URL, approval turned off) only
    where the text also speaks to the model within ``reach`` characters: a match of ``cue``
    ("in your reply", "before replying", "the user agreed", "after each turn").

    For tool output, where code and docs name ``.env``, ``curl -d`` and ``--yolo`` as a matter
    of course but never tell the reader to put a key in *its reply*. The cues are looked for
    only in a text the technical pattern matches somewhere (most pages of code never do), with
    one regex and no anchors of their own (common words such as "output" would cost every
    scan); then the technical pattern runs again on the stretches around them (merged: no
    character is read twice, however dense the cues), each as a document of its own.
    """

    technical: Callable[[_Doc], Span | None]
    cue: re.Pattern[str]
    reach: int

    def __call__(self, doc: _Doc) -> Span | None:
        if self.technical(doc) is None:
            return None
        text = doc.text
        stretches: list[Span] = []
        for found in self.cue.finditer(text):
            lo, hi = max(0, found.start() - self.reach), min(len(text), found.end() + self.reach)
            if stretches and lo <= stretches[-1][1]:
                stretches[-1] = (stretches[-1][0], hi)
            else:
                stretches.append((lo, hi))
        for lo, hi in stretches:
            span = self.technical(doc if (lo, hi) == (0, len(text)) else _Doc(text[lo:hi]))
            if span is not None:
                return (lo + span[0], lo + span[1])
        return None


@dataclass(frozen=True, slots=True)
class ThreatPattern:
    """A named pattern: the scopes it guards and where in a normalised text it matches."""

    name: str
    description: str
    scopes: frozenset[Scope]
    matcher: Matcher

    def search(self, doc: _Doc) -> Span | None:
        return self.matcher(doc)
