"""The ``bash`` tool: run a command, stream its output, keep the tail, save the rest.

The command runs as ``bash -c`` in the working folder, in a process group of its own, so a
timeout or a cancel stops everything it started (a test runner's workers, a ``sleep`` in a
pipeline), not just the shell. Output (stdout and stderr merged, stdin from /dev/null) streams
to the front end as :class:`~agentsh.events.ToolOutput` events in pieces of a few kilobytes or
every few tens of milliseconds, whichever comes first. Memory stays bounded: a rolling buffer
of twice the result budget holds the tail, and once the output passes the budget the whole of
it is spooled to a file under the tool-output folder, which the result names so the model can
page through it with ``read``.

With a :class:`~agentsh.tools.host.ToolHost` that runs commands (an editor over ACP), the command
runs in a terminal the editor shows instead; its result is written the same way.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import dataclasses
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar

from agentsh.context.facts import FILES_CHANGED
from agentsh.events import ToolOutput
from agentsh.programs import find_program
from agentsh.termsafe import strip_ansi
from agentsh.tools import changes
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolResult,
    display_path,
    format_size,
    param,
    truncate_tail,
)
from agentsh.tools.host import CommandRun, HostError
from agentsh.tools.protected import protected_command, restore, snapshot

# Streaming granularity: one event per this many characters or this many seconds.
_EMIT_CHARS = 4096
_EMIT_INTERVAL_S = 0.05
# After SIGTERM, how long the group gets to exit before SIGKILL.
_TERM_GRACE_TIMEOUT_S = 1.0
_TERM_GRACE_CANCEL_S = 0.2
# After the shell exits, how long to wait for the pipe to close: a background job that keeps
# it open (``server &``) must not hold the tool until the timeout.
_DRAIN_GRACE_S = 1.0

# Commands run without a terminal: no pager may wait for a key, no prompt for a password.
_ENV_OVERRIDES = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
    "TERM": "dumb",
}


@dataclass(frozen=True, slots=True)
class BashParams:
    command: str = param("Shell command; runs with bash -c in the working folder.")
    timeout: float | None = param("Seconds before it is stopped. Default 120.", None, minimum=1)


_CHANGED_SHOWN = 20  # files named in the output; the details keep up to 200


class BashTool(Tool):
    name: ClassVar[str] = "bash"
    output_origin: ClassVar[str] = "printed by a command"
    description: ClassVar[str] = (
        "Run a shell command (bash -c) in the working folder; stdout and stderr together. "
        "Long output keeps the tail and saves the rest to a file."
    )
    Params: ClassVar[type[Any]] = BashParams

    def parse(self, arguments: Any) -> BashParams:
        params: BashParams = super().parse(arguments)
        if not params.command.strip():
            raise ToolArgumentError("'command' must not be empty")
        if params.timeout is not None and params.timeout < 1:
            raise ToolArgumentError("'timeout' must be at least 1 second")
        return params

    def effect(self, params: Any, ctx: ToolContext) -> Effect:
        return Effect.EXECUTE

    def protected_target(self, params: BashParams, ctx: ToolContext) -> str | None:
        return protected_command(params.command)

    def summary(self, params: BashParams) -> str:
        lines = params.command.strip().splitlines() or [""]
        first = lines[0]
        if len(first) > 100:
            first = first[:99] + "…"
        elif len(lines) > 1:
            first += " …"
        return f"bash: {first}"

    async def approval_detail(self, params: BashParams, ctx: ToolContext) -> str:
        return params.command

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        tools = ctx.settings.tools
        timeout = params.timeout if params.timeout is not None else tools.bash_timeout_s
        if not ctx.cwd.is_dir():
            return ToolResult(f"The working folder {ctx.cwd} does not exist.", is_error=True)
        sink = _OutputSink(
            max_bytes=tools.bash_max_bytes,
            spool_dir=ctx.user.project_tool_output_dir(ctx.project.root),
            emit=lambda text: ctx.emit(ToolOutput(ctx.call_id, text)),
            secrets=ctx.secrets,
        )
        # What the command changes on disk is noted for the context's kept facts: tool calls
        # name the files read and edited, a command's changes are seen only this way.
        files_before = await changes.snapshot(ctx.cwd)
        started = time.monotonic()
        # The tripwire: whatever the command does to .git/config, the hooks or the project's
        # settings is undone after it (agentsh.tools.protected).
        before = await asyncio.to_thread(snapshot, ctx.project.root)
        try:
            if ctx.host is not None and ctx.host.runs_commands:
                result = await _run_on_host(params.command, ctx, timeout)
            else:
                result = await self._run(
                    params, ctx, sink, timeout_s=timeout, started=started, files_before=files_before
                )
        finally:
            undone = await asyncio.to_thread(restore, before)
        if undone:
            note = (
                f"[agentsh undid this command's changes to {', '.join(undone)}: git and agentsh "
                "run what those files say, so they are never changed by a command. If the "
                "change is needed, make it with write or edit, which ask the user.]"
            )
            details = {**result.details, "protected_undone": undone}
            result = dataclasses.replace(
                result, content=f"{result.content}\n\n{note}", details=details
            )
        return result

    async def _run(
        self,
        params: BashParams,
        ctx: ToolContext,
        sink: _OutputSink,
        *,
        timeout_s: float,
        started: float,
        files_before: changes.TreeSnapshot | None,
    ) -> ToolResult:
        timeout = timeout_s
        loop = asyncio.get_running_loop()
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: _Protocol(loop, sink),
                find_program("bash") or "/bin/bash",  # never a ./bash of the project
                "-c",
                params.command,
                cwd=ctx.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as one
                env={**os.environ, **_ENV_OVERRIDES},
            )
        )
        try:
            transport, protocol = await asyncio.shield(spawn)
        except OSError as exc:
            return ToolResult(f"Could not start bash: {exc.strerror or exc}.", is_error=True)
        except asyncio.CancelledError:
            # The shell runs before the spawn returns, and may already have started children;
            # cancelled in that window, asyncio would kill only the shell. Let the spawn finish
            # (milliseconds), then kill the whole group.
            with contextlib.suppress(Exception):
                late, _protocol = await spawn
                _kill_group(late.get_pid(), signal.SIGKILL)
                late.close()
            sink.close()
            raise
        pgid = transport.get_pid()
        cancelled = asyncio.create_task(ctx.cancelled.wait())
        ending = "exited"
        drained = True
        try:
            waiters: set[asyncio.Future[Any]] = {protocol.exited, cancelled}
            done, _pending = await asyncio.wait(
                waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if protocol.exited not in done:
                ending = "aborted" if cancelled in done else "timeout"
                grace = _TERM_GRACE_CANCEL_S if ending == "aborted" else _TERM_GRACE_TIMEOUT_S
                await _stop_group(pgid, protocol.exited, grace)
            # The shell is gone; its output may still be in the pipe, or held open by a job
            # it put in the background, which must not keep the tool waiting.
            closed, _pending = await asyncio.wait({protocol.output_closed}, timeout=_DRAIN_GRACE_S)
            drained = protocol.output_closed in closed
        except asyncio.CancelledError:
            # The turn itself was cancelled: kill at once, reap, and let the cancel go on.
            _kill_group(pgid, signal.SIGKILL)
            await asyncio.wait({protocol.exited}, timeout=_TERM_GRACE_TIMEOUT_S)
            raise
        finally:
            cancelled.cancel()
            transport.close()
            sink.close()
        return _result(
            sink,
            ending=ending,
            returncode=transport.get_returncode(),
            timeout=timeout,
            drained=drained,
            elapsed=time.monotonic() - started,
            cwd=ctx.cwd,
            changed=changes.changed_files(files_before, await changes.snapshot(ctx.cwd)),
        )


async def _run_on_host(command: str, ctx: ToolContext, limit_s: float) -> ToolResult:
    """The command in the host's terminal; the result reads as a local run's would."""
    assert ctx.host is not None
    tools = ctx.settings.tools
    started = time.monotonic()
    try:
        run = await ctx.host.run_command(
            command,
            cwd=ctx.cwd,
            env=_ENV_OVERRIDES,
            time_limit_s=limit_s,
            cancelled=ctx.cancelled,
            call_id=ctx.call_id,
            output_limit=2 * tools.bash_max_bytes,
        )
    except HostError as exc:
        return ToolResult(f"Could not start bash in the editor's terminal: {exc}", is_error=True)
    sink = _OutputSink(
        max_bytes=tools.bash_max_bytes,
        spool_dir=ctx.user.project_tool_output_dir(ctx.project.root),
        emit=lambda _t: None,
        secrets=ctx.secrets,
    )
    sink.feed(run.output.encode("utf-8"))
    sink.close()
    returncode = _returncode(run)
    result = _result(
        sink,
        ending=run.ending,
        returncode=returncode,
        timeout=limit_s,
        drained=True,
        elapsed=time.monotonic() - started,
        cwd=ctx.cwd,
    )
    if run.signal and returncode is None and not result.is_error:
        # A signal the host names in a way not known here is still no success.
        killed = f"{result.content}\n\nCommand was killed by signal {run.signal}"
        result = ToolResult(killed, True, result.truncated, result.details)
    if not run.truncated:
        return result
    note = "[The terminal kept only the end of the output; the start is lost.]\n"
    return ToolResult(note + result.content, result.is_error, True, result.details)


def _returncode(run: CommandRun) -> int | None:
    """The exit code, or minus the signal's number as subprocess reports a killed process."""
    if run.signal:
        name = run.signal.upper()
        for known in (name, f"SIG{name}"):  # "SIGKILL", "KILL"
            if known in signal.Signals.__members__:
                return -int(signal.Signals[known])
        return -int(run.signal) if run.signal.isdigit() else None
    return run.exit_code


