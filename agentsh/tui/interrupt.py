"""Ctrl+C as terminal tools have it (Claude Code, Pi, a shell): it cancels the running turn,
else clears the editor, else asks for a second press and quits on it.

Text selected with the mouse or in the editor is copied instead, as in any Textual app. The
App binds the key and walks those steps; this module holds the one piece of state, the
"pressed once, press again to quit" window (:class:`DoublePress`, which Esc Esc's window on an
empty editor uses too).
"""

from __future__ import annotations

import time
from collections.abc import Callable

QUIT_WINDOW_S = 2.0  # a second Ctrl+C within this many seconds quits
QUIT_HINT = "Ctrl+C again to quit"


class DoublePress:
    """Remembers a first press for ``window_s``; the second press inside it counts. ``clock``
    is public so a test can hold the time still (two Pilot presses are not a person's)."""

    def __init__(
        self, window_s: float = QUIT_WINDOW_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self.clock = clock
        self._first: float | None = None

    def press(self) -> bool:
        """True when this press completes a double press (and the window starts over)."""
        now = self.clock()
        if self._first is not None and now - self._first <= self.window_s:
            self._first = None
            return True
        self._first = now
        return False

    def reset(self) -> None:
        """Anything else Ctrl+C did (cancel, clear) ends the window: quitting needs two
        presses that did nothing else."""
        self._first = None
