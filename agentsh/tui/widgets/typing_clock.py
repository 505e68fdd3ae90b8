"""When the user last typed into the editor (a key, or text the App put there for them).

The screen reads it to paint a key's echo at once (:mod:`agentsh.tui.echo_first`). A streamed
reply reads it, and the user's pace (:func:`key_gap`), to choose when its frames start and
how much each takes (:mod:`agentsh.tui.widgets.messages`): while the user types, a frame
starts in a pause between keys it fits in, or once the UI loop was left to their keys for
three times as long as the last frame took, and a frame appends a bounded share; while nobody
types, the rest is short and a frame takes all that arrived, so the reply is painted as fast
as it comes even on a machine where one frame takes half a second. Sending a message ends the
typing (:func:`message_sent`). One clock per process: there is one screen.
"""

from __future__ import annotations

import time
from collections import deque

TYPING_S = 1.0  # a key this recent means the user is typing
GAPS_KEPT = 8  # the pace is the median of this many gaps between keys

_last_key = float("-inf")
_last_pressed = float("-inf")  # the last key itself (not the text it changed)
_gaps: deque[float] = deque(maxlen=GAPS_KEPT)  # seconds between keys, while typing


def key_typed() -> None:
    """A key was typed into the editor: the clock, and the user's pace."""
    global _last_key, _last_pressed
    now = time.monotonic()
    if now - _last_pressed < TYPING_S:
        _gaps.append(now - _last_pressed)
    _last_key = _last_pressed = now


def text_typed() -> None:
    """The editor's text changed: after a key (a few milliseconds after it), or the App
    typed it in for the user. The clock, not the pace."""
    global _last_key
    _last_key = time.monotonic()


def message_sent() -> None:
    """The editor sent its message: the user now waits for the reply, they are not typing.
    (The Enter that sent it, and the keys before it, made the first second of every reply
    paint at a quarter of the UI loop: at load 10-18 that put it seconds behind its stream.)"""
    global _last_key, _last_pressed
    _last_key = _last_pressed = float("-inf")
    _gaps.clear()


def key_gap() -> float:
    """The user's pace: the median seconds between two of their last keys (0 until two
    keys were typed in a row)."""
    if not _gaps:
        return 0.0
    ordered = sorted(_gaps)  # (statistics.median: an import of its own before the first paint)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def last_key() -> float:
    """When (``time.monotonic()``) a key was last typed into the editor; -inf if none was
    since the last message sent."""
    return _last_key


def typing() -> bool:
    """A key was typed into the editor within the last :data:`TYPING_S`."""
    return time.monotonic() - _last_key < TYPING_S
