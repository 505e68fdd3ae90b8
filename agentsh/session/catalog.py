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

Scanning does not parse every line: entry lines this agentsh wrote start with a fixed prefix
(``{"type":"message",`` ...) and hold usage in a fixed shape, so a block of such lines is
counted with byte searches and one regex over the whole block; only the first user message and
blocks holding lines of another shape are looked at line by line (and those lines parsed).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
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

#: bump when the table changes; an older database is dropped and rebuilt from the files
SCHEMA_VERSION = 2  # 2: tokens count cache reads, and summary calls on compaction entries
TITLE_CHARS = 80
FIRST_MESSAGE_CHARS = 500
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
    last_timestamp TEXT NOT NULL,
    last_activity REAL NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    scanned_offset INTEGER NOT NULL,
    header TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_project ON sessions (project, last_activity);
CREATE INDEX IF NOT EXISTS sessions_by_id ON sessions (id);
"""

_COLUMNS = (
    *("path", "project", "valid", "id", "cwd", "created", "parent_session", "title"),
    *("first_message", "entries", "messages", "tokens", "cost", "model", "last_timestamp"),
    *("last_activity", "size", "mtime_ns", "scanned_offset", "header"),
)
_INFO_COLUMNS = (
    "path, id, project, cwd, created, title, first_message, entries, messages, tokens, cost, "
    "last_activity, size, parent_session, model"
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
        """The session whose id starts with ``prefix``: this project first, then everywhere.

        An exact id wins over longer ids it is a prefix of. Raises :class:`SessionNotFound` or
        :class:`AmbiguousSession` (both ``LookupError``) with a message for the user.
        """
        wanted = prefix.strip().lower()
        if not wanted:
            raise SessionNotFound("give a session id (or its first characters)")

        def work(db: sqlite3.Connection) -> SessionInfo | None:
            if project_root is not None:
                self._refresh(db, project_root)
                match = _pick(wanted, self._by_prefix(db, wanted, project_root))
                if match is not None:
                    return match
            self._refresh(db, None)
            return _pick(wanted, self._by_prefix(db, wanted, None))

        match = self._run(work)
        if match is None:
            raise SessionNotFound(
                f"no session id starts with {prefix.strip()!r} "
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
                + ", ".join(_COLUMNS[1:])
                + f" FROM sessions WHERE project IN ({', '.join('?' * len(names))})",
                names,
            ).fetchall()
        else:
            folders = _subfolders(self.sessions_dir)
            rows = db.execute(
                "SELECT path, size, mtime_ns, scanned_offset, header, "
                + ", ".join(_COLUMNS[1:])
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
                    scan = _Scan.from_row(row[5:])
                    appended += 1
                else:
                    scan = _Scan(project=folder.name)
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
                    f"INSERT OR REPLACE INTO sessions ({', '.join(_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_COLUMNS))})",
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


# -- scanning ---------------------------------------------------------------------------------

_MESSAGE = b'{"type":"message",'
_ANNOTATIONS = (b'{"type":"leaf",', b'{"type":"label",', b'{"type":"checkpoint",')
_ENTRY = b'{"type":"'
_USAGE = re.compile(
    rb'"usage":\{"input":(\d+),"output":(\d+),"cacheRead":(\d+),"cacheWrite":\d+,'
    rb'"cost":(-?[0-9.]+(?:[eE][-+]?\d+)?)\}'
)
_MODEL = re.compile(rb'"model":"((?:[^"\\]|\\.)*)"')
_TIMESTAMP = re.compile(rb'"timestamp":"([^"\\]*)"')
_LINE_TYPE = re.compile(rb'\n\{"type":"([A-Za-z0-9_]*)",')
_USER_LINE = re.compile(
    rb'\n\{"type":"message","id":"[^"\n]*","parentId":(?:null|"[^"\n]*"),'
    rb'"timestamp":"[^"\n]*","role":"user"'
)
_USER = re.compile(
    rb'^\{"type":"message","id":"[^"]*","parentId":(?:null|"[^"]*"),'
    rb'"timestamp":"[^"]*","role":"user"'
)


class _Scan:
    """The running totals of one file, continued from its stored offset."""

    __slots__ = _COLUMNS[1:]

    def __init__(self, project: str = "") -> None:
        self.project = project
        self.valid = 0
        self.id = ""
        self.cwd = ""
        self.created = ""
        self.parent_session: str | None = None
        self.title = ""
        self.first_message = ""
        self.entries = 0
        self.messages = 0
        self.tokens = 0
        self.cost = 0.0
        self.model = ""
        self.last_timestamp = ""
        self.last_activity = 0.0
        self.size = 0
        self.mtime_ns = 0
        self.scanned_offset = 0
        self.header = ""

    @classmethod
    def from_row(cls, values: tuple[Any, ...]) -> _Scan:
        scan = cls()
        for name, value in zip(_COLUMNS[1:], values, strict=True):
            setattr(scan, name, value)
        return scan

    def row(self, path: str, stat: os.stat_result) -> tuple[Any, ...]:
        self.size = stat.st_size
        self.mtime_ns = stat.st_mtime_ns
        self.last_activity = _epoch(self.last_timestamp) or stat.st_mtime
        return (path, *(getattr(self, name) for name in _COLUMNS[1:]))

    def read(self, path: Path) -> None:
        """Continue the totals from the stored offset to the last complete line."""
        for end, block in log.iter_line_blocks(path, self.scanned_offset):
            if self.scanned_offset == 0:
                cut = block.index(b"\n") + 1
                line, block = block[:cut], block[cut:]
                self.header = line.rstrip(b"\n").decode("utf-8", "replace")
                self._read_header(line)
                if not self.valid:
                    self.scanned_offset = cut
                    return  # not a session: rescanned if it ever changes
            if not self._scan_canonical(block):
                self._scan_lines(block)
            self.scanned_offset = end

    def _scan_canonical(self, block: bytes) -> bool:
        """Totals for a block whose every line is an entry as ``encode_line`` writes it,
        counted with C-speed searches over the whole block; False (nothing counted) when some
        line has another shape and the block needs :meth:`_scan_lines`.

        Sound because a JSON string cannot hold a raw newline or an unescaped quote: the
        patterns below can only match the structure of an entry, never text inside one."""
        if not block:
            return True
        data = b"\n" + block
        kinds = _LINE_TYPE.findall(data)
        if len(kinds) != block.count(b"\n"):
            return False
        usages = _USAGE.findall(block)
        if len(usages) != block.count(b'"usage":'):
            return False  # a usage object in another shape
        annotations = kinds.count(b"leaf") + kinds.count(b"label") + kinds.count(b"checkpoint")
        self.entries += len(kinds) - annotations
        self.messages += kinds.count(b"message")
        if usages:
            inputs, outputs, reads, costs = zip(*usages, strict=True)
            self.tokens += sum(map(int, inputs)) + sum(map(int, outputs)) + sum(map(int, reads))
            self.cost += sum(map(float, costs))
        if not self.title:
            for found in _USER_LINE.finditer(data):
                start = found.start() + 1
                if self._take_title(data[start : data.index(b"\n", start)]):
                    break
        at = block.rfind(b'"model":"')
        if at >= 0 and (model := _MODEL.match(block, at)):
            self.model = _unescape(model[1])
        last = block[block.rfind(b"\n", 0, len(block) - 1) + 1 :]
        if stamp := _TIMESTAMP.search(last):
            self.last_timestamp = stamp[1].decode("utf-8", "replace")
        return True

    def _scan_lines(self, block: bytes) -> None:
        """Line by line, parsing what the prefixes do not cover (another writer, hand edits,
        damage)."""
        last_line = b""  # the newest entry line: its timestamp is the last activity
        model = b""
        for line in block.split(b"\n"):
            if line.startswith(_MESSAGE):
                self.messages += 1
                self.entries += 1
                last_line = line
                if not self.title and _USER.match(line):
                    self._take_title(line)
                self._line_usage(line)
                if b'"model":"' in line and (found := _MODEL.search(line)):
                    model = found[1]
            elif line.startswith(_ANNOTATIONS):
                last_line = line
            elif line.startswith(_ENTRY):
                self.entries += 1
                last_line = line
                self._line_usage(line)  # a compaction's or branch summary's model call
            elif line.strip():
                before = self.model
                if self._other(line):
                    last_line = line
                    if self.model != before:
                        model = b""  # this line's model is newer than the one remembered
        if model:
            self.model = _unescape(model)
        if last_line and (stamp := _TIMESTAMP.search(last_line)):
            self.last_timestamp = stamp[1].decode("utf-8", "replace")

    def _read_header(self, line: bytes) -> None:
        data = _json_object(line)
        if data is None or data.get("type") != "session" or not data.get("id"):
            return
        self.valid = 1
        self.id = str(data["id"])
        self.cwd = str(data.get("cwd", ""))
        self.created = str(data.get("timestamp", ""))
        parent = data.get("parentSession")
        self.parent_session = str(parent) if parent else None
        self.last_timestamp = self.created

    def _take_title(self, line: bytes) -> bool:
        """Take the title from a user message; False when it has no text."""
        data = _json_object(line)
        content = data.get("content") if data is not None else None
        if isinstance(content, list):  # text blocks, as other tools write them
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if isinstance(content, str) and content.strip():
            self.first_message = content.strip()[:FIRST_MESSAGE_CHARS]
            self.title = shorten(content, TITLE_CHARS)
            return True
        return False

    def _other(self, line: bytes) -> bool:
        """A line in a shape the prefixes do not cover (another writer, a hand edit): parse
        it properly. True when it is an entry."""
        data = _json_object(line)
        if data is None or not isinstance(data.get("type"), str) or not data.get("id"):
            return False  # damaged: the loader reports it, the catalog just skips it
        kind = data["type"]
        if kind not in ("leaf", "label", "checkpoint"):
            self.entries += 1
        if kind == "message":
            self.messages += 1
            if not self.title and data.get("role") == "user":
                self._take_title(line)
            if isinstance(data.get("model"), str) and data["model"]:
                self.model = data["model"]
        self._add_usage(data.get("usage"))
        return True

    def _line_usage(self, line: bytes) -> None:
        if b'"usage":' in line:
            if usage := _USAGE.search(line):
                self.tokens += int(usage[1]) + int(usage[2]) + int(usage[3])
                self.cost += float(usage[4])
            else:
                self._usage_of(line)

    def _usage_of(self, line: bytes) -> None:
        data = _json_object(line)
        if data is not None:
            self._add_usage(data.get("usage"))

    def _add_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            with contextlib.suppress(TypeError, ValueError):
                tokens = sum(int(usage.get(k, 0)) for k in ("input", "output", "cacheRead"))
                cost = float(usage.get("cost", 0.0))
                self.tokens += tokens
                self.cost += cost


def _json_object(line: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, with an ellipsis when cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _unescape(raw: bytes) -> str:
    try:
        value = json.loads(b'"' + raw + b'"')
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw.decode("utf-8", "replace")
    return str(value)


def _epoch(stamp: str) -> float:
    if not stamp:
        return 0.0
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()
