"""A server's word that its tools changed, followed so the tools the model is offered stay true.

How a server says it depends on the protocol version the connection agreed on. Before
2026-07-28 it sends ``notifications/tools/list_changed`` whenever it likes, and the SDK hands
that to the client's ``message_handler`` (:func:`is_tools_changed`). From 2026-07-28 on, a
server sends change notices only on a ``subscriptions/listen`` stream the client opened
(SEP-2575): without one, a tool the server added stayed unknown to agentsh ("Unknown tool")
and a removed one was still offered. :func:`follow` opens that stream, when the server says
its tool list can change, and calls ``relist`` at each notice, until it is cancelled (the
connection's end) or the server closes the stream.

Runs on the MCP loop, inside the connection's task (:mod:`agentsh.mcp.connection`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger(__name__)

TOOLS_CHANGED = "notifications/tools/list_changed"


def is_tools_changed(message: Any) -> bool:
    """Whether a message the SDK's ``message_handler`` got is a (pre-2026) tools-changed notice."""
    return getattr(message, "method", "") == TOOLS_CHANGED


def announces_changes(client: Client) -> bool:
    """Whether the server said (``tools.listChanged``) that its tool list may change."""
    try:
        tools = client.server_capabilities.tools
    except RuntimeError:  # not connected (the SDK's guard)
        return False
    return bool(tools is not None and tools.list_changed)


async def follow(client: Client, relist: Callable[[], Awaitable[None]], name: str) -> None:
    """Listen for tool changes on a 2026-07-28 connection and ``relist`` at each one; returns
    at once on an older connection (its notices reach the ``message_handler``) or when the
    server does not announce changes. A stream that fails or is refused is logged and left:
    the tools stay as listed, as they were before streams were followed."""
    if not announces_changes(client):
        return
    from mcp.client.subscriptions import ListenNotSupportedError, ToolsListChanged

    try:
        async with client.listen(tools_list_changed=True) as subscription:
            if not subscription.honored.tools_list_changed:
                return
            async for event in subscription:
                if isinstance(event, ToolsListChanged):
                    await relist()
    except ListenNotSupportedError:
        return
    except Exception as exc:  # noqa: BLE001 - the SDK and transports raise anything
        log.info("MCP server %s: tool changes are not followed: %s", name, exc)


#: the shortest time between the starts of two listings a server's notices cause
MIN_RELIST_INTERVAL_S = 1.0


class Coalesced:
    """``fn`` run for any number of calls that come while it runs (or waits), but once more
    after it, not once each, and never sooner than :data:`MIN_RELIST_INTERVAL_S` after its
    last start: a server may send a notice hundreds of times at once (each was a listing of
    its own, all at the same time), or one after each listing ends (a listing back to back,
    for good). ``clock`` and ``sleep``: for tests."""

    def __init__(
        self,
        fn: Callable[[], Awaitable[None]],
        *,
        interval: float = MIN_RELIST_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._fn = fn
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._last: float | None = None
        self._running = False
        self._again = False

    async def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        try:
            self._again = True
            while self._again:
                if self._last is not None:
                    wait = self._last + self._interval - self._clock()
                    if wait > 0:
                        await self._sleep(wait)  # notices meanwhile join this listing
                self._again = False
                self._last = self._clock()
                await self._fn()
        finally:
            self._running = False
