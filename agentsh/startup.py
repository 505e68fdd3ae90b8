"""Which session a front end opens, from the command-line options (shared by TUI and -p).

``--no-session`` keeps everything in memory; ``--session PATH`` opens a file; ``-c`` the
newest session of this project; ``-r PREFIX`` a session by name or id prefix (this project
first, then everywhere); otherwise a new session. ``--name`` names the session opened. A
session another agentsh holds open cannot be appended to: with ``--fork`` it is copied into a
new file, otherwise the error says how to fork it.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from agentsh.config import Environment
from agentsh.errors import AgentshError
from agentsh.session.affinity import repo_key
from agentsh.session.catalog import Catalog
from agentsh.session.log import SessionError, SessionLocked
from agentsh.session.session import Session


class SessionChoiceError(AgentshError):
    """The options name a session that cannot be opened; the message says why."""


def new_session(
    env: Environment, cwd: Path, *, persist: bool = True, session_id: str | None = None
) -> Session:
    folder = _sessions_folder(env) if persist else None
    return Session.create(
        folder,
        cwd,
        fsync_each=_fsync_each(env),
        session_id=session_id,
        repo=repo_key(env.project.root) if persist else None,
    )


def _sessions_folder(env: Environment) -> Path:
    """The project's sessions folder; the first time a git project is seen under its identity,
    the sessions an older agentsh kept under its path move there, so they follow it too."""
    names = env.user.project_session_folders(env.project.root)
    folder = env.user.sessions_dir / names[0]
    if len(names) > 1 and not folder.exists():
        with contextlib.suppress(OSError):  # another agentsh did it, or nothing to move
            (env.user.sessions_dir / names[1]).rename(folder)
    return folder


def open_session_file(env: Environment, path: Path, *, fork_if_locked: bool) -> Session:
    """Open ``path`` for appending (or fork it when locked and allowed).

    Every failure is a :class:`SessionChoiceError` whose message names the file and the
    problem (missing, unreadable, not a session); the original error is its ``__cause__``.
    """
    _refuse_pi_file(path)
    try:
        return Session.open(path, fsync_each=_fsync_each(env))
    except SessionLocked as exc:
        if not fork_if_locked:
            raise SessionChoiceError(f"{exc} (pass --fork to do that)") from exc
        try:
            source = Session.open(path, lock=False)
            return source.fork(_sessions_folder(env))
        except SessionError as fork_error:
            raise SessionChoiceError(f"cannot fork {path}: {fork_error}") from fork_error
    except SessionError as exc:
        # Its message already names the file and what is wrong with it.
        raise SessionChoiceError(str(exc)) from exc


def _refuse_pi_file(path: Path) -> None:
    """A Pi session looks like a newer agentsh file and every line would fail: say what it
    is and how to bring it in instead."""
    from agentsh.session.pi import looks_like_pi

    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return  # Session.open reports it
    if looks_like_pi(head):
        raise SessionChoiceError(
            f"{path} is a Pi session file, not an agentsh one; import it with "
            f"`agentsh sessions import {path}` and resume the session it prints with -r"
        )


#: said once when ``-c`` finds nothing to continue (the run goes on in a new session)
NOTHING_TO_CONTINUE = "-c: no earlier session in this folder to continue; starting a new one"


def session_for_args(
    env: Environment, args: argparse.Namespace, cwd: Path, notices: list[str] | None = None
) -> Session:
    """The session the options choose, named ``--name`` when given (a new one, or the one
    resumed: the newest name wins, so ``-c --name x`` renames). What the user should know of
    the choice (``-c`` with nothing to continue) is added to ``notices``."""
    session = _chosen_session(env, args, cwd, notices if notices is not None else [])
    if name := getattr(args, "name", None):
        try:
            session.set_name(name)
        except (SessionError, OSError) as exc:
            session.close()
            raise SessionChoiceError(f"cannot name the session: {exc}") from exc
    return session


def _chosen_session(
    env: Environment, args: argparse.Namespace, cwd: Path, notices: list[str]
) -> Session:
    """``--fork-session`` continues the chosen session in a copy (``--session-id`` naming
    the copy); ``--session-id`` alone names a new session and must not be in use."""
    fork = bool(getattr(args, "fork", False))
    copy = bool(getattr(args, "fork_session", False))
    wanted_id: str | None = getattr(args, "session_id", None)
    catalog = Catalog(env.user)
    if wanted_id:
        _check_unused(catalog, wanted_id)
    if getattr(args, "no_session", False):
        return new_session(env, cwd, persist=False, session_id=wanted_id)
    path: Path | None = None
    if getattr(args, "session", None):
        path = Path(args.session).expanduser()
    elif getattr(args, "continue_session", False):
        newest = catalog.newest(env.project.root)
        path = newest.path if newest is not None else None
        if path is None:
            notices.append(NOTHING_TO_CONTINUE)
    elif resume := getattr(args, "resume", None):
        path = catalog.find(resume, env.project.root).path
    if path is None:
        return new_session(env, cwd, session_id=wanted_id)
    if copy:
        return fork_session_file(env, path, session_id=wanted_id)
    return open_session_file(env, path, fork_if_locked=fork)


def fork_session_file(env: Environment, path: Path, *, session_id: str | None) -> Session:
    """A new session of this project holding the path of the session in ``path``."""
    try:
        source = Session.open(path, lock=False)
        return source.fork(_sessions_folder(env), session_id=session_id)
    except SessionError as exc:
        raise SessionChoiceError(str(exc)) from exc


def _check_unused(catalog: Catalog, session_id: str) -> None:
    try:
        found = catalog.find(session_id)
    except LookupError:
        return
    raise SessionChoiceError(f"session id {session_id} is already in use ({found.path})")


def _fsync_each(env: Environment) -> bool:
    return env.settings.session.fsync == "entry"
