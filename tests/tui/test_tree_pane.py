"""The tree pane: its rows (layout, texts, filters, search, folds) as pure data, and the pane
in the App (F4, Esc Esc, filter keys, type-to-search, labels, Enter, the narrow layout, the
command palette). The agent is the scripted stand-in here; the branch keys against the real
agent are in test_branching.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from textual.color import Color
from textual.widgets import Input

from agentsh.session.entries import (
    CheckpointEntry,
    CompactionEntry,
    ModelChangeEntry,
    Role,
    StopReason,
    ToolCall,
)
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.panes.panel import PaneName, SidePanel
from agentsh.tui.panes.tree_model import TreeFilter, TreeModel
from agentsh.tui.panes.tree_pane import TreePane, TreeView
from agentsh.tui.themes import shipped_themes_dir
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import UserMessage
from tests.tui.conftest import (
    MakeApp,
    esc_esc,
    fake_factory,
    ready,
    screen_text,
    session_of,
    wait_for,
)

if TYPE_CHECKING:
    from textual.pilot import Pilot

# -- a session with a tool call, a compaction, a model change and a fork ------------------------


def _session(project: Path, folder: Path | None = None) -> tuple[Session, dict[str, str]]:
    s = Session.create(folder, project)
    ids: dict[str, str] = {}
    ids["ask"] = s.append_message(Role.USER, "why does test_parse fail?").id
    call = ToolCall("c1", "bash", json.dumps({"command": "pytest -q"}))
    ids["call"] = s.append_message(
        Role.ASSISTANT, "", tool_calls=(call,), stop_reason=StopReason.TOOL_CALLS
    ).id
    ids["result"] = s.append_tool_result("c1", "bash", "1 failed").id
    ids["answer"] = s.append_message(Role.ASSISTANT, "It reads name too early.").id
    compaction = CompactionEntry(
        id=s.new_id(),
        parent_id=s.leaf_id,
        tier="summarize",
        summary="## Goal\nfix the parser",
        first_kept_id=ids["answer"],
        tokens_before=142_000,
        tokens_after=31_000,
    )
    ids["compaction"] = s.append(compaction).id
    ids["model"] = s.append(
        ModelChangeEntry(id=s.new_id(), parent_id=s.leaf_id, model="openai/other")
    ).id
    ids["fix"] = s.append_message(Role.USER, "fix it with get()").id
    ids["fixed"] = s.append_message(Role.ASSISTANT, "Done.", stop_reason=StopReason.STOP).id
    s.move_leaf(ids["model"])
    ids["alt"] = s.append_message(Role.USER, "rewrite the parser instead").id
    ids["alt_reply"] = s.append_message(Role.ASSISTANT, "Rewritten.").id
    s.set_label(ids["fix"], "quick fix")
    return s, ids


def _lines(model: TreeModel) -> list[str]:
    out = []
    for row in model.rows:
        text = model.text(row.entry_id)
        label = model.label(row.entry_id)
        fold = ("⊞ " if row.folded else "⊟ ") if row.fork else ""
        role = f"{text.role}: " if text.role else ""
        out.append(f"{row.prefix}{fold}{f'[{label}] ' if label else ''}{role}{text.text}")
    return out


def test_rows_indent_only_at_forks_with_tool_calls_and_compactions_shown_inline(
    project: Path,
) -> None:
    s, _ = _session(project)
    model = TreeModel(s.tree)
    model.filter = TreeFilter.ALL
    model.rebuild()
    assert _lines(model) == [
        "user: why does test_parse fail?",
        "assistant: [bash: pytest -q]",
        "[bash: pytest -q]",
        "assistant: It reads name too early.",
        "[compaction: summarize, 142k -> 31k]",
        "⊟ [model: openai/other]",
        "├─ [quick fix] user: fix it with get()",
        "│  assistant: Done.",
        "└─ user: rewrite the parser instead",
        "   assistant: Rewritten.",
    ]


def test_the_default_filter_hides_model_changes_and_replies_that_only_call_tools(
    project: Path,
) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    model.rebuild()
    shown = [row.entry_id for row in model.rows]
    assert ids["call"] not in shown and ids["model"] not in shown
    assert ids["result"] in shown  # the call is shown once, as its result's row
    # The fork survives the hidden model change: its branches hang below the compaction.
    assert model.rows[shown.index(ids["compaction"])].fork


def test_a_hidden_kind_is_shown_when_it_is_the_leaf(project: Path) -> None:
    s, ids = _session(project)
    s.move_leaf(ids["call"])
    model = TreeModel(s.tree)
    model.rebuild()
    assert ids["call"] in [row.entry_id for row in model.rows]
    s.move_leaf(ids["alt_reply"])
    assert model.rebuild()  # the exception moved with the leaf
    assert ids["call"] not in [row.entry_id for row in model.rows]


def test_filters_no_tools_user_only_and_labelled(project: Path) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    model.filter = TreeFilter.NO_TOOLS
    model.rebuild()
    assert ids["result"] not in [row.entry_id for row in model.rows]
    model.filter = TreeFilter.USER
    model.rebuild()
    assert _lines(model) == [
        "⊟ user: why does test_parse fail?",
        "├─ [quick fix] user: fix it with get()",
        "└─ user: rewrite the parser instead",
    ]
    model.filter = TreeFilter.LABELLED
    model.rebuild()
    assert [row.entry_id for row in model.rows] == [ids["fix"]]
    assert TreeFilter.ALL.next() is TreeFilter.DEFAULT


def test_search_matches_every_word_in_text_role_and_label(project: Path) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    model.query = "PARSER rewrite"
    model.rebuild()
    assert [row.entry_id for row in model.rows] == [ids["alt"]]
    model.query = "quick"
    model.rebuild()
    assert [row.entry_id for row in model.rows] == [ids["fix"]]
    model.query = "nothing like this"
    model.rebuild()
    assert model.rows == []


def test_folding_a_fork_hides_its_branches_and_the_cursor_finds_the_fork(project: Path) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    model.folded.add(ids["compaction"])
    model.rebuild()
    fork = model.rows[-1]
    assert fork.entry_id == ids["compaction"] and fork.folded and fork.branches == 2
    assert model.index_of(ids["alt_reply"]) == len(model.rows) - 1  # nearest shown ancestor


def test_fork_jumps_go_to_the_enclosing_and_the_next_fork(project: Path) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    model.rebuild()
    fork = model.index_of(ids["compaction"])
    leaf = model.index_of(ids["alt_reply"])
    assert fork is not None and leaf is not None
    assert model.fork_above(leaf) == fork
    assert model.fork_below(0) == fork
    assert model.fork_above(0) is None


def test_rows_are_rebuilt_only_when_the_tree_or_the_view_changed(project: Path) -> None:
    s, ids = _session(project)
    model = TreeModel(s.tree)
    assert model.rebuild()
    s.move_leaf(ids["fixed"])  # a leaf move is drawn from the path, not rebuilt
    assert not model.rebuild()
    s.set_label(ids["ask"], "start")
    assert model.rebuild()
    s.append_message(Role.USER, "more")
    assert model.rebuild()
    assert not model.rebuild()


def _checkpoint(s: Session, target: str, seq: int, files: tuple[str, ...]) -> None:
    s.append(
        CheckpointEntry(
            id=s.new_id(),
            parent_id=None,
            target_id=target,
            store="s1",
            seq=seq,
            reason="tool",
            files=files,
            changed=len(files),
        )
    )


def test_deep_forks_never_need_recursion(project: Path) -> None:
    s = Session.create(None, project)
    parent = s.append_message(Role.USER, "root").id
    for i in range(3000):  # every entry a fork: the deepest possible indentation
        s.append_message(Role.ASSISTANT, f"dead end {i}")
        s.move_leaf(parent)
        parent = s.append_message(Role.ASSISTANT, f"step {i}").id
    model = TreeModel(s.tree)
    model.filter = TreeFilter.ALL
    model.rebuild()
    assert len(model.rows) == len(s.tree)


# -- the pane in the App ---------------------------------------------------------------------


def _pane(app: AgentshApp) -> TreePane:
    return app.query_one(TreePane)


def _filter(pane: TreePane) -> TreeFilter:
    """Read afresh after each key (mypy would keep an attribute narrowed across awaits)."""
    return pane.model.filter


def _footer(app: AgentshApp) -> str:
    return str(app.query_one("#tree-footer").render())


async def _open_with(pilot: Pilot[None], app: AgentshApp, project: Path) -> dict[str, str]:
    folder = app.env.user.project_sessions_dir(project)
    session, ids = _session(project, folder)
    await app.controller.switch_session(session)
    await pilot.press("f4")
    await wait_for(pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus)
    return ids


@pytest.mark.asyncio
async def test_f4_opens_the_tree_on_the_leaf_and_toggles_it_closed(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        view = app.query_one(TreeView)
        assert view.current_id == ids["alt_reply"]
        assert _footer(app) == f"({view.cursor + 1}/{len(view.model.rows)}) [default]"
        panel = app.query_one(SidePanel)
        assert panel.is_open and panel.active is PaneName.TREE
        assert app.query_one("#chat-column").display  # wide: the chat stays beside it
        await pilot.press("f4")
        assert not panel.is_open
        assert isinstance(app.focused, PromptInput)


@pytest.mark.asyncio
async def test_filter_keys_search_and_escape(make_app: MakeApp, project: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        pane = _pane(app)
        await pilot.press("ctrl+u")
        assert _filter(pane) is TreeFilter.USER and "[user only]" in _footer(app)
        await pilot.press("ctrl+l")
        assert [r.entry_id for r in pane.model.rows] == [ids["fix"]]
        await pilot.press("ctrl+o")
        assert _filter(pane) is TreeFilter.ALL
        await pilot.press("ctrl+d")
        await pilot.press(*"rewrite")
        assert pane.model.query == "rewrite"
        assert [r.entry_id for r in pane.model.rows] == [ids["alt"]]
        assert "search: rewrite" in str(app.query_one("#tree-search").render())
        await pilot.press("backspace")
        assert pane.model.query == "rewrit"
        await pilot.press("escape")  # clears the search first
        assert pane.model.query == "" and app.query_one(SidePanel).is_open
        await pilot.press("escape")  # then leaves the tree (opened with F4: the panel stays)
        assert isinstance(app.focused, PromptInput)
        assert app.query_one(SidePanel).is_open


@pytest.mark.asyncio
async def test_fold_and_unfold_with_left_and_right(make_app: MakeApp, project: Path) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        view = app.query_one(TreeView)
        await pilot.press("left")  # on a branch: jump to its fork
        assert view.current_id == ids["compaction"]
        await pilot.press("left")  # on the fork: fold it
        assert view.model.rows[view.cursor].folded
        assert ids["alt"] not in [r.entry_id for r in view.model.rows]
        await pilot.press("right")
        assert ids["alt"] in [r.entry_id for r in view.model.rows]


@pytest.mark.asyncio
async def test_l_labels_the_entry_and_an_empty_label_clears_it(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        session = session_of(app)
        await pilot.press("l")
        await pilot.press(*"rewrite v1", "enter")
        await wait_for(pilot, lambda: session.tree.labels.get(ids["alt_reply"]) == "rewrite v1")
        await wait_for(pilot, lambda: _pane(app).model.label(ids["alt_reply"]) == "rewrite v1")
        assert app.query_one(TreeView).has_focus
        await pilot.press("L")
        editor = app.query_one("#tree-label-input", Input)
        assert editor.value == "rewrite v1"
        editor.value = ""
        await pilot.press("enter")
        await wait_for(pilot, lambda: ids["alt_reply"] not in session.tree.labels)


@pytest.mark.asyncio
async def test_enter_moves_the_leaf_and_on_a_user_message_edits_it(
    make_app: MakeApp, project: Path
) -> None:
    # Without a model no branch summary is offered, so no question stops the move.
    app = make_app(fake_factory(model=None))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        session = session_of(app)
        view = app.query_one(TreeView)
        view.move_cursor(view.model.index_of(ids["fixed"]) or 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: session.leaf_id == ids["fixed"])
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)][-1:]
                       == ["fix it with get()"])  # fmt: skip
        assert app.controller.status_bar.status is not None
        view.move_cursor(view.model.index_of(ids["alt"]) or 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: session.leaf_id == ids["model"])
        assert app.query_one(PromptInput).text == "rewrite the parser instead"
        # The move is a leaf record in the file: a resume lands here.
        assert session.path is not None
        reopened = Session.open(session.path, lock=False)
        assert reopened.leaf_id == ids["model"]


@pytest.mark.asyncio
async def test_escape_twice_on_an_empty_editor_opens_the_tree_in_place_of_a_narrow_chat(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        session, _ = _session(project, app.env.user.project_sessions_dir(project))
        await app.controller.switch_session(session)
        await esc_esc(pilot, app)
        await wait_for(
            pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus
        )
        assert not app.query_one("#chat-column").display  # narrow: the tree takes its place
        await pilot.press("escape")
        assert not app.query_one(SidePanel).is_open
        assert app.query_one("#chat-column").display and isinstance(app.focused, PromptInput)
        # Not with text in the editor: Esc there must never throw a draft's context away.
        await pilot.press(*"draft")
        await esc_esc(pilot, app)
        await pilot.pause(0.1)
        assert not app.query_one(SidePanel).is_open


@pytest.mark.asyncio
async def test_two_escapes_further_apart_than_the_window_do_not_open_the_tree(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        window_s = app.env.settings.tui.esc_esc_ms / 1000
        now = [1000.0]
        app.controller.branching.escapes.clock = lambda: now[0]
        await pilot.press("escape")
        now[0] += window_s + 0.01
        await pilot.press("escape")  # too late: a first press again
        await pilot.pause(0.1)
        assert not app.query_one(SidePanel).is_open
        now[0] += window_s - 0.01  # inside the window
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.query_one(SidePanel).is_open)


@pytest.mark.asyncio
async def test_the_command_palette_toggles_the_panes(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.press(*"summaries pane")
        await pilot.pause(0.3)
        await pilot.press("enter")
        panel = app.query_one(SidePanel)
        await wait_for(pilot, lambda: panel.is_open and panel.active is PaneName.SUMMARIES)


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["f2", "f3"])
async def test_escape_leaves_the_memory_and_summaries_panes_like_the_tree(
    make_app: MakeApp, key: str
) -> None:
    app = make_app()
    # Narrow: the pane takes the chat's place, so Esc is the way back to it.
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        panel = app.query_one(SidePanel)
        await pilot.press(key)
        await wait_for(pilot, lambda: panel.is_open and app.focused is not None)
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors)
        assert not app.query_one("#chat-column").display
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not panel.is_open
        assert app.query_one("#chat-column").display and isinstance(app.focused, PromptInput)
        # A second Esc right after is not "Esc Esc on an empty editor": no tree pops up.
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert not panel.is_open
    # Wide: the panel stays beside the chat; Esc hands the keys back to the editor, and Esc
    # there closes the panel (seen: it did nothing, so the pane looked deaf to Esc).
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        panel = app.query_one(SidePanel)
        await pilot.press(key)
        await wait_for(pilot, lambda: panel.is_open and app.focused is not None)
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert panel.is_open and isinstance(app.focused, PromptInput)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not panel.is_open)
        assert isinstance(app.focused, PromptInput)


def _contrast(fg: Color, bg: Color) -> float:
    def luminance(c: Color) -> float:
        def channel(v: int) -> float:
            s = v / 255
            return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

        return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)

    hi, lo = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.asyncio
@pytest.mark.parametrize("theme", sorted(p.stem for p in shipped_themes_dir().glob("*.toml")))
async def test_the_focused_tree_row_is_readable_in_every_shipped_theme(
    make_app: MakeApp, project: Path, theme: str
) -> None:
    # The cursor painted $primary under the role colours: white on yellow in the
    # high-contrast theme, purple on blue in the light one.
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        app.theme = theme
        session, _ = _session(project, app.env.user.project_sessions_dir(project))
        await app.controller.switch_session(session)
        await pilot.press("f4")
        await wait_for(
            pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus
        )
        await pilot.pause(0.1)
        view = app.query_one(TreeView)
        strip = view.render_line(view.cursor - round(view.scroll_y))
        for segment in strip:
            if not segment.text.strip() or segment.style is None:
                continue
            style = segment.style
            assert style.color is not None and style.bgcolor is not None
            fg = Color.from_rich_color(style.color)
            bg = Color.from_rich_color(style.bgcolor)
            assert _contrast(fg, bg) >= 4.5, (segment.text, fg.hex, bg.hex)


@pytest.mark.asyncio
@pytest.mark.parametrize(("size", "leaf_at"), [((120, 36), 59), ((80, 24), 59), ((80, 24), 30)])
async def test_the_tree_opens_with_the_current_entry_in_view(
    make_app: MakeApp, project: Path, size: tuple[int, int], leaf_at: int
) -> None:
    """Seen: the tree opened with the current entry just below the fold (issue 14)."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        folder = app.env.user.project_sessions_dir(project)
        s = Session.create(folder, project)
        ids = [s.append_message(Role.USER if i % 2 == 0 else Role.ASSISTANT, f"m{i}").id
               for i in range(60)]  # fmt: skip
        s.move_leaf(ids[leaf_at])
        await app.controller.switch_session(s)
        await pilot.pause(0.3)  # the hidden tree is built while the user reads
        await pilot.press("f4")
        view = app.query_one(TreeView)
        await wait_for(pilot, lambda: view.has_focus)
        await pilot.pause()
        assert view.current_id == ids[leaf_at]
        top = round(view.scroll_y)
        height = view.scrollable_content_region.height
        assert top <= view.cursor < top + height
        screen = screen_text(app)
        assert f"m{leaf_at}" in screen


