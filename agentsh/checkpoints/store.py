"""One project's checkpoint store: compressed blobs, the file journal and the stat cache.

A single SQLite file, ``<data dir>/checkpoints/<project>/store.sqlite3`` (WAL, ``synchronous =
FULL``), so a capture is one transaction: the blobs it stored, the journal records it wrote and
the stat cache it updated are durable together or not at all, and a kill at any byte loses at
most the capture that was running. Two agentsh processes in one project take turns through
SQLite's write lock.

- ``blobs``: file contents keyed by the SHA-256 of the raw bytes, zlib-compressed when that
  helps. A content is stored once however many files and checkpoints hold it.
- ``files``: the stat cache, one row per file last seen (size, mtime, ctime, inode, mode) and
  a reference to its content: a blob hash, ``git:<oid>`` for a file that was byte-identical to
  its git index entry when first seen (its bytes are copied here the moment it changes),
  :data:`NOT_CAPTURED` for one over the size cap.
- ``journal``: every change a capture found, in order (``seq``), as path, before and after
  (reference and mode; an absent file has reference ``""`` and mode 0). A checkpoint is a
  ``seq``: the files as they were after every record up to it. The file at an older checkpoint
  is the *before* of its first later record, so restoring needs only the records after it.

The budget is enforced oldest-first by :func:`agentsh.checkpoints.budget.enforce_budget`:
journal records are dropped from the start and the blobs nobody references any more go with
them; :meth:`CheckpointStore.horizon` is then the oldest ``seq`` that can still be restored.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from agentsh.errors import AgentshError
from agentsh.paths import UserPaths, project_slug

SCHEMA_VERSION = 1
STORE_FILE = "store.sqlite3"
BUSY_TIMEOUT_MS = 15_000

ABSENT = ""  # the reference of a file that does not exist
NOT_CAPTURED = "?"  # a file whose content was not kept (over the size cap, unreadable)
GIT_PREFIX = "git:"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (
    hash TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    stored INTEGER NOT NULL,
    codec INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    mode INTEGER NOT NULL,
    ref TEXT NOT NULL,
    racy INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    path TEXT NOT NULL,
    before_ref TEXT NOT NULL,
    before_mode INTEGER NOT NULL,
    after_ref TEXT NOT NULL,
    after_mode INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_path ON journal (path, seq);
"""


class StoreError(AgentshError):
    """The store cannot be used; the message says why in a sentence."""


class CacheRow(NamedTuple):
    """What a file was when last seen, and where its content is."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    mode: int
    ref: str
    racy: bool  # modified too recently for its mtime to be trusted: re-read next time

    def same_stat(self, st: os.stat_result) -> bool:
        return (
            self.size == st.st_size
            and self.mtime_ns == st.st_mtime_ns
            and self.ctime_ns == st.st_ctime_ns
            and self.ino == st.st_ino
            and self.mode == st.st_mode
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One journal record: ``path`` went from ``before`` to ``after`` (reference, mode)."""

    path: str
    before_ref: str
    before_mode: int
    after_ref: str
    after_mode: int


@dataclass(frozen=True, slots=True)
class Eviction:
    """What one budget pass dropped from this store (reported, never silent)."""

    records: int
    freed_bytes: int
    horizon: int
    horizon_time: float  # when the oldest change still kept was recorded (0: none kept)


def store_dir(user: UserPaths, root: Path) -> Path:
    return user.data_dir / "checkpoints" / project_slug(root)


