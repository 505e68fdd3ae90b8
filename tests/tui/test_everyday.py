"""The everyday loop's small habits (issue 14): the setup help at 80 columns, a click in the
chat, the first F3."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual import events
from textual.color import Color
from textual.widget import Widget
from textual.widgets import Static, TabbedContent

from agentsh.config import Environment
from agentsh.events import (
    AssistantMessage,
    ErrorKind,
    ErrorOccurred,
    Event,
    TextDelta,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.llm.models import HELP_COLUMNS, no_model_help
from agentsh.tui.app import AgentshApp
from agentsh.tui.panes.panel import PaneName, SidePanel
from agentsh.tui.themes import shipped_themes_dir
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import CompletionMenu, PromptInput
from agentsh.tui.widgets.messages import NoteMarkdown, UserMessage
from tests.tui.conftest import (
    MakeApp,
    fake_factory,
    idle,
    ready,
    screen_text,
    submit,
    wait_for,
)
from tests.tui.fake_agent import FakeAgent

pytestmark = pytest.mark.asyncio


async def test_the_setup_help_fits_an_80_column_chat_and_names_the_user_config(
    make_app: MakeApp, env: Environment
) -> None:
    async def no_model(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        yield ErrorOccurred(ErrorKind.NO_MODEL, no_model_help(env.user.config_file))
        yield TurnEnded(TurnOutcome.ERROR, error="no model")

    app = make_app(factory=fake_factory(model=None, script=no_model))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"hi", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        await pilot.pause()
        note = app.query_one(NoteMarkdown)
        assert str(env.user.config_file) in note.text  # AGENTSH_HOME=DIR: DIR/config/config.toml
        body = note.query_one(Static)
        assert body.content_region.width >= HELP_COLUMNS  # no line of the help wraps


async def test_the_first_f3_never_shows_an_empty_tab_s_name(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summaries pane takes a moment to build the first time (seen: about a second);
    meanwhile the screen showed the memory tab's CSS identifier, `TabPane#tab-memory`."""
    original = SidePanel._ensure_pane

    async def slow_build(self: SidePanel, name: PaneName) -> Widget:
        await asyncio.sleep(0.3)
        return await original(self, name)

    monkeypatch.setattr(SidePanel, "_ensure_pane", slow_build)
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        screens: list[str] = []
        done = False

        async def sample() -> None:
            while not done:
                screens.append(screen_text(app))
                await asyncio.sleep(0.02)

        sampler = asyncio.create_task(sample())
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.query_one(SidePanel).active is PaneName.SUMMARIES)
        await pilot.pause(0.1)
        done = True
        await sampler
        assert len(screens) > 5
        assert not [s for s in screens if "TabPane" in s]
        # A tab chosen with the mouse shows nothing while its pane is built.
        tabs = app.query_one("#side-tabs", TabbedContent)
        assert "TabPane" not in str(tabs.get_pane(PaneName.MEMORY.tab_id).render())


async def test_a_click_in_the_chat_leaves_typing_in_the_editor(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(UserMessage))
        )
        prompt = app.query_one(PromptInput)
        for target in (ChatView, UserMessage):
            await pilot.click(target)
            await pilot.press(*"ab")
            assert app.focused is prompt
        assert prompt.text == "abab"


async def test_a_character_no_widget_takes_goes_to_the_editor(make_app: MakeApp) -> None:
    """Wherever the focus was left (a tab header clicked, Ctrl+Up to the chat), typing a
    character reaches the editor instead of going nowhere."""
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press("f3")
        await wait_for(pilot, lambda: app.query_one(SidePanel).active is PaneName.SUMMARIES)
        await pilot.click("#side-tabs Tab")  # the Memory tab's header: focus goes to the tabs
        await pilot.press("x")
        prompt = app.query_one(PromptInput)
        assert app.focused is prompt and prompt.text == "x"
        await pilot.press("ctrl+up")  # focus the chat
        assert app.focused is not prompt
        await pilot.press("y")
        assert app.focused is prompt and prompt.text == "xy"


async def test_a_key_bound_where_the_focus_is_is_not_typed_into_the_editor(
    make_app: MakeApp,
) -> None:
    """j/k walk the chat's blocks once Ctrl+Up focused it: they are not text for the editor."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await pilot.press("ctrl+up", "j", "k")
        prompt = app.query_one(PromptInput)
        assert prompt.text == "" and app.focused is not prompt


TABLE = (
    "| file | lines | share |\n|:---|---:|:---:|\n| a.py | 7 | x |\n| long_name.py | 12345 | y |"
)


async def test_markdown_table_columns_are_aligned_as_written(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        await app.controller.view.markdown_note(TABLE)
        await pilot.pause()
        lines = screen_text(app).splitlines()
        first = next(line for line in lines if "a.py" in line)
        second = next(line for line in lines if "long_name.py" in line)
        # Right-aligned: the numbers end in the same column; left: the names start together.
        assert first.index("7") == second.index("12345") + len("12345") - 1
        assert first.index("a.py") == second.index("long_name.py")


def _luminance(colour: Color) -> float:
    """WCAG relative luminance."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in colour.rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: Color, b: Color) -> float:
    low, high = sorted((_luminance(a) + 0.05, _luminance(b) + 0.05))
    return high / low


