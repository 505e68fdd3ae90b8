"""The turn loop in-process: cancel, approvals, overflow retry, events and entries in step."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from agentsh.agent import Agent
from agentsh.agent_assembly import build_agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantMessage,
    CompactionFinished,
    Event,
    Notice,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.session.entries import (
    CheckpointEntry,
    CompactionEntry,
    EntryAppended,
    MessageEntry,
    Role,
    StopReason,
    ToolResultEntry,
)
from agentsh.session.session import Session
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import Reply, ScriptedServer, overflow_error, text, tool_call

AgentFactory = Callable[..., Agent]


@pytest.fixture
def make_agent(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[AgentFactory]:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    created: list[Agent] = []

    def factory(approval: ApprovalMode = ApprovalMode.ALL, session: Session | None = None) -> Agent:
        env = load_environment(project, trust_project=True)  # the user's own project
        fast = dataclasses.replace(
            env.settings.model, retry_base_delay_s=0.01, retry_max_delay_s=0.05
        )
        env = dataclasses.replace(
            env,
            config=dataclasses.replace(
                env.config, settings=dataclasses.replace(env.settings, model=fast)
            ),
        )
        session = session or Session.create(env.user.project_sessions_dir(project), project)
        agent = build_agent(
            env,
            session,
            model=TEST_MODEL,
            api_base=scripted_server.base_url,
            approval=approval,
            interactive=True,
            cwd=project,
        )
        created.append(agent)
        return agent

    yield factory
    for agent in created:
        agent.close()


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in events]


def ended(events: list[Event]) -> TurnEnded:
    """The turn's last event, which is always its end."""
    last = events[-1]
    assert isinstance(last, TurnEnded), last
    return last


