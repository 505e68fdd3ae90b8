"""The memory search index: SQLite FTS5 (trigram) for keywords, float32 vectors, hybrid ranking.

What is indexed (SPEC §5): every ``*.md`` under the project's ``.agentsh/memory/`` (MEMORY.md
and the typed docs included), every ``*.md`` under the user's memory folder (USER.md), and the
compaction summaries (``workspace/<session-id>/*-summary.md``) of this project's sessions. One
SQLite database per project lives in the cache dir (a single database shared by every project
would delete one project's files each time another is synced). Its tables: ``meta`` (schema,
embedding model id, chunk settings: any change rebuilds), ``files`` (path, hash, mtime, size),
``chunks`` (line ranges and text), ``chunks_fts`` (FTS5, ``tokenize='trigram'``, kept in step by
triggers) and ``embeddings`` (float32 blobs keyed by model and chunk hash, so it is also the
embedding cache: an unchanged chunk is never embedded twice, even across a rebuild).

Freshness: :meth:`MemoryIndex.sync` reconciles by stat, then hash; each file is written in one
transaction (a crash leaves every file either old or new, and the next sync repairs the rest);
vanished files are deleted. A search first reconciles when something marked the index dirty,
and at most every :data:`RECONCILE_INTERVAL_S` otherwise, so results never go silently stale
when a file watcher dies. Vectors are computed on a background thread after each sync: keyword
search works at once and vectors fill in. Cosine similarity runs with numpy over an in-memory
float32 matrix, loaded lazily and updated in place on every change.

Ranking follows SPEC §5 with its three rules, plus two fixes for known failures of the design it
comes from: the candidate pool is fixed (not k x 4), and every nominated chunk gets both its
keyword and its vector score, so a chunk's score never depends on k or on which side found it.
numpy is imported only inside methods: importing this module stays cheap for the TUI.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import heapq
import math
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentsh.config import SearchSettings
from agentsh.errors import AgentshError
from agentsh.memory.chunking import Chunk, chunk_entries, chunk_text
from agentsh.memory.embeddings import (
    Embedder,
    EmbeddingError,
    EmbeddingUnavailable,
    make_embedder,
)
from agentsh.paths import ProjectPaths, UserPaths, project_slug
from agentsh.text import is_cjk_char

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SCHEMA_VERSION = 1
# "entries": MEMORY.md and USER.md are cut one entry a chunk (older indexes cut them by lines).
CHUNKING_VERSION = "entries"
RECONCILE_INTERVAL_S = 2.0
MAX_FILE_BYTES = 16 * 1024 * 1024
SNIPPET_CHARS = 240
# Embedding-cache rows no chunk uses any more are kept this long (an edit that is undone, a
# model switched back), then dropped.
CACHE_KEEP_S = 14 * 24 * 3600.0
# LIKE-only rows (1-2 character CJK words the trigram index cannot see) score below the weakest
# real keyword match (SPEC §5 rule 3); when nothing matched through the index, at most this.
LIKE_ONLY_CEILING = 0.8
CURATED_NAMES = frozenset({"MEMORY.md", "USER.md"})


class SearchIndexError(AgentshError, RuntimeError):
    """The index cannot be opened or written (disk full, permissions); message says which."""


# -- sources ---------------------------------------------------------------------------------


class SourceKind(StrEnum):
    MEMORY = "memory"  # the project's .agentsh/memory/ (MEMORY.md, docs/)
    USER = "user"  # the user's memory folder (USER.md)
    SUMMARY = "summary"  # compaction summaries of this project's sessions


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str
    kind: SourceKind
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class MemorySources:
    """The folders the index reads, and how their files are named in results."""

    project_root: Path
    project_memory_dir: Path | None  # None: an untrusted folder, or its memory links out
    user_memory_dir: Path
    workspace_dir: Path
    project_sessions_dir: Path

    @classmethod
    def for_project(
        cls, user: UserPaths, project: ProjectPaths, *, include_project: bool = True
    ) -> MemorySources:
        """The sources of ``project``; its own memory only when ``include_project`` (a
        trusted folder) and only if ``.agentsh/memory`` does not lead out of the project."""
        memory_dir: Path | None = project.memory_dir
        if not include_project or not _absolute(project.memory_dir).is_relative_to(
            _absolute(project.root)
        ):
            memory_dir = None
        return cls(
            project_root=project.root,
            project_memory_dir=memory_dir,
            user_memory_dir=user.user_memory_dir,
            workspace_dir=user.workspace_dir,
            project_sessions_dir=user.project_sessions_dir(project.root),
        )

    def watch_roots(self) -> list[Path]:
        """Folders a watcher should follow (some may not exist yet)."""
        roots = [self.project_memory_dir, self.user_memory_dir, self.workspace_dir]
        return [root for root in roots if root is not None]

    def session_ids(self) -> set[str]:
        """This project's session ids, from the log file names ``<stamp>_<id>.jsonl``."""
        try:
            names = [e.name for e in os.scandir(self.project_sessions_dir) if e.is_file()]
        except OSError:
            return set()
        return {n[:-6].rpartition("_")[2] for n in names if n.endswith(".jsonl")}

    def discover(self) -> dict[str, SourceFile]:
        """Every source file now on disk, by absolute path."""
        found: dict[str, SourceFile] = {}
        for root, kind in (
            (self.project_memory_dir, SourceKind.MEMORY),
            (self.user_memory_dir, SourceKind.USER),
        ):
            if root is None:
                continue
            for path, st in _walk_markdown(root):
                found[path] = SourceFile(path, kind, st.st_mtime_ns, st.st_size)
        for link, kind in self._curated_links():
            with contextlib.suppress(OSError):
                st = link.stat()  # the file it points at: an edit there changes mtime and size
                found[str(link)] = SourceFile(str(link), kind, st.st_mtime_ns, st.st_size)
        sessions = self.session_ids()
        if sessions:
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.workspace_dir):
                    if entry.name not in sessions or not entry.is_dir(follow_symlinks=False):
                        continue
                    for path, st in _walk_markdown(Path(entry.path), recursive=False):
                        if path.endswith("-summary.md"):
                            found[path] = SourceFile(
                                path, SourceKind.SUMMARY, st.st_mtime_ns, st.st_size
                            )
        return found

    def _curated_links(self) -> list[tuple[Path, SourceKind]]:
        """USER.md where it is a symlink to a file (a dotfiles repository).

        Other symlinks are never followed, but USER.md is the file the system prompt shows
        and the memory tool writes through, so search reads it too, under its own name. The
        user's folder is the user's own; a project's MEMORY.md link is never followed.
        """
        links: list[tuple[Path, SourceKind]] = []
        for name in sorted(CURATED_NAMES):
            link = _root(self.user_memory_dir) / name
            if link.is_symlink() and link.is_file():
                links.append((link, SourceKind.USER))
        return links

    def _curated_link(self, path: Path) -> tuple[Path, SourceKind] | None:
        """``path`` as one of :meth:`_curated_links`, if it names one."""
        if path.name not in CURATED_NAMES:
            return None
        link = _absolute(path.parent) / path.name
        return next(((p, k) for p, k in self._curated_links() if p == link), None)

    def key(self, path: Path) -> str:
        """The name the index stores ``path`` under: absolute, a curated link not followed."""
        curated = self._curated_link(path)
        return str(curated[0] if curated is not None else _absolute(path))

    def classify(self, path: Path) -> SourceKind | None:
        """The kind of source ``path`` would be, or None if the index does not cover it."""
        if path.suffix.lower() != ".md":
            return None
        curated = self._curated_link(path)
        if curated is not None:
            return curated[1]
        absolute = _absolute(path)
        if self.project_memory_dir is not None and _is_within(absolute, self.project_memory_dir):
            return SourceKind.MEMORY
        if _is_within(absolute, self.user_memory_dir):
            return SourceKind.USER
        if (
            absolute.parent.parent == _absolute(self.workspace_dir)
            and absolute.name.endswith("-summary.md")
            and absolute.parent.name in self.session_ids()
        ):
            return SourceKind.SUMMARY
        return None

    def display(self, path: str) -> str:
        """A short name for results: project-relative, ``user:`` or ``workspace:`` prefixed."""
        absolute = Path(path)
        for root, prefix in (
            (self.project_root, ""),
            (self.user_memory_dir, "user:"),
            (self.workspace_dir, "workspace:"),
        ):
            if _is_within(absolute, root):
                return prefix + absolute.relative_to(_root(root)).as_posix()
        return path

    def resolve(self, name: str) -> Path | None:
        """The source file a display name (or an absolute path) denotes, if it is a source."""
        name = name.strip()
        if not name:
            return None
        if name.startswith("user:"):
            candidate = self.user_memory_dir / name[5:]
        elif name.startswith("workspace:"):
            candidate = self.workspace_dir / name[10:]
        else:
            candidate = Path(name).expanduser()
            if not candidate.is_absolute():
                candidate = self.project_root / candidate
        try:
            curated = self._curated_link(candidate)
            if curated is not None:
                return curated[0]
            resolved = candidate.resolve()
        except OSError:
            return None
        return resolved if self.classify(resolved) is not None else None