@pytest.mark.parametrize("theme", sorted(p.stem for p in shipped_themes_dir().glob("*.toml")))
async def test_table_lines_are_visible_in_every_shipped_theme(
    make_app: MakeApp, theme: str
) -> None:
    """WCAG asks 3:1 of the lines that make up a control. Textual draws table lines in the
    foreground at 20 %: 1.5-1.7:1 in the shipped themes (1.7:1 in agentsh-contrast before it
    had its own rule), nearly invisible. Measured as drawn: each line cell's colour against the
    colour behind it."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        app.theme = theme
        await app.controller.view.markdown_note(TABLE)
        await pilot.pause()
        ratios = [
            _contrast(Color.from_rich_color(style.color), Color.from_rich_color(style.bgcolor))
            for strip in app.screen._compositor.render_strips()
            for text, style, _ in strip
            if style and style.color and style.bgcolor and set(text) & set("┬┼├┤┴")
        ]

        assert len(ratios) >= 3  # the table's top, middle and bottom lines
        assert min(ratios) >= 3.0, min(ratios)


async def test_a_command_typed_fast_runs_as_typed_not_as_the_menu_offered_it(
    make_app: MakeApp,
) -> None:
    """Seen once: "/name" + Enter ran /help. The menu follows the text through Changed
    messages, which queue behind keys already sent: Enter arrived while the menu still
    offered what fits "/", with /help (the first command) chosen."""
    app = make_app()
    sent: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.controller.ready)
        original = app.controller.submit

        async def record(text: str) -> None:
            sent.append(text)
            await original(text)

        app.controller.submit = record  # type: ignore[method-assign]
        await pilot.press("/")
        assert app.query_one(CompletionMenu).current is not None  # "/help", chosen
        driver = app._driver
        assert driver is not None
        for key, char in [("n", "n"), ("a", "a"), ("m", "m"), ("e", "e"), ("enter", "\r")]:
            event = events.Key(key, char)
            event.set_sender(app)
            driver.send_message(event)  # a burst: no pause between the keys
        await wait_for(pilot, lambda: bool(sent))
        assert sent == ["/name"]
        await wait_for(pilot, lambda: "has no name yet" in screen_text(app))


async def test_characters_typed_before_the_editor_has_the_focus_are_kept(
    make_app: MakeApp,
) -> None:
    """Seen in tmux: words typed right after starting agentsh were lost. Keys read before
    the editor took the focus go to the screen, and reach the App after it has it."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        prompt = app.query_one(PromptInput)
        app.set_focus(None)
        for char in "hi":
            key = events.Key(char, char)
            key.set_sender(app)
            app.screen._forward_event(key)  # as the App does with no widget focused
        prompt.focus()  # what on_mount does, before the screen has handled them
        await wait_for(pilot, lambda: prompt.text == "hi")


