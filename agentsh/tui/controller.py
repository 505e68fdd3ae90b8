"""The chat controller: the one object the App talks to, wiring the TUI's parts together.

Each concern is its own part, and the parts share :class:`~agentsh.tui.current.Current` (what
is open) and a :class:`~agentsh.tui.display.View` (where things are shown) instead of holding each
other or this controller:

- :class:`~agentsh.tui.lifecycle.SessionLifecycle`: opening the session and building the
  agent after the first frame, switching sessions, closing on the way out;
- :class:`~agentsh.tui.turns.TurnRunner`: messages run as turns or wait in the queue, Esc
  cancels, approvals are answered;
- :class:`~agentsh.tui.branching.BranchNavigator`: the branch keys and the tree pane;
- the slash commands (:mod:`agentsh.tui.slash`): a table of command objects whose handlers
  receive this controller as their :class:`~agentsh.tui.slash.command.CommandContext`.

What is left here is routing: Enter (a command or a message), Esc, quitting.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.tui.activity import WAITING
from agentsh.tui.branching import BranchNavigator
from agentsh.tui.current import Current
from agentsh.tui.display import AppView
from agentsh.tui.lifecycle import AgentFactory, SessionLifecycle, read_only_note
from agentsh.tui.slash.command import Need, SlashCommand
from agentsh.tui.turns import TurnRunner
from agentsh.tui.widgets.chat import ChatView

if TYPE_CHECKING:
    from textual.app import App
    from textual.signal import Signal

    from agentsh.config import Environment
    from agentsh.events import ApprovalDecision, ContextStatus, Event
    from agentsh.frontend import InteractiveAPI
    from agentsh.session.session import Session
    from agentsh.tui.options import LaunchOptions
    from agentsh.tui.widgets.approval_prompt import ApprovalPrompt
    from agentsh.tui.widgets.composer import PromptInput
    from agentsh.tui.widgets.status_bar import StatusBar

__all__ = ["AgentFactory", "ChatController"]


class ChatController:
    def __init__(
        self,
        app: App[None],
        env: Environment,
        options: LaunchOptions,
        *,
        keymap: dict[str, str],
        agent_factory: AgentFactory | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.app = app
        self.current = Current(app, env, options, cwd)
        self.view = AppView(app, keymap, env.user.ui_state_file)
        self.turns = TurnRunner(app, self.current, self.view, after_turn=self._after_turn)
        self.branching = BranchNavigator(app, self.current, self.view, self.turns.resume_queue)
        self.sessions = SessionLifecycle(
            app,
            self.current,
            self.view,
            agent_factory=agent_factory,
            on_agent_ready=self.turns.resume_queue,
        )
        self._files: list[str] = []  # the project's files, for @ completion
        #: how :meth:`hang_up` ends the process (tests replace it)
        self.exit_process: Callable[[int], None] = os._exit
        #: called once the turn has stopped on the way out: the real TUI lets its model worker
        #: begin to exit here (:func:`agentsh.tui.launch.main`), beside the window's closing
        self.leaving: Callable[[], None] = lambda: None

    # -- what is open (read by the panes, the commands and tests) -------------------------------

    @property
    def env(self) -> Environment:
        return self.current.env

    @property
    def agent(self) -> InteractiveAPI | None:
        return self.current.agent

    @property
    def ready(self) -> bool:
        return self.current.ready

    @property
    def turn_running(self) -> bool:
        return self.current.turn_running

    @property
    def agent_failed(self) -> str:
        return self.current.agent_failed

    @property
    def path_changed(self) -> Signal[str]:
        return self.current.path_changed

    def current_session(self) -> Session | None:
        return self.current.current_session()

    @property
    def chat(self) -> ChatView:
        return self.view.chat

    @property
    def prompt(self) -> PromptInput:
        return self.view.prompt

    @property
    def status_bar(self) -> StatusBar:
        return self.view.status_bar

    def show_status(self, status: ContextStatus) -> None:
        self.view.show_status(status)

    # -- start-up and the session's life --------------------------------------------------------

    def show_initial_status(self) -> None:
        self.sessions.show_initial_status()

    def start(self, after_load: Callable[[], None] = lambda: None) -> None:
        self.sessions.start(after_load)

    def user_typing(self) -> None:
        self.sessions.user_typing()

    async def switch_session(self, session: Session) -> None:
        await self.sessions.switch_session(session)

    async def open_path(self, path: Path) -> None:
        await self.sessions.open_path(path)

    async def pick_session(self) -> Path | None:
        return await self.sessions.pick_session()

    def shutdown(self) -> None:
        self.sessions.shutdown()

    # -- project files for @ completion --------------------------------------------------------

    def project_files(self) -> list[str]:
        """The project's files as last listed (the editor's ``@`` completion reads this)."""
        return self._files

    def refresh_project_files(self) -> None:
        """Re-list the project's files off the UI thread (start-up and after each turn)."""
        self.app.run_worker(
            self._list_files, thread=True, exclusive=True, group="files", exit_on_error=False
        )

    def _list_files(self) -> None:
        from agentsh.tui.file_list import list_project_files

        files = list_project_files(self.env.project.root)
        self.app.call_from_thread(setattr, self, "_files", files)

    # -- Enter ----------------------------------------------------------------------------------

    async def submit(self, text: str) -> None:
        """The user pressed Enter: a command runs now, a message runs or is queued.

        The chat goes to its end first (here, or in :meth:`run_command` for a command):
        a command's answer, or a note saying why a message was not sent, is appended there,
        and a user who had scrolled up to read would otherwise see nothing happen."""
        from agentsh.tui.slash import registry as slash

        view = self.view
        if slash.is_command(text):
            try:
                command, arg = slash.parse(text)
            except slash.UnknownCommand as exc:
                await view.chat.reveal_end()
                await view.note(str(exc), "error")
                return
            await self.run_command(command, arg)
            return
        await view.chat.reveal_end()
        if self.current.agent_failed:
            await view.note(self.current.agent_failed, "error")
            return
        session = self.current_session()
        if session is not None and session.read_only_reason:
            await view.note(read_only_note(session), "warning")
            return
        if self.branching.editing is not None:
            # An edited earlier message branches only now. In a worker: re-projecting the
            # chat waits for a frame, which this handler would hold up.
            self.branching.run(self._send_edited(text), "Sending the edited message")
            return
        await self.turns.send(text)

    async def _send_edited(self, text: str) -> None:
        await self.branching.apply_edit()
        await self.turns.send(text)

    def run_events(self, events: AsyncIterator[Event], *, doing: str = WAITING) -> None:
        self.turns.run_events(events, doing=doing)

    async def _after_turn(self) -> None:
        self.refresh_project_files()  # tools may have created or deleted files
        await self.branching.turn_ended()

    def resume_queue(self) -> None:
        self.turns.resume_queue()

    # -- slash commands -------------------------------------------------------------------------

    async def run_command(self, command: SlashCommand, arg: str) -> None:
        await self.chat.reveal_end()  # typed or from the palette: its answer must show
        if not await self._may_run(command):
            return
        # A worker, so a handler can wait for a picker (push_screen_wait needs one).
        self.app.run_worker(
            self._guarded(command.handler(self, arg), command.name),
            group="command",
            exit_on_error=False,
        )

    async def _may_run(self, command: SlashCommand) -> bool:
        """The checks a command's :class:`Need` flags ask for; each says why it refuses."""
        current, view = self.current, self.view
        if Need.IDLE in command.needs and current.turn_running:
            await view.note(
                f"/{command.name} waits for the turn to end (Esc cancels it).", "warning"
            )
            return False
        if Need.AGENT in command.needs and current.agent is None:
            await self.no_agent(f"/{command.name} is available once the agent has loaded.")
            return False
        session = current.current_session()
        if Need.WRITABLE in command.needs and session is not None and session.read_only_reason:
            # A read-only session (open in another agentsh) cannot take a label or a
            # compaction: say so, and how to go on, instead of failing on the write.
            await view.note(read_only_note(session), "warning")
            return False
        return True

    async def _guarded(self, work: Awaitable[None], name: str) -> None:
        try:
            await work
        except Exception as exc:  # noqa: BLE001 - a failed command is shown, the app goes on
            await self.view.note(f"/{name} failed: {exc}", "error")

    async def no_agent(self, loading: str) -> None:
        """A command that needs the agent ran without one: it is loading (``loading`` says
        so), or it could not start, and then waiting would not help."""
        if self.current.agent_failed:
            await self.view.note(self.current.agent_failed, "error")
        else:
            await self.view.note(loading, "warning")

    # -- Esc ------------------------------------------------------------------------------------

    def escape(self) -> None:
        """Esc (unless the focused widget takes it): cancel the running turn; else, from the
        chat (Ctrl+Up walks its blocks) or a side pane, back to the editor, where typing goes
        (a pane that had taken the narrow chat's place closes); else, from the editor, close
        the side pane beside the chat; else, twice on an empty editor, open the tree. A pane
        that has taken the narrow chat's place goes first: Esc never stops a turn out of
        sight (the next Esc, with the chat back, does)."""
        focused = self.app.focused
        panel = self.branching.panel
        if (
            self.current.turn_running
            and panel.is_open
            and panel.overlays_chat
            and focused is not None
            and panel in focused.ancestors
        ):
            self.branching.tree_closed()  # the pane closes, the editor has the keys
            return
        if self.cancel():
            return
        if focused is self.prompt and self.branching.drop_edit():
            self.prompt.clear()  # the edit's draft goes (Ctrl+Z brings it back); nothing moved
            return
        if focused is self.prompt and panel.is_open:
            # Seen: Esc "did not close the pane" beside a wide chat; it only moved the focus
            # back here. From the editor there is nowhere else to go back from: it closes.
            panel.hide()
            return
        if focused is not None and any(
            isinstance(node, ChatView) for node in focused.ancestors_with_self
        ):
            self.prompt.focus()
            return
        if focused is not None and self.branching.panel in focused.ancestors:
            # The tree handles its own Esc; this is the memory or summaries pane.
            self.branching.tree_closed()
            return
        self.branching.escape()

    def cancel(self) -> bool:
        """Esc: stop a branch summary being written, else the running turn."""
        return self.branching.cancel() or self.turns.cancel()

    def approval_decided(self, prompt: ApprovalPrompt, decision: ApprovalDecision) -> None:
        self.turns.approval_decided(prompt, decision)

    # -- leaving --------------------------------------------------------------------------------

    async def quit(self, *, return_code: int = 0) -> None:
        """Leave: Ctrl+Q, ``/quit``, SIGTERM. The App's exit then syncs and closes the log."""
        await self.turns.stop_for_exit()
        self.leaving()
        self.app.exit(return_code=return_code)

    async def hang_up(self, *, return_code: int) -> None:
        """The terminal is gone (SIGHUP): finish the log, then end the process at once.

        Textual's orderly exit writes terminal-restoring sequences, and with no terminal to
        take them it can block for ever (seen in tmux: the process outlived its window,
        stuck in the output queue). Nothing is left to restore, so after the turn is logged
        and the session synced and closed, the process ends without that teardown."""
        await self.turns.stop_for_exit()
        self.leaving()
        self.shutdown()
        self.exit_process(return_code)
