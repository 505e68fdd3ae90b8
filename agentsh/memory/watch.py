"""Keeping the memory search index fresh while agentsh runs (SPEC §5 "Freshness").

:class:`MemoryWatcher` follows the memory folders and the workspace with watchfiles' ``awatch``
and, a moment after files stop changing (at most ``search.reindex_debounce_s`` after the first
change of a burst, so well within the 1.5 s goal), reconciles the index on a worker thread and
announces what changed as an :class:`~agentsh.events.IndexUpdated` to a callback (the memory
pane). It reconciles once when it starts, picks up folders that appear later (a project gets
``.agentsh/memory/`` on its first memory write), and survives errors: each one is logged, kept
in :attr:`MemoryWatcher.last_error`, and the watch restarts after a short backoff. It never
stops silently, and a search reconciles on its own anyway, so a dead watcher cannot make search
return stale results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from agentsh.events import IndexUpdated
from agentsh.memory.index import MemoryIndex, SearchIndexError, SyncReport

log = logging.getLogger(__name__)

# How often the watcher looks for the memory folders while none of them exists yet.
ROOT_POLL_S = 2.0
# The longest the native watcher blocks without an event; also how long a stop can take.
WAKE_MS = 300
# The quiet time after a change before it is indexed: groups an editor's write-and-rename.
SETTLE_MS = 100
MAX_BACKOFF_S = 30.0

UpdateCallback = Callable[[IndexUpdated], None]


class MemoryWatcher:
    """Reindexes changed memory files in the background and announces each reindex."""

    def __init__(
        self,
        index: MemoryIndex,
        *,
        on_update: UpdateCallback | None = None,
        debounce_s: float | None = None,
        root_poll_s: float = ROOT_POLL_S,
    ) -> None:
        self.index = index
        self.on_update = on_update
        self.debounce_s = index.settings.reindex_debounce_s if debounce_s is None else debounce_s
        self.root_poll_s = root_poll_s
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._roots: set[Path] | None = None
        self._last_error = ""
        self.errors = 0
        self.reindexes = 0
        self.last_reindex_at = 0.0

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def last_error(self) -> str:
        """The most recent problem ("" if none since the last successful reindex)."""
        return self._last_error

    async def start(self) -> None:
        """Reconcile once, then watch in the background. Returns once the watch is set up."""
        if self.running:
            return
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="agentsh-memory-watch")
        # Wait for the first reconcile and the watch to start, but never forever.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout=10.0)

    async def stop(self) -> None:
        self._stop.set()
        task = self._task
        if task is None:
            return
        try:
            await asyncio.wait_for(task, timeout=5.0)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None

    async def _run(self) -> None:
        await self._reconcile()
        backoff = 0.5
        while not self._stop.is_set():
            try:
                await self._watch_once()
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the watcher must outlive any failure
                self.errors += 1
                self._last_error = f"memory watcher: {type(exc).__name__}: {exc}"
                log.warning("%s; restarting in %.1f s", self._last_error, backoff)
                self._ready.set()
                await self._sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                await self._reconcile()  # whatever changed while it was down
        self._ready.set()

    async def _watch_once(self) -> None:
        """Watch the folders that exist until the set of existing folders changes."""
        from watchfiles import DefaultFilter, awatch

        wanted = self.index.sources.watch_roots()
        roots = [r for r in wanted if r.is_dir()]
        missing = [r for r in wanted if not r.is_dir()]
        if self._roots is not None and set(roots) != self._roots:
            # A folder appeared (or went): what it holds was written before we watched it.
            await self._reconcile()
        self._roots = set(roots)
        if not roots:
            self._ready.set()
            await self._sleep(self.root_poll_s)
            return
        async for changes in awatch(
            *roots,
            stop_event=self._stop,
            watch_filter=DefaultFilter(),
            debounce=max(SETTLE_MS, int(self.debounce_s * 1000)),
            step=SETTLE_MS,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,
            recursive=True,
        ):
            self._ready.set()
            if changes and any(_relevant(path) for _change, path in changes):
                self.index.mark_dirty()
                await self._reconcile()
            if any(r.is_dir() for r in missing) or not all(r.is_dir() for r in roots):
                return  # a folder appeared or vanished: watch the new set

    async def _reconcile(self) -> None:
        try:
            report = await asyncio.to_thread(self.index.sync)
        except (SearchIndexError, sqlite3.Error, OSError) as exc:
            # sqlite3.Error too ("database is locked" while another agentsh reindexes): it
            # escaped here before and, at start-up, ended the watch task without a word.
            self.errors += 1
            self._last_error = f"memory index: {exc}"
            log.warning("%s", self._last_error)
            return
        self._last_error = ""
        if report.changed:
            self.reindexes += 1
            self.last_reindex_at = time.monotonic()
            self._announce(report)

    def _announce(self, report: SyncReport) -> None:
        if self.on_update is None:
            return
        try:
            self.on_update(IndexUpdated(paths=report.indexed, removed=report.removed))
        except Exception:  # a subscriber's bug must not stop the watcher
            log.exception("memory index update callback failed")

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)


def _relevant(path: str) -> bool:
    """Markdown files, and folders (a moved or deleted folder takes its files with it)."""
    name = Path(path).name
    return name.lower().endswith(".md") or "." not in name
