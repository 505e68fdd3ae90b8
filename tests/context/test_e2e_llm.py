"""Context management against the scripted provider, through the real LLMClient over HTTP.

A small loop plays the agent (prepare before every call, append replies and tool results,
record usage, one compaction and retry on a context overflow) so these tests do not depend on
the agent module; the server's request log is the ground truth of what a provider would see.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsh.context.manager import ContextManager
from agentsh.context.repair import INTERRUPTED, pair_problems
from agentsh.context.summary import SYSTEM_PROMPT as SUMMARY_SYSTEM_PROMPT
from agentsh.events import CompactionFinished, ErrorKind, Event, Tier
from agentsh.llm.client import Completion, LLMClient, LLMError
from agentsh.paths import UserPaths
from agentsh.session.entries import Role, StopReason, ToolCall
from agentsh.session.session import Session
from tests.context.builders import SYSTEM, Step, add_turn, unique_output
from tests.context.conftest import GOOD_SUMMARY, settings_with
from tests.fakes.server import (
    RecordedRequest,
    Reply,
    ScriptedServer,
    overflow_error,
    text,
    tool_call,
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _summarizer(client: LLMClient) -> Callable[[list[dict[str, Any]], int], Any]:
    async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> str:
        return (await client.complete(messages, max_tokens=max_tokens)).text

    return summarize


def _is_summary_request(request: RecordedRequest) -> bool:
    messages = request.messages
    return bool(messages) and messages[0].get("content") == SUMMARY_SYSTEM_PROMPT


def _responder(reads_per_turn: int) -> Callable[[RecordedRequest], Reply]:
    """Summaries for summary calls; otherwise read N files, then answer."""
    counter = [0]

    def reply(request: RecordedRequest) -> Reply:
        if _is_summary_request(request):
            return text(GOOD_SUMMARY.format(n=counter[0]))
        messages = request.messages
        since_user = 0
        for message in reversed(messages):
            if message["role"] == "user":
                break
            if message["role"] == "tool":
                since_user += 1
        if since_user < reads_per_turn:
            counter[0] += 1
            return tool_call("read", {"path": f"src/file_{counter[0]}.py"})
        return text("All done for this request.")

    return reply


def _file_body(path: str) -> str:
    return "".join(f"{i:5d}  {path} line {i} " + "x" * 40 + "\n" for i in range(100))


async def _run_turn(
    manager: ContextManager,
    client: LLMClient,
    session: Session,
    request: str,
    run_tool: Callable[[str], str] = _file_body,
) -> None:
    session.append_message(Role.USER, request)
    retried = False
    for _ in range(20):
        messages = await manager.prepare(SYSTEM, TOOLS)
        completion: Completion | None = None
        try:
            async for item in client.stream(messages, TOOLS):
                if isinstance(item, Completion):
                    completion = item
        except LLMError as err:
            if err.kind is ErrorKind.CONTEXT_OVERFLOW and not retried:
                retried = True
                if await manager.on_overflow():
                    continue
            raise
        assert completion is not None
        entry = session.append_message(
            Role.ASSISTANT,
            completion.text,
            tool_calls=completion.tool_calls,
            usage=completion.usage,
            stop_reason=completion.stop_reason,
        )
        manager.record_usage(entry)
        if not entry.tool_calls:
            return
        for call in entry.tool_calls:
            path = json.loads(call.arguments)["path"]
            session.append_tool_result(call.id, call.name, run_tool(path))
    raise AssertionError("the turn did not end")


def _manager(
    session: Session,
    user: UserPaths,
    client: LLMClient,
    events: list[Event],
    window: int,
    **context: Any,
) -> ContextManager:
    return ContextManager(
        session,
        settings_with(**({"reserve_tokens": 8_000} | context)),
        user,
        model="openai/test-model",
        window=window,
        summarize=_summarizer(client),
        emit=events.append,
    )


@pytest.mark.asyncio
async def test_no_request_ever_carries_an_orphan_tool_call_even_after_a_crash_mid_tool(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    user_paths: UserPaths,
    tmp_path: Path,
) -> None:
    folder = user_paths.sessions_dir / "p"
    folder.mkdir(parents=True)
    # A session whose process died while a tool ran: a call with no result.
    crashed = Session.create(folder, tmp_path)
    crashed.append_message(Role.USER, "start the server")
    crashed.append_message(
        Role.ASSISTANT,
        "",
        tool_calls=(ToolCall("call_dead", "read", '{"path": "srv.py"}'),),
        stop_reason=StopReason.TOOL_CALLS,
    )
    crashed.close()
    assert crashed.path is not None
    session = Session.open(crashed.path)
    client = llm_client_factory()
    scripted_server.script(*[_responder(3)] * 400)
    events: list[Event] = []
    manager = _manager(session, user_paths, client, events, window=40_000)
    for n in range(10):
        await _run_turn(manager, client, session, f"request {n}: read three files")
    session.close()

    chats = [r for r in scripted_server.requests if not _is_summary_request(r)]
    assert len(chats) >= 10 * 4
    for request in scripted_server.requests:
        assert pair_problems(request.messages) == [], request.messages
    first = chats[0].messages
    assert {"role": "tool", "tool_call_id": "call_dead", "content": INTERRUPTED} in first
    finished = [e for e in events if isinstance(e, CompactionFinished)]
    assert finished, "the session should have compacted along the way"
    assert any(e.tier is Tier.SUMMARIZE for e in finished) or any(
        e.tier is Tier.MOVE_TO_WORKSPACE for e in finished
    )
    # Requests stay inside the window the whole way.
    assert max(len(json.dumps(r.messages)) for r in chats) < 40_000 * 4


@pytest.mark.asyncio
async def test_the_summary_is_written_by_the_real_client_from_a_labelled_transcript(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    memory_session: Session,
    user_paths: UserPaths,
) -> None:
    for i in range(8):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": f"a{i}.py"}, "body " * 300)])
    client = llm_client_factory()
    scripted_server.script(text(GOOD_SUMMARY.format(n=7)))
    manager = _manager(memory_session, user_paths, client, [], window=100_000)
    entry = await manager.compact(Tier.SUMMARIZE)
    assert entry is not None and entry.tier == "summarize" and "marker-7" in entry.summary
    (request,) = scripted_server.requests
    assert not request.stream and "tools" not in request.body
    assert request.body.get("max_tokens") == 4096
    prompt = request.messages[-1]["content"]
    assert (
        "[User]: task 0" in prompt and '[Assistant tool calls]: read({"path": "a0.py"})' in prompt
    )


@pytest.mark.asyncio
async def test_a_summary_call_the_provider_rejects_falls_back_to_the_archive(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    memory_session: Session,
    user_paths: UserPaths,
) -> None:
    from tests.fakes.server import ErrorReply

    for i in range(8):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": f"a{i}.py"}, "body " * 300)])
    client = llm_client_factory()
    scripted_server.script(ErrorReply(status=400, message="bad summary request"))
    events: list[Event] = []
    manager = _manager(memory_session, user_paths, client, events, window=100_000)
    entry = await manager.compact(Tier.SUMMARIZE)
    assert entry is not None and entry.tier == "move_to_workspace"
    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    assert "summary failed" in done.note
    archive = manager.workspace.read(entry.workspace_file)
    assert all(f"task {i}" in archive for i in range(3))


@pytest.mark.asyncio
async def test_a_provider_overflow_compacts_once_and_the_retry_is_smaller(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    memory_session: Session,
    user_paths: UserPaths,
) -> None:
    for i in range(12):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": f"a{i}.py"}, f"{i} " * 2000)])
    client = llm_client_factory()
    scripted_server.script(overflow_error(), text("Fine now."))
    events: list[Event] = []
    manager = _manager(memory_session, user_paths, client, events, window=200_000)
    await _run_turn(manager, client, memory_session, "and now?")
    first, retry = scripted_server.requests
    assert len(json.dumps(retry.messages)) < len(json.dumps(first.messages))
    assert "task 0" not in json.dumps(retry.messages) and "task 0" in json.dumps(first.messages)
    assert [e.tier for e in events if isinstance(e, CompactionFinished)] == [Tier.MOVE_TO_WORKSPACE]
    assert retry.messages[-1] == {"role": "user", "content": "and now?"}


@pytest.mark.asyncio
async def test_a_session_played_against_the_provider_crosses_80_85_and_95_percent(
    scripted_server: ScriptedServer,
    llm_client_factory: Callable[..., LLMClient],
    disk_session: Session,
    user_paths: UserPaths,
) -> None:
    """Usage comes from the provider's reports; each tier fires once, in order, and the
    Summarize is written by the model through the real client."""
    window = 100_000
    client = llm_client_factory()
    scripted_server.script(*[_responder(1)] * 200)
    events: list[Event] = []
    manager = _manager(
        disk_session,
        user_paths,
        client,
        events,
        window,
        reserve_tokens=10_000,
        prune_old_output_min_chars=10**9,  # no pruning: let each tier's cut show
        # nor the pre-flight cut of a jump's one large output: the tier is judged on what it
        # leaves, and it would leave the context under 95 %
        tool_result_max_chars=100_000,
        tool_result_max_window_fraction=1.0,
    )
    size = [0]

    def run_tool(path: str) -> str:
        return unique_output(size[0], path)

    async def grow_to(pct: float) -> None:
        n = 0
        while (gap := pct / 100 * window - manager.status().used) > 600:
            n += 1
            size[0] = int(min(4_500, gap - 300))
            await _run_turn(manager, client, disk_session, f"grow {pct} {n}", run_tool)

    async def jump_to(fraction: float, request: str) -> None:
        size[0] = int(fraction * window - manager.status().used - 300)
        assert size[0] < 20_000
        await _run_turn(manager, client, disk_session, request, run_tool)

    def tiers() -> list[Tier]:
        return [e.tier for e in events if isinstance(e, CompactionFinished)]

    await grow_to(78)
    assert tiers() == []
    await jump_to(0.82, "cross eighty")
    assert tiers() == [Tier.MOVE_TO_WORKSPACE]
    await grow_to(78)
    await jump_to(0.89, "cross eighty-five")
    assert tiers() == [Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE]
    await grow_to(79)
    await jump_to(0.97, "cross ninety-five")
    assert tiers() == [Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE]
    summaries = [r for r in scripted_server.requests if _is_summary_request(r)]
    assert len(summaries) == 1
    for request in scripted_server.requests:
        assert pair_problems(request.messages) == []
    names = [Path(e.workspace_file).name for e in events if isinstance(e, CompactionFinished)]
    assert names == ["001-archive.md", "003-summary.md", "004-archive.md"]