def _absolute(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


@functools.lru_cache(maxsize=64)
def _root(path: Path) -> Path:
    """A source root, resolved once: results name their files relative to it on every search."""
    return _absolute(path)


def _is_within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(_root(root))
    except ValueError:
        return False
    return True


def _walk_markdown(root: Path, *, recursive: bool = True) -> Iterator[tuple[str, os.stat_result]]:
    """``*.md`` files under ``root``; symlinks and hidden folders are skipped."""
    stack = [_absolute(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir():
                    if recursive and not entry.name.startswith("."):
                        stack.append(Path(entry.path))
                elif entry.name.lower().endswith(".md") and entry.is_file():
                    yield entry.path, entry.stat()
            except OSError:
                continue


def index_db_path(user: UserPaths, project: ProjectPaths) -> Path:
    """The project's index database, next to :attr:`UserPaths.memory_index_db`."""
    base = user.memory_index_db
    return base.with_name(f"{base.stem}-{project_slug(project.root)}{base.suffix}")


# -- query parsing ---------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_HIRAGANA = re.compile("[\u3040-\u309f]")
_KATAKANA = re.compile("[\u30a0-\u30ff\u31f0-\u31ff]")


def _wordlist(text: str) -> list[str]:
    return text.split()


_EN_STOP = frozenset(
    _wordlist(
        """a an the and or but if of to in on at by for with from as is are was were be been being
        it its this that these those do does did how what when where which who whom why can could
        should would will shall may might must i we you he she they me my our your their them us
        there here not no so than then too very about into over again just any all some have has
        had get got please tell show me up"""
    )
)
# Whole words that carry no topic; 1-2 character ones would otherwise match half the corpus.
_CJK_STOP = frozenset(
    _wordlist(
        """어떻게 무엇 뭐 뭔가 뭐야 무슨 어떤 언제 어디 어디서 누구 누가 왜 그 이 저 것 거 수
        등 및 때 좀 더 잘 했지 했나 있나 있어 있나요 하나 해 돼 되나 알려줘 알려 뭐였지 였지
        방법 우리 내 제 나 는 은 이야
        何 方法 教 どう どこ いつ 誰
        的 了 是 在 和 与 吗 呢 吧 啊 什么 怎么 怎样 如何 为什么 哪 哪个 哪里 谁 我 我们 你
        你们 他 她 它 这 那 这个 那个 有 没有 要 把 被 用 请 一下"""
    )
)
# Chinese function words cut a run of Han characters into content words.
_HAN_BREAKERS = sorted(
    (w for w in _CJK_STOP if all("\u4e00" <= c <= "\u9fff" for c in w)), key=len, reverse=True
)
_HAN_BREAK_SINGLE = frozenset("的了吗呢吧啊")
# Korean particles and verb endings, longest first: "데이터베이스를" also searches "데이터베이스".
_KO_SUFFIXES = sorted(
    _wordlist(
        """에서는 으로는 에게서 까지는 부터는 이라는 이라고 했습니다 합니다 됩니다 하려면 인가요
        라는 에서 으로 에게 한테 까지 부터 처럼 보다 하고 이나 이랑 께서 에는 하는 했던 했다
        하기 하면 해야 해서 되는 됐다 나요 까요 인가 이야 랑 은 는 이 가 을 를 의 에 로 와 과
        도 만 나 할 한 된 야 요 죠"""
    ),
    key=len,
    reverse=True,
)
_EN_SUFFIXES = ("ations", "ation", "ingly", "ings", "ing", "ies", "ied", "ed", "es", "s")


class TermMatch(StrEnum):
    FTS = "fts"  # through the trigram index (3+ characters)
    LIKE = "like"  # substring scan (1-2 character CJK words, 2-letter ASCII words)


@dataclass(frozen=True, slots=True)
class QueryWord:
    """One word of the query and the ways a chunk can match it."""

    surface: str  # lowercased, as typed
    stem: str  # particle / suffix stripped (may equal surface)
    trigrams: tuple[str, ...]  # CJK words of 3+ characters: every 3-gram (SPEC §5 rule 3)
    match: TermMatch
    ascii_bounded: bool = False  # a 2-letter ASCII word matches only as a whole word
    # Han runs of 3+ characters are often several Chinese words written together ("王伟周五发布"):
    # their 2-grams, matched by substring, tell which characters a chunk covers.
    bigrams: tuple[str, ...] = ()

    def fts_terms(self) -> list[str]:
        if self.match is not TermMatch.FTS:
            return []
        terms = [self.stem] if len(self.stem) >= 3 else [self.surface]
        terms.extend(self.trigrams)
        return terms

    def like_terms(self) -> list[str]:
        if self.match is TermMatch.LIKE:
            return [self.stem]
        terms = list(self.bigrams)
        if self.trigrams and len(self.stem) < 3:
            terms.append(self.stem)  # "빌드를": trigram of the word, LIKE of the 2-character stem
        return terms

    def coverage(self, text: str) -> float:
        """How well ``text`` (lowercased) holds this word: 1 whole, partly for n-gram hits."""
        if self.ascii_bounded:
            return 1.0 if _bounded(self.stem).search(text) else 0.0
        if self.stem.isascii():
            # English words match at a word start: "set" finds "settings", not "asset".
            return 1.0 if _word_start(self.stem).search(text) else 0.0
        if self.surface in text or self.stem in text:
            return 1.0
        best = 0.0
        if self.trigrams:
            found = sum(1 for g in self.trigrams if g in text)
            best = 0.8 * found / len(self.trigrams)
        if self.bigrams:
            covered: set[int] = set()
            for i in range(len(self.surface) - 1):
                if self.surface[i : i + 2] in text:
                    covered.update((i, i + 1))
            best = max(best, 0.7 * len(covered) / len(self.surface))
        return best


@dataclass(frozen=True, slots=True)
class QueryPlan:
    text: str
    words: tuple[QueryWord, ...]
    non_cjk_letter_share: float  # 1.0 for English, 0.0 for Korean (SPEC §5 rule 2)

    @property
    def empty(self) -> bool:
        return not self.words

    def fts_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for word in self.words:
            for term in word.fts_terms():
                seen.setdefault(term, None)
        return list(seen)

    def like_terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for word in self.words:
            for term in word.like_terms():
                seen.setdefault(term, None)
        return list(seen)

    def fts_expression(self) -> str | None:
        """An FTS5 MATCH string: every term a quoted phrase, so no query syntax gets through."""
        terms = self.fts_terms()
        if not terms:
            return None
        return " OR ".join(_quote_fts(t) for t in terms)


def _quote_fts(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


@functools.lru_cache(maxsize=512)
def _bounded(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])")


@functools.lru_cache(maxsize=512)
def _word_start(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z0-9]){re.escape(word)}")


def _script(char: str) -> str:
    if not is_cjk_char(char):
        return "latin"
    if _HANGUL.match(char):
        return "hangul"
    if _HIRAGANA.match(char):
        return "hiragana"
    if _KATAKANA.match(char):
        return "katakana"
    return "han"


def _runs(word: str) -> list[tuple[str, str]]:
    """Split a word where the script changes: ``pytest가`` -> pytest, 가."""
    runs: list[tuple[str, str]] = []
    for char in word:
        script = _script(char)
        if runs and runs[-1][0] == script:
            runs[-1] = (script, runs[-1][1] + char)
        else:
            runs.append((script, char))
    return runs


def _split_han(run: str) -> list[str]:
    """Cut a Han run at Chinese function words: 我们的数据库迁移 -> 数据库迁移."""
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(run):
        breaker = next((b for b in _HAN_BREAKERS if run.startswith(b, i)), None)
        if breaker is None and run[i] in _HAN_BREAK_SINGLE:
            breaker = run[i]
        if breaker is not None:
            if current:
                parts.append(current)
            current = ""
            i += len(breaker)
            continue
        current += run[i]
        i += 1
    if current:
        parts.append(current)
    return parts


def _en_stem(word: str) -> str:
    for suffix in _EN_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _ko_stem(word: str) -> str:
    for suffix in _KO_SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)]
    return word


