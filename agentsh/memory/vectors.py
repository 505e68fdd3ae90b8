"""The memory search's vectors: computed in the background, held as one float32 matrix.

:class:`VectorWorker` embeds the chunks that have no vector yet (an unchanged chunk is never
embedded twice: the ``embeddings`` table is also the cache). :class:`VectorMatrix` holds them in
memory, loaded lazily and updated in place as chunks change, so a search costs one
matrix-vector product. :class:`MatrixFile` keeps a complete matrix next to the database, so a
new process (``agentsh memory search``) reads it in one go. numpy is imported inside methods
only.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentsh.fsutil import atomic_write
from agentsh.memory.embeddings import Embedder, EmbeddingError, EmbeddingUnavailable
from agentsh.memory.index_db import IndexStore, SearchIndexError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class VectorMatrix:
    """Chunk ids (sorted) and their unit vectors, for cosine search with numpy."""

    def __init__(self) -> None:
        import numpy as np

        self.ids: NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.matrix: NDArray[np.float32] = np.zeros((0, 0), dtype=np.float32)
        self._pending: list[tuple[int, NDArray[np.float32]]] = []
        self._removed: set[int] = set()

    @property
    def dims(self) -> int:
        if self.matrix.shape[0]:
            return int(self.matrix.shape[1])
        return int(self._pending[0][1].shape[0]) if self._pending else 0

    def __len__(self) -> int:
        self._settle()
        return int(self.ids.shape[0])

    def load(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Fill an empty matrix from stored (id, vector bytes) rows in one pass, as adding them
        one by one would (rows of another size than the first are left out), without a
        numpy array per row: 10,000 rows load in milliseconds instead of a quarter second."""
        import numpy as np

        assert not self.ids.shape[0] and not self._pending and rows
        size = len(rows[0][1])
        kept = [(i, blob) for i, blob in rows if len(blob) == size]
        ids = np.fromiter((i for i, _ in kept), dtype=np.int64, count=len(kept))
        flat = np.frombuffer(b"".join(blob for _, blob in kept), dtype="<f4")
        matrix = flat.reshape(len(kept), size // 4).astype(np.float32)
        order = np.argsort(ids, kind="stable")
        self.ids, self.matrix = ids[order], np.ascontiguousarray(matrix[order])

    def fill(self, ids: NDArray[np.int64], matrix: NDArray[np.float32]) -> None:
        """Fill an empty matrix with sorted ``ids`` and their rows (as :class:`MatrixFile`
        keeps them)."""
        assert not self.ids.shape[0] and not self._pending
        self.ids, self.matrix = ids, matrix

    def add(self, rows: Iterable[tuple[int, NDArray[np.float32]]]) -> None:
        for chunk_id, vector in rows:
            self._removed.discard(chunk_id)
            self._pending.append((chunk_id, vector))

    def remove(self, ids: Iterable[int]) -> None:
        ids = set(ids)
        if not ids:
            return
        self._removed |= ids
        self._pending = [(i, v) for i, v in self._pending if i not in ids]

    def _settle(self) -> None:
        import numpy as np

        if self._removed:
            keep = ~np.isin(self.ids, np.fromiter(self._removed, dtype=np.int64))
            self.ids, self.matrix = self.ids[keep], self.matrix[keep]
            self._removed.clear()
        if self._pending:
            dims = self.dims
            rows = [(i, v) for i, v in self._pending if v.shape[0] == dims]
            self._pending.clear()
            if rows:
                new_ids = np.fromiter((i for i, _ in rows), dtype=np.int64, count=len(rows))
                new_vecs = np.stack([v for _, v in rows]).astype(np.float32)
                # A re-added id replaces its old row.
                keep = ~np.isin(self.ids, new_ids)
                ids = np.concatenate([self.ids[keep], new_ids])
                base = self.matrix[keep] if self.matrix.shape[0] else new_vecs[:0]
                matrix = np.concatenate([base, new_vecs])
                order = np.argsort(ids, kind="stable")
                self.ids, self.matrix = ids[order], np.ascontiguousarray(matrix[order])

    def cosine(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine of every row with the unit vector ``query`` (rows follow :attr:`ids`)."""
        self._settle()
        import numpy as np

        if not self.ids.shape[0] or self.matrix.shape[1] != query.shape[0]:
            return np.zeros(self.ids.shape[0], dtype=np.float32)
        # einsum, not BLAS (``@``): one thread, as fast for one query (~0.6 ms over 10,000
        # rows), where OpenBLAS's threads took 3-50 ms on a busy 2-core machine.
        result: NDArray[np.float32] = np.einsum("ij,j->i", self.matrix, query)
        return result

    def lookup(self, ids: Sequence[int], scores: NDArray[np.float32]) -> dict[int, float]:
        """Scores of the given chunk ids that have a vector."""
        import numpy as np

        if not ids or not self.ids.shape[0]:
            return {}
        wanted = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.ids, wanted)
        pos = np.minimum(pos, self.ids.shape[0] - 1)
        hit = self.ids[pos] == wanted
        return {int(i): float(scores[p]) for i, p, h in zip(wanted, pos, hit, strict=True) if h}


class MatrixFile:
    """Every chunk's vector, as the last process to load them all left them, in one file.

    Loading 10,000 vectors from the database is a join over 15 MB of rows (0.3 s on a loaded
    machine), and so is asking it whether any chunk still waits for a vector: a process that
    searches once paid both. This file holds the matrix of a complete index (every chunk has
    a vector) with the signature of what it was built from: the model and every chunk's id and
    content hash (:meth:`~agentsh.memory.index_db.IndexStore.signature`), so any change to the
    chunks makes it stale, and a stale, damaged or missing file is ignored: the database stays
    the truth. A vector depends only on the model and the chunk's text (its hash), both in
    the signature. Written atomically, best-effort (it is a cache, in the user's cache dir).
    """

    MAGIC = b"agentsh-vectors 1\n"

    def __init__(self, path: Path) -> None:
        self.path = path

    def signature(self) -> str:
        """The signature the file was written under ("" when there is no usable file)."""
        with contextlib.suppress(OSError, ValueError), self.path.open("rb") as handle:
            header = self._header(handle.read(len(self.MAGIC) + 4096))
            if header is not None:
                return str(header[0]["signature"])
        return ""

    def load(self, signature: str) -> tuple[NDArray[np.int64], NDArray[np.float32]] | None:
        """(sorted ids, their rows) if the file was written under ``signature``, else None."""
        import numpy as np

        try:
            data = self.path.read_bytes()
            header = self._header(data)
            if header is None or header[0]["signature"] != signature:
                return None
            meta, start = header
            rows, dims = int(str(meta["rows"])), int(str(meta["dims"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if rows < 1 or dims < 1 or len(data) != start + rows * 8 + rows * dims * 4:
            return None
        ids = np.frombuffer(data, dtype="<i8", count=rows, offset=start).astype(np.int64)
        flat = np.frombuffer(data, dtype="<f4", count=rows * dims, offset=start + rows * 8)
        if rows > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            return None
        return ids, flat.reshape(rows, dims).astype(np.float32)

    def save(self, signature: str, ids: NDArray[np.int64], matrix: NDArray[np.float32]) -> None:
        rows = int(ids.shape[0])
        if not rows or matrix.ndim != 2 or int(matrix.shape[0]) != rows:
            return
        meta = {"signature": signature, "rows": rows, "dims": int(matrix.shape[1])}
        data = b"".join(
            (
                self.MAGIC,
                json.dumps(meta).encode("ascii") + b"\n",
                ids.astype("<i8").tobytes(),
                matrix.astype("<f4").tobytes(),
            )
        )
        with contextlib.suppress(OSError):
            atomic_write(self.path, data)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)

    @classmethod
    def _header(cls, data: bytes) -> tuple[dict[str, object], int] | None:
        if not data.startswith(cls.MAGIC):
            return None
        end = data.find(b"\n", len(cls.MAGIC))
        if end < 0:
            return None
        meta = json.loads(data[len(cls.MAGIC) : end])
        return (meta, end + 1) if isinstance(meta, dict) else None


def saved_matrix_current(store: IndexStore, model: str, saved: MatrixFile) -> bool:
    """``saved`` holds every chunk's vector as the chunks are now."""
    return saved.signature() == store.signature(model)


def load_matrix(store: IndexStore, model: str, saved: MatrixFile) -> tuple[VectorMatrix, bool]:
    """The vectors of the chunks that have one: from ``saved`` when it is current (then every
    chunk has one: True), else from the database (and saved for the next process when every
    chunk has one). The caller holds the index's lock."""
    matrix = VectorMatrix()
    with store.snapshot():
        signature = store.signature(model)
        kept = saved.load(signature)
        if kept is not None:
            matrix.fill(*kept)
            return matrix, True
        rows = store.vectors(model)
        chunks = store.chunk_count()
    if rows:
        matrix.load(rows)
    if chunks and len(matrix) == chunks:
        saved.save(signature, matrix.ids, matrix.matrix)
    return matrix, False


def decode_rows(rows: Iterable[tuple[int, bytes]]) -> list[tuple[int, NDArray[np.float32]]]:
    import numpy as np

    return [(cid, np.frombuffer(blob, dtype="<f4").astype(np.float32)) for cid, blob in rows]


class VectorWorker:
    """Fills in the vectors of chunks that have none, batch by batch, in a thread (or inline).

    Keyword search works at once and vectors arrive as they are computed. The worker shares
    the index's store and lock; the vectors it stores go to ``on_vectors`` (the index's matrix,
    when it is loaded), its problems to ``on_error``.
    """

    def __init__(
        self,
        store: IndexStore,
        lock: threading.RLock,
        embedder: Embedder,
        batch: int,
        *,
        background: bool,
        on_vectors: Callable[[list[tuple[int, NDArray[np.float32]]]], None],
        on_error: Callable[[str], None],
    ) -> None:
        self._store = store
        self._lock = lock
        self._embedder = embedder
        self._batch = max(1, batch)
        self._background = background
        self._on_vectors = on_vectors
        self._on_error = on_error
        self.failure = ""  # permanent: the model cannot run (keyword-only)
        self.complete = False  # every chunk is known to have a vector: spares a count query
        self.closed = False
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()

    def pending(self) -> int:
        """Chunk texts still without a vector."""
        if not self._embedder.enabled:
            return 0
        with self._lock:
            if self.complete:
                return 0
            return self._store.pending(self._embedder.model_id)

    def start(self) -> None:
        """Start embedding if chunks lack vectors (in the calling thread when not background)."""
        if not self._embedder.enabled or self.failure or self.closed:
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if not self.pending():
                self.complete = True
                return
            self._idle.clear()
        if not self._background:
            self._run()
            return
        thread = threading.Thread(target=self._run, name="agentsh-memory-embed", daemon=True)
        self._thread = thread
        thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the embedding is idle; True if it is."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        self.closed = True
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout=30)

    def _run(self) -> None:
        """Embed every chunk that has no vector yet, batch by batch, outside the lock."""
        model = self._embedder.model_id
        try:
            while not self.closed:
                with self._lock:
                    rows = self._store.next_batch(model, self._batch)
                    if not rows:
                        self.complete = True
                        break
                try:
                    vectors = self._embedder.embed([r[1] for r in rows])
                except EmbeddingUnavailable as exc:
                    self.failure = str(exc)
                    break
                except EmbeddingError as exc:
                    self._on_error(str(exc))
                    break  # retried after the next sync
                self._keep([r[0] for r in rows], vectors)
        except (sqlite3.Error, SearchIndexError) as exc:
            self._on_error(f"embedding worker stopped: {exc}")
        finally:
            self._idle.set()

    def _keep(self, hashes: list[str], vectors: NDArray[np.float32]) -> None:
        dims = int(vectors.shape[1]) if vectors.ndim == 2 else 0
        with self._lock:
            if self.closed:
                return
            ids = self._store.store_vectors(
                self._embedder.model_id,
                dims,
                [(h, vectors[i].astype("<f4").tobytes()) for i, h in enumerate(hashes)],
            )
            position = {h: i for i, h in enumerate(hashes)}
            self._on_vectors([(cid, vectors[position[h]]) for cid, h in ids])
