"""The session catalog: list, find and resume sessions without reading whole files (SPEC §2).

A SQLite database in the cache dir holds one row per session file: what the header says (id,
cwd, creation time, parent), the title and first user message, counts, tokens, cost, the last
activity, and how far the file has been scanned. A refresh walks the session folders with
``scandir`` + ``stat``: an unchanged file (same size and mtime) is not opened; a grown file is
read only from the stored offset; a file that shrank, was rewritten, or has a different header
is rescanned; a vanished file is dropped. So a file another process appended to is noticed on
the next refresh, and a warm listing of a thousand sessions costs a few stats and one query.

The catalog is a cache: a missing, corrupt or older-schema database is rebuilt from the files,
and when the cache dir cannot be written it works in memory. WAL mode and a busy timeout let
two agentsh processes refresh at the same time. Every public method refreshes what it reads
first, so callers never see a stale answer.

Scanning does not parse every line (session/catalog_scan.py says how).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sqlite3
import stat as stat_module
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from agentsh.errors import AgentshError
from agentsh.paths import UserPaths
from agentsh.session import log
from agentsh.session.affinity import rank_sessions
from agentsh.session.catalog_scan import COLUMNS, Scan, name_key

#: bump when the table changes; an older database is dropped and rebuilt from the files
#: 2: tokens count cache reads, and summary calls on compaction entries; 3: the session's name;
#: 4: the name's casefolded key (-r NAME ignores case beyond ASCII); 5: titles without the
#: text piped in beside a -p prompt
SCHEMA_VERSION = 5
BUSY_TIMEOUT_MS = 10_000
_CANDIDATES_SHOWN = 5

_R = TypeVar("_R")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    path TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    valid INTEGER NOT NULL,
    id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    created TEXT NOT NULL,
    parent_session TEXT,
    title TEXT NOT NULL,
    first_message TEXT NOT NULL,
    entries INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    cost REAL NOT NULL,
    model TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    last_timestamp TEXT NOT NULL,
    last_activity REAL NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    scanned_offset INTEGER NOT NULL,
    header TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_project ON sessions (project, last_activity);
CREATE INDEX IF NOT EXISTS sessions_by_id ON sessions (id);
CREATE INDEX IF NOT EXISTS sessions_by_name ON sessions (name_key);
"""

_INFO_COLUMNS = (
    "path, id, project, cwd, created, title, first_message, entries, messages, tokens, cost, "
    "last_activity, size, parent_session, model, name"
)


class SessionLookupError(AgentshError, LookupError):
    """An id prefix that names no session or several; the message says which and what to do."""


class SessionNotFound(SessionLookupError):
    pass


