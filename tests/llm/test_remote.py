"""Model calls made by the model worker process behave as the in-process client's do.

One worker serves the module (its litellm import costs seconds); the test that kills a worker
uses its own. Every call goes to the scripted server over real HTTP from the worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import ModelSettings
from agentsh.events import (
    ErrorKind,
    ModelClientReady,
    ModelClientStarting,
    Retrying,
    TextDelta,
    TextEnded,
    ToolCallDelta,
)
from agentsh.llm import facts_cache, remote
from agentsh.llm.client import Completion, LLMError
from agentsh.llm.models import ModelInfo
from agentsh.llm.remote import ModelWorker, RemoteLLMClient
from agentsh.session.entries import StopReason, Usage
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ErrorReply, Reply, ScriptedServer, ToolCallSpec

USER = [{"role": "user", "content": "hello"}]
FAST: dict[str, Any] = {
    "retry_base_delay_s": 0.01,
    "retry_max_delay_s": 0.05,
    "request_timeout_s": 30.0,
}


@pytest.fixture(scope="module")
def worker() -> Iterator[ModelWorker]:
    w = ModelWorker()
    w.start()
    yield w
    w.close()


def client(server: ScriptedServer, worker: ModelWorker, **settings: object) -> RemoteLLMClient:
    return RemoteLLMClient(
        TEST_MODEL,
        settings=ModelSettings(**(FAST | settings)),
        api_base=server.base_url,
        api_key=FAKE_KEY,
        worker=worker,
    )


async def _items(remote_client: RemoteLLMClient) -> list[object]:
    return [item async for item in remote_client.stream(USER)]


@pytest.mark.asyncio
async def test_a_streamed_reply_with_tool_calls_and_usage(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    scripted_server.script(
        Reply(
            text="Let me look. ",
            thinking="first, think",
            tool_calls=(ToolCallSpec("bash", {"command": "ls -la"}, id="call_1"),),
            usage={"prompt_tokens": 120, "completion_tokens": 30},
        )
    )
    items = await _items(client(scripted_server, worker))
    completion = items[-1]
    assert isinstance(completion, Completion)
    assert completion.text == "Let me look. "
    assert completion.thinking == "first, think"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in completion.tool_calls] == [
        ("call_1", "bash", {"command": "ls -la"})
    ]
    assert completion.stop_reason is StopReason.TOOL_CALLS
    assert completion.usage.input_tokens == 120 and completion.usage.output_tokens == 30
    assert "".join(i.text for i in items if isinstance(i, TextDelta)) == "Let me look. "
    assert any(isinstance(i, ToolCallDelta) for i in items)
    assert items[-2] == TextEnded("tool_calls")  # the finish reason, before the usage
    # The request really came from the worker, with the key it was given.
    assert scripted_server.requests[-1].headers["authorization"] == f"Bearer {FAKE_KEY}"


@pytest.mark.asyncio
async def test_errors_keep_their_kind_and_never_show_the_key(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    scripted_server.script(ErrorReply(status=401, message=f"bad key {FAKE_KEY}"))
    with pytest.raises(LLMError) as caught:
        await _items(client(scripted_server, worker))
    assert caught.value.kind is ErrorKind.AUTH
    assert FAKE_KEY not in caught.value.message and FAKE_KEY not in str(caught.value)
    assert "OPENAI_API_KEY" in caught.value.message


@pytest.mark.asyncio
async def test_retries_are_announced_then_the_reply_comes(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    scripted_server.script(ErrorReply(status=503, message="busy"), Reply(text="fine"))
    items = await _items(client(scripted_server, worker))
    notes = [i for i in items if isinstance(i, Retrying)]
    assert len(notes) == 1 and notes[0].attempt == 1 and "server error" in notes[0].reason
    completion = items[-1]
    assert isinstance(completion, Completion) and completion.text == "fine"


@pytest.mark.asyncio
async def test_complete_reports_retries_and_returns_the_whole_reply(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    scripted_server.script(ErrorReply(status=429, message="slow down"), Reply(text="summary"))
    notes: list[Retrying] = []
    completion = await client(scripted_server, worker).complete(USER, on_retry=notes.append)
    assert completion.text == "summary"
    assert [n.attempt for n in notes] == [1]


@pytest.mark.asyncio
async def test_cancelling_closes_the_http_stream_in_the_worker(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    scripted_server.script(Reply(text="word " * 400, delay_s=0.05))  # ~20 s if read to the end
    first = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        async for item in client(scripted_server, worker).stream(USER):
            if isinstance(item, TextDelta):
                received.append(item.text)
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(scripted_server.wait_for_disconnect, 5.0)
    assert 0 < len(received) < 100


@pytest.mark.asyncio
async def test_a_large_request_while_a_long_reply_streams_does_not_block_either(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    # Both pipes fill at once: the request is far larger than a pipe's buffer, the reply
    # arrives in one burst. Writing must never stop the answers from being read.
    long_reply = "chunk of text " * 6_000
    scripted_server.script(Reply(text=long_reply), Reply(text="read it"))
    big = [{"role": "user", "content": "x" * 1_000_000}]
    remote_client = client(scripted_server, worker)

    async def first() -> str:
        parts = [i.text async for i in remote_client.stream(USER) if isinstance(i, TextDelta)]
        return "".join(parts)

    async def second() -> Completion:
        return await remote_client.complete(big)

    reply, completion = await asyncio.wait_for(asyncio.gather(first(), second()), 120)
    # The server answers in the order the requests reach it, which a loaded machine may swap.
    assert sorted([reply, completion.text]) == sorted([long_reply, "read it"])


@pytest.mark.asyncio
async def test_the_worker_sees_environment_changes(
    scripted_server: ScriptedServer, worker: ModelWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.script(Reply(text="one"), Reply(text="two"))
    keyless = RemoteLLMClient(
        TEST_MODEL, settings=ModelSettings(**FAST), api_base=scripted_server.base_url, worker=worker
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-first-key-0001")
    await _items(keyless)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-second-key-0002")
    await _items(keyless)
    sent = [r.headers["authorization"] for r in scripted_server.requests[-2:]]
    assert sent == ["Bearer sk-test-first-key-0001", "Bearer sk-test-second-key-0002"]


@pytest.mark.asyncio
async def test_cost_and_model_facts_come_from_the_worker(
    scripted_server: ScriptedServer, worker: ModelWorker
) -> None:
    priced = RemoteLLMClient("openai/gpt-4o", settings=ModelSettings(**FAST), worker=worker)
    cost = await asyncio.to_thread(priced.cost, Usage(input_tokens=1_000_000))
    assert cost > 0
    value = await asyncio.to_thread(worker.ask, {"op": "facts", "model": "openai/gpt-4o"})
    assert value["window"] >= 128_000 and value["known"] is True


@pytest.mark.asyncio
async def test_a_worker_that_dies_fails_the_call_in_flight_and_the_next_call_starts_another(
    scripted_server: ScriptedServer,
) -> None:
    own = ModelWorker()
    try:
        scripted_server.script(Reply(text="word " * 400, delay_s=0.05), Reply(text="again"))
        first = asyncio.Event()
        outcome: list[LLMError] = []

        async def consume() -> None:
            try:
                async for item in client(scripted_server, own).stream(USER):
                    if isinstance(item, TextDelta):
                        first.set()
            except LLMError as exc:
                outcome.append(exc)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 120)
        dead = own.pid
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        await asyncio.wait_for(task, 30)
        assert outcome and outcome[0].kind is ErrorKind.OTHER
        assert "model worker process stopped unexpectedly" in str(outcome[0])
        items = await asyncio.wait_for(_items(client(scripted_server, own)), 120)
        completion = items[-1]
        assert isinstance(completion, Completion) and completion.text == "again"
        assert own.pid not in (None, dead)
    finally:
        own.close()


def test_a_worker_ends_when_its_front_end_closes_the_pipe() -> None:
    own = ModelWorker()
    own.start()
    pid = own.pid
    assert pid is not None
    started = time.monotonic()
    own.close(60.0)  # closes the pipe, waits up to 60 s before a kill
    assert time.monotonic() - started < 20  # at once, even in the middle of the litellm import
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert not Path(f"/proc/{pid}").exists()


def test_a_stopped_worker_exits_by_itself_and_no_other_starts() -> None:
    """A quitting TUI stops its worker as the quit begins, and the exit handler's close waits
    for it only then: the worker's exit runs beside the window's closing."""
    own = ModelWorker()
    own.start()
    pid = own.pid
    assert pid is not None
    own.stop()  # returns at once
    with pytest.raises(remote.ModelWorkerError, match="shut down"):
        own.start()  # a late call does not start another
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(pid) in ("Z", "")  # gone without close()'s wait, a zombie until reaped
    own.close(60.0)  # reaps it
    assert not Path(f"/proc/{pid}").exists()


_EXITING_WITH_A_STUCK_WORKER = """
import atexit, sys, time
# Registered first, so it runs last: once the worker's exit handler has returned.
atexit.register(lambda: print(time.monotonic(), flush=True))
from agentsh.llm import remote
worker = remote.shared_worker()
worker._command = [sys.executable, "-c", "import time; time.sleep(60)"]  # never reads stdin
worker.start()
print(worker.pid, time.monotonic(), flush=True)
"""


def test_the_exit_handler_kills_a_worker_that_does_not_end_at_once() -> None:
    """A worker still starting (or importing litellm on a loaded machine) does not read its
    closed stdin for seconds; the process that quits waits a moment for it, not 2 s."""
    process = subprocess.Popen(
        [sys.executable, "-c", _EXITING_WITH_A_STUCK_WORKER],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    out, _ = process.communicate(timeout=60)
    started, closed = out.splitlines()
    pid, began = started.split()
    assert float(closed) - float(began) < remote.EXIT_GRACE_S + 1.0  # was 2 s and more
    assert _state(int(pid)) in ("Z", "")  # killed


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_model_facts_are_remembered_on_disk_for_this_litellm(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    info = ModelInfo("openai/some-model", 200_000, 8_192, 1e-6, 2e-6, True)
    assert facts_cache.load(info.model, path) is None
    facts_cache.store(info, path)
    assert facts_cache.load(info.model, path) == info
    data = json.loads(path.read_text())
    data["stamp"] = "another litellm"
    path.write_text(json.dumps(data))
    assert facts_cache.load(info.model, path) is None  # a new litellm may know better


def test_a_front_end_turn_never_imports_litellm(
    scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    scripted_server.script(Reply(text="the answer"))
    code = (
        "import sys\n"
        "from agentsh.cli import main\n"
        f"code = main(['-p', 'hi', '-m', {TEST_MODEL!r}, '--api-base', "
        f"{scripted_server.base_url!r}])\n"
        "print('litellm' in sys.modules, code, file=sys.stderr)\n"
    )
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY, AGENTSH_HOME=str(agentsh_home))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert "the answer" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False 0", done.stderr


def test_only_a_front_end_that_asks_uses_the_worker_and_it_can_be_switched_off(
    project: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh.agent_assembly import build_agent
    from agentsh.config import load_environment
    from agentsh.session.session import Session

    env = load_environment(project)

    def llm() -> object:
        return build_agent(env, Session.create(None, project), model=TEST_MODEL, cwd=project).llm

    monkeypatch.setattr(remote, "_in_use", False)
    assert not isinstance(llm(), RemoteLLMClient)
    assert remote.activate()
    assert isinstance(llm(), RemoteLLMClient)
    monkeypatch.setenv("AGENTSH_MODEL_WORKER", "0")
    assert not remote.activate() and not isinstance(llm(), RemoteLLMClient)


def test_the_model_list_comes_from_the_worker(
    worker: ModelWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh.llm import models

    monkeypatch.setattr(remote, "_in_use", True)
    monkeypatch.setattr(remote, "_shared", worker)

    def not_here(wanted: set[str]) -> list[str]:
        raise AssertionError("the front end read litellm's map itself")

    monkeypatch.setattr(models, "litellm_known_models", not_here)
    names = models.known_models({"openai"})
    assert "openai/gpt-4o" in names and all(n.startswith("openai/") for n in names)


def test_a_worker_that_cannot_answer_gives_unknown_facts_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = ModelWorker(
        [sys.executable, "-c", "import sys; print('no litellm here', file=sys.stderr); sys.exit(3)"]
    )
    monkeypatch.setattr(remote, "_shared", broken)
    try:
        # A model the price list does not answer by itself (agentsh.llm.price_list).
        info = remote.model_facts("openai/not-in-the-price-list")
        assert info.known is False and info.model == "openai/not-in-the-price-list"
        assert (
            facts_cache.load("openai/not-in-the-price-list") is None
        )  # not remembered: the next start asks again
        assert remote.known_models(["openai"]) == []
    finally:
        broken.close()


@pytest.mark.asyncio
async def test_a_call_cancelled_while_litellm_loads_leaves_the_worker_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Esc during the worker's litellm import (seconds on a loaded machine: 26 s at load 8)
    cancelled the import's shared future with the call, so every later call ended silently and
    the TUI showed "waiting for the model" forever. The import is the worker's, not the call's."""
    import io
    import threading

    from agentsh.llm import worker as worker_module

    release = threading.Event()
    monkeypatch.setattr(worker_module, "import_litellm", lambda: release.wait(10))
    out = io.BytesIO()
    w = worker_module.Worker(out)

    async def models(call_id: int, _request: dict[str, Any]) -> None:
        w.send({"id": call_id, "ev": "done", "value": ["m"]})

    monkeypatch.setattr(w, "_models", models)
    reader = asyncio.StreamReader()
    serving = asyncio.create_task(w.serve(reader))
    reader.feed_data(b'{"op": "models", "id": 1, "providers": []}\n')
    await asyncio.sleep(0.05)
    reader.feed_data(b'{"op": "cancel", "id": 1}\n')
    await asyncio.sleep(0.05)
    reader.feed_data(b'{"op": "models", "id": 2, "providers": []}\n')
    await asyncio.sleep(0.05)
    release.set()
    for _ in range(200):
        if b'"id":2' in out.getvalue():
            break
        await asyncio.sleep(0.01)
    reader.feed_eof()
    await asyncio.wait_for(serving, 5)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    # "ready" (the import is over) comes once, unasked, before any call's answer.
    assert answers == [{"ev": "ready"}, {"id": 2, "ev": "done", "value": ["m"]}]