@pytest.mark.parametrize("enter", [("enter", "\r"), ("ctrl+j", "\n")])
async def test_enter_typed_before_the_editor_has_the_focus_sends_what_was_typed(
    make_app: MakeApp, enter: tuple[str, str]
) -> None:
    """Seen in tmux: "hello" and Enter typed as agentsh started left "hello" in the editor,
    unsent (the characters were kept, the Enter was lost), so the next words joined it. Typed
    before the terminal leaves line mode, Enter arrives as "\\n", read as Ctrl+J."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        prompt = app.query_one(PromptInput)
        app.set_focus(None)
        for key, char in [("h", "h"), ("i", "i"), enter]:
            event = events.Key(key, char)
            event.set_sender(app)
            app.screen._forward_event(event)  # as the App does with no widget focused
        prompt.focus()  # what on_mount does, before the screen has handled them
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["hi"])
        assert prompt.text == ""


@pytest.mark.parametrize("text", ["", "Half a reply"])
async def test_a_cancelled_reply_leaves_a_blank_line_before_the_next_message(
    make_app: MakeApp, project: Path, text: str
) -> None:
    """Seen in tmux: "aborted" (now "turn cancelled") sat right on top of the next "▌ you",
    where every other message is followed by a blank line."""
    from agentsh.session.entries import Role, StopReason
    from agentsh.session.session import Session

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        session = Session.create(None, project)
        session.append_message(Role.USER, "first question")
        session.append_message(Role.ASSISTANT, text, stop_reason=StopReason.ABORTED)
        session.append_message(Role.USER, "second question")
        await app.controller.switch_session(session)
        await pilot.pause()
        lines = [line.strip() for line in screen_text(app).splitlines()]
        at = lines.index("turn cancelled")
        assert lines[at + 1] == "" and lines[at + 2] == "▌ you", lines


def _gap_after_question(app: AgentshApp, question: str, first_line: str) -> int:
    """Blank lines between the line `question` and the line `first_line`."""
    lines = [line.strip(" ▌") for line in screen_text(app).splitlines()]
    start, end = lines.index(question), lines.index(first_line)
    assert all(not line for line in lines[start + 1 : end]), lines[start:end]
    return end - start - 1


@pytest.mark.parametrize("how", ["streamed", "loaded"])
async def test_a_reply_opening_with_a_heading_starts_where_a_paragraph_would(
    make_app: MakeApp, project: Path, how: str
) -> None:
    """A reply opening with `# Heading` sat three blank lines below the question (the
    message's margin and Textual's two above a heading), a paragraph one; and an H1 was
    centred, a title across the terminal rather than the reply's first line."""
    from agentsh.session.entries import Role, StopReason
    from agentsh.session.session import Session

    replies = {"plain": "A paragraph first.", "heading": "# Heading first\n\nThen text."}

    async def answer(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        reply = replies[text]
        yield TextDelta(reply)
        entry = agent.session.append_message(Role.ASSISTANT, reply, stop_reason=StopReason.STOP)
        yield AssistantMessage(entry.id, reply, (), "stop")
        yield TurnEnded(TurnOutcome.DONE, text=reply)

    app = make_app(factory=fake_factory(script=answer))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        if how == "loaded":
            session = Session.create(None, project)
            for question, reply in replies.items():
                session.append_message(Role.USER, question)
                session.append_message(Role.ASSISTANT, reply, stop_reason=StopReason.STOP)
            await app.controller.switch_session(session)
        else:
            for question in replies:
                await submit(pilot, app, question)
                await idle(pilot, app)
        await wait_for(pilot, lambda: "Then text." in screen_text(app))
        await pilot.pause()
        assert _gap_after_question(app, "plain", "A paragraph first.") == 1
        assert _gap_after_question(app, "heading", "Heading first") == 1
        assert _gap_after_question(app, "Heading first", "Then text.") == 1
        heading = next(line for line in screen_text(app).splitlines() if "Heading first" in line)
        assert heading.index("Heading first") <= 4, heading  # where the reply's text starts


async def test_the_command_menu_shows_one_line_a_command_with_its_summaries_aligned(
    make_app: MakeApp,
) -> None:
    """At 80 columns "/" offered four commands in the menu's eight lines: each summary wrapped
    (/compact's to three lines), and each started where its command's name happened to end.
    As in Claude Code: one line a command, the summaries in one column, cut with an ellipsis."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("/")
        menu = app.query_one(CompletionMenu)
        await wait_for(pilot, lambda: menu.display and menu.region.height > 0)
        await pilot.pause()
        assert menu.region.height == min(8, len(menu.completions))
        lines = screen_text(app).splitlines()
        shown = lines[menu.region.y : menu.region.bottom]
        assert all(line.strip().startswith("/") for line in shown), shown
        help_line = next(line for line in shown if "/help" in line)
        model_line = next(line for line in shown if "/model" in line)
        assert help_line.index("List commands") == model_line.index("Show or switch"), shown
        compact = next(line for line in shown if "/compact" in line)
        assert compact.rstrip().endswith("…"), compact


def _editor_whole(app: AgentshApp, height: int) -> None:
    prompt = app.query_one(PromptInput)
    composer = app.query_one("#composer")
    assert composer.region.contains_region(prompt.region), (composer.region, prompt.region)
    lines = screen_text(app).splitlines()
    assert lines[prompt.region.bottom - 1].strip().startswith("╰"), lines
    assert "line 199" in lines[prompt.region.bottom - 2]  # the cursor's line
    assert app.query_one(ChatView).region.height >= height // 2 - 2


@pytest.mark.parametrize("size", [(80, 24), (80, 16), (120, 36)])
async def test_a_long_paste_leaves_the_editor_whole_with_room_for_the_chat(
    make_app: MakeApp, size: tuple[int, int]
) -> None:
    """A 200-line paste at 80x24: the editor grew to its 12 lines, the column under the chat
    was capped at half the screen (11), and the editor's bottom border (at smaller sizes its
    last lines, the cursor's) were cut off. The editor now stops growing at that half, also
    after the terminal is resized."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        prompt.insert("\n".join(f"line {i}" for i in range(200)))
        await pilot.pause()
        await pilot.pause()
        _editor_whole(app, size[1])
        await pilot.resize_terminal(80, 18 if size[1] > 18 else 30)
        await pilot.pause()
        await pilot.pause()
        _editor_whole(app, app.size.height)


async def test_help_in_the_chat_is_one_line_a_command_at_80x24(make_app: MakeApp) -> None:
    """`/help` at 80x24 drew a table of about fifty lines (a rule between every two rows, the
    summaries wrapped in a narrow column): the screen showed its last third. As Claude Code
    lists them: one line a command, long ones wrapping under their own text."""
    from agentsh.tui.slash.registry import COMMANDS

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/help", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        await pilot.pause()
        note = app.query_one(NoteMarkdown)
        await wait_for(pilot, lambda: note.region.height > 0)
        assert note.outer_size.height <= 2 * len(COMMANDS), screen_text(app)  # was 64
        text = screen_text(app)
        assert "/quit" in text and "Quit agentsh (also /exit, /q)" in text
