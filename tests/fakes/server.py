"""A scripted OpenAI-compatible chat server for tests: real HTTP, replies from a queue.

It plays the provider for every test that needs one. A :class:`ScriptedServer` binds a stdlib
``ThreadingHTTPServer`` to 127.0.0.1 on a free port and answers ``POST /v1/chat/completions``
from a queue of replies that the test scripts up front, streaming (SSE chunks, tool calls as
deltas, a usage chunk when ``stream_options.include_usage`` is set, ``data: [DONE]``) or as one
JSON body. It records every request (parsed body and headers) so a test can assert what agentsh
sent, notices when a client hangs up in the middle of a stream, and answers a clear 500 when the
script runs out. It also speaks the Anthropic Messages API (``POST /v1/messages``, with a
simulated prompt cache: :mod:`tests.fakes.anthropic`) from the same script, for a model string
like ``anthropic/claude-...`` pointed at it, and hands out an OAuth token (:data:`TOKEN`) at any
``POST .../token``, so a Google service account can point its ``token_uri`` here. The same
server runs as a process for end-to-end tests::

    python -m tests.fakes.server --script replies.json [--port 0] [--log requests.jsonl]

prints ``PORT=<n>`` as its first line on stdout and serves until killed. The script file is a
JSON list of replies, each one of::

    "plain text"                                   a text reply
    {"text": "...", "thinking": "...",             text (optional reasoning first) and/or tool
     "tool_calls": [{"name": "bash",               calls; arguments may be an object or a raw
                     "arguments": {"cmd": "ls"},   string (sent as-is, even if not JSON)
                     "id": "call_1"}],
     "finish_reason": "stop", "delay": 0.05,       per-chunk delay in seconds (slow streams)
     "usage": {"prompt_tokens": 10, "completion_tokens": 5},
     "no_usage": true,                             no usage chunk even when asked (some local
                                                   servers and proxies)
     "stall": 5.0}                                 seconds before the status line (a provider
                                                   that takes the request and says nothing)
    {"error": {"status": 429, "message": "...",    an HTTP error; "body" replaces the JSON body,
               "retry_after": "2", "code": "..."}} "retry_after" sets the Retry-After header
    {"overflow": true}                             OpenAI's 400 context_length_exceeded error
    {"hangup": true, "after_chunks": 3}            close the connection mid-stream (0: at once;
                                                   "opened": true starts the stream first)

Text is cut into pieces of 1-5 word-ish tokens with a seeded random generator, so streams are
irregular but reproducible. Usage, unless scripted, is chars/4 of the request and of the reply.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

from tests.fakes import anthropic

#: the access token ``POST .../token`` hands out
TOKEN = "ya29.agentsh-test-token"

# ---------------------------------------------------------------------------------------------
# Replies


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call of a scripted reply. ``arguments`` as a str is sent verbatim."""

    name: str
    arguments: str | Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful reply: optional reasoning, text, tool calls."""

    text: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    thinking: str = ""
    finish_reason: str = ""  # default: "tool_calls" when there are calls, else "stop"
    delay_s: float = 0.0  # sleep before each streamed chunk
    usage: Mapping[str, int] | None = None  # prompt_tokens / completion_tokens override
    no_usage: bool = False  # no usage chunk even when ``stream_options.include_usage`` asks
    stall_s: float = 0.0  # wait before the status line: no headers, no byte, for this long
    # Most token-ish units a streamed piece holds. Providers stream 1-5; a test that only needs
    # a long reply's length (not its streaming) sends it in fewer chunks, as each costs litellm
    # ~0.5-1 ms.
    piece_units: int = 5

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error. ``body`` (dict or str) replaces the OpenAI-style error object."""

    status: int
    message: str = "scripted error"
    type: str = "server_error"
    code: str | None = None
    body: Mapping[str, Any] | str | None = None
    retry_after: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body_bytes(self) -> bytes:
        if isinstance(self.body, str):
            return self.body.encode()
        payload = (
            dict(self.body)
            if self.body is not None
            else {
                "error": {
                    "message": self.message,
                    "type": self.type,
                    "param": None,
                    "code": self.code,
                }
            }
        )
        return json.dumps(payload).encode()


@dataclass(frozen=True, slots=True)
class Hangup:
    """Close the connection: at once (``after_chunks=0``) or after that many stream chunks.
    ``opened``: answer 200 and start the event stream before closing, as a provider whose
    connection drops before the first token does."""

    after_chunks: int = 0
    text: str = "partial reply that never finishes"
    opened: bool = False


def overflow_error(tokens: int = 200_000, window: int = 128_000) -> ErrorReply:
    """OpenAI's own context-overflow error (400, code context_length_exceeded)."""
    return ErrorReply(
        status=400,
        type="invalid_request_error",
        code="context_length_exceeded",
        message=(
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages."
        ),
    )


