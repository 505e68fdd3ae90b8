"""Keys in flight are not answers: a question that appears while the user types ignores them.

The trust question, the file-restore question and the branch-summary question are answered
by single letters (``y``, ``n``) and Enter. Typed ahead, a sentence such as "say hi to you"
answered the first with its ``y``. :class:`KeyGrace` says whether a key came too early:
before the typing paused for ``grace_s`` after the question appeared (each early key moves
the pause on, so a sentence typed in one go is never taken for an answer, however long it
is). The clock is :data:`clock` and the pause :data:`GRACE_S`, which tests replace.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: the clock every grace reads (a test sets a stopped one)
clock: Callable[[], float] = time.monotonic

GRACE_S = 0.5


class KeyGrace:
    def __init__(self, grace_s: float | None = None) -> None:
        self.grace_s = GRACE_S if grace_s is None else grace_s
        self._quiet_from = clock()

    def start(self) -> None:
        """The question is on screen: the grace runs from now."""
        self._quiet_from = clock()

    def early(self) -> bool:
        """True for a key that is not an answer (and the grace then runs from it)."""
        now = clock()
        if now - self._quiet_from < self.grace_s:
            self._quiet_from = now
            return True
        return False


def keep_typed(typed: list[str], key: str, character: str | None) -> None:
    """What a key typed ahead adds to the text kept for the editor: a printable character;
    Backspace takes the last one off; any other key (Enter, Esc, arrows) nothing."""
    if key == "backspace":
        if typed:
            typed.pop()
    elif character and character.isprintable():
        typed.append(character)
