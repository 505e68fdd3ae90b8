"""A real ``agentsh acp`` process driven by the ``acp`` package's client side.

:class:`EditorClient` plays the editor: it records every ``session/update``, answers permission
requests as a test says, and (when it offers them) serves file reads and writes from its own
"buffers" and runs terminals as local processes. :func:`spawn_acp` starts ``python -m agentsh acp``
against the scripted model server and keeps every line the agent wrote on stdout, so a test can
check that nothing but JSON-RPC frames ever got there.

Starting the agent costs about a second, and its first prompt the import of litellm: the tests
of a module share one process (module-scoped fixture, module-scoped event loop), each in its own
session.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import connect_to_agent, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    InitializeResponse,
    KillTerminalResponse,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.acp.wire import schema_problems
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer

Answer = str | Callable[[ToolCallUpdate, list[PermissionOption]], str]
"""An option id to pick, "never" (no answer at all), "cancelled", or a function choosing."""


@dataclass
class Asked:
    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None
    released: bool = False
    killed: bool = False


class EditorClient:
    """The editor's side of the protocol, as a test needs it."""

    def __init__(self, *, files: bool = False, terminal: bool = False) -> None:
        self.capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=files, write_text_file=files),
            terminal=terminal,
        )
        self.updates: dict[str, list[Any]] = defaultdict(list)
        self.asked: list[Asked] = []
        self.answer: Answer = "allow_once"
        self.buffers: dict[str, str] = {}  # unsaved editor buffers, by absolute path
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, _Terminal] = {}
        self.stall_output_after_kill = False  # a client that never answers terminal/output then
        self._ids = itertools.count(1)
        self.changed = asyncio.Condition()

    # -- what the tests read --------------------------------------------------------------

    def kinds(self, session_id: str) -> list[str]:
        return [u.session_update for u in self.updates[session_id]]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u.content.text
            for u in self.updates[session_id]
            if u.session_update == kind and getattr(u.content, "type", "") == "text"
        )

    def tool_updates(self, session_id: str) -> list[Any]:
        return [
            u
            for u in self.updates[session_id]
            if u.session_update in ("tool_call", "tool_call_update")
        ]

    async def wait_for(self, check: Callable[[], bool], within_s: float = 30) -> None:
        """Until ``check()`` holds; it is re-checked whenever anything a test can read changed
        (an update, a question, a terminal made, its output grew, its command ended)."""
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(check), within_s)

    async def _changed(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    # -- the protocol -----------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates[session_id].append(update)
        await self._changed()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append(Asked(session_id, tool_call, options))
        await self._changed()
        answer = self.answer
        choice = answer(tool_call, options) if callable(answer) else answer
        if choice == "never":
            await asyncio.Event().wait()  # an editor that never shows the request
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=choice, outcome="selected")
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content  # the editor's buffer; the test decides about the disk
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env={**os.environ, **{e.name: e.value for e in env or []}},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        terminal = _Terminal(process)

        async def pump() -> None:
            # A test waiting for the command's output is woken by it (it waited for the next
            # session/update instead: the command's end, after the test's 20 s sleep).
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                terminal.output += chunk
                await self._changed()
            await process.wait()
            await self._changed()

        terminal.reader = asyncio.ensure_future(pump())
        terminal_id = f"term-{next(self._ids)}"
        self.terminals[terminal_id] = terminal
        await self._changed()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        if terminal.killed and self.stall_output_after_kill:
            await asyncio.Event().wait()
        code = terminal.process.returncode
        status = TerminalExitStatus(exit_code=code) if code is not None else None
        if terminal.reader is not None and code is not None:
            await terminal.reader
        return TerminalOutputResponse(
            output=terminal.output.decode("utf-8", "replace"), truncated=False, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        code = await self.terminals[terminal_id].process.wait()
        if code < 0:  # as a terminal reports it: the signal's name
            return WaitForTerminalExitResponse(signal=signal.Signals(-code).name)
        return WaitForTerminalExitResponse(exit_code=code)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        self.terminals[terminal_id].killed = True
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].process.kill()
        await self._changed()
        return KillTerminalResponse()

    async def close(self) -> None:
        """The editor closes: no command a failed test left running outlives it."""
        for terminal in self.terminals.values():
            if terminal.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    terminal.process.kill()
            await terminal.process.wait()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        self.terminals[terminal_id].released = True
        return ReleaseTerminalResponse()