def text(value: str, **kwargs: Any) -> Reply:
    return Reply(text=value, **kwargs)


def tool_call(name: str, arguments: str | Mapping[str, Any] | None = None, id: str = "") -> Reply:
    return Reply(tool_calls=(ToolCallSpec(name, arguments if arguments is not None else {}, id),))


def tool_calls(*calls: ToolCallSpec | tuple[str, Any], text: str = "") -> Reply:
    specs = tuple(c if isinstance(c, ToolCallSpec) else ToolCallSpec(c[0], c[1]) for c in calls)
    return Reply(text=text, tool_calls=specs)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What a client sent: the path, lower-cased headers and the parsed JSON body."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    received_s: float = field(default_factory=time.monotonic)  # when it arrived (monotonic)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def anthropic(self) -> bool:
        """A request to the Anthropic Messages API (``/v1/messages``)."""
        return self.path.split("?")[0].rstrip("/").endswith("/messages")

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "time": time.time(),  # when it was logged (wall clock: other processes compare)
        }


Factory = Callable[[RecordedRequest], "AnyReply | str | Mapping[str, Any]"]
AnyReply = Reply | ErrorReply | Hangup
Scriptable = AnyReply | str | Mapping[str, Any] | Factory


def reply_from_json(item: Any) -> AnyReply:
    """Parse one reply of the script-file format (see the module docstring)."""
    if isinstance(item, str):
        return Reply(text=item)
    if not isinstance(item, Mapping):
        raise ValueError(f"a scripted reply must be a string or an object, got {item!r}")
    if item.get("overflow"):
        return overflow_error()
    if item.get("hangup"):
        return Hangup(
            after_chunks=int(item.get("after_chunks", 0)), opened=bool(item.get("opened", False))
        )
    if "error" in item:
        err = item["error"]
        if not isinstance(err, Mapping):
            raise ValueError(f"'error' must be an object, got {err!r}")
        retry_after = err.get("retry_after")
        return ErrorReply(
            status=int(err.get("status", 500)),
            message=str(err.get("message", "scripted error")),
            type=str(err.get("type", "server_error")),
            code=err.get("code"),
            body=err.get("body"),
            retry_after=None if retry_after is None else str(retry_after),
        )
    calls = tuple(
        ToolCallSpec(name=str(c["name"]), arguments=c.get("arguments", {}), id=str(c.get("id", "")))
        for c in item.get("tool_calls", ())
    )
    return Reply(
        text=str(item.get("text", "")),
        tool_calls=calls,
        thinking=str(item.get("thinking", "")),
        finish_reason=str(item.get("finish_reason", "")),
        delay_s=float(item.get("delay", 0.0)),
        usage=item.get("usage"),
        no_usage=bool(item.get("no_usage", False)),
        stall_s=float(item.get("stall", 0.0)),
    )


def _coerce(item: Scriptable) -> AnyReply | Factory:
    if isinstance(item, Reply | ErrorReply | Hangup):
        return item
    if isinstance(item, str | Mapping):
        return reply_from_json(item)
    if callable(item):
        return item
    raise TypeError(f"cannot script {item!r}")


# ---------------------------------------------------------------------------------------------
# Streaming helpers

_TOKENISH = re.compile(r"\s*\S{1,4}|\s+")


def split_pieces(value: str, rng: random.Random, most: int = 5) -> list[str]:
    """Cut text into pieces of 1 to ``most`` token-ish units (up to 4 characters each)."""
    units = _TOKENISH.findall(value)
    pieces: list[str] = []
    i = 0
    while i < len(units):
        n = rng.randint(1, most)
        pieces.append("".join(units[i : i + n]))
        i += n
    return pieces


def _estimate(chars: int) -> int:
    return max(1, (chars + 3) // 4) if chars else 0


class ClientGone(Exception):
    """The client closed the connection while the server was still streaming."""


# ---------------------------------------------------------------------------------------------
# The server


class ScriptedServer:
    """A running scripted server. Use as a context manager or call start()/stop()."""

    def __init__(self, *, seed: int = 0, model: str = "test-model", log: TextIO | None = None):
        self._queue: deque[AnyReply | Factory] = deque()
        self._lock = threading.Lock()
        self._seed = seed
        self._served = 0
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.prompt_cache = anthropic.PromptCache()  # for /v1/messages
        self.disconnects = 0  # streams the client abandoned before the end
        self.disconnected = threading.Event()
        self._log = log
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, port: int = 0) -> ScriptedServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self if self._httpd is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ------------------------------------------------------------------------
    def script(self, *replies: Scriptable) -> ScriptedServer:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self._queue.extend(_coerce(r) for r in replies)
        return self

    def drop_pending(self) -> None:
        """Forget the replies not asked for (a test whose turn was cancelled), so the next
        test sharing this server gets its own."""
        with self._lock:
            self._queue.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def wait_for_disconnect(self, timeout: float = 5.0) -> bool:
        return self.disconnected.wait(timeout)

    # -- internals ------------------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
            if self._log is not None:
                self._log.write(json.dumps(request.to_json()) + "\n")
                self._log.flush()
        return number

    def _next(self, request: RecordedRequest) -> AnyReply | None:
        with self._lock:
            item = self._queue.popleft() if self._queue else None
            self._served += 1
        if item is None:
            return None
        if isinstance(item, Reply | ErrorReply | Hangup):
            return item
        produced = item(request)
        return (
            produced
            if isinstance(produced, Reply | ErrorReply | Hangup)
            else _coerce_reply(produced)
        )

    def _rng(self) -> random.Random:
        with self._lock:
            return random.Random(self._seed * 1_000_003 + self._served)

    def _note_disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()


