"""Unified diffs of a file's text before and after a change, bounded in time and size.

``write`` and ``edit`` return one in ``details["diff"]`` (the approval prompt, the chat and an
editor show it); restoring a checkpoint shows one too. Line endings are ignored (a CRLF file
edited by a model that writes LF is not a diff of every line), common leading and trailing
lines are cut before difflib runs, and a pathological pair of huge texts gets a one-line
summary instead of a quadratic diff.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from agentsh.termsafe import one_line
from agentsh.tools.base import format_size, truncate_head

# difflib is quadratic on pathological input: above this many lines on both sides, no diff.
_DIFF_MAX_LINES = 20_000


def diff_lines(text: str) -> list[str]:
    """The lines of ``text`` for difflib, each with its ``\\n`` (CRLF read as LF)."""
    # split("\n"), not splitlines(): form feeds and U+2028 are not line breaks in a source file.
    parts = text.replace("\r\n", "\n").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def header_name(name: str) -> str:
    """A file name for a ``---``/``+++`` line: on that one line, line breaks and control
    characters shown as escapes (a name is the project's or the model's to choose, and the
    approval prompt shows the header)."""
    return one_line(name).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified_diff(old: str, new: str, name: str, *, created: bool = False) -> tuple[str, int, int]:
    """A unified diff of two texts (line endings ignored), with +/- line counts.

    Common leading and trailing lines are cut before difflib runs and the hunk numbers
    shifted back, so a one-line edit of a large file costs what a small diff costs.
    """
    a, b = diff_lines(old), diff_lines(new)
    context = 3
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - context)
    cut_tail = max(0, tail - context)
    a_mid, b_mid = a[start : len(a) - cut_tail], b[start : len(b) - cut_tail]
    if len(a_mid) > _DIFF_MAX_LINES and len(b_mid) > _DIFF_MAX_LINES:
        removed, added = len(a) - head - tail, len(b) - head - tail
        return f"(diff not shown: {removed} lines replaced by {added} lines)\n", added, removed
    out: list[str] = []
    added = removed = 0
    shown = header_name(name)
    fromfile = "/dev/null" if created else f"a/{shown}"
    lines = _unified(a_mid, b_mid, fromfile, f"b/{shown}", context)
    for index, line in enumerate(lines):
        if index < 2:  # the ---/+++ header
            out.append(line if line.endswith("\n") else line + "\n")
            continue
        if line.startswith("@@"):
            if start:
                line = _HUNK.sub(
                    lambda m: (
                        f"@@ -{int(m[1]) + start}{m[2] or ''} +{int(m[3]) + start}{m[4] or ''} @@"
                    ),
                    line,
                )
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out), added, removed


def _unified(a: list[str], b: list[str], fromfile: str, tofile: str, n: int) -> Iterator[str]:
    """difflib.unified_diff's lines, from :class:`_Matcher`'s blocks."""
    started = False
    for group in _Matcher(a, b).get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


#: difflib runs only on gaps between anchors at most this big (lines x lines): its matching
#: is quadratic where lines alternate (every other line changed: 282 s for 20,000 lines)
_DIFFLIB_CELLS = 1_000_000


class _Matcher(difflib.SequenceMatcher[str]):
    """difflib's matcher with patience diff's anchors: lines found once in each text, in
    the same order (a longest increasing run), match first; difflib only fills the gaps
    between them, and a gap too big for it counts as replaced. Linear-ish where difflib alone
    was quadratic, and the same result on the usual small edit."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b)
        self._texts = (a, b)
        self._blocks: list[difflib.Match] | None = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self._blocks is not None:
            return self._blocks
        a, b = self._texts
        found: list[tuple[int, int, int]] = []
        stack = [(0, len(a), 0, len(b))]
        while stack:
            alo, ahi, blo, bhi = stack.pop()
            while alo < ahi and blo < bhi and a[alo] == b[blo]:
                found.append((alo, blo, 1))
                alo, blo = alo + 1, blo + 1
            while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
                ahi, bhi = ahi - 1, bhi - 1
                found.append((ahi, bhi, 1))
            if alo == ahi or blo == bhi:
                continue
            anchors = _anchors(a, b, alo, ahi, blo, bhi)
            if anchors:
                for i, j in anchors:
                    stack.append((alo, i, blo, j))
                    found.append((i, j, 1))
                    alo, blo = i + 1, j + 1
                stack.append((alo, ahi, blo, bhi))
            elif (ahi - alo) * (bhi - blo) <= _DIFFLIB_CELLS:
                gap = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi])
                found.extend((alo + i, blo + j, k) for i, j, k in gap.get_matching_blocks() if k)
        blocks: list[difflib.Match] = []
        for i, j, k in sorted(found):
            if (
                blocks
                and blocks[-1].a + blocks[-1].size == i
                and blocks[-1].b + blocks[-1].size == j
            ):
                last = blocks.pop()
                blocks.append(difflib.Match(last.a, last.b, last.size + k))
            else:
                blocks.append(difflib.Match(i, j, k))
        blocks.append(difflib.Match(len(a), len(b), 0))
        self._blocks = blocks
        return blocks


def _anchors(
    a: Sequence[str], b: Sequence[str], alo: int, ahi: int, blo: int, bhi: int
) -> list[tuple[int, int]]:
    """(i, j) of the lines found exactly once in ``a[alo:ahi]`` and in ``b[blo:bhi]``, the
    longest run of them in the same order in both."""
    count_a = Counter(a[alo:ahi])
    count_b = Counter(b[blo:bhi])
    where_b = {line: j for j, line in enumerate(b[blo:bhi], blo) if count_b[line] == 1}
    pairs = [
        (i, where_b[line])
        for i, line in enumerate(a[alo:ahi], alo)
        if count_a[line] == 1 and line in where_b
    ]
    # The longest increasing run of j (patience sorting): tails[k] ends the best run of k+1.
    tails: list[int] = []  # indexes into pairs
    tail_js: list[int] = []  # their j, for the search
    back: list[int] = [-1] * len(pairs)
    for index, (_i, j) in enumerate(pairs):
        k = bisect.bisect_left(tail_js, j)
        if k:
            back[index] = tails[k - 1]
        if k == len(tails):
            tails.append(index)
            tail_js.append(j)
        else:
            tails[k] = index
            tail_js[k] = j
    run: list[tuple[int, int]] = []
    index = tails[-1] if tails else -1
    while index >= 0:
        run.append(pairs[index])
        index = back[index]
    return run[::-1]


def capped_diff(diff: str, max_bytes: int) -> str:
    """The diff kept in details (and so in the session log) stays under the read budget."""
    cut = truncate_head(diff, max_lines=10**9, max_bytes=max_bytes)
    if not cut.truncated:
        return diff
    return f"{cut.text}\n... (diff cut at {format_size(max_bytes)} of {format_size(len(diff))})\n"
