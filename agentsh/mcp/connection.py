"""One MCP server under supervision: started, watched, called, restarted, stopped.

Runs on the MCP loop only (:mod:`agentsh.mcp.loop`). Each server is one task that enters the
SDK's ``Client`` (stdio, streamable HTTP or SSE transport), lists the tools within the start-up
timeout, then waits until it is told to stop or its connection ends. A connection that ends
unasked is a crash: the server is marked failed with the reason (the last line it wrote on
stderr, when there is one) and started again at its next use, after a backoff that doubles
with each failure in a row (the first restart is immediate). A call that was running when it
crashed is not retried: it may have had effects.

The server's stderr goes to a log file, never to the terminal (it would tear the TUI), and
nothing written there or shown comes from an expanded ``${VAR}``: the header of each start is
the command as configured, what the server prints is redacted on its way to the file
(:mod:`agentsh.mcp.stderr_log`), and messages are scrubbed of the expanded secrets.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agentsh.config import McpSettings
from agentsh.mcp import groups, stdio_launch, tool_changes
from agentsh.mcp.bounded import within
from agentsh.mcp.listing import description, list_tools
from agentsh.mcp.progress import ProgressLines
from agentsh.mcp.servers_config import ExpansionError, Launch, ServerSpec, Transport
from agentsh.mcp.state import ServerState, ServerStatus
from agentsh.mcp.stderr_log import StderrLog, scrubbed
from agentsh.mcp.watched_transport import WatchedTransport

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.session import ClientRequestContext
    from mcp.types import ErrorData, ListRootsResult

    from agentsh.mcp.http_transport import ConnectWatch

_CLOSE_GRACE_S = 8.0  # the SDK's own shutdown: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL
# How long the stderr log (stderr_log) may take to catch up with what a server wrote: its
# launch shell's pid line (always there at once), and the last words of one that ended (a child
# it left behind may hold the pipe open: the group is stopped after this).
_PID_LINE_WAIT_S = 5.0
_LAST_WORDS_WAIT_S = 2.0
#: how long past its timeout a call may take to end by itself (the SDK's timeout starts later)
_LATE_S = 0.5
#: how long an HTTP or SSE server has to answer a ping after a call to it timed out
PROBE_S = 10.0


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What came back from one ``tools/call``: the SDK result, or why there is none."""

    result: Any = None  # mcp.types.CallToolResult
    error: str = ""  # set when result is None
    crashed: bool = False  # the server stopped during the call (it may have had effects)
    timed_out: bool = False


