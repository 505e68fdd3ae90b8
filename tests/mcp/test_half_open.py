"""An HTTP or SSE MCP server that goes half-open (accepts, reads, never answers) mid-session.

Over SSE every message is a POST sent after the one before: the call's POST hung, and the
SDK's courtesy cancel and every later call waited behind it, so a call with a 2 s timeout took
7 s, the next 12 s, and the server stayed "ready" for the five minutes of the POST's read
timeout. A call now ends at its timeout whatever the transport waits for, Esc at once, and a
server that does not answer a request after a timed-out call is dropped and connected again at
the next call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsh.mcp import connection
from agentsh.mcp.servers_config import Scope, ServerSpec, Transport
from agentsh.mcp.state import ServerState
from tests.fakes.half_open import HalfOpenProxy
from tests.fakes.mcp_server import HttpServer, build_server
from tests.mcp.conftest import make_manager

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=["sse", "http", "http-cached"])
def proxied(request: pytest.FixtureRequest) -> Iterator[tuple[HalfOpenProxy, ServerSpec]]:
    """The fake server behind a proxy that can go half-open; "http-cached" lets clients cache
    its tool list for a minute (the probe after a timed-out call was answered from that
    cache, so a dead connection was kept)."""
    sse = request.param == "sse"
    ttl_ms = 60_000 if request.param == "http-cached" else 0
    server = HttpServer(sse=sse, server=build_server(tools_ttl_ms=ttl_ms)).start()
    proxy = HalfOpenProxy(server.port).start()
    url = f"http://127.0.0.1:{proxy.port}/{'sse' if sse else 'mcp'}"
    transport = Transport.SSE if sse else Transport.HTTP
    try:
        yield proxy, ServerSpec("web", transport, Scope.USER, Path("test"), url=url)
    finally:
        proxy.stop()
        server.stop()


async def test_a_half_open_server_costs_a_call_its_timeout_and_is_connected_again(
    proxied: tuple[HalfOpenProxy, ServerSpec], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Long enough for the calls below to meet the half-open connection, not a dropped one.
    monkeypatch.setattr(connection, "PROBE_S", 6.0)
    proxy, spec = proxied
    manager = make_manager([spec], tmp_path, call_timeout_s=2.0)
    manager.start()
    try:
        await asyncio.to_thread(manager.wait_until_started_sync, 120)
        tool = manager.find("mcp__web__echo")
        assert tool is not None, manager.statuses()
        assert (await manager.call(tool, {"text": "up"}, asyncio.Event())).content == "up"

        proxy.frozen = True
        for _ in range(2):  # the second call's write waited behind the first one's POST
            started = time.monotonic()
            result = await manager.call(tool, {"text": "lost"}, asyncio.Event())
            took = time.monotonic() - started
            assert result.is_error and "timed out after 2 s" in result.content
            assert took < 3.5, took  # the 2 s timeout (it was 7 s, then 12 s over SSE)

        esc = asyncio.Event()
        asyncio.get_running_loop().call_later(0.3, esc.set)
        started = time.monotonic()
        result = await manager.call(tool, {"text": "lost"}, esc)
        assert time.monotonic() - started < 1.5
        assert result.content.startswith("Cancelled by the user")

        # The request after the timed-out call got no answer: the connection is dropped.
        deadline = time.monotonic() + 20
        while (status := manager.status("web")) is not None and status.state is ServerState.READY:
            assert time.monotonic() < deadline, "the dead connection was kept"
            await asyncio.sleep(0.1)
        assert status is not None and "stopped answering" in status.reason

        proxy.frozen = False  # the server answers again: the next call connects anew
        started = time.monotonic()
        result = await manager.call(tool, {"text": "back"}, asyncio.Event())
        assert result.content == "back", result.content
        assert time.monotonic() - started < 30
    finally:
        await asyncio.to_thread(manager.close)
