"""``--input-format stream-json``: user messages arrive on stdin, one JSON object a line.

The shape is Claude Code's: ``{"type": "user", "message": {"role": "user", "content": TEXT or
[{"type": "text", "text": ...}, ...]}}``; each message runs one turn, answered by the output
lines of that turn and a ``result``. A ``control_request`` line is answered with a
``control_response`` (:mod:`.control`); a ``control_response`` answers one of agentsh's own
requests (a ``can_use_tool`` question, :mod:`.permission_prompt`). Lines arrive while a turn
runs (an interrupt must), so a thread reads stdin and hands each line to the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

#: The end of stdin.
EOF = object()


@dataclass(frozen=True, slots=True)
class UserInput:
    text: str
    skipped: tuple[str, ...] = ()  # block types agentsh cannot take (images...), to tell


@dataclass(frozen=True, slots=True)
class ControlRequest:
    request_id: str
    subtype: str
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ControlResponse:
    """The SDK host's answer to a control request of ours (``can_use_tool``)."""

    request_id: str
    response: dict[str, Any]
    error: str = ""  # the host failed to answer (no callback, the callback raised)


@dataclass(frozen=True, slots=True)
class BadLine:
    problem: str


Message = UserInput | ControlRequest | ControlResponse | BadLine


def parse_line(line: bytes) -> Message | None:
    """One stdin line as a message; None for a blank line or one meant for nobody here."""
    if not line.strip():
        return None
    try:
        data = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return BadLine(f"not JSON ({exc}); skipped")
    if not isinstance(data, dict):
        return BadLine("not a JSON object; skipped")
    kind = data.get("type")
    if kind == "control_request":
        request = data.get("request")
        if not isinstance(request, dict):
            request = {}
        return ControlRequest(str(data.get("request_id", "")), str(request.get("subtype")), request)
    if kind == "control_response":
        return _control_response(data.get("response"))
    if kind == "keep_alive":
        return None
    if kind != "user":
        return BadLine(f"a message of type {kind!r}; only 'user' messages are read; skipped")
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return UserInput(content) if content.strip() else BadLine("an empty message; skipped")
    if not isinstance(content, list):
        return BadLine("a user message without message.content; skipped")
    texts: list[str] = []
    skipped: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif isinstance(block, dict):
            skipped.append(str(block.get("type")))
    text = "\n\n".join(t for t in texts if t)
    if not text.strip():
        return BadLine("a user message without text; skipped")
    return UserInput(text, tuple(skipped))


def _control_response(body: object) -> ControlResponse | BadLine:
    if not isinstance(body, dict) or not isinstance(body.get("request_id"), str):
        return BadLine("a control_response without response.request_id; skipped")
    if body.get("subtype") == "error":
        return ControlResponse(body["request_id"], {}, str(body.get("error") or "an error"))
    answer = body.get("response")
    return ControlResponse(body["request_id"], answer if isinstance(answer, dict) else {})


def control_response(
    request: ControlRequest, error: str = "", *, response: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The answer to ``request``: an error when ``error`` says why, else success with
    ``response`` (empty by default)."""
    answer: dict[str, Any] = {"subtype": "error" if error else "success"}
    answer["request_id"] = request.request_id
    if error:
        answer["error"] = error
    else:
        answer["response"] = response or {}
    return {"type": "control_response", "response": answer}


class LineReader:
    """Reads stdin on a daemon thread; :meth:`get` returns parsed messages, then :data:`EOF`."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        thread = threading.Thread(target=self._read, name="agentsh-stdin", daemon=True)
        thread.start()

    async def get(self) -> object:
        return await self._queue.get()

    def _read(self) -> None:
        try:
            for line in iter(self._stream.readline, b""):
                message = parse_line(line)
                if message is not None:
                    self._put(message)
        except (OSError, ValueError):
            pass  # stdin closed under us: the same as its end
        self._put(EOF)

    def _put(self, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: agentsh is exiting
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