@pytest.mark.asyncio
async def test_entries_whose_checkpoints_changed_files_are_marked(
    make_app: MakeApp, project: Path
) -> None:
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot, app)
        ids = await _open_with(pilot, app, project)
        session = session_of(app)
        model = app.query_one(TreeView).model
        assert model.files_changed(ids["result"]) == 0
        # Records are annotations: they add no row, and one that changed nothing marks nothing.
        _checkpoint(session, ids["ask"], 1, ())
        _checkpoint(session, ids["result"], 2, ("a.py", "b.py", "c.py"))
        _checkpoint(session, ids["alt_reply"], 3, ("a.py",))
        app.query_one(TreePane).refresh_content()
        await wait_for(pilot, lambda: "✎ 3 files" in screen_text(app))
        assert model.files_changed(ids["result"]) == 3
        assert model.files_changed(ids["ask"]) == 0
        text = screen_text(app)
        assert "✎ 1 file" in text and "✎ 1 files" not in text


@pytest.mark.asyncio
async def test_a_tree_pane_whose_children_are_gone_mounts_quietly(make_app: MakeApp) -> None:
    """Quitting as the tree pane was prebuilt: the app removes children first, the pane's
    Mount came after them, and its look-up of the tree raised (a fresh-clone suite's error
    in a test that quits at once)."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: app.controller.current_session() is not None)
        pane = TreePane(app.query_one(SidePanel).host)
        pane.on_mount()  # no children, as when they were removed before the Mount arrived


@pytest.mark.asyncio
async def test_a_row_wider_than_the_pane_ends_in_an_ellipsis(
    make_app: MakeApp, project: Path
) -> None:
    """A long message's row was cut at the pane's edge mid-word, as if it ended there."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        s = Session.create(app.env.user.project_sessions_dir(project), project)
        s.append_message(Role.USER, "short")
        s.append_message(Role.ASSISTANT, "wide " * 40 + "END")
        await app.controller.switch_session(s)
        await pilot.press("f4")
        view = app.query_one(TreeView)
        await wait_for(pilot, lambda: view.has_focus)
        await pilot.pause()
        width = view.scrollable_content_region.width
        rows = [view.render_line(y - round(view.scroll_y)) for y in range(2)]
        short, long = (strip.text for strip in rows)
        assert all(strip.cell_length == width for strip in rows)
        assert long.rstrip().endswith("…") and "END" not in long
        assert "…" not in short and short.rstrip().endswith("short")


