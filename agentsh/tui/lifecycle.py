"""The session's life in the TUI: opening it after the first frame, building the agent off
the UI thread, switching to another session, and closing it on the way out.

The first frame shows the cached model and "loading…"; then a thread opens the session the
options name (as ``-p`` does), shows it, and builds the agent (the heavy imports happen there).
It is a daemon thread, not a Textual thread worker (those run in the event loop's default
executor, and the App's exit waits for it: a quit while the agent loaded waited 8-20 s for the
load, the model worker's litellm import included). A quit while it runs does not wait for it:
what it opens after the quit it closes itself (:meth:`SessionLifecycle.shutdown`).

A session another agentsh holds is shown read-only (``/fork`` continues it); one that cannot be
opened is replaced by a new one, and the chat says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh import dataclass_code
from agentsh.events import ContextStatus
from agentsh.session.session import Session
from agentsh.tui.approval_modes import Mode
from agentsh.tui.projection import project_session
from agentsh.tui.status_format import Part

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer
    from textual.worker import WorkType

    from agentsh.config import Environment
    from agentsh.frontend import InteractiveAPI
    from agentsh.tui.current import Current
    from agentsh.tui.display import AppView
    from agentsh.tui.options import LaunchOptions

AgentFactory = Callable[["Environment", Session, "LaunchOptions"], "InteractiveAPI"]


def build_real_agent(env: Environment, session: Session, options: LaunchOptions) -> InteractiveAPI:
    """The default factory: the real agent (imports litellm; call it in a thread)."""
    from agentsh.agent_assembly import build_agent

    agent: InteractiveAPI = build_agent(
        env,
        session,
        model=options.model,
        api_base=options.api_base,
        approval=options.approval,
        interactive=True,
        rules=options.tool_rules(),  # --allowedTools / --disallowedTools, as with -p
        plan=options.plan,  # --permission-mode, --append-system-prompt, --system-prompt too
        appended_prompt=options.extras.appended(options.appended_prompt),
        system_prompt=options.system_prompt,
        added_dirs=options.extras.added_dirs,  # --add-dir, --mcp-config, --settings: as -p
        mcp_servers=options.extras.mcp_servers,
        strict_mcp=options.extras.strict_mcp,
        notices=options.extras.warnings,  # --dangerously-skip-permissions' warning among them
    )
    return agent


def _preload_markdown() -> None:
    """Markdown rendering (markdown-it, Textual's widget: ~100 ms of imports) loads in the
    load thread, not on the UI thread when the transcript or the first message is shown."""
    import markdown_it  # noqa: F401
    from textual.widgets import Markdown  # noqa: F401


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


WARM_PAUSE_S = 0.6  # the tokenizer loads when nothing has been typed for this long


class SessionLifecycle:
    def __init__(
        self,
        app: App[None],
        current: Current,
        view: AppView,
        *,
        agent_factory: AgentFactory | None = None,
        on_agent_ready: Callable[[], None] = lambda: None,
    ) -> None:
        self.app = app
        self.current = current
        self.view = view
        self.agent_factory = agent_factory or build_real_agent
        self.on_agent_ready = on_agent_ready  # queued messages may go now
        self._typed = False  # the user has started writing: warm the agent up
        # The tokenizer waits for a pause in typing (see user_typing).
        self.warm_pause_s = WARM_PAUSE_S
        self._pause: Timer | None = None
        self._tokenizer_asked = False
        self._after_load: Callable[[], None] = lambda: None  # see start()
        # Between the load thread handing over what it built and the UI's shutdown.
        self._handover = threading.Lock()
        self._closing = False
        self._built: InteractiveAPI | None = None
        #: the launcher's early start of the model worker (:func:`agentsh.tui.launch.main`):
        #: at the first key while the agent still loads, run in a thread of its own
        self.start_worker: Callable[[], None] | None = None

    # -- start-up -----------------------------------------------------------------------------

    def initial_status(self) -> ContextStatus:
        """What the first frame shows: the model the user named (``-m``, ``AGENTSH_MODEL``,
        config), else the last one; its window when the cache knows it."""
        from agentsh.llm.model_name import named_model  # light: no litellm, no urllib

        cached = self.view.ui_state
        settings = self.current.env.settings.model
        named = named_model(settings, os.environ, self.current.options.model)
        model = named[0] if named is not None else cached.model
        return ContextStatus(model=model, window=cached.window if model == cached.model else 0)

    def show_initial_status(self) -> None:
        """Before the first frame: the cached model and window, and "loading…"."""
        bar = self.view.status_bar
        bar.status = self.initial_status()
        bar.starting = True

    def start(self, after_load: Callable[[], None] = lambda: None) -> None:
        """Called once the first frame is painted: open the session, then build the agent.

        Not earlier: the worker imports litellm, and a thread holding the GIL for that import
        would slow the first paint down. ``after_load`` runs on the UI loop once the agent is
        ready (or has failed): UI work that can wait (a file watcher, hidden panes) is not
        done while the load thread imports, where it held the interpreter as long again."""
        self._after_load = after_load
        if self.current.options.wants_picker:
            picker: WorkType[None] = self._startup_picker  # a function: see _warm_up
            self.app.run_worker(picker, group="command", exit_on_error=False)
        else:
            self._load_in_thread(None)

    async def _startup_picker(self) -> None:
        path = await self.pick_session()
        self._load_in_thread(path)

    def _load_in_thread(self, path: Path | None) -> None:
        threading.Thread(
            target=self._load, args=(path,), name="agentsh-load-agent", daemon=True
        ).start()

    def _load(self, path: Path | None) -> None:
        """The load thread: open the session, show it, build the agent (heavy imports here)."""
        # The same choice as headless -p makes (the catalog loads here, off the UI thread).
        from agentsh.startup import (
            fork_session_file,
            new_session,
            open_session_file,
            session_for_args,
        )

        current = self.current
        env, options = current.env, current.options
        problem = ""
        notices: list[str] = []  # -c with nothing to continue
        try:
            if path is not None:  # picked (-r): a copy of it with --fork-session
                session = (
                    fork_session_file(env, path, session_id=options.session_id)
                    if options.fork_session
                    else open_session_file(env, path, fork_if_locked=False)
                )
                if options.name:  # -r --name: the session picked is the one named
                    session.set_name(options.name)
            else:
                session = session_for_args(env, options.namespace(), current.cwd, notices)
        except Exception as exc:  # noqa: BLE001 - worker boundary: shown in the chat, new session
            view = locked_view(exc)
            if view is not None:
                session = view
            else:
                problem = f"{_sentence(str(exc))} A new session was started instead."
                session = new_session(env, current.cwd, persist=not options.no_session)
        if session.leaf_id is not None:  # a transcript: the UI renders its Markdown at once
            _preload_markdown()
        if not self._call_ui(self._session_opened, session, what="Showing the session"):
            session.close()  # agentsh is quitting: the UI never had it
            return
        if problem:  # after the transcript is loaded, which clears the chat
            self._call_ui(self.view.note, problem, "error", what="Saying why a new session began")
        for notice in notices:
            self._call_ui(self.view.note, _sentence(notice), "warning", what="Saying what -c did")
        try:
            agent = self.agent_factory(env, session, options)
        except Exception as exc:  # noqa: BLE001 - thread boundary: the UI keeps working
            message = f"The agent could not start: {exc}"
            self._call_ui(self._agent_failed, message, what="Telling the agent failed")
            return
        with self._handover:
            closing = self._closing
            if not closing:
                self._built = agent
        if closing:
            agent.close()  # built after the quit: its MCP servers stop, nothing is left
            return
        self._call_ui(self._agent_ready, agent, what="Showing the agent")
        dataclass_code.save()  # the start-up's classes are all defined: kept for the next start
        _preload_markdown()  # before the first reply (a no-op when the transcript needed it)
        dataclass_code.settle()

    def _call_ui(self, fn: Callable[..., Any], *args: Any, what: str) -> bool:
        """Run ``fn(*args)`` (a coroutine function) on the UI loop from the load thread; False
        when agentsh is quitting (the App has stopped, or is stopping).

        A step that raises is never a thread's traceback: while the App closes (its widgets
        going: NoMatches 'ChatView') it means quitting; while it runs, the user reads one line
        saying ``what`` failed, and the load goes on."""
        if self._quitting():
            return False
        try:
            self.app.call_from_thread(fn, *args)
        except Exception as exc:  # noqa: BLE001 - thread boundary: nothing may escape it
            if self._quitting():
                return False
            detail = (str(exc).strip().splitlines() or [""])[0]
            line = f"{what} failed ({type(exc).__name__}{': ' if detail else ''}{detail})."
            with contextlib.suppress(Exception):  # the App stopped meanwhile
                self.app.call_from_thread(self.app.notify, line, severity="error", timeout=30)
        return True

    def _quitting(self) -> bool:
        """The App stops or has stopped (Textual clears is_running before it takes the
        screens down), or agentsh's own shutdown has begun."""
        return self._closing or not self.app.is_running

    async def _session_opened(self, session: Session) -> None:
        self.current.session = session
        await self.view.chat.load(project_session(session))
        self.current.path_changed.publish("session")
        for problem in session.problems[:5]:
            await self.view.note(f"session file: {problem}", "warning")
        if session.read_only_reason:
            await self.view.note(read_only_note(session), "warning")

    async def _agent_ready(self, agent: InteractiveAPI) -> None:
        current = self.current
        current.agent = agent
        current.session = agent.session
        self.view.status_bar.starting = False
        mode = Mode(agent.approval_mode, agent.plan_mode)  # as the command line chose it
        self.view.status_bar.mode = Part(mode.label, mode.style)
        self.view.show_status(agent.status())
        current.path_changed.publish("agent")  # the memory pane can compare with the snapshot
        self._tokenizer_asked = False
        if self._typed:
            self._warm_up(agent, tokenizer=False)
            self._wait_for_a_pause()
        self._watch_mcp(agent)
        self.on_agent_ready()
        self._loaded()

    def _loaded(self) -> None:
        after, self._after_load = self._after_load, lambda: None
        after()

    def user_typing(self) -> None:
        """The user writes: load what a turn needs, so it is ready by the time they press
        Enter. Nothing heavy loads before the first key: an agentsh left open without a word
        typed stays small. The model worker starts at once (a process of its own); the
        tokenizer at the first pause of :data:`WARM_PAUSE_S`: building it holds the
        interpreter for 0.4-0.8 s, and at the first key the keys after it echoed that late.

        A first key while the agent still loads starts the worker too (:attr:`start_worker`),
        so its litellm import runs beside the load instead of after it: Enter at the first
        frame reached the model 16.5 s after it instead of 23.3 s under load."""
        if not self._typed:
            self._typed = True
            if self.current.agent is not None:
                self._warm_up(self.current.agent, tokenizer=False)
            elif self.start_worker is not None and not self._quitting():
                threading.Thread(  # its imports (the worker's client) stay off the UI thread
                    target=self.start_worker, name="agentsh-start-worker", daemon=True
                ).start()
        self._wait_for_a_pause()

    def _wait_for_a_pause(self) -> None:
        if self._tokenizer_asked:
            return
        if self._pause is not None:
            self._pause.reset()  # a key: the pause starts again
        else:
            self._pause = self.app.set_timer(self.warm_pause_s, self._typing_paused)

    def _typing_paused(self) -> None:
        self._pause = None
        agent = self.current.agent
        if agent is None or self._tokenizer_asked:
            return  # loading: once it is ready, the pause is waited for again
        self._tokenizer_asked = True
        self._warm_up(agent)

    def _warm_up(self, agent: InteractiveAPI, *, tokenizer: bool = True) -> None:
        async def warm() -> None:
            await agent.warm_up(tokenizer=tokenizer)
            if tokenizer and self.current.agent is agent and not self.current.turn_running:
                self.view.show_status(agent.status())  # exact counts from here on

        # The function, not a coroutine: a worker cancelled before it runs (a quit at the
        # first key) never awaited the coroutine, and Python said so on stderr at exit.
        work: WorkType[None] = warm
        self.app.run_worker(work, group="warm-up", exit_on_error=False)

    def _watch_mcp(self, agent: InteractiveAPI) -> None:
        """MCP servers change state on the MCP thread: each change is handed to the UI loop
        without waiting (that thread must never block on the UI, which may be closing it)."""
        loop = asyncio.get_running_loop()

        def changed() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: agentsh is exiting
                loop.call_soon_threadsafe(self._mcp_changed, agent)

        agent.watch_mcp(changed)

    def _mcp_changed(self, agent: InteractiveAPI) -> None:
        """The status line counts the tools offered now (not under a running turn, whose own
        events carry the status); ``/mcp``'s window shows the new state."""
        current = self.current
        if current.agent is not agent:
            return
        if not current.turn_running:
            self.view.show_status(agent.tools_changed())
        current.mcp_changed.publish("mcp")

    async def _agent_failed(self, message: str) -> None:
        self.current.agent_failed = message
        bar = self.view.status_bar
        bar.starting = False
        bar.status = replace(bar.status, problem="agent not started")
        await self.view.note(message, "error")
        self._loaded()

    # -- another session ----------------------------------------------------------------------

    async def switch_session(self, session: Session) -> None:
        current = self.current
        agent = current.agent
        if agent is not None:
            agent.switch_session(session)
            current.session = agent.session
        else:
            old = current.session
            current.session = session
            if old is not None and old is not session:
                old.close()
        await self.view.chat.load(project_session(session))
        if agent is not None:
            self.view.show_status(agent.status())
        current.path_changed.publish("session")

    async def open_path(self, path: Path) -> None:
        from agentsh.session.log import SessionError
        from agentsh.startup import SessionChoiceError, open_session_file

        open_now = self.current.current_session()
        if open_now is not None and open_now.path == path:
            await self.view.note("That is the session you are in.")
            return
        try:
            session = open_session_file(self.current.env, path, fork_if_locked=False)
        except (SessionChoiceError, SessionError, OSError) as exc:
            view = locked_view(exc)
            if view is None:
                await self.view.note(str(exc), "error")
                return
            session = view
        await self.switch_session(session)
        if session.read_only_reason:
            await self.view.note(read_only_note(session), "warning")
        else:
            await self.view.note(f"Resumed session {session.id[:8]}.")

    async def pick_session(self) -> Path | None:
        """The session picker (``/resume``, ``-r``): search by first message."""
        from agentsh.tui.screens.session_picker import SessionPicker, session_items

        env = self.current.env
        try:
            items = await asyncio.to_thread(session_items, env, width=self.app.size.width)
        except (OSError, ValueError) as exc:
            await self.view.note(f"Sessions could not be listed: {exc}", "error")
            return None
        value = await self.app.push_screen_wait(SessionPicker(items))
        return Path(value) if value else None

    # -- shutdown -----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Sync and close the session; with the agent loaded, close it too: its MCP servers
        stop here, also when SIGHUP ends the process at once afterwards (no exit handler runs
        then, and only their watchdogs would be left to end them)."""
        with self._handover:
            self._closing = True  # the load thread, if still running, closes what it builds
            built = self._built
        session = self.current.current_session()
        if session is not None:
            with contextlib.suppress(OSError):
                session.sync()
        agent = self.current.agent or built
        if agent is not None:
            agent.close()  # the session, the checkpoint store, the MCP servers
        elif session is not None:
            session.close()


def _sentence(text: str) -> str:
    """``text`` ending as a sentence, so another can follow it."""
    text = text.strip()
    return text if text.endswith((".", "!", "?", ")")) else f"{text}."
