"""The summaries pane and what it does to the chat: every compaction on the path, the jump to
the first kept entry, the archived turns shown again in place, and ``/compact undo`` (against
the real agent and the scripted server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widget import Widget
from textual.widgets import OptionList

from agentsh.config import Environment, load_environment
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.options import LaunchOptions
from agentsh.tui.panes.summaries import SummariesPane, compaction_views, read_body
from agentsh.tui.projection import (
    ArchiveItem,
    AssistantItem,
    CompactionItem,
    ToolItem,
    UserItem,
    compaction_spans,
    project,
)
from agentsh.tui.screens.read_view import ReadView
from agentsh.tui.widgets.chat import ArchiveLine, ChatView
from agentsh.tui.widgets.messages import CompactionLine, UserMessage
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text
from tests.tui.conftest import MakeApp, fake_factory, idle, ready, submit, wait_for


@pytest.fixture(autouse=True)
def lasting_highlight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A jump highlights its target for 2 s. Mounting the rows a jump needs can hold the UI
    loop that long on a loaded machine, so the highlight was gone before the test looked
    and the test failed; the highlight's duration is not what these tests check."""
    from agentsh.tui.widgets import chat

    monkeypatch.setattr(chat, "HIGHLIGHT_S", 60.0)


SUMMARY = (
    "## Active Task\nturn three: the config loader\n\n## Goal\nMake the parser tests pass\n\n"
    "## Completed Actions\n- read src/parser.py\n\n## Key Decisions\n- use dict.get for name\n"
)


def turn(session: Session, n: int, *, tool: bool = False) -> None:
    session.append_message(Role.USER, f"request {n}")
    if tool:
        call = ToolCall(f"call_{n}", "bash", json.dumps({"command": f"make step{n}"}))
        session.append_message(
            Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
        )
        session.append_tool_result(f"call_{n}", "bash", f"step {n} done")
    session.append_message(Role.ASSISTANT, f"answer {n}", stop_reason=StopReason.STOP)


def compact(session: Session, first_kept: str, *, tier: str = "summarize", **kw: Any) -> str:
    entry = CompactionEntry(
        id=session.new_id(), parent_id=session.leaf_id, tier=tier, summary=kw.pop("summary", "S"),
        first_kept_id=first_kept, tokens_before=kw.pop("before", 90_000),
        tokens_after=kw.pop("after", 20_000), timestamp="2026-11-29T09:30:00.000Z", **kw,
    )  # fmt: skip
    session.append(entry)
    return entry.id


def user_ids(session: Session) -> list[str]:
    return [e.id for e in session.current_path() if getattr(e, "role", None) is Role.USER]


# -- the projection ---------------------------------------------------------------------------


def test_each_compaction_archives_what_lay_before_its_first_kept_entry_once(
    tmp_path: Path,
) -> None:
    s = Session.create(None, tmp_path)
    for n in range(1, 4):
        turn(s, n, tool=n == 1)
    first = compact(s, user_ids(s)[1])
    turn(s, 4)
    prune_only = compact(s, user_ids(s)[1], tier="move_to_workspace")
    turn(s, 5)
    second = compact(s, user_ids(s)[3])
    path = s.current_path()

    spans = compaction_spans(path)
    # turn 1 (4 entries with its tool call); then turns 2-3 and the first record (5 entries).
    assert [(sp.entry.id, sp.archived) for sp in spans] == [
        (first, 4),
        (prune_only, 0),
        (second, 5),
    ]
    views = compaction_views(path)
    assert [v.number for v in views] == [3, 2, 1]  # newest first
    assert [v.archived_turns for v in views] == [2, 0, 1]
    assert [type(i) for i in project(path)[:2]] == [ArchiveItem, ArchiveItem]
    assert views[1].prune_only


def test_the_read_view_lists_a_compactions_files_newest_first_modified_before_read(
    tmp_path: Path,
) -> None:
    """Like the Relevant Files the model sees: the log keeps them oldest first (by last touch),
    the reader wants the file just changed on top."""
    s = Session.create(None, tmp_path)
    turn(s, 1)
    read, modified = ("old.py", "mid.py", "new.py"), ("a.py", "b.py")
    compact(s, user_ids(s)[0], files_read=read, files_modified=modified)
    body = read_body(compaction_views(s.current_path())[0], None, "")
    shown_modified = body.index("**Files modified (newest first)** `b.py`, `a.py`")
    shown_read = body.index("**Files read (newest first)** `new.py`, `mid.py`, `old.py`")
    assert shown_modified < shown_read


