"""Model calls made by a child process, so litellm never loads in the front end's process.

``import litellm`` costs seconds of CPU and ~170 MB, and every streamed chunk costs ~0.5 ms of
litellm's own work. In the TUI that import and that per-chunk work would run in the process that
paints the screen. So a front end (the TUI, ``-p``, ACP) runs its model calls in one worker
process, :mod:`agentsh.llm.worker`, started on first need (or ahead of it, by :func:`prewarm`)
and shared by every client of this process: :class:`RemoteLLMClient` has :class:`LLMClient`'s
interface and behaviour (the worker runs the real client, so retries, errors, redaction, usage
and cost are the same), and only typed events cross the pipe. The worker is forked by the
user's warm worker, litellm already loaded, when one runs for this environment
(:mod:`agentsh.llm.warm_worker`), else started as a child.

The pipes are private to the two processes (the warm worker hands the worker its ends over a
socket only this user can open, then keeps none), the worker's environment is this process's
own (sent again whenever it changes), and a worker that dies fails the calls in flight with a
clear message; the next call starts a new one. Set ``AGENTSH_MODEL_WORKER=0`` to make the calls
in-process instead.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentsh.config import ModelSettings
from agentsh.errors import AgentshError
from agentsh.events import ErrorKind, ModelClientReady, ModelClientStarting, Retrying
from agentsh.llm import warm_worker, wire
from agentsh.llm.client import Completion, LLMClient, LLMError, StreamItem, scrub
from agentsh.llm.env import prepare_environment
from agentsh.llm.models import ModelInfo
from agentsh.values import Usage

if TYPE_CHECKING:
    # A worker this process started, or one the warm worker forked for it.
    WorkerProcess = subprocess.Popen[bytes] | warm_worker.ForkedWorker

_FINAL = frozenset({"done", "error", "failed", "gone"})
_STDERR_TAIL = 2000  # characters of the worker's stderr kept for the "worker stopped" message
# How long a synchronous question (model facts, cost, embeddings) may wait: a first call waits
# for the worker's litellm import, seconds on a loaded machine.
SYNC_TIMEOUT_S = 120.0
# How long the exit handler lets the shared worker end by itself before it is killed. It keeps
# nothing that a kill would lose (no file of its own, every call over by then); a worker still
# starting, or importing litellm on a loaded machine, took the whole 2 s of a plain close (a
# TUI quit at load 18: 2.5-2.9 s instead of 0.1 s).
EXIT_GRACE_S = 0.25


class ModelWorkerError(AgentshError, RuntimeError):
    """A model worker failed in a way that is not a model error (a bug, an unknown reply)."""


class _Call:
    """The answers of one request, handed from the reader thread to whoever waits."""

    def __init__(self) -> None:
        self.call_id = 0
        self.child: _Child | None = None
        self.finished = False
        # Opened before the worker had said it was ready (its litellm import still running):
        # the call is told "ready" when it is (ModelWorker._ready).
        self.starting = False

    def deliver(self, message: dict[str, Any]) -> None:
        raise NotImplementedError


class _AsyncCall(_Call):
    """Answers for a coroutine on ``loop``: one wake-up per batch of answers, not per answer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._items: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._ready = asyncio.Event()
        self._scheduled = False

    def deliver(self, message: dict[str, Any]) -> None:
        with self._lock:
            self._items.append(message)
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        with self._lock:
            self._scheduled = False
        self._ready.set()

    async def next(self) -> dict[str, Any]:
        while True:
            with self._lock:
                if self._items:
                    return self._items.popleft()
                self._ready.clear()
            await self._ready.wait()


class _SyncCall(_Call):
    """The final answer for a thread that blocks on it."""

    def __init__(self) -> None:
        super().__init__()
        self._done = threading.Event()
        self.answer: dict[str, Any] = {}

    def deliver(self, message: dict[str, Any]) -> None:
        if message.get("ev") in _FINAL:
            self.answer = message
            self._done.set()

    def wait(self, timeout: float) -> dict[str, Any]:
        if not self._done.wait(timeout):
            return {"ev": "gone", "message": f"The model worker did not answer in {timeout:.0f} s."}
        return self.answer


class _Child:
    """One worker process, and what was last sent to it. Writes to its stdin go one at a time
    under ``write_lock``, never under the worker's call table lock: a large request blocked on
    a full pipe must not stop the reader thread from draining the worker's answers."""

    def __init__(self, process: WorkerProcess, environ: dict[str, str]) -> None:
        self.process = process
        self.write_lock = threading.Lock()
        self.sent_env = environ
        self.ready = False  # the worker's litellm import is over (it said "ready")

    def write(self, data: bytes, *, environ: dict[str, str] | None = None) -> None:
        """Send ``data``, preceded by the environment when it has changed since the last send."""
        stdin = self.process.stdin
        assert stdin is not None
        with self.write_lock:
            if environ is not None and environ != self.sent_env:
                data = wire.dumps({"op": "env", "env": environ}) + data
                self.sent_env = environ
            stdin.write(data)
            stdin.flush()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


