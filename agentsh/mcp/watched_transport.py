"""A transport whose read stream reports its end: how a server's crash is seen while it is idle.

:class:`~agentsh.mcp.connection.ServerConnection` wraps the SDK's transport in
:class:`WatchedTransport`; when the read stream ends (the server exited, the connection
dropped) between calls, ``on_end`` runs at once instead of at the next call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio


class WatchedTransport:
    """The SDK transport ``inner``, its read stream wrapped in :class:`WatchedRead`."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return WatchedRead(read, self._on_end), write

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result


class WatchedRead:
    """A read stream that calls ``on_end`` when it ends (end of stream or closed)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._ended_on(self._inner.receive())

    async def _ended_on(self, step: Awaitable[Any]) -> Any:
        try:
            return await step
        except (StopAsyncIteration, anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> WatchedRead:
        return self

    async def __anext__(self) -> Any:
        return await self._ended_on(self._inner.__anext__())

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result
