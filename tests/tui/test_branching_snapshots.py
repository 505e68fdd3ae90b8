"""Snapshot tests of branching (pytest-textual-snapshot): the tree pane beside the chat, the
tree pane in the chat's place at 80x24, and the chat of a path that goes through a fork. Fixed
sizes, a stand-in agent with a fixed status, and nothing on screen that depends on ids, times
or paths. Update with --snapshot-update."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from agentsh.events import ContextStatus
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.panes.tree_pane import TreeView
from agentsh.tui.widgets.composer import PromptInput
from tests.tui.conftest import MakeApp, fake_factory, wait_for


def _status(index: int, count: int) -> ContextStatus:
    return ContextStatus(
        model="openai/test-model", window=128_000, used=9_400, pct=7.3,
        session_input_tokens=30_100, session_output_tokens=1_250, session_cost=0.0412,
        branch_index=index, branch_count=count,
    )  # fmt: skip


def _branched(project: Path) -> Session:
    """A parser fix tried two ways: the session forks after the diagnosis."""
    s = Session.create(None, project)
    s.append_message(Role.USER, "Why does `test_parse` fail?")
    call = ToolCall("call_1", "bash", json.dumps({"command": "pytest -q tests/test_parse.py"}))
    s.append_message(Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS)
    s.append_tool_result("call_1", "bash", "FAILED tests/test_parse.py - KeyError: 'name'")
    diagnosis = s.append_message(
        Role.ASSISTANT,
        "The parser reads `name` before checking it exists.",
        stop_reason=StopReason.STOP,
    )
    s.append(
        CompactionEntry(
            id=s.new_id(), parent_id=s.leaf_id, tier="summarize", summary="## Goal\nfix the parser",
            first_kept_id=diagnosis.id, tokens_before=142_000, tokens_after=31_000,
        )
    )  # fmt: skip
    fork = s.leaf_id
    quick = s.append_message(Role.USER, "Fix it with `.get()`.")
    s.append_message(Role.ASSISTANT, "Done: `data.get('name')`; the test passes.")
    s.set_label(quick.id, "quick fix")
    s.move_leaf(fork)
    s.append_message(Role.USER, "Rewrite the parser with a tokenizer instead.")
    s.append_message(Role.ASSISTANT, "Rewritten; all 14 parser tests pass.")
    return s


async def _show(pilot: Pilot[Any], project: Path, *, tree: bool) -> None:
    app: Any = pilot.app
    await wait_for(pilot, lambda: app.controller.ready)
    app.query_one(PromptInput).cursor_blink = False
    await app.controller.switch_session(_branched(project))
    if tree:
        await pilot.press("f4")
        await wait_for(
            pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus
        )
    await pilot.pause(0.5)  # the tab underline's animation ends


def test_tree_pane_beside_the_chat(snap_compare: Any, make_app: MakeApp, project: Path) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=_status(2, 2)))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _show(pilot, project, tree=True)

    assert snap_compare(app, terminal_size=(120, 30), run_before=run_before)


def test_tree_pane_in_place_of_the_chat_at_80x24(
    snap_compare: Any, make_app: MakeApp, project: Path
) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=_status(2, 2)))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _show(pilot, project, tree=True)
        await pilot.press("ctrl+t")  # no tool results

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_chat_of_a_path_through_a_branch_point(
    snap_compare: Any, make_app: MakeApp, project: Path
) -> None:
    app = make_app(factory=fake_factory(model="openai/test-model", status=_status(2, 2)))

    async def run_before(pilot: Pilot[Any]) -> None:
        await _show(pilot, project, tree=False)

    assert snap_compare(app, terminal_size=(80, 30), run_before=run_before)
