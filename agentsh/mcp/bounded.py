"""Work on the MCP loop that gives up on time, whatever the SDK underneath is waiting for.

The SDK's own request timeout starts once the request is written, and abandoning a request
writes a courtesy ``notifications/cancelled`` first (up to 5 s each). Over SSE every message
is one POST, sent one after the other: a server that accepts connections and never answers
(half-open) holds the first POST, and every later write (the cancel, the next call) waits
behind it. A call to such a server took its timeout plus 5 s, the next one plus 10 s.
:func:`within` runs the work as a task of the server's task group and stops waiting for it at
the limit: the work is cancelled there and unwinds (the SDK's courtesy cancel included) in the
background, while the caller has its answer at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.abc

T = TypeVar("T")


async def within(
    task_group: anyio.abc.TaskGroup, work: Callable[[], Awaitable[T]], limit_s: float
) -> T:
    """``await work()``, or ``TimeoutError`` after ``limit_s`` seconds. Past the limit, or
    when the caller is cancelled (Esc), the work is cancelled and left to end in
    ``task_group``; the caller does not wait for it."""
    finished = anyio.Event()
    scope = anyio.CancelScope()
    results: list[Any] = []
    errors: list[Exception] = []

    async def run() -> None:
        try:
            with scope:
                results.append(await work())
        except Exception as exc:  # noqa: BLE001 - handed to the caller as it is
            errors.append(exc)
        finally:
            finished.set()

    task_group.start_soon(run)
    try:
        with anyio.move_on_after(limit_s):
            await finished.wait()
    finally:
        if not finished.is_set():
            scope.cancel()
    if errors:
        raise errors[0]
    if not results and not scope.cancel_called:  # cancelled from outside: the server stops
        raise anyio.ClosedResourceError
    if not results:
        raise TimeoutError(f"no answer within {limit_s:g} s")
    value: T = results[0]
    return value
