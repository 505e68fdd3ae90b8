"""The one background event loop every MCP server of this process runs on.

MCP connections live on their own thread and loop, not on the front end's: the SDK's import
(seconds) and every server's start-up then never touch the UI loop, the connections outlive
whichever loop asked for a call (the TUI's, ``-p``'s ``asyncio.run``, an ACP server's), and
plain synchronous code (``agentsh mcp test``, the exit hook) can drive them too. Callers hand
coroutines over with :func:`submit` and await the answer with :func:`wait_in`, which carries a
cancel across (an Esc cancels the call on the MCP loop, and the SDK tells the server).

At interpreter exit every registered closer runs on this loop (each server's process group is
stopped by the SDK: stdin closed, then SIGTERM, then SIGKILL) before the thread goes.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agentsh.mcp import groups

T = TypeVar("T")

EXIT_TIMEOUT_S = 8.0

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_closers: list[Callable[[], Coroutine[Any, Any, None]]] = []


def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    try:
        loop.run_forever()
    finally:
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def background_loop() -> asyncio.AbstractEventLoop:
    """The MCP loop, started on first use (a daemon thread named ``agentsh-mcp``)."""
    global _loop, _thread
    with _lock:
        if _loop is not None and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        thread = threading.Thread(target=_run, args=(loop, ready), name="agentsh-mcp", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread = loop, thread
        return loop


def on_mcp_loop() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coro`` on the MCP loop; the future's cancel cancels it there."""
    return asyncio.run_coroutine_threadsafe(coro, background_loop())


async def wait_in(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the MCP loop, from any other loop; cancelling this cancels it."""
    return await asyncio.wrap_future(submit(coro))


def register_closer(closer: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``closer()`` runs on the MCP loop when the process exits (if it was not run before)."""
    with _lock:
        _closers.append(closer)


def unregister_closer(closer: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with _lock, contextlib.suppress(ValueError):
        _closers.remove(closer)


async def _close_all(closers: list[Callable[[], Coroutine[Any, Any, None]]]) -> None:
    await asyncio.gather(*(closer() for closer in closers), return_exceptions=True)


def shutdown(timeout: float = EXIT_TIMEOUT_S) -> None:
    """Run every registered closer (servers stopped, process groups killed), stop the loop."""
    global _loop, _thread
    with _lock:
        loop, thread = _loop, _thread
        closers = list(_closers)
        _closers.clear()
        _loop = _thread = None
    if loop is not None and thread is not None and thread.is_alive():
        if closers:
            future = asyncio.run_coroutine_threadsafe(_close_all(closers), loop)
            with contextlib.suppress(Exception):
                future.result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2.0)
    groups.kill_all_now()  # whatever a stuck shutdown left


atexit.register(shutdown)
