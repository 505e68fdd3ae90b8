"""The client's lines, screened before the protocol package sees them.

The ``acp`` package reads one JSON value per line and hands it on as a message: a line that is
valid JSON but not a JSON-RPC object (``[1, 2]``, ``5``, a response whose id is an object) raised
inside its receive loop and ended ``agentsh acp`` with a traceback, every session's turn with
it; a line that is not JSON at all was dropped without an answer. A client is untrusted input
like any other, so :class:`ScreenedTransport` reads the lines itself and answers what JSON-RPC
2.0 says to answer: ``-32700`` (parse error) for a line that is not JSON, ``-32600`` (invalid
request) for a value that is not a request, a notification or a response, each with one line
on stderr; the serving goes on. Something shaped like a response is never answered (two peers
that each answered the other's bad responses would never stop); one with an unusable id is
dropped. What passes is exactly what the package accepts.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp.task import MessageSender, TaskSupervisor

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

#: How much of a bad line the log quotes.
_QUOTED_CHARS = 120


class ScreenedTransport:
    """The protocol's transport (``acp._transport.Transport``): newline-delimited JSON over
    the protocol's streams, with every line checked before it becomes a message."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_end: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._reader = reader
        self._on_end = on_end  # awaited at the end of input, before the serving stops
        self._tasks = TaskSupervisor(source="agentsh.acp.frames")
        self._sender = MessageSender(writer, self._tasks)

    async def send(self, message: dict[str, Any]) -> None:
        await self._sender.send(message)

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None at the end of input."""
        while True:
            line = await self._line()
            if not line:
                if self._on_end is not None:
                    await self._on_end()
                return None
            line = line.strip()
            if not line:
                continue
            message, answer = screened(line)
            if message is not None:
                return message
            if answer is not None:
                await self._sender.send(answer)

    async def close(self) -> None:
        await self._sender.close()
        await self._tasks.shutdown()

    async def _line(self) -> bytes:
        """One line (without a limit: a long one is read in parts), b"" at the end."""
        parts: list[bytes] = []
        while True:
            try:
                parts.append(await self._reader.readuntil(b"\n"))
                return b"".join(parts)
            except asyncio.LimitOverrunError as exc:
                parts.append(await self._reader.readexactly(exc.consumed))
            except asyncio.IncompleteReadError as exc:  # the end, maybe after a last line
                parts.append(exc.partial)
                return b"".join(parts)


def screened(line: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``line`` as a message to serve, or else the error to answer (None: answer nothing)."""
    try:
        value = json.loads(line)
    except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError
        _skipped(line, f"not JSON ({exc})")
        return None, _error(None, PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(value, dict):
        what = "a batch (not supported)" if isinstance(value, list) else "not a JSON object"
        _skipped(line, what)
        return None, _error(None, INVALID_REQUEST, f"Invalid Request: {what}")
    has_id = "id" in value
    usable_id = not has_id or _usable_id(value["id"])
    if "method" not in value:
        if has_id and usable_id and value["id"] is not None:
            # A response to one of agentsh's requests (one with neither a result nor an error
            # still ends the wait for it: the package takes it as an empty result).
            return value, None
        _skipped(line, "neither a request nor a response; not answered")
        return None, None
    if not usable_id:
        _skipped(line, "its id is not a string or a number")
        return None, _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or number")
    if not isinstance(value["method"], str) or not value["method"]:
        _skipped(line, "its method is not a string")
        answer_to = value["id"] if has_id else None
        return None, _error(answer_to, INVALID_REQUEST, "Invalid Request: method must be a string")
    return value, None


def _usable_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return value is None or isinstance(value, str | int | float)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _skipped(line: bytes, why: str) -> None:
    quoted = line[:_QUOTED_CHARS].decode("utf-8", "backslashreplace")
    more = "…" if len(line) > _QUOTED_CHARS else ""
    log.warning("a line from the client was skipped: %s: %r%s", why, quoted, more)