@dataclass
class AcpAgent:
    """A running ``agentsh acp`` and the connection to it."""

    conn: ClientSideConnection
    client: EditorClient
    process: asyncio.subprocess.Process
    server: ScriptedServer
    project: Path
    home: Path
    stderr: Path
    stdout_lines: list[bytes]
    initialized: InitializeResponse
    asked: dict[Any, str]  # the method of each request the client sent, by id

    async def new_session(self, cwd: Path | None = None) -> str:
        response = await self.conn.new_session(cwd=str(cwd or self.project), mcp_servers=[])
        return response.session_id

    async def prompt(self, session_id: str, text: str) -> PromptResponse:
        return await asyncio.wait_for(
            self.conn.prompt(session_id=session_id, prompt=[text_block(text)]), 60
        )

    def frames(self) -> list[dict[str, Any]]:
        """Every line the agent wrote on stdout, each of which must be a JSON-RPC frame, and
        each request or notification one the protocol's schema reads strictly (:mod:`.wire`)."""
        frames = []
        for raw in self.stdout_lines:
            line = raw.decode("utf-8")
            assert line.endswith("\n"), f"an unterminated line on stdout: {line!r}"
            frame = json.loads(line)
            assert isinstance(frame, dict) and frame.get("jsonrpc") == "2.0", line
            assert ("method" in frame) or ("result" in frame) or ("error" in frame), line
            assert not (problems := schema_problems(frame, self.asked)), problems
            frames.append(frame)
        return frames


def write_user_config(home: Path, text: str) -> None:
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


@contextlib.asynccontextmanager
async def spawn_acp(
    root: Path,
    client: EditorClient,
    *args: str,
    config: str = "",
    extra_env: dict[str, str] | None = None,
) -> AsyncIterator[AcpAgent]:
    """Start ``agentsh acp`` in ``root/project`` with ``root/home`` as AGENTSH_HOME."""
    home, project = root / "home", root / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(project)], check=True)
    write_user_config(
        home,
        # MCP servers get a minute to start (10 s is short on a loaded machine).
        "[mcp]\nstartup_timeout_s = 60.0\n"
        "[model]\nretry_base_delay_s = 0.01\nretry_max_delay_s = 0.05\n" + config,
    )
    server = ScriptedServer().start()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("AGENTSH_MODEL", "AGENTSH_API_BASE")
    }
    env.update(
        AGENTSH_HOME=str(home),
        OPENAI_API_KEY=FAKE_KEY,
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HUB_OFFLINE="1",
        AGENTSH_NO_OLLAMA_PROBE="1",
    )
    env.update(extra_env or {})
    stderr = root / "agent-stderr.log"
    with stderr.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "agentsh",
            "-m",
            TEST_MODEL,
            "--api-base",
            server.base_url,
            "acp",
            *args,
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    assert process.stdin is not None and process.stdout is not None
    lines: list[bytes] = []
    feed = asyncio.StreamReader(limit=50 * 1024 * 1024)

    async def record(source: asyncio.StreamReader) -> None:
        while line := await source.readline():
            lines.append(line)
            feed.feed_data(line)
        feed.feed_eof()

    recorder = asyncio.ensure_future(record(process.stdout))
    # The SDK's Client protocol lists every optional handler (elicitation, extensions), which it
    # looks up with getattr; this editor leaves them out, as a real one may.
    asked: dict[Any, str] = {}

    def note_request(event: StreamEvent) -> None:  # so each response is read by its model
        message = event.message
        if event.direction is StreamDirection.OUTGOING and "method" in message and "id" in message:
            asked[message["id"]] = message["method"]

    conn = connect_to_agent(client, process.stdin, feed, observers=[note_request])  # type: ignore[arg-type]
    try:
        initialized = await asyncio.wait_for(
            conn.initialize(protocol_version=1, client_capabilities=client.capabilities), 30
        )
        yield AcpAgent(
            conn, client, process, server, project, home, stderr, lines, initialized, asked
        )
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
        with contextlib.suppress(Exception):
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        await recorder
        server.stop()
        await client.close()
