"""A server's progress notices during a call, as lines of the call's live output.

A server may say how far a call has got (``notifications/progress``: a count, perhaps a total
and a message) as often as it likes. agentsh shows them as it shows a command's output (the
TUI's tool block, the editor's tool call), never to the model, which gets the result alone.
The message is the server's text, so it is cleaned of escape sequences and control
characters, scrubbed of the server's secrets and cut to one short line; and notices that come
faster than :data:`MIN_INTERVAL_S` are dropped (the last one before the result is not
waited for: the result follows at once), so a server cannot make every notice a redraw.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from agentsh.mcp.results import clean_text

#: the shortest time between two lines shown
MIN_INTERVAL_S = 0.2
#: the longest line shown (the server's message is cut to fit)
MAX_LINE_CHARS = 200
_READ_CHARS = 64 * MAX_LINE_CHARS  # of a message, before escapes and spaces are taken out
# What reorders text on screen (the bidirectional embeddings, overrides, isolates and marks):
# a server's "done" could be shown as something else.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def progress_line(
    progress: float,
    total: float | None,
    message: str | None,
    scrub: Callable[[str], str] = str,
) -> str:
    """One notice as one line: ``[2/5] copying files`` (or ``[40%]``, ``[2]``). Of the
    message only its first :data:`_READ_CHARS` characters are read (a server's megabytes are
    not cleaned 5 times a second); they are cleaned of escape sequences, control characters
    and bidirectional overrides and ``scrub``-bed (before and after: an escape inside a
    secret would hide it) before the line is cut to length, so the cut never leaves half an
    escape or a secret the cut went through."""
    if total is not None and total > 0 and progress <= total and total == int(total):
        where = f"{_number(progress)}/{_number(total)}"
    elif total is not None and total > 0:
        where = f"{min(100.0, 100.0 * progress / total):.0f}%"
    else:
        where = _number(progress)
    raw = (message or "")[:_READ_CHARS]
    words = _BIDI.sub("", clean_text(scrub(raw))).split()
    if message is not None and len(message) > _READ_CHARS:
        words = words[:-1]  # what the read cut through (a secret's first half) is not shown
    text = scrub(" ".join(words))
    line = f"[{where}] {text}".rstrip()
    return line[: MAX_LINE_CHARS - 1] + "…" if len(line) > MAX_LINE_CHARS else line


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


class ProgressLines:
    """Turns a call's notices into lines for ``show`` (at most one per :data:`MIN_INTERVAL_S`),
    scrubbed by ``scrub`` (the server's expanded secrets)."""

    def __init__(
        self,
        show: Callable[[str], None],
        scrub: Callable[[str], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._show = show
        self._scrub = scrub
        self._clock = clock
        self._last = -MIN_INTERVAL_S

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback (``ProgressFnT``)."""
        now = self._clock()
        if now - self._last < MIN_INTERVAL_S:
            return
        self._last = now
        try:
            number = None if total is None else float(total)
            line = progress_line(float(progress), number, message, self._scrub)
        except (TypeError, ValueError, OverflowError):  # a server's odd numbers: no line
            return
        self._show(line + "\n")
