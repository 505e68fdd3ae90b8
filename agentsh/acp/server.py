"""The protocol's methods, and the agentsh sessions they open.

Each ACP session is an ordinary agentsh session (a JSONL tree under the user's data folder, with
compaction and memory), driven by its own agent: listed by ``agentsh sessions``, resumable in
the TUI once the editor lets go of it. ``session/load`` replays the current branch
(:mod:`.replay`); a session id agentsh has no file for (a thread that ended before anything was
said) starts empty under that id, with a note, rather than failing the editor's thread.

A project folder the user has not trusted runs without its settings, instructions, memory and
MCP configuration, as ``-p`` does: the editor cannot show agentsh's trust screen, so the first
prompt's reply starts with a note saying what was left out and how to trust the folder (run
``agentsh`` there once, or start ``agentsh acp --trust-project``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_current_mode
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionModeResponse,
)

from agentsh import __version__
from agentsh.acp.acp_session import AcpSession
from agentsh.acp.client_host import ClientHost
from agentsh.acp.commands import available as available_commands
from agentsh.acp.folders import client_folders, model_note, thread_note
from agentsh.acp.mcp_servers import client_servers
from agentsh.acp.prompt import PromptBlock
from agentsh.acp.replay import replay
from agentsh.acp.updates import usage_update
from agentsh.config import ApprovalMode, Environment, load_environment
from agentsh.frontend import EditorAPI
from agentsh.mcp.servers_config import ServerSpec
from agentsh.session.catalog import Catalog, SessionLookupError
from agentsh.session.log import SessionLocked
from agentsh.session.session import Session
from agentsh.startup import SessionChoiceError, new_session, open_session_file

log = logging.getLogger(__name__)

#: How long running turns get to end once the client has left (a command is stopped in well
#: under a second; an editor's terminal that no longer answers must not hold the exit).
_END_TURN_S = 3.0

PLAN = "plan"
MODES = (
    SessionMode(
        id=ApprovalMode.ASK.value,
        name="Ask",
        description="File edits and commands wait for your approval.",
    ),
    SessionMode(
        id=ApprovalMode.EDITS.value,
        name="Accept edits",
        description="Edits inside the project are made at once; commands still ask.",
    ),
    SessionMode(
        id=ApprovalMode.ALL.value,
        name="Allow all",
        description="Edits and commands run without asking; writes outside the project, to "
        ".git/ or to agentsh's settings still ask.",
    ),
    SessionMode(
        id=PLAN,
        name="Plan",
        description="Read only: the model investigates and writes a plan; nothing is changed "
        "or run.",
    ),
)


@dataclass(frozen=True, slots=True)
class AcpOptions:
    """What ``agentsh acp`` was started with."""

    model: str | None = None
    api_base: str | None = None
    approval: ApprovalMode | None = None
    trust_project: bool = False


class AcpServer:
    """The agent side of the protocol (``acp.interfaces.Agent``)."""

    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self._client: Client | None = None
        self._capabilities: ClientCapabilities | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._warming = False
        # One session/load at a time: two loads of one open session, each reopening it with
        # other MCP servers, would each close the session and open it again (the second
        # could drop the first one's reopened agent unclosed, its log still locked).
        self._loading = asyncio.Lock()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    # -- initialize -----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._capabilities = client_capabilities
        if not self._warming:
            # The model worker takes seconds to import litellm: start it now, while the editor
            # sets up, so the first prompt does not wait for all of it. A daemon thread:
            # a client that leaves at once must not wait for the import to finish.
            self._warming = True
            remote = _use_the_model_worker()  # before any session's agent is built
            threading.Thread(
                target=_warm_up, args=(remote,), name="acp-warm-up", daemon=True
            ).start()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    additional_directories=SessionAdditionalDirectoriesCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name="agentsh", title="agentsh", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params(
            {"methodId": "agentsh has no sign-in: it uses the provider keys in its environment"}
        )

    # -- sessions -------------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        folder = _folder(cwd)
        env = await asyncio.to_thread(self._environment, folder)
        session = new_session(env, folder)
        opened = await self._open(env, folder, session, mcp_servers or [], additional_directories)
        opened.offer_commands()  # sent after this answer: the editor knows the session then
        return NewSessionResponse(session_id=opened.id, modes=_modes(opened.agent))

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        async with self._loading:
            opened = await self._opened_for(cwd, session_id, mcp_servers, additional_directories)
        await opened.send(available_commands())
        for update in replay(opened.agent.session.current_path(), opened.cwd):
            await opened.send(update)
        await opened.send(usage_update(opened.agent.status()))
        return LoadSessionResponse(modes=_modes(opened.agent))

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """``session/resume``: ``session/load`` without the replay (the client kept the
        thread), the same servers and folders rules."""
        async with self._loading:
            opened = await self._opened_for(cwd, session_id, mcp_servers, additional_directories)
        await opened.send(available_commands())
        await opened.send(usage_update(opened.agent.status()))
        return ResumeSessionResponse(modes=_modes(opened.agent))

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """``session/close``: its turn ended as ``session/cancel`` does, its log finished and
        let go (``agentsh -r`` can resume it at once), its MCP servers stopped."""
        async with self._loading:
            opened = self._session(session_id)
            await self._let_go(opened)
        log.info("session %s: closed by the client", session_id)
        return CloseSessionResponse()

    async def _opened_for(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None,
        additional_directories: list[str] | None,
    ) -> AcpSession:
        """The session a load or resume names: open already (reopened when the client's MCP
        servers changed, else given the client's folders now), or opened from its log."""
        opened = self._sessions.get(session_id)
        if opened is not None and _servers_changed(mcp_servers, opened):
            return await self._reopen(opened, cwd, mcp_servers or [], additional_directories)
        if opened is not None:  # open already: the editor's roots now are the ones it gives
            await self._refolder(opened, additional_directories)
            return opened
        folder = _folder(cwd)
        if not _is_uuid(session_id):
            raise RequestError.invalid_params({"sessionId": "not an agentsh session id"})
        env = await asyncio.to_thread(self._environment, folder)
        session, found = await asyncio.to_thread(_saved_session, env, folder, session_id)
        opened = await self._open(env, folder, session, mcp_servers or [], additional_directories)
        if not found:
            await opened.say(
                "agentsh: there is no saved conversation with this id (it may have ended "
                "before anything was said); it goes on from here as a new one."
            )
        return opened

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        # The roots of the sessions open here (a closed session's are the editor's to give
        # again when it loads it: agentsh does not keep them).
        roots = {
            session_id: [str(folder) for folder in opened.agent.folders[1]]
            for session_id, opened in self._sessions.items()
            if opened.agent.folders[1]
        }

        def listed() -> list[SessionInfo]:
            env = load_environment(_folder(cwd)) if cwd else load_environment()
            root = env.project.root if cwd else None
            return [
                SessionInfo(
                    session_id=info.id,
                    cwd=info.cwd,
                    title=info.title or None,
                    updated_at=datetime.fromtimestamp(info.last_activity, UTC).isoformat(),
                    additional_directories=roots.get(info.id),
                )
                for info in Catalog(env.user).list(root)
            ]

        return ListSessionsResponse(sessions=await asyncio.to_thread(listed))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        agent = self._session(session_id).agent
        if mode_id == PLAN:
            agent.set_approval_mode(agent.approval_mode, plan=True)
        else:
            try:
                mode = ApprovalMode(mode_id)
            except ValueError:
                known = ", ".join(m.id for m in MODES)
                raise RequestError.invalid_params({"modeId": f"one of {known}"}) from None
            agent.set_approval_mode(mode, plan=False)
        # The spec's update for a mode change, so every view of the session (another client
        # window, the mode picker) follows; the editor's own change is told too, as agents
        # for Zed do. agentsh itself never changes an ACP session's mode: no other source.
        await self._session(session_id).send(update_current_mode(_modes(agent).current_mode_id))
        return SetSessionModeResponse()

    # -- turns ----------------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        return await self._session(session_id).prompt(prompt)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        opened = self._sessions.get(session_id)
        if opened is not None:
            opened.cancel()

    async def end_turns(self) -> None:
        """End of input or a signal: every running turn is cancelled and given a moment to
        record how it ended (see :meth:`AcpSession.end_turn`)."""
        sessions = list(self._sessions.values())
        await asyncio.gather(*(opened.end_turn(_END_TURN_S) for opened in sessions))

    def close(self) -> None:
        """Close every session's agent (its log, its MCP servers)."""
        for opened in self._sessions.values():
            try:
                opened.close()
            except Exception as exc:  # noqa: BLE001 - closing the others matters more
                log.warning("closing session %s: %r", opened.id, exc)
        self._sessions.clear()

    # -- helpers ----------------------------------------------------------------------------

    def _environment(self, folder: Path) -> Environment:
        return load_environment(folder, trust_project=self.options.trust_project)

    def _session(self, session_id: str) -> AcpSession:
        opened = self._sessions.get(session_id)
        if opened is None:
            raise RequestError(
                -32002,
                "agentsh has no open session with this id (session/new or session/load first)",
                {"sessionId": session_id},
            )
        return opened

    async def _open(
        self,
        env: Environment,
        folder: Path,
        session: Session,
        mcp_servers: list[Any],
        additional_directories: list[str] | None,
    ) -> AcpSession:
        if self._client is None:  # pragma: no cover - the connection sets it before any call
            raise RequestError.internal_error({"details": "no client connection"})
        client, session_id = self._client, session.id

        async def on_terminal(call_id: str, terminal_id: str) -> None:
            opened = self._sessions.get(session_id)
            if opened is not None:
                await opened.terminal_shown(call_id, terminal_id)

        host = ClientHost(
            client,
            session_id,
            self._capabilities,
            on_terminal,
            answer_s=env.settings.acp.editor_timeout_s,
        )
        specs, mcp_problems = client_servers(mcp_servers)
        read_dirs, folder_problems = await asyncio.to_thread(  # stats each: off the loop
            client_folders, additional_directories, folder
        )
        if read_dirs:
            log.info(
                "session %s: the editor's folders read without asking: %s",
                session.id,
                ", ".join(map(str, read_dirs)),
            )
        agent = await asyncio.to_thread(self._build, env, folder, session, host, specs, read_dirs)
        notes = _start_notes(env, session, mcp_problems + folder_problems)
        if read_dirs:
            notes.append(thread_note(read_dirs))
        opened = AcpSession(
            agent,
            client,
            cwd=folder,
            permission_timeout_s=env.settings.acp.permission_timeout_s,
            notes=notes,
            host=host,
            mcp_servers=specs,
        )
        self._sessions[session_id] = opened
        return opened

    async def _reopen(
        self,
        opened: AcpSession,
        cwd: str,
        mcp_servers: list[Any],
        additional_directories: list[str] | None,
    ) -> AcpSession:
        """``session/load`` of a session open here, with other MCP servers than it runs: the
        session is closed (its turn ended as ``session/cancel`` does, its servers stopped) and
        opened again from its log with the servers given now, as a load in a new agentsh
        would; the mode the editor chose is kept."""
        folder = _folder(cwd)
        mode, plan = opened.agent.approval_mode, opened.agent.plan_mode
        before = sorted(spec.name for spec in opened.mcp_servers)
        await self._let_go(opened)
        env = await asyncio.to_thread(self._environment, folder)
        session, _found = await asyncio.to_thread(_saved_session, env, folder, opened.id)
        reopened = await self._open(env, folder, session, mcp_servers, additional_directories)
        reopened.agent.set_approval_mode(mode, plan=plan)
        now = sorted(spec.name for spec in reopened.mcp_servers)
        log.info("session %s: the editor's MCP servers now: %s (were %s)", opened.id, now, before)
        reopened.tell_later(
            f"agentsh: the editor's MCP servers are now {', '.join(now) or 'none'} (were "
            f"{', '.join(before) or 'none'}); the session was reopened with them"
        )
        return reopened

    async def _let_go(self, opened: AcpSession) -> None:
        """Close ``opened``: its turn ended first (as ``session/cancel``, up to 3 s), then its
        log and servers; refused while the turn has not ended (closing the log under it
        would lose what it appends)."""
        await opened.end_turn(_END_TURN_S)
        if opened.running:
            raise RequestError(
                -32000,
                "agentsh is still ending this session's turn; try again in a moment",
                {"sessionId": opened.id},
            )
        if self._sessions.get(opened.id) is opened:
            del self._sessions[opened.id]
        await asyncio.to_thread(opened.close)  # the log's lock and the servers let go

    async def _refolder(self, opened: AcpSession, given: list[str] | None) -> None:
        """``session/load`` of a session open here: its additional directories become those
        given (none given: none, as the protocol says), checked as on ``session/new``; the
        model's note follows, and the thread is told at the next prompt."""
        folders, problems = await asyncio.to_thread(client_folders, given, opened.cwd)
        for problem in problems:
            opened.tell_later(f"agentsh: warning: {problem}")
        if folders == list(opened.agent.folders[1]):
            return
        opened.agent.set_folders(read=folders, note=model_note(folders) if folders else "")
        log.info("session %s: the editor's folders now: %s", opened.id, folders or "none")
        opened.tell_later(
            thread_note(folders)
            if folders
            else "agentsh: the editor's additional folders were removed from this session"
        )

    def _build(
        self,
        env: Environment,
        folder: Path,
        session: Session,
        host: ClientHost,
        mcp_servers: list[ServerSpec],
        read_dirs: list[Path],
    ) -> EditorAPI:
        from agentsh.agent_assembly import build_agent

        agent: EditorAPI = build_agent(
            env,
            session,
            model=self.options.model,
            api_base=self.options.api_base,
            approval=self.options.approval,
            interactive=True,
            cwd=folder,
            host=host,
            mcp_servers=mcp_servers,
            read_dirs=read_dirs,
            appended_prompt=model_note(read_dirs) if read_dirs else "",
        )
        return agent


def _use_the_model_worker() -> bool:
    """From now on agents built here make their model calls through the model worker (unless
    ``AGENTSH_MODEL_WORKER=0``): litellm never loads in this process. True if so. The user's
    own config says how long a warm model worker stays (no project is known yet)."""
    from agentsh.config import load_config
    from agentsh.llm import remote
    from agentsh.paths import UserPaths

    return remote.activate(load_config(UserPaths.from_env()).settings.model.warm_worker_s)


def _warm_up(remote: bool) -> None:
    """The agent's modules, and the model worker started (forked warm by the user's warm
    worker when one runs: :mod:`agentsh.llm.warm_worker`); without the worker (``remote``
    False), litellm imported here."""
    try:
        from agentsh.agent_assembly import build_agent  # noqa: F401 - imported for its cost

        if remote:
            from agentsh.llm.remote import prewarm

            prewarm()
        else:
            from agentsh.llm.env import import_litellm

            import_litellm()
    except Exception as exc:  # noqa: BLE001 - the real build reports any problem
        log.warning("warming up: %r", exc)


def _folder(cwd: str) -> Path:
    folder = Path(cwd)
    if not folder.is_absolute():
        raise RequestError.invalid_params({"cwd": "must be an absolute path"})
    if not folder.is_dir():
        raise RequestError.invalid_params({"cwd": f"{cwd} is not a folder"})
    return folder


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text.lower()
    except ValueError:
        return False


def _saved_session(env: Environment, folder: Path, session_id: str) -> tuple[Session, bool]:
    """The session with exactly this id, opened for appending; or a new empty one under the
    id, when agentsh has no file for it (False)."""
    try:
        info = Catalog(env.user).find(session_id, env.project.root)
    except SessionLookupError:
        info = None
    if info is None or info.id != session_id:
        return new_session(env, folder, session_id=session_id), False
    try:
        return open_session_file(env, info.path, fork_if_locked=False), True
    except SessionChoiceError as exc:
        text = str(exc)
        if isinstance(exc.__cause__, SessionLocked):  # "pass --fork" means nothing here
            text = (
                "this conversation is open in another agentsh (a terminal, or another editor "
                "window); close it there, then load it again"
            )
        raise RequestError(-32000, f"agentsh: {text}", {"sessionId": session_id}) from exc


def _servers_changed(given: list[Any] | None, opened: AcpSession) -> bool:
    """Whether a ``session/load`` gives other MCP servers than the session runs (those agentsh
    cannot take left out; order does not count)."""
    return frozenset(client_servers(given or [])[0]) != frozenset(opened.mcp_servers)


def _modes(agent: EditorAPI) -> SessionModeState:
    current = PLAN if agent.plan_mode else agent.approval_mode.value
    return SessionModeState(current_mode_id=current, available_modes=list(MODES))


def _start_notes(env: Environment, session: Session, mcp_problems: list[str]) -> list[str]:
    """What the user is told before the first reply: an untrusted folder, bad settings."""
    notes: list[str] = []
    if not env.trusted:
        notes.append(
            f"agentsh: {env.trust.notice()} (for `agentsh acp`: add it to the agent's args in "
            "the editor's settings)"
        )
    notes += [f"agentsh: warning: {problem}" for problem in env.config.problems]
    notes += [f"agentsh: warning: {session.path}: {problem}" for problem in session.problems]
    notes += [f"agentsh: warning: {problem}" for problem in mcp_problems]
    return notes
