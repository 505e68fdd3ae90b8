"""How a front end's process ends without waiting for threads that never come back.

A worker thread may be blocked for good in a system call (a tool reading a FIFO or a hung
network mount, a library's socket read). ``asyncio.run`` waits for the default executor's
threads when its loop closes, and the interpreter waits for them again at exit: ``agentsh -p``
and ``agentsh acp`` never ended, whatever signal they got. :func:`run_loop` is
``asyncio.run`` without that wait, and :func:`leave` ends the process without the
interpreter's (its exit handlers still run). Standard library only: every front end uses it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")


def run_loop(
    main: Coroutine[Any, Any, T], *, wait_for_threads: Callable[[], bool] = lambda: False
) -> T:
    """``asyncio.run(main)`` except that the loop's default executor is shut down without
    waiting for its threads (one blocked in a system call would hold the process forever),
    unless ``wait_for_threads()`` says so at the end: a run that ended by itself, not by a
    signal, lets a thread it started finish first, as ``asyncio.run`` does (a ``-p`` run
    inside the tests' process left one working beside the next run)."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix="agentsh-worker")
    loop.set_default_executor(executor)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            executor.shutdown(wait=wait_for_threads(), cancel_futures=True)
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks still pending and let them unwind (as ``asyncio.run`` does)."""
    pending = asyncio.all_tasks(loop)
    if not pending:
        return
    for task in pending:
        task.cancel()
    gathered: Awaitable[Any] = asyncio.gather(*pending, return_exceptions=True)
    loop.run_until_complete(gathered)


def stuck_threads() -> list[threading.Thread]:
    """Threads the interpreter would wait for at exit (not daemons), other than this one."""
    me = threading.current_thread()
    return [t for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]


def leave(code: int) -> NoReturn:
    """End the process now: streams flushed and the exit handlers run (they end the model
    worker and the MCP servers, each bounded), without the interpreter's wait for threads and
    its teardown (as ``agentsh.tui.launch.leave`` does after the TUI)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
