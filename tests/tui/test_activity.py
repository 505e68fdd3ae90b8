"""The working indicator's state, from the events of a turn (issue 14, item 4)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from agentsh.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantMessage,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    Event,
    ModelClientReady,
    ModelClientStarting,
    Retrying,
    TextDelta,
    ThinkingDelta,
    Tier,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.session.entries import Role
from agentsh.tui.activity import COMPACTING, STARTING, WAITING, Activity, human_seconds
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.tui.conftest import MakeApp, idle, ready, screen_text, session_of, wait_for
from tests.tui.fake_agent import FakeAgent


def _seconds(shown: re.Match[str] | None) -> int:
    """The seconds the working line counts (-1 while it is not on screen)."""
    return int(shown[2]) if shown is not None else -1


def test_the_indicator_follows_what_the_turn_is_doing_and_stops_with_it() -> None:
    now = [100.0]
    activity = Activity(clock=lambda: now[0])
    assert activity.line() == "" and not activity.running
    activity.start()
    now[0] = 112.4
    assert activity.line().endswith(f"{WAITING} · 12s · Esc to cancel")
    steps = [
        (TurnStarted("u1", "hi"), WAITING),
        (ThinkingDelta("hmm"), "thinking"),
        (TextDelta("Let me"), "writing the reply"),
        (AssistantMessage("a1", "", (("c1", "bash", "{}"),), "tool_calls"), "about to run bash"),
        (ToolStarted("c1", "bash", {}, "bash: pytest -q"), "running bash: pytest -q"),
        (ToolFinished("c1", "bash", "t1", "ok", False), WAITING),
        (Retrying(2, 4, 3.0, "rate limited"), "retry 2/4 in 3s (rate limited)"),
        (CompactionStarted(Tier.SUMMARIZE, "80%"), "compacting (Summarize)"),
        (CompactionFinished("c", Tier.SUMMARIZE, 10, 5, ""), WAITING),
    ]
    for event, doing in steps:
        activity.follow(event)
        assert activity.doing == doing, event
    assert "running" not in activity.line(cancel_key="Ctrl+X")
    assert activity.line(cancel_key="Ctrl+X").endswith("· 12s · Ctrl+X to cancel")
    activity.follow(TurnEnded(TurnOutcome.DONE))
    assert not activity.running and activity.line() == ""


def test_a_retrys_wait_counts_down_on_the_line_until_the_next_attempt() -> None:
    # A 429 whose Retry-After says 7 s: the line says how long is left, each time it is drawn,
    # not the wait as it was when the notice came.
    now = [100.0]
    activity = Activity(clock=lambda: now[0])
    activity.follow(TurnStarted("u1", "hi"))
    activity.follow(Retrying(1, 3, 7.0, "rate limited (429)"))
    assert "retry 1/3 in 7s (rate limited (429)) · 0s" in activity.line()
    now[0] = 103.5
    assert "retry 1/3 in 4s (rate limited (429)) · 3s" in activity.line()
    now[0] = 107.2
    assert "retry 1/3 (rate limited (429)) · 7s" in activity.line()
    activity.follow(TextDelta("at last"))
    assert "writing the reply · 7s" in activity.line()


def test_a_fallback_names_both_models_on_the_line() -> None:
    activity = Activity(clock=lambda: 1.0)
    activity.follow(TurnStarted("u1", "hi"))
    spare = Retrying(3, 3, 0.0, "timed out after 3 retries", "openai/spare", "openai/main")
    activity.follow(spare)
    assert "openai/main timed out after 3 retries: switching to openai/spare" in activity.line()


def test_a_compaction_without_a_turn_starts_the_clock_itself() -> None:
    activity = Activity(clock=lambda: 5.0)
    activity.follow(CompactionStarted(Tier.TRUNCATE, "manual"))
    assert activity.running and activity.doing == "compacting (Truncate)"


def test_a_compact_command_says_compacting_until_it_ends_also_when_it_fails() -> None:
    """``/compact`` asks no model after it: its line said "waiting for the model" from the key
    press, and again after the compaction failed or finished, until its stream closed."""
    activity = Activity(clock=lambda: 5.0)
    activity.start(COMPACTING)
    assert activity.doing == "compacting"
    activity.follow(CompactionFailed(Tier.SUMMARIZE, "nothing to free"))
    assert activity.doing == "compacting"
    activity.start(COMPACTING)
    activity.follow(CompactionStarted(Tier.TRUNCATE, "manual"))
    activity.follow(CompactionFinished("c", Tier.TRUNCATE, 10, 5, ""))
    assert activity.doing == "compacting (Truncate)"


@pytest.mark.asyncio
async def test_the_working_line_of_compact_says_compacting(make_app: MakeApp) -> None:
    gate = asyncio.Event()

    class SlowCompaction(FakeAgent):
        async def compaction_events(self, tier: Tier | None) -> AsyncIterator[Event]:
            await gate.wait()
            yield CompactionFailed(Tier.SUMMARIZE, "nothing to free")

    app = make_app(factory=lambda _e, s, _o: SlowCompaction(s))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        session_of(app).append_message(Role.USER, "something to compact")
        await pilot.press(*"/compact", "enter")
        await wait_for(pilot, lambda: "· Esc to cancel" in screen_text(app))
        assert re.search(r"compacting · \d+s · Esc to cancel", screen_text(app))
        gate.set()
        await wait_for(pilot, lambda: "to cancel" not in screen_text(app))


def test_elapsed_time_reads_naturally() -> None:
    assert [human_seconds(s) for s in (0, 7.9, 65, 3725)] == ["0s", "7s", "1m 05s", "1h 02m"]


@pytest.mark.asyncio
async def test_a_running_turn_shows_the_indicator_above_the_editor_until_it_ends(
    make_app: MakeApp, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The indicator is on screen from the key press, counts seconds, names the approval it
    waits for, and is gone the moment the turn ends."""
    from agentsh.config import ApprovalMode
    from agentsh.tui.lifecycle import build_real_agent
    from agentsh.tui.options import LaunchOptions
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    slow = " ".join(f"w{i}" for i in range(12))
    scripted_server.script(
        text(slow, delay_s=0.15), tool_call("bash", {"command": "echo hi"}), text("done")
    )
    options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url,
                            approval=ApprovalMode.ASK)  # fmt: skip
    app = make_app(factory=build_real_agent, options=options)
    running = re.compile(r"(waiting for the model|writing the reply) · (\d+)s · Esc to cancel")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert "to cancel" not in screen_text(app)
        await pilot.press(*"go slowly", "enter")
        await wait_for(pilot, lambda: running.search(screen_text(app)) is not None)
        await wait_for(pilot, lambda: _seconds(running.search(screen_text(app))) >= 1)
        await idle(pilot, app)
        await pilot.pause()
        assert "to cancel" not in screen_text(app)
        await pilot.press(*"run it", "enter")
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        await wait_for(pilot, lambda: "waiting for your answer: bash: echo hi" in screen_text(app))
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.1)
        await pilot.press("y")
        await idle(pilot, app)
        await pilot.pause()
        assert "to cancel" not in screen_text(app)


