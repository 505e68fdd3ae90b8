"""Query vectors remembered on disk, for ``agentsh memory search`` as a process (issue 16).

A search embeds its query with the local model, and in a new process that means importing
onnxruntime and tokenizers and loading the model first: most of what the command costs. The
same query asked again (with another ``-k``, with ``--json``, by a script that runs it again)
finds its vector here instead. It is the model's own output, bit for bit, so the results and
their scores do not change. Only the local model's vectors are kept: its weights are pinned by
checksum, while a provider's model may change behind its name.

A cache: one sqlite file in the user cache folder, readable by the user alone, holding the
newest :data:`MAX_QUERIES` queries; anything odd or failing is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.memory.embeddings import Embedder, LocalMiniLM

if TYPE_CHECKING:
    from agentsh.memory.embeddings import Vectors

FILE_NAME = "query-vectors.sqlite"
MAX_QUERIES = 1000
MAX_QUERY_CHARS = 2000  # a longer "query" is a chunk of a one-chunk batch, not worth keeping


def remembering(embedder: Embedder, cache_dir: Path) -> Embedder:
    """``embedder``, remembering its query vectors in ``cache_dir`` when it is the local model."""
    if isinstance(embedder, LocalMiniLM):
        return RememberingEmbedder(embedder, cache_dir / FILE_NAME)
    return embedder


class RememberingEmbedder:
    """An :class:`~agentsh.memory.embeddings.Embedder` that embeds one text (a query) only
    when its vector is not on disk yet; batches go straight to the model."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self._inner = inner
        self._path = path
        self._lock = threading.Lock()  # the query thread and the vector worker share it
        self._conn: sqlite3.Connection | None = None
        self._broken = False

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    @property
    def multilingual(self) -> bool:
        return self._inner.multilingual

    @property
    def enabled(self) -> bool:
        return self._inner.enabled

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) != 1 or len(texts[0]) > MAX_QUERY_CHARS:
            return self._inner.embed(texts)
        found = self._recall(texts[0])
        if found is not None:
            return found
        vectors = self._inner.embed(texts)
        self._keep(texts[0], vectors[0].astype("<f4").tobytes())
        return vectors

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None

    # -- the file -------------------------------------------------------------------------------

    def _recall(self, query: str) -> Vectors | None:
        import numpy as np

        with self._lock:
            conn = self._open()
            if conn is None:
                return None
            try:
                row = conn.execute(
                    "SELECT vector FROM queries WHERE model = ? AND query = ?",
                    (self.model_id, query),
                ).fetchone()
            except sqlite3.Error:
                return None
        if row is None or not isinstance(row[0], bytes) or len(row[0]) != 4 * self.dims:
            return None
        vector: Vectors = np.frombuffer(row[0], dtype="<f4").astype(np.float32).reshape(1, -1)
        return vector

    def _keep(self, query: str, blob: bytes) -> None:
        with self._lock:
            conn = self._open()
            if conn is None:
                return
            with contextlib.suppress(sqlite3.Error), conn:
                conn.execute(
                    "INSERT OR REPLACE INTO queries (model, query, vector, kept) "
                    "VALUES (?, ?, ?, ?)",
                    (self.model_id, query, blob, time.time()),
                )
                conn.execute(
                    "DELETE FROM queries WHERE rowid NOT IN "
                    "(SELECT rowid FROM queries ORDER BY kept DESC LIMIT ?)",
                    (MAX_QUERIES,),
                )

    def _open(self) -> sqlite3.Connection | None:
        """The connection (the caller holds the lock); None once the file has failed."""
        if self._conn is not None or self._broken:
            return self._conn
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            # For the user alone (queries can be private), and never through a link.
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(fd, 0o600)  # a file left wider by hand is narrowed
            finally:
                os.close(fd)
            conn = sqlite3.connect(self._path, timeout=0.5, check_same_thread=False)
            conn.execute("PRAGMA synchronous = OFF")  # a cache: a lost write is a miss
            conn.execute(
                "CREATE TABLE IF NOT EXISTS queries (model TEXT NOT NULL, query TEXT NOT NULL, "
                "vector BLOB NOT NULL, kept REAL NOT NULL, PRIMARY KEY (model, query))"
            )
        except (OSError, sqlite3.Error):
            self._broken = True
            return None
        self._conn = conn
        return conn
