"""Pilot tests of the App wired to a scripted stand-in agent: layout, commands, themes, keys,
windowing. Streaming, tools, approval, cancel and the queue against the real agent are in
test_app_real_agent.py."""

from __future__ import annotations

import asyncio
import io
import re
import threading
import tomllib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen
from textual.widgets import Static

from agentsh.config import Environment, load_environment
from agentsh.events import (
    ContextStatus,
    ErrorKind,
    ErrorOccurred,
    Event,
    TurnEnded,
    TurnOutcome,
)
from agentsh.frontend import InteractiveAPI
from agentsh.session.entries import Role, StopReason
from agentsh.session.session import Session
from agentsh.tui.app import AgentshApp
from agentsh.tui.keys import KEYS
from agentsh.tui.options import LaunchOptions
from agentsh.tui.projection import ToolItem
from agentsh.tui.screens.help import HelpScreen
from agentsh.tui.screens.picker import PickerScreen
from agentsh.tui.slash import registry as slash
from agentsh.tui.ui_state import UiState, save_ui_state
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import CompletionMenu, PromptInput
from agentsh.tui.widgets.messages import (
    AssistantMessage,
    NoteLine,
    NoteMarkdown,
    QueuedMessage,
    UserMessage,
    Welcome,
)
from agentsh.tui.widgets.status_bar import StatusBar
from agentsh.tui.widgets.tool_block import ToolBlock
from tests.tui.conftest import (
    Asks,
    MakeApp,
    agent_of,
    asked,
    fake_factory,
    fake_of,
    open_long_session,
    ready,
    request,
    screen_text,
    session_of,
    submit,
    wait_for,
)
from tests.tui.fake_agent import FakeAgent, echo_script

pytestmark = pytest.mark.asyncio


def _more_notes_than(app: AgentshApp, count: int) -> Callable[[], bool]:
    """A wait condition bound to this count (a lambda in a loop would see the loop's last)."""
    return lambda: len(app.query(NoteLine)) > count


