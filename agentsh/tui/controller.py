"""The chat controller: everything the TUI *does*, kept out of the App class.

It opens the session and builds the agent off the UI thread after the first frame, runs one
turn at a time (consuming the agent's events and turning them into transcript widgets),
queues messages typed while a turn runs, cancels on Esc, and implements the slash commands.
It talks to widgets only through their public methods, and to the core only through the
agent's public API and the session (the log is the truth: after a session switch the chat is
re-projected from ``session.current_path()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.signal import Signal

from agentsh.config import Environment
from agentsh.events import (
    ApprovalDecision,
    ContextStatus,
    Event,
    Tier,
)
from agentsh.frontend import AgentAPI
from agentsh.session.entries import MessageEntry
from agentsh.session.session import Session
from agentsh.tui import commands as slash
from agentsh.tui.branching import BranchNavigator
from agentsh.tui.options import LaunchOptions
from agentsh.tui.projection import NoteItem, Projector, project_session, projector_for
from agentsh.tui.turn_view import TurnView
from agentsh.tui.ui_state import UiState, load_ui_state, save_ui_state
from agentsh.tui.widgets.approval import ApprovalPrompt
from agentsh.tui.widgets.chat import ChatView
from agentsh.tui.widgets.composer import PromptInput
from agentsh.tui.widgets.messages import (
    NoteMarkdown,
    QueuedMessage,
)
from agentsh.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from agentsh.tui.app import AgentshApp


AgentFactory = Callable[[Environment, Session, LaunchOptions], AgentAPI]


def build_real_agent(env: Environment, session: Session, options: LaunchOptions) -> AgentAPI:
    """The default factory: the real agent (imports litellm; call it in a thread)."""
    from agentsh.agent import build_agent

    agent: AgentAPI = build_agent(
        env,
        session,
        model=options.model,
        api_base=options.api_base,
        approval=options.approval,
        interactive=True,
    )
    return agent


def locked_view(exc: BaseException) -> Session | None:
    """A read-only view of a session another agentsh holds open (``/fork`` continues it)."""
    from agentsh.session.log import SessionError, SessionLocked

    locked = exc if isinstance(exc, SessionLocked) else exc.__cause__
    if not isinstance(locked, SessionLocked):
        return None
    try:
        return Session.open(locked.path, lock=False)
    except (SessionError, OSError):
        return None


def read_only_note(session: Session) -> str:
    if "another agentsh" in session.read_only_reason or session.read_only_reason.startswith(
        "opened as a read-only view"
    ):
        return (
            "This session is open in another agentsh process, so it is shown read-only. "
            "/fork continues it in a new session file."
        )
    return f"This session is read-only ({session.read_only_reason}). /fork continues it."


class ChatController:
    def __init__(
        self,
        app: AgentshApp,
        env: Environment,
        options: LaunchOptions,
        *,
        agent_factory: AgentFactory | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.app = app
        self.env = env
        self.options = options
        self.cwd = cwd or Path.cwd()
        self.agent_factory = agent_factory or build_real_agent
        self.agent: AgentAPI | None = None
        self.session: Session | None = None
        self.queue: deque[str] = deque()
        self.turn_running = False
        self.agent_failed = ""
        self._queued_widgets: list[QueuedMessage] = []
        self._files: list[str] = []  # the project's files, for @ completion
        self._ui_state = load_ui_state(env.user.ui_state_file)
        self._turn_done: asyncio.Event | None = None  # set when the running turn has ended
        # Published whenever the session's path may have changed (a turn, a compaction, an
        # undo, a session switch); the side panes subscribe. The data says why.
        self.path_changed: Signal[str] = Signal(app, "path-changed")
        self.branching = BranchNavigator(self)
        #: how :meth:`hang_up` ends the process (tests replace it)
        self.exit_process: Callable[[int], None] = os._exit

    # -- typed getters ------------------------------------------------------------------------

    @property
    def chat(self) -> ChatView:
        return self.app.query_one(ChatView)

    @property
    def status_bar(self) -> StatusBar:
        return self.app.query_one(StatusBar)

    @property
    def prompt(self) -> PromptInput:
        return self.app.query_one(PromptInput)

    @property
    def ready(self) -> bool:
        return self.agent is not None

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
        from agentsh.tui.files import list_project_files

        files = list_project_files(self.env.project.root)
        self._call_ui(setattr, self, "_files", files)

    # -- start-up -----------------------------------------------------------------------------

    def initial_status(self) -> ContextStatus:
        """What the first frame shows: the last model and window, from the cache."""
        state = self._ui_state
        model = self.options.model or state.model
        return ContextStatus(model=model, window=state.window if model == state.model else 0)

    def show_initial_status(self) -> None:
        """Before the first frame: the cached model and window, and "loading…"."""
        self.status_bar.status = self.initial_status()
        self.status_bar.starting = True

    def start(self) -> None:
        """Called once the first frame is painted: open the session, then build the agent.

        Not earlier: the worker imports litellm, and a thread holding the GIL for that import
        would slow the first paint down."""
        if self.options.wants_picker:
            self.app.run_worker(self._startup_picker(), group="command", exit_on_error=False)
        else:
            self._load_in_thread(None)

    async def _startup_picker(self) -> None:
        path = await self.pick_session()
        self._load_in_thread(path)

    def _load_in_thread(self, path: Path | None) -> None:
        self.app.run_worker(
            lambda: self._load(path),
            thread=True,
            name="load-agent",
            group="agent",
            exit_on_error=False,
        )

    def _load(self, path: Path | None) -> None:
        """Thread worker: open the session, show it, build the agent (heavy imports here)."""
        # The same choice as headless -p makes (the catalog loads here, off the UI thread).
        from agentsh.startup import new_session, open_session_file, session_for_args

        problem = ""
        try:
            if path is not None:
                session = open_session_file(self.env, path, fork_if_locked=False)
            else:
                session = session_for_args(self.env, self.options.namespace(), self.cwd)
        except Exception as exc:  # noqa: BLE001 - worker boundary: shown in the chat, new session
            view = locked_view(exc)
            if view is not None:
                session = view
            else:
                problem = f"{_sentence(str(exc))} A new session was started instead."
                session = new_session(self.env, self.cwd, persist=not self.options.no_session)
        self._call_ui(self._session_opened, session)
        if problem:  # after the transcript is loaded, which clears the chat
            self._call_ui(self.note, problem, "error")
        try:
            agent = self.agent_factory(self.env, session, self.options)
        except Exception as exc:  # noqa: BLE001 - worker boundary: the UI keeps working
            self._call_ui(self._agent_failed, f"The agent could not start: {exc}")
            return
        self._call_ui(self._agent_ready, agent)

    def _call_ui(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` (a coroutine function) on the UI loop from a thread worker."""
        self.app.call_from_thread(fn, *args)

    async def _session_opened(self, session: Session) -> None:
        self.session = session
        await self.chat.load(project_session(session))
        self.path_changed.publish("session")
        for problem in session.problems[:5]:
            await self.note(f"session file: {problem}", "warning")
        if session.read_only_reason:
            await self.note(read_only_note(session), "warning")

    async def _agent_ready(self, agent: AgentAPI) -> None:
        self.agent = agent
        self.session = agent.session
        self.status_bar.starting = False
        self.show_status(agent.status())
        self.path_changed.publish("agent")  # the memory pane can now compare with the snapshot
        if self.queue and not self.turn_running:
            self._start_next()

    async def _agent_failed(self, message: str) -> None:
        self.agent_failed = message
        self.status_bar.starting = False
        self.status_bar.status = replace(self.status_bar.status, problem="agent not started")
        await self.note(message, "error")

    def show_status(self, status: ContextStatus) -> None:
        self.status_bar.status = status
        if status.model and (
            status.model != self._ui_state.model or status.window != self._ui_state.window
        ):
            self._ui_state = UiState(status.model, status.window)
            save_ui_state(self.env.user.ui_state_file, self._ui_state)

    # -- sending ------------------------------------------------------------------------------

    async def submit(self, text: str) -> None:
        """The user pressed Enter: a command runs now, a message runs or is queued.

        The chat goes to its end first (here, or in :meth:`run_command` for a command):
        a command's answer, or a note saying why a message was not sent, is appended there,
        and a user who had scrolled up to read would otherwise see nothing happen."""
        if slash.is_command(text):
            try:
                command, arg = slash.parse(text)
            except slash.UnknownCommand as exc:
                await self.chat.reveal_end()
                await self.note(str(exc), "error")
                return
            await self.run_command(command, arg)
            return
        await self.chat.reveal_end()
        if self.agent_failed:
            await self.note(self.agent_failed, "error")
            return
        session = self.current_session()
        if session is not None and session.read_only_reason:
            await self.note(read_only_note(session), "warning")
            return
        if self.turn_running or self.agent is None:
            await self._enqueue(text)
            return
        self._start_turn(text)

    async def _enqueue(self, text: str) -> None:
        self.queue.append(text)
        widget = QueuedMessage(text)
        self._queued_widgets.append(widget)
        await self.app.query_one("#queue").mount(widget)

    def _start_next(self) -> None:
        if not self.queue:
            return
        text = self.queue.popleft()
        if self._queued_widgets:
            self._queued_widgets.pop(0).remove()
        self._start_turn(text)

    def _start_turn(self, text: str) -> None:
        assert self.agent is not None
        self.turn_running = True
        self._run_events(self.agent.run(text), user_text=text)

    def _run_events(self, events: AsyncIterator[Event], *, user_text: str = "") -> None:
        self.turn_running = True
        self._turn_done = asyncio.Event()
        worker = self.app.run_worker(
            self._consume(events, user_text), name="turn", group="turn", exit_on_error=False
        )
        del worker

    async def _consume(self, events: AsyncIterator[Event], user_text: str) -> None:
        session = self.current_session()
        # What the chat shows now, continued entry by entry as the turn writes them.
        projector = projector_for(session) if session is not None else Projector()
        turn = TurnView(self, user_text, projector)
        await self.chat.reveal_end()
        try:
            async for event in events:
                await turn.handle(event)
        except Exception as exc:  # noqa: BLE001 - a crashed turn is shown, the app goes on
            await self.note(f"The turn failed: {exc}", "error")
        finally:
            await turn.close()
            self.turn_running = False
            focused = self.app.focused
            if focused is None or not focused.focusable:
                # An approval prompt withdrawn by Esc keeps the focus it can no longer take:
                # typing would go nowhere. The editor takes it back.
                self.prompt.focus()
            if self._turn_done is not None:
                self._turn_done.set()
            self.refresh_project_files()  # tools may have created or deleted files
            await self.branching.turn_ended()
            self.path_changed.publish("turn")
            if self.queue:
                self._start_next()

    def resume_queue(self) -> None:
        """Send the next queued message, if any (after work that held the queue ended)."""
        if self.queue and not self.turn_running:
            self._start_next()

    def escape(self) -> None:
        """Esc (unless the focused widget takes it): cancel the running turn; else, from the
        chat (Ctrl+Up walks its blocks) or a side pane, back to the editor, where typing goes
        (a pane that had taken the narrow chat's place closes); else, twice on an empty
        editor, open the tree."""
        if self.cancel():
            return
        focused = self.app.focused
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
        """Esc: stop the running turn. Queued messages go back to the editor, unsent."""
        if self.branching.cancel():  # a branch summary being written
            return True
        if not self.turn_running or self.agent is None:
            return False
        self.agent.cancel()
        if self.queue:
            queued = "\n\n".join(self.queue)
            self.queue.clear()
            for widget in self._queued_widgets:
                widget.remove()
            self._queued_widgets.clear()
            prompt = self.prompt
            prompt.put_text(f"{queued}\n\n{prompt.text}".rstrip() if prompt.text else queued)
        return True

    def approval_decided(self, prompt: ApprovalPrompt, decision: ApprovalDecision) -> None:
        """Remember the answer as the row's data (a remount shows it) and give focus back."""
        outcome = decision.value.replace("_", " ")
        self.chat.set_item(prompt, NoteItem("", f"{prompt.request.summary}: {outcome}"))
        self.prompt.focus()

    # -- small helpers ------------------------------------------------------------------------

    async def note(self, text: str, kind: str = "info") -> None:
        await self.chat.append(NoteItem("", text, kind))

    async def markdown_note(self, text: str, kind: str = "info", *, plain: bool = False) -> None:
        widget = NoteMarkdown(text, kind=kind, plain=plain)
        await self.chat.append(NoteItem("", _first_line(text), kind), widget)

    async def _no_agent(self, loading: str) -> None:
        """A command that needs the agent ran without one: it is loading (``loading`` says
        so), or it could not start, and then waiting would not help."""
        if self.agent_failed:
            await self.note(self.agent_failed, "error")
        else:
            await self.note(loading, "warning")

    def current_session(self) -> Session | None:
        return self.agent.session if self.agent is not None else self.session

    async def _require_writable(self, command: slash.SlashCommand) -> bool:
        """A read-only session (open in another agentsh) cannot take a label or a compaction;
        say so, and how to go on, instead of failing on the write."""
        session = self.current_session()
        if command.name in _WRITES and session is not None and session.read_only_reason:
            await self.note(read_only_note(session), "warning")
            return False
        return True

    async def _require_idle(self, command: slash.SlashCommand) -> bool:
        if self.turn_running:
            await self.note(
                f"/{command.name} waits for the turn to end (Esc cancels it).", "warning"
            )
            return False
        if self.agent is None and command.name in _NEEDS_AGENT:
            await self._no_agent(f"/{command.name} is available once the agent has loaded.")
            return False
        return True

    # -- commands -----------------------------------------------------------------------------

    async def run_command(self, command: slash.SlashCommand, arg: str) -> None:
        await self.chat.reveal_end()  # typed or from the palette: its answer must show
        if command.name in _IDLE_ONLY and not await self._require_idle(command):
            return
        if not await self._require_writable(command):
            return
        handler = getattr(self, command.handler)
        # A worker, so a handler can wait for a picker (push_screen_wait needs one).
        self.app.run_worker(
            self._guarded(handler(arg), command.name), group="command", exit_on_error=False
        )

    async def _guarded(self, work: Awaitable[None], name: str) -> None:
        try:
            await work
        except Exception as exc:  # noqa: BLE001 - a failed command is shown, the app goes on
            await self.note(f"/{name} failed: {exc}", "error")

    async def cmd_help(self, arg: str) -> None:
        await self.markdown_note(
            f"**Commands**\n\n{slash.commands_table()}\n\n"
            "Press **F1** for every key binding, **Ctrl+P** for the command palette."
        )

    async def cmd_model(self, arg: str) -> None:
        agent = self.agent
        if not arg:
            arg = await self._pick_model()
            if not arg:
                return
        if agent is None:
            await self._no_agent("The agent is still loading; try again in a moment.")
            return
        try:
            agent.set_model(arg)
        except (ValueError, RuntimeError, OSError) as exc:
            await self.note(f"Could not switch to {arg}: {exc}", "error")
            return
        self.show_status(agent.status())
        await self.note(f"Model switched to {arg}.")

    async def cmd_compact(self, arg: str) -> None:
        if arg.strip().lower() == "undo":
            await self._undo_compaction()
            return
        tier: Tier | None = None
        if arg:
            try:
                tier = Tier(arg.strip().lower().replace("-", "_"))
                if tier is Tier.NONE:
                    raise ValueError(arg)
            except ValueError:
                names = ", ".join(t.value for t in Tier if t is not Tier.NONE)
                await self.note(f"Unknown tier {arg!r}; use one of {names}.", "error")
                return
        assert self.agent is not None
        self._run_events(self.agent.compact(tier))

    async def _undo_compaction(self) -> None:
        """``/compact undo``: the context from before the newest compaction, as a new leaf."""
        from agentsh.context.undo import UndoError

        agent = self.agent
        assert agent is not None
        try:
            result = agent.undo_compaction()
        except UndoError as exc:
            await self.note(str(exc), "warning")
            return
        from agentsh.tui.status_format import human_tokens

        await self.chat.load(project_session(agent.session))
        self.show_status(agent.status())
        self.path_changed.publish("undo")
        tier = Tier.label_of(result.tier)
        since = (
            f" The {result.copied} entries logged since were copied after them."
            if result.copied
            else ""
        )
        await self.note(
            f"Compaction undone ({tier}, {human_tokens(result.tokens_before)} → "
            f"{human_tokens(result.tokens_after)} tokens): the turns it took out are back in the "
            f"model's context, in full.{since} The compacted branch stays in the tree."
        )

    async def cmd_tree(self, arg: str) -> None:
        """Open the tree pane; ``/tree text`` lists the tree in the chat instead."""
        session = self.current_session()
        if session is None:
            return
        if arg.strip().lower() == "text":
            await self.markdown_note(tree_markdown(session))
            return
        if arg.strip():
            await self._unknown_argument("tree", arg, "the session tree")
            return
        await self.branching.open_tree()

    async def _unknown_argument(self, name: str, arg: str, what: str) -> None:
        # `[text]` reads like "any text" in the usage line; say what the word does instead
        # of opening the pane as if nothing had been typed.
        await self.note(
            f"/{name} takes no argument but the word text: /{name} opens {what} in the side "
            f"panel, /{name} text lists it in the chat ({arg.strip()!r} was not understood).",
            "error",
        )

    async def cmd_fork(self, arg: str) -> None:
        session = self.current_session()
        assert session is not None
        folder = None if not session.persistent else self._sessions_dir()
        # A message selected in the chat (Alt+Up) forks at its parent, its text the draft.
        to_id, draft, selected = self.branching.fork_point()
        try:
            if selected and to_id is None:  # the very first message: nothing to copy
                child = Session.create(
                    folder,
                    Path(session.header.cwd),
                    parent_session=session.id,
                    fsync_each=self.env.settings.session.fsync == "entry",
                )
            else:
                child = session.fork(folder, to_id)
        except OSError as exc:
            await self.note(f"Could not fork: {exc}", "error")
            return
        await self.switch_session(child)
        await self.note(
            f"Forked into a new session ({child.id[:8]}); the previous session is unchanged."
        )
        if draft is not None:
            self.prompt.put_text(draft)
            self.prompt.focus()

    async def cmd_label(self, arg: str) -> None:
        session = self.current_session()
        if session is None or session.leaf_id is None:
            await self.note("Nothing to label yet: send a message first.", "warning")
            return
        session.set_label(session.leaf_id, arg)
        if arg.strip():
            await self.note(f"Labelled the current entry: {arg.strip()}")
        else:
            await self.note("Label cleared.")

    async def cmd_resume(self, arg: str) -> None:
        path: Path | None
        if arg:
            from agentsh.session.catalog import Catalog

            try:
                info = Catalog(self.env.user).find(arg, self.env.project.root)
            except (LookupError, ValueError, OSError) as exc:
                await self.note(str(exc), "error")
                return
            path = Path(info.path)
        else:
            path = await self.pick_session()
        if path is None:
            return
        await self._open_path(path)

    async def _open_path(self, path: Path) -> None:
        from agentsh.session.log import SessionError
        from agentsh.startup import SessionChoiceError, open_session_file

        current = self.current_session()
        if current is not None and current.path == path:
            await self.note("That is the session you are in.")
            return
        try:
            session = open_session_file(self.env, path, fork_if_locked=False)
        except (SessionChoiceError, SessionError, OSError) as exc:
            view = locked_view(exc)
            if view is None:
                await self.note(str(exc), "error")
                return
            session = view
        await self.switch_session(session)
        if session.read_only_reason:
            await self.note(read_only_note(session), "warning")
        else:
            await self.note(f"Resumed session {session.id[:8]}.")

    async def cmd_new(self, arg: str) -> None:
        from agentsh.startup import new_session

        current = self.current_session()
        session = new_session(
            self.env, self.cwd, persist=current.persistent if current is not None else True
        )
        await self.switch_session(session)

    async def switch_session(self, session: Session) -> None:
        if self.agent is not None:
            self.agent.switch_session(session)
            self.session = self.agent.session
        else:
            old = self.session
            self.session = session
            if old is not None and old is not session:
                old.close()
        await self.chat.load(project_session(session))
        if self.agent is not None:
            self.show_status(self.agent.status())
        self.path_changed.publish("session")

    async def cmd_memory(self, arg: str) -> None:
        """Open the memory pane; ``/memory text`` prints both curated files in the chat."""
        if arg.strip() and arg.strip().lower() != "text":
            await self._unknown_argument("memory", arg, "the memory files")
            return
        if not arg.strip():
            from agentsh.tui.panes.panel import PaneName, SidePanel

            await self.app.query_one(SidePanel).show(PaneName.MEMORY)
            return
        parts: list[str] = []
        for title, path in (
            ("Project memory", self.env.project.memory_file),
            ("User memory", self.env.user.user_memory_file),
        ):
            try:
                text = path.read_text(encoding="utf-8").strip()
            except FileNotFoundError:
                text = ""
            except (OSError, UnicodeDecodeError) as exc:
                text = f"(cannot be read: {exc})"
            body = text or "_empty_"
            parts.append(f"**{title}** (`{_home(path)}`)\n\n{body}")
        await self.markdown_note("\n\n".join(parts))

    async def cmd_theme(self, arg: str) -> None:
        """``/theme [name]``: set directly, or pick from a list that previews live; the
        choice is saved as ``tui.theme`` in the user's config.toml."""
        from agentsh.tui.themes import ThemeError, persist_theme_choice

        app = self.app
        name = arg.strip() or await self._pick_theme()
        if not name:
            return
        if name not in app.available_themes:
            await self.note(f"No theme named {name!r}. /theme lists them.", "error")
            return
        app.theme = name
        try:
            persist_theme_choice(self.env.user.config_file, name)
        except ThemeError as exc:
            app.notify(str(exc), title="Theme not saved", severity="error")
            return
        app.notify(f"Theme {name} saved to {self.env.user.config_file.name}", timeout=3)

    async def _pick_theme(self) -> str:
        """The theme list; each move previews, Esc puts the theme back."""
        from agentsh.tui.screens.picker import PickerItem, PickerScreen

        app = self.app
        original = app.theme
        names = sorted(app.available_themes, key=lambda n: (not n.startswith("agentsh"), n))

        def preview(name: str) -> None:
            app.theme = name

        chosen = await app.push_screen_wait(
            PickerScreen(
                "Theme", [PickerItem(n, n) for n in names], current=original, on_highlight=preview
            )
        )
        if chosen is None:
            app.theme = original
        return chosen or ""

    async def cmd_export(self, arg: str) -> None:
        from agentsh.tui.export import ExportError, export_session

        session = self.current_session()
        if session is None:
            return
        words = arg.split(maxsplit=1)
        fmt = words[0].lower() if words else "md"
        target = Path(words[1]) if len(words) > 1 else None
        try:
            written = await asyncio.to_thread(
                export_session, session, fmt, target, self.env.user.exports_dir
            )
        except ExportError as exc:
            await self.note(str(exc), "error")
            return
        await self.note(f"Exported to {written}")

    async def cmd_cost(self, arg: str) -> None:
        if self.agent is None:
            await self._no_agent("The agent is still loading.")
            return
        from agentsh.tui.status_format import human_cost, human_tokens, session_tokens

        s = self.agent.status()
        estimated = " (estimated)" if s.estimated else ""
        await self.markdown_note(
            "| This session | |\n|---|---|\n"
            f"| Model | {s.model or 'none'} |\n"
            f"| Current context | {human_tokens(s.used)} / {human_tokens(s.window)} "
            f"({s.pct:.1f}%){estimated} |\n"
            f"| Tokens (Σ, every reply and branch) | {session_tokens(s):,} = "
            f"{s.session_input_tokens:,} input + {s.session_output_tokens:,} output |\n"
            f"| Cost | {human_cost(s.session_cost)} |\n"
            f"| Compactions | {s.compactions} |"
        )

    async def cmd_quit(self, arg: str) -> None:
        await self.quit()

    async def quit(self, *, return_code: int = 0) -> None:
        """Leave: Ctrl+Q, ``/quit``, SIGTERM. The App's exit then syncs and closes the log."""
        await self._stop_turn_for_exit()
        self.app.exit(return_code=return_code)

    async def hang_up(self, *, return_code: int) -> None:
        """The terminal is gone (SIGHUP): finish the log, then end the process at once.

        Textual's orderly exit writes terminal-restoring sequences, and with no terminal to
        take them it can block for ever (seen in tmux: the process outlived its window,
        stuck in the output queue). Nothing is left to restore, so after the turn is logged
        and the session synced and closed, the process ends without that teardown."""
        await self._stop_turn_for_exit()
        self.shutdown()
        self.exit_process(return_code)

    async def _stop_turn_for_exit(self) -> None:
        """A running turn is cancelled and given 2 s to log its partial reply as aborted,
        while the session file is still open."""
        if self.turn_running and self.agent is not None:
            done = self._turn_done
            self.cancel()
            if done is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 2.0)

    # -- pickers ------------------------------------------------------------------------------

    async def _pick_model(self) -> str:
        """``/model`` without an argument: the current and configured models, each provider's
        default whose key is set; or type any litellm model string."""
        from agentsh.llm.models import PROVIDERS
        from agentsh.tui.screens.picker import PickerItem, PickerScreen

        current = self.agent.model if self.agent is not None else None
        candidates: list[tuple[str, str]] = []
        if current:
            candidates.append((current, "current"))
        if self.env.settings.model.name:
            candidates.append((self.env.settings.model.name, "config"))
        if env_model := os.environ.get("AGENTSH_MODEL"):
            candidates.append((env_model, "AGENTSH_MODEL"))
        for provider in PROVIDERS:
            if os.environ.get(provider.key_env):
                candidates.append((provider.default_model, f"{provider.key_env} is set"))
        seen: set[str] = set()
        items = []
        for model, why in candidates:
            if model not in seen:
                seen.add(model)
                items.append(PickerItem(model, f"{model}  ({why})", search_text=model))
        chosen = await self.app.push_screen_wait(
            PickerScreen(
                "Model (type any litellm model string, e.g. ollama/qwen2.5-coder)",
                items,
                current=current,
                placeholder="model",
                empty_text="press Enter to use what you typed",
                allow_custom=True,
            )
        )
        return chosen if chosen and chosen != current else ""

    async def pick_session(self) -> Path | None:
        """The session picker (``/resume``, ``-r``): search by first message."""
        from agentsh.tui.screens.sessions import SessionPicker, session_items

        try:
            items = await asyncio.to_thread(session_items, self.env, width=self.app.size.width)
        except (OSError, ValueError) as exc:
            await self.note(f"Sessions could not be listed: {exc}", "error")
            return None
        value = await self.app.push_screen_wait(SessionPicker(items))
        return Path(value) if value else None

    def _sessions_dir(self) -> Path:
        return self.env.user.project_sessions_dir(self.env.project.root)

    # -- shutdown -----------------------------------------------------------------------------

    def shutdown(self) -> None:
        session = self.current_session()
        if session is not None:
            with contextlib.suppress(OSError):
                session.sync()
            session.close()


