"""The client's file buffers and terminals, as the :class:`~agentsh.tools.host.ToolHost` the
tools of one session use.

A client that offers ``fs.readTextFile`` shows the tools a project file as its editor holds it,
unsaved changes included, and one that offers ``fs.writeTextFile`` saves their writes through
its buffers, so the user sees them at once. A client that offers ``terminal`` runs ``bash`` in a
terminal it shows inside the tool call. What it does not offer stays local. The checks stay in
the tools (see :mod:`agentsh.tools.host`); this module only carries the bytes.

The editor is asked, never waited on for good: a read, a write or a new terminal it does
not answer within ``acp.editor_timeout_s`` (30 s) fails the call with that reason, and
``session/cancel`` (:meth:`ClientHost.abort`) withdraws every question still open, so the turn
ends when the user cancels it (an editor that never answered a read held the turn, and its
session, for good).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    ClientCapabilities,
    EnvVariable,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from agentsh.tools.host import CommandRun, HostError

#: How long a terminal gets to answer kill and release before it is left to the client.
_CLEANUP_S = 5.0
#: How long the output of a stopped (killed or cancelled) command may take to arrive: the
#: client holds it already; one still waiting for the command's pipes must not hold the turn.
_OUTPUT_AFTER_STOP_S = 2.0

log = logging.getLogger(__name__)

_T = TypeVar("_T")

TerminalShown = Callable[[str, str], Awaitable[None]]
"""(model's call id, terminal id): the terminal a call runs in, to embed in its tool call."""


class ClientHost:
    """What one session's client serves, per its capabilities."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        capabilities: ClientCapabilities | None,
        on_terminal: TerminalShown,
        *,
        answer_s: float = 30.0,
    ) -> None:
        caps = capabilities or ClientCapabilities()
        fs = caps.fs
        self._client = client
        self._session_id = session_id
        self._reads = bool(fs and fs.read_text_file)
        self._writes = bool(fs and fs.write_text_file)
        self._terminal = bool(caps.terminal)
        self._on_terminal = on_terminal
        self._answer_s = answer_s  # for a read, a write, a new terminal
        self._open: set[asyncio.Future[Any]] = set()  # questions the editor has not answered

    @property
    def reads_files(self) -> bool:
        return self._reads

    @property
    def writes_files(self) -> bool:
        return self._writes

    @property
    def runs_commands(self) -> bool:
        return self._terminal

    def abort(self) -> None:
        """Withdraw every question still open (the turn was cancelled): each fails its call."""
        for question in list(self._open):
            question.cancel()

    async def _ask(self, request: Awaitable[_T], what: str, *, unsure: str = "") -> _T:
        """The editor's answer to ``request``; :class:`HostError` saying ``what`` could not be
        done, and why, when it fails, takes longer than ``answer_s`` or is withdrawn
        (``unsure``: what may still happen after that)."""
        question = asyncio.ensure_future(request)
        self._open.add(question)
        try:
            done, _ = await asyncio.wait({question}, timeout=self._answer_s)
        finally:
            self._open.discard(question)
            if not question.done():
                question.cancel()
        if not done or question.cancelled():  # no answer in time, or withdrawn (abort)
            why = (
                f"the editor did not answer within {self._answer_s:g} s"
                if not done
                else "the turn was cancelled before the editor answered"
            )
            raise HostError(f"{what} ({why}{unsure})" if what else f"{why}{unsure}")
        exc = question.exception()
        if exc is not None:  # an error answer, a closed connection, an answer that is no answer
            raise HostError(f"{what} ({_reason(exc)})" if what else _reason(exc)) from exc
        return question.result()

    async def read_text(self, path: Path) -> str:
        response = await self._ask(
            self._client.read_text_file(session_id=self._session_id, path=str(path)),
            "the editor could not read it",
        )
        return response.content

    async def write_text(self, path: Path, text: str) -> None:
        await self._ask(
            self._client.write_text_file(session_id=self._session_id, path=str(path), content=text),
            "the editor could not write it",
            unsure="; it may still save it",
        )

    async def run_command(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        time_limit_s: float,
        cancelled: asyncio.Event,
        call_id: str,
        output_limit: int,
    ) -> CommandRun:
        client, sid = self._client, self._session_id
        created = await self._ask(
            client.create_terminal(
                session_id=sid,
                command="bash",
                args=["-c", command],
                env=[EnvVariable(name=k, value=v) for k, v in env.items()],
                cwd=str(cwd),
                output_byte_limit=output_limit,
            ),
            "",
            unsure="; it may still run the command",
        )
        terminal = created.terminal_id
        try:
            await self._on_terminal(call_id, terminal)
            ending, status = await self._wait(terminal, time_limit_s, cancelled)
            output = await self._output(terminal, ending, cancelled)
        except (RequestError, ConnectionError) as exc:
            raise HostError(f"the editor's terminal failed ({_reason(exc)})") from exc
        finally:
            await _quietly(client.release_terminal(session_id=sid, terminal_id=terminal))
        if output is None:
            return CommandRun(
                output=f"(the editor gave no output within {_OUTPUT_AFTER_STOP_S:g} s of the "
                "command being stopped)",
                exit_code=status.exit_code if status else None,
                signal=(status.signal if status else None) or "",
                ending="aborted" if cancelled.is_set() else ending,
            )
        exit_status = output.exit_status
        code = status.exit_code if status else exit_status.exit_code if exit_status else None
        sig = status.signal if status else exit_status.signal if exit_status else None
        return CommandRun(
            output=output.output,
            exit_code=code,
            signal=sig or "",
            truncated=output.truncated,
            ending=ending,
        )

    async def _output(
        self, terminal: str, ending: str, cancelled: asyncio.Event
    ) -> TerminalOutputResponse | None:
        """The terminal's output (None when it did not come in time). Once the command was
        stopped, or the user cancels while waiting, the client gets
        :data:`_OUTPUT_AFTER_STOP_S` to give it."""
        asking = asyncio.ensure_future(
            self._client.terminal_output(session_id=self._session_id, terminal_id=terminal)
        )
        try:
            if ending == "exited":
                stop = asyncio.ensure_future(cancelled.wait())
                try:
                    await asyncio.wait({asking, stop}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
            if not asking.done():
                await asyncio.wait({asking}, timeout=_OUTPUT_AFTER_STOP_S)
            return asking.result() if asking.done() else None
        finally:
            if not asking.done():
                asking.cancel()

    async def _wait(
        self, terminal: str, limit_s: float, cancelled: asyncio.Event
    ) -> tuple[str, WaitForTerminalExitResponse | None]:
        """How the command ended ("exited", "timeout", "aborted") and its exit status; a
        command that runs too long or is cancelled is killed."""
        client, sid = self._client, self._session_id
        exited = asyncio.ensure_future(
            client.wait_for_terminal_exit(session_id=sid, terminal_id=terminal)
        )
        stop = asyncio.ensure_future(cancelled.wait())
        try:
            await asyncio.wait({exited, stop}, timeout=limit_s, return_when=asyncio.FIRST_COMPLETED)
            if exited.done():
                return "exited", exited.result()
            ending = "aborted" if stop.done() else "timeout"
            await _quietly(client.kill_terminal(session_id=sid, terminal_id=terminal))
            done, _ = await asyncio.wait({exited}, timeout=_CLEANUP_S)
            status = exited.result() if exited in done and not exited.exception() else None
            return ending, status
        finally:
            stop.cancel()
            if not exited.done():
                exited.cancel()


async def _quietly(call: Awaitable[Any]) -> None:
    """A clean-up request the client may fail or never answer; it must not hold the turn."""
    try:
        await asyncio.wait_for(call, _CLEANUP_S)
    except (RequestError, ConnectionError, TimeoutError) as exc:
        log.warning("terminal clean-up: %s", _reason(exc))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - the client's bug must not end the turn
        with contextlib.suppress(Exception):
            log.warning("terminal clean-up failed: %r", exc)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return str(exc) or f"error {exc.code}"
    if isinstance(exc, TimeoutError):
        return "no answer"
    return str(exc) or type(exc).__name__
