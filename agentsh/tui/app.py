"""The Textual App: wires the screen, bindings, themes and the controller together.

No feature logic lives here (DESIGN.md): the App composes the chat column and the status bar,
installs themes (and reloads user themes when their files change) and the user's keymap,
routes SIGTERM and SIGHUP to the controller's quit, and forwards key actions and widget
messages to the :class:`~agentsh.tui.controller.ChatController`, which does the rest
(``/theme`` included: the App only holds the active theme, as Textual keeps it there).
Importing this module must stay cheap: litellm, tiktoken, numpy, onnxruntime and the search
index are imported later, by the agent factory in a thread worker (a test pins this).
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, TextArea

from agentsh.config import Environment
from agentsh.tui.approval_modes import Mode, next_mode
from agentsh.tui.controller import AgentFactory, ChatController
from agentsh.tui.interrupt import QUIT_HINT, QUIT_WINDOW_S, DoublePress
from agentsh.tui.keys import KeyScope, bindings_for, display_key, keymap_from_settings, spec
from agentsh.tui.options import LaunchOptions
from agentsh.tui.panes.panel import WIDE_COLUMNS, PaneName, SidePanel
from agentsh.tui.quiet_gc import QuietCollector
from agentsh.tui.quit_signals import QuitSignals
from agentsh.tui.status_format import Part
from agentsh.tui.terminal_safety import install as install_terminal_safety
from agentsh.tui.themes import DEFAULT_THEME, load_themes, shipped_themes_dir
from agentsh.tui.widgets.activity_line import ActivityLine
from agentsh.tui.widgets.approval_prompt import ApprovalNotice, ApprovalPrompt, give_keys_back
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import Composer, PromptInput
from agentsh.tui.widgets.output_notice import OutputNotice
from agentsh.tui.widgets.status_bar import StatusBar
from agentsh.tui.widgets.tool_block import ToolBlock

install_terminal_safety()  # no control sequence in drawn text reaches the terminal

UNTRUSTED_NOTE = (
    "This folder is not trusted: its .agentsh/config.toml, AGENTS.md and memory were not "
    "loaded. `agentsh trust` asks again."
)

if TYPE_CHECKING:
    from types import ModuleType

    from textual.command import Provider
    from textual.driver import Driver
    from textual.notifications import SeverityLevel
    from textual.worker import WorkType

    from agentsh.tui.panes.tree_pane import TreePane


def _slash() -> ModuleType:
    """The slash-command table, imported at the first ``/`` typed or command sent (or just
    after the first frame, see :meth:`AgentshApp.on_mount`): its handlers and what they import
    are not needed to draw the first frame."""
    from agentsh.tui.slash import registry

    return registry


def _slash_provider() -> type[Provider]:
    from agentsh.tui.palette import SlashCommandProvider

    return SlashCommandProvider


def _pane_provider() -> type[Provider]:
    from agentsh.tui.palette import PaneProvider

    return PaneProvider


class AgentshApp(App[None]):
    CSS_PATH = "agentsh.tcss"
    TITLE = "agentsh"
    COMMANDS = App.COMMANDS | {lambda: _slash_provider(), lambda: _pane_provider()}
    BINDINGS = bindings_for(KeyScope.APP)
    # Under WIDE_COLUMNS the side panel takes the chat's place while open (agentsh.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_COLUMNS, "-wide")]  # noqa: RUF012 - as App

    def __init__(
        self,
        env: Environment,
        options: LaunchOptions | None = None,
        *,
        agent_factory: AgentFactory | None = None,
        cwd: Path | None = None,
        watch_themes: bool = True,
        leaving: Callable[[], None] | None = None,
        start_worker: Callable[[], None] | None = None,
    ) -> None:
        """``leaving``: called once a quit has stopped the turn, before the window closes
        (the real TUI stops its model worker there, :func:`agentsh.tui.launch.main`);
        ``start_worker``: called in a thread at the first key while the agent still loads."""
        super().__init__()
        self.env = env
        self.options = options or LaunchOptions()
        keymap = keymap_from_settings(env.settings.tui.keys)
        self.keymap = keymap.keymap
        self.controller = ChatController(
            self, env, self.options, keymap=self.keymap, agent_factory=agent_factory, cwd=cwd
        )
        if leaving is not None:
            self.controller.leaving = leaving
        self.controller.sessions.start_worker = start_worker
        self._startup_problems = [str(p) for p in env.config.problems] + list(keymap.problems)
        if env.trust.declined:  # the user said "not now" to these very files, once
            self._startup_problems.insert(0, env.trust.declined_note())
        elif not env.trusted:
            self._startup_problems.insert(0, UNTRUSTED_NOTE)
        self._watch_themes = watch_themes
        # A closed terminal (SIGHUP) or a kill (SIGTERM) quits like Ctrl+Q: the log is finished.
        self._quit_signals = QuitSignals(self._quit_on_signal)
        self._ctrl_c = DoublePress()
        self._started_mode: Mode | None = None  # the approval mode Shift+Tab first found
        self._gc = QuietCollector()  # full collections wait for a quiet keyboard
        self._install_themes()

    def get_driver_class(self) -> type[Driver]:
        """On Linux, Textual's driver without its wait for the input thread on exit
        (:mod:`agentsh.tui.exit_driver`); ``TEXTUAL_DRIVER`` still chooses another."""
        driver = super().get_driver_class()
        if (
            f"{driver.__module__}.{driver.__qualname__}"
            != "textual.drivers.linux_driver.LinuxDriver"
        ):
            return driver
        from agentsh.tui.exit_driver import ExitDriver

        return ExitDriver

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice as text, never markup, whoever posts it: they carry config keys,
        file names and errors a project or a provider wrote (``[@click=...]`` is a link)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    # -- layout -------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        from agentsh.tui.echo_first import EchoFirstScreen

        return EchoFirstScreen(id="_default")

    def compose(self) -> ComposeResult:
        settings = self.env.settings.tui
        # #main is a row: the chat column, and the side panel (memory, summaries and tree
        # tabs) to its right, hidden until a pane key opens it.
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield ChatView(
                    window=settings.transcript_window,
                    preview_lines=settings.tool_preview_lines,
                    expand_key=display_key(self.keymap.get("toggle_tool", spec("toggle_tool").key)),
                    id="chat",
                )
                yield Vertical(id="queue")
                yield OutputNotice(page_key=self._key_for("page_down").split(" / ")[0])
                yield ApprovalNotice(answer_key=self._key_for("focus_chat").split(" / ")[0])
                yield ActivityLine(cancel_key=self._key_for("cancel").split(" / ")[0])
                yield Composer(id="composer")
            yield SidePanel(self.controller)
        yield StatusBar(id="status-bar")

    def _key_for(self, binding_id: str) -> str:
        """The key the user has for ``binding_id``, as people write it (``Esc``)."""
        return display_key(self.keymap.get(binding_id, spec(binding_id).key))

    def on_mount(self) -> None:
        self._quit_signals.install()
        self.set_keymap(self.keymap)
        prompt = self.query_one(PromptInput)
        prompt.files = self.controller.project_files
        if not self.options.no_session:  # --no-session keeps nothing on disk
            prompt.history_file = self.env.user.prompt_history_file(self.env.project.root)
        prompt.commands = lambda typed: _slash().complete(typed)
        self.call_after_refresh(_slash)  # loaded once the first frame is up, before a "/"
        current = self.controller.current
        prompt.command_arguments = lambda word, typed: _slash().complete_argument(
            word, typed, current
        )
        if self.options.typed_ahead:  # typed while the trust question came up
            prompt.put_text(self.options.typed_ahead)
        prompt.focus()
        prompt.fit(self.size.height)
        status_bar = self.query_one(StatusBar)
        # A pane over the narrow chat hides the working indicator: the status bar shows it.
        self.query_one(ActivityLine).mirror = lambda text: setattr(status_bar, "working", text)
        for problem in self._startup_problems:
            self.notify(problem, title="Configuration", severity="warning", timeout=10)
        self.controller.show_initial_status()
        self.call_after_refresh(self._after_first_frame)

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(PromptInput).fit(event.size.height)

    def _after_first_frame(self) -> None:
        self._gc.install()
        self.set_interval(0.5, self._collect_garbage, name="quiet-gc")
        if self.is_running:  # (an app quit before its first frame can no longer subscribe)
            self.controller.path_changed.subscribe(self, self._settle_after_turn)
        self.controller.start(after_load=self._after_load)
        self.controller.refresh_project_files()
        self.query_one(PromptInput).load_history()

    def _after_load(self) -> None:
        """Once the agent is ready: importing watchfiles (and anyio) on the UI loop while the
        load thread imported the agent delayed it by as long."""
        if self._watch_themes:
            self._watch_user_themes()

    def _collect_garbage(self) -> None:
        self._gc.tick(busy=self.controller.turn_running)

    def _settle_after_turn(self, what: str) -> None:
        if what == "turn":  # once its last frame is painted: collect what the turn made
            self.call_after_refresh(self._gc.settle)

    def on_unmount(self) -> None:
        self._gc.remove()
        self._quit_signals.remove()
        self.controller.shutdown()

    def _quit_on_signal(self, signum: int) -> None:
        # 128 + the signal number, as a shell reports a process the signal ended.
        code = 128 + signum
        # The job as a function: a quit cancelled before it ran (a second signal, Ctrl+C)
        # left its coroutine never awaited, which Python reports on stderr at exit.
        end = self.controller.hang_up if signum == getattr(signal, "SIGHUP", None) else None
        job: WorkType[None] = functools.partial(end or self.controller.quit, return_code=code)
        self.run_worker(job, group="quit", exclusive=True, exit_on_error=False)

    # -- themes -------------------------------------------------------------------------------

    def _theme_folders(self) -> list[Path]:
        return [shipped_themes_dir(), self.env.user.themes_dir]

    def _install_themes(self) -> None:
        loaded = load_themes(self._theme_folders(), trusted=[shipped_themes_dir()])
        for theme in loaded.themes:
            self.register_theme(theme)
        self._startup_problems += [str(p) for p in loaded.problems]
        wanted = self.env.settings.tui.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            if wanted != DEFAULT_THEME:
                self._startup_problems.append(f"theme {wanted!r} not found; using {DEFAULT_THEME}")
            if DEFAULT_THEME in self.available_themes:
                self.theme = DEFAULT_THEME

    def reload_themes(self) -> None:
        loaded = load_themes(self._theme_folders(), trusted=[shipped_themes_dir()])
        for theme in loaded.themes:
            self.register_theme(theme)
        for problem in loaded.problems:
            self.notify(str(problem), title="Theme skipped", severity="warning", timeout=8)
        self.refresh_css()

    @work(exclusive=True, group="theme-watch", exit_on_error=False)
    async def _watch_user_themes(self) -> None:
        """Reload user themes when a file in the themes folder changes (watchfiles)."""
        from watchfiles import awatch

        folder = self.env.user.themes_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        async for _changes in awatch(folder, debounce=100, step=50):
            self.reload_themes()

    # -- actions (keys) -----------------------------------------------------------------------

    async def action_quit(self) -> None:
        await self.controller.quit()

    def action_show_help(self) -> None:
        from agentsh.tui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.keymap))

    def action_cancel_turn(self) -> None:
        self.controller.escape()

    def action_interrupt(self) -> None:
        """Ctrl+C (:mod:`agentsh.tui.interrupt`): copy a selection, else cancel the turn, else
        clear the editor, else quit on the second press."""
        focused = self.focused
        selected = self.screen.get_selected_text() or (
            focused.selected_text if isinstance(focused, Input | TextArea) else ""
        )
        if selected:
            self.copy_to_clipboard(selected)
            self.screen.clear_selection()
            return
        if self.controller.cancel():
            self._ctrl_c.reset()
            return
        prompt = self.query_one(PromptInput)
        if prompt.text and self.screen is self.screen_stack[0]:
            self._ctrl_c.reset()
            prompt.clear()  # an edit: Ctrl+Z brings the text back
            self.controller.branching.drop_edit()  # an earlier message's edit with it
            prompt.focus()
            return
        if self._ctrl_c.press():
            leave: WorkType[None] = self.controller.quit  # a function: see _quit_on_signal
            self.run_worker(leave, group="quit", exclusive=True)
            return
        self.query_one(StatusBar).flash(QUIT_HINT, QUIT_WINDOW_S)  # under the editor

    async def action_toggle_last_tool(self) -> None:
        focused = self.focused
        if isinstance(focused, ToolBlock):
            focused.action_toggle_expand()
            return
        blocks = self.query(ToolBlock)
        if blocks and not blocks.last().display:  # held below a reader far up: to the end
            await self.query_one(ChatView).settle_at_end()
            blocks = self.query(ToolBlock)
        if blocks:
            blocks.last().action_toggle_expand()

    def action_focus_input(self) -> None:
        self.query_one(PromptInput).focus()

    async def action_focus_chat(self) -> None:
        chat = self.query_one(ChatView)
        if not chat.following:  # a reader far up (newest blocks held or unmounted): to the end
            await chat.settle_at_end()
        blocks = [w for w in chat.children if w.can_focus and w.display]
        (blocks[-1] if blocks else chat).focus()

    async def action_chat_page_up(self) -> None:
        await self.query_one(ChatView).page_up()

    async def action_chat_page_down(self) -> None:
        await self.query_one(ChatView).page_down()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # PgUp/PgDn are priority keys for the chat; inside the side panel they page the pane.
        if action in ("chat_page_up", "chat_page_down"):
            focused = self.focused
            return focused is None or not any(
                isinstance(node, SidePanel) for node in focused.ancestors_with_self
            )
        return True

    async def action_toggle_pane(self, name: str) -> None:
        if not await self.query_one(SidePanel).toggle(PaneName(name)):
            self.query_one(PromptInput).focus()

    def action_select_message(self, step: int) -> None:
        branching = self.controller.branching
        branching.run(branching.select_message(step), "Selecting a message")

    def action_switch_branch(self, step: int) -> None:
        branching = self.controller.branching
        branching.run(branching.switch_branch(step), "Switching branches")

    def on_key(self, event: events.Key) -> None:
        """A character no focused widget took (the focus was left on the chat, a tab header,
        a tool block) is typed into the editor, which takes the focus: typing never goes
        nowhere. Widgets that take text (the editor, a search box, the tree) keep theirs, and
        a waiting approval keeps the focus its y/a/n need. The editor itself never lets a
        character through: one seen here with the editor focused was typed before it took the
        focus (ahead of the first frame, seen lost in tmux) and goes in too; so does an Enter
        typed then, which sends it (typed before the terminal left line mode, it arrives as
        "\n", which reads as Ctrl+J: the editor takes a real Ctrl+J itself)."""
        prompt = self.query_one(PromptInput)
        focused = self.focused
        if (
            event.key in ("enter", "ctrl+j")
            and (focused is None or focused is prompt)
            and self.screen is self.screen_stack[0]
            and prompt.is_on_screen
        ):
            event.stop()
            prompt.focus()
            prompt.action_submit()
            return
        if (
            event.is_printable
            and event.character
            and self.screen is self.screen_stack[0]
            and not isinstance(focused, ApprovalPrompt)
            and prompt.is_on_screen
            and event.key not in self.screen.active_bindings  # e.g. g and e in the summaries
        ):
            event.stop()
            prompt.focus()
            prompt.insert(event.character)

    # -- messages from widgets ------------------------------------------------------------------

    @on(PromptInput.Changed)
    def _typing(self, event: PromptInput.Changed) -> None:
        self._gc.input_seen()  # no full collection while the user types
        if isinstance(event.text_area, PromptInput):
            self.controller.user_typing()

    @on(PromptInput.Submitted)
    async def _submitted(self, event: PromptInput.Submitted) -> None:
        await self.controller.submit(event.text)

    @on(ApprovalPrompt.Decided)
    def _decided(self, event: ApprovalPrompt.Decided) -> None:
        self.controller.approval_decided(event.prompt, event.decision)

    @on(ApprovalPrompt.Below)
    def _approval_below(self, event: ApprovalPrompt.Below) -> None:
        self.query_one(ApprovalNotice).track(event.prompt)
        self._show_output_notice()

    @on(ApprovalNotice.Answer)
    async def _answer_approval(self, event: ApprovalNotice.Answer) -> None:
        if not event.prompt.display:  # held below a reader far up
            await self.query_one(ChatView).settle_at_end()
        event.prompt.focus()  # scrolled into view with it

    @on(ChatView.OutputBelow)
    def _show_output_notice(self) -> None:
        """ "New output below" while the chat has some, unless an approval's notice says more.
        The chat can still say so while the screen closes, its notices already gone."""
        notices, approvals = self.query(OutputNotice), self.query(ApprovalNotice)
        chats = self.query(ChatView)
        if notices and approvals and chats:
            below = chats.first(ChatView).output_below
            notices.first(OutputNotice).display = below and not approvals.first().display

    @on(OutputNotice.Follow)
    async def _follow_output(self) -> None:
        await self.query_one(ChatView).reveal_end()

    @on(ChatView.EditRequested)
    def _edit_requested(self, event: ChatView.EditRequested) -> None:
        branching = self.controller.branching
        branching.run(branching.edit_message(event.entry_id), "Editing the message")

    @on(PromptInput.ModeCycled)
    def _cycle_mode(self) -> None:
        agent = self.controller.agent
        if agent is None:
            return  # loading: the mode the command line chose holds until it is ready
        current = Mode(agent.approval_mode, agent.plan_mode)
        if self._started_mode is None:
            self._started_mode = current  # nothing else in the TUI changes it
        mode = next_mode(current, self._started_mode)
        agent.set_approval_mode(mode.approval, plan=mode.plan)
        self.query_one(StatusBar).mode = Part(mode.label, mode.style)

    @on(ChatView.SelectionCleared)
    def _selection_cleared(self) -> None:
        give_keys_back(self.query_one(PromptInput))

    # The tree pane's messages, by name: its module loads only when the panel first opens.
    def on_tree_pane_chosen(self, event: TreePane.Chosen) -> None:
        branching = self.controller.branching
        branching.run(branching.choose(event.entry_id), "Moving in the tree")

    def on_tree_pane_label_changed(self, event: TreePane.LabelChanged) -> None:
        branching = self.controller.branching
        branching.run(branching.set_label(event.entry_id, event.label), "Labelling")

    def on_tree_pane_closed(self, event: TreePane.Closed) -> None:
        self.controller.branching.tree_closed()
