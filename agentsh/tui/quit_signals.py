"""SIGTERM and SIGHUP end the TUI the way Ctrl+Q does, so the session log is finished first.

Python's default for both is to die on the spot: the terminal is left in raw mode on the
alternate screen, a reply being streamed is never logged (not even as aborted) and the log is
not fsynced (SPEC §2 wants it fsynced on exit). A terminal window closed under agentsh sends
SIGHUP, ``kill`` and service managers send SIGTERM. :class:`QuitSignals` routes both to a
callback on the App's event loop instead; the App runs its quit action (which cancels the turn,
waits for its partial reply to be logged, then exits and syncs and closes the session). A
second signal while that runs is not ignored: the previous handler is put back and the signal
raised again, so a stuck shutdown can still be killed.

SIGINT is left alone: in a raw terminal Ctrl+C is a key, not a signal, and Textual already turns
an outside SIGINT into an orderly exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

QUIT_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class QuitSignals:
    """Install (and later remove) handlers that call ``on_quit(signal)`` once, on the loop."""

    def __init__(self, on_quit: Callable[[signal.Signals], None]) -> None:
        self._on_quit = on_quit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[signal.Signals, Any] = {}
        self.received: signal.Signals | None = None

    def install(self) -> None:
        """Route the quit signals to ``on_quit`` (a no-op off the main thread or on Windows)."""
        loop = asyncio.get_running_loop()
        for sig in QUIT_SIGNALS:
            previous = signal.getsignal(sig)
            try:
                loop.add_signal_handler(sig, self._received, sig)
            except (ValueError, RuntimeError, NotImplementedError):
                continue  # not the main thread (a test's app), or no signals on this platform
            self._previous[sig] = previous
        self._loop = loop

    def remove(self) -> None:
        """Put back the handlers that were there before :meth:`install`."""
        loop, self._loop = self._loop, None
        previous, self._previous = self._previous, {}
        for sig, handler in previous.items():
            if loop is not None and not loop.is_closed():
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(sig)
            # asyncio resets a removed handler to SIG_DFL; restore what was there instead.
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def _received(self, sig: signal.Signals) -> None:
        if self.received is None:
            self.received = sig
            self._on_quit(sig)
            return
        # A second signal: the orderly quit is taking too long; let the signal do its default.
        self.remove()
        os.kill(os.getpid(), sig)