@pytest.mark.asyncio
async def test_events_follow_the_log(
    make_agent: AgentFactory, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(tool_call("ls", {"path": "."}), text("done listing"))
    agent = make_agent()
    events = await collect(agent.run("list files"))
    # Checkpoint records are annotations beside the tree (announced too, never on the path).
    checkpoints = [
        e for e in events if isinstance(e, EntryAppended) and isinstance(e.entry, CheckpointEntry)
    ]
    events = [e for e in events if e not in checkpoints]
    kinds = [type(e).__name__ for e in events]
    assert kinds[:2] == ["EntryAppended", "TurnStarted"] and kinds[-2:] == [
        "StatusChanged",
        "TurnEnded",
    ]
    # Every entry the turn wrote is announced once, in the order written, after the write.
    announced = [e.entry for e in events if isinstance(e, EntryAppended)]
    assert announced == agent.session.current_path()
    assert checkpoints and all(
        isinstance(c.entry, CheckpointEntry) and c.entry.target_id for c in checkpoints
    )
    assert isinstance(announced[1], MessageEntry)
    assert [c.summary for c in announced[1].tool_calls] == ["ls: ."]
    started = next(e for e in events if isinstance(e, ToolStarted))
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert started.call_id == finished.call_id and started.summary.startswith("ls")
    # Every entry an event names is already in the log.
    ids = {e.entry_id for e in events if isinstance(e, AssistantMessage | ToolFinished)}
    ids |= {e.user_entry_id for e in events if isinstance(e, TurnStarted)}
    assert ids <= set(agent.session.tree.nodes)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.outcome is TurnOutcome.DONE
    assert end.text == "done listing"


@pytest.mark.asyncio
async def test_cancel_mid_stream_keeps_the_text_and_marks_the_turn_aborted(
    make_agent: AgentFactory, scripted_server: ScriptedServer
) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    scripted_server.script(Reply(text=long_text, delay_s=0.02))
    agent = make_agent()
    events: list[Event] = []
    async for event in agent.run("talk a lot"):
        events.append(event)
        if sum(isinstance(e, TextDelta) for e in events) == 3:
            agent.cancel()
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.outcome is TurnOutcome.ABORTED
    last = agent.session.current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ABORTED
    received = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert last.content == received and 0 < len(received) < len(long_text)
    assert scripted_server.wait_for_disconnect(5.0)
    # The abort is durable: a reload sees it.
    agent.session.close()
    assert agent.session.path is not None
    reloaded = Session.open(agent.session.path, lock=False)
    assert reloaded.current_path()[-1].id == last.id


@pytest.mark.asyncio
async def test_cancel_during_a_tool_stops_it_and_leaves_no_orphan_call(
    make_agent: AgentFactory, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(tool_call("bash", {"command": "sleep 30"}), text("never asked"))
    agent = make_agent()
    events: list[Event] = []
    began = time.monotonic()
    async for event in agent.run("wait"):
        events.append(event)
        if isinstance(event, ToolStarted):
            asyncio.get_running_loop().call_later(0.3, agent.cancel)
    assert time.monotonic() - began < 20  # the 30 s sleep was stopped
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.outcome is TurnOutcome.ABORTED
    results = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert len(results) == 1
    assert len(scripted_server.requests) == 1  # no model call after the cancel


@pytest.mark.asyncio
async def test_approval_denied_then_granted(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        tool_call("write", {"path": "a.txt", "content": "A"}),
        text("it was denied"),
        tool_call("write", {"path": "b.txt", "content": "B"}),
        text("written"),
    )
    agent = make_agent(ApprovalMode.ASK)

    async def answer(prompt: str, decision: ApprovalDecision) -> list[Event]:
        seen: list[Event] = []
        async for event in agent.run(prompt):
            seen.append(event)
            if isinstance(event, ApprovalRequest):
                event.decision.set_result(decision)
        return seen

    denied = await answer("write a", ApprovalDecision.DENY)
    assert any(isinstance(e, ApprovalRequest) for e in denied)
    assert not (project / "a.txt").exists()
    finished = next(e for e in denied if isinstance(e, ToolFinished))
    assert finished.is_error
    granted = await answer("write b", ApprovalDecision.ALLOW_ONCE)
    assert (project / "b.txt").read_text() == "B"
    assert isinstance(granted[-1], TurnEnded) and granted[-1].text == "written"


@pytest.mark.asyncio
async def test_an_approval_that_rewrites_the_input_runs_that_input_and_says_so(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    """The call runs with the input it was allowed with (the SDK host's ``updatedInput``):
    the file it names is written, the model is told which input ran (a long one by its header
    only), the log keeps it whole in the result's details, and the user gets a notice."""
    scripted_server.script(tool_call("write", {"path": "a.txt", "content": "A"}), text("ok"))
    agent = make_agent(ApprovalMode.ASK)
    content = "line\n" * 1_000
    seen: list[Event] = []
    async for event in agent.run("write a"):
        seen.append(event)
        if isinstance(event, ApprovalRequest):
            event.updated_input = {"path": "b.txt", "content": content}
            event.decision.set_result(ApprovalDecision.ALLOW_ONCE)
    assert ended(seen).outcome is TurnOutcome.DONE
    assert not (project / "a.txt").exists() and (project / "b.txt").read_text() == content
    [result] = [e for e in agent.session.current_path() if isinstance(e, ToolResultEntry)]
    assert result.details["input"] == {"path": "b.txt", "content": content}
    note = "(Allowed with a changed input; this call ran as write: b.txt (the whole input is"
    assert result.content.startswith(note)
    [sent] = [m["content"] for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert sent.startswith(note) and content not in sent
    notices = [e.text for e in seen if isinstance(e, Notice)]
    assert any("ran as write: b.txt" in n for n in notices), notices


@pytest.mark.asyncio
async def test_context_overflow_compacts_once_and_retries(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    session = Session.create(None, project)
    for i in range(14):
        session.append_message(Role.USER, f"question {i} " + "x" * 400)
        session.append_message(Role.ASSISTANT, f"answer {i} " + "y" * 400)
    agent = make_agent(session=session)
    scripted_server.script(overflow_error(), text("fits now"))
    events = await collect(agent.run("one more"))
    assert any(isinstance(e, CompactionFinished) for e in events)
    end = events[-1]
    assert isinstance(end, TurnEnded) and end.text == "fits now", events
    assert any(isinstance(e, CompactionEntry) for e in agent.session.current_path())
    assert len(scripted_server.requests[1].messages) < len(scripted_server.requests[0].messages)


@pytest.mark.asyncio
async def test_a_command_that_prints_the_api_key_never_puts_it_in_the_log_or_the_request(
    make_agent: AgentFactory, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(
        tool_call("bash", {"command": 'echo "key is $OPENAI_API_KEY"'}), text("done")
    )
    agent = make_agent()
    events = await collect(agent.run("show me the key"))
    shown = "".join(e.text for e in events if isinstance(e, ToolOutput))
    shown += "".join(e.content for e in events if isinstance(e, ToolFinished))
    assert "key is [redacted]" in shown and FAKE_KEY not in shown
    sent = str(scripted_server.requests[1].messages)
    assert "key is [redacted]" in sent and FAKE_KEY not in sent
    agent.session.close()
    assert agent.session.path is not None
    assert FAKE_KEY not in agent.session.path.read_text()


@pytest.mark.asyncio
async def test_switching_the_model_keeps_the_server_chosen_on_the_command_line(
    make_agent: AgentFactory, scripted_server: ScriptedServer
) -> None:
    """/model used to aim the next request at the provider's default endpoint: the session
    stayed broken until a restart (issue 14, item 1)."""
    scripted_server.script(text("still here"), text("and here"))
    agent = make_agent()
    for model in ("openai/another-model", TEST_MODEL):  # another one, and the same again
        agent.set_model(model)
        end = (await collect(agent.run(f"hello {model}")))[-1]
        assert isinstance(end, TurnEnded) and end.outcome is TurnOutcome.DONE, end
    assert [r.body["model"] for r in scripted_server.requests] == [
        "another-model",
        TEST_MODEL.split("/", 1)[1],
    ]


@pytest.mark.asyncio
async def test_a_backlog_of_chunks_leaves_the_event_loop_room_between_them(
    make_agent: AgentFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks that are all there already (a burst, or what the model worker queued while the
    process waited for a core) are drained without a suspension point: 800 of them held the
    UI's event loop for 290 ms in CI. Other work (keys, frames) runs between every few."""
    from agentsh.llm.client import Completion
    from agentsh.turn import SHARE_ITEMS
    from agentsh.values import Usage

    chunks = 800
    reply = [f"w{i % 10} " for i in range(chunks)]

    async def backlog(*_args: object, **_kwargs: object) -> AsyncIterator[object]:
        for piece in reply:
            yield TextDelta(piece)  # no await between them: all already received
        yield Completion("".join(reply), (), Usage(), StopReason.STOP, TEST_MODEL)

    agent = make_agent()
    assert agent.llm is not None
    monkeypatch.setattr(agent.llm, "stream", backlog)
    turns_elsewhere = 0
    streaming = False

    async def elsewhere() -> None:  # what the UI loop has to do meanwhile
        nonlocal turns_elsewhere
        while True:
            await asyncio.sleep(0)
            turns_elsewhere += streaming

    other = asyncio.ensure_future(elsewhere())
    deltas = 0
    try:
        async for event in agent.run("write a lot"):
            if isinstance(event, TextDelta):
                deltas += 1
                streaming = deltas < chunks
    finally:
        other.cancel()
    assert deltas == chunks
    logged = agent.session.current_path()[-1]
    assert isinstance(logged, MessageEntry) and logged.content == "".join(reply)
    # Both the turn (draining the model's stream) and the front end (draining the turn's
    # events) let the loop run at least every SHARE_ITEMS items.
    assert turns_elsewhere >= chunks // SHARE_ITEMS, turns_elsewhere