def _coerce_reply(item: Any) -> AnyReply:
    coerced = _coerce(item)
    if not isinstance(coerced, Reply | ErrorReply | Hangup):
        raise TypeError(f"a reply factory returned {item!r}")
    return coerced


def _make_handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else {}
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            request = RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            number = server._record(request)
            if self.path.split("?")[0].rstrip("/").endswith("/token"):
                # An OAuth token endpoint (a Google service account's token_uri): Vertex AI
                # requests carry the token it hands out.
                self._json(200, {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"})
                return
            if not request.anthropic and not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                reply = server._next(request)
            except Exception as exc:  # noqa: BLE001 - a broken factory is a test bug: say it loudly
                self._json(500, {"error": {"message": f"scripted server: factory failed: {exc!r}"}})
                return
            if reply is None:
                self._json(
                    500,
                    {
                        "error": {
                            "message": f"scripted server: script exhausted (request #{number} "
                            "had no reply scripted)",
                            "type": "server_error",
                            "code": "script_exhausted",
                        }
                    },
                )
                return
            try:
                self._answer(request, reply)
            except (ClientGone, BrokenPipeError, ConnectionResetError):
                server._note_disconnect()

        # -- replies ---------------------------------------------------------------------
        def _answer(self, request: RecordedRequest, reply: AnyReply) -> None:
            if isinstance(reply, Reply) and reply.stall_s > 0:
                self._wait_watching_client(reply.stall_s)
            match reply:
                case ErrorReply():
                    headers = dict(reply.headers)
                    if reply.retry_after is not None:
                        headers["Retry-After"] = reply.retry_after
                    ctype = "text/plain" if isinstance(reply.body, str) else "application/json"
                    self._send(reply.status, reply.body_bytes(), ctype, headers)
                case Hangup(after_chunks=0, opened=False):
                    self._hang_up()
                case Hangup():
                    self._start_stream()
                    rng = server._rng()
                    for i, piece in enumerate(split_pieces(reply.text * 10, rng)):
                        if i >= reply.after_chunks:
                            break
                        self._event(self._chunk({"content": piece}))
                    self._hang_up()
                case Reply() if request.anthropic:
                    self._anthropic(request, reply)
                case Reply() if request.stream:
                    self._stream(request, reply)
                case Reply():
                    self._json(200, self._full(request, reply))

        def _anthropic(self, request: RecordedRequest, reply: Reply) -> None:
            """The Messages API answer, its usage from the simulated prompt cache."""
            body = request.body if isinstance(request.body, dict) else {}
            usage = server.prompt_cache.usage(body)
            if reply.usage:
                usage["input_tokens"] = int(reply.usage.get("prompt_tokens", usage["input_tokens"]))
            out_chars = len(reply.text) + sum(
                len(c.name) + len(c.arguments_text()) for c in reply.tool_calls
            )
            output = int((reply.usage or {}).get("completion_tokens", _estimate(out_chars)))
            stop = "tool_use" if reply.tool_calls else "end_turn"
            rng = server._rng()
            ids = [
                c.id or f"toolu_{i}_{rng.randrange(16**6):06x}"
                for i, c in enumerate(reply.tool_calls)
            ]
            if not request.stream:
                calls = [
                    (i, c.name, json.loads(c.arguments_text() or "{}"))
                    for i, c in zip(ids, reply.tool_calls, strict=True)
                ]
                message = anthropic.message_json(
                    server.model, reply.text, calls, stop, {**usage, "output_tokens": output}
                )
                self._json(200, message)
                return
            self._start_stream()
            parts = [
                (i, c.name, split_pieces(c.arguments_text(), rng))
                for i, c in zip(ids, reply.tool_calls, strict=True)
            ]
            events = anthropic.stream_events(
                server.model,
                split_pieces(reply.text, rng, reply.piece_units),
                parts,
                stop,
                usage,
                output,
            )
            for name, data in events:
                if reply.delay_s > 0:
                    self._wait_watching_client(reply.delay_s)
                self._raw(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

        def _hang_up(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

        def _usage(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
            body = request.body if isinstance(request.body, dict) else {}
            sent = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
            out_chars = len(reply.text) + len(reply.thinking)
            out_chars += sum(len(c.name) + len(c.arguments_text()) for c in reply.tool_calls)
            prompt = _estimate(len(sent))
            completion = _estimate(out_chars)
            if reply.usage:
                prompt = int(reply.usage.get("prompt_tokens", prompt))
                completion = int(reply.usage.get("completion_tokens", completion))
            usage: dict[str, Any] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            if reply.usage and "cached_tokens" in reply.usage:
                usage["prompt_tokens_details"] = {"cached_tokens": reply.usage["cached_tokens"]}
            return usage

        def _full(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.thinking:
                message["reasoning_content"] = reply.thinking
            if reply.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": c.id or f"call_{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments_text()},
                    }
                    for i, c in enumerate(reply.tool_calls)
                ]
            return {
                "id": "chatcmpl-scripted",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": server.model,
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
                "usage": self._usage(request, reply),
            }

        def _chunk(
            self, delta: dict[str, Any], finish: str | None = None, usage: Any = None
        ) -> dict[str, Any]:
            chunk: dict[str, Any] = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": server.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage is not None:
                chunk["choices"] = []
                chunk["usage"] = usage
            return chunk

        def _stream(self, request: RecordedRequest, reply: Reply) -> None:
            rng = server._rng()
            self._start_stream()
            delay = reply.delay_s
            self._event(self._chunk({"role": "assistant", "content": ""}), delay)
            for piece in split_pieces(reply.thinking, rng):
                self._event(self._chunk({"reasoning_content": piece}), delay)
            for piece in split_pieces(reply.text, rng, reply.piece_units):
                self._event(self._chunk({"content": piece}), delay)
            for index, call in enumerate(reply.tool_calls):
                head = {
                    "index": index,
                    "id": call.id or f"call_{index}_{rng.randrange(16**6):06x}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
                self._event(self._chunk({"tool_calls": [head]}), delay)
                for piece in split_pieces(call.arguments_text(), rng):
                    fragment = {"index": index, "function": {"arguments": piece}}
                    self._event(self._chunk({"tool_calls": [fragment]}), delay)
            self._event(self._chunk({}, finish=reply.finish), delay)
            options = request.body.get("stream_options") if isinstance(request.body, dict) else None
            if isinstance(options, dict) and options.get("include_usage") and not reply.no_usage:
                self._event(self._chunk({}, usage=self._usage(request, reply)))
            self._raw(b"data: [DONE]\n\n")

        def _start_stream(self) -> None:
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()

        def _event(self, payload: dict[str, Any], delay: float = 0.0) -> None:
            if delay > 0:
                self._wait_watching_client(delay)
            self._raw(b"data: " + json.dumps(payload).encode() + b"\n\n")

        def _wait_watching_client(self, delay: float) -> None:
            """Sleep ``delay`` seconds, but notice at once if the client hangs up."""
            deadline = time.monotonic() + delay
            while (left := deadline - time.monotonic()) > 0:
                readable, _, _ = select.select([self.connection], [], [], left)
                if readable:
                    try:
                        data = self.connection.recv(1, socket.MSG_PEEK)
                    except OSError as exc:
                        raise ClientGone() from exc
                    if not data:
                        raise ClientGone()
                    time.sleep(min(left, 0.01))  # stray bytes: keep waiting, don't spin

        def _raw(self, data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json", {})

        def _send(self, status: int, data: bytes, ctype: str, headers: Mapping[str, str]) -> None:
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler


@contextlib.contextmanager
def running(*replies: Scriptable, seed: int = 0) -> Iterator[ScriptedServer]:
    """A started server with ``replies`` queued; stopped on exit."""
    server = ScriptedServer(seed=seed).start()
    try:
        server.script(*replies)
        yield server
    finally:
        server.stop()


def load_script(path: Path) -> list[AnyReply]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: the script must be a JSON list of replies")
    return [reply_from_json(item) for item in data]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.server", description=__doc__)
    parser.add_argument("--script", type=Path, required=True, help="JSON list of replies")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, help="append each request as one JSON line")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        replies = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"scripted server: {exc}", file=sys.stderr)
        return 2
    log = args.log.open("a", encoding="utf-8") if args.log else None
    server = ScriptedServer(seed=args.seed, log=log).start(args.port)
    server.script(*replies)
    print(f"PORT={server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if log is not None:
            log.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