class ServerConnection:
    """One configured server. Every method runs on the MCP loop."""

    def __init__(
        self,
        spec: ServerSpec,
        settings: McpSettings,
        *,
        cwd: Path,
        log_dir: Path,
        on_change: Callable[[ServerConnection], None],
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.cwd = cwd
        self.log_path = log_dir / f"{spec.name}.log"
        self._on_change = on_change
        self._environ = environ
        self._clock = clock
        self._client: Client | None = None
        self._wake = anyio.Event()
        self._started = anyio.Event()
        self._finished = anyio.Event()
        self._stop_requested = False
        self._dropped = ""  # why agentsh dropped a connection that stopped answering
        self._running = False
        self._failures = 0  # in a row; a successful call resets it
        self._failed_at = 0.0
        self._ever_ready = False
        self._log: StderrLog | None = None  # this start's stderr log (stdio servers)
        self._http: ConnectWatch | None = None  # why an HTTP server could not be reached
        self._pgid = 0  # the stdio server's process group, once known
        self._secrets: tuple[str, ...] = ()
        self._relist = tool_changes.Coalesced(self._list_again)  # at each change notice
        self.status = ServerStatus(
            name=spec.name,
            scope=spec.scope,
            transport=spec.transport,
            command=spec.describe(),
            state=ServerState.STARTING if spec.enabled else ServerState.DISABLED,
            reason="" if spec.enabled else "disabled in its configuration",
            log_path=str(self.log_path) if spec.transport is Transport.STDIO else "",
        )

    # -- timeouts -----------------------------------------------------------------------------

    @property
    def startup_timeout_s(self) -> float:
        return self.spec.startup_timeout_s or self.settings.startup_timeout_s

    @property
    def call_timeout_s(self) -> float:
        return self.spec.call_timeout_s or self.settings.call_timeout_s

    # -- state --------------------------------------------------------------------------------

    def _set(self, **changes: Any) -> None:
        self.status = replace(self.status, **changes)
        self._on_change(self)

    def _fail(self, reason: str) -> None:
        self._failures += 1
        self._failed_at = self._clock()
        self._set(state=ServerState.FAILED, reason=self._scrub(reason))

    def _scrub(self, text: str) -> str:
        return scrubbed(text, self._secrets)

    def restart_wait_s(self) -> float:
        """Seconds until a crashed server may be started again (0: at its next use)."""
        if self._failures <= 1:
            return 0.0
        base = self.settings.restart_backoff_s * 2.0 ** (self._failures - 2)
        delay = min(self.settings.restart_backoff_max_s, base)
        return max(0.0, self._failed_at + delay - self._clock())

    # -- start and supervision ----------------------------------------------------------------

    def launch(self, task_group: anyio.abc.TaskGroup, *, restarted: bool = False) -> None:
        """Start the server's task if it is not running (returns at once). A start after a
        failure, or one the user asked for (``restarted``), counts as a restart."""
        if not self.spec.enabled or self.status.state is ServerState.DISABLED or self._running:
            return
        self._running = True
        self._stop_requested = False
        self._dropped = ""
        self._wake = anyio.Event()
        self._started = anyio.Event()
        self._finished = anyio.Event()
        again = restarted or self.status.state is ServerState.FAILED
        restarts = self.status.restarts + (1 if again else 0)
        self._set(state=ServerState.STARTING, reason="", restarts=restarts)
        task_group.start_soon(self._supervise)

    async def restart(self, task_group: anyio.abc.TaskGroup) -> bool:
        """Stop and start again, because the user asked (``/mcp``): at once, whatever backoff
        a run of crashes had set, which starts over. False for a disabled server."""
        if not self.spec.enabled or self.status.state is ServerState.DISABLED:
            return False
        await self.stop()
        self._failures = 0
        self.launch(task_group, restarted=True)
        return True

    async def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start the server (if it is not running) and wait until it is ready or failed."""
        if self._running and self.status.state is ServerState.FAILED:
            await self._finished.wait()  # a crashed run still cleaning up
        self.launch(task_group)
        await self.settled()

    async def settled(self) -> None:
        """Wait until a start in progress has ended (ready or failed)."""
        if self._running:
            await self._started.wait()

    async def _supervise(self) -> None:
        began = self._clock()
        # The start-up deadline covers the whole task, not a block inside it: the client's
        # task groups stay open after the start, and anyio scopes must nest.
        deadline = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout_s)
        try:
            with deadline:
                async with AsyncExitStack() as stack:
                    launch = self.spec.launch(self._environ)
                    self._secrets = launch.secrets()
                    client = await self._connect(stack, launch)
                    await stack.enter_async_context(client)
                    await self._log_started()
                    self._learn_group()
                    tools, problems = await list_tools(client, self.spec.name)
                    deadline.deadline = math.inf
                    self._client = client
                    self._ever_ready = True
                    info = client.server_info
                    self._set(
                        state=ServerState.READY,
                        reason="",
                        tools=tools,
                        tool_problems=problems,
                        server_version=description(f"{info.name} {info.version}")[:80]
                        if info
                        else "",
                        ready_after_s=self._clock() - began,
                    )
                    self._started.set()
                    async with anyio.create_task_group() as watchers:
                        watchers.start_soon(
                            tool_changes.follow, client, self._relist, self.spec.name
                        )
                        await self._wake.wait()
                        watchers.cancel_scope.cancel()
                    self._client = None
                    if not self._stop_requested:
                        self._fail(self._dropped or self._ended_reason("stopped unexpectedly"))
            if deadline.cancelled_caught:
                self._fail(
                    f"did not start within {self.startup_timeout_s:g} s"
                    + self._stderr_hint(", last said: ")
                )
        except ExpansionError as exc:
            self._fail(f"cannot start: {exc}")
        except Exception as exc:  # noqa: BLE001 - the SDK and transports raise anything
            self._fail(self._start_error(exc))
        finally:
            self._client = None
            self._learn_group()
            if self._pgid:
                # Whatever the server started and left behind goes with it.
                with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                    await groups.stop_group(self._pgid)
                self._pgid = 0
            self._running = False
            self._started.set()
            self._finished.set()
            if self._stop_requested:
                self._set(state=ServerState.STOPPED, reason="")

    async def _connect(self, stack: AsyncExitStack, launch: Launch) -> Client:
        from mcp import Client
        from mcp.types import Implementation

        transport = WatchedTransport(await self._transport(stack, launch), self._connection_ended)
        return Client(
            transport,
            client_info=Implementation(name="agentsh", version=_version()),
            list_roots_callback=self._roots,
            message_handler=self._on_message,
        )

    async def _transport(self, stack: AsyncExitStack, launch: Launch) -> Any:
        if self.spec.transport is Transport.STDIO:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cwd = stdio_launch.working_dir(launch.cwd, self.cwd)
            env = stdio_launch.absolute_path_only(launch.env)
            stdio_launch.check_command(launch.command, cwd, env["PATH"])
            self._log = StderrLog(self.log_path, self._secrets)
            errlog = stack.enter_context(self._log.opened(self.spec.describe()))
            command, args = launch.command, list(launch.args)
            if groups.supported():
                command, args = groups.wrapped(command, args)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
            return stdio_client(params, errlog=errlog)
        from agentsh.mcp.http_transport import watched_clients

        make, self._http = watched_clients()
        if self.spec.transport is Transport.SSE:
            from mcp.client.sse import sse_client

            return sse_client(launch.url, launch.headers or None, httpx_client_factory=make)
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(make(launch.headers))
        return streamable_http_client(launch.url, http_client=http)

    def _unreachable(self) -> str:
        """Why the HTTP server could not be reached by the last request, in a few words with
        its URL as configured; "" when it could (or it is not an HTTP server)."""
        if self._http is None or not self._http.failed:
            return ""
        return f"cannot connect to {self._scrub(self.spec.url)}: {self._http.failed}"

    async def _log_started(self) -> None:
        """Once the server runs: agentsh's copy of its stderr pipe is closed, and the launch
        shell's first line (its pid: :meth:`_learn_group`) is waited for in the log."""
        log = self._log
        if log is None:
            return
        log.release()
        if groups.supported():
            await anyio.to_thread.run_sync(log.first_output.wait, _PID_LINE_WAIT_S)

    async def _roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        """The project folder, for servers that still ask for roots (deprecated in 2026)."""
        from mcp.types import ListRootsResult, Root

        root = Root.model_validate({"uri": self.cwd.resolve().as_uri(), "name": self.cwd.name})
        return ListRootsResult(roots=[root])

    async def _on_message(self, message: Any) -> None:
        """A server that says its tools changed (before protocol 2026-07-28: after it, the
        word comes on the stream :func:`tool_changes.follow` opens) is listed again."""
        if not tool_changes.is_tools_changed(message):
            await anyio.lowlevel.checkpoint()
            return
        await self._relist()

    async def _list_again(self) -> None:
        """List the tools again (if the server is still up); on failure keep the old list."""
        client = self._client
        if client is None:
            return
        try:
            with anyio.fail_after(self.startup_timeout_s):
                tools, problems = await list_tools(client, self.spec.name)
        except Exception:  # noqa: BLE001 - keep the old list; the next call will tell
            return
        self._set(tools=tools, tool_problems=problems)

    def _learn_group(self) -> None:
        """Read the server's pid (= its process group) from its log, where the launch shell
        wrote it, and track the group until it has been stopped."""
        if self._pgid or self.spec.transport is not Transport.STDIO or not groups.supported():
            return
        pid = groups.announced_pid(self._log_since_start())
        if pid:
            self._pgid = pid
            groups.track(pid)

    def _log_since_start(self, *, ended: bool = False) -> str:
        """This start's stderr, as logged; ``ended``: the server is gone, so what it wrote
        last is waited for (bounded: a child it left behind may hold the pipe)."""
        log = self._log
        if log is None:
            return ""
        if ended:
            log.drained.wait(_LAST_WORDS_WAIT_S)
        try:
            with self.log_path.open("rb") as handle:
                handle.seek(log.mark)
                return handle.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return ""

    def _connection_ended(self) -> None:
        self._wake.set()

    # -- errors as people read them -------------------------------------------------------------

    def _stderr_tail(self, *, ended: bool = False) -> str:
        """The last line the server wrote on stderr since this start (scrubbed, short)."""
        if self.spec.transport is not Transport.STDIO:
            return ""
        from agentsh.mcp.results import clean_text

        text = clean_text(self._log_since_start(ended=ended)[-4096:])
        lines = [line.strip() for line in text.splitlines()]
        lines = [line for line in lines if line and not line.startswith(groups.MARKER)]
        return self._scrub(lines[-1][:300]) if lines else ""

    def _stderr_hint(self, lead: str, *, ended: bool = False) -> str:
        tail = self._stderr_tail(ended=ended)
        return f"{lead}{tail}" if tail else ""

    def _ended_reason(self, what: str) -> str:
        if self.spec.transport is Transport.STDIO:
            return f"the server process {what.replace('stopped', 'exited')}" + self._stderr_hint(
                "; it last said: ", ended=True
            )
        return f"the connection {what.replace('stopped', 'closed')}"

    def _start_error(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        if isinstance(leaf, stdio_launch.CommandProblem):
            return str(leaf)
        if unreachable := self._unreachable():
            return unreachable
        if _is_closed(leaf):
            return self._ended_reason("stopped before it was ready")
        text = str(leaf) or type(leaf).__name__
        return f"cannot start: {text[:400]}" + self._stderr_hint("; it last said: ")

    # -- calls --------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.status.state is ServerState.READY and self._client is not None

    def unavailable_reason(self) -> str:
        """Why a call cannot go to this server now ("" when it can, or can be restarted)."""
        state = self.status.state
        if state is ServerState.DISABLED:
            return f"MCP server '{self.spec.name}' is disabled ({self.status.reason})."
        if state is ServerState.STOPPED:
            return f"MCP server '{self.spec.name}' was stopped."
        if state is ServerState.FAILED:
            wait = self.restart_wait_s()
            if wait > 0:
                return (
                    f"MCP server '{self.spec.name}' is down ({self.status.reason}); after "
                    f"{self._failures} failures in a row it will be started again at a call "
                    f"in {wait:.1f} s or later."
                )
        return ""

    async def call(
        self,
        task_group: anyio.abc.TaskGroup,
        tool: str,
        arguments: Mapping[str, Any],
        on_progress: Callable[[str], None] | None = None,
    ) -> CallOutcome:
        """One ``tools/call``, starting (or restarting) the server first if needed; the
        server's progress notices go to ``on_progress`` as lines (:mod:`.progress`)."""
        reason = self.unavailable_reason()
        if reason:
            return CallOutcome(error=reason)
        if not self.ready:
            await self.start(task_group)
            if not self.ready:
                # Said as a failed send is: whether the server's end was noticed before this
                # call (its stream closed) or by it, the model reads one message.
                return CallOutcome(
                    error=f"MCP server '{self.spec.name}' is down ({self.status.reason}); the "
                    "call was not sent. agentsh connects again at its next call."
                )
        client = self._client
        assert client is not None
        timeout = self.call_timeout_s
        progress = ProgressLines(on_progress, self._scrub) if on_progress else None
        try:
            # The SDK's own timeout starts once the request is written and tells the server
            # to cancel; this bound holds from the call's start, whatever the SDK waits for (a
            # write behind a POST a half-open server never answers; a server that stopped
            # reading its stdin). The SDK's side ends in the background (mcp.bounded).
            result = await within(
                task_group,
                lambda: client.call_tool(
                    tool,
                    dict(arguments),
                    read_timeout_seconds=timeout,
                    progress_callback=progress,
                ),
                timeout + _LATE_S,
            )
        except TimeoutError:
            outcome = CallOutcome(error=self._timeout_text(timeout), timed_out=True)
        except Exception as exc:  # noqa: BLE001 - classified below
            outcome = self._call_error(exc, timeout)
        else:
            self._failures = 0
            return CallOutcome(result=result)
        if outcome.timed_out and self.spec.transport is not Transport.STDIO:
            task_group.start_soon(self._probe, task_group, client)
        return outcome

    async def _probe(self, task_group: anyio.abc.TaskGroup, client: Client) -> None:
        """After a call to an HTTP or SSE server timed out: a request it does not answer within
        :data:`PROBE_S` means the connection is dead (a half-open server, an SSE stream whose
        POSTs hang); it is dropped, and the next call connects again rather than waiting out
        its timeout on it. A stdio server is left running: its process may be busy."""
        try:  # (ping is deprecated in the protocol's 2026 version; the list asked of the
            # server itself: one its cache hint lets the SDK keep answered for the dead server)
            await within(task_group, lambda: client.list_tools(cache_mode="bypass"), PROBE_S)
            answered = True
        except Exception:  # noqa: BLE001 - no answer, whatever the reason
            answered = False
        if not answered and self._client is client:
            self._dropped = (
                f"it stopped answering: a call timed out and a request got no answer within "
                f"{PROBE_S:g} s; agentsh connects again at the next call"
            )
            self._wake.set()

    def _timeout_text(self, timeout: float) -> str:
        return (
            f"The call to MCP server '{self.spec.name}' timed out after {timeout:g} s and was "
            "cancelled. The server is still running; try a smaller request, or tell the user."
        )

    def _call_error(self, exc: BaseException, timeout: float) -> CallOutcome:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        leaf = _leaf(exc)
        if isinstance(leaf, MCPError) and leaf.code == REQUEST_TIMEOUT:
            return CallOutcome(error=self._timeout_text(timeout), timed_out=True)
        if _is_closed(leaf) or (isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED):
            self._wake.set()
            if unreachable := self._unreachable():  # the request never left: nothing ran
                return CallOutcome(
                    error=f"MCP server '{self.spec.name}' is down ({unreachable}); the call "
                    "was not sent. agentsh connects again at its next call.",
                    crashed=True,
                )
            reason = self._ended_reason("stopped during the call")
            return CallOutcome(
                error=f"MCP server '{self.spec.name}' stopped during this call ({reason}). "
                "The call may or may not have taken effect. The server will be started again "
                "at its next call.",
                crashed=True,
            )
        text = self._scrub(str(leaf) or type(leaf).__name__)
        return CallOutcome(error=f"MCP server '{self.spec.name}' answered with an error: {text}")

    # -- stop ---------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop the server and wait until its process group is gone (bounded)."""
        if not self._running:
            if self.status.state not in (ServerState.DISABLED, ServerState.STOPPED):
                self._set(state=ServerState.STOPPED, reason="")
            return
        self._stop_requested = True
        self._wake.set()
        with anyio.move_on_after(_CLOSE_GRACE_S):
            await self._finished.wait()

    @property
    def running(self) -> bool:
        return self._running

    def process_group(self) -> int:
        """The stdio server's process group (0: none, or not known yet)."""
        self._learn_group()
        return self._pgid

    def disable(self, reason: str) -> None:
        self._set(state=ServerState.DISABLED, reason=reason)


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_closed(exc: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    closed = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)
    return isinstance(exc, closed)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentsh")
    except PackageNotFoundError:
        return "0"