def blob_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CheckpointStore:
    """An open store; safe to use from one thread at a time (a lock enforces it)."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = path
        self.root = root
        self._lock = threading.RLock()
        self._db = _connect(path)
        self._cache: dict[str, CacheRow] | None = None
        self._cache_generation = -1
        self._in_write = False
        try:
            self.store_id = self._init_meta()
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def open(cls, user: UserPaths, root: Path, *, create: bool = True) -> CheckpointStore:
        """Open (or create) the project's store; a damaged one is moved aside and replaced.

        Raises :class:`StoreError` when the folder cannot be created or the file opened, or
        (``create`` False: a command that only reads) when the project has no store."""
        folder = store_dir(user, root)
        if not create and not (folder / STORE_FILE).is_file():
            raise StoreError(f"no file checkpoints were ever taken in {root}")
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StoreError(f"cannot create {folder}: {exc.strerror or exc}") from exc
        path = folder / STORE_FILE
        try:
            return cls(path, root)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise StoreError(f"{path} is busy in another agentsh: {exc}") from exc
            aside = path.with_name(f"{STORE_FILE}.damaged-{int(time.time())}")
            with contextlib.suppress(OSError):
                path.rename(aside)
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        Path(f"{path}{suffix}").unlink()
            try:
                return cls(path, root)
            except sqlite3.Error as again:
                raise StoreError(f"cannot open {path}: {again}") from again

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- setup ------------------------------------------------------------------------------

    def _init_meta(self) -> str:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            rows = dict(db.execute("SELECT key, value FROM meta").fetchall())
            version = int(rows.get("schema", SCHEMA_VERSION))
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer agentsh (schema {version}); "
                    "checkpoints are off for this project"
                )
            store_id = rows.get("store_id")
            if not store_id:
                store_id = secrets.token_hex(8)
                db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("schema", str(SCHEMA_VERSION)),
                        ("store_id", store_id),
                        ("root", str(self.root)),
                        ("generation", "0"),
                        ("horizon", "0"),
                    ],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return store_id

    # -- transactions -----------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE``: taken before anything is read, so two
        processes never scan and record the same change twice)."""
        with self._lock:
            if self._in_write:
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._in_write = True
            try:
                yield
            except BaseException:
                self._in_write = False
                self._db.execute("ROLLBACK")
                self._cache = None  # the in-memory copy may hold the rolled-back rows
                self._cache_generation = -1
                raise
            self._in_write = False
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A consistent read snapshot (a deferred transaction)."""
        with self._lock:
            if self._in_write:
                yield
                return
            self._db.execute("BEGIN")
            try:
                yield
            finally:
                self._db.execute("COMMIT")

    # -- meta -------------------------------------------------------------------------------

    def meta(self, key: str, default: str = "") -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def seq(self) -> int:
        """The newest journal position (0 when nothing was ever recorded)."""
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'journal'").fetchone()
        return int(row[0]) if row else 0

    def horizon(self) -> int:
        """Checkpoints at a ``seq`` below this cannot be restored (their records were evicted)."""
        return int(self.meta("horizon", "0") or 0)

    def has_baseline(self) -> bool:
        return self.meta("baseline") == "1"

    def mark_baseline(self) -> None:
        self.set_meta("baseline", "1")

    def last_eviction(self) -> str:
        return self.meta("last_eviction")

    # -- blobs ------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` (once) and return its reference; inside :meth:`writing`."""
        digest = blob_hash(data)
        if self._db.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone():
            return digest
        packed = zlib.compress(data, 6) if len(data) > 64 else data
        codec = 1 if len(packed) < len(data) else 0
        body = packed if codec else data
        self._db.execute(
            "INSERT INTO blobs (hash, size, stored, codec, data) VALUES (?, ?, ?, ?, ?)",
            (digest, len(data), len(body), codec, body),
        )
        return digest

    def get_blob(self, ref: str) -> bytes | None:
        """The content of a blob reference, or None when the store does not hold it."""
        row = self._db.execute("SELECT codec, data FROM blobs WHERE hash = ?", (ref,)).fetchone()
        if row is None:
            return None
        codec, body = int(row[0]), bytes(row[1])
        try:
            data = zlib.decompress(body) if codec == 1 else body
        except zlib.error:
            return None
        return data if blob_hash(data) == ref else None

    def has_blob(self, ref: str) -> bool:
        return self._db.execute("SELECT 1 FROM blobs WHERE hash = ?", (ref,)).fetchone() is not None

    # -- the stat cache ---------------------------------------------------------------------

    @property
    def cache_generation(self) -> int:
        """The generation of the in-memory cache (changes whenever a row changed)."""
        return self._cache_generation

    def cache(self) -> dict[str, CacheRow]:
        """The stat cache, kept in memory and reloaded when another process changed it.

        The caller must not modify the returned dict; use :meth:`record`."""
        generation = int(self.meta("generation", "0") or 0)
        if self._cache is None or generation != self._cache_generation:
            rows = self._db.execute(
                "SELECT path, size, mtime_ns, ctime_ns, ino, mode, ref, racy FROM files"
            ).fetchall()
            self._cache = {
                path: CacheRow(size, mtime, ctime, ino, mode, ref, bool(racy))
                for path, size, mtime, ctime, ino, mode, ref, racy in rows
            }
            self._cache_generation = generation
        return self._cache

    def record(self, changes: Iterable[Change], updates: dict[str, CacheRow | None]) -> int:
        """Append ``changes`` to the journal and apply ``updates`` to the stat cache (None
        removes a row); inside :meth:`writing`. Returns the newest ``seq``."""
        now = time.time()
        db = self._db
        db.executemany(
            "INSERT INTO journal (time, path, before_ref, before_mode, after_ref, after_mode) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (now, c.path, c.before_ref, c.before_mode, c.after_ref, c.after_mode)
                for c in changes
            ],
        )
        if updates:
            gone = [(path,) for path, row in updates.items() if row is None]
            kept = [(path, *row) for path, row in updates.items() if row is not None]
            db.executemany("DELETE FROM files WHERE path = ?", gone)
            db.executemany(
                "INSERT OR REPLACE INTO files "
                "(path, size, mtime_ns, ctime_ns, ino, mode, ref, racy) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                kept,
            )
            cache = self.cache()
            for path, row in updates.items():
                if row is None:
                    cache.pop(path, None)
                else:
                    cache[path] = row
            generation = int(self.meta("generation", "0") or 0) + 1
            self.set_meta("generation", str(generation))
            self._cache_generation = generation
        return self.seq()

    # -- the journal ------------------------------------------------------------------------

    def first_after(self, seq: int) -> dict[str, tuple[str, int]]:
        """path -> (reference, mode) the file had at ``seq``, for every file changed since."""
        rows = self._db.execute(
            "SELECT path, before_ref, before_mode FROM journal WHERE seq IN "
            "(SELECT min(seq) FROM journal WHERE seq > ? GROUP BY path)",
            (seq,),
        ).fetchall()
        return {path: (ref, int(mode)) for path, ref, mode in rows}

    def paths_between(self, after: int, upto: int, limit: int) -> tuple[list[str], int]:
        """The files changed in ``(after, upto]``: up to ``limit`` names and the full count."""
        rows = self._db.execute(
            "SELECT DISTINCT path FROM journal WHERE seq > ? AND seq <= ? ORDER BY path",
            (after, upto),
        ).fetchall()
        return [str(r[0]) for r in rows[:limit]], len(rows)

    def record_time(self, seq: int) -> float:
        """When the record ``seq`` (or the newest before it) was written; 0 if none."""
        row = self._db.execute(
            "SELECT time FROM journal WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (seq,)
        ).fetchone()
        return float(row[0]) if row else 0.0

    def oldest_record(self) -> tuple[int, float] | None:
        row = self._db.execute("SELECT seq, time FROM journal ORDER BY seq LIMIT 1").fetchone()
        return (int(row[0]), float(row[1])) if row else None

    # -- size and eviction ------------------------------------------------------------------

    def disk_bytes(self) -> int:
        return disk_bytes(self.path)

    def evict(self, records: int) -> Eviction:
        """Drop the ``records`` oldest journal records and every blob left unreferenced, then
        give the freed pages back to the file system."""
        before = self.disk_bytes()
        with self.writing():
            row = self._db.execute(
                "SELECT max(seq) FROM (SELECT seq FROM journal ORDER BY seq LIMIT ?)",
                (records,),
            ).fetchone()
            last = int(row[0]) if row and row[0] is not None else 0
            dropped = self._db.execute("DELETE FROM journal WHERE seq <= ?", (last,)).rowcount
            self._db.execute(
                "DELETE FROM blobs WHERE hash NOT IN (SELECT before_ref FROM journal) "
                "AND hash NOT IN (SELECT after_ref FROM journal) "
                "AND hash NOT IN (SELECT ref FROM files)"
            )
            horizon = max(self.horizon(), last)
            self.set_meta("horizon", str(horizon))
            oldest = self.oldest_record()
            eviction = Eviction(dropped, 0, horizon, oldest[1] if oldest else 0.0)
            self.set_meta(
                "last_eviction",
                f"{time.time():.0f} {eviction.records} {eviction.horizon} {eviction.horizon_time}",
            )
        with self._lock:
            self._db.executescript("PRAGMA incremental_vacuum;")  # execute() frees one page
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        freed = max(0, before - self.disk_bytes())
        return Eviction(eviction.records, freed, eviction.horizon, eviction.horizon_time)

    def forget_files(self) -> int:
        """Drop the copies of the files as they are now, in a store with no file history
        left (a project not worked on lately); its next capture starts afresh. Returns the
        bytes freed; 0 (and nothing dropped) if the store holds history after all."""
        before = self.disk_bytes()
        with self.writing():
            if self.journal_size():
                return 0
            self._db.execute("DELETE FROM files")
            self._db.execute("DELETE FROM blobs")
            self.set_meta("baseline", "0")
            self.set_meta("horizon", str(self.seq()))
            self.set_meta("generation", str(int(self.meta("generation", "0") or 0) + 1))
            self._cache = None
            self._cache_generation = -1
        with self._lock:
            self._db.executescript("PRAGMA incremental_vacuum;")  # execute() frees one page
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return max(0, before - self.disk_bytes())

    def last_used(self) -> int:
        """When the store's last capture began (ns since the epoch; 0: never)."""
        return int(self.meta("last_capture_ns", "0") or 0)

    def journal_size(self) -> int:
        row = self._db.execute("SELECT count(*) FROM journal").fetchone()
        return int(row[0]) if row else 0


def disk_bytes(path: Path) -> int:
    total = 0
    for name in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            total += name.stat().st_size
    return total


def _connect(path: Path) -> sqlite3.Connection:
    fresh = not path.exists()
    db = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if fresh:
            # Must precede the first table; lets an eviction hand pages back to the disk.
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA schema_version").fetchone()  # a file that is not a database fails here
    except BaseException:
        db.close()
        raise
    return db
