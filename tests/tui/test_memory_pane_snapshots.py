"""Snapshot of the memory pane at 80x24: both curated files with fill bars, an entry added and
one rewritten since the session's snapshot, a blocked entry, docs grouped by type. Fixed size,
a stand-in agent with a fixed model, no clocks or paths on screen. Update with
--snapshot-update."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agentsh.events import ContextStatus
from agentsh.tui.panes.memory_pane import MemoryPane
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, wait_for
from tests.tui.test_memory_pane import INJECTION, SEP, snapshot_factory, write_project

STATUS = ContextStatus(model="openai/test-model", window=128_000, used=2_300, pct=1.8)


@pytest.fixture(autouse=True)
def _close_indexes() -> Iterator[None]:
    yield
    from agentsh.memory.index_registry import close_shared

    close_shared()


def test_memory_pane_at_80x24(snap_compare: Any, make_app: MakeApp, project: Path) -> None:
    env = write_project(project)
    env.user.user_memory_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.user_memory_file.write_text("Prefers short answers." + SEP + "Uses fish shell.\n")
    factory = snapshot_factory(env)

    def build(e: Any, session: Any, options: Any) -> Any:
        agent = factory(e, session, options)
        agent.set_status(STATUS)
        return agent

    app = make_app(factory=build, environment=env)

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.controller.ready)
        app.query_one(PromptInput).cursor_blink = False
        env.project.memory_file.write_text(
            "The project uses pytest; run `pytest -q` from the repository root."
            + SEP
            + "The parser lives in src/parser.py and reads `name` from the header."
            + SEP
            + INJECTION
            + "\n"
        )
        await pilot.press("f2")
        await wait_for(pilot, lambda: bool(app.query(MemoryPane)))
        pane = app.query_one(MemoryPane)
        await wait_for(pilot, lambda: pane.refreshes > 0 and pane.model is not None)
        await wait_for(pilot, lambda: pane.watching, limit_s=20)
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