@pytest.mark.asyncio
async def test_a_call_made_while_the_worker_starts_says_so_then_when_it_is_sent(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """Issue 14: at load 12 the first message showed "waiting for the model" for 23 s while
    the worker was still importing litellm, and the front end could not tell. A call made
    then says the client is starting, then when its request goes out; a call made once the
    worker is ready says neither."""
    gate = tmp_path / "import-may-run"
    code = (
        "import pathlib, time\n"
        "from agentsh.llm import worker\n"
        "real = worker.import_litellm\n"
        f"gate = pathlib.Path({str(gate)!r})\n"
        "def held():\n"
        "    while not gate.exists():\n"
        "        time.sleep(0.01)\n"
        "    return real()\n"
        "worker.import_litellm = held\n"
        "worker.main()\n"
    )
    own = ModelWorker([sys.executable, "-P", "-c", code])
    starts = (ModelClientStarting, ModelClientReady)
    try:
        scripted_server.script(Reply(text="hello"), Reply(text="again"))
        stream = client(scripted_server, own).stream(USER)
        async with contextlib.aclosing(stream):
            first = await asyncio.wait_for(anext(stream), 60)
            assert isinstance(first, ModelClientStarting)
            await asyncio.sleep(0.3)
            assert not scripted_server.requests  # nothing sent while the import is held
            gate.touch()
            rest = await asyncio.wait_for(_rest(stream), 120)
        assert isinstance(rest[0], ModelClientReady)
        assert not any(isinstance(item, starts) for item in rest[1:])
        assert isinstance(rest[-1], Completion) and rest[-1].text == "hello"
        again = await asyncio.wait_for(_items(client(scripted_server, own)), 120)
        assert not any(isinstance(item, starts) for item in again)
        assert isinstance(again[-1], Completion) and again[-1].text == "again"
    finally:
        own.close()


async def _rest(stream: AsyncIterator[object]) -> list[object]:
    return [item async for item in stream]