async def test_empty_start_screen_shows_the_welcome_and_focuses_the_editor(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert app.query(Welcome)
        assert isinstance(app.focused, PromptInput)
        assert app.theme == "agentsh-dark"


async def test_first_frame_shows_the_cached_model_and_loading_until_the_agent_is_ready(
    make_app: MakeApp, env: Environment
) -> None:
    save_ui_state(env.user.ui_state_file, UiState("openai/gpt-4.1", 1_047_576))
    release = threading.Event()

    def slow_factory(e: Environment, s: Session, o: LaunchOptions) -> InteractiveAPI:
        release.wait(10)
        status = ContextStatus(model="openai/gpt-4.1", window=1_047_576)
        return FakeAgent(s, model="openai/gpt-4.1", status=status)

    app = make_app(factory=slow_factory)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        bar = app.query_one(StatusBar)
        assert bar.starting and bar.status.model == "openai/gpt-4.1"
        assert "loading…" in str(bar.render())
        release.set()
        await ready(pilot, app)
        await wait_for(pilot, lambda: not bar.starting)
        assert "loading…" not in str(bar.render())


@pytest.mark.parametrize("where", ["config", "AGENTSH_MODEL"])
async def test_first_frame_shows_the_model_the_user_named_not_no_model(
    make_app: MakeApp, project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # No cache yet (a first run): the bar said "no model" until the agent loaded.
    user = load_environment(project).user
    if where == "config":
        user.config_file.parent.mkdir(parents=True, exist_ok=True)
        user.config_file.write_text('[model]\nname = "openai/named-model"\n')
    else:
        monkeypatch.setenv("AGENTSH_MODEL", " openai/named-model ")
    release = threading.Event()

    def slow_factory(e: Environment, s: Session, o: LaunchOptions) -> InteractiveAPI:
        release.wait(10)
        return FakeAgent(s, model="openai/named-model")

    app = make_app(factory=slow_factory, environment=load_environment(project))
    try:
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.pause()
            bar = app.query_one(StatusBar)
            assert bar.starting and bar.status.model == "openai/named-model"
            shown = str(bar.render())
            assert "openai/named-model" in shown and "no model" not in shown
    finally:
        release.set()


async def test_a_message_streams_into_an_assistant_reply(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        assert [m.text for m in app.query(UserMessage)] == ["hello"]
        assert [m.text for m in app.query(AssistantMessage)] == ["echo: hello"]
        assert app.query_one(PromptInput).text == ""


async def test_sending_without_a_model_explains_how_to_configure_one(make_app: MakeApp) -> None:
    async def no_model(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        yield ErrorOccurred(ErrorKind.NO_MODEL, "No model is configured. Set OPENAI_API_KEY.")
        yield TurnEnded(TurnOutcome.ERROR, error="no model")

    app = make_app(factory=fake_factory(model=None, script=no_model))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"fix the bug", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        assert "Set OPENAI_API_KEY" in app.query_one(NoteMarkdown).text
        # Nothing was sent, so the text is back in the editor.
        assert app.query_one(PromptInput).text == "fix the bug"


async def test_messages_typed_during_a_turn_are_queued_then_sent(make_app: MakeApp) -> None:
    gate = asyncio.Event()

    async def gated(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        if text == "first":
            await gate.wait()
        async for event in echo_script(agent, text):
            yield event

    app = make_app(factory=fake_factory(script=gated))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"second", "enter")
        await wait_for(pilot, lambda: bool(app.query(QueuedMessage)))
        assert app.query_one(QueuedMessage).text == "second"
        gate.set()
        await wait_for(pilot, lambda: len(app.query(AssistantMessage)) == 2
                       and not app.controller.turn_running)  # fmt: skip
        assert not app.query(QueuedMessage)
        agent = app.controller.agent
        assert isinstance(agent, FakeAgent) and agent.runs == ["first", "second"]


async def test_history_walks_sent_messages_with_up_and_down(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        for text in ("one", "two"):
            await pilot.press(*text, "enter")
            await wait_for(pilot, lambda: not app.controller.turn_running)
        prompt = app.query_one(PromptInput)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert prompt.text == "two"
        await pilot.press("up")
        assert prompt.text == "one"
        await pilot.press("down", "down")
        assert prompt.text == "draft"


async def test_shift_enter_and_ctrl_j_add_lines_instead_of_sending(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert app.query_one(PromptInput).text == "a\nb\nc"
        assert not app.query(UserMessage)


async def test_slash_completion_offers_commands_and_enter_runs_one(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("/", "c", "o")
        menu = app.query_one(CompletionMenu)
        assert menu.display and [c.insert for c in menu.completions] == ["/compact ", "/cost"]
        await pilot.press("down", "enter")  # /cost takes no argument: it runs
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        assert "| Cost |" in app.query_one(NoteMarkdown).text


async def test_a_command_s_space_offers_its_words_and_enter_still_runs_it_as_typed(
    make_app: MakeApp,
) -> None:
    """Seen: "/compact " offered nothing until a letter was typed, so the tiers went unseen."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("/", "c", "o", "enter")  # the menu's /compact: its space, no run
        prompt = app.query_one(PromptInput)
        menu = app.query_one(CompletionMenu)
        assert prompt.text == "/compact "
        offered = ["move_to_workspace", "summarize", "truncate", "undo"]
        assert menu.display and [c.insert for c in menu.completions] == offered
        assert menu.current is None  # none chosen: Enter would run /compact as typed
        await pilot.press("down", "down", "tab")
        assert prompt.text == "/compact summarize"
        await pilot.press("ctrl+u", *"/compact ")
        assert menu.display and menu.current is None
        session_of(app).append_message(Role.USER, "something to compact")
        await pilot.press("enter")
        agent = agent_of(app)
        assert isinstance(agent, FakeAgent)
        await wait_for(pilot, lambda: agent.compactions == [None])


async def test_at_completion_inserts_a_project_path(make_app: MakeApp, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "parser.py").write_text("")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: "src/parser.py" in app.controller.project_files())
        await pilot.press(*"look at @pars")
        menu = app.query_one(CompletionMenu)
        assert menu.display and menu.completions[0].insert == "@src/parser.py "
        await pilot.press("tab")
        assert app.query_one(PromptInput).text == "look at @src/parser.py "
        assert not menu.display


async def test_theme_command_switches_and_persists(make_app: MakeApp, env: Environment) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/theme agentsh-light", "enter")
        await wait_for(pilot, lambda: app.theme == "agentsh-light")
        config = tomllib.loads(env.user.config_file.read_text())
        assert config["tui"]["theme"] == "agentsh-light"
    # A new start reads it back.
    again = make_app(environment=load_environment(env.project.root))
    async with again.run_test(size=(80, 24)) as pilot:
        assert again.theme == "agentsh-light"


async def test_theme_picker_previews_live_and_escape_restores(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/theme", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("down")
        previewed = app.theme
        assert previewed != "agentsh-dark"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PickerScreen))
        assert app.theme == "agentsh-dark"
        await pilot.press(*"/theme", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press(*"forest", "enter")
        await wait_for(pilot, lambda: app.theme == "agentsh-forest")


async def test_f1_lists_every_binding_and_a_remapped_key_works(
    project: Path, make_app: MakeApp
) -> None:
    env = load_environment(project)
    env.user.config_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.config_file.write_text('[tui.keys]\nhelp = "f2"\n')
    app = make_app(environment=load_environment(project))
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press("f1")  # no longer bound
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        from agentsh.tui.screens.help import help_markdown

        text = help_markdown(app.keymap)
        assert "| F2 | Show every key binding | `help` |" in text
        for binding_id in ("submit", "newline", "cancel", "toggle_block", "approve_once", "deny"):
            assert f"`{binding_id}`" in text
        # What the screen shows (tables, not the markdown): every binding and every command.
        shown = _help_screen_text(app.screen)
        assert re.search(r"│ F2 +│ Show every key binding +│ help", shown)
        for key in KEYS:
            assert (key.id if not key.builtin else key.description) in shown
        for command in slash.COMMANDS:
            assert command.usage in shown and command.summary[:30] in shown


def _help_screen_text(screen: Screen[Any]) -> str:
    from rich.console import Console

    console = Console(width=160, record=True, file=io.StringIO())
    for static in screen.query(Static):
        console.print(static.content)
    return console.export_text()


async def test_unknown_config_keys_are_reported_not_fatal(project: Path, make_app: MakeApp) -> None:
    env = load_environment(project)
    env.user.config_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.config_file.write_text('[tui]\ntheme = "no-such-theme"\n[tui.keys]\nbogus = "x"\n')
    app = make_app(environment=load_environment(project))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        messages = [str(n.message) for n in app._notifications]
        assert any("bogus" in m for m in messages)
        assert any("no-such-theme" in m for m in messages)
        assert app.theme == "agentsh-dark"


async def test_command_palette_runs_slash_commands(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.press(*"/cost")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        assert "| Cost |" in app.query_one(NoteMarkdown).text


async def test_tool_blocks_collapse_to_their_last_lines_and_toggle(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await ready(pilot, app)
        output = "\n".join(f"line {i}" for i in range(1, 21))
        chat = app.query_one(ChatView)
        await chat.append(ToolItem("c1", "bash", "bash: seq 20", output=output, finished=True))
        block = app.query_one(ToolBlock)
        body = block.body_text
        assert "(15 earlier lines, Ctrl+O to expand)" in body
        assert "line 20" in body and "line 5\n" not in body
        block.focus()
        await pilot.press("enter")
        assert block.expanded and "line 1\n" in block.body_text
        await pilot.press("enter")
        assert not block.expanded
        app.query_one(PromptInput).focus()
        await pilot.press("ctrl+o")
        assert block.expanded


async def test_a_long_transcript_keeps_a_bounded_window_mounted(
    project: Path, make_app: MakeApp, windowed_env: Environment
) -> None:
    app = make_app(environment=windowed_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await open_long_session(app, project, 150)
        chat = app.query_one(ChatView)
        assert len(chat.rows) == 300
        assert chat.mounted_rows <= 30
        assert len(chat.children) == chat.mounted_rows
        last = chat.children[-1]
        assert isinstance(last, AssistantMessage) and last.text == "answer 149"
        first_before = chat.first
        for _ in range(3):
            chat.scroll_home(animate=False, immediate=True)
            await pilot.pause()
        assert chat.first < first_before  # older rows were remounted from the log
        assert chat.mounted_rows <= 30 + chat.batch_rows
        chat.scroll_end(animate=False, immediate=True)
        await pilot.pause(0.05)
        # A new turn brings the newest rows back.
        await pilot.press(*"more", "enter")
        await wait_for(pilot, lambda: not app.controller.turn_running
                       and chat.rows[-1].widget is not None)  # fmt: skip
        assert isinstance(chat.children[-1], AssistantMessage)
        assert chat.children[-1].text == "echo: more"


async def test_tree_text_command_lists_branch_points(make_app: MakeApp, project: Path) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        session = agent_of(app).session
        root = session.append_message(Role.USER, "start")
        session.append_message(Role.ASSISTANT, "a", stop_reason=StopReason.STOP)
        session.move_leaf(root.id)
        session.append_message(Role.ASSISTANT, "b", stop_reason=StopReason.STOP)
        await pilot.press(*"/tree text", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        text = app.query_one(NoteMarkdown).text
        assert "1 branch point" in text and "<- leaf" in text and "• " in text


async def test_unknown_command_is_reported_in_place(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/frobnicate", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteLine)))
        assert "Unknown command /frobnicate" in app.query_one(NoteLine).text


async def test_memory_says_what_its_argument_means(make_app: MakeApp) -> None:
    # "/memory [text]" reads like "any text": an unknown word is explained, not ignored.
    from agentsh.tui.panes.panel import SidePanel

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/memory parser", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteLine)))
        note = app.query_one(NoteLine).text
        assert "/memory text lists it in the chat" in note and "'parser'" in note
        assert not app.query_one(SidePanel).is_open


async def test_tree_with_words_opens_the_tree_searching_for_them(make_app: MakeApp) -> None:
    """Seen: `/tree checkpoint` was an error, though README read `/tree [text]`."""
    from agentsh.tui.panes.tree_pane import TreePane, TreeView

    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot, app)
        session = agent_of(app).session
        for word in ("parser", "checkpoint", "lexer"):
            session.append_message(Role.USER, f"about the {word}")
            session.append_message(Role.ASSISTANT, "ok", stop_reason=StopReason.STOP)
        await pilot.press(*"/tree checkpoint", "enter")
        await wait_for(
            pilot, lambda: bool(app.query(TreeView)) and app.query_one(TreeView).has_focus
        )
        await pilot.pause()
        pane = app.query_one(TreePane)
        assert pane.model.query == "checkpoint"
        screen = screen_text(app)
        assert "search: checkpoint" in screen and "about the checkpoint" in screen
        assert "about the parser" not in screen and not app.query(NoteLine)


async def test_a_command_run_while_scrolled_up_shows_its_answer(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    session = Session.create(env.user.project_sessions_dir(project), project)
    for i in range(12):
        session.append_message(Role.USER, f"question {i}")
        session.append_message(Role.ASSISTANT, f"answer {i}", stop_reason=StopReason.STOP)
    session.close()
    app = make_app(options=LaunchOptions(continue_session=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        chat = app.query_one(ChatView)
        await wait_for(pilot, lambda: chat.max_scroll_y > 0)
        chat.scroll_home(animate=False, immediate=True)  # reading back: the anchor lets go
        await pilot.pause()
        await pilot.press(*"/label here", "enter")
        await wait_for(pilot, lambda: any("Labelled" in n.text for n in app.query(NoteLine)))
        note = next(n for n in app.query(NoteLine) if "Labelled" in n.text)
        await wait_for(  # the scroll to it comes a frame or more later (was a 0.1 s pause)
            pilot,
            lambda: (
                chat.scroll_y + chat.scrollable_content_region.height >= note.virtual_region.bottom
            ),
        )


async def test_a_session_file_that_cannot_be_opened_is_named_and_a_new_session_starts(
    make_app: MakeApp, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    app = make_app(options=LaunchOptions(session=str(empty)))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: bool(app.query(NoteLine)))
        text = app.query_one(NoteLine).text
        assert str(empty) in text
        assert text.endswith(". A new session was started instead.")
        assert ". ." not in text
        session = app.controller.current_session()
        assert session is not None and session.path != empty


def _saved_session(env: Environment, project: Path, first: str) -> Session:
    session = Session.create(env.user.project_sessions_dir(project), project)
    session.append_message(Role.USER, first)
    session.append_message(Role.ASSISTANT, f"re: {first}", stop_reason=StopReason.STOP)
    session.sync()
    session.close()
    return session


async def test_resume_picker_searches_by_first_message_and_opens_the_session(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    _saved_session(env, project, "find the parser bug")
    _saved_session(env, project, "write the changelog")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/resume", "enter")
        # The rows are filled in when the picker mounts, a moment after it is pushed.
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, PickerScreen) and len(app.screen.shown) == 2,
        )
        await pilot.press(*"parser")
        picker = app.screen
        assert isinstance(picker, PickerScreen) and len(picker.shown) == 1
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: [m.text for m in app.query(UserMessage)] == ["find the parser bug"]
        )
        assert [m.text for m in app.query(AssistantMessage)] == ["re: find the parser bug"]


async def test_session_tokens_read_the_same_in_the_bar_cost_and_the_picker(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    from agentsh.session.entries import Usage

    saved = Session.create(env.user.project_sessions_dir(project), project)
    saved.append_message(Role.USER, "count my tokens " + "and a long first message " * 6)
    saved.append_message(
        Role.ASSISTANT, "counted", stop_reason=StopReason.STOP,
        usage=Usage(input_tokens=1_234, output_tokens=66),
    )  # fmt: skip
    saved.close()
    status = ContextStatus(model="test/fake", window=100_000, used=1_300,
                           session_input_tokens=1_234, session_output_tokens=66)  # fmt: skip
    app = make_app(
        factory=fake_factory(status=status), options=LaunchOptions(continue_session=True)
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        assert "Σ 1.3k tok" in str(app.query_one(StatusBar).render())
        await pilot.press(*"/cost", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))
        assert "1,300 = 1,234 input + 66 output" in app.query_one(NoteMarkdown).text
        await pilot.press(*"/resume", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        # The screen is current from its push; its rows come with its mount (and the
        # session list's load): under load the list was read before either (1 run in 4).
        await wait_for(pilot, lambda: bool(picker.shown) and not picker.fetching)
        (row,) = picker.shown
        assert "1.3k tok" in str(row.label)
        await pilot.pause()
        # One line per session at 80 columns: the first message is cut to fit, not wrapped.
        assert picker.query_one("#picker-list").virtual_size.height == 1
        await pilot.press("escape")


async def test_resume_flag_without_an_id_opens_the_picker_first(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    _saved_session(env, project, "earlier work")
    app = make_app(options=LaunchOptions(resume=""))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        await pilot.press("enter")
        await ready(pilot, app)
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["earlier work"])


async def test_fork_new_label_and_export_work_on_the_log(make_app: MakeApp, project: Path) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        original = agent_of(app).session
        await pilot.press(*"/label checkpoint", "enter")
        await wait_for(
            pilot, lambda: original.tree.labels.get(original.leaf_id or "") == "checkpoint"
        )
        await pilot.press(*"/export md", "enter")
        # Outside the project (whose git tree it would dirty), and the note says where.
        exported = app.env.user.exports_dir / f"agentsh-{original.id[:8]}.md"
        await wait_for(pilot, exported.exists)
        assert "hello" in exported.read_text()
        assert not (project / exported.name).exists()
        await wait_for(pilot, lambda: any(str(exported) in n.text for n in app.query(NoteLine)))
        await pilot.press(*"/fork", "enter")
        await wait_for(pilot, lambda: agent_of(app).session is not original)
        forked = agent_of(app).session
        assert forked.header.parent_session == original.id
        assert [m.text for m in app.query(UserMessage)] == ["hello"]
        await pilot.press(*"/new", "enter")
        await wait_for(pilot, lambda: bool(app.query(Welcome)))
        assert agent_of(app).session not in (original, forked)


def _record_notices(app: AgentshApp, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every notice the app posts: Textual drops one from its list once its seconds are up,
    which on a loaded machine can come before the test's first line runs."""
    notices: list[str] = []
    notify = app.notify

    def recording(message: str, **options: Any) -> None:
        notices.append(message)
        notify(message, **options)

    monkeypatch.setattr(app, "notify", recording)
    return notices


async def test_user_themes_load_reload_on_change_and_bad_ones_are_reported(
    project: Path, env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    themes = env.user.themes_dir
    themes.mkdir(parents=True)
    (themes / "mine.toml").write_text('name = "mine"\nprimary = "#112233"\n')
    (themes / "broken.toml").write_text('name = "broken"\nprimary = "nope"\n')
    app = AgentshApp(env, LaunchOptions(), agent_factory=fake_factory(), cwd=project)
    notices = _record_notices(app, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        assert any("broken.toml" in notice for notice in notices)
        await ready(pilot, app)
        assert "mine" in app.available_themes and "broken" not in app.available_themes
        app.theme = "mine"
        await pilot.pause(0.3)  # let the watcher start
        (themes / "mine.toml").write_text('name = "mine"\nprimary = "#AA0000"\n')
        (themes / "fresh.toml").write_text('name = "fresh"\nprimary = "#00AA00"\n')
        await wait_for(pilot, lambda: "fresh" in app.available_themes)
        assert app.available_themes["mine"].primary == "#AA0000"
        assert app.theme == "mine"


async def test_notices_show_what_a_project_wrote_as_text_not_markup(
    project: Path, env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config problem names the key the file wrote: a key like ``[@click=app.quit]`` is a
    clickable action as markup, and ``[b]`` would vanish."""
    env.user.config_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.config_file.write_text('[tui]\n"[@click=app.quit]x[/]" = 1\n')
    app = AgentshApp(load_environment(project), LaunchOptions(), agent_factory=fake_factory(),
                     cwd=project, watch_themes=False)  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        app.query_one(ChatView).notify("a widget's [b]notice[/b]")
        await pilot.pause()
        shown = list(app._notifications)
        assert any("[@click=app.quit]x[/]" in n.message for n in shown)
        assert any(n.message == "a widget's [b]notice[/b]" for n in shown)
        assert not any(n.markup for n in shown)


async def test_a_configured_theme_with_a_bad_variable_is_skipped_not_fatal(
    project: Path, env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh.tui.app import AgentshApp

    env.user.themes_dir.mkdir(parents=True)
    (env.user.themes_dir / "odd.toml").write_text(
        'name = "odd"\nprimary = "#112233"\n[variables]\nfooter-background = "notacolour"\n'
    )
    env.user.config_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.config_file.write_text('[tui]\ntheme = "odd"\n')
    app = AgentshApp(load_environment(project), LaunchOptions(), agent_factory=fake_factory(),
                     cwd=project, watch_themes=False)  # fmt: skip
    notices = _record_notices(app, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        assert any("odd.toml" in m and "footer-background" in m for m in notices)
        await ready(pilot, app)
        assert app.theme == "agentsh-dark"


@pytest.mark.parametrize(("key", "decision"), [("y", "allow_once"), ("a", "allow_session"),
                                                ("n", "deny")])  # fmt: skip
async def test_the_approval_prompt_answers_with_its_keys(
    make_app: MakeApp, key: str, decision: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt

    asks = Asks(request(summary="bash: rm -rf build", detail="rm -rf build"))
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 60.0)
    async with app.run_test(size=(80, 30)) as pilot:
        prompt = await asked(pilot, app)
        assert app.focused is prompt
        await pilot.press(key)  # within the grace period: keys in flight are not answers
        assert prompt.decision is None
        monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 0.0)
        await pilot.press(key)
        await ready(pilot, app)
        await wait_for(pilot, lambda: decisions == [decision])
        assert isinstance(app.focused, PromptInput)


async def test_an_mcp_tool_can_be_allowed_with_its_whole_server(
    make_app: MakeApp, answer_at_once: None
) -> None:
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt

    git_log = {"tool": "t", "summary": "git: git_log", "detail": "{}"}
    asks = Asks(request(**git_log), request(**git_log, group="every tool of MCP server 'git'"))
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(100, 30)) as pilot:
        await asked(pilot, app)
        await pilot.press("s")  # not offered for a tool without a group: nothing happens
        await pilot.pause()
        assert decisions == []
        await pilot.press("y")
        await wait_for(pilot, lambda: len(app.query(ApprovalPrompt)) == 2)
        second = app.query(ApprovalPrompt).last()
        keys = "".join(str(w.render()) for w in second.query(".approval-keys"))
        assert "[s] every tool of MCP server 'git'" in keys
        second.focus()
        await pilot.pause()
        await pilot.press("s")
        await wait_for(pilot, lambda: decisions == ["allow_once", "allow_group"])


async def test_escape_on_a_waiting_approval_cancels_and_gives_typing_back_to_the_editor(
    make_app: MakeApp,
) -> None:
    from agentsh.events import ApprovalRequest
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt

    class CancellableAgent(FakeAgent):
        request: ApprovalRequest | None = None

        def cancel(self) -> None:  # as the agent does: the pending question is withdrawn
            super().cancel()
            if self.request is not None:
                self.request.decision.cancel()

    async def asks(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        assert isinstance(agent, CancellableAgent)
        agent.request = ApprovalRequest("c1", "bash", "bash: make", "make", "ask mode")
        yield agent.request
        try:
            await agent.request.decision
        except asyncio.CancelledError:
            yield TurnEnded(TurnOutcome.ABORTED)

    app = make_app(factory=lambda _e, s, _o: CancellableAgent(s, script=asks))
    async with app.run_test(size=(80, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await pilot.press(*"next")
        assert app.query_one(PromptInput).text == "next"


async def test_a_long_diff_to_approve_scrolls_to_its_end_before_the_answer(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh.events import ApprovalRequest
    from agentsh.tui.widgets.approval_prompt import ApprovalDetail, ApprovalPrompt

    monkeypatch.setattr(ApprovalPrompt, "GRACE_S", 0.0)
    diff = "--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,40 @@\n" + "\n".join(
        f"+line {i}" for i in range(1, 41)
    )
    decisions: list[str] = []

    async def asks(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        request = ApprovalRequest("c1", "write", "write: big.py", diff, "ask mode")
        yield request
        decisions.append((await request.decision).value)
        yield TurnEnded(TurnOutcome.DONE)

    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
        prompt = app.query_one(ApprovalPrompt)
        assert "scroll all 43 lines" in str(prompt.query_one(".approval-keys", Static).render())
        detail = prompt.query_one(ApprovalDetail)
        await pilot.pause()
        assert detail.max_scroll_y > 0
        for _ in range(3):  # a held key repeats faster than frames are drawn
            prompt.action_scroll_detail(1)
        await pilot.pause()
        assert detail.scroll_y == 3
        await pilot.press(*["down"] * 40)
        assert detail.scroll_y == detail.max_scroll_y  # the last line of the diff is in view
        assert app.focused is prompt and decisions == []
        await pilot.press("up")
        assert detail.scroll_y == detail.max_scroll_y - 1
        await pilot.press("y")
        await wait_for(pilot, lambda: decisions == ["allow_once"])


async def test_the_approval_prompt_does_not_steal_focus_from_a_draft(make_app: MakeApp) -> None:
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt

    asks = Asks(wait=True)
    decisions = asks.decisions
    app = make_app(factory=fake_factory(script=asks))
    async with app.run_test(size=(80, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await pilot.press(*"any draft")
        asks.go.set()
        await wait_for(pilot, lambda: bool(app.query(ApprovalPrompt)))
        assert isinstance(app.focused, PromptInput)
        assert app.query_one(PromptInput).text == "any draft"
        await pilot.pause(ApprovalPrompt.GRACE_S + 0.05)
        await pilot.press("ctrl+up")
        assert isinstance(app.focused, ApprovalPrompt)
        await pilot.press("n")
        await wait_for(pilot, lambda: decisions == ["deny"])


async def test_a_session_open_elsewhere_is_shown_read_only_and_fork_continues_it(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    saved = _saved_session(env, project, "shared work")
    assert saved.path is not None
    holder = Session.open(saved.path)  # "another agentsh" holds the lock
    try:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot, app)
            await pilot.press(*f"/resume {saved.id[:8]}", "enter")
            await wait_for(
                pilot, lambda: [m.text for m in app.query(UserMessage)] == ["shared work"]
            )
            # the note follows the switch that paints the messages: wait for it too
            await wait_for(
                pilot, lambda: any("shown read-only" in n.text for n in app.query(NoteLine))
            )
            await pilot.press(*"continue", "enter")
            await pilot.pause(0.1)
            assert not app.controller.turn_running
            assert fake_of(app).runs == []
            await pilot.press(*"/fork", "enter")
            await wait_for(pilot, lambda: not agent_of(app).session.read_only_reason)
            await pilot.press(*"continue", "enter")
            await wait_for(pilot, lambda: fake_of(app).runs == ["continue"])
    finally:
        holder.close()


async def test_commands_that_write_say_a_read_only_session_is_read_only(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    saved = _saved_session(env, project, "shared work")
    assert saved.path is not None
    holder = Session.open(saved.path)  # "another agentsh" holds the lock
    try:
        app = make_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot, app)
            await pilot.press(*f"/resume {saved.id[:8]}", "enter")
            await wait_for(pilot, lambda: bool(app.query(UserMessage)))
            for command in ("/label checkpoint", "/compact"):
                before = len(app.query(NoteLine))
                await pilot.press(*command, "enter")
                await wait_for(pilot, _more_notes_than(app, before))
                note = list(app.query(NoteLine))[-1]
                assert note.kind == "warning" and "/fork continues it" in note.text
            agent = app.controller.agent
            assert isinstance(agent, FakeAgent) and agent.compactions == []
    finally:
        holder.close()


async def test_escape_in_the_chat_gives_the_focus_back_to_the_editor(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        await pilot.press("ctrl+up")
        assert not isinstance(app.focused, PromptInput)
        await pilot.press("escape")
        assert isinstance(app.focused, PromptInput)
        await pilot.press(*"next")
        assert app.query_one(PromptInput).text == "next"


async def test_commands_that_need_the_agent_say_it_could_not_start(make_app: MakeApp) -> None:
    def broken(_e: Environment, _s: Session, _o: LaunchOptions) -> InteractiveAPI:
        raise RuntimeError("the search index is locked")

    app = make_app(factory=broken)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(app.controller.agent_failed))
        for command in ("/cost", "/compact", "/model openai/gpt-4.1"):
            before = len(app.query(NoteLine))
            await pilot.press(*command, "enter")
            await wait_for(pilot, _more_notes_than(app, before))
            note = list(app.query(NoteLine))[-1]
            assert "could not start" in note.text and "loading" not in note.text, command


async def test_model_picker_takes_a_typed_model_string(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/model", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen))
        picker = app.screen
        assert isinstance(picker, PickerScreen)
        values = [i.value for i in picker.shown]
        assert values[0] == "test/fake" and "anthropic/claude-sonnet-4-6" in values
        await pilot.press(*"ollama/qwen2.5-coder", "enter")
        await wait_for(pilot, lambda: agent_of(app).model == "ollama/qwen2.5-coder")
        assert app.controller.status_bar.status.model == "ollama/qwen2.5-coder"


async def test_continue_and_resume_by_prefix_open_the_right_session(
    make_app: MakeApp, env: Environment, project: Path
) -> None:
    older = _saved_session(env, project, "older work")
    _saved_session(env, project, "newest work")
    app = make_app(options=LaunchOptions(continue_session=True))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["newest work"])
    app = make_app(options=LaunchOptions(resume=older.id[:8]))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["older work"])
    app = make_app(options=LaunchOptions(resume="ffffffffff"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: bool(app.query(NoteLine)))
        assert "ffffffffff" in app.query_one(NoteLine).text  # says what was not found
        assert not app.query(UserMessage)


async def test_compact_shows_one_collapsed_line_and_passes_its_instructions(
    make_app: MakeApp,
) -> None:
    from agentsh.events import CompactionFinished, CompactionStarted, Tier
    from agentsh.session.entries import CompactionEntry
    from agentsh.tui.widgets.messages import CompactionLine

    class CompactingAgent(FakeAgent):
        async def compaction_events(self, tier: Tier | None = None) -> AsyncIterator[Event]:
            yield CompactionStarted(tier or Tier.SUMMARIZE, "manual")
            first = self.session.current_path()[0]
            entry = CompactionEntry(
                id=self.session.new_id(), parent_id=self.session.leaf_id, tier="summarize",
                summary="## Active Task\nfix the parser", first_kept_id=first.id,
                tokens_before=142_000, tokens_after=31_000,
            )  # fmt: skip
            self.session.append(entry)
            yield CompactionFinished(entry.id, Tier.SUMMARIZE, 142_000, 31_000, "ws/001.md")

    agents: list[CompactingAgent] = []

    def factory(_e: object, s: Session, _o: object) -> CompactingAgent:
        agents.append(CompactingAgent(s))
        return agents[-1]

    app = make_app(factory=factory)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        # Anything that is not a tier name steers the summary, as in Claude Code.
        await pilot.press(*"/compact summarize keep the parser decisions", "enter")
        await wait_for(
            pilot, lambda: bool(app.query(CompactionLine)) and not app.controller.turn_running
        )
        (agent,) = agents
        assert agent.compactions == [Tier.SUMMARIZE]
        assert agent.compaction_instructions == ["keep the parser decisions"]
        line = app.query_one(CompactionLine)
        assert line.tokens_before == 142_000 and line.tokens_after == 31_000
        assert "Active Task" in line.summary and not line.expanded
        line.focus()
        await pilot.press("enter")
        assert line.expanded
        await pilot.press("ctrl+l")
        app.controller.prompt.text = "/compact focus on the failing test"
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: len(agent.compactions) == 2 and not app.controller.turn_running
        )
        assert agent.compactions[1] is None
        assert agent.compaction_instructions[1] == "focus on the failing test"


async def test_a_compaction_that_falls_back_shows_the_tier_that_ran(make_app: MakeApp) -> None:
    from agentsh.events import CompactionFinished, CompactionStarted, Tier
    from agentsh.session.entries import CompactionEntry
    from agentsh.tui.widgets.messages import CompactionLine

    class FallingBackAgent(FakeAgent):
        async def compaction_events(self, tier: Tier | None = None) -> AsyncIterator[Event]:
            yield CompactionStarted(Tier.SUMMARIZE, "manual")
            # The summary could not be written: the turns were archived instead.
            entry = CompactionEntry(
                id=self.session.new_id(), parent_id=self.session.leaf_id,
                tier="move_to_workspace", summary="archived",
                first_kept_id=self.session.leaf_id or "", tokens_before=17_000, tokens_after=2_000,
            )  # fmt: skip
            self.session.append(entry)
            yield CompactionFinished(
                entry.id, Tier.MOVE_TO_WORKSPACE, 17_000, 2_000, "ws/001.md",
                note="summary failed; archived instead",
            )  # fmt: skip

    app = make_app(factory=lambda _e, s, _o: FallingBackAgent(s))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"hello", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        await pilot.press(*"/compact", "enter")
        await wait_for(
            pilot, lambda: bool(app.query(CompactionLine)) and not app.controller.turn_running
        )
        line = app.query_one(CompactionLine)
        shown = str(line.render())
        assert "MoveToWorkspace" in shown and "Summarize" not in shown


async def test_a_failed_compaction_is_not_redrawn_as_a_finished_one(make_app: MakeApp) -> None:
    """The chat remounts rows from what they recorded: a failed compaction's row still said
    "compacting", and came back as "compacted (MoveToWorkspace): 0 → 0 tokens"."""
    from agentsh.events import CompactionFailed, CompactionStarted, Tier
    from agentsh.tui.widgets.messages import CompactionLine

    class FailingAgent(FakeAgent):
        async def compaction_events(self, tier: Tier | None = None) -> AsyncIterator[Event]:
            yield CompactionStarted(Tier.MOVE_TO_WORKSPACE, "manual")
            yield CompactionFailed(Tier.MOVE_TO_WORKSPACE, "the workspace is read-only")

    app = make_app(factory=lambda _e, s, _o: FailingAgent(s))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        session_of(app).append_message(Role.USER, "something to compact")
        await pilot.press(*"/compact", "enter")
        await wait_for(
            pilot, lambda: bool(app.query(CompactionLine)) and not app.controller.turn_running
        )
        chat = app.query_one(ChatView)
        line = app.query_one(CompactionLine)
        (row,) = [r for r in chat.rows if r.widget is line]
        again = chat.build(row.item)  # what a remount draws: it was "compacted: 0 → 0 tokens"
        assert isinstance(again, NoteLine), again
        assert "failed" in again.text and "read-only" in again.text


async def test_a_provider_error_mid_reply_is_shown_in_place(make_app: MakeApp) -> None:
    from agentsh.events import Retrying, TextDelta, TurnStarted

    async def failing(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        yield Retrying(1, 3, 2.0, "rate limited")
        yield TextDelta("Partial ans")
        yield ErrorOccurred(ErrorKind.SERVER, "The provider failed (HTTP 500).")
        yield TurnEnded(TurnOutcome.ERROR, error="HTTP 500")

    app = make_app(factory=fake_factory(script=failing))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        reply = app.query_one(AssistantMessage)
        assert reply.text == "Partial ans"
        footer = reply.query_one(".message-footer")
        assert footer.display and footer.has_class("error")
        assert any("retry 1/3 in 2s: rate limited" in n.text for n in app.query(NoteLine))


async def test_retries_in_a_row_are_one_line_that_counts_them(make_app: MakeApp) -> None:
    """Three retries of one call stacked three "! retrying" lines above the error; the line
    now says the latest attempt, and a retry after new output gets a line of its own."""
    from agentsh.events import Retrying, TextDelta, TurnStarted

    async def failing(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        for attempt in (1, 2, 3):
            yield Retrying(attempt, 3, 2.0 * attempt, "network error")
        yield TextDelta("Partial ans")
        yield Retrying(1, 3, 2.0, "rate limited")
        yield ErrorOccurred(ErrorKind.SERVER, "The provider failed (HTTP 500).")
        yield TurnEnded(TurnOutcome.ERROR, error="HTTP 500")

    app = make_app(factory=fake_factory(script=failing))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await pilot.pause()
        lines = [n.text for n in app.query(NoteLine) if n.text.startswith("retry ")]
        assert lines == [
            "retry 3/3 in 6s: network error",
            "retry 1/3 in 2s: rate limited",
        ]
        assert screen_text(app).count("retry ") == 2


async def test_a_provider_error_is_shown_as_text_not_markup(make_app: MakeApp) -> None:
    """The error comes from the provider: Textual markup in it (``[@click=...]``, or just
    ``[model]``) is shown as written, never obeyed."""
    from agentsh.events import TextDelta, TurnStarted

    said = "set [model] api_base, or [@click=app.quit]click here[/]"

    async def failing(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        yield TextDelta("Partial")
        yield ErrorOccurred(ErrorKind.SERVER, said)
        yield TurnEnded(TurnOutcome.ERROR, error=said)

    app = make_app(factory=fake_factory(script=failing))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"go", "enter")
        await wait_for(
            pilot, lambda: not app.controller.turn_running and bool(app.query(AssistantMessage))
        )
        footer = app.query_one(AssistantMessage).query_one(".message-footer")
        assert said in str(footer.render())


async def test_the_send_key_can_be_remapped(project: Path, make_app: MakeApp) -> None:
    env = load_environment(project)
    env.user.config_file.parent.mkdir(parents=True, exist_ok=True)
    env.user.config_file.write_text('[tui.keys]\nsubmit = "ctrl+s"\nnewline = "enter"\n')
    app = make_app(environment=load_environment(project))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press("a", "enter", "b")
        assert app.query_one(PromptInput).text == "a\nb"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["a\nb"])


async def test_help_in_the_chat_shows_every_command_with_its_summary(make_app: MakeApp) -> None:
    # `/compact [tier] [instructions] | undo`: an unescaped "|" split that row and dropped its
    # summary.
    app = make_app()
    async with app.run_test(size=(120, 60)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"/help", "enter")
        await wait_for(pilot, lambda: bool(app.query(NoteMarkdown)))

        def shown() -> str:
            return app.export_screenshot().replace("&#160;", " ")

        await wait_for(pilot, lambda: "Compact the context now" in shown())  # was a 0.2 s pause
        assert "undo]`" not in shown()


async def test_a_bare_slash_in_the_command_palette_lists_every_command(make_app: MakeApp) -> None:
    from textual.command import CommandList, CommandPalette

    from agentsh.tui.slash import registry as slash

    app = make_app()
    async with app.run_test(size=(80, 40)) as pilot:
        await ready(pilot, app)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.pause(0.2)
        await pilot.press("/")

        def listed() -> set[str]:
            return {
                str(o.prompt).split("\n")[0] for o in app.screen.query_one(CommandList)._options
            }

        wanted = {f"/{c.name}" for c in slash.COMMANDS}
        # The search results, not the list shown before typing (which also has "Keys", "Quit").
        await wait_for(pilot, lambda: wanted <= listed() and "Keys" not in listed())
        await pilot.press("escape")


async def test_escape_gives_queued_messages_back_with_the_cursor_at_their_end(
    make_app: MakeApp,
) -> None:
    gate = asyncio.Event()

    class GatedAgent(FakeAgent):
        def cancel(self) -> None:
            super().cancel()
            gate.set()

    async def gated(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        await gate.wait()
        yield TurnEnded(TurnOutcome.ABORTED)

    app = make_app(factory=lambda _e, s, _o: GatedAgent(s, script=gated))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await pilot.press(*"first", "enter")
        await wait_for(pilot, lambda: app.controller.turn_running)
        await pilot.press(*"second", "enter")
        await wait_for(pilot, lambda: bool(app.query(QueuedMessage)))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        assert not app.query(QueuedMessage)
        # Typing goes on where the unsent text ends, not in front of it.
        await pilot.press(*" too")
        assert app.query_one(PromptInput).text == "second too"


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_notifications_never_cover_the_editor(
    make_app: MakeApp, size: tuple[int, int]
) -> None:
    from textual.widgets._toast import Toast

    app = make_app()
    async with app.run_test(size=size, notifications=True) as pilot:
        await ready(pilot, app)
        await pilot.press(*"a draft the user is typing")
        app.notify("Edit and send to start a new branch; the old one stays.", title="Editing")
        await wait_for(pilot, lambda: bool(app.screen.query(Toast)))
        await pilot.pause(0.1)
        editor = app.query_one(PromptInput).region
        for toast in app.screen.query(Toast):
            assert not toast.region.overlaps(editor)


async def test_a_new_turn_unmounts_old_rows_past_the_widget_budget(
    project: Path, make_app: MakeApp
) -> None:
    """Every frame of a streaming reply lays out every mounted widget: long markdown replies
    above the screen are unmounted when a turn starts, and come back when scrolled to."""
    from agentsh.tui.widgets.row_window import WIDGET_BUDGET

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        session = Session.create(None, project)
        items = "\n\n".join(f"point {j} of the answer" for j in range(30))  # a widget each
        for i in range(20):
            session.append_message(Role.USER, f"question {i}")
            session.append_message(
                Role.ASSISTANT, f"answer {i}\n\n{items}", stop_reason=StopReason.STOP
            )
        await app.controller.switch_session(session)
        chat = app.query_one(ChatView)
        assert chat.mounted_rows == 40  # all of them: the row window is far from full
        assert sum(1 for _ in chat.walk_children()) > 2 * WIDGET_BUDGET
        await pilot.press(*"more", "enter")
        await wait_for(pilot, lambda: not app.controller.turn_running
                       and chat.rows[-1].widget is not None)  # fmt: skip
        assert sum(1 for _ in chat.walk_children()) <= WIDGET_BUDGET + 60
        assert chat.first > 0 and chat.rows[0].widget is None
        assert isinstance(chat.children[-1], AssistantMessage)
        # Back to the top in one window change (Home's): scrolling up a batch a pass took
        # more than the 120 s a test has under load (tests/tui/test_far_up_reader keeps it).
        await chat.reveal_start()
        await wait_for(pilot, lambda: chat.first == 0)
        assert chat.rows[0].widget is not None  # built again from the log


async def test_escape_gives_back_a_message_queued_while_the_agent_loads(
    make_app: MakeApp,
) -> None:
    """Seen in tmux: a message sent as agentsh started waited as "queued:" for the agent to
    load, and Esc did nothing; it went once the agent was ready. Esc takes it back unsent."""
    import threading

    gate = threading.Event()

    def slow(_env: object, session: Session, _options: object) -> FakeAgent:
        gate.wait(30)  # the agent loads (litellm's facts, the index)
        return FakeAgent(session)

    app = make_app(factory=slow)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.controller.current_session() is not None)
            await pilot.press(*"early", "enter")
            await wait_for(pilot, lambda: bool(app.query(QueuedMessage)))
            await pilot.press("escape")
            await wait_for(pilot, lambda: not app.query(QueuedMessage))
            assert app.query_one(PromptInput).text == "early"
            gate.set()
            await ready(pilot, app)
            await pilot.pause(0.2)
            assert not app.query(UserMessage)  # nothing was sent
    finally:
        gate.set()


async def test_compact_with_nothing_said_yet_says_so(make_app: MakeApp) -> None:
    """/compact right after /new said "compaction failed: nothing to free: what is left is the
    newest turn, which must stay", of a conversation with no turn."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/new")
        await wait_for(pilot, lambda: not app.controller.turn_running)
        await submit(pilot, app, "/compact")
        said = "Nothing to compact yet: this conversation has no messages."
        await wait_for(pilot, lambda: said in screen_text(app))
        assert fake_of(app).compactions == [] and "failed" not in screen_text(app)