def test_the_read_view_names_a_summarizes_two_files_and_a_prunes_none(tmp_path: Path) -> None:
    """A Summarize's summary file was shown as its "Workspace file" and its archive (the turns
    verbatim) nowhere; a prune-only compaction, whose record carries the previous one's file,
    showed that file as its own, and on an archiving tier read it as its archive."""
    s = Session.create(None, tmp_path)
    for n in range(1, 4):
        turn(s, n)
    first, second = user_ids(s)[1:3]
    compact(
        s, first, workspace_file="/w/002-summary.md", archive_file="/w/001-archive.md"
    )  # fmt: skip
    compact(s, first, tier="truncate", workspace_file="/w/002-summary.md")
    compact(s, second, tier="move_to_workspace", workspace_file="/w/003-archive.md")
    moved, pruned, summarized = compaction_views(s.current_path())
    body = read_body(summarized, None, "002-summary.md", "001-archive.md")
    assert "**Summary file** `002-summary.md`" in body
    assert "**Archive file** (the turns verbatim) `001-archive.md`" in body
    body = read_body(moved, "# Archived turns", "003-archive.md")
    assert "**Archive file** (the turns verbatim) `003-archive.md`" in body
    assert "Summary file" not in body
    body = read_body(pruned, None, "002-summary.md")
    assert pruned.prune_only and "002-summary.md" not in body
    assert "could not be read" not in body


def test_the_chat_folds_archived_entries_into_one_line_where_they_stood(tmp_path: Path) -> None:
    s = Session.create(None, tmp_path)
    for n in range(1, 4):
        turn(s, n, tool=n == 1)
    kept = user_ids(s)[2]
    cid = compact(s, kept)
    items = project(s.current_path())

    archive = items[0]
    assert isinstance(archive, ArchiveItem) and archive.compaction_id == cid
    assert archive.turns == 2
    kinds = [UserItem, ToolItem, AssistantItem, UserItem, AssistantItem]
    assert [type(i) for i in archive.items] == kinds
    assert isinstance(items[1], UserItem) and items[1].entry_id == kept
    assert isinstance(items[-1], CompactionItem)
    assert len(project(s.current_path(), fold=False)) == len(archive.items) + len(items) - 1


# -- with the real agent ------------------------------------------------------------------------


@pytest.fixture
def real_app(
    make_app: MakeApp, project: Path, scripted_server: ScriptedServer, monkeypatch: Any
) -> AgentshApp:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        '[context]\nsummarize_keep_turns = 1\n\n[search]\nembedding = "none"\n'
    )
    from agentsh.tui.lifecycle import build_real_agent

    env: Environment = load_environment(project, trust_project=True)
    options = LaunchOptions(model=TEST_MODEL, api_base=scripted_server.base_url)
    return make_app(factory=build_real_agent, options=options, environment=env)


async def _send(pilot: Any, app: AgentshApp, server: ScriptedServer, message: str) -> None:
    before = len(server.requests)
    await submit(pilot, app, message)
    await wait_for(pilot, lambda: len(server.requests) > before, 10)
    await idle(pilot, app)


def _visible(chat: ChatView, widget: Widget) -> bool:
    top = chat.scroll_offset.y
    return widget.is_mounted and top <= widget.virtual_region.y < top + chat.size.height


@pytest.mark.asyncio
async def test_a_compaction_appears_in_the_pane_its_jump_lands_on_the_first_kept_entry_and_undo_restores_the_context(  # noqa: E501
    real_app: AgentshApp, scripted_server: ScriptedServer
) -> None:
    app = real_app
    detail = " ".join(f"step{i}" for i in range(150))  # what leaves outweighs the summary
    scripted_server.script(
        text(f"The parser reads name before checking it. {detail}"),
        text(f"Next, guard the header. {detail}"),
        text("The config loader lower-cases keys."),
        text(SUMMARY),
        text("Back with the whole history."),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot, app)
        for message in ("turn one: why does test_parse fail?", "turn two: what next?",
                        "turn three: the config loader"):  # fmt: skip
            await _send(pilot, app, scripted_server, message)
        await submit(pilot, app, "/compact summarize")
        await wait_for(pilot, lambda: bool(app.query(CompactionLine)), 10)
        await idle(pilot, app)
        chat = app.query_one(ChatView)
        # The two archived turns folded into one line, live.
        await wait_for(pilot, lambda: bool(app.query(ArchiveLine)))
        assert [m.text for m in app.query(UserMessage)] == ["turn three: the config loader"]

        await pilot.press("f3")
        await wait_for(pilot, lambda: bool(app.query(SummariesPane)))
        pane = app.query_one(SummariesPane)
        await wait_for(pilot, lambda: len(pane.views) == 1)
        view = pane.views[0]
        assert view.entry.tier == "summarize" and view.archived_turns == 2
        row = str(pane.query_one(OptionList).options[0].prompt)
        assert row.startswith("#1 Summarize (manual)") and "2 turns archived" in row

        # Enter reads the summary as markdown.
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReadView))
        assert isinstance(app.screen, ReadView) and "## Goal" in app.screen.body
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ReadView))

        # g: the chat scrolls to the first kept entry and highlights it.
        chat.scroll_end(animate=False, immediate=True)
        await pilot.press("g")
        await wait_for(
            pilot, lambda: any(m.has_class("jump-target") for m in app.query(UserMessage))
        )
        target = next(m for m in app.query(UserMessage) if m.has_class("jump-target"))
        assert target.entry_id == view.entry.first_kept_id
        await wait_for(pilot, lambda: _visible(chat, target))

        # e: the archived turns come back in place, marked; e again folds them.
        await pilot.press("e")
        await wait_for(pilot, lambda: len(app.query(UserMessage)) == 3)
        archived = [m for m in app.query(UserMessage) if m.has_class("archived")]
        assert [m.text for m in archived] == [
            "turn one: why does test_parse fail?",
            "turn two: what next?",
        ]
        assert app.query_one(ArchiveLine).expanded
        await pilot.press("e")
        await wait_for(pilot, lambda: len(app.query(UserMessage)) == 1)

        # /compact undo: the context from before the compaction, as a new leaf.
        await submit(pilot, app, "/compact undo")
        await wait_for(pilot, lambda: not app.query(ArchiveLine), 10)
        await wait_for(pilot, lambda: not pane.views)
        assert app.controller.status_bar.status.compactions == 0
        assert len(app.query(UserMessage)) == 3
        await _send(pilot, app, scripted_server, "and now?")

    sent = scripted_server.requests[-1].messages
    contents = [str(m.get("content") or "") for m in sent]
    earlier_turns = (
        "turn one: why does test_parse fail?",
        "turn two: what next?",
        "The parser reads name before checking it. ",
        "Next, guard the header. ",
    )
    for earlier in earlier_turns:  # back in full, as their own messages
        assert any(c.startswith(earlier) for c in contents)
    assert not any("<context-summary>" in c for c in contents)
    assert contents[-1] == "and now?"


