"""A server whose tools change while it runs: the SDK's own server (``MCPServer``) adds and
removes a tool and says so with ``Context.notify_tools_changed``, over stdio and streamable
HTTP. At the 2026-07-28 protocol that word only reaches a client that opened a
``subscriptions/listen`` stream; the new list must be what the model is offered next."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsh.mcp.mcp_manager import McpManager
from agentsh.mcp.servers_config import Scope, ServerSpec, Transport
from tests.fakes import mcp_changing_server, mcp_legacy_server
from tests.fakes.mcp_server import HttpServer
from tests.mcp.conftest import call, make_manager

pytestmark = pytest.mark.asyncio

CHANGING = Path(mcp_changing_server.__file__)
LEGACY = Path(mcp_legacy_server.__file__)


@pytest.fixture
def http_changing() -> Iterator[HttpServer]:
    server = HttpServer(server=mcp_changing_server.build_server()).start()
    try:
        yield server
    finally:
        server.stop()


def _names(manager: McpManager) -> set[str]:
    return {tool.name for tool in manager.tools()}


async def _until(manager: McpManager, check: bool, name: str, within_s: float = 20) -> set[str]:
    """The tool names once ``name`` is among them (``check``) or not, or after ``within_s``."""
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    def listener() -> None:  # called on the MCP loop's thread
        loop.call_soon_threadsafe(changed.set)

    manager.subscribe(listener)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_s):
            while (name in _names(manager)) is not check:
                await changed.wait()
                changed.clear()
    return _names(manager)


async def _added_then_removed(manager: McpManager) -> None:
    manager.start()
    try:
        await manager.wait_until_started()
        assert "mcp__changing__secret" not in _names(manager)
        assert (await call(manager, "mcp__changing__unlock")).content == "unlocked"
        names = await _until(manager, True, "mcp__changing__secret")
        assert "mcp__changing__secret" in names, names
        said = await call(manager, "mcp__changing__secret", word="hi")
        assert not said.is_error and said.content == "secret says hi"
        assert (await call(manager, "mcp__changing__relock")).content == "locked"
        names = await _until(manager, False, "mcp__changing__secret")
        assert "mcp__changing__secret" not in names, names
    finally:
        manager.close()


async def test_a_tool_a_stdio_server_adds_and_removes_is_offered_and_withdrawn(
    tmp_path: Path,
) -> None:
    spec = ServerSpec(
        "changing",
        Transport.STDIO,
        Scope.USER,
        Path("test"),
        command=sys.executable,
        args=(str(CHANGING),),
    )
    await _added_then_removed(make_manager([spec], tmp_path))


async def test_a_tool_an_http_server_adds_and_removes_is_offered_and_withdrawn(
    tmp_path: Path, http_changing: HttpServer
) -> None:
    spec = ServerSpec("changing", Transport.HTTP, Scope.USER, Path("test"), url=http_changing.url)
    await _added_then_removed(make_manager([spec], tmp_path))


def _legacy(tmp_path: Path) -> tuple[ServerSpec, Path]:
    requests = tmp_path / "requests.txt"
    spec = ServerSpec(
        "legacy",
        Transport.STDIO,
        Scope.USER,
        Path("test"),
        command=sys.executable,
        args=(str(LEGACY), "--requests", str(requests)),
    )
    return spec, requests


async def test_a_pre_2026_servers_change_notice_is_followed(tmp_path: Path) -> None:
    spec, _requests = _legacy(tmp_path)
    manager = make_manager([spec], tmp_path)
    manager.start()
    try:
        await manager.wait_until_started()
        assert (await call(manager, "mcp__legacy__unlock")).content == "unlock done"
        names = await _until(manager, True, "mcp__legacy__secret")
        assert "mcp__legacy__secret" in names, names
    finally:
        manager.close()


async def test_a_flood_of_change_notices_is_not_a_flood_of_listings(tmp_path: Path) -> None:
    """A server that sends 500 notices at once is listed again a few times, not 500 times at
    once (each notice started its own listing)."""
    spec, requests = _legacy(tmp_path)
    manager = make_manager([spec], tmp_path)
    manager.start()
    try:
        await manager.wait_until_started()
        assert (await call(manager, "mcp__legacy__flood", count=500)).content == "flood done"
        await asyncio.sleep(2.0)  # the notices arrive and are acted on
        assert (await call(manager, "mcp__legacy__unlock")).content == "unlock done"
        assert "mcp__legacy__secret" in await _until(manager, True, "mcp__legacy__secret")
    finally:
        manager.close()
    listings = requests.read_text().splitlines().count("tools/list")
    assert listings <= 5, listings
