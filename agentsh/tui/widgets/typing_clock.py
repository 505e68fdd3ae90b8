"""When the user last typed into the editor (a key, or text the App put there for them).

The screen reads it to paint a key's echo at once (:mod:`agentsh.tui.echo_first`). A streamed
reply reads it to choose how long its frames rest and how much each takes
(:mod:`agentsh.tui.widgets.messages`): while the user types, the UI loop is left to their keys
for three times as long as a frame took, and a frame appends a bounded share; while nobody
types, the rest is short and a frame takes all that arrived, so the reply is painted as fast
as it comes even on a machine where one frame takes half a second. Sending a message ends the
typing (:func:`message_sent`). One clock per process: there is one screen.
"""

from __future__ import annotations

import time

TYPING_S = 1.0  # a key this recent means the user is typing

_last_key = float("-inf")


def key_typed() -> None:
    global _last_key
    _last_key = time.monotonic()


def message_sent() -> None:
    """The editor sent its message: the user now waits for the reply, they are not typing.
    (The Enter that sent it, and the keys before it, made the first second of every reply
    paint at a quarter of the UI loop: at load 10-18 that put it seconds behind its stream.)"""
    global _last_key
    _last_key = float("-inf")


def last_key() -> float:
    """When (``time.monotonic()``) a key was last typed into the editor; -inf if none was
    since the last message sent."""
    return _last_key


def typing() -> bool:
    """A key was typed into the editor within the last :data:`TYPING_S`."""
    return time.monotonic() - _last_key < TYPING_S