class AmbiguousSession(SessionLookupError):
    def __init__(self, message: str, candidates: tuple[SessionInfo, ...]) -> None:
        super().__init__(message)
        self.candidates = candidates


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One catalogued session. Counts cover the whole file (every branch)."""

    path: Path
    id: str
    project: str  # the project's folder name under sessions/ (paths.project_session_folders)
    cwd: str
    created: str  # the header's ISO timestamp
    title: str  # the first user message, on one line, shortened
    first_message: str  # the first user message, up to FIRST_MESSAGE_CHARS
    entries: int  # conversation entries (label and leaf records not counted)
    messages: int  # user and assistant messages
    tokens: int  # input (cache reads included) + output over every model call the file records
    cost: float  # USD, over the same calls (replies, summaries, branch summaries)
    last_activity: float  # epoch seconds of the newest entry (file mtime if none has a time)
    size_bytes: int
    parent_session: str | None
    model: str  # the newest model a message or model change names
    name: str = ""  # the session's name (--name, /name); "" when it has none

    @property
    def short_id(self) -> str:
        return self.id[:8]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "project": self.project,
            "cwd": self.cwd,
            "created": self.created,
            "lastActivity": datetime.fromtimestamp(self.last_activity, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "title": self.title,
            "firstMessage": self.first_message,
            "entries": self.entries,
            "messages": self.messages,
            "tokens": self.tokens,
            "cost": self.cost,
            "model": self.model,
            "name": self.name,
            "sizeBytes": self.size_bytes,
            "parentSession": self.parent_session,
        }


@dataclass(frozen=True, slots=True)
class RefreshStats:
    """What a refresh did (tests and benchmarks read it)."""

    seen: int = 0
    unchanged: int = 0
    appended: int = 0  # read from their stored offset
    rescanned: int = 0  # new, replaced or shrunk: read from the start
    removed: int = 0


class Catalog:
    """Fast listing and lookup of the session files under ``user_paths.sessions_dir``."""

    def __init__(self, user_paths: UserPaths, *, db_path: Path | None = None) -> None:
        self.sessions_dir = user_paths.sessions_dir
        self.db_path = db_path or user_paths.catalog_db
        self._user = user_paths

    # -- public API -------------------------------------------------------------------------

    def refresh(self, project_root: Path | None = None) -> RefreshStats:
        """Bring the rows of one project (or, with None, of every project) up to date."""
        return self._run(lambda db: self._refresh(db, project_root))

    def list(
        self, project_root: Path | None = None, *, all: bool = False, refresh: bool = True
    ) -> list[SessionInfo]:
        """Sessions, newest activity first: of ``project_root``, or of every project with
        ``all=True`` or without a project root."""
        scope = None if all else project_root

        def work(db: sqlite3.Connection) -> builtins.list[SessionInfo]:
            if refresh:
                self._refresh(db, scope)
            return self._select(db, scope)

        return self._run(work)

    def newest(self, project_root: Path) -> SessionInfo | None:
        """The session of this project with the newest activity (``agentsh -c``)."""

        def work(db: sqlite3.Connection) -> builtins.list[SessionInfo]:
            self._refresh(db, project_root)
            return self._select(db, project_root, limit=1)

        found = self._run(work)
        return found[0] if found else None

    def elsewhere(self, project_root: Path) -> builtins.list[SessionInfo]:
        """Sessions of other clones of this repository (same first commit, another folder):
        never listed or continued by default, only shown with their folder or opened by id."""

        def work(db: sqlite3.Connection) -> builtins.list[SessionInfo]:
            self._refresh(db, project_root)
            return self._query(db, "valid = 1", [], project_root, near=False)

        return self._run(work)

    def find(self, prefix: str, project_root: Path | None = None) -> SessionInfo:
        """The session named ``prefix`` in this project (the newest of that name), else the
        one whose id starts with ``prefix`` (this project first, then everywhere), else the
        one of that name anywhere (``-r ID`` and ``-r NAME``).

        An exact id wins over longer ids it is a prefix of. Raises :class:`SessionNotFound` or
        :class:`AmbiguousSession` (both ``LookupError``) with a message for the user.
        """
        given = " ".join(prefix.split())
        wanted = given.lower()
        if not wanted:
            raise SessionNotFound("give a session id (or its first characters) or name")

        def work(db: sqlite3.Connection) -> SessionInfo | None:
            if project_root is not None:
                self._refresh(db, project_root)
                named = self._query(db, *_named(given), project_root, limit=1)
                if named:
                    return named[0]
                match = _pick(wanted, self._by_prefix(db, wanted, project_root))
                if match is not None:
                    return match
            self._refresh(db, None)
            match = _pick(wanted, self._by_prefix(db, wanted, None))
            if match is not None:
                return match
            return _pick_named(given, self._query(db, *_named(given), None))

        match = self._run(work)
        if match is None:
            raise SessionNotFound(
                f"no session id starts with {given!r} and no session has that name "
                "(`agentsh sessions --all` lists every session)"
            )
        return match

    # -- database ---------------------------------------------------------------------------

    def _run(self, work: Callable[[sqlite3.Connection], _R]) -> _R:
        """Run ``work`` on the database; a damaged one is discarded and rebuilt from the files,
        and one that cannot be used at all (read-only cache, locked for too long) is replaced
        by a database in memory for this call. The catalog is a cache: it never fails a
        listing."""
        for attempt in range(2):
            try:
                db = self._open_file()
            except sqlite3.Error as exc:
                if _is_damage(exc) and attempt == 0:
                    self._discard()
                    continue
                break
            except OSError:
                break
            try:
                return work(db)
            except sqlite3.Error as exc:
                if _is_damage(exc) and attempt == 0:
                    db.close()
                    self._discard()
                    continue
                break
            finally:
                db.close()
        db = sqlite3.connect(":memory:", isolation_level=None)
        try:
            self._ensure_schema(db)
            return work(db)
        finally:
            db.close()

    def _open_file(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # a cache: losing the last commit is fine
            self._ensure_schema(db)
        except BaseException:
            db.close()
            raise
        return db

    @staticmethod
    def _ensure_schema(db: sqlite3.Connection) -> None:
        """Create the table, or drop and recreate it when it is of another schema version."""

        def current() -> bool:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            table = db.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sessions'"
            ).fetchone()[0]
            return bool(version == SCHEMA_VERSION and table)

        if current():
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            if not current():  # another process may have just done it
                db.execute("DROP TABLE IF EXISTS sessions")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _discard(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                Path(f"{self.db_path}{suffix}").unlink()

    # -- refresh ----------------------------------------------------------------------------

    def _refresh(self, db: sqlite3.Connection, project_root: Path | None) -> RefreshStats:
        if project_root is not None:
            names = self._user.project_session_folders(project_root)
            folders = [self.sessions_dir / name for name in names]
            rows = db.execute(
                "SELECT path, size, mtime_ns, scanned_offset, header, "
                + ", ".join(COLUMNS[1:])
                + f" FROM sessions WHERE project IN ({', '.join('?' * len(names))})",
                names,
            ).fetchall()
        else:
            folders = _subfolders(self.sessions_dir)
            rows = db.execute(
                "SELECT path, size, mtime_ns, scanned_offset, header, "
                + ", ".join(COLUMNS[1:])
                + " FROM sessions"
            ).fetchall()
        known = {row[0]: row for row in rows}
        upserts: list[tuple[Any, ...]] = []
        seen = unchanged = appended = rescanned = 0
        present: set[str] = set()
        for folder in folders:
            for path, stat in _session_files(folder):
                seen += 1
                key = str(path)
                present.add(key)
                row = known.get(key)
                if row is not None and row[1] == stat.st_size and row[2] == stat.st_mtime_ns:
                    unchanged += 1
                    continue
                if row is not None and _can_continue(path, row, stat):
                    scan = Scan.from_row(row[5:])
                    appended += 1
                else:
                    scan = Scan(project=folder.name)
                    rescanned += 1
                try:
                    scan.read(path)
                except OSError:
                    continue  # vanished or unreadable between scandir and open: next time
                scan.project = folder.name
                upserts.append(scan.row(key, stat))
        gone = [key for key in known if key not in present]
        if upserts or gone:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    f"INSERT OR REPLACE INTO sessions ({', '.join(COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(COLUMNS))})",
                    upserts,
                )
                db.executemany("DELETE FROM sessions WHERE path = ?", [(k,) for k in gone])
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return RefreshStats(seen, unchanged, appended, rescanned, len(gone))

    # -- queries ----------------------------------------------------------------------------

    def _select(
        self, db: sqlite3.Connection, project_root: Path | None, *, limit: int = -1
    ) -> builtins.list[SessionInfo]:
        return self._query(db, "valid = 1", [], project_root, limit=limit)

    def _by_prefix(
        self, db: sqlite3.Connection, prefix: str, project_root: Path | None
    ) -> builtins.list[SessionInfo]:
        where, params = "valid = 1 AND substr(lower(id), 1, ?) = ?", [len(prefix), prefix]
        return self._query(db, where, params, project_root)

    def _query(
        self,
        db: sqlite3.Connection,
        where: str,
        params: builtins.list[Any],
        project_root: Path | None,
        *,
        limit: int = -1,
        near: bool = True,
    ) -> builtins.list[SessionInfo]:
        """Newest activity first; within a project only the sessions of this checkout
        (session/affinity.py: this folder first, then its worktrees and its old places), or
        with ``near=False`` only those of other clones."""
        if project_root is not None:
            where += self._in_project(project_root, params)
        order = "ORDER BY last_activity DESC, path DESC"
        if project_root is None:
            rows = db.execute(
                f"SELECT {_INFO_COLUMNS} FROM sessions WHERE {where} {order} LIMIT {int(limit)}",
                params,
            ).fetchall()
            return [_info(row) for row in rows]
        rows = db.execute(
            f"SELECT {_INFO_COLUMNS}, header FROM sessions WHERE {where} {order}", params
        ).fetchall()
        # Only the git identity folder is shared by clones; the path-named one is this path's.
        names = self._user.project_session_folders(project_root)
        shared = names[0] if len(names) > 1 else None
        infos = [(_info(row), row[-1] if row[2] == shared else None) for row in rows]
        ranked = rank_sessions(project_root, infos, near=near)
        return ranked if limit < 0 else ranked[:limit]

    def _in_project(self, project_root: Path, params: builtins.list[Any]) -> str:
        """The SQL condition for "a session of this project" (its folders, see
        :meth:`UserPaths.project_session_folders`); appends the parameters."""
        names = self._user.project_session_folders(project_root)
        params.extend(names)
        return f" AND project IN ({', '.join('?' * len(names))})"


def _is_damage(exc: sqlite3.Error) -> bool:
    """A database file that is not one, or is corrupt (not: busy, locked, cannot open)."""
    name = getattr(exc, "sqlite_errorname", "")
    if name:
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def _pick(prefix: str, matches: list[SessionInfo]) -> SessionInfo | None:
    if not matches:
        return None
    exact = [m for m in matches if m.id.lower() == prefix]
    if len(exact) == 1:
        return exact[0]
    if len(matches) == 1:
        return matches[0]
    shown = ", ".join(
        f"{m.short_id} ({m.title or 'untitled'})" for m in matches[:_CANDIDATES_SHOWN]
    )
    extra = len(matches) - _CANDIDATES_SHOWN
    more = f" and {extra} more" if extra > 0 else ""
    raise AmbiguousSession(
        f"{prefix!r} matches {len(matches)} sessions: {shown}{more}; give more characters",
        tuple(matches),
    )


def _named(name: str) -> tuple[str, list[Any]]:
    return "valid = 1 AND name_key = ?", [name_key(name)]


def _pick_named(name: str, matches: list[SessionInfo]) -> SessionInfo | None:
    """Outside this project a name must be unique: another project's "fix" is not ours."""
    if len(matches) <= 1:
        return matches[0] if matches else None
    shown = ", ".join(f"{m.short_id} ({_home(m.cwd)})" for m in matches[:_CANDIDATES_SHOWN])
    raise AmbiguousSession(
        f"{len(matches)} sessions in other projects are named {name!r}: {shown}; give an id",
        tuple(matches),
    )