def _cjk_word(run: str, stem: str, *, han: bool = False) -> QueryWord:
    if len(stem) <= 2 and len(run) <= 2:
        return QueryWord(surface=run, stem=stem, trigrams=(), match=TermMatch.LIKE)
    grams = {run[i : i + 3] for i in range(len(run) - 2)}
    grams.update(stem[i : i + 3] for i in range(len(stem) - 2))
    bigrams = tuple(sorted({run[i : i + 2] for i in range(len(run) - 1)})) if han else ()
    return QueryWord(
        surface=run,
        stem=stem,
        trigrams=tuple(sorted(grams)),
        match=TermMatch.FTS,
        bigrams=bigrams,
    )


def parse_query(query: str) -> QueryPlan:
    """Turn user text into words to match; never raises, whatever the text holds."""
    text = unicodedata.normalize("NFKC", query).lower()
    letters = [c for c in text if c.isalpha()]
    share = sum(1 for c in letters if not is_cjk_char(c)) / len(letters) if letters else 1.0
    words: list[QueryWord] = []
    dropped: list[QueryWord] = []  # stop words, used only if nothing else is left
    for token in _WORD.findall(text):
        runs = _runs(token)
        mixed = len(runs) > 1
        for script, run in runs:
            for word, stop in _words_of_run(script, run, attached=mixed):
                (dropped if stop else words).append(word)
    if not words:
        words = dropped
    unique: dict[tuple[str, str], QueryWord] = {}
    for word in words:
        unique.setdefault((word.surface, word.stem), word)
    return QueryPlan(text=query, words=tuple(unique.values()), non_cjk_letter_share=share)


