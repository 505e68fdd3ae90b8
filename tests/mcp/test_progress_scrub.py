"""A server's progress text and tool-change notices, as agentsh takes them in (no server run).

Before: a bidirectional override in a progress message reached the screen (``clean_text`` took
out escapes and controls only), the whole message was scrubbed however long it was (megabytes
5 times a second), and a server that sent ``tools/list_changed`` after each listing ended had
agentsh list its tools back to back for good.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from agentsh.mcp.progress import MAX_LINE_CHARS, progress_line
from agentsh.mcp.tool_changes import MIN_RELIST_INTERVAL_S, Coalesced

pytestmark = pytest.mark.asyncio


async def test_bidi_overrides_and_escapes_are_taken_out_before_the_cut() -> None:
    message = "\u202edone\u202c \u2066ok\u2069 \x1b[31mred\x1b[0m \x1b]0;title\x07" + "x" * 300
    line = progress_line(1, 2, message)
    assert line.startswith("[1/2] done ok red x")
    assert not set(line) & {"\u202e", "\u202c", "\u2066", "\u2069", "\x1b", "\x07"}
    assert len(line) == MAX_LINE_CHARS


async def test_no_more_than_12800_characters_of_a_message_are_read() -> None:
    seen: list[int] = []

    def scrub(text: str) -> str:
        seen.append(len(text))
        return text

    progress_line(1, None, "y" * 5_000_000, scrub)
    assert seen and max(seen) <= 12_800


async def test_a_word_the_read_cut_through_is_not_shown() -> None:
    # escapes fill the read; a secret straddles its end: its first half is not shown
    message = "\x1b[1m" * (12_790 // 4) + " tok_SECRETSECRET"
    line = progress_line(3, None, message, lambda text: text.replace("tok_SECRETSECRET", "***"))
    assert "tok_" not in line and "SECRET" not in line


async def test_a_storm_of_change_notices_lists_at_most_once_a_second() -> None:
    now = [0.0]
    starts: list[float] = []

    async def sleep(seconds: float) -> None:
        now[0] += seconds
        await asyncio.sleep(0)

    async def relist() -> None:
        starts.append(now[0])
        await sleep(0.01)  # a listing takes a moment, while notices keep coming

    coalesced = Coalesced(relist, clock=lambda: now[0], sleep=sleep)
    await asyncio.gather(*(coalesced() for _ in range(100)))  # at once: one more after
    assert len(starts) == 2
    for _ in range(20):  # one after each listing ends: back to back, for good
        await coalesced()
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(starts) == 22 and all(gap >= MIN_RELIST_INTERVAL_S for gap in gaps)
