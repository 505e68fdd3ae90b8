"""``agentsh memory search QUERY [-k N] [--json]`` and ``agentsh memory reindex [--full]``.

Both open the project's search index and bring it up to date first (unchanged files are skipped
by hash, so this is quick); meanwhile ``search`` loads the embedding model and embeds the query
in a thread (a query asked before finds its vector on disk instead: no model to load, see
:mod:`agentsh.memory.query_vectors`). ``search`` then waits a bounded time for vectors still being
computed (a first run over a large memory prints its progress on stderr and, past the wait,
searches with what it has and says so), and prints each result's path, lines, score, keyword
and vector parts and a snippet; when no embedding model runs it says "keyword-only" and why.
``reindex`` waits for every vector, showing a progress line on a terminal.

A search first asks the user's warm search process (:mod:`agentsh.commands.search_server`),
which has the model loaded and the index open; the first search, or one it cannot answer
exactly, runs here as above and then starts that process (unless ``search.warm_process_s`` is 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agentsh.commands import search_server
from agentsh.errors import EXIT_OK, CliError

if TYPE_CHECKING:
    from agentsh.config import Environment
    from agentsh.memory.index import MemoryIndex
    from agentsh.memory.ranking import SearchResponse

# How long `memory search` waits for vectors before searching with what it has.
SEARCH_VECTOR_WAIT_S = 20.0


def search_warm(args: argparse.Namespace) -> bool:
    """Print the warm search process's answer and say True, or say False (none runs, or it
    cannot answer this exactly: :func:`search_memory` searches here). Light on purpose:
    ``cli.main`` calls it before the trust check and before anything heavy is imported, and
    the process checks the folder's trust and the user's config itself."""
    query, k, as_json = _request(args)
    answered = search_server.ask(Path.cwd(), query, k, as_json)
    if answered is None:
        return False
    sys.stderr.write(answered.stderr)
    print(answered.stdout, end="")
    return True


def _request(args: argparse.Namespace) -> tuple[str, int | None, bool]:
    query = str(getattr(args, "query", "") or "")
    if not query.strip():
        raise CliError("the search query is empty")
    k = getattr(args, "k", None)
    if k is not None and k < 1:
        raise CliError("-k must be 1 or more")
    return query, k, bool(getattr(args, "json", False))


def search_memory(args: argparse.Namespace) -> int:
    """The search in this process (after :func:`search_warm` said False); then, unless the
    user turned it off, the warm process is started for the searches that follow."""
    import sqlite3
    import threading

    from agentsh.memory.index import SearchIndexError
    from agentsh.memory.query_vectors import RememberingEmbedder

    query, k, as_json = _request(args)
    env = _environment()
    index = _open(env, remember_queries=True)
    # The model loads and the query is embedded while the index is brought up to date.
    early = threading.Thread(target=index.warm_up, args=(query,), name="query", daemon=True)
    early.start()
    try:
        _sync(index, progress=not as_json)
        _wait_for_vectors(index, timeout=SEARCH_VECTOR_WAIT_S, progress=not as_json)
        early.join()
        response = index.search(query, max_results=k)
    except (SearchIndexError, sqlite3.Error) as exc:
        raise CliError(_index_failure(index, exc)) from exc
    finally:
        index.close()
        if isinstance(index.embedder, RememberingEmbedder):
            index.embedder.close()
    if as_json:
        print(json.dumps(response_json(response), ensure_ascii=False, indent=2))
    else:
        for line in format_response(response):
            print(line)
    if isinstance(index.embedder, RememberingEmbedder) and not response.keyword_only:
        # The local model ran: the next search can be answered by a process that keeps it.
        search_server.start_unless_running(env.user, env.settings.search.warm_process_s)
    return EXIT_OK


def reindex_memory(args: argparse.Namespace) -> int:
    import sqlite3

    from agentsh.memory.index import SearchIndexError

    full = bool(getattr(args, "full", False))
    index = _open(_environment())
    try:
        report = _sync(index, full=full, progress=True)
        _wait_for_vectors(index, timeout=None, progress=True)
        status = index.status()
    except (SearchIndexError, sqlite3.Error) as exc:
        raise CliError(_index_failure(index, exc)) from exc
    finally:
        index.close()
    if getattr(args, "json", False):
        print(
            json.dumps(
                {
                    "indexed": list(report.indexed),
                    "removed": list(report.removed),
                    "unchanged": report.unchanged,
                    "skipped": list(report.skipped),
                    "rebuilt": report.rebuilt,
                    "files": status.files,
                    "chunks": status.chunks,
                    "vectors": status.vectors,
                    "model": status.model_id,
                    "mode": status.mode.value,
                    "note": status.note,
                    "database": status.db_path,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return EXIT_OK
    if report.rebuilt:
        print(report.rebuilt)
    print(
        f"indexed {len(report.indexed)} file(s), removed {len(report.removed)}, "
        f"{report.unchanged} unchanged, in {report.seconds:.2f} s; "
        f"{status.files} file(s), {status.chunks} chunk(s)"
    )
    for line in report.skipped:
        print(f"skipped {line}")
    if status.note:
        print(status.note)
    else:
        print(f"vectors: {status.vectors}/{status.chunks} ({status.model_id})")
    if status.last_error:
        print(f"warning: {status.last_error}", file=sys.stderr)
    return EXIT_OK


# -- output ---------------------------------------------------------------------------------


def format_response(response: SearchResponse) -> list[str]:
    lines: list[str] = []
    if response.keyword_only:
        lines.append(response.note or "keyword-only")
    elif response.note:
        lines.append(response.note)
    if not response.results:
        lines.append(f'no memory matched "{response.query}"')
        return lines
    for number, r in enumerate(response.results, start=1):
        parts = [f"keyword {r.keyword_score:.2f}"]
        parts.append(f"vector {r.vector_score:.2f}" if r.vector_score is not None else "no vector")
        lines.append(f"{number}. {r.path}:{r.lines}  score {r.score:.2f}  ({', '.join(parts)})")
        lines.append(f"   {r.snippet}")
    return lines


def response_json(response: SearchResponse) -> dict[str, Any]:
    return {
        "query": response.query,
        "mode": response.mode.value,
        "keyword_only": response.keyword_only,
        "note": response.note,
        "model": response.model_id,
        "weights": {"vector": response.vector_weight, "keyword": response.keyword_weight},
        "pending_vectors": response.pending_vectors,
        "results": [
            {
                "path": r.path,
                "abs_path": r.abs_path,
                "start_line": r.start_line,
                "end_line": r.end_line,
                "score": r.score,
                "keyword_score": r.keyword_score,
                "vector_score": r.vector_score,
                "match": r.match.value,
                "keyword_only": r.keyword_only,
                "snippet": r.snippet,
            }
            for r in response.results
        ],
    }


# -- helpers --------------------------------------------------------------------------------


def _index_failure(index: MemoryIndex, exc: Exception) -> str:
    """One line for the user; a database error (locked, damaged) says which file and the fix."""
    from agentsh.memory.index import SearchIndexError

    if isinstance(exc, SearchIndexError):
        return str(exc)
    return (
        f"the search index {index.db_path} failed ({exc}); try again, or rebuild it with "
        "`agentsh memory reindex --full`"
    )


def _environment() -> Environment:
    from agentsh.config import load_environment

    env = load_environment()
    sys.stderr.write(problem_lines(env))
    return env


def problem_lines(env: Environment) -> str:
    """The warnings about the configuration every memory command prints first."""
    return "".join(f"agentsh: warning: {problem}\n" for problem in env.config.problems)


def _open(env: Environment, *, remember_queries: bool = False) -> MemoryIndex:
    """The project's index; ``remember_queries``: query vectors are kept on disk
    (:mod:`agentsh.memory.query_vectors`), so a query asked again needs no model load."""
    from agentsh.memory.embeddings import make_embedder
    from agentsh.memory.index import MemoryIndex, SearchIndexError
    from agentsh.memory.query_vectors import remembering

    settings = env.settings.search
    embedder = make_embedder(settings)
    if remember_queries:
        embedder = remembering(embedder, env.user.cache_dir)
    try:
        # The user searching is the user looking (as `memory list`): the folder's memory is
        # searched even before it is trusted; a session would not see it until then.
        return MemoryIndex.open(env.user, env.project, settings, embedder=embedder)
    except SearchIndexError as exc:
        raise CliError(str(exc)) from exc


def _sync(index: MemoryIndex, *, full: bool = False, progress: bool) -> Any:
    line = _ProgressLine(sys.stderr if progress else None)

    def show(done: int, total: int, path: str) -> None:
        line.show(f"indexing {done}/{total} {index.sources.display(path)}")

    try:
        return index.sync(full=full, progress=show)
    finally:
        line.clear()


def _wait_for_vectors(index: MemoryIndex, *, timeout: float | None, progress: bool) -> None:
    line = _ProgressLine(sys.stderr if progress else None)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while not index.wait_for_vectors(0.5):
            status = index.status()
            line.show(f"embedding: {status.vectors}/{status.chunks} chunks have vectors")
            if deadline is not None and time.monotonic() > deadline:
                return
    finally:
        line.clear()


class _ProgressLine:
    """One line rewritten in place on a terminal; nothing when not a terminal."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream if stream is not None and stream.isatty() else None
        self._width = 0

    def show(self, text: str) -> None:
        if self._stream is None:
            return
        text = text[:100]
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        if self._stream is not None and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