def _words_of_run(script: str, run: str, *, attached: bool) -> list[tuple[QueryWord, bool]]:
    """The query words of one single-script run, each with a flag "is a stop word"."""
    out: list[tuple[QueryWord, bool]] = []
    match script:
        case "latin":
            if len(run) < 2 and not run.isdigit():
                return out
            stop = run in _EN_STOP
            if len(run) == 2:
                word = QueryWord(run, run, (), TermMatch.LIKE, ascii_bounded=run.isascii())
            else:
                word = QueryWord(run, _en_stem(run), (), TermMatch.FTS)
            out.append((word, stop))
        case "hangul":
            stem = _ko_stem(run)
            # A lone syllable stuck to a Latin word ("pytest가") is a particle.
            stop = run in _CJK_STOP or stem in _CJK_STOP or (attached and len(run) == 1)
            out.append((_cjk_word(run, stem), stop))
        case "hiragana":
            # Hiragana runs in a query are particles and okurigana: keep them only as a fallback.
            out.append((_cjk_word(run, run), True))
        case "han":
            parts = _split_han(run)
            for part in parts:
                out.append((_cjk_word(part, part, han=True), part in _CJK_STOP))
            if not parts:  # the run is a function word: kept only as a fallback
                out.append((_cjk_word(run, run), True))
        case _:  # katakana
            out.append((_cjk_word(run, run), run in _CJK_STOP))
    return out


# -- results ---------------------------------------------------------------------------------


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    KEYWORD_ONLY = "keyword-only"


class MatchKind(StrEnum):
    KEYWORD = "keyword"  # matched through the trigram index
    SUBSTRING = "substring"  # only through the LIKE fallback for short words
    VECTOR = "vector"  # no keyword matched; found by meaning


@dataclass(frozen=True, slots=True)
class SearchResult:
    path: str  # display name: project-relative, or "user:..." / "workspace:..."
    abs_path: str
    start_line: int
    end_line: int
    score: float
    keyword_score: float
    vector_score: float | None  # None when this chunk was ranked without a vector
    snippet: str
    text: str
    match: MatchKind
    keyword_only: bool  # ranked by keywords alone (no model, or its vector is pending)

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    results: tuple[SearchResult, ...]
    mode: SearchMode
    note: str  # why keyword-only, or how many vectors are still being computed
    model_id: str
    vector_weight: float  # the weights actually used for this query (after rule 2)
    keyword_weight: float
    pending_vectors: int = 0

    @property
    def keyword_only(self) -> bool:
        return self.mode is SearchMode.KEYWORD_ONLY


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


# -- the vector matrix -----------------------------------------------------------------------


class _VectorMatrix:
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
        result: NDArray[np.float32] = self.matrix @ query
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


# -- the substring scan ----------------------------------------------------------------------


class _Haystack:
    """Every chunk's text, lowercased, joined into one string: the LIKE of SPEC §5 rule 3.

    The trigram index cannot see words of one or two characters, and a LIKE over the table reads
    every page of it (some 60 ms for 10,000 chunks); ``str.find`` over one string in memory
    does the same substring scan in a few. It costs about the indexed text's size in memory,
    is built on the first short-word query, and is dropped whenever the chunks change.
    """

    MAX_HITS = 200_000  # a runaway one-character term stops counting here

    def __init__(self, rows: Iterable[tuple[int, str]]) -> None:
        parts: list[str] = []
        self.ids: list[int] = []
        self.starts: list[int] = []
        position = 0
        for chunk_id, text in rows:
            lowered = text.lower()
            self.ids.append(chunk_id)
            self.starts.append(position)
            parts.append(lowered)
            position += len(lowered) + 1
        self.text = "\x00".join(parts)

    def nominate(self, terms: Sequence[str], pool: int) -> list[int]:
        """The ``pool`` chunks with the most occurrences of the terms."""
        counts: Counter[int] = Counter()
        hits = 0
        for term in terms:
            needle = term.lower()
            at = self.text.find(needle)
            while at != -1 and hits < self.MAX_HITS:
                counts[self.ids[bisect.bisect_right(self.starts, at) - 1]] += 1
                hits += 1
                at = self.text.find(needle, at + len(needle))
        return [chunk_id for chunk_id, _n in counts.most_common(pool)]


