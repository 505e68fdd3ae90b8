"""The HTTP client of an MCP server over HTTP (streamable HTTP, SSE), telling a server that
cannot be reached from one that dropped the connection.

The SDK's transport turns every failure of a request into "Connection closed", so a call to a
server that is down read "stopped during this call ... may or may not have taken effect"
although the request never left, and a start failed with httpx's "All connection attempts
failed". :class:`ConnectWatch` sits under the SDK's client and records why the last
connection could not be opened (refused, no such host, timed out): when that is why the
transport closed, the request was not sent, and :mod:`.connection` says so in one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx2

#: the SDK's own defaults (mcp.shared._httpx_utils): a response stream may stay open long
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class ConnectWatch(httpx2.AsyncBaseTransport):
    """``inner`` (the usual HTTP transport), remembering why a connection could not be made."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner
        self.failed = ""  # why the last request could not connect; "" once one did

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            self.failed = _why(exc)
            raise
        self.failed = ""
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def watched_clients() -> tuple[Callable[..., httpx2.AsyncClient], ConnectWatch]:
    """A maker of HTTP clients as the SDK makes them (its ``httpx_client_factory``: headers,
    timeout, auth), all over one :class:`ConnectWatch`."""
    watch = ConnectWatch(httpx2.AsyncHTTPTransport())

    def make(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        kwargs: dict[str, Any] = {"timeout": timeout or _TIMEOUT, "transport": watch}
        if headers:
            kwargs["headers"] = headers
        if auth is not None:
            kwargs["auth"] = auth
        return httpx2.AsyncClient(**kwargs)

    return make, watch


def _why(exc: BaseException) -> str:
    """The reason in a few words: the operating system's, when the error carries one."""
    if isinstance(exc, httpx2.ConnectTimeout):
        return "the connection timed out"
    seen: BaseException | None = exc
    while seen is not None:
        causes = [seen, *getattr(seen, "exceptions", ())]
        for cause in causes:
            if isinstance(cause, OSError) and isinstance(cause.errno, int) and cause.errno > 0:
                return os.strerror(cause.errno).lower()  # "connection refused"
            if isinstance(cause, OSError) and cause.strerror:
                return str(cause.strerror).lower()  # a resolver's "name or service not known"
        seen = seen.__cause__ or seen.__context__
    return str(exc).strip()[:200] or type(exc).__name__
