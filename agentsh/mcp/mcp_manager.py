"""All MCP servers of one agent, driven from any thread or event loop.

:class:`McpManager` is the one object the rest of agentsh holds. Its servers run on the MCP
loop (:mod:`agentsh.mcp.loop`), each a :class:`~agentsh.mcp.connection.ServerConnection`; what
other threads read are immutable snapshots (server statuses, the tools with their final
names) swapped in whole whenever something changes, so reading never locks or waits.
Building a manager costs nothing: the ``mcp`` SDK is imported on the MCP thread when
:meth:`start` is called, and never when no server is configured.

Problems worth telling the user (a server that did not start, one that stopped) are queued as
notices for the front end to show; :meth:`subscribe` lets a front end redraw on each change.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentsh.config import Environment, McpSettings
from agentsh.mcp import cache, groups
from agentsh.mcp import loop as mcp_loop
from agentsh.mcp.names import assign_names, server_parts, server_prefix
from agentsh.mcp.results import Caps, guarded, to_tool_result
from agentsh.mcp.server_trust import told_by_trust_check
from agentsh.mcp.servers_config import ExpansionError, McpConfig, ServerSpec, load_mcp_config
from agentsh.mcp.state import RemoteTool, ServerState, ServerStatus
from agentsh.tools.base import ToolResult

#: at exit, how long a server may take to leave after its stdin closed before it is signalled
QUIT_GRACE_S = 0.3
KILL_GRACE_S = 0.3  # then from SIGTERM to SIGKILL of the groups still running

_CANCEL_GRACE_S = 2.0


class McpManager:
    def __init__(
        self,
        specs: Sequence[ServerSpec],
        settings: McpSettings,
        *,
        cwd: Path,
        log_dir: Path,
        spool_dir: Path,
        cache_path: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._cache_path = cache_path  # where ready servers' tool lists are kept (None: nowhere)
        self.cwd = cwd
        self._specs = {spec.name: spec for spec in specs}
        self._parts = server_parts(self._specs)  # each server's part of its tools' names
        self._log_dir = log_dir
        self._caps = Caps(settings.result_max_bytes, settings.result_max_lines, spool_dir)
        self._environ = environ
        self._lock = threading.Lock()
        self._notices: list[str] = []
        self._listeners: list[Callable[[], None]] = []
        self._statuses: tuple[ServerStatus, ...] = tuple(
            _initial_status(spec) for spec in self._specs.values()
        )
        self._tools: tuple[RemoteTool, ...] = ()
        self._by_name: dict[str, RemoteTool] = {}
        self._previous: dict[str, ServerState] = {}
        self._previous_tools: dict[str, tuple[RemoteTool, ...]] = {}
        self._secrets = _secrets_of(specs, environ)
        self._started = False
        self._closed = False
        self._main: Any = None  # concurrent.futures.Future of _run, once started
        # Loop-side state, created on the MCP loop by _run.
        self._conns: dict[str, Any] = {}
        self._task_group: Any = None
        self._up: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    # -- snapshots (any thread) -----------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def statuses(self) -> tuple[ServerStatus, ...]:
        return self._statuses

    def status(self, name: str) -> ServerStatus | None:
        return next((s for s in self._statuses if s.name == name), None)

    def tools(self) -> tuple[RemoteTool, ...]:
        """Every tool the model may call now, in name order."""
        return self._tools

    def find(self, name: str) -> RemoteTool | None:
        return self._by_name.get(name)

    def spec(self, server: str) -> ServerSpec | None:
        return self._specs.get(server)

    def missing_tool(self, name: str) -> str:
        """Why the model cannot call ``name``, a tool name of a server that is not up ("" when
        no such server is down: the name is simply unknown). A server that failed to start
        has no tools listed, so without this the model heard only "unknown tool"; and as a
        crashed server is at its next call, it is started again (in the background, within
        its backoff), its tools offered once it is up."""
        for status in self._statuses:
            if status.state is ServerState.READY or not name.startswith(
                server_prefix(status.name, self._parts)
            ):
                continue
            state = {
                ServerState.FAILED: f"is down ({status.reason})",
                ServerState.STARTING: "is still starting",
                ServerState.DISABLED: f"is disabled ({status.reason})",
                ServerState.STOPPED: "was stopped",
            }.get(status.state, status.state.value)
            text = f"{name} cannot be called: MCP server '{status.name}' {state}, so its tools are "
            if status.state is ServerState.FAILED and not self._closed:
                self._ensure_running()
                mcp_loop.submit(self._start_again(status.name))
                return text + (
                    "not available now. It is being started again in the background; do not "
                    "retry the call in this reply, tell the user."
                )
            return text + "not available now. Do not retry it; tell the user."
        return ""

    def starting(self) -> tuple[str, ...]:
        return tuple(s.name for s in self._statuses if s.state is ServerState.STARTING)

    def secrets(self) -> tuple[str, ...]:
        """Header values and key-like env values of every server, to keep out of the log."""
        return self._secrets

    def take_notices(self) -> list[str]:
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    def subscribe(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called (on the MCP thread) after every change of a snapshot."""
        with self._lock:
            self._listeners.append(listener)

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every enabled server in the background; returns at once."""
        if self._started or self._closed:
            return
        self._started = True
        if not any(spec.enabled for spec in self._specs.values()):
            return
        mcp_loop.register_closer(self._close_on_loop)
        self._main = mcp_loop.submit(self._run())

    async def wait_until_started(self) -> None:
        """Wait (from any loop) until no server is starting; each start has its own timeout."""
        if self._main is None or not self.starting():
            return
        await mcp_loop.wait_in(self._settled())

    def wait_until_started_sync(self, timeout: float | None = None) -> None:
        if self._main is None:
            return
        with contextlib.suppress(TimeoutError):
            mcp_loop.submit(self._settled()).result(timeout)

    def close(self, timeout: float = mcp_loop.EXIT_TIMEOUT_S) -> None:
        """Stop every server and wait until their processes are gone (bounded); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._main is None:
            return
        mcp_loop.unregister_closer(self._close_on_loop)
        if mcp_loop.on_mcp_loop():  # pragma: no cover - a misuse; never block the loop itself
            raise RuntimeError("McpManager.close() called on the MCP loop")
        with contextlib.suppress(Exception):
            mcp_loop.submit(self._close_on_loop()).result(timeout)

    async def aclose(self) -> None:
        """:meth:`close` for async callers (does not block their loop)."""
        if self._closed:
            return
        self._closed = True
        if self._main is None:
            return
        mcp_loop.unregister_closer(self._close_on_loop)
        with contextlib.suppress(Exception):
            await mcp_loop.wait_in(self._close_on_loop())

    def restart(self, name: str) -> None:
        """Stop ``name`` if it runs and start it again (``/mcp``); returns at once."""
        self._ensure_running()
        mcp_loop.submit(self._restart(name))

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enable or disable ``name`` for this session (``/mcp``); returns at once."""
        if name not in self._specs:
            raise KeyError(name)
        self._ensure_running()
        mcp_loop.submit(self._set_enabled(name, enabled))

    def _ensure_running(self) -> None:
        if self._closed:
            raise RuntimeError("the MCP servers are closed")
        if self._main is None:
            self._started = True
            mcp_loop.register_closer(self._close_on_loop)
            self._main = mcp_loop.submit(self._run())

    # -- calls -----------------------------------------------------------------------------------

    async def call(
        self,
        tool: RemoteTool,
        arguments: Mapping[str, Any],
        cancelled: asyncio.Event,
        on_progress: Callable[[str], None] | None = None,
    ) -> ToolResult:
        """Call ``tool`` from any loop; setting ``cancelled`` (Esc) cancels it on the server.
        ``on_progress`` gets the server's progress notices as lines, on the caller's loop."""
        if self._closed:
            return ToolResult("The MCP servers are closed.", is_error=True)
        self._ensure_running()
        report = None
        pending = [True]  # a line handed over once the call has ended is dropped
        if on_progress is not None:
            loop = asyncio.get_running_loop()

            def deliver(line: str) -> None:
                if pending[0]:
                    on_progress(line)

            def report(line: str) -> None:  # on the MCP loop's thread
                loop.call_soon_threadsafe(deliver, line)

        future = asyncio.wrap_future(mcp_loop.submit(self._call(tool, arguments, report)))
        stop = asyncio.ensure_future(cancelled.wait())
        waiters: set[asyncio.Future[Any]] = {future, stop}
        try:
            done, _pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            future.cancel()
            raise
        finally:
            stop.cancel()
            pending[0] = False
        if future in done:
            return future.result()
        future.cancel()  # cancels the call on the MCP loop; the SDK tells the server
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait({future}, timeout=_CANCEL_GRACE_S)
        return ToolResult(
            f"Cancelled by the user while MCP server '{tool.server}' was running "
            f"{tool.remote_name}; the server was asked to stop it.",
            is_error=True,
            details={"aborted": True},
        )

    # -- the MCP loop side -----------------------------------------------------------------------

    def _up_event(self) -> asyncio.Event:
        if self._up is None:
            self._up = asyncio.Event()
        return self._up

    async def _run(self) -> None:
        import anyio

        from agentsh.mcp.connection import ServerConnection

        _route_sdk_logs(self._log_dir)
        self._stop = asyncio.Event()
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            for spec in self._specs.values():
                self._conns[spec.name] = ServerConnection(
                    spec,
                    self.settings,
                    cwd=self.cwd,
                    log_dir=self._log_dir,
                    on_change=self._changed,
                    environ=self._environ,
                )
            for conn in self._conns.values():
                conn.launch(task_group)
            self._changed(None)
            self._up_event().set()
            await self._stop.wait()
            await self._stop_all()
            task_group.cancel_scope.cancel()

    async def _stop_all(self) -> None:
        """Every server at once: each may leave on its own for :data:`QUIT_GRACE_S` (stdin
        closed, as the SDK does), then the process groups of those still running are signalled
        together (SIGTERM, SIGKILL after :data:`KILL_GRACE_S`) rather than given the SDK's 2 s
        each; quitting with four servers took ~1.8 s more than with none."""
        import anyio

        conns = list(self._conns.values())
        with anyio.move_on_after(QUIT_GRACE_S):
            async with anyio.create_task_group() as stopping:
                for conn in conns:
                    stopping.start_soon(conn.stop)
        left = [conn for conn in conns if conn.running]
        if not left:
            return
        await groups.stop_groups((conn.process_group() for conn in left), KILL_GRACE_S)
        async with anyio.create_task_group() as waiting:  # each bounded by its own stop
            for conn in left:
                waiting.start_soon(conn.stop)

    async def _settled(self) -> None:
        await self._up_event().wait()
        for conn in list(self._conns.values()):
            await conn.settled()

    async def _close_on_loop(self) -> None:
        self._closed = True
        if self._stop is None:
            return
        self._stop.set()
        main = self._main
        if main is not None:
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(main)

    async def _call(
        self,
        tool: RemoteTool,
        arguments: Mapping[str, Any],
        on_progress: Callable[[str], None] | None,
    ) -> ToolResult:
        await self._up_event().wait()
        conn = self._conns.get(tool.server)
        if conn is None or self._task_group is None:
            return ToolResult(f"No MCP server named '{tool.server}'.", is_error=True)
        outcome = await conn.call(self._task_group, tool.remote_name, arguments, on_progress)
        if outcome.result is None:
            # The error can quote the server (its error message, its last stderr line).
            error = guarded(outcome.error, tool=tool.name, server=tool.server)
            details: dict[str, Any] = {"timed_out": True} if outcome.timed_out else {}
            if error.flagged:
                details["injection"] = list(error.flagged)
            self._flagged(tool, error.flagged)
            return ToolResult(error.text, is_error=True, details=details)
        result = outcome.result
        converted = to_tool_result(
            result.content,
            is_error=bool(result.is_error),
            structured=result.structured_content,
            caps=self._caps,
            label=f"mcp-{tool.server}-{tool.remote_name}",
            tool=tool.name,
            server=tool.server,
            secrets=self._secrets,
        )
        self._flagged(tool, tuple(converted.details.get("injection", ())))
        return converted

    def _flagged(self, tool: RemoteTool, names: Sequence[str]) -> None:
        """Tell the user when a result reached the model fenced as a suspected injection."""
        if not names:
            return
        with self._lock:
            self._notices.append(
                f"MCP server '{tool.server}': the output of {tool.remote_name} looks like a "
                f"prompt injection ({', '.join(names)}); the model got it fenced as "
                "untrusted data"
            )

    async def _start_again(self, name: str) -> None:
        """A failed server, started again unless its backoff says to wait."""
        await self._up_event().wait()
        conn = self._conns.get(name)
        if conn is None or self._task_group is None:
            return
        if conn.status.state is ServerState.FAILED and not conn.unavailable_reason():
            conn.launch(self._task_group)

    async def _restart(self, name: str) -> None:
        await self._up_event().wait()
        conn = self._conns.get(name)
        if conn is None or self._task_group is None:
            return
        await conn.restart(self._task_group)

    async def _set_enabled(self, name: str, enabled: bool) -> None:
        await self._up_event().wait()
        conn = self._conns.get(name)
        if conn is None or self._task_group is None:
            return
        if enabled:
            if conn.status.state is ServerState.DISABLED:
                conn.status = replace(conn.status, state=ServerState.STOPPED)
                conn.spec = replace(conn.spec, enabled=True)
            conn.launch(self._task_group)
        else:
            await conn.stop()
            conn.disable("disabled for this session")

    def _changed(self, _conn: Any) -> None:
        """On the MCP loop: publish new snapshots, queue notices, tell the listeners."""
        statuses = tuple(conn.status for conn in self._conns.values())
        offered = [
            tool
            for status in statuses
            if status.state not in (ServerState.DISABLED, ServerState.STOPPED)
            for tool in status.tools
        ]
        names = assign_names(((t.server, t.remote_name) for t in offered), self._specs)
        tools = tuple(
            sorted(
                (replace(t, name=names[(t.server, t.remote_name)]) for t in offered),
                key=lambda t: t.name,
            )
        )
        notices = []
        for status in statuses:
            before = self._previous.get(status.name)
            if status.state is ServerState.FAILED and before is not ServerState.FAILED:
                notices.append(f"MCP server '{status.name}' failed: {status.reason}")
            elif (
                status.state is ServerState.READY
                and before is ServerState.STARTING
                and (status.restarts)
            ):
                notices.append(f"MCP server '{status.name}' was restarted")
            if status.state is ServerState.READY and before is not ServerState.READY:
                notices += [f"MCP server '{status.name}': tool {p}" for p in status.tool_problems]
            self._previous[status.name] = status.state
        for status in statuses:
            if (
                status.state is ServerState.READY
                and self._previous_tools.get(status.name) != status.tools
            ):
                self._previous_tools[status.name] = status.tools
                if self._cache_path is not None:
                    cache.record(self._cache_path, status)
        self._statuses = statuses
        self._by_name = {tool.name: tool for tool in tools}
        self._tools = tools
        with self._lock:
            self._notices += notices
            listeners = list(self._listeners)
        for listener in listeners:
            with contextlib.suppress(Exception):
                listener()


_SDK_LOGGERS = ("mcp", "client", "server", "httpx2")
_routed = False


def _route_sdk_logs(log_dir: Path) -> None:
    """The SDK's warnings go to a file: with no handler, Python would print them on stderr,
    over the TUI's frame."""
    global _routed
    if _routed:
        return
    _routed = True
    try:
        log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = log_dir / "agentsh-mcp-client.log"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))  # the user's alone
        handler: logging.Handler = logging.FileHandler(path)
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in _SDK_LOGGERS:
        sdk_logger = logging.getLogger(name)
        sdk_logger.addHandler(handler)
        sdk_logger.setLevel(logging.WARNING)
        sdk_logger.propagate = False


