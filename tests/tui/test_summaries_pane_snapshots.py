"""Snapshots of the summaries pane: two compactions at 80x24 (the panel over the chat), and at
120x32 the chat beside it with one compaction's archived turns shown again in place. Fixed
sizes, a stand-in agent, fixed timestamps read in UTC, no paths. Update with --snapshot-update."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agentsh.events import ContextStatus
from agentsh.session.session import Session
from agentsh.tui.panes.summaries import SummariesPane
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, fake_factory, wait_for
from tests.tui.test_summaries_pane import compact, turn, user_ids

STATUS = ContextStatus(
    model="openai/test-model", window=128_000, used=21_000, pct=16.4, compactions=2
)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _session(project: Path) -> Session:
    s = Session.create(None, project)
    for n in range(1, 5):
        turn(s, n, tool=n == 2)
    compact(
        s, user_ids(s)[2], before=142_000, after=31_000,
        summary="## Active Task\nrequest 3\n\n## Goal\nFix the parser",
        files_read=("src/parser.py", "tests/test_parser.py"), files_modified=("src/parser.py",),
    )  # fmt: skip
    for n in range(5, 7):
        turn(s, n)
    compact(s, user_ids(s)[4], tier="move_to_workspace", summary="", before=118_000, after=96_000)
    turn(s, 7)
    return s


async def _open(pilot: Pilot[Any], project: Path) -> SummariesPane:
    app: Any = pilot.app
    await wait_for(pilot, lambda: app.controller.ready)
    app.query_one(PromptInput).cursor_blink = False
    await app.controller.switch_session(_session(project))
    await pilot.press("f3")
    await wait_for(pilot, lambda: bool(app.query(SummariesPane)))
    pane: SummariesPane = app.query_one(SummariesPane)
    await wait_for(pilot, lambda: len(pane.views) == 2)
    return pane


def test_summaries_pane_at_80x24(snap_compare: Any, make_app: MakeApp, project: Path) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=STATUS))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _open(pilot, project)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_archived_turns_shown_again_beside_the_summaries_pane(
    snap_compare: Any, make_app: MakeApp, project: Path
) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=STATUS))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _open(pilot, project)
        await pilot.press("down", "e")  # the older compaction: its two archived turns
        await pilot.pause()
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)
