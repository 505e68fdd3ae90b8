"""Snapshot tests (pytest-textual-snapshot): the start screen, a conversation with a tool call,
and the status bar in each tier. Fixed sizes, a stand-in agent with a fixed model, and nothing
time- or path-dependent on screen, so the SVGs are stable. Update with --snapshot-update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from agentsh.events import ContextStatus, Tier
from agentsh.session.entries import Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.themes import load_themes, shipped_themes_dir
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import MakeApp, fake_factory, idle, ready

STATUS = ContextStatus(model="openai/test-model", window=128_000, used=0, pct=0.0)


def _agentsh(pilot: Pilot[Any]) -> AgentshApp:
    app = pilot.app
    assert isinstance(app, AgentshApp)
    return app


async def _settle(pilot: Pilot[Any]) -> None:
    app = _agentsh(pilot)
    await ready(pilot, app)
    await idle(pilot, app)
    app.query_one(PromptInput).cursor_blink = False
    await pilot.pause()


def test_empty_start_screen(snap_compare: Any, make_app: MakeApp) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=STATUS))
    assert snap_compare(app, terminal_size=(80, 24), run_before=_settle)


def _conversation(project: Path) -> Session:
    s = Session.create(None, project)
    s.append_message(Role.USER, "Why does `test_parse` fail?")
    call = ToolCall("call_1", "bash", json.dumps({"command": "pytest -q tests/test_parse.py"}))
    s.append_message(
        Role.ASSISTANT, "Let me run it.", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
    )
    output = "\n".join(
        [".F.", "FAILED tests/test_parse.py::test_parse - KeyError: 'name'"]
        + [f"  frame {i}" for i in range(8)]
        + ["1 failed, 2 passed in 0.05s"]
    )
    s.append_tool_result("call_1", "bash", output, is_error=True)
    s.append_message(
        Role.ASSISTANT,
        "The parser reads `name` before checking it exists.\n\n- **Fix**: use `.get()`",
        stop_reason=StopReason.STOP,
    )
    return s


def test_conversation_with_a_tool_call(snap_compare: Any, make_app: MakeApp, project: Path) -> None:
    status = ContextStatus(
        model="openai/test-model", window=128_000, used=2_300, pct=1.8,
        session_input_tokens=4_100, session_output_tokens=220, session_cost=0.0123,
    )  # fmt: skip
    app = make_app(factory=fake_factory(model="openai/test-model", status=status))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await _agentsh(pilot).controller.switch_session(_conversation(project))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 30), run_before=run_before)


class StatusBars(App[None]):
    """One status bar per tier, plus a crowded one at 80 columns."""

    CSS = """
    StatusBar { height: 1; margin-bottom: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, statuses: list[ContextStatus]) -> None:
        super().__init__()
        self.statuses = statuses
        for theme in load_themes([shipped_themes_dir()]).themes:
            self.register_theme(theme)
        self.theme = "agentsh-dark"

    def compose(self) -> ComposeResult:
        for status in self.statuses:
            bar = StatusBar()
            bar.status = status
            bar.starting = False
            yield bar


def test_status_bar_in_each_tier(snap_compare: Any) -> None:
    def at(pct: float, tier: Tier, **extra: Any) -> ContextStatus:
        return ContextStatus(
            model="anthropic/claude-sonnet-4-6", window=200_000, used=int(2_000 * pct),
            pct=pct, tier=tier, **extra,
        )  # fmt: skip

    statuses = [
        at(41.0, Tier.NONE),
        at(82.0, Tier.MOVE_TO_WORKSPACE, compactions=1),
        at(88.5, Tier.SUMMARIZE, estimated=True, compactions=2),
        at(96.0, Tier.TRUNCATE, paused=True, compactions=3),
        at(
            88.5, Tier.SUMMARIZE, session_input_tokens=1_250_000, session_output_tokens=48_000,
            session_cost=4.2, compactions=2, paused=True, branch_index=2, branch_count=3,
        ),
    ]  # fmt: skip
    assert snap_compare(StatusBars(statuses), terminal_size=(80, 10))
