"""The memory search index: SQLite FTS5 (trigram) for keywords, float32 vectors, hybrid ranking.

:class:`MemoryIndex` keeps one project's memory files (:mod:`.sources`) indexed in its SQLite
file (:mod:`.index_db`) and answers searches: candidates from FTS5 (the query parsed by
:mod:`.query`), the substring scan and the vectors (:mod:`.vectors`), scored and ordered by
:mod:`.ranking` (SPEC §5, with a fixed candidate pool, and both scores for every nominee, so a
chunk's score never depends on k or on which side found it).

Freshness: :meth:`MemoryIndex.sync` reconciles by stat, then hash; each file is written in one
transaction (a crash leaves every file either old or new, and the next sync repairs the rest);
vanished files are deleted. A search first reconciles when something marked the index dirty,
and at most every :data:`RECONCILE_INTERVAL_S` otherwise, so results never go silently stale
when a file watcher dies. Vectors are computed in the background after each sync. numpy is
imported only inside methods: importing this module stays cheap for the TUI.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.config import SearchSettings
from agentsh.fsutil import LinkRefused
from agentsh.memory.chunking import Chunk, chunk_entries, chunk_text
from agentsh.memory.embeddings import (
    Embedder,
    EmbeddingError,
    EmbeddingUnavailable,
    make_embedder,
)
from agentsh.memory.index_db import (
    CHUNKING_VERSION,
    SCHEMA_VERSION,
    FileRow,
    IndexStore,
    SearchIndexError,
    drop_content,
    index_db_path,
    open_database,
)
from agentsh.memory.query import QueryPlan, parse_query
from agentsh.memory.ranking import (
    Candidate,
    Haystack,
    SearchMode,
    SearchResponse,
    decay,
    mmr,
    score,
    to_result,
    weights,
)
from agentsh.memory.sources import CURATED_NAMES, MemorySources, SourceFile, SourceKind
from agentsh.memory.vectors import (
    MatrixFile,
    VectorMatrix,
    VectorWorker,
    decode_rows,
    load_matrix,
    saved_matrix_current,
)
from agentsh.paths import ProjectPaths, UserPaths

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "IndexStatus",
    "MemoryIndex",
    "SearchIndexError",
    "SyncReport",
    "index_db_path",
]

RECONCILE_INTERVAL_S = 2.0
MAX_FILE_BYTES = 16 * 1024 * 1024
# Embedding-cache rows no chunk uses any more are kept this long (an edit that is undone, a
# model switched back), then dropped.
CACHE_KEEP_S = 14 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class SyncReport:
    indexed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0
    skipped: tuple[str, ...] = ()  # unreadable or too large, with the reason
    rebuilt: str = ""  # why the whole index was rebuilt, if it was
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.indexed or self.removed)


@dataclass(frozen=True, slots=True)
class IndexStatus:
    db_path: str
    files: int
    chunks: int
    vectors: int
    pending_vectors: int
    model_id: str
    mode: SearchMode
    note: str
    last_error: str


ProgressFn = Callable[[int, int, str], None]


class MemoryIndex:
    """Hybrid search over the memory files of one project.

    Thread-safe: the watcher, the embedding worker and searches may run on different threads.
    Open with :meth:`open` (or share one per project in a process: :mod:`.index_registry`);
    :meth:`close` when done.
    """

    def __init__(
        self,
        db_path: Path,
        sources: MemorySources,
        settings: SearchSettings,
        embedder: Embedder,
        *,
        background: bool = True,
    ) -> None:
        self.db_path = db_path
        self.sources = sources
        self.settings = settings
        self.embedder = embedder
        self._lock = threading.RLock()  # the connection, the file mirror, the matrix
        self._sync_lock = threading.Lock()  # one reconcile at a time
        self._files: dict[str, FileRow] = {}
        self._matrix: VectorMatrix | None = None
        self._hay: Haystack | None = None
        self._dirty = True
        self._last_reconcile = 0.0
        self._data_version = -1
        self._last_error = ""  # the latest transient problem (shown in status)
        self._closed = False
        self.rebuilt = ""
        self._query_cache: dict[str, NDArray[np.float32]] = {}
        self._matrix_file = MatrixFile(db_path.with_name(f"{db_path.name}.vectors"))
        self._store = self._connect()
        self.vectors = VectorWorker(
            self._store,
            self._lock,
            embedder,
            settings.embedding_batch,
            background=background,
            on_vectors=self._vectors_added,
            on_error=self._set_error,
        )
        self._note_complete()

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        user: UserPaths,
        project: ProjectPaths,
        settings: SearchSettings,
        *,
        embedder: Embedder | None = None,
        api_base: str | None = None,
        background: bool = True,
        include_project: bool = True,
    ) -> MemoryIndex:
        """Open (or create) the project's index. Does not sync: call :meth:`sync`.
        ``include_project=False`` (an untrusted folder) leaves the project's memory out."""
        return cls(
            index_db_path(user, project),
            MemorySources.for_project(user, project, include_project=include_project),
            settings,
            embedder or make_embedder(settings, api_base=api_base),
            background=background,
        )

    def _connect(self) -> IndexStore:
        opened = open_database(self.db_path, self._expected_meta())
        self._data_version = opened.data_version
        self.rebuilt = opened.rebuilt
        return IndexStore(opened.conn, self.db_path)

    def _expected_meta(self) -> dict[str, str]:
        return {
            "schema": str(SCHEMA_VERSION),
            "embedding_model": self.embedder.model_id,
            "chunk_tokens": str(self.settings.chunk_tokens),
            "chunk_overlap_tokens": str(self.settings.chunk_overlap_tokens),
            # How files are cut; a new rule rebuilds indexes made with the old one.
            "chunking": CHUNKING_VERSION,
        }

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self.vectors.close()
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._store.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    def mark_dirty(self) -> None:
        """Something changed on disk: the next search reconciles first."""
        self._dirty = True

    def sync(self, *, full: bool = False, progress: ProgressFn | None = None) -> SyncReport:
        """Bring the index up to date with the files on disk; ``full`` rebuilds from scratch."""
        started = time.monotonic()
        with self._sync_lock:
            rebuilt = ""
            if full:
                with self._lock:
                    drop_content(self._store.conn)
                    self._files.clear()
                    self._hay = None
                    if self._matrix is not None:
                        self._matrix = VectorMatrix()
                rebuilt = "full rebuild requested"
            self._load_files()
            self._dirty = False
            found = self.sources.discover()
            with self._lock:
                known = dict(self._files)
            removed = sorted(p for p in known if p not in found)
            changed = sorted(
                p
                for p, src in found.items()
                if (row := known.get(p)) is None
                or (row.mtime_ns, row.size, row.kind) != (src.mtime_ns, src.size, src.kind)
            )
            indexed: list[str] = []
            skipped: list[str] = []
            for path in removed:
                self._remove(path)
            total = len(changed)
            for done, path in enumerate(changed, start=1):
                outcome = self._index_source(found[path])
                if outcome == "indexed":
                    indexed.append(path)
                elif outcome.startswith("skipped"):
                    skipped.append(f"{path}: {outcome[8:]}")
                if progress is not None:
                    progress(done, total, path)
            self._last_reconcile = time.monotonic()
            if indexed or removed:
                self._prune_cache()
        self.vectors.start()
        report = SyncReport(
            indexed=tuple(indexed),
            removed=tuple(removed),
            unchanged=len(found) - len(changed),
            skipped=tuple(skipped),
            rebuilt=rebuilt or self.rebuilt,
            seconds=time.monotonic() - started,
        )
        self.rebuilt = ""
        return report

    def index_file(self, path: Path) -> bool:
        """Index (or drop, if it is gone) one file now, e.g. a summary just written.

        Returns False when ``path`` is not a memory source (nothing is done).
        """
        kind = self.sources.classify(path)
        if kind is None:
            return False
        absolute = self.sources.key(path)
        with self._sync_lock:
            self._load_files()
            try:
                st = Path(absolute).stat()
            except FileNotFoundError:
                self._remove(absolute)
            except OSError as exc:
                self._last_error = f"cannot read {absolute}: {exc.strerror}"
                return True
            else:
                self._index_source(SourceFile(absolute, kind, st.st_mtime_ns, st.st_size))
        self.vectors.start()
        return True

    def remove_file(self, path: Path) -> bool:
        """Drop a file's chunks; True if it was indexed."""
        absolute = self.sources.key(path)
        with self._sync_lock:
            self._load_files()
            return self._remove(absolute)

    def _load_files(self) -> None:
        """Mirror the files table (again if another process changed the database)."""
        with self._lock:
            version = self._store.data_version()
            if self._files and version == self._data_version:
                return
            if version != self._data_version:
                self._matrix = None  # another process wrote: reload vectors lazily
                self._hay = None
                self.vectors.complete = False
            self._data_version = version
            self._files = self._store.files()

    def _remove(self, path: str) -> bool:
        with self._lock:
            ids, gone = self._store.remove(path)
            self._files.pop(path, None)
            self._hay = None
            if self._matrix is not None:
                self._matrix.remove(ids)
            return gone

    def _index_source(self, src: SourceFile) -> str:
        """Index one file; returns "indexed", "unchanged" or "skipped <reason>"."""
        if src.size > MAX_FILE_BYTES:
            self._remove(src.path)
            return f"skipped larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
        try:
            data = self.sources.read(Path(src.path), src.kind, max_bytes=MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            self._remove(src.path)
            return "removed"
        except LinkRefused as exc:
            self._remove(src.path)  # what it held before it became a link is not kept either
            return f"skipped {exc.reason}"
        except OSError as exc:
            return f"skipped {exc.strerror}"
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            row = self._files.get(src.path)
        if row is not None and row.hash == digest and row.kind == src.kind:
            with self._lock:
                self._store.touch(src.path, src.mtime_ns, src.size)
            row.mtime_ns, row.size = src.mtime_ns, src.size
            return "unchanged"
        text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
        # MEMORY.md and USER.md are cut at their entries, the unit the guard judges on recall.
        curated = src.kind is not SourceKind.SUMMARY and Path(src.path).name in CURATED_NAMES
        chunks = (chunk_entries if curated else chunk_text)(
            text,
            src.path,
            chunk_tokens=self.settings.chunk_tokens,
            overlap_tokens=self.settings.chunk_overlap_tokens,
        )
        self._write_chunks(src, digest, chunks)
        return "indexed"

    def _write_chunks(self, src: SourceFile, digest: str, chunks: list[Chunk]) -> None:
        with self._lock:
            old_ids, cached = self._store.replace(
                (src.path, src.kind.value, digest, src.mtime_ns, src.size),
                [(c.start_line, c.end_line, c.hash, c.text) for c in chunks],
                model=self.embedder.model_id,
                cached=self.embedder.enabled,
            )
            self._files[src.path] = FileRow(src.kind.value, digest, src.mtime_ns, src.size)
            self.vectors.complete = False
            self._hay = None
            if self._matrix is not None:
                self._matrix.remove(old_ids)
                self._matrix.add(decode_rows(cached))

    def _prune_cache(self) -> None:
        cutoff = time.time() - CACHE_KEEP_S
        with self._lock, contextlib.suppress(SearchIndexError):
            self._store.prune_embeddings(cutoff)

    # -- vectors -------------------------------------------------------------------------

    def _vectors_added(self, rows: list[tuple[int, NDArray[np.float32]]]) -> None:
        if self._matrix is not None:  # the worker holds the lock
            self._matrix.add(rows)

    def _set_error(self, message: str) -> None:
        self._last_error = message

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Block until the background embedding is idle; True if it is."""
        return self.vectors.wait(timeout)

    def _note_complete(self) -> None:
        """The saved matrix, made from the chunks there are now, says every chunk has its vector:
        the first sync need not ask the database (a 0.3 s query at 10,000 chunks)."""
        if self.embedder.enabled:
            with self._lock, contextlib.suppress(sqlite3.Error):
                if saved_matrix_current(self._store, self.embedder.model_id, self._matrix_file):
                    self.vectors.complete = True

    def _ensure_matrix(self) -> VectorMatrix:
        with self._lock:
            if self._matrix is None:
                matrix, complete = load_matrix(
                    self._store, self.embedder.model_id, self._matrix_file
                )
                self.vectors.complete = self.vectors.complete or complete
                self._matrix = matrix
            return self._matrix

    # -- status --------------------------------------------------------------------------

    def mode(self) -> tuple[SearchMode, str]:
        if not self.embedder.enabled:
            return SearchMode.KEYWORD_ONLY, "keyword-only: embeddings are off (search.embedding)"
        if self.vectors.failure:
            return SearchMode.KEYWORD_ONLY, f"keyword-only: {self.vectors.failure}"
        return SearchMode.HYBRID, ""

    def status(self) -> IndexStatus:
        with self._lock:
            files, chunks, vectors = self._store.counts(self.embedder.model_id)
        mode, note = self.mode()
        return IndexStatus(
            db_path=str(self.db_path),
            files=files,
            chunks=chunks,
            vectors=vectors,
            pending_vectors=self.vectors.pending(),
            model_id=self.embedder.model_id,
            mode=mode,
            note=note,
            last_error=self._last_error,
        )

    @property
    def last_error(self) -> str:
        return self._last_error

    # -- searching -----------------------------------------------------------------------

    def _refresh(self) -> None:
        """Reconcile before a search when dirty, or when the last look is a while ago."""
        stale = time.monotonic() - self._last_reconcile > RECONCILE_INTERVAL_S
        if not (self._dirty or stale):
            with self._lock:
                version = self._store.data_version()
            if version == self._data_version:
                return
        # A sync already running (the watcher's) is as good as ours: do not wait for it.
        if self._sync_lock.locked():
            return
        try:
            self.sync()
        except SearchIndexError as exc:
            self._last_error = str(exc)

    def _query_vector(self, query: str) -> NDArray[np.float32] | None:
        mode, _note = self.mode()
        if mode is SearchMode.KEYWORD_ONLY:
            return None
        cached = self._query_cache.get(query)
        if cached is not None:
            return cached
        try:
            vector: NDArray[np.float32] = self.embedder.embed([query])[0]
        except EmbeddingUnavailable as exc:
            self.vectors.failure = str(exc)
            return None
        except EmbeddingError as exc:
            self._last_error = str(exc)
            return None
        if len(self._query_cache) > 128:
            self._query_cache.clear()
        self._query_cache[query] = vector
        return vector

    def weights(self, plan: QueryPlan, *, vectors: bool = True) -> tuple[float, float]:
        """(vector, keyword) weights for this query, normalised to sum to 1 (SPEC §5 rule 2)."""
        multilingual = self.embedder.multilingual
        return weights(plan, self.settings, multilingual=multilingual, vectors=vectors)

    def warm_up(self, query: str = "") -> None:
        """Load what a search needs (the embedding model, ``query``'s vector, the vectors) now.

        For a caller that has other work meanwhile: ``agentsh memory search`` runs it in a
        thread while it brings the index up to date (onnxruntime loads with the GIL released).
        A failure here is left for :meth:`search` to meet and report."""
        if self.mode()[0] is SearchMode.KEYWORD_ONLY:
            return
        with contextlib.suppress(SearchIndexError, sqlite3.Error):
            if query.strip():
                self._query_vector(query)
            if self.mode()[0] is SearchMode.HYBRID:
                self._ensure_matrix()

    def search(
        self, query: str, *, max_results: int | None = None, min_score: float | None = None
    ) -> SearchResponse:
        """The best chunks for ``query``, highest score first."""
        settings = self.settings
        k = max(1, max_results or settings.max_results)
        floor = settings.min_score if min_score is None else min_score
        plan = parse_query(query)
        self._refresh()
        qvec = self._query_vector(query) if query.strip() else None
        mode, note = self.mode()
        if qvec is None and mode is SearchMode.HYBRID:
            mode = SearchMode.KEYWORD_ONLY
            note = f"keyword-only for this query: {self._last_error or 'no query vector'}"
        vector_w, keyword_w = self.weights(plan, vectors=qvec is not None)
        pending = self.vectors.pending() if mode is SearchMode.HYBRID else 0
        if pending and not note:
            note = f"vectors for {pending} chunk(s) are still being computed"
        if plan.empty and qvec is None:
            return SearchResponse(
                query, (), mode, note, self.embedder.model_id, vector_w, keyword_w, pending
            )
        # A fixed pool, independent of k (a pool of k x 4 makes the top result change with k).
        pool = max(
            min(settings.candidates_cap, settings.candidates_multiplier * settings.max_results), k
        )
        candidates = self._candidates(plan, qvec, pool)
        score(plan, candidates, vector_w, keyword_w)
        if settings.temporal_decay:
            with self._lock:
                mtimes = {p: row.mtime_ns for p, row in self._files.items()}
            decay(candidates, mtimes, settings.half_life_days)
        # The minimum is met by the fused score or by the keyword score alone (SPEC §5 rule 1).
        passing = [c for c in candidates if c.score >= floor or c.decayed_keyword >= floor]
        passing.sort(key=lambda c: (-c.score, c.path, c.start_line))
        if settings.mmr and len(passing) > 1:
            passing = mmr(passing, settings.mmr_lambda, k)
        display = self.sources.display
        results = tuple(to_result(plan, c, qvec is not None, display) for c in passing[:k])
        return SearchResponse(
            query, results, mode, note, self.embedder.model_id, vector_w, keyword_w, pending
        )

    def _candidates(
        self, plan: QueryPlan, qvec: NDArray[np.float32] | None, pool: int
    ) -> list[Candidate]:
        with self._lock:
            expression = plan.fts_expression()
            ranks = self._store.fts_ranks(expression) if expression else {}
            nominated = set(heapq.nsmallest(pool, ranks, key=ranks.__getitem__))
            like_terms = plan.like_terms()
            if like_terms and len(ranks) < pool:
                # With a full pool of real matches a substring-only chunk could not place
                # (it ranks below all of them), so the scan is only needed when they are few.
                nominated.update(self._haystack().nominate(like_terms, pool))
            cosines: dict[int, float] = {}
            matrix: VectorMatrix | None = None
            scores: Any = None
            if qvec is not None:
                matrix = self._ensure_matrix()
                scores = matrix.cosine(qvec)
                if scores.shape[0]:
                    import numpy as np

                    top = min(pool, int(scores.shape[0]))
                    best = np.argpartition(-scores, top - 1)[:top]
                    for position in best:
                        cosines[int(matrix.ids[position])] = float(scores[position])
                    nominated.update(cosines)
            if not nominated:
                return []
            ids = sorted(nominated)
            # Every nominee gets both scores, whichever side nominated it.
            if matrix is not None and scores is not None:
                missing = [i for i in ids if i not in cosines]
                cosines.update(matrix.lookup(missing, scores))
            return [
                Candidate(
                    chunk_id=row.id,
                    path=row.path,
                    start_line=row.start_line,
                    end_line=row.end_line,
                    text=row.text,
                    rank=ranks.get(row.id),
                    vector=cosines.get(row.id),
                )
                for row in self._store.chunks(ids)
            ]

    def _haystack(self) -> Haystack:
        """Every chunk's lowercased text in memory, for the 1-2 character substring scan."""
        with self._lock:
            if self._hay is None:
                self._hay = Haystack(self._store.texts())
            return self._hay
