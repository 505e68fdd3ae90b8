"""MCP test helpers: server specs for the real servers, and one shared manager.

Starting a server costs a second or two (a Python process importing the SDK), so the tests
that only list and call share one manager (:func:`shared_mcp`) with five servers: the fake
server over stdio, over streamable HTTP and over SSE (both in this process), and
``mcp-server-time`` and ``mcp-server-git`` from PyPI. Tests that crash, stop or time out a
server build their own. The shared ones live for one module, not the session: their threads
must not stay busy beside unrelated tests in the same worker (one counts the garbage
collector's frozen objects).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import McpSettings
from agentsh.mcp.mcp_manager import McpManager
from agentsh.mcp.servers_config import Scope, ServerSpec, Transport
from agentsh.mcp.state import RemoteTool, ServerStatus
from agentsh.tools.base import ToolResult
from tests.agent.conftest import fast_retries, run_agentsh, run_agentsh_process  # noqa: F401
from tests.fakes.mcp_server import HttpServer

FAKE_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"


def fake_spec(name: str = "fake", *extra: str, **fields: Any) -> ServerSpec:
    """The fake server over stdio (run as a script: the SDK passes no PYTHONPATH)."""
    return ServerSpec(
        name,
        Transport.STDIO,
        Scope.USER,
        Path("test"),
        command=sys.executable,
        args=(str(FAKE_SERVER), *extra),
        **fields,
    )


def module_spec(name: str, module: str, *args: str) -> ServerSpec:
    return ServerSpec(
        name,
        Transport.STDIO,
        Scope.USER,
        Path("test"),
        command=sys.executable,
        args=("-m", module, *args),
    )


#: How long a test's MCP server gets to start (agentsh's default, 10 s, is short on a loaded
#: 2-core machine: the SDK's import alone is 1-2 s of CPU).
STARTUP_TIMEOUT_S = 60.0


def make_manager(specs: list[ServerSpec], tmp: Path, **settings: Any) -> McpManager:
    """A manager for ``specs``; servers get 60 s to start unless a test says otherwise (the
    10 s default is a user's figure: a Python server's start took longer at load 20)."""
    settings.setdefault("startup_timeout_s", STARTUP_TIMEOUT_S)
    return McpManager(
        specs,
        McpSettings(**settings),
        cwd=tmp,
        log_dir=tmp / "mcp-logs",
        spool_dir=tmp / "spool",
    )


def git_repo(folder: Path, message: str = "first commit here") -> Path:
    """A repository with one commit (what mcp-server-git's tools are tried on)."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "a.txt").write_text("a\n")
    for command in (["add", "a.txt"], ["commit", "-q", "-m", message]):
        subprocess.run(
            ["git", "-C", str(folder), "-c", "user.name=T", "-c", "user.email=t@e", *command],
            check=True,
        )
    return folder


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, reaped or not, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pids_in(folder: Path) -> list[int]:
    return [int(p.name.rsplit("-", 1)[1]) for p in folder.glob("*-*")] if folder.exists() else []


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds (an empty list: all gone)."""
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [pid for pid in left if alive(pid)]
    return left


@pytest.fixture(scope="module")
def http_fake() -> Iterator[HttpServer]:
    server = HttpServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sse_fake() -> Iterator[HttpServer]:
    server = HttpServer(sse=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_mcp(
    tmp_path_factory: pytest.TempPathFactory, http_fake: HttpServer, sse_fake: HttpServer
) -> Iterator[McpManager]:
    """Five servers, started once for every test that only lists and calls."""
    tmp = tmp_path_factory.mktemp("shared-mcp")
    specs = [
        fake_spec("fake"),
        ServerSpec(
            "web",
            Transport.HTTP,
            Scope.USER,
            Path("test"),
            url=http_fake.url,
            headers=(("Authorization", "Bearer test-token-0123456789"),),
        ),
        ServerSpec("events", Transport.SSE, Scope.USER, Path("test"), url=sse_fake.url),
        module_spec("time", "mcp_server_time", "--local-timezone", "UTC"),
        module_spec("git", "mcp_server_git"),
    ]
    # The minute every test server gets (STARTUP_TIMEOUT_S): five servers start at once, and 30 s
    # ran out for all of them on a loaded machine (load 17, four workers).
    # Calls get 8 s: 2 s ran out for an ordinary echo while other tests loaded the machine.
    manager = make_manager(specs, tmp, call_timeout_s=8.0)
    manager.start()
    manager.wait_until_started_sync(120)
    try:
        yield manager
    finally:
        manager.close()


async def call(manager: McpManager, name: str, **arguments: Any) -> Any:
    tool = manager.find(name)
    assert tool is not None, f"{name} not among {[t.name for t in manager.tools()]}"
    return await manager.call(tool, arguments, asyncio.Event())


class ListedTools:
    """A tool provider that only lists ``tools`` (no server, nothing is ever called): enough
    to build MCP tools (approval tests) or count their definitions (budget tests)."""

    def __init__(self, tools: tuple[RemoteTool, ...] = ()) -> None:
        self._tools = tools

    def tools(self) -> tuple[RemoteTool, ...]:
        return self._tools

    def find(self, name: str) -> RemoteTool | None:
        return next((t for t in self._tools if t.name == name), None)

    def spec(self, server: str) -> ServerSpec | None:
        return None

    def statuses(self) -> tuple[ServerStatus, ...]:
        return ()

    async def call(
        self,
        tool: RemoteTool,
        arguments: Mapping[str, Any],
        cancelled: asyncio.Event,
        on_progress: Any = None,
    ) -> ToolResult:
        raise AssertionError("not called")
