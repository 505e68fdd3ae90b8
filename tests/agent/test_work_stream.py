"""A piece of work as one stream of events (agentsh/work_stream.py), and the agent's one piece
at a time: a second turn or compaction while one runs is refused, and the first goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentsh.agent import AgentBusy
from agentsh.agent_assembly import build_agent
from agentsh.config import load_environment
from agentsh.events import Notice, NoticeLevel, TextDelta, TurnEnded, TurnOutcome
from agentsh.session.session import Session
from agentsh.work_stream import WorkStream
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text


def _note(text: str) -> Notice:
    return Notice(NoticeLevel.INFO, text)


@pytest.mark.asyncio
async def test_what_the_work_emits_is_the_stream_in_order_and_busy_lasts_as_long() -> None:
    stream = WorkStream()
    stream.emit(_note("before"))  # no work runs: dropped
    seen_busy: list[bool] = []

    async def work() -> None:
        for i in range(40):  # more than a share of the loop: the stream yields in between
            stream.emit(_note(str(i)))
            await asyncio.sleep(0)
        seen_busy.append(stream.busy)

    events = [e async for e in stream.drive(work())]
    assert [e.text for e in events if isinstance(e, Notice)] == [str(i) for i in range(40)]
    assert seen_busy == [True] and not stream.busy
    stream.emit(_note("after"))  # dropped again, nothing waits for it


@pytest.mark.asyncio
async def test_what_the_work_raises_ends_the_stream_after_what_it_emitted() -> None:
    stream = WorkStream()

    async def work() -> None:
        stream.emit(_note("first"))
        raise RuntimeError("broken")

    got: list[str] = []
    with pytest.raises(RuntimeError, match="broken"):
        async for event in stream.drive(work()):
            assert isinstance(event, Notice)
            got.append(event.text)
    assert got == ["first"] and not stream.busy


@pytest.mark.asyncio
async def test_leaving_the_stream_early_cancels_the_work() -> None:
    stream = WorkStream()
    cancelled = asyncio.Event()

    async def work() -> None:
        stream.emit(_note("started"))
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    events = stream.drive(work())
    assert isinstance(await anext(events), Notice)
    await events.aclose()
    assert cancelled.is_set() and not stream.busy


@pytest.mark.asyncio
async def test_cancel_stops_the_running_task() -> None:
    stream = WorkStream()

    async def work() -> None:
        stream.emit(_note("started"))
        await asyncio.sleep(60)

    events = stream.drive(work())
    assert isinstance(await anext(events), Notice)
    stream.cancel()
    with pytest.raises(asyncio.CancelledError):
        await anext(events)
    assert not stream.busy


@pytest.mark.asyncio
async def test_a_second_turn_or_compaction_while_one_runs_is_refused_and_the_first_goes_on(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    scripted_server.script(text("one two three four five six", delay_s=0.05))
    env = load_environment(project)
    agent = build_agent(
        env,
        Session.create(None, project),
        model=TEST_MODEL,
        api_base=scripted_server.base_url,
        cwd=project,
    )
    try:
        first = agent.run("go")
        async for event in first:
            if isinstance(event, TextDelta):
                break  # the reply is streaming: the turn runs
        assert agent.busy
        with pytest.raises(AgentBusy):
            await anext(agent.run("again"))
        with pytest.raises(AgentBusy):
            await anext(agent.compact())
        rest = [event async for event in first]
        assert isinstance(rest[-1], TurnEnded) and rest[-1].outcome is TurnOutcome.DONE
        assert rest[-1].text == "one two three four five six"
        assert not agent.busy
    finally:
        agent.close()