@pytest.mark.asyncio
async def test_switching_panes_keeps_the_keys_in_the_panel(make_app: MakeApp) -> None:
    """F2 then F3 at 80x24 left nothing focused (in a terminal, each time; here, a race lost
    one switch in five or so, so the test switches many times): the memory list, hidden by
    the switch, gave the focus to a hidden sibling after the new pane took it, and Esc (the
    way back to the chat the pane had replaced) did nothing."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        panel = app.query_one(SidePanel)
        for key in ("f2", "f3", "f2", "f4", "f2", "f3", "f4", "f3", "f2", "f3") * 2:
            await pilot.press(key)
            await pilot.pause(0.3)
            focused = app.focused
            assert focused is not None and panel in focused.ancestors, key
            assert focused.display and focused.region.height > 0
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not panel.is_open and isinstance(app.focused, PromptInput)


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["f2", "f3"])
@pytest.mark.parametrize(("size", "narrow"), [((80, 24), True), ((120, 36), False)])
async def test_esc_in_a_pane_over_the_chat_shows_the_running_turn_before_cancelling_it(
    make_app: MakeApp, key: str, size: tuple[int, int], narrow: bool
) -> None:
    """At 80 columns a pane takes the chat's place; Esc there, to go back to the chat,
    cancelled the turn the pane hid, and left the pane up. Now the first Esc goes back to the
    chat (the turn runs on, in sight) and the next one cancels it, as the tree's own Esc
    already did. Beside a wide chat, where the turn is in sight, Esc cancels at once."""
    import asyncio
    from collections.abc import AsyncIterator

    from agentsh.events import Event, TurnEnded, TurnOutcome
    from tests.tui.fake_agent import FakeAgent

    gate = asyncio.Event()

    class GatedAgent(FakeAgent):
        def cancel(self) -> None:
            super().cancel()
            gate.set()

    async def gated(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        await gate.wait()
        yield TurnEnded(TurnOutcome.ABORTED)

    app = make_app(factory=lambda _e, s, _o: GatedAgent(s, script=gated))
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await pilot.press(*"work", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        panel = app.query_one(SidePanel)
        await pilot.press(key)
        await wait_for(pilot, lambda: app.focused is not None and panel in app.focused.ancestors)
        await pilot.pause(0.2)
        await pilot.press("escape")
        await pilot.pause(0.1)
        if narrow:
            assert app.controller.turn_running and not panel.is_open
            assert app.query_one("#chat-column").display
            assert isinstance(app.focused, PromptInput)
            await pilot.press("escape")
        await wait_for(pilot, lambda: not app.controller.turn_running)