#: ``-P``: ``python -m`` would put the current folder (the project, someone else's code) first
#: on the worker's ``sys.path``, so a cloned repository's ``asyncio.py`` or ``litellm.py`` ran in
#: place of the real module the moment agentsh started its worker, trusted or not.
WORKER_COMMAND = (sys.executable, "-P", "-m", "agentsh.llm.worker")


class ModelWorker:
    """One ``python -m agentsh.llm.worker`` child and the calls in flight to it. Thread-safe."""

    def __init__(self, command: Sequence[str] | None = None) -> None:
        self._command = list(command or WORKER_COMMAND)
        self._lock = threading.RLock()  # the child and the call table; never held while writing
        self._child: _Child | None = None
        self._calls: dict[int, _Call] = {}
        self._ids = itertools.count(1)
        self._stderr: deque[str] = deque()
        self._closed = False
        self._stopping: list[WorkerProcess] = []  # stopped, not yet seen to exit

    # -- the process ---------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        child = self._child
        return child.process.pid if child is not None and child.alive else None

    def start(self) -> None:
        """Start the worker now if it is not running (it begins importing litellm at once)."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> _Child:
        child = self._child
        if child is not None and child.alive:
            return child
        if self._closed:
            raise ModelWorkerError("the model worker has been shut down")
        prepare_environment()  # the child inherits the offline, quiet litellm settings
        environ = warm_worker.worker_environment()
        child = self._child = self._warm(environ) or self._started(environ)
        self._stderr.clear()
        threading.Thread(
            target=self._read, args=(child,), name="model-worker-reader", daemon=True
        ).start()
        threading.Thread(
            target=self._read_stderr, args=(child.process,), name="model-worker-stderr", daemon=True
        ).start()
        return child

    def _warm(self, environ: dict[str, str]) -> _Child | None:
        """A worker forked by the user's warm worker, litellm already loaded; None when there
        is none for this environment, or a test gave its own command to run."""
        process = warm_worker.forked(environ) if self._command == list(WORKER_COMMAND) else None
        return None if process is None else _Child(process, {})  # env sent with the first request

    def _started(self, environ: dict[str, str]) -> _Child:
        process = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
            close_fds=True,
            # Its own session: a Ctrl+C or Ctrl+Z at the terminal is for the front end, which
            # decides what to cancel; the worker ends when its stdin closes.
            start_new_session=True,
        )
        return _Child(process, environ)

    def stop(self) -> None:
        """Ask the worker to end (close its stdin: it cancels what runs and exits) and start no
        other, without waiting: a front end that is quitting lets it exit while it closes its
        own window; :meth:`close` then waits for it."""
        with self._lock:
            self._closed = True
            child = self._child
            self._child = None
            if child is not None:
                self._stopping.append(child.process)
        if child is None:
            return
        with contextlib.suppress(OSError), child.write_lock:
            assert child.process.stdin is not None
            child.process.stdin.close()

    def close(self, timeout: float = 2.0) -> None:
        """End the worker (:meth:`stop`), then make sure: killed if not gone in ``timeout``."""
        self.stop()
        with self._lock:
            stopping, self._stopping = self._stopping, []
        for process in stopping:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout)

    # -- requests ------------------------------------------------------------------------

    def open(self, request: dict[str, Any], call: _Call) -> None:
        """Send ``request``; its answers go to ``call``."""
        with self._lock:
            child = self._ensure_started()
            call.call_id = next(self._ids)
            call.child = child
            call.starting = not child.ready
            data = wire.dumps({**request, "id": call.call_id})  # before the call is registered
            self._calls[call.call_id] = call
        # If the worker died under us, the reader thread fails this call with the reason.
        with contextlib.suppress(OSError, ValueError):
            child.write(data, environ=dict(os.environ))

    def cancel(self, call: _Call) -> None:
        """Stop waiting for ``call``; if it still runs, the worker cancels it."""
        with self._lock:
            if self._calls.pop(call.call_id, None) is None or call.finished:
                return
            child = call.child
            if child is None or child is not self._child:
                return
        with contextlib.suppress(OSError, ValueError):  # ValueError: stdin closed by close()
            child.write(wire.dumps({"op": "cancel", "id": call.call_id}))

    def ask(self, request: dict[str, Any], timeout: float = SYNC_TIMEOUT_S) -> Any:
        """A synchronous question; returns the ``done`` value or raises. Not on an event loop."""
        call = _SyncCall()
        self.open(request, call)
        answer = call.wait(timeout)
        self.cancel(call)  # nothing to do unless it timed out
        return _value(answer)

    # -- the reader threads ---------------------------------------------------------------

    def _read(self, child: _Child) -> None:
        process = child.process
        assert process.stdout is not None
        for line in process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("ev") == "ready" and "id" not in message:
                self._ready(child)
                continue
            with self._lock:
                call = self._calls.get(message.get("id", 0))
                if call is None:
                    continue  # a call nobody waits for any more (cancelled)
                if message.get("ev") in _FINAL:
                    call.finished = True
                    self._calls.pop(call.call_id, None)
            call.deliver(message)
        code = process.wait()
        with self._lock:
            if self._child is child:
                self._child = None
            orphans = [c for c in self._calls.values() if c.child is child]
            for call in orphans:
                call.finished = True
                self._calls.pop(call.call_id, None)
        reason = self._stopped_reason(code)
        for call in orphans:
            call.deliver({"id": call.call_id, "ev": "gone", "message": reason})

    def _ready(self, child: _Child) -> None:
        """The worker's import is over: the calls opened while it ran are told so (a call
        opened from now on finds ``child.ready`` set, under the same lock)."""
        with self._lock:
            child.ready = True
            waiting = [c for c in self._calls.values() if c.child is child and c.starting]
        for call in waiting:
            call.deliver({"id": call.call_id, "ev": "ready"})

    def _read_stderr(self, process: WorkerProcess) -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if not line:
                continue
            self._stderr.append(line)
            while sum(len(x) for x in self._stderr) > _STDERR_TAIL and len(self._stderr) > 1:
                self._stderr.popleft()

    def _stopped_reason(self, code: int) -> str:
        tail = " ".join(self._stderr)[-400:]
        detail = f": {scrub(tail)}" if tail else ""
        return (
            f"The model worker process stopped unexpectedly (exit code {code}){detail}. "
            "The next request starts a new one."
        )


def _error(answer: dict[str, Any]) -> Exception:
    match answer.get("ev"):
        case "error":
            return wire.decode_error(answer)
        case "gone":
            return LLMError(ErrorKind.OTHER, str(answer.get("message", "model worker stopped")))
        case "failed" if answer.get("kind") == "embedding":
            from agentsh.llm.embedding_call import EmbeddingCallError

            return EmbeddingCallError(str(answer.get("message", "")))
        case _:
            return ModelWorkerError(str(answer.get("message", f"unexpected answer {answer!r}")))


def _value(answer: dict[str, Any]) -> Any:
    if answer.get("ev") != "done":
        raise _error(answer)
    return answer.get("value")


# ---------------------------------------------------------------------------------------------
# The client


class RemoteLLMClient(LLMClient):
    """:class:`LLMClient`'s interface, with each call made by the model worker.

    Closing a stream (or cancelling the task reading it) cancels the call in the worker, which
    closes its HTTP stream at once. :meth:`cost` blocks on the worker: call it off the loop.
    """

    def __init__(
        self,
        model: str,
        *,
        settings: ModelSettings,
        api_base: str | None = None,
        api_key: str | None = None,
        worker: ModelWorker | None = None,
        fallback_model: str | None = None,
    ) -> None:
        super().__init__(
            model,
            settings=settings,
            api_base=api_base,
            api_key=api_key,
            fallback_model=fallback_model,
        )
        self._worker = worker or shared_worker()

    def __repr__(self) -> str:  # never show the key
        return f"RemoteLLMClient(model={self.model!r}, api_base={self.api_base!r})"

    def _client_spec(self) -> dict[str, Any]:
        return wire.encode_client(
            self.model, self.settings, self.api_base, self._api_key, self.fallback_model
        )

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamItem, None]:
        request = {
            "op": "stream",
            "client": self._client_spec(),
            "messages": messages,
            "tools": tools,
            "max_tokens": max_tokens,
        }
        async with contextlib.aclosing(self._exchange(request)) as items:
            async for item in items:
                if isinstance(item, Completion) and item.model == self.fallback_model:
                    # The worker fell back (--fallback-model): so does every later call.
                    self.model, self.fallback_model = item.model, None
                yield item

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        model: str | None = None,
        on_retry: Callable[[Retrying], None] | None = None,
    ) -> Completion:
        request = {
            "op": "complete",
            "client": self._client_spec(),
            "messages": messages,
            "max_tokens": max_tokens,
            "model": model,
        }
        async with contextlib.aclosing(self._exchange(request)) as items:
            async for item in items:
                if isinstance(item, Completion):
                    return item
                if on_retry is not None and isinstance(item, Retrying):
                    on_retry(item)
        raise LLMError(ErrorKind.OTHER, "the model worker ended the call without an answer")

    async def _exchange(self, request: dict[str, Any]) -> AsyncGenerator[StreamItem, None]:
        """One call in the worker: its events as they come, the completion last; the call
        is cancelled in the worker when the caller stops listening early. A call made while
        the worker still starts says so first (:class:`ModelClientStarting`), then when the
        request goes out (:class:`ModelClientReady`): a front end tells a starting client
        from a slow model."""
        call = _AsyncCall(asyncio.get_running_loop())
        self._worker.open(request, call)
        try:
            if call.starting:
                yield ModelClientStarting()
            while True:
                answer = await call.next()
                event = answer.get("ev")
                if event == "ready":
                    yield ModelClientReady()
                    continue
                if event == "done":
                    yield wire.decode_completion(answer["value"])
                    return
                if event in _FINAL:
                    raise _error(answer) from None
                yield wire.decode_event(answer)
        finally:
            self._worker.cancel(call)

    def cost(self, usage: Usage, model: str | None = None) -> float:
        request = {
            "op": "cost",
            "client": self._client_spec(),
            "usage": wire.encode_usage(usage),
            "model": model,
        }
        return float(self._worker.ask(request))


# ---------------------------------------------------------------------------------------------
# The process-wide worker

_shared: ModelWorker | None = None
_shared_lock = threading.Lock()
_in_use = False


def worker_allowed() -> bool:
    """False when ``AGENTSH_MODEL_WORKER`` is 0/false/no/off: model calls stay in-process."""
    return os.environ.get("AGENTSH_MODEL_WORKER", "1").strip().lower() not in _OFF_WORDS


_OFF_WORDS = frozenset({"0", "false", "no", "off"})


def activate(warm_worker_s: float | None = None) -> bool:
    """This process (a front end) makes its model calls through the worker, when allowed; True
    if so. Agents built afterwards use :class:`RemoteLLMClient`, and model facts and embedding
    calls go to the worker too. ``warm_worker_s``: the user's ``model.warm_worker_s``."""
    global _in_use
    if warm_worker_s is not None:
        warm_worker.configure(warm_worker_s)
    if worker_allowed():
        _in_use = True
    return in_use()


