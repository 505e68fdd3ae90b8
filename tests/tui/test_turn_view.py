"""The live chat is the projection of the log: after any turn, the rows the chat built while it
ran hold exactly the items that opening the session would show.

Turns are generated at random (hypothesis) and played by a scripted agent that writes the log
and emits events in the order the real agent does: the entry, then the event that announces
it; streamed text before its reply; a tool's start, output and result; compactions (some that
fall back, some that fail) before a model call; errors logged with the reply; cancels while
streaming or while a tool runs. The real App shows them; after each turn the chat's rows that
come from the log are compared with :func:`project_session` of the same session.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from agentsh.config import Environment
from agentsh.events import (
    AssistantMessage,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextStatus,
    ErrorKind,
    ErrorOccurred,
    Event,
    Notice,
    NoticeLevel,
    StatusChanged,
    TextDelta,
    ThinkingDelta,
    Tier,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.projection import BranchItem, ChatItem, item_entry_ids, project_session
from tests.tui.conftest import wait_for
from tests.tui.fake_agent import FakeAgent


@dataclass(frozen=True)
class Call:
    command: str
    output: tuple[str, ...]  # streamed pieces
    error: bool


@dataclass(frozen=True)
class Step:
    compaction: str  # "" none, "ok", "fallback", "failed"
    kept: float  # where the compaction's first kept entry falls on the path (0..1)
    deltas: tuple[str, ...]
    thinking: bool
    text: str  # the logged reply text (the deltas joined, unless none streamed)
    calls: tuple[Call, ...]
    end: str  # "reply", "error", "abort_stream", "abort_tool"
    notice: bool


@dataclass(frozen=True)
class Turn:
    text: str
    steps: tuple[Step, ...]


WORDS = st.text(alphabet="ab é漢\n*_`", min_size=0, max_size=8)
CALLS = st.builds(
    Call,
    command=st.sampled_from(["ls", "pytest -q", "echo one\necho two", "grep -r x ."]),
    output=st.lists(WORDS, max_size=3).map(tuple),
    error=st.booleans(),
)
STEPS = st.builds(
    Step,
    compaction=st.sampled_from(["", "", "ok", "fallback", "failed"]),
    kept=st.floats(0, 1),
    deltas=st.lists(WORDS.filter(bool), max_size=3).map(tuple),
    thinking=st.booleans(),
    text=WORDS,
    calls=st.lists(CALLS, max_size=3).map(tuple),
    end=st.sampled_from(["reply", "reply", "reply", "error", "abort_stream", "abort_tool"]),
    notice=st.booleans(),
)
TURNS = st.lists(
    st.builds(Turn, text=WORDS.filter(str.strip), steps=st.lists(STEPS, min_size=1, max_size=3)),
    min_size=1,
    max_size=3,
)


class PlayingAgent(FakeAgent):
    """Plays the generated turns one per message, the way the real agent writes and tells."""

    def __init__(self, session: Session, turns: list[Turn]) -> None:
        super().__init__(session, script=self.play)
        self.turns = list(turns)

    async def play(self, _agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        turn = self.turns.pop(0)
        s = self.session
        user = s.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        for n, step in enumerate(turn.steps):
            async for event in self._compaction(step):
                yield event
            if step.notice:
                yield Notice(NoticeLevel.INFO, "a notice")
            if step.thinking:
                yield ThinkingDelta("hmm")
            for delta in step.deltas:
                await asyncio.sleep(0)
                yield TextDelta(delta)
            streamed = "".join(step.deltas)
            if step.end == "error":
                s.append_message(
                    Role.ASSISTANT, streamed, stop_reason=StopReason.ERROR, error="HTTP 500"
                )
                yield ErrorOccurred(ErrorKind.SERVER, "HTTP 500")
                yield StatusChanged(self.status())
                yield TurnEnded(TurnOutcome.ERROR, error="HTTP 500")
                return
            if step.end == "abort_stream":
                if step.deltas or step.thinking:
                    s.append_message(Role.ASSISTANT, streamed, stop_reason=StopReason.ABORTED)
                yield StatusChanged(self.status())
                yield TurnEnded(TurnOutcome.ABORTED, text=streamed)
                return
            last = n == len(turn.steps) - 1
            calls = () if last and step.end == "reply" else step.calls
            reply = streamed if step.deltas else step.text
            tool_calls = tuple(
                ToolCall(f"c{user.id}{n}{i}", "bash", json.dumps({"command": c.command}), f"b {i}")
                for i, c in enumerate(calls)
            )
            stop = StopReason.TOOL_CALLS if calls else StopReason.STOP
            s.append_message(Role.ASSISTANT, reply, tool_calls=tool_calls, stop_reason=stop)
            yield StatusChanged(self.status())
            for i, (call, spec) in enumerate(zip(tool_calls, calls, strict=True)):
                if step.end == "abort_tool" and i == len(calls) - 1:
                    for rest in tool_calls[i:]:
                        s.append_tool_result(rest.id, "bash", "not run: cancelled", is_error=True)
                    yield StatusChanged(self.status())
                    yield TurnEnded(TurnOutcome.ABORTED)
                    return
                yield ToolStarted(call.id, "bash", {"command": spec.command}, call.summary)
                for piece in spec.output:
                    yield ToolOutput(call.id, piece)
                s.append_tool_result(call.id, "bash", "".join(spec.output), is_error=spec.error)
            if not calls:
                break
        yield StatusChanged(self.status())
        yield TurnEnded(TurnOutcome.DONE)

    async def _compaction(self, step: Step) -> AsyncIterator[Event]:
        if not step.compaction:
            return
        yield CompactionStarted(Tier.SUMMARIZE, "the context is full")
        if step.compaction == "failed":
            yield CompactionFailed(Tier.SUMMARIZE, "the model did not answer")
            return
        s = self.session
        path = s.current_path()
        kept = path[min(len(path) - 1, int(step.kept * len(path)))]
        tier = "summarize" if step.compaction == "ok" else "move_to_workspace"
        entry = CompactionEntry(
            id=s.new_id(), parent_id=s.leaf_id, tier=tier, summary=f"summary {len(path)}",
            first_kept_id=kept.id, tokens_before=9_000, tokens_after=1_000,
        )  # fmt: skip
        s.append(entry)
        note = "" if step.compaction == "ok" else "summary failed; archived instead"
        yield CompactionFinished(entry.id, Tier(tier), 9_000, 1_000, "", note=note)


def _logged(items: list[ChatItem]) -> list[ChatItem]:
    """What of a chat comes from the log (notes about the turn, a compaction that failed, an
    approval asked: not in it)."""
    return [i for i in items if isinstance(i, BranchItem) or item_entry_ids(i)]


async def _play(env: Environment, project: Path, turns: list[Turn]) -> None:
    app = AgentshApp(
        env,
        LaunchOptions(no_session=True),
        agent_factory=lambda _e, s, _o: PlayingAgent(s, turns),
        cwd=project,
        watch_themes=False,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        controller = app.controller
        await wait_for(pilot, lambda: controller.ready)
        for turn in list(turns):
            await controller.submit(turn.text)
            await wait_for(pilot, lambda: not controller.turn_running)
            session = controller.current_session()
            assert session is not None
            live = _logged([row.item for row in controller.chat.rows])
            assert live == project_session(session)


# Found by the full suite: a compaction whose archive holds only results of calls an earlier
# compaction archived (nothing to show) was an empty archive row on resume, none live.
ARCHIVE_OF_NOTHING = [
    Turn(
        text="a\n",
        steps=(
            Step(
                compaction="", kept=0.8154405698843985, deltas=(), thinking=False, text="a",
                calls=(
                    Call(command="echo one\necho two", output=("é \n", "aa漢a\n` 漢"), error=False),
                    Call(command="grep -r x .", output=(), error=False),
                    Call(command="ls", output=("éa_ 漢* `", "é"), error=True),
                ),
                end="abort_tool", notice=True,
            ),
        ),
    ),
    Turn(
        text=" é ba  b",
        steps=(
            Step(
                compaction="ok", kept=0.5953831981859975, deltas=("_a`__ \na", " `b`é_"),
                thinking=True, text="_",
                calls=(
                    Call(command="ls", output=("", "a**_é_**", ""), error=False),
                    Call(command="ls", output=(), error=False),
                ),
                end="reply", notice=True,
            ),
            Step(
                compaction="fallback", kept=0.5679730992471975, deltas=("é",), thinking=False,
                text=" b",
                calls=(Call(command="echo one\necho two", output=("\nb*b",), error=True),),
                end="reply", notice=True,
            ),
            Step(
                compaction="ok", kept=0.5897949952536784, deltas=("é漢漢a  ", "漢__bé_*`", "````"),
                thinking=False, text="`aaé__a",
                calls=(Call(command="grep -r x .", output=("aab_\n", "\n"), error=False),),
                end="abort_tool", notice=False,
            ),
        ),
    ),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(600)  # ten runs of the App, on a loaded machine
@settings(
    max_examples=10,
    deadline=None,
    # Each example runs the App: shrinking a failure would take minutes. The failing turns
    # are printed whole instead.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(turns=TURNS)
@example(turns=ARCHIVE_OF_NOTHING)
def test_the_live_chat_is_what_the_log_projects(
    turns: list[Turn], env: Environment, project: Path
) -> None:
    asyncio.run(_play(env, project, turns))


class CountingAgent(FakeAgent):
    """Counts the times a front end asks for the status."""

    asked = 0

    def status(self) -> ContextStatus:
        self.asked += 1
        return super().status()


async def _pushed_status_turn(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
    user = agent.session.append_message(Role.USER, text)
    yield TurnStarted(user.id, text)
    reply = agent.session.append_message(Role.ASSISTANT, "ok", stop_reason=StopReason.STOP)
    yield AssistantMessage(reply.id, "ok", (), "stop")
    yield StatusChanged(ContextStatus(model="test/fake", window=100_000, used=4_321))
    yield TurnEnded(TurnOutcome.DONE, text="ok")


@pytest.mark.asyncio
async def test_the_status_line_is_pushed_by_the_turn_never_asked_for(
    env: Environment, project: Path
) -> None:
    app = AgentshApp(
        env,
        LaunchOptions(no_session=True),
        agent_factory=lambda _e, s, _o: CountingAgent(s, script=_pushed_status_turn),
        cwd=project,
        watch_themes=False,
    )
    async with app.run_test(size=(100, 30)) as pilot:
        controller = app.controller
        await wait_for(pilot, lambda: controller.ready)
        agent = controller.agent
        assert isinstance(agent, CountingAgent)
        agent.asked = 0
        await controller.submit("hello")
        await wait_for(pilot, lambda: not controller.turn_running)
        await pilot.pause()
        assert controller.status_bar.status.used == 4_321  # what the stream said
        assert agent.asked == 0  # nothing pulled during or after the turn