def _initial_status(spec: ServerSpec) -> ServerStatus:
    return ServerStatus(
        name=spec.name,
        scope=spec.scope,
        transport=spec.transport,
        command=spec.describe(),
        state=ServerState.STARTING if spec.enabled else ServerState.DISABLED,
        reason="" if spec.enabled else "disabled in its configuration",
    )


def _secrets_of(specs: Sequence[ServerSpec], environ: Mapping[str, str] | None) -> tuple[str, ...]:
    found: list[str] = []
    for spec in specs:
        with contextlib.suppress(ExpansionError):
            found += spec.launch(environ).secrets()
    return tuple(dict.fromkeys(found))


def tools_json(tools: Sequence[RemoteTool], *, terse: bool = False) -> str:
    """The schemas as one JSON text (what the context budget counts); ``terse``: in the short
    form a small window gets (:func:`agentsh.context.prompt_budget.terse_schema`)."""
    if not tools:
        return ""
    schemas = [t.schema() for t in tools]
    if terse:
        from agentsh.context.prompt_budget import terse_schema

        schemas = [terse_schema(schema) for schema in schemas]
    return json.dumps(schemas, separators=(",", ":"), sort_keys=True)


def manager_for(
    env: Environment,
    cwd: Path,
    *,
    trusted: bool,
    extra: Sequence[ServerSpec] = (),
    config: McpConfig | None = None,
) -> tuple[McpManager | None, list[str]]:
    """The manager for this environment's servers (None when there are none) and what the
    user should be told about the configuration. A project's servers are included only when
    ``trusted``; otherwise a notice says they were left out and why, unless the trust check
    already named their files (the front end's one line about the untrusted folder says it).
    ``extra`` servers (an ACP client's, :func:`~agentsh.mcp.servers_config.spec_from_acp`) join them
    and win a name clash."""
    config = config or load_mcp_config(env.user, env.project)
    notices = [f"MCP configuration: {problem}" for problem in config.problems]
    if config.project and not trusted and not told_by_trust_check(env, config):
        names = ", ".join(sorted(config.project))
        notices.append(
            f"MCP servers of this project ({names}) were not started: the project is not "
            "trusted, and its MCP configuration would run programs on this machine."
        )
    chosen = {spec.name: spec for spec in config.servers(trusted=trusted)}
    chosen.update((spec.name, spec) for spec in extra)
    specs = [chosen[name] for name in sorted(chosen)]
    if not specs:
        return None, notices
    manager = McpManager(
        specs,
        env.settings.mcp,
        cwd=cwd,
        log_dir=env.user.mcp_log_dir,
        spool_dir=env.user.project_tool_output_dir(env.project.root),
        cache_path=env.user.mcp_tools_cache,
    )
    return manager, notices