@pytest.mark.asyncio
async def test_an_answered_approval_shows_the_step_it_interrupted_again() -> None:
    """The approved call runs with no event until its output: "waiting for your answer"
    stayed on the line for as long as the approved command ran."""
    activity = Activity(clock=lambda: 1.0)
    activity.start()
    activity.follow(ToolStarted("c1", "bash", {}, "bash: make test"))
    asked = ApprovalRequest("c1", "bash", "bash: make test", "make test", "mode ask")
    activity.follow(asked)
    assert activity.doing == "waiting for your answer: bash: make test"
    asked.decision.set_result(ApprovalDecision.ALLOW_ONCE)
    await asyncio.sleep(0)  # the future's callbacks run on the loop
    assert activity.doing == "running bash: make test"


def test_a_model_client_still_starting_is_not_a_slow_model() -> None:
    """Issue 14: at load 12 the first message said "waiting for the model" for 23 s while the
    model worker was still importing litellm. The line says what is happening."""
    activity = Activity(clock=lambda: 1.0)
    activity.start()
    activity.follow(TurnStarted("u1", "hi"))
    activity.follow(ModelClientStarting())
    assert activity.doing == STARTING == "starting the model client"
    activity.follow(ModelClientReady())
    assert activity.doing == WAITING


@pytest.mark.asyncio
async def test_the_working_line_says_the_client_starts_then_that_the_model_is_asked(
    make_app: MakeApp,
) -> None:
    started, sent = asyncio.Event(), asyncio.Event()

    async def first_call(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        yield ModelClientStarting()
        await started.wait()
        yield ModelClientReady()
        await sent.wait()
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=lambda _e, s, _o: FakeAgent(s, script=first_call))
    line = re.compile(r"(starting the model client|waiting for the model) · (\d+)s · Esc to cancel")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"hello", "enter")
        await wait_for(pilot, lambda: "starting the model client ·" in screen_text(app))
        started.set()
        await wait_for(pilot, lambda: "waiting for the model ·" in screen_text(app))
        assert "starting the model client" not in screen_text(app)
        shown = line.search(screen_text(app))
        assert shown is not None and shown[1] == WAITING  # the same clock, one line
        sent.set()
        await wait_for(pilot, lambda: "to cancel" not in screen_text(app))


@pytest.mark.asyncio
async def test_streamed_deltas_that_change_nothing_on_the_line_do_not_redraw_it() -> None:
    """Each of a reply's hundreds of deltas a second redrew the line ("writing" again): a
    screen update per delta, where the spinner's tick redraws it 8 times a second anyway."""
    from textual.app import App, ComposeResult

    from agentsh.tui.widgets.activity_line import ActivityLine

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield ActivityLine()

    app = Host()
    async with app.run_test():
        line = app.query_one(ActivityLine)
        drawn: list[int] = []
        line.refresh = lambda *_a, **_k: drawn.append(1) or line  # type: ignore[method-assign,func-returns-value]
        line.begin()
        line.follow(TurnStarted("u1", "hi"))
        line.follow(TextDelta("Hel"))  # waiting -> writing: drawn again
        before = len(drawn)
        for piece in ("lo", " the", "re"):
            line.follow(TextDelta(piece))
        assert len(drawn) == before, "deltas that change nothing redrew the line"
        line.follow(ToolStarted("c1", "bash", {}, "bash: make"))
        assert len(drawn) == before + 1  # what it says changed: drawn at once