# -- the index -------------------------------------------------------------------------------

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


@dataclass(slots=True)
class _FileRow:
    kind: str
    hash: str
    mtime_ns: int
    size: int


@dataclass(slots=True)
class _Candidate:
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    text: str
    rank: float | None = None  # FTS5 bm25 (negative, lower is better); None: no FTS hit
    vector: float | None = None  # cosine; None: no vector yet
    keyword: float = 0.0
    substring: bool = False
    score: float = 0.0
    decayed_keyword: float = 0.0
    coverage: float = 0.0  # share of the query's words the chunk holds
    tokens: frozenset[str] = field(default_factory=frozenset)


class MemoryIndex:
    """Hybrid search over the memory files of one project.

    Thread-safe: the watcher, the embedding worker and searches may run on different threads.
    Open with :meth:`open` (or :func:`shared_index` to share one per project in a process);
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
        self._background = background
        self._lock = threading.RLock()  # the connection, the file mirror, the matrix
        self._sync_lock = threading.Lock()  # one reconcile at a time
        self._files: dict[str, _FileRow] = {}
        self._matrix: _VectorMatrix | None = None
        self._hay: _Haystack | None = None
        self._dirty = True
        self._last_reconcile = 0.0
        self._data_version = -1
        self._vector_failure = ""  # permanent: the model cannot run (keyword-only)
        self._last_error = ""  # the latest transient problem (shown in status)
        self._worker: threading.Thread | None = None
        self._vectors_idle = threading.Event()
        self._vectors_idle.set()
        # True once every chunk is known to have a vector; spares searches a count query.
        self._vectors_complete = False
        self._closed = False
        self.rebuilt = ""
        self._query_cache: dict[str, NDArray[np.float32]] = {}
        self._conn = self._connect()

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

    def _connect(self) -> sqlite3.Connection:
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._open_db()
        except sqlite3.DatabaseError as exc:
            # The index is a cache: a damaged file is moved aside and rebuilt from the sources.
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise SearchIndexError(f"the search index {self.db_path} is locked: {exc}") from exc
            self._set_aside()
            try:
                conn = self._open_db()
            except sqlite3.Error as again:
                raise SearchIndexError(
                    f"cannot open the search index {self.db_path}: {again}"
                ) from again
            self.rebuilt = f"the old index was unreadable ({exc}) and was rebuilt"
        except OSError as exc:
            raise SearchIndexError(
                f"cannot create the search index folder {self.db_path.parent}: {exc.strerror}"
            ) from exc
        return conn

    def _open_db(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.db_path, timeout=10.0, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'abc'")
            self._check_meta(conn)
            self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _set_aside(self) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            path = Path(f"{self.db_path}{suffix}")
            if path.exists():
                with contextlib.suppress(OSError):
                    path.replace(path.with_name(f"{path.name}.broken-{stamp}"))

    def _expected_meta(self) -> dict[str, str]:
        return {
            "schema": str(SCHEMA_VERSION),
            "embedding_model": self.embedder.model_id,
            "chunk_tokens": str(self.settings.chunk_tokens),
            "chunk_overlap_tokens": str(self.settings.chunk_overlap_tokens),
            # How files are cut; a new rule rebuilds indexes made with the old one.
            "chunking": CHUNKING_VERSION,
        }

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        stored = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        expected = self._expected_meta()
        if stored == expected:
            return
        if stored.get("schema") not in (None, expected["schema"]):
            conn.executescript(
                "DROP TABLE IF EXISTS embeddings; DROP TABLE IF EXISTS meta;"
                + "".join(f"DROP TABLE IF EXISTS {t};" for t in _REBUILT_TABLES)
            )
            conn.executescript(_SCHEMA)
        if stored:
            changed = [k for k in expected if stored.get(k) != expected[k]]
            self.rebuilt = "rebuilt: " + ", ".join(
                f"{k} changed from {stored.get(k, '?')} to {expected[k]}" for k in changed
            )
        self._drop_content(conn)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM meta")
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", expected.items())
        conn.execute("COMMIT")

    @staticmethod
    def _drop_content(conn: sqlite3.Connection) -> None:
        """Empty files, chunks and FTS; the embedding cache survives a rebuild."""
        conn.executescript("".join(f"DROP TABLE IF EXISTS {t};" for t in _REBUILT_TABLES))
        conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._closed = True
        worker = self._worker
        if worker is not None and worker.is_alive() and worker is not threading.current_thread():
            worker.join(timeout=30)
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
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
                    self._drop_content(self._conn)
                    self._files.clear()
                    self._hay = None
                    if self._matrix is not None:
                        self._matrix = _VectorMatrix()
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
        self._start_vectors()
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
        self._start_vectors()
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
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if self._files and version == self._data_version:
                return
            if version != self._data_version:
                self._matrix = None  # another process wrote: reload vectors lazily
                self._hay = None
                self._vectors_complete = False
            self._data_version = version
            rows = self._conn.execute("SELECT path, kind, hash, mtime_ns, size FROM files")
            self._files = {r[0]: _FileRow(r[1], r[2], r[3], r[4]) for r in rows}

    def _remove(self, path: str) -> bool:
        with self._lock:
            with self._transaction() as conn:
                ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,))]
                conn.execute("DELETE FROM chunks WHERE path=?", (path,))
                gone = conn.execute("DELETE FROM files WHERE path=?", (path,)).rowcount
            self._files.pop(path, None)
            self._hay = None
            if self._matrix is not None:
                self._matrix.remove(ids)
            return bool(gone or ids)

    def _index_source(self, src: SourceFile) -> str:
        """Index one file; returns "indexed", "unchanged" or "skipped <reason>"."""
        if src.size > MAX_FILE_BYTES:
            self._remove(src.path)
            return f"skipped larger than {MAX_FILE_BYTES // (1024 * 1024)} MB"
        try:
            data = Path(src.path).read_bytes()
        except FileNotFoundError:
            self._remove(src.path)
            return "removed"
        except OSError as exc:
            return f"skipped {exc.strerror}"
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            row = self._files.get(src.path)
        if row is not None and row.hash == digest and row.kind == src.kind:
            with self._lock, self._transaction() as conn:
                conn.execute(
                    "UPDATE files SET mtime_ns=?, size=? WHERE path=?",
                    (src.mtime_ns, src.size, src.path),
                )
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
        model = self.embedder.model_id
        with self._lock:
            with self._transaction() as conn:
                old_ids = [
                    r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (src.path,))
                ]
                conn.execute("DELETE FROM chunks WHERE path=?", (src.path,))
                conn.executemany(
                    "INSERT INTO chunks(path, start_line, end_line, hash, text) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [(src.path, c.start_line, c.end_line, c.hash, c.text) for c in chunks],
                )
                conn.execute(
                    "INSERT INTO files(path, kind, hash, mtime_ns, size) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT(path) DO UPDATE SET kind=excluded.kind, hash=excluded.hash, "
                    "mtime_ns=excluded.mtime_ns, size=excluded.size",
                    (src.path, src.kind.value, digest, src.mtime_ns, src.size),
                )
                cached: list[tuple[int, bytes]] = []
                if self.embedder.enabled and chunks:
                    conn.execute(
                        "UPDATE embeddings SET used_at=? WHERE model=? AND hash IN "
                        "(SELECT hash FROM chunks WHERE path=?)",
                        (time.time(), model, src.path),
                    )
                    cached = conn.execute(
                        "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
                        "ON e.model=? AND e.hash=c.hash WHERE c.path=?",
                        (model, src.path),
                    ).fetchall()
            self._files[src.path] = _FileRow(src.kind.value, digest, src.mtime_ns, src.size)
            self._vectors_complete = False
            self._hay = None
            if self._matrix is not None:
                self._matrix.remove(old_ids)
                self._matrix.add(_decode_rows(cached))

    def _prune_cache(self) -> None:
        cutoff = time.time() - CACHE_KEEP_S
        with self._lock, contextlib.suppress(SearchIndexError), self._transaction() as conn:
            conn.execute(
                "DELETE FROM embeddings WHERE used_at < ? "
                "AND hash NOT IN (SELECT hash FROM chunks)",
                (cutoff,),
            )

    # -- vectors -------------------------------------------------------------------------

    def _start_vectors(self) -> None:
        """Start the background embedding thread if chunks lack vectors."""
        if not self.embedder.enabled or self._vector_failure or self._closed:
            return
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return
            if not self._pending_count():
                self._vectors_complete = True
                return
            self._vectors_idle.clear()
            if not self._background:
                self._worker = None
        if not self._background:
            self._embed_pending()
            return
        worker = threading.Thread(
            target=self._embed_pending, name="agentsh-memory-embed", daemon=True
        )
        self._worker = worker
        worker.start()

    def _pending_count(self) -> int:
        if not self.embedder.enabled:
            return 0
        with self._lock:
            if self._vectors_complete:
                return 0
            row = self._conn.execute(
                "SELECT count(*) FROM (SELECT DISTINCT hash FROM chunks) c WHERE NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.model=? AND e.hash=c.hash)",
                (self.embedder.model_id,),
            ).fetchone()
        return int(row[0])

    def _embed_pending(self) -> None:
        """Embed every chunk that has no vector yet, batch by batch, outside the lock."""
        model = self.embedder.model_id
        batch = max(1, self.settings.embedding_batch)
        try:
            while not self._closed:
                with self._lock:
                    # Similar lengths in one batch: less padding for the model to chew.
                    rows = self._conn.execute(
                        "SELECT c.hash, min(c.text) AS t FROM chunks c LEFT JOIN embeddings e "
                        "ON e.model=? AND e.hash=c.hash WHERE e.hash IS NULL "
                        "GROUP BY c.hash ORDER BY length(t) LIMIT ?",
                        (model, batch),
                    ).fetchall()
                    if not rows:
                        self._vectors_complete = True
                        break
                try:
                    vectors = self.embedder.embed([r[1] for r in rows])
                except EmbeddingUnavailable as exc:
                    self._vector_failure = str(exc)
                    break
                except EmbeddingError as exc:
                    self._last_error = str(exc)
                    break  # retried after the next sync
                self._store_vectors([r[0] for r in rows], vectors)
        except (sqlite3.Error, SearchIndexError) as exc:
            self._last_error = f"embedding worker stopped: {exc}"
        finally:
            self._vectors_idle.set()

    def _store_vectors(self, hashes: list[str], vectors: NDArray[np.float32]) -> None:
        model = self.embedder.model_id
        now = time.time()
        dims = int(vectors.shape[1]) if vectors.ndim == 2 else 0
        with self._lock:
            if self._closed:
                return
            with self._transaction() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO embeddings(model, hash, dims, vector, used_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    [
                        (model, h, dims, vectors[i].astype("<f4").tobytes(), now)
                        for i, h in enumerate(hashes)
                    ],
                )
                marks = ",".join("?" * len(hashes))
                ids = conn.execute(
                    f"SELECT id, hash FROM chunks WHERE hash IN ({marks})", hashes
                ).fetchall()
            if self._matrix is not None:
                position = {h: i for i, h in enumerate(hashes)}
                self._matrix.add((cid, vectors[position[h]]) for cid, h in ids)

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Block until the background embedding is idle; True if it is."""
        return self._vectors_idle.wait(timeout)

    def _ensure_matrix(self) -> _VectorMatrix:
        with self._lock:
            if self._matrix is None:
                matrix = _VectorMatrix()
                rows = self._conn.execute(
                    "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
                    "ON e.model=? AND e.hash=c.hash",
                    (self.embedder.model_id,),
                ).fetchall()
                matrix.add(_decode_rows(rows))
                self._matrix = matrix
            return self._matrix

    # -- status --------------------------------------------------------------------------

    def mode(self) -> tuple[SearchMode, str]:
        if not self.embedder.enabled:
            return SearchMode.KEYWORD_ONLY, "keyword-only: embeddings are off (search.embedding)"
        if self._vector_failure:
            return SearchMode.KEYWORD_ONLY, f"keyword-only: {self._vector_failure}"
        return SearchMode.HYBRID, ""

    def status(self) -> IndexStatus:
        with self._lock:
            files = self._conn.execute("SELECT count(*) FROM files").fetchone()[0]
            chunks = self._conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            vectors = self._conn.execute(
                "SELECT count(*) FROM chunks c JOIN embeddings e ON e.model=? AND e.hash=c.hash",
                (self.embedder.model_id,),
            ).fetchone()[0]
        mode, note = self.mode()
        return IndexStatus(
            db_path=str(self.db_path),
            files=int(files),
            chunks=int(chunks),
            vectors=int(vectors),
            pending_vectors=self._pending_count(),
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
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
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
            self._vector_failure = str(exc)
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
        vector_w = max(0.0, self.settings.vector_weight) if vectors else 0.0
        keyword_w = max(0.0, self.settings.keyword_weight)
        if not self.embedder.multilingual:
            vector_w *= plan.non_cjk_letter_share
        total = vector_w + keyword_w
        if total <= 0:
            return 0.0, 1.0
        return vector_w / total, keyword_w / total

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
        pending = self._pending_count() if mode is SearchMode.HYBRID else 0
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
        self._score(plan, candidates, vector_w, keyword_w)
        if settings.temporal_decay:
            self._decay(candidates)
        # The minimum is met by the fused score or by the keyword score alone (SPEC §5 rule 1).
        passing = [c for c in candidates if c.score >= floor or c.decayed_keyword >= floor]
        passing.sort(key=lambda c: (-c.score, c.path, c.start_line))
        if settings.mmr and len(passing) > 1:
            passing = _mmr(passing, settings.mmr_lambda, k)
        results = tuple(self._result(plan, c, qvec is not None) for c in passing[:k])
        return SearchResponse(
            query, results, mode, note, self.embedder.model_id, vector_w, keyword_w, pending
        )

    def _candidates(
        self, plan: QueryPlan, qvec: NDArray[np.float32] | None, pool: int
    ) -> list[_Candidate]:
        with self._lock:
            conn = self._conn
            ranks: dict[int, float] = {}
            expression = plan.fts_expression()
            if expression:
                # Every match with its rank, in one query: FTS5 computes BM25 for every match
                # even under ORDER BY ... LIMIT, and a later "rowid IN (...)" lookup re-runs the
                # whole match, so this is the cheapest way to give every nominee its rank.
                ranks = dict(
                    conn.execute(
                        "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ?",
                        (expression,),
                    ).fetchall()
                )
            nominated = set(heapq.nsmallest(pool, ranks, key=ranks.__getitem__))
            like_terms = plan.like_terms()
            if like_terms and len(ranks) < pool:
                # With a full pool of real matches a substring-only chunk could not place
                # (it ranks below all of them), so the scan is only needed when they are few.
                nominated.update(self._haystack().nominate(like_terms, pool))
            cosines: dict[int, float] = {}
            matrix: _VectorMatrix | None = None
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
            out: list[_Candidate] = []
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                query = (
                    f"SELECT id, path, start_line, end_line, text FROM chunks WHERE id IN ({marks})"
                )
                for cid, path, start_line, end_line, text in conn.execute(query, part):
                    out.append(
                        _Candidate(
                            chunk_id=cid,
                            path=path,
                            start_line=start_line,
                            end_line=end_line,
                            text=text,
                            rank=ranks.get(cid),
                            vector=cosines.get(cid),
                        )
                    )
            return out

    def _haystack(self) -> _Haystack:
        """Every chunk's lowercased text in memory, for the 1-2 character substring scan."""
        with self._lock:
            if self._hay is None:
                self._hay = _Haystack(self._conn.execute("SELECT id, text FROM chunks"))
            return self._hay

    def _score(
        self, plan: QueryPlan, candidates: list[_Candidate], vector_w: float, keyword_w: float
    ) -> None:
        words = plan.words
        real: list[float] = []
        for c in candidates:
            lowered = unicodedata.normalize("NFKC", c.text).lower()
            coverage = sum(w.coverage(lowered) for w in words) / len(words) if words else 0.0
            c.coverage = coverage
            if c.rank is not None:
                bm25 = abs(c.rank) / (1.0 + abs(c.rank))
                c.keyword = _keyword_score(bm25, coverage)
                real.append(c.keyword)
            elif coverage > 0:
                c.substring = True
                count = sum(lowered.count(w.stem) for w in words if w.stem)
                density = count / (count + 1.0)
                c.keyword = coverage * (0.8 + 0.2 * density)
        # Ranked below every real match, whatever it scored (SPEC §5 rule 3).
        ceiling = min(real) * 0.99 if real else LIKE_ONLY_CEILING
        for c in candidates:
            if c.substring:
                c.keyword = min(c.keyword * LIKE_ONLY_CEILING, ceiling)
            vector = max(0.0, c.vector) if c.vector is not None else 0.0
            c.score = _fuse(vector, c.keyword, vector_w, keyword_w)
            c.decayed_keyword = c.keyword

    def _decay(self, candidates: list[_Candidate]) -> None:
        half_life = max(self.settings.half_life_days, 1e-6)
        now = time.time()
        with self._lock:
            mtimes = {p: row.mtime_ns for p, row in self._files.items()}
        for c in candidates:
            name = Path(c.path).name
            if name in CURATED_NAMES:
                continue
            stamp = _date_in_name(name)
            if stamp is None:
                mtime = mtimes.get(c.path)
                if mtime is None:
                    continue
                stamp = mtime / 1e9
            age_days = max(0.0, (now - stamp) / 86400.0)
            factor = math.exp(-math.log(2) * age_days / half_life)
            c.score *= factor
            c.decayed_keyword = c.keyword * factor

    def _result(self, plan: QueryPlan, c: _Candidate, hybrid: bool) -> SearchResult:
        if c.rank is not None:
            match = MatchKind.KEYWORD
        elif c.substring:
            match = MatchKind.SUBSTRING
        else:
            match = MatchKind.VECTOR
        return SearchResult(
            path=self.sources.display(c.path),
            abs_path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            score=round(c.score, 4),
            keyword_score=round(c.keyword, 4),
            vector_score=round(max(0.0, c.vector), 4) if c.vector is not None else None,
            snippet=make_snippet(c.text, plan),
            text=c.text,
            match=match,
            keyword_only=not hybrid or c.vector is None,
        )


def _keyword_score(bm25: float, coverage: float) -> float:
    """SPEC §5's BM25 mapping |r| / (1 + |r|), tempered by how much of the query the chunk holds.

    ``coverage`` is the share of query words the chunk really contains (English words at a word
    start, CJK words whole or by n-grams). The trigram index matches substrings anywhere, so
    "miss" finds "permission": a chunk holding none of the query's words scores 0 however BM25
    ranked it, and a partial match is scaled down. FTS5's BM25 also gives a term found in more
    than half of the chunks an IDF of ~0, so in a small memory a chunk holding every query word
    could score 0: the floor of 0.6 x coverage keeps it in reach of the minimum score.
    """
    if coverage <= 0:
        return 0.0
    return max(bm25 * (0.6 + 0.4 * coverage), 0.6 * coverage)


def _fuse(vector: float, keyword: float, vector_w: float, keyword_w: float) -> float:
    return vector_w * vector + keyword_w * keyword


def _decode_rows(rows: Iterable[tuple[int, bytes]]) -> list[tuple[int, NDArray[np.float32]]]:
    import numpy as np

    return [(cid, np.frombuffer(blob, dtype="<f4").astype(np.float32)) for cid, blob in rows]


_DATE_IN_NAME = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def _date_in_name(name: str) -> float | None:
    """A YYYY-MM-DD date in a file name, as a UTC timestamp."""
    match = _DATE_IN_NAME.search(name)
    if match is None:
        return None
    import calendar

    try:
        year, month, day = (int(g) for g in match.groups())
        return float(calendar.timegm((year, month, day, 0, 0, 0)))
    except (ValueError, OverflowError):
        return None


def _tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFC", text).lower()))


def _mmr(candidates: list[_Candidate], lam: float, k: int) -> list[_Candidate]:
    """Maximal marginal relevance: relevance against the Jaccard overlap with the picks."""
    scores = [c.score for c in candidates]
    low, high = min(scores), max(scores)
    span = high - low
    for c in candidates:
        c.tokens = _tokens(c.text)
    relevance = {id(c): (c.score - low) / span if span > 0 else 1.0 for c in candidates}
    picked: list[_Candidate] = []
    rest = list(candidates)
    while rest and len(picked) < k:
        best = max(
            rest,
            key=lambda c: (
                lam * relevance[id(c)]
                - (1 - lam) * max((_jaccard(c.tokens, p.tokens) for p in picked), default=0.0),
                c.score,
            ),
        )
        picked.append(best)
        rest.remove(best)
    return picked + rest


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def make_snippet(text: str, plan: QueryPlan, limit: int = SNIPPET_CHARS) -> str:
    """The lines around the first keyword hit (or the chunk's start), at most ``limit`` chars."""
    lines = text.splitlines() or [text]
    needles = [w.stem for w in plan.words if w.stem] + [g for w in plan.words for g in w.trigrams]
    hit = 0
    for i, line in enumerate(lines):
        lowered = line.lower()
        if any(n in lowered for n in needles):
            hit = i
            break
    else:
        while hit < len(lines) - 1 and not lines[hit].strip():
            hit += 1
    start = max(0, hit - 1) if hit > 0 and len(lines[hit]) < limit // 2 else hit
    snippet = " ".join(s.strip() for s in lines[start : start + 4] if s.strip())
    if len(snippet) > limit:
        snippet = snippet[: limit - 1].rstrip() + "…"
    return snippet


# -- sharing one index per project in a process ----------------------------------------------

_shared: dict[str, MemoryIndex] = {}
_shared_lock = threading.Lock()


def shared_index(
    user: UserPaths,
    project: ProjectPaths,
    settings: SearchSettings,
    *,
    api_base: str | None = None,
    include_project: bool = True,
) -> MemoryIndex:
    """One :class:`MemoryIndex` per project and process (tool, pane and watcher share it).

    Opening does not sync; the first search reconciles.
    """
    key = str(index_db_path(user, project))
    with _shared_lock:
        index = _shared.get(key)
        wanted = MemorySources.for_project(user, project, include_project=include_project)
        if index is None or index._closed or index.settings != settings or index.sources != wanted:
            if index is not None and not index._closed:
                index.close()
            index = MemoryIndex.open(
                user, project, settings, api_base=api_base, include_project=include_project
            )
            _shared[key] = index
        return index


def close_shared() -> None:
    with _shared_lock:
        for index in _shared.values():
            index.close()
        _shared.clear()
