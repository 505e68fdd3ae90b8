"""The model worker: a child process that makes a front end's model calls through litellm.

``python -m agentsh.llm.worker`` is started by :mod:`agentsh.llm.remote`. It imports litellm at
once (the seconds that import costs are spent here, on another core, not in the UI process)
and makes one made-up call that litellm answers itself (what its first real call would load,
loaded before anyone waits for it: :func:`~agentsh.llm.env.warm_first_call`), then serves
requests read from stdin, one JSON object per line (:mod:`agentsh.llm.wire`), and
writes the answers to stdout. Each call runs the real :class:`~agentsh.llm.client.LLMClient`
(retries, error classification, redaction and cost are exactly the in-process ones) in its own
task, so a cancel ends one call and closes its HTTP stream at once. The environment litellm
reads (provider keys, base URLs, proxies) is the front end's, sent whenever it changes.

The first worker of an environment, its import and warm-up done, forks the warm worker off
itself (:mod:`agentsh.llm.warm_worker`); a worker forked from that copy starts with litellm
loaded (:func:`main` with ``warm``) and is otherwise the same.

The worker ignores SIGINT (the front end decides what Ctrl+C cancels) and ends when stdin
closes, which also happens when the front end dies. It prints nothing on stdout but protocol
lines; stderr goes to the front end, which keeps the tail for its error message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from agentsh.events import ErrorKind
from agentsh.llm import wire
from agentsh.llm.client import Completion, LLMClient, LLMError
from agentsh.llm.env import import_litellm, prepare_environment, warm_first_call
from agentsh.values import Usage

# A request line can hold a whole context (megabytes of JSON).
LINE_LIMIT = 1 << 30


class Worker:
    """Serves one front end. ``start_env``: the environment it was started with, when it
    imports litellm itself (it may then leave a warm copy of itself for the front ends that
    come after: :mod:`agentsh.llm.warm_worker`); None for a worker forked warm from that copy."""

    def __init__(self, out: BinaryIO, *, start_env: dict[str, str] | None = None) -> None:
        self._out = out
        self._start_env = start_env
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._import_error = ""
        self._loading: asyncio.Future[None] | None = None

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(wire.dumps(message))
        self._out.flush()

    def load(self) -> None:
        try:
            import_litellm()
        except Exception as exc:  # noqa: BLE001 - every call then says why it cannot run
            self._import_error = f"litellm could not be imported: {type(exc).__name__}: {exc}"
            return
        if self._start_env is None:
            return  # forked warm: all of that was loaded before the fork
        # What litellm loads on its first call, loaded now: not after the user's Enter.
        warm_first_call()
        from agentsh.llm import warm_worker

        warm_worker.start_from_worker(self._start_env)

    def _say_ready(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # the front end has gone
            self.send({"ev": "ready"})

    async def serve(self, reader: asyncio.StreamReader) -> None:
        # The import starts at once (the front end started us so that it is paid now), while
        # requests are read; each waits for it.
        self._loading = asyncio.ensure_future(asyncio.to_thread(self.load))
        # Said once, before any call's answer (the first callback of the import's future): the
        # front end tells a call that waited for the import from one that waits for the model.
        self._loading.add_done_callback(lambda _: self._say_ready())
        while line := await reader.readline():
            try:
                request = _parse(line)
            except ValueError:
                continue  # not ours to guess at; the front end only sends whole lines
            self.dispatch(request)
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def dispatch(self, request: dict[str, Any]) -> None:
        op = request.get("op")
        if op == "env":
            _replace_environment(request["env"])
            return
        call_id = int(request.get("id", 0))
        if op == "cancel":
            task = self._tasks.get(call_id)
            if task is not None:
                task.cancel()
            return
        handlers: dict[str, Callable[[int, dict[str, Any]], Any]] = {
            "stream": self._stream,
            "complete": self._complete,
            "facts": self._facts,
            "models": self._models,
            "cost": self._cost,
            "embed": self._embed,
        }
        handler = handlers.get(str(op))
        if handler is None:
            self.send(wire.failure(call_id, "internal", f"unknown request {op!r}"))
            return
        task = asyncio.ensure_future(self._run(call_id, handler, request))
        self._tasks[call_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(call_id, None))

    async def _run(
        self, call_id: int, handler: Callable[[int, dict[str, Any]], Any], request: dict[str, Any]
    ) -> None:
        try:
            if self._loading is not None:
                # Shielded: cancelling this call (Esc while litellm still loads) must not
                # cancel the import every later call waits for (they all ended unanswered).
                await asyncio.shield(self._loading)
            if self._import_error:
                raise LLMError(ErrorKind.OTHER, self._import_error)
            await handler(call_id, request)
        except asyncio.CancelledError:
            pass  # the front end stopped waiting for this call
        except LLMError as exc:
            self.send(wire.encode_error(call_id, exc))
        except Exception as exc:  # noqa: BLE001 - a bug ends this call, not the worker
            self.send(wire.failure(call_id, "internal", f"{type(exc).__name__}: {exc}"))

    # -- calls -----------------------------------------------------------------------------

    async def _stream(self, call_id: int, request: dict[str, Any]) -> None:
        client = _client(request["client"])
        stream = client.stream(
            request["messages"], request.get("tools"), max_tokens=request.get("max_tokens")
        )
        async with contextlib.aclosing(stream):  # a cancel closes the HTTP stream at once
            async for item in stream:
                self.send(wire.encode_item(call_id, item))

    async def _complete(self, call_id: int, request: dict[str, Any]) -> None:
        client = _client(request["client"])
        completion: Completion = await client.complete(
            request["messages"],
            max_tokens=request.get("max_tokens"),
            model=request.get("model"),
            on_retry=lambda note: self.send(wire.encode_item(call_id, note)),
        )
        self.send(wire.encode_item(call_id, completion))

    async def _facts(self, call_id: int, request: dict[str, Any]) -> None:
        from agentsh.llm.models import litellm_base_info

        info = await asyncio.to_thread(litellm_base_info, str(request["model"]))
        self.send({"id": call_id, "ev": "done", "value": wire.encode_info(info)})

    async def _models(self, call_id: int, request: dict[str, Any]) -> None:
        from agentsh.llm.models import litellm_known_models

        providers = {str(p) for p in request["providers"]}
        names = await asyncio.to_thread(litellm_known_models, providers)
        self.send({"id": call_id, "ev": "done", "value": names})

    async def _cost(self, call_id: int, request: dict[str, Any]) -> None:
        client = _client(request["client"])
        usage = Usage(**request["usage"])
        cost = await asyncio.to_thread(client.cost, usage, request.get("model"))
        self.send({"id": call_id, "ev": "done", "value": cost})

    async def _embed(self, call_id: int, request: dict[str, Any]) -> None:
        from agentsh.llm.embedding_call import EmbeddingCallError, embed_texts

        try:
            vectors = await asyncio.to_thread(
                embed_texts,
                str(request["model"]),
                list(request["texts"]),
                api_base=request.get("api_base"),
                timeout_s=float(request.get("timeout_s", 60.0)),
            )
        except EmbeddingCallError as exc:
            self.send(wire.failure(call_id, "embedding", str(exc)))
            return
        self.send({"id": call_id, "ev": "done", "value": vectors})


def _parse(line: bytes) -> dict[str, Any]:
    import json

    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("not a request object")
    return value


def _client(spec: dict[str, Any]) -> LLMClient:
    return LLMClient(
        str(spec["model"]),
        settings=wire.decode_settings(spec["settings"]),
        api_base=spec.get("api_base"),
        api_key=spec.get("api_key"),
        fallback_model=spec.get("fallback_model"),
    )


def _replace_environment(environ: dict[str, str]) -> None:
    """Take the front end's environment (what litellm reads at call time), keeping the
    variables that make litellm and tiktoken work offline."""
    forced = {
        name: os.environ[name]
        for name in (
            "LITELLM_LOCAL_MODEL_COST_MAP",
            "HF_HUB_OFFLINE",
            "TIKTOKEN_CACHE_DIR",
            "CUSTOM_TIKTOKEN_CACHE_DIR",
        )
        if name in os.environ
    }
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in environ.items()})
    os.environ.update(forced)


def main(*, warm: bool = False) -> None:
    """Serve the front end on stdin and stdout. ``warm``: forked by the warm worker, litellm
    already loaded and warmed up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_env = None if warm else dict(os.environ)
    prepare_environment()
    # Nothing but protocol lines on stdout: a stray print from a library goes to stderr.
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = os.fdopen(os.dup(sys.stderr.fileno()), "w")
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        asyncio.run(_serve(protocol, start_env))
    _exit()


async def _serve(protocol: BinaryIO, start_env: dict[str, str] | None) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await Worker(protocol, start_env=start_env).serve(reader)
    _exit()


def _exit() -> None:
    """Out at once, even in the middle of the litellm import (a normal exit would wait for that
    thread): the front end has gone, or closed the pipe to end us."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
