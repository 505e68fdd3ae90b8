"""The memory search index's SQLite file: where it lives, its schema, and opening it safely.

One database per project in the cache dir (a single database shared by every project would
delete one project's files each time another is synced). Tables: ``meta`` (schema, embedding
model id, chunk settings: any change rebuilds), ``files`` (path, hash, mtime, size), ``chunks``
(line ranges and text), ``chunks_fts`` (FTS5, ``tokenize='trigram'``, kept in step by
triggers) and ``embeddings`` (float32 blobs keyed by model and chunk hash, so it is also the
embedding cache: an unchanged chunk is never embedded twice, even across a rebuild). The index
is a cache: a damaged file is moved aside and rebuilt from the sources.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentsh.errors import AgentshError
from agentsh.paths import ProjectPaths, UserPaths, project_slug

SCHEMA_VERSION = 1
# "entries": MEMORY.md and USER.md are cut one entry a chunk (older indexes cut them by lines).
CHUNKING_VERSION = "entries"


class SearchIndexError(AgentshError, RuntimeError):
    """The index cannot be opened or written (disk full, permissions); message says which."""


def index_db_path(user: UserPaths, project: ProjectPaths) -> Path:
    """The project's index database, next to :attr:`UserPaths.memory_index_db`."""
    base = user.memory_index_db
    return base.with_name(f"{base.stem}-{project_slug(project.root)}{base.suffix}")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY, kind TEXT NOT NULL, hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_hash ON chunks(hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TABLE IF NOT EXISTS embeddings(
    model TEXT NOT NULL, hash TEXT NOT NULL, dims INTEGER NOT NULL, vector BLOB NOT NULL,
    used_at REAL NOT NULL, PRIMARY KEY(model, hash)) WITHOUT ROWID;
"""
_REBUILT_TABLES = ("chunks_fts", "chunks", "files")


@dataclass(frozen=True, slots=True)
class Opened:
    conn: sqlite3.Connection
    data_version: int  # PRAGMA data_version when opened: a change means another writer
    rebuilt: str  # why the content was dropped ("" when it was kept)


def open_database(db_path: Path, expected_meta: Mapping[str, str]) -> Opened:
    """Open (or create) the index at ``db_path``; a file that cannot be read is moved aside
    and a new one made, and content built under other ``meta`` is dropped."""
    rebuilt = ""
    try:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        conn, rebuilt = _open(db_path, expected_meta)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise SearchIndexError(f"the search index {db_path} is locked: {exc}") from exc
        _set_aside(db_path)
        try:
            conn, _ = _open(db_path, expected_meta)
        except sqlite3.Error as again:
            raise SearchIndexError(f"cannot open the search index {db_path}: {again}") from again
        rebuilt = f"the old index was unreadable ({exc}) and was rebuilt"
    except OSError as exc:
        raise SearchIndexError(
            f"cannot create the search index folder {db_path.parent}: {exc.strerror}"
        ) from exc
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    return Opened(conn, version, rebuilt)


def _open(db_path: Path, expected_meta: Mapping[str, str]) -> tuple[sqlite3.Connection, str]:
    conn = sqlite3.connect(db_path, timeout=10.0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'abc'")
        rebuilt = _check_meta(conn, expected_meta)
    except sqlite3.Error:
        conn.close()
        raise
    return conn, rebuilt


def _set_aside(db_path: Path) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db_path}{suffix}")
        if path.exists():
            with contextlib.suppress(OSError):
                path.replace(path.with_name(f"{path.name}.broken-{stamp}"))


def _check_meta(conn: sqlite3.Connection, expected: Mapping[str, str]) -> str:
    """Content built under other settings (or another schema) is dropped; says why."""
    stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if stored == dict(expected):
        return ""
    rebuilt = ""
    if stored.get("schema") not in (None, expected["schema"]):
        conn.executescript(
            "DROP TABLE IF EXISTS embeddings; DROP TABLE IF EXISTS meta;"
            + "".join(f"DROP TABLE IF EXISTS {t};" for t in _REBUILT_TABLES)
        )
        conn.executescript(_SCHEMA)
    if stored:
        changed = [k for k in expected if stored.get(k) != expected[k]]
        rebuilt = "rebuilt: " + ", ".join(
            f"{k} changed from {stored.get(k, '?')} to {expected[k]}" for k in changed
        )
    drop_content(conn)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM meta")
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", expected.items())
    conn.execute("COMMIT")
    return rebuilt


def drop_content(conn: sqlite3.Connection) -> None:
    """Empty files, chunks and FTS; the embedding cache survives a rebuild."""
    conn.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _REBUILT_TABLES))
    conn.executescript(_SCHEMA)


@dataclass(slots=True)
class FileRow:
    kind: str
    hash: str
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class ChunkRow:
    id: int
    path: str
    start_line: int
    end_line: int
    text: str


class IndexStore:
    """Every statement the index runs, on its one connection. Not locked: the caller
    (:class:`~agentsh.memory.index.MemoryIndex`) holds its lock around each call."""

    def __init__(self, conn: sqlite3.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    def close(self) -> None:
        self.conn.close()

    def data_version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise SearchIndexError(f"cannot write the search index {self.db_path}: {exc}") from exc
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise SearchIndexError(f"cannot write the search index {self.db_path}: {exc}") from exc

    # -- files and chunks ---------------------------------------------------------------------

    def files(self) -> dict[str, FileRow]:
        rows = self.conn.execute("SELECT path, kind, hash, mtime_ns, size FROM files")
        return {r[0]: FileRow(r[1], r[2], r[3], r[4]) for r in rows}

    def remove(self, path: str) -> tuple[list[int], bool]:
        """Drop a file's chunks and row: (the chunk ids it had, whether anything went)."""
        with self.transaction() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
            conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            gone = conn.execute("DELETE FROM files WHERE path=?", (path,)).rowcount
        return ids, bool(gone or ids)

    def touch(self, path: str, mtime_ns: int, size: int) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE files SET mtime_ns=?, size=? WHERE path=?", (mtime_ns, size, path))

    def replace(
        self,
        row: tuple[str, str, str, int, int],
        chunks: Sequence[tuple[int, int, str, str]],
        *,
        model: str,
        cached: bool,
    ) -> tuple[list[int], list[tuple[int, bytes]]]:
        """A file's new chunks and row (path, kind, hash, mtime, size), in one transaction:
        (the old chunk ids, with ``cached`` the new chunks' vectors the cache already holds)."""
        path = row[0]
        vectors: list[tuple[int, bytes]] = []
        with self.transaction() as conn:
            old_ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
            conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            conn.executemany(
                "INSERT INTO chunks(path, start_line, end_line, hash, text) VALUES (?, ?, ?, ?, ?)",
                [(path, *chunk) for chunk in chunks],
            )
            conn.execute(
                "INSERT INTO files(path, kind, hash, mtime_ns, size) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(path) DO UPDATE SET kind=excluded.kind, hash=excluded.hash, "
                "mtime_ns=excluded.mtime_ns, size=excluded.size",
                row,
            )
            if cached and chunks:
                conn.execute(
                    "UPDATE embeddings SET used_at=? WHERE model=? AND hash IN "
                    "(SELECT hash FROM chunks WHERE path=?)",
                    (time.time(), model, path),
                )
                vectors = conn.execute(
                    "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
                    "ON e.model=? AND e.hash=c.hash WHERE c.path=?",
                    (model, path),
                ).fetchall()
        return old_ids, vectors

    def texts(self) -> list[tuple[int, str]]:
        return self.conn.execute("SELECT id, text FROM chunks").fetchall()

    def fts_ranks(self, expression: str) -> dict[int, float]:
        """Every FTS5 match with its rank, in one query: FTS5 computes BM25 for every match
        even under ORDER BY ... LIMIT, and a later "rowid IN (...)" lookup re-runs the whole
        match, so this is the cheapest way to give every nominee its rank."""
        return dict(
            self.conn.execute(
                "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,)
            ).fetchall()
        )

    def chunks(self, ids: Sequence[int]) -> Iterator[ChunkRow]:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT id, path, start_line, end_line, text FROM chunks WHERE id IN ({marks})"
            for row in self.conn.execute(query, part):
                yield ChunkRow(*row)

    def counts(self, model: str) -> tuple[int, int, int]:
        """(files, chunks, chunks with a vector from ``model``)."""
        files = self.conn.execute("SELECT count(*) FROM files").fetchone()[0]
        chunks = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        vectors = self.conn.execute(
            "SELECT count(*) FROM chunks c JOIN embeddings e ON e.model=? AND e.hash=c.hash",
            (model,),
        ).fetchone()[0]
        return int(files), int(chunks), int(vectors)

    # -- the embedding cache ------------------------------------------------------------------

    def prune_embeddings(self, unused_since: float) -> None:
        with self.transaction() as conn:
            conn.execute(
                "DELETE FROM embeddings WHERE used_at < ? "
                "AND hash NOT IN (SELECT hash FROM chunks)",
                (unused_since,),
            )

    def pending(self, model: str) -> int:
        """Distinct chunk texts without a vector from ``model``."""
        row = self.conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT hash FROM chunks) c WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.model=? AND e.hash=c.hash)",
            (model,),
        ).fetchone()
        return int(row[0])

    def next_batch(self, model: str, size: int) -> list[tuple[str, str]]:
        """(hash, text) of up to ``size`` chunks without a vector, similar lengths together
        (less padding for the model to chew)."""
        return self.conn.execute(
            "SELECT c.hash, min(c.text) AS t FROM chunks c LEFT JOIN embeddings e "
            "ON e.model=? AND e.hash=c.hash WHERE e.hash IS NULL "
            "GROUP BY c.hash ORDER BY length(t) LIMIT ?",
            (model, size),
        ).fetchall()

    def store_vectors(
        self, model: str, dims: int, vectors: Sequence[tuple[str, bytes]]
    ) -> list[tuple[int, str]]:
        """Cache (hash, float32 bytes) rows; returns (chunk id, hash) of the chunks they fit."""
        now = time.time()
        hashes = [h for h, _ in vectors]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings(model, hash, dims, vector, used_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(model, h, dims, blob, now) for h, blob in vectors],
            )
            marks = ",".join("?" * len(hashes))
            ids: list[tuple[int, str]] = conn.execute(
                f"SELECT id, hash FROM chunks WHERE hash IN ({marks})", hashes
            ).fetchall()
        return ids

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Several reads that see the same database (another process may write between)."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("COMMIT")

    def signature(self, model: str) -> str:
        """What the chunks' vectors depend on: ``model`` and every chunk's id and content hash
        (read off the covering index: milliseconds for 10,000 chunks)."""
        keys = self.conn.execute("SELECT group_concat(id || ':' || hash, ',') FROM chunks")
        text = f"{model}\n{keys.fetchone()[0] or ''}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def chunk_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    def vectors(self, model: str) -> list[tuple[int, bytes]]:
        return self.conn.execute(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.model=? AND e.hash=c.hash",
            (model,),
        ).fetchall()
