"""Unified diffs stay fast on text difflib alone is quadratic on, and stay right."""

from __future__ import annotations

import random
import time

from agentsh.tools.file_diff import _Matcher, diff_lines, unified_diff


def test_every_other_line_changed_in_a_long_file_is_diffed_in_moments() -> None:
    """A formatter pass that touches every other line of a 20,000-line file: difflib took
    282 s (the write's approval, the chat and the restore offer all waited for it)."""
    old = "\n".join(f"line {i}" for i in range(19_999)) + "\n"
    new = "\n".join(f"line {i}" if i % 2 else f"changed {i}" for i in range(19_999)) + "\n"
    started = time.monotonic()
    _diff, added, removed = unified_diff(old, new, "big.txt")
    assert time.monotonic() - started < 20  # 0.6 s here; the old way never came near
    assert (added, removed) == (10_000, 10_000)


def test_the_matches_rebuild_the_new_text_from_the_old() -> None:
    rng = random.Random(7)
    words = ["a", "b", "c", "}", "", "return x", "pass"]
    for _ in range(300):
        old = [rng.choice(words) + "\n" for _ in range(rng.randrange(0, 40))]
        new = list(old)
        for _ in range(rng.randrange(0, 8)):
            at = rng.randrange(0, len(new) + 1)
            if rng.random() < 0.5 and new and at < len(new):
                del new[at]
            else:
                new.insert(at, rng.choice(words) + f"{rng.randrange(3)}\n")
        rebuilt: list[str] = []
        for tag, i1, i2, j1, j2 in _Matcher(old, new).get_opcodes():
            rebuilt.extend(old[i1:i2] if tag == "equal" else new[j1:j2])
            if tag == "equal":
                assert old[i1:i2] == new[j1:j2]
        assert rebuilt == new


def test_a_small_edit_reads_as_before() -> None:
    diff, added, removed = unified_diff("a\nb\nc\nd\n", "a\nB\nc\nd\ne\n", "x")
    assert diff == "--- a/x\n+++ b/x\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n"
    assert (added, removed) == (2, 1)
    assert diff_lines("x\r\ny") == ["x\n", "y"]