_IDLE_ONLY = frozenset({"compact", "fork", "resume", "new", "label"})
_NEEDS_AGENT = frozenset({"compact"})
_WRITES = frozenset({"compact", "label"})  # append to the session file


TREE_MAX_LINES = 200


def tree_markdown(session: Session) -> str:
    """``/tree`` as text: the whole tree when small, else each branch point and its branches."""
    from agentsh.session.export import tree_lines

    tree = session.tree
    points = tree.branch_points()
    active = set(tree.path_ids()) if tree.leaf_id else set()
    head = f"**Session tree**: {len(tree)} entries, {len(points)} branch point(s)"
    if not points:
        head = f"**Session tree**: {len(tree)} entries, one branch (no forks yet)"
    if len(tree) <= TREE_MAX_LINES:
        body = "\n".join(tree_lines(session, width=100))
        return f"{head}. `•` marks the current path.\n\n```\n{body}\n```" if body else head
    if not points:
        return head
    lines = [head, ""]
    for point in points:
        lines.append(f"- at `{point}` {_entry_text(session, point)}")
        for i, child in enumerate(tree.children_of(point), start=1):
            mark = " ← current" if child in active else ""
            label = f" [{tree.labels[child]}]" if child in tree.labels else ""
            lines.append(f"  - branch {i}: `{child}` {_entry_text(session, child)}{label}{mark}")
    return "\n".join(lines)


def _entry_text(session: Session, entry_id: str) -> str:
    entry: Any = session.get(entry_id)
    if isinstance(entry, MessageEntry):
        text = " ".join(entry.content.split())[:60] or (
            f"[{', '.join(c.name for c in entry.tool_calls)}]" if entry.tool_calls else ""
        )
        return f"{entry.role.value}: {text}"
    return f"({entry.TYPE})"


def _sentence(text: str) -> str:
    """``text`` ending as a sentence, so another can follow it."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", ")")) else f"{text}."


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _home(path: Path) -> str:
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)
