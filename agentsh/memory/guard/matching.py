"""The matching machinery: anchored regexes tried only where their rare words occur.

See the package docstring for why it is built this way (speed, no catastrophic backtracking).
The pattern tables (:mod:`.patterns`, :mod:`.phrases`) are written with these parts.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum

from .threats import Scope, Span

_WORD_SPLIT = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


_BLOCK = 4096  # characters a block of the text holds at least (it ends at a newline)


class _Doc:
    """The ASCII projection of a normalised text, its words, and anchor positions.

    The text is cut into blocks of about ``_BLOCK`` characters at newlines, and the words of
    each block are kept as well as those of the whole text. Anchors are then looked for only
    in the blocks whose words allow a counted occurrence (see :class:`_Gate`): a keyword that
    appears in three places of 64 KiB of source costs a read of three blocks, not of the whole
    text. Positions are cached per anchor with the blocks they cover, so patterns share them.
    """

    __slots__ = (
        "_block_words",
        "_bounds",
        "_hits",
        "_masks",
        "_prefix_masks",
        "_sorted_words",
        "text",
        "words",
    )

    def __init__(self, text: str) -> None:
        self.text = text
        spaced = text.translate(_WORD_SPLIT)
        bounds: list[Span] = []
        lo = 0
        while lo < len(text):
            newline = text.find("\n", lo + _BLOCK)
            hi = len(text) if newline < 0 else newline + 1
            bounds.append((lo, hi))
            lo = hi
        if len(bounds) <= 1:
            self._bounds = [(0, len(text))]
            self.words = frozenset(spaced.split())
            self._block_words = [self.words]
        else:
            self._bounds = bounds
            self._block_words = [frozenset(spaced[lo:hi].split()) for lo, hi in bounds]
            self.words = frozenset().union(*self._block_words)
        self._sorted_words: list[str] | None = None
        self._masks: dict[str, int] = {}
        self._prefix_masks: dict[str, int] = {}
        self._hits: dict[str, tuple[int, list[int]]] = {}

    def has_all(self, needs: tuple[frozenset[str], ...]) -> bool:
        """Whether every group of ``needs`` has at least one of its words in the text."""
        # map over a bound method: no Python frame per group (this runs for every pattern)
        return not any(map(self.words.isdisjoint, needs))

    def blocks_for(self, gate: _Gate) -> int:
        """The blocks that may hold a counted occurrence of an anchor with this gate, one bit
        each; none when the text as a whole rules it out (see :class:`_Gate`)."""
        if not gate.words <= self.words:
            return 0
        if len(self.text) < _BLOCK:
            # One short block: reading it costs less than checking where not to read.
            return 1
        for prefix in gate.prefixes:
            if not self._prefix_mask(prefix):
                return 0
        blocks = (1 << len(self._bounds)) - 1
        for word in gate.block_words:
            blocks &= self._word_mask(word)
        for prefix in gate.block_prefixes:
            blocks &= self._prefix_mask(prefix)
        return blocks

    def _word_mask(self, word: str) -> int:
        """The blocks holding ``word``, one bit each."""
        mask = self._masks.get(word)
        if mask is None:
            mask = 0
            for index, words in enumerate(self._block_words):
                if word in words:
                    mask |= 1 << index
            self._masks[word] = mask
        return mask

    def _prefix_mask(self, prefix: str) -> int:
        """The blocks holding a word that starts with ``prefix``, one bit each."""
        mask = self._prefix_masks.get(prefix)
        if mask is None:
            if self._sorted_words is None:
                self._sorted_words = sorted(self.words)
            ordered = self._sorted_words
            # The words starting with the prefix are a run of the sorted words; each block is
            # then one set operation in C, however many words the run holds.
            start = bisect.bisect_left(ordered, prefix)
            end = bisect.bisect_left(ordered, prefix[:-1] + chr(ord(prefix[-1]) + 1), start)
            mask = 0
            if end > start:
                run = ordered[start:end]
                for index, words in enumerate(self._block_words):
                    if not words.isdisjoint(run):
                        mask |= 1 << index
            self._prefix_masks[prefix] = mask
        return mask

    def hits(self, anchor: str, need: int) -> list[int]:
        """The positions of ``anchor`` in order: every one in the blocks of ``need``.

        Occurrences in other blocks may be included (when cached for another gate); by the
        gate that chose the blocks, none of them counts, which the caller's word-start check
        sees.
        """
        cached = self._hits.get(anchor)
        if cached is not None:
            covered, found = cached
            if need & ~covered == 0:
                return found
            need |= covered
        if len(self.text) >= _BLOCK:
            derived = self._derived_hits(anchor, need)
            if derived is not None:
                self._hits[anchor] = derived
                return derived[1]
        found = []
        find = self.text.find
        for lo, hi in self._stretches(need) if len(self._bounds) > 1 else self._bounds:
            # An occurrence never spans two blocks: they end at newlines, anchors hold none.
            pos = find(anchor, lo, hi)
            while pos >= 0:
                found.append(pos)
                pos = find(anchor, pos + 1, hi)
        self._hits[anchor] = (need, found)
        return found

    def _stretches(self, blocks: int) -> Iterator[Span]:
        """The stretches of text the blocks of a mask cover, neighbouring blocks merged."""
        start = end = -1
        for index, (lo, hi) in enumerate(self._bounds):
            if blocks >> index & 1:
                if start < 0:
                    start = lo
                end = hi
            elif start >= 0:
                yield start, end
                start = -1
        if start >= 0:
            yield start, end

    def _derived_hits(self, anchor: str, need: int) -> tuple[int, list[int]] | None:
        """The positions of ``anchor`` read off those of a located anchor inside it, if any.

        "shows" occurs only where "show" does, "<|system" only where "system" does: checking
        those few places is far cheaper than reading the text again. Not worth it when the
        shorter anchor is everywhere (one check costs about as much as reading 64 characters),
        so then the text is read. The result covers the blocks the shorter one covers.
        """
        best: tuple[str, int, list[int]] | None = None
        for known in _inner_anchors(anchor):
            cached = self._hits.get(known)
            if cached is None:
                continue
            covered, positions = cached
            if need & ~covered == 0 and (best is None or len(positions) < len(best[2])):
                best = (known, covered, positions)
        if best is None or len(best[2]) * 64 > len(self.text):
            return None
        known, covered, positions = best
        offset = anchor.index(known)
        starts = self.text.startswith
        found = [
            pos - offset for pos in positions if pos >= offset and starts(anchor, pos - offset)
        ]
        return covered, found


_ANCHORED: list[_Rx] = []  # every anchored regex of every pattern, as built


@functools.cache
def _inner_anchors(anchor: str) -> tuple[str, ...]:
    """The other anchors that occur inside ``anchor`` ("show" in "shows")."""
    anchors = {other for rx in _ANCHORED for other in rx.anchors}
    return tuple(other for other in anchors if other != anchor and other in anchor)


@dataclass(frozen=True, slots=True)
class _Gate:
    """Words that every counted occurrence of an anchor puts in the text's word set.

    Reading the anchor's letter-and-digit runs against its own punctuation: a run with a
    separator on both sides is a whole word of the text ("im" in "<|im_start"), a run with one
    only on its left starts a word ("npmrc" in ".npmrc"). At the anchor's own start, the left
    side is a separator when the anchor counts only at the start of a word. Checking these in
    the word set (a lookup, a bisection) is far cheaper than a ``str.find`` through 64 KiB that
    finds nothing, which is what most anchors do in most texts.

    ``words`` and ``prefixes`` are checked on the whole text, ``block_words`` and
    ``block_prefixes`` on each block. They differ for a whole-word anchor: the text must hold
    the word itself ("show"), but its positions include every occurrence at the start of a
    word ("shows" too), so a block needs only a word that starts with it.
    """

    words: frozenset[str]
    prefixes: tuple[str, ...]
    block_words: frozenset[str]
    block_prefixes: tuple[str, ...]

    @classmethod
    def of(cls, anchor: str, *, word_start: bool, whole_word: bool) -> _Gate:
        if whole_word:
            return cls(frozenset({anchor}), (), frozenset(), (anchor,) if word_start else ())
        words: list[str] = []
        prefixes: list[str] = []
        for run in _ALNUM_RUN.finditer(anchor):
            if run.start() == 0 and not word_start:
                continue  # may be the end of a longer word: nothing to check
            if run.end() < len(anchor):
                words.append(run.group())
            else:
                prefixes.append(run.group())
        return cls(frozenset(words), tuple(prefixes), frozenset(words), tuple(prefixes))


_ALNUM_RUN = re.compile("[a-z0-9]+")


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
    rules; the gates only spare reading the blocks where none can be.
    """

    anchors: tuple[str, ...]
    regex: re.Pattern[str]
    needs: tuple[frozenset[str], ...]
    mode: _Mode
    window: int
    after: int
    word_start: bool
    whole_words: bool
    gates: tuple[_Gate, ...]  # one per anchor, from word_start and whole_words
    line_has: str = ""  # LINE: a string the line must hold before the regex is tried

    def positions(self, doc: _Doc) -> list[int]:
        if not doc.has_all(self.needs):
            return []
        text = doc.text
        words = doc.words
        found: list[int] = []
        for anchor, gate in zip(self.anchors, self.gates, strict=True):
            if not gate.words <= words:  # most anchors, checked here without a call
                continue
            blocks = doc.blocks_for(gate)
            if not blocks:
                continue
            hits = doc.hits(anchor, blocks)
            if self.word_start:
                found += [pos for pos in hits if pos == 0 or not text[pos - 1].isalnum()]
            else:
                found += hits
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
    # Shorter anchors first, so that a longer one holding a shorter one ("shows", "show") is
    # read off its positions (see _Doc.hits); the positions are sorted afterwards anyway.
    anchors = tuple(sorted(anchors, key=len))
    gates = tuple(
        _Gate.of(anchor, word_start=word_start, whole_word=whole_words) for anchor in anchors
    )
    if before is None:
        regex, mode, window, after = _compile(pattern), _Mode.AT, 0, 0
    else:
        regex = _compile(f"(?:{before})(?:{pattern})")
        mode = _Mode.LINE if line else _Mode.WINDOW
    rx = _Rx(anchors, regex, needs, mode, window, after, word_start, whole_words, gates, line_has)
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
class ThreatPattern:
    """A named pattern: the scopes it guards and where in a normalised text it matches."""

    name: str
    description: str
    scopes: frozenset[Scope]
    matcher: Matcher

    def search(self, doc: _Doc) -> Span | None:
        return self.matcher(doc)