@pytest.mark.asyncio
async def test_the_jump_mounts_an_entry_the_chat_window_had_dropped(
    make_app: MakeApp, project: Path
) -> None:
    s = Session.create(None, project)
    for n in range(1, 80):
        turn(s, n, tool=n % 3 == 0)
    kept = user_ids(s)[5]
    compact(s, kept, summary="## Goal\nkeep going")
    for n in range(80, 120):
        turn(s, n)
    app = make_app(factory=fake_factory(model="openai/test-model"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(s)
        chat = app.query_one(ChatView)
        row = chat.row_of(kept)
        assert row is not None and chat.first > row
        await pilot.press("f3")
        await wait_for(pilot, lambda: bool(app.query(SummariesPane)))
        pane = app.query_one(SummariesPane)
        await wait_for(pilot, lambda: len(pane.views) == 1)
        await pilot.press("g")
        # The jump mounts the dropped rows first: on a busy machine that takes several frames.
        await wait_for(
            pilot,
            lambda: any(
                m.entry_id == kept and m.has_class("jump-target") for m in app.query(UserMessage)
            ),
        )
        target = next(m for m in app.query(UserMessage) if m.entry_id == kept)
        await wait_for(pilot, lambda: _visible(chat, target))
        # The window stays contiguous: every row in it has its widget, in order. (Checked
        # once it is at rest: scrolling to the target may grow the window a few rows more.)

        def contiguous() -> bool:
            mounted = [r.widget for r in chat.rows[chat.first : chat.last]]
            return (
                all(w is not None and w.is_mounted for w in mounted)
                and list(chat.children) == mounted
            )

        await wait_for(pilot, contiguous, limit_s=5)


@pytest.mark.asyncio
async def test_an_archive_tier_reads_its_workspace_file(make_app: MakeApp, project: Path) -> None:
    s = Session.create(None, project)
    for n in range(1, 4):
        turn(s, n)
    archive = project / "001-archive.md"
    archive.write_text("# Archived turns\n\n**user**: request 1\n")
    compact(s, user_ids(s)[2], tier="move_to_workspace", summary="", workspace_file=str(archive))
    app = make_app(factory=fake_factory(model="openai/test-model"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(s)
        await pilot.press("f3")
        await wait_for(pilot, lambda: bool(app.query(SummariesPane)))
        await wait_for(pilot, lambda: len(app.query_one(SummariesPane).views) == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReadView))
        screen = app.screen
        assert isinstance(screen, ReadView)
        assert "MoveToWorkspace" in screen.title_text
        assert "# Archived turns" in screen.body and "001-archive.md" in screen.body


@pytest.mark.asyncio
async def test_at_80x24_the_jump_closes_the_panel_that_covers_the_chat(
    make_app: MakeApp, project: Path
) -> None:
    from agentsh.tui.panes.panel import SidePanel

    s = Session.create(None, project)
    for n in range(1, 12):
        turn(s, n)
    kept = user_ids(s)[3]
    compact(s, kept)
    turn(s, 12)
    app = make_app(factory=fake_factory(model="openai/test-model"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.switch_session(s)
        await pilot.press("f3")
        await wait_for(pilot, lambda: bool(app.query(SummariesPane)))
        panel = app.query_one(SidePanel)
        assert panel.is_open and panel.overlays_chat
        await wait_for(pilot, lambda: len(app.query_one(SummariesPane).views) == 1)
        await pilot.press("g")
        await wait_for(pilot, lambda: not panel.is_open)
        chat = app.query_one(ChatView)
        target = next(m for m in app.query(UserMessage) if m.entry_id == kept)
        await wait_for(pilot, lambda: _visible(chat, target))
        assert target.has_class("jump-target")
