"""Unified diffs of a file's text before and after a change, bounded in time and size.

``write`` and ``edit`` return one in ``details["diff"]`` (the approval prompt, the chat and an
editor show it); restoring a checkpoint shows one too. Line endings are ignored (a CRLF file
edited by a model that writes LF is not a diff of every line), common leading and trailing
lines are cut before difflib runs, and a pathological pair of huge texts gets a one-line
summary instead of a quadratic diff.
"""

from __future__ import annotations

import difflib
import re

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
    fromfile = "/dev/null" if created else f"a/{name}"
    lines = difflib.unified_diff(a_mid, b_mid, fromfile, f"b/{name}", n=context)
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


def capped_diff(diff: str, max_bytes: int) -> str:
    """The diff kept in details (and so in the session log) stays under the read budget."""
    cut = truncate_head(diff, max_lines=10**9, max_bytes=max_bytes)
    if not cut.truncated:
        return diff
    return f"{cut.text}\n... (diff cut at {format_size(max_bytes)} of {format_size(len(diff))})\n"
