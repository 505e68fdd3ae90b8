"""A reply cancelled (or cut off by an error) mid-stream reports no usage, yet its prompt was
sent and its text generated: agentsh counts both as an estimate, marked so in the log, and it
counts in the session's tokens and cost like any reply's."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentsh.config import load_environment
from agentsh.events import (
    Event,
    ModelClientReady,
    ModelClientStarting,
    TextDelta,
    Tier,
    TurnOutcome,
    UsageReported,
)
from agentsh.session.entries import (
    CompactionEntry,
    MessageEntry,
    ModelCallEntry,
    Role,
    StopReason,
    Usage,
)
from agentsh.session.session import Session
from tests.agent.test_agent_loop import AgentFactory, collect, ended, make_agent
from tests.context.conftest import GOOD_SUMMARY
from tests.fakes.server import ErrorReply, Hangup, RecordedRequest, Reply, ScriptedServer, text

__all__ = ["make_agent"]  # the fixture, imported for pytest

LONG = " ".join(f"word{i}" for i in range(400))


def _priced(project: Path) -> None:
    user_config = load_environment(project).user.config_file
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("[model]\ninput_cost_per_mtok = 3.0\noutput_cost_per_mtok = 15.0\n")


def _reloaded_last(session: Session) -> MessageEntry:
    session.close()
    assert session.path is not None
    last = Session.open(session.path, lock=False).current_path()[-1]
    assert isinstance(last, MessageEntry)
    return last


@pytest.mark.asyncio
async def test_a_reply_cancelled_mid_stream_counts_what_was_sent_and_what_arrived(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    _priced(project)
    (project / "NOTES.md").write_text("x" * 4000)  # a request worth counting
    scripted_server.script(Reply(text=LONG, delay_s=0.02))
    agent = make_agent()
    events: list[Event] = []
    async for event in agent.run("talk a lot about " + "context " * 300):
        events.append(event)
        if sum(isinstance(e, TextDelta) for e in events) == 5:
            agent.cancel()
    assert ended(events).outcome is TurnOutcome.ABORTED
    received = "".join(e.text for e in events if isinstance(e, TextDelta))
    last = agent.session.current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ABORTED
    usage = last.usage
    assert usage is not None and usage.estimated
    # What was sent: the accounting's count of the request (~chars/4 of what the server got).
    (sent,) = scripted_server.requests
    approx = len(json.dumps(sent.body["messages"])) // 4
    assert approx // 2 < usage.input_tokens < approx * 2
    assert usage.output_tokens == agent.context.accounting.count(received) > 0
    assert usage.cost == pytest.approx((usage.input_tokens * 3 + usage.output_tokens * 15) / 1e6)
    # Reported like any reply's usage, and counted in the session's totals and spend.
    reported = [e for e in events if isinstance(e, UsageReported)]
    assert [(e.input_tokens, e.output_tokens, e.estimated) for e in reported] == [
        (usage.input_tokens, usage.output_tokens, True)
    ]
    status = agent.status()
    assert status.session_input_tokens == usage.input_tokens
    assert status.session_output_tokens == usage.output_tokens
    assert status.session_cost == pytest.approx(usage.cost) and agent.spent_usd == usage.cost
    # An estimate never anchors the context's size as a provider's figure would.
    assert status.estimated
    # Marked as an estimate in the log, and read back as one.
    assert _reloaded_last(agent.session).usage == usage


@pytest.mark.asyncio
async def test_a_reply_cut_off_mid_stream_counts_and_an_error_before_output_does_not(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    _priced(project)
    scripted_server.script(
        Hangup(after_chunks=4, text=LONG),
        ErrorReply(status=400, message="bad request", type="invalid_request_error"),
    )
    agent = make_agent()
    cut = [e async for e in agent.run("first")]
    assert ended(cut).outcome is TurnOutcome.ERROR
    received = "".join(e.text for e in cut if isinstance(e, TextDelta))
    entry = agent.session.current_path()[-1]
    assert isinstance(entry, MessageEntry) and entry.stop_reason is StopReason.ERROR
    assert received and entry.usage is not None and entry.usage.estimated
    assert entry.usage.output_tokens == agent.context.accounting.count(received)
    assert entry.usage.input_tokens > 0 and entry.usage.cost > 0
    assert any(isinstance(e, UsageReported) and e.estimated for e in cut)
    refused = [e async for e in agent.run("second")]
    assert ended(refused).outcome is TurnOutcome.ERROR
    entry = agent.session.current_path()[-1]
    assert isinstance(entry, MessageEntry) and entry.stop_reason is StopReason.ERROR
    assert entry.usage is None and not any(isinstance(e, UsageReported) for e in refused)


@pytest.mark.asyncio
async def test_a_summary_call_cancelled_before_it_answers_counts_what_was_sent(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    _priced(project)
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text("[context]\nsummarize_keep_turns = 1\n")

    def slow_summary(request: RecordedRequest) -> Reply:
        time.sleep(3)  # the user presses Esc meanwhile
        return text(GOOD_SUMMARY.format(n=1))

    scripted_server.script(Reply(text=f"first {LONG}"), Reply(text=f"second {LONG}"), slow_summary)
    agent = make_agent()
    for request in ("one", "two"):
        await collect(agent.run(request))
    before = agent.status()
    compaction = asyncio.create_task(collect(agent.compact(Tier.SUMMARIZE)))
    for _ in range(500):
        if len(scripted_server.requests) == 3:
            break
        await asyncio.sleep(0.02)
    agent.cancel()
    with contextlib.suppress(asyncio.CancelledError):  # the compaction's task was cancelled
        await compaction
    assert not any(isinstance(e, CompactionEntry) for e in agent.session.current_path())
    (record,) = [e for e in agent.session.tree.records if isinstance(e, ModelCallEntry)]
    assert record.purpose == "summary" and record.usage.estimated
    summary_request = scripted_server.requests[2]
    approx = len(json.dumps(summary_request.body["messages"])) // 4
    assert approx // 2 < record.usage.input_tokens < approx * 2
    after = agent.status()
    assert after.session_input_tokens == before.session_input_tokens + record.usage.input_tokens
    # Priced as a cancelled reply is: the session's cost and --max-budget-usd count it.
    assert record.usage.cost == pytest.approx(record.usage.input_tokens * 3 / 1e6)
    assert record.usage.cost > 0
    assert after.session_cost == pytest.approx(before.session_cost + record.usage.cost)
    assert agent.spent_usd == pytest.approx(before.session_cost + record.usage.cost)


@pytest.mark.asyncio
async def test_a_memory_save_cancelled_before_it_answers_counts_what_was_sent(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    """The pre-compaction memory save cancelled (Esc) before its reply counted nothing: its
    request, the whole context, was sent and is billed."""
    _priced(project)
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        "[model]\nwindow = 20000\n[context]\npre_compaction_memory_save = true\n"
    )
    session = Session.create(load_environment(project).user.project_sessions_dir(project), project)
    for i in range(8):
        session.append_message(Role.USER, f"question-{i}")
        words = " ".join(f"detail{i}x{j}" for j in range(600))
        session.append_message(Role.ASSISTANT, f"answer-{i} {words}")
    session.append_message(Role.ASSISTANT, "noted", usage=Usage(input_tokens=17_900))

    def slow_save(request: RecordedRequest) -> Reply:
        time.sleep(3)  # the user presses Esc meanwhile
        return text("nothing to save")

    scripted_server.script(slow_save)
    agent = make_agent(session=session)
    before = agent.status()
    turn = asyncio.create_task(collect(agent.run("one more")))
    for _ in range(500):
        if scripted_server.requests:
            break
        await asyncio.sleep(0.02)
    agent.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await turn
    assert "memory" in json.dumps(scripted_server.requests[0].body["tools"])
    (record,) = [e for e in agent.session.tree.records if isinstance(e, ModelCallEntry)]
    assert record.purpose == "memory save" and record.usage.estimated
    assert 17_000 < record.usage.input_tokens < 21_000
    assert record.usage.cost == pytest.approx(record.usage.input_tokens * 3.0 / 1e6)
    after = agent.status()
    assert after.session_input_tokens >= before.session_input_tokens + record.usage.input_tokens


@pytest.mark.asyncio
async def test_a_call_cancelled_while_the_model_client_still_starts_counts_nothing(
    make_agent: AgentFactory,
    scripted_server: ScriptedServer,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Esc while the model worker still imports litellm (seconds on a loaded machine: seen in
    tmux, "starting the model client · 18s"): the request never went out, yet its tokens
    were charged as an estimate (1,917 input tokens on a reply of nothing)."""
    _priced(project)
    agent = make_agent()

    async def still_starting(*_args: object, **_kwargs: object) -> AsyncIterator[object]:
        yield ModelClientStarting()
        await asyncio.Event().wait()  # the worker never gets to send it

    monkeypatch.setattr(agent.llm, "stream", still_starting)
    events: list[Event] = []
    async for event in agent.run("hello"):
        events.append(event)
        if isinstance(event, ModelClientStarting):
            agent.cancel()
    assert ended(events).outcome is TurnOutcome.ABORTED
    assert not scripted_server.requests
    last = agent.session.current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ABORTED
    assert last.usage is None
    assert not any(isinstance(e, UsageReported) for e in events)
    status = agent.status()
    assert status.session_input_tokens == 0 and agent.spent_usd == 0
    # Once the request went out (ModelClientReady), a cancel counts what was sent again.

    async def sent_then_silent(*_args: object, **_kwargs: object) -> AsyncIterator[object]:
        yield ModelClientStarting()
        yield ModelClientReady()
        await asyncio.Event().wait()

    monkeypatch.setattr(agent.llm, "stream", sent_then_silent)
    events = []
    async for event in agent.run("again"):
        events.append(event)
        if isinstance(event, ModelClientReady):
            agent.cancel()
    last = agent.session.current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ABORTED
    assert last.usage is not None and last.usage.estimated and last.usage.input_tokens > 0
