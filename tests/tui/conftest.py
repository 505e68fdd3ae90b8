"""Fixtures for TUI tests: an App wired to a fake or the real agent, in a temp project."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentsh.config import Environment, load_environment
from agentsh.events import ApprovalRequest, Event, TurnEnded, TurnOutcome
from agentsh.frontend import InteractiveAPI
from agentsh.session.entries import Role
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.lifecycle import AgentFactory
from agentsh.tui.options import LaunchOptions
from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
from tests.tui.fake_agent import FakeAgent, echo_script

if TYPE_CHECKING:
    from textual.pilot import Pilot

MakeApp = Callable[..., AgentshApp]


@pytest.fixture
def env(project: Path) -> Environment:
    return load_environment(project, trust_project=True)  # the user's own project


@pytest.fixture
def windowed_env(project: Path) -> Environment:
    """The project's environment with a chat that keeps 30 rows mounted (tui.transcript_window):
    in a long session the rows far from the view are unmounted within a page or two."""
    user = load_environment(project).user
    user.config_file.parent.mkdir(parents=True, exist_ok=True)
    user.config_file.write_text("[tui]\ntranscript_window = 30\n")
    return load_environment(project)


@pytest.fixture
def make_app(env: Environment, project: Path) -> MakeApp:
    """``make_app(factory=..., options=...)``: an App that does not watch theme files."""

    def make(
        factory: AgentFactory | None = None,
        options: LaunchOptions | None = None,
        environment: Environment | None = None,
    ) -> AgentshApp:
        return AgentshApp(
            environment or env,
            options or LaunchOptions(),
            agent_factory=factory or fake_factory(),
            cwd=project,
            watch_themes=False,
        )

    return make


def fake_factory(**kwargs: Any) -> AgentFactory:
    def build(_env: Environment, session: Session, _options: LaunchOptions) -> InteractiveAPI:
        return FakeAgent(session, **kwargs)

    return build


# -- the one Pilot driver: every TUI test waits and reaches into the App through these ----------


async def wait_for(
    pilot: Pilot[None], predicate: Callable[[], bool], limit_s: float = 30.0
) -> None:
    """Pump the app until ``predicate()`` holds (tests never sleep a fixed time)."""
    await _until(predicate, limit_s, lambda: pilot.pause(0.02))


async def wait_quietly(predicate: Callable[[], bool], limit_s: float = 30.0) -> None:
    """Wait until ``predicate()`` holds without pumping the app, for tests that measure its UI
    loop. Each ``Pilot.pause`` posts a message to every widget and waits for all of them, then
    lays out and paints the screen itself, from the test: work no user's app does, which
    :func:`wait_for`'s polls would add to the loop measured every 20 ms (in 3 alternating pairs
    of runs of the Markdown stream test, 2-5 ticks of 383-395 came after more than 50 ms of the
    UI thread's CPU with them, none of 420-424 without)."""
    await _until(predicate, limit_s, lambda: asyncio.sleep(0.05))


