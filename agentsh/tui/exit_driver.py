"""Textual's Linux driver, without the 0.1-0.2 s every quit spent waiting for its input thread.

Textual's input thread polls the terminal with ``select(0.1)``; to stop it the driver sets a
flag and joins the thread, which notices the flag at its next poll and then polls once more
for what is left (up to 0.2 s: a third of a quit, a bare Textual app's too). When the App is
exiting, :class:`ExitDriver` sets the flag, discards what was typed and not read (as Textual
does after the join) and goes on without waiting: agentsh ends its process with ``os._exit``
right after (:func:`agentsh.tui.launch.leave`), which ends the thread too. Whatever the thread
reads meanwhile is posted to an App that is closing, which drops it.

When the App is not exiting (suspended, so that another program can have the terminal) the
thread is joined as before: it must not read what is typed into that program.
"""

from __future__ import annotations

import signal
import termios

from textual.drivers.linux_driver import LinuxDriver


class ExitDriver(LinuxDriver):
    def disable_input(self) -> None:
        if not getattr(self._app, "_exit", False) or self.exit_event.is_set():
            super().disable_input()
            return
        # Textual's steps, but the join (and the flag's reset, which would restart the thread).
        try:
            signal.signal(signal.SIGWINCH, signal.SIG_DFL)
            self._disable_mouse_support()
            self.exit_event.set()
            termios.tcflush(self.fileno, termios.TCIFLUSH)
        except (OSError, ValueError, termios.error):
            pass