class _Protocol(asyncio.SubprocessProtocol):
    """Feeds the output to the sink and reports the shell's exit apart from the pipe's end.

    (``asyncio.subprocess.Process.wait`` on Python 3.11 only returns once every pipe is
    closed, so a background job holding stdout would stall it until the timeout.)
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sink: _OutputSink) -> None:
        self.sink = sink
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.sink.feed(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    # The group may be gone already, or (in odd containers) not ours to signal.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop_group(pgid: int, exited: asyncio.Future[None], grace: float) -> None:
    """SIGTERM the whole group, then SIGKILL it after ``grace`` whatever answered."""
    _kill_group(pgid, signal.SIGTERM)
    await asyncio.wait({exited}, timeout=grace)
    # Killed even when the shell exited: its children may have ignored SIGTERM.
    _kill_group(pgid, signal.SIGKILL)
    await asyncio.wait({exited}, timeout=_TERM_GRACE_TIMEOUT_S)


_REDACTED = b"[redacted]"


class _Redacting:
    """A file that receives bytes with every secret replaced, even one cut in two by the
    pipe: the last (longest secret - 1) bytes wait for the next write before going out."""

    def __init__(self, out: IO[bytes], secrets: Sequence[str]) -> None:
        self._out = out
        found = {s.encode("utf-8") for s in secrets if len(s) >= 6}
        self._secrets = sorted(found, key=len, reverse=True)
        self._keep = max((len(s) for s in self._secrets), default=1) - 1
        self._carry = b""

    def write(self, data: bytes) -> None:
        if not self._secrets:
            self._out.write(data)
            return
        buf = self._carry + data
        for secret in self._secrets:
            buf = buf.replace(secret, _REDACTED)
        cut = max(0, len(buf) - self._keep)
        self._out.write(buf[:cut])
        self._carry = buf[cut:]

    def close(self) -> None:
        try:
            self._out.write(self._carry)
        finally:
            self._carry = b""
            self._out.close()


class _OutputSink:
    """Everything the command prints: streamed, a bounded tail kept, the whole spooled."""

    def __init__(
        self,
        *,
        max_bytes: int,
        spool_dir: Path,
        emit: Callable[[str], None],
        secrets: Sequence[str] = (),
    ) -> None:
        self.max_bytes = max_bytes
        self._secrets = secrets
        self.spool_dir = spool_dir
        self._emit = emit
        self.tail = bytearray()
        self.total_bytes = 0
        self.total_newlines = 0
        self.spool_path: Path | None = None
        self.spool_problem = ""
        self._spool: _Redacting | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending: list[str] = []
        self._pending_chars = 0
        self._last_emit = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self.total_newlines += data.count(b"\n")
        self.tail += data
        if self._spool is not None:
            self._spool.write(data)
        elif self.total_bytes > self.max_bytes and not self.spool_problem:
            self._open_spool()  # the tail still holds everything: nothing was dropped yet
        if len(self.tail) > 2 * self.max_bytes:
            del self.tail[: len(self.tail) - 2 * self.max_bytes]
        self._queue(self._decoder.decode(data))

    def _open_spool(self) -> None:
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="bash-", suffix=".log", dir=self.spool_dir)
            self._spool = _Redacting(os.fdopen(fd, "wb"), self._secrets)
            self._spool.write(bytes(self.tail))
            self.spool_path = Path(name)
        except OSError as exc:
            self.spool_problem = f"the full output could not be saved ({exc.strerror or exc})"

    def _queue(self, text: str) -> None:
        if not text:
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        now = time.monotonic()
        if self._pending_chars >= _EMIT_CHARS or now - self._last_emit >= _EMIT_INTERVAL_S:
            self.flush()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(_EMIT_INTERVAL_S, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending:
            text = strip_ansi("".join(self._pending))
            self._pending.clear()
            self._pending_chars = 0
            if text:
                self._emit(text)
        self._last_emit = time.monotonic()

    def close(self) -> None:
        self._queue(self._decoder.decode(b"", final=True))
        self.flush()
        if self._spool is not None:
            with contextlib.suppress(OSError):
                self._spool.close()

    def tail_text(self) -> str:
        text = self.tail.decode("utf-8", "replace")
        if self.total_bytes > len(self.tail):
            # The rolling buffer may begin inside a character or a line: start at a line.
            cut = text.find("\n")
            text = text[cut + 1 :] if cut >= 0 else text.lstrip("\ufffd")
        return strip_ansi(text)


def _result(
    sink: _OutputSink,
    *,
    ending: str,
    returncode: int | None,
    timeout: float,
    drained: bool,
    elapsed: float,
    cwd: Path,
    changed: list[str] | None = None,
) -> ToolResult:
    text = sink.tail_text()
    cut = truncate_tail(text, max_lines=10**9, max_bytes=sink.max_bytes)
    truncated = sink.total_bytes > sink.max_bytes or cut.truncated
    body = cut.text.rstrip("\n")
    notes: list[str] = []
    if truncated:
        total_lines = sink.total_newlines + (0 if sink.tail.endswith(b"\n") else 1)
        first = max(1, total_lines - cut.kept_lines + 1)
        shown = (
            f"[Output was {format_size(sink.total_bytes)} in {total_lines} lines; showing the "
            f"last {format_size(cut.kept_bytes)} (lines {first}-{total_lines})."
        )
        if sink.spool_path is not None:
            path = display_path(sink.spool_path, cwd)
            shown += (
                f" Full output saved to {path}; read it with read(path={path!r}), "
                f"offset=1 for the start.]"
            )
        else:
            shown += f" {sink.spool_problem or 'The full output was not saved.'}]"
        notes.append(shown)
    if not drained:
        notes.append(
            "[A background process still holds the output open; what it prints from now on "
            "is not captured.]"
        )
    details: dict[str, Any] = {
        "exit_code": returncode,
        "duration_s": round(elapsed, 3),
        "output_bytes": sink.total_bytes,
    }
    if sink.spool_path is not None:
        details["full_output_path"] = str(sink.spool_path)
    is_error = False
    match ending:
        case "timeout":
            is_error = True
            details["timed_out"] = True
            notes.append(
                f"Command timed out after {timeout:g} s and was stopped (its whole process "
                f"group was killed). Pass a larger timeout if it needs longer, or run it in "
                f"the background with its output sent to a file."
            )
        case "aborted":
            is_error = True
            details["aborted"] = True
            notes.append("Command aborted by the user; the output above is what it printed.")
        case _ if returncode is not None and returncode < 0:
            is_error = True
            name = _signal_name(-returncode)
            notes.append(f"Command was killed by signal {name}")
        case _ if returncode:
            is_error = True
            notes.append(f"Command exited with code {returncode}")
    if changed:
        # Named for the model (a command's changes show nowhere else) and kept for the
        # context's facts.
        details[FILES_CHANGED] = changed
        shown = ", ".join(changed[:_CHANGED_SHOWN])
        if len(changed) > _CHANGED_SHOWN:
            shown += f" (+{len(changed) - _CHANGED_SHOWN} more)"
        notes.append(f"[Files changed by this command: {shown}]")
    if not body and not notes:
        body = "(no output)"
    content = "\n\n".join(part for part in (body, "\n".join(notes)) if part)
    return ToolResult(content, is_error=is_error, truncated=truncated, details=details)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