def _home(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if path == home or path.startswith(home + os.sep) else path


def _info(row: tuple[Any, ...]) -> SessionInfo:
    return SessionInfo(
        path=Path(row[0]),
        id=row[1],
        project=row[2],
        cwd=row[3],
        created=row[4],
        title=row[5],
        first_message=row[6],
        entries=row[7],
        messages=row[8],
        tokens=row[9],
        cost=row[10],
        last_activity=row[11],
        size_bytes=row[12],
        parent_session=row[13],
        model=row[14],
        name=row[15],
    )


def _subfolders(root: Path) -> list[Path]:
    try:
        with os.scandir(root) as it:
            return [Path(e.path) for e in it if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []


def _session_files(folder: Path) -> Iterator[tuple[Path, os.stat_result]]:
    try:
        it = os.scandir(folder)
    except OSError:
        return
    with it:
        for item in it:
            name = item.name
            if not name.endswith(".jsonl") or name.startswith("."):
                continue
            try:
                stat = item.stat()
            except OSError:
                continue
            if not stat_module.S_ISREG(stat.st_mode):
                continue
            yield Path(item.path), stat


def _can_continue(path: Path, row: tuple[Any, ...], stat: os.stat_result) -> bool:
    """True when the file only grew since the scan (same header, not shorter)."""
    size, offset, header, valid = row[1], row[3], row[4], row[6]
    if not valid or stat.st_size < size or stat.st_size < offset or offset == 0:
        return False
    try:
        return bool(log.read_first_line(path).rstrip(b"\n").decode("utf-8", "replace") == header)
    except OSError:
        return False
