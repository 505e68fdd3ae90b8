"""How ``agentsh -p`` ends on Ctrl+C, SIGTERM and SIGHUP, even with a thread stuck in a syscall.

The first signal stops the turn the way Esc does in the TUI (:meth:`Stopping.on_signal`): a
running command is stopped and its output kept, and the result is still written. A second
signal, a first one with no turn running, or a turn that has not ended :data:`GRACE_S` after
the first, ends the run outright: the main task is cancelled and the result of the turn it
stopped written as interrupted (``Output.abort``).

Either way a worker thread may be blocked for good in a system call (a tool reading a FIFO or
a hung network mount, a library's socket read): the loop is run by
:func:`agentsh.process_end.run_loop`, which does not wait for such threads; once the run was
ended outright, :func:`~agentsh.process_end.leave` skips the interpreter's wait for them; and a
backstop
(:data:`BACKSTOP_S` after it) writes the result if nobody has and ends the process from a
thread of its own, should the main thread be stuck itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from agentsh.errors import EXIT_INTERRUPTED
from agentsh.process_end import leave, stuck_threads

#: how long a stopped turn may take to end by itself before the run is ended outright
GRACE_S = 3.0
#: how long the run ended outright may take to write its result and close, before the process
#: ends without it
BACKSTOP_S = 3.0
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Busy(Protocol):
    @property
    def busy(self) -> bool: ...

    def cancel(self) -> None: ...


class Stopping:
    """The signals of one run: :meth:`install` in the loop, :meth:`done` when it is over."""

    def __init__(
        self,
        agent: _Busy,
        interrupt: Callable[[], None] | None = None,
        *,
        abort: Callable[[], None] = lambda: None,
    ) -> None:
        self.agent = agent
        self.interrupt = interrupt or agent.cancel
        self.abort = abort  # writes the interrupted turn's result, once, from any thread
        self.signals = 0
        self.forced = False
        self._main: asyncio.Task[Any] | None = None
        self._escalation: asyncio.TimerHandle | None = None
        self._backstop: threading.Timer | None = None
        self._raw = 0  # signals received (counted in the handler itself)
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        """Take SIGINT, SIGTERM and SIGHUP (the main thread only; elsewhere nothing is done).

        Plain signal handlers rather than the loop's: Python runs them even while the main
        thread is blocked in a system call, so a second signal arms the backstop although the
        loop cannot run its callbacks. The loop does the rest (:meth:`on_signal`)."""
        loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        if threading.current_thread() is not threading.main_thread():
            return

        def handler(_signum: int, _frame: object) -> None:
            self._raw += 1
            if self._raw > 1:
                self._arm_backstop()
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
                loop.call_soon_threadsafe(self.on_signal)

        for signum in SIGNALS:
            with contextlib.suppress(OSError, ValueError):
                self._previous[signum] = signal.signal(signum, handler)

    @property
    def signalled(self) -> bool:
        """A signal came (even one whose handling the loop never got to run)."""
        return self._raw > 0 or self.signals > 0

    def on_signal(self) -> None:
        self.signals += 1
        if self.signals == 1 and self.agent.busy:
            self.interrupt()
            loop = asyncio.get_running_loop()
            self._escalation = loop.call_later(GRACE_S, self.force)
        else:
            self.force()

    def force(self) -> None:
        """End the run now: cancel the main task, and arm the backstop."""
        if self.forced:
            return
        self.forced = True
        if self._main is not None:
            self._main.cancel()
        self._arm_backstop()

    def _arm_backstop(self) -> None:
        if self._backstop is None:
            self._backstop = threading.Timer(BACKSTOP_S, self._end_process)
            self._backstop.daemon = True
            self._backstop.name = "agentsh-exit-backstop"
            self._backstop.start()

    def done(self) -> None:
        """The run is over (its result written, the agent closed): no escalation any more.
        After an outright end, threads that never returned are not waited for."""
        if self._escalation is not None:
            self._escalation.cancel()
        if self._backstop is not None:
            self._backstop.cancel()
        for signum, previous in self._previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(signum, previous)
        self._previous = {}
        if self.forced and stuck_threads():
            leave(EXIT_INTERRUPTED)

    def _end_process(self) -> None:
        """The main thread did not finish within the backstop's time: it is stuck itself."""
        with contextlib.suppress(Exception):
            print("agentsh: interrupted (the run did not end by itself)", file=sys.stderr)
            self.abort()
        leave(EXIT_INTERRUPTED)