async def _until(
    predicate: Callable[[], bool], limit_s: float, step: Callable[[], Awaitable[object]]
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await step()


async def ready(pilot: Pilot[None], app: AgentshApp, limit_s: float = 30.0) -> None:
    """The session is open and the agent has loaded (2 s for the real one at load 7: litellm,
    which it needs for the model's facts, is imported before the test by ``scripted_server``)."""
    await wait_for(pilot, lambda: app.controller.ready, limit_s=limit_s)


async def idle(pilot: Pilot[None], app: AgentshApp, limit_s: float = 60.0) -> None:
    """No turn, compaction or branch summary is running."""
    await wait_for(pilot, lambda: not app.controller.turn_running, limit_s=limit_s)


async def submit(pilot: Pilot[None], app: AgentshApp, text: str) -> None:
    """Put ``text`` in the editor and press Enter (typing it key by key is slow)."""
    await pilot.press("ctrl+l")
    app.controller.prompt.text = text
    await pilot.press("enter")


async def asked(pilot: Pilot[None], app: AgentshApp) -> ApprovalPrompt:
    """Once the app is ready, send a message and wait for the approval prompt its turn brings
    (a fake agent scripted with :class:`Asks`)."""
    await ready(pilot, app)
    await pilot.press(*"go", "enter")
    await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
    return app.query_one(ApprovalPrompt)


def offered_keys(prompt: ApprovalPrompt) -> str:
    """The answers ``prompt`` offers, as its key line reads."""
    return "".join(str(line.render()) for line in prompt.query(".approval-keys"))


async def esc_esc(pilot: Pilot[None], app: AgentshApp) -> None:
    """Esc twice as a person presses it: within ``tui.esc_esc_ms`` whatever the load. The
    window's clock stands still for the two presses (Pilot presses the second only once the
    first was handled: 120-330 ms later at load 9, past the 500 ms window at load 17)."""
    import time

    presses = app.controller.branching.escapes
    now = time.monotonic()
    presses.clock = lambda: now
    try:
        await pilot.press("escape", "escape")
    finally:
        presses.clock = time.monotonic


async def open_long_session(app: AgentshApp, project: Path, questions: int) -> Session:
    """Switch the App to a new session of ``questions`` short question/answer pairs
    ("question i" / "answer i"), as a long chat has."""
    from agentsh.session.entries import Role, StopReason

    session = Session.create(None, project)
    for i in range(questions):
        session.append_message(Role.USER, f"question {i}")
        session.append_message(Role.ASSISTANT, f"answer {i}", stop_reason=StopReason.STOP)
    await app.controller.switch_session(session)
    return session


def agent_of(app: AgentshApp) -> InteractiveAPI:
    agent = app.controller.agent
    assert agent is not None, "the agent has not loaded"
    return agent


def fake_of(app: AgentshApp) -> FakeAgent:
    agent = app.controller.agent
    assert isinstance(agent, FakeAgent), f"not a FakeAgent: {agent!r}"
    return agent


def session_of(app: AgentshApp) -> Session:
    session = app.controller.current_session()
    assert session is not None, "no session is open"
    return session


def screen_text(app: AgentshApp) -> str:
    """What the terminal shows now, as plain text lines (what a user reads)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


# -- a turn that asks for approval: the script approval tests share ------------------------------


class Asks:
    """A fake turn's script that asks for each of ``requests`` in turn (by default one
    ``bash: make``), records each answer in ``decisions`` and ends the turn.

    ``wait``: it asks only once ``go`` is set (the test scrolls or opens a pane first);
    ``first``: a turn sent as "first" is answered with this text instead (a long reply above
    the question); ``log_user``: the user's message is logged before it waits."""

    def __init__(
        self,
        *requests: Callable[[], ApprovalRequest],
        wait: bool = False,
        first: str | None = None,
        log_user: bool = False,
    ) -> None:
        self.requests = requests or (make_request,)
        self.go = asyncio.Event()
        if not wait:
            self.go.set()
        self.first = first
        self.log_user = log_user
        self.decisions: list[str] = []

    async def __call__(self, agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        if self.first is not None and text == "first":
            async for event in echo_script(agent, self.first):
                yield event
            return
        if self.log_user:
            agent.session.append_message(Role.USER, text)
        await self.go.wait()
        for make in self.requests:
            request = make()  # made in the turn: its decision is a future of this loop
            yield request
            self.decisions.append((await request.decision).value)
        yield TurnEnded(TurnOutcome.DONE)


def make_request(**fields: Any) -> ApprovalRequest:
    """``bash: make`` in ask mode, with ``fields`` changed."""
    values: dict[str, Any] = {
        "call_id": "c1",
        "tool": "bash",
        "summary": "bash: make",
        "detail": "make",
        "reason": "ask mode",
    }
    return ApprovalRequest(**(values | fields))


def request(**fields: Any) -> Callable[[], ApprovalRequest]:
    """A request for :class:`Asks` to make when it asks."""
    return functools.partial(make_request, **fields)


@pytest.fixture
def answer_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approval prompts take keys as soon as they show (no grace period for keys in flight)."""
    monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 0.0)