def in_use() -> bool:
    return _in_use and worker_allowed()


def shared_worker() -> ModelWorker:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ModelWorker()
            atexit.register(_shared.close, EXIT_GRACE_S)
        return _shared


def stop_shared_worker() -> None:
    """Let the shared worker, if one runs, begin to exit (:meth:`ModelWorker.stop`): the TUI
    calls this as it quits; the exit handler waits for the worker."""
    with _shared_lock:
        worker = _shared
    if worker is not None:
        worker.stop()


def prewarm() -> None:
    """Start the worker now, so litellm is loaded by the time the first call comes."""
    if in_use():
        shared_worker().start()


def model_facts(model: str) -> ModelInfo:
    """litellm's facts about ``model``: remembered on disk, else read from litellm's price list
    when that is a plain lookup (:mod:`agentsh.llm.price_list`: a first start does not wait for
    the worker's import of litellm), else asked of the worker (blocks).

    A worker that cannot answer (litellm does not import, it died) gives the facts of an
    unknown model, not remembered: the agent still comes up, and its first model call says
    what is wrong."""
    from agentsh.llm import facts_cache, price_list
    from agentsh.llm.models import unknown_model

    known = facts_cache.load(model)
    if known is not None:
        return known
    listed = price_list.lookup(model)
    if listed is not None:
        facts_cache.store(listed)
        return listed
    try:
        info = wire.decode_info(shared_worker().ask({"op": "facts", "model": model}))
    except (LLMError, ModelWorkerError):
        return unknown_model(model)
    facts_cache.store(info)
    return info


def known_models(providers: Sequence[str]) -> list[str]:
    """:func:`agentsh.llm.models.known_models`, asked of the worker (blocks); none when it
    cannot answer (the picker still takes any model string typed)."""
    try:
        names = shared_worker().ask({"op": "models", "providers": list(providers)})
    except (LLMError, ModelWorkerError):
        return []
    return [str(name) for name in names]


def embed_texts(
    model: str, texts: Sequence[str], *, api_base: str | None, timeout_s: float
) -> list[list[float]]:
    """:func:`agentsh.llm.embedding_call.embed_texts`, made by the worker (blocks)."""
    request = {
        "op": "embed",
        "model": model,
        "texts": list(texts),
        "api_base": api_base,
        "timeout_s": timeout_s,
    }
    vectors: list[list[float]] = shared_worker().ask(request, timeout=SYNC_TIMEOUT_S + timeout_s)
    return vectors
