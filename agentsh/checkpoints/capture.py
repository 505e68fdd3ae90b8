"""A capture: find what changed in the project since the last one and journal it.

Cheap by design: the project's files are listed (``git ls-files`` or a walk) and ``lstat``-ed,
and only files whose size, mtime, ctime, inode or mode differ from the stat cache are read.
A file changed since it was last seen is stored (its new content); its old content is already
in the store, or (a tracked file never changed before) in git's object database, from where it
is copied into the store right now, before git could lose it. So contents are stored only for
files that change, and the first capture of a git project reads each file once to check it
against the index but stores only the ones git does not already hold byte for byte.

A file whose mtime is within :data:`RACY_NS` of the scan is re-read at the next capture, as
git does: a second write within the file system's timestamp granularity would otherwise go
unseen. A path that appears with an inode older than the previous capture was there all along
but not covered (an ignore rule changed): its past is recorded as unknown, so a restore never
deletes it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import agentsh.checkpoints.scan as scan
from agentsh.checkpoints.store import (
    ABSENT,
    GIT_PREFIX,
    NOT_CAPTURED,
    CacheRow,
    Change,
    CheckpointStore,
    blob_hash,
)
from agentsh.fsutil import open_dir_beneath

RACY_NS = 2_000_000_000
#: file times come from the kernel's coarse clock, which trails time.time_ns() by up to a tick
#: (1-10 ms): a file made just after a capture began can carry a time from just before it
COARSE_CLOCK_NS = 50_000_000
MAX_FILES = 100_000


@dataclass(frozen=True, slots=True)
class Capture:
    """The result of one capture: the journal position the files are now at."""

    seq: int
    changed: tuple[str, ...]  # paths this capture journaled
    files: int  # files covered
    seconds: float
    baseline: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    """A path whose stat differs from the cache: new, changed, gone (``st`` None), or still
    there but no longer covered (``listed`` False: an ignore rule now names it)."""

    path: str
    st: os.stat_result | None
    row: CacheRow | None
    listed: bool = True


@dataclass(slots=True)
class Observation:
    """What differs from the stat cache right now, without writing anything."""

    seen: list[Seen] = field(default_factory=list)
    files: int = 0
    undecodable: int = 0
    started_ns: int = 0
    strays: tuple[str, ...] = ()


class Recorder:
    """Captures the project's files into a store (one per project and process)."""

    def __init__(
        self, store: CheckpointStore, root: Path, *, max_file_bytes: int, max_files: int = MAX_FILES
    ) -> None:
        self.store = store
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._last_ns = 0  # when this process's last capture began
        # (git index stamp, tracked paths) as of this process's last full listing
        self._git_state: tuple[tuple[int, int, int, int], frozenset[str]] | None = None
        self._loose_paths: set[str] | None = None
        self._loose_for = -1
        self._folders: scan.OpenFolders | None = None  # the running capture's

    # -- observing ----------------------------------------------------------------------------

    def observe(self, cache: dict[str, CacheRow]) -> Observation:
        """What differs from ``cache`` on disk now. In a git project whose index has not
        changed since this process last looked, git itself says which tracked files differ
        from the index (it stats them in C) and only those, the untracked ones and the ones
        the cache holds outside git are stat-ed here; otherwise every file is."""
        if cache:
            fast = self._observe_by_git(cache)
            if fast is not None:
                return self._beneath_links(fast)
        return self._beneath_links(self._observe_all(cache))

    def _beneath_links(self, observation: Observation) -> Observation:
        """A path with a symbolic link among its folders is not the project's file (git says
        the same): what it reaches (``~/.ssh/id_rsa`` through ``keys -> ~/.ssh``) is never
        read into the store, and a file known there before counts as gone."""
        real = scan.RealFolders(self.root)
        kept: list[Seen] = []
        for item in observation.seen:
            if item.st is not None and not real.holds(item.path):
                if item.row is None:
                    continue
                item = Seen(item.path, None, item.row, item.listed)
            kept.append(item)
        observation.seen = kept
        return observation

    def _observe_paths(
        self, cache: dict[str, CacheRow], paths: Sequence[str]
    ) -> Observation | None:
        """Only ``paths`` (a write's or an edit's targets): a few stats, and for a new file one
        git call to know whether it is ignored. None when the git state is not known."""
        state = self._git_state
        if state is None or scan.index_stamp(self.root) != state[0]:
            return None
        observation = Observation(files=len(cache), started_ns=time.time_ns())
        new: list[tuple[str, os.stat_result]] = []
        for path in dict.fromkeys(p for p in paths if scan.covered(p)):
            row = cache.get(path)
            st = scan.lstat(self.root, path)
            if row is None:
                if st is not None:
                    new.append((path, st))
            elif st is None or row.racy or not row.same_stat(st):
                observation.seen.append(Seen(path, _file_only(st), row))
        if new:
            candidates = [path for path, _st in new if path not in state[1]]
            listed = scan.not_ignored(self.root, candidates)
            if listed is None:
                return None
            for path, st in new:
                if path in state[1] or path in listed:
                    observation.seen.append(Seen(path, st, None))
        return observation

    def _observe_by_git(self, cache: dict[str, CacheRow]) -> Observation | None:
        state = self._git_state
        if state is None or scan.index_stamp(self.root) != state[0]:
            return None
        tracked = state[1]
        started = time.time_ns()
        listing = scan.git_changes(self.root)
        if listing is None or any(p.rsplit("/", 1)[-1] == ".gitignore" for p in listing.paths):
            return None  # an ignore rule may have changed: list everything
        untracked = {p for p in listing.paths if p not in listing.tracked}
        wanted = set(listing.paths)
        # Files the cache holds outside git (changed since, or untracked) and recent ones, and
        # tracked files the cache thinks gone (git says nothing of one put back as committed).
        wanted.update(self._loose(cache))
        wanted.update(tracked - cache.keys())
        observation = Observation(
            files=len(tracked) + len(untracked),
            undecodable=listing.undecodable,
            started_ns=started,
            strays=listing.strays,
        )
        for path in wanted:
            row = cache.get(path)
            st = scan.lstat(self.root, path)
            if row is None:
                if st is not None:
                    observation.seen.append(Seen(path, st, None))
            elif st is not None and path not in tracked and path not in untracked:
                observation.seen.append(Seen(path, st, row, listed=False))
            elif st is None or row.racy or not row.same_stat(st):
                observation.seen.append(Seen(path, _file_only(st), row))
        return observation

    def _loose(self, cache: dict[str, CacheRow]) -> set[str]:
        """Cached paths git cannot vouch for (content outside git, or recently modified);
        recomputed only when the cache was reloaded, else kept up to date by captures."""
        generation = self.store.cache_generation
        if self._loose_paths is None or self._loose_for != generation:
            self._loose_paths = {
                p for p, r in cache.items() if r.racy or not r.ref.startswith(GIT_PREFIX)
            }
            self._loose_for = generation
        return self._loose_paths

    def _observe_all(self, cache: dict[str, CacheRow]) -> Observation:
        """List and stat every file. The listing runs in a thread (git is a process of its
        own) while the cached paths are stat-ed."""
        stamp = scan.index_stamp(self.root)
        started = time.time_ns()
        result: list[scan.Listing | BaseException] = []

        def list_now() -> None:
            try:
                result.append(scan.list_files(self.root, max_files=self.max_files))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                result.append(exc)

        lister = threading.Thread(target=list_now, name="checkpoint-listing", daemon=True)
        lister.start()
        # The hot loop (10,000 files): plain str paths, one lstat each, compared inline.
        lstat = os.lstat
        prefix = f"{self.root}{os.sep}"
        differing: list[tuple[str, os.stat_result | None, CacheRow]] = []
        for path, row in cache.items():
            try:
                st: os.stat_result | None = lstat(prefix + path)
            except OSError:
                st = None
            if (
                st is None
                or row.racy
                or st.st_ctime_ns != row.ctime_ns
                or st.st_mtime_ns != row.mtime_ns
                or st.st_size != row.size
                or st.st_ino != row.ino
                or st.st_mode != row.mode
            ):
                differing.append((path, st, row))
        lister.join()
        listing = result[0]
        if isinstance(listing, BaseException):
            raise listing
        # Taken before listing: an index written meanwhile makes the next capture list again.
        self._git_state = (stamp, listing.tracked) if listing.source == "git" and stamp else None
        listed = set(listing.paths)
        observation = Observation(
            files=len(listed),
            undecodable=listing.undecodable,
            started_ns=started,
            strays=listing.strays,
        )
        seen = observation.seen
        for path in listed - cache.keys():
            new = scan.lstat(self.root, path)
            if new is not None:
                seen.append(Seen(path, new, None))
        gone = cache.keys() - listed
        for path, st, row in differing:
            if path not in gone:
                seen.append(Seen(path, _file_only(st), row))
        for path in gone:
            seen.append(Seen(path, scan.lstat(self.root, path), cache[path], listed=False))
        return observation

    def read(self, path: str, st: os.stat_result) -> bytes | None:
        return scan.read_content(self.root, path, st, self.max_file_bytes, self._folders)

    # -- capturing ----------------------------------------------------------------------------

    def capture(self, paths: Sequence[str] = ()) -> Capture:
        """Journal every change since the last capture; one transaction. With ``paths`` (the
        files a write or edit just changed, relative to the root) only those are looked at,
        when the git state this process knows allows it."""
        with scan.OpenFolders(self.root) as folders:
            self._folders = folders
            try:
                return self._capture(paths)
            finally:
                self._folders = None

    def _capture(self, paths: Sequence[str]) -> Capture:
        started = time.perf_counter()
        store = self.store
        with store.writing():
            cache = store.cache()
            if not store.has_baseline():
                return self._baseline(started)
            fast = self._observe_paths(cache, paths) if paths else None
            observation = self._beneath_links(fast) if fast is not None else self.observe(cache)
            self._sweep(observation.strays)
            previous = max(self._last_ns, int(store.meta("last_capture_ns", "0") or 0))
            changes, updates = self._changes(observation, cache, previous)
            self._last_ns = observation.started_ns
            if changes or updates:  # a capture that found nothing writes nothing (no fsync)
                store.set_meta("last_capture_ns", str(observation.started_ns))
                loose = self._loose_paths if self._loose_for == store.cache_generation else None
                seq = store.record(changes, updates)
                if loose is not None:
                    for path, row in updates.items():
                        if row is None or (not row.racy and row.ref.startswith(GIT_PREFIX)):
                            loose.discard(path)
                        else:
                            loose.add(path)
                    self._loose_for = store.cache_generation
            else:
                seq = store.seq()
        return Capture(
            seq,
            tuple(c.path for c in changes),
            observation.files,
            time.perf_counter() - started,
        )

    def _changes(
        self, observation: Observation, cache: dict[str, CacheRow], previous_ns: int
    ) -> tuple[list[Change], dict[str, CacheRow | None]]:
        store = self.store
        racy_after = observation.started_ns - RACY_NS
        changes: list[Change] = []
        updates: dict[str, CacheRow | None] = {}
        for item in _by_folder(observation.seen):
            path, st, row = item.path, item.st, item.row
            if st is None:  # gone
                assert row is not None
                updates[path] = None
                changes.append(Change(path, row.ref, row.mode, ABSENT, 0))
                continue
            if not item.listed:
                updates[path] = None  # still on disk, no longer covered: forgotten, not deleted
                continue
            data = self.read(path, st)
            if data is None:
                ref = NOT_CAPTURED
            elif row is not None and row.mode == st.st_mode and _held_by_git(row.ref, data):
                ref = row.ref  # touched, not changed: git still holds these bytes
            else:
                # A new mode too: a reference to git says "as the index has it", mode and
                # all, so git status may vouch for the file; once only its mode differs (a
                # chmod +x), git status goes quiet when the mode comes back, and the stat
                # cache would never learn it. A stored copy is looked at every time.
                ref = store.put_blob(data)
            updates[path] = _row(st, ref, racy_after)
            if row is None:
                # An inode last changed before the previous capture began was there already.
                existed = st.st_ctime_ns < previous_ns - COARSE_CLOCK_NS
                before = NOT_CAPTURED if existed else ABSENT
                changes.append(Change(path, before, 0, ref, st.st_mode))
            elif ref == NOT_CAPTURED:
                # An uncaptured file that changed is a change too (to a content not kept).
                if not row.same_stat(st):
                    changes.append(Change(path, row.ref, row.mode, ref, st.st_mode))
            elif (row.ref, row.mode) != (ref, st.st_mode):
                changes.append(Change(path, row.ref, row.mode, ref, st.st_mode))
        return self._settle(changes), updates

    def _sweep(self, strays: Iterable[str]) -> None:
        """Remove temporary files a killed restore left (holding the write lock, no restore of
        this project can be running)."""
        for path in strays:
            folder, _, name = path.rpartition("/")
            # Through folders opened without following a link: the listing is already old,
            # and a folder swapped for a link to elsewhere since must not be swept through.
            with contextlib.suppress(OSError):
                fd = open_dir_beneath(self.root, self.root / folder)
                try:
                    os.unlink(name, dir_fd=fd)
                finally:
                    os.close(fd)

    def _settle(self, changes: list[Change]) -> list[Change]:
        """Copy the old content of changed files that only git held into the store now."""
        cut = len(GIT_PREFIX)
        oids = sorted({c.before_ref[cut:] for c in changes if _needs_settling(c)})
        if not oids:
            return changes
        blobs = scan.git_blobs(self.root, oids)
        refs = {oid: self.store.put_blob(data) for oid, data in blobs.items()}
        settled: list[Change] = []
        for change in changes:
            if _needs_settling(change):
                oid = change.before_ref[len(GIT_PREFIX) :]
                before = refs.get(oid, NOT_CAPTURED)
                change = Change(
                    change.path, before, change.before_mode, change.after_ref, change.after_mode
                )
            settled.append(change)
        return settled

    def _baseline(self, started: float) -> Capture:
        """The first capture of a project: everything is new, nothing is journaled."""
        store = self.store
        observation = self.observe({})
        oids = scan.index_oids(self.root)
        racy_after = observation.started_ns - RACY_NS
        updates: dict[str, CacheRow | None] = {}
        for item in _by_folder(observation.seen):
            if item.st is None:
                continue
            st = item.st
            data = self.read(item.path, st)
            if data is None:
                ref = NOT_CAPTURED
            else:
                oid, executable = oids.get(item.path, ("", False))
                if (
                    oid
                    and stat.S_ISREG(st.st_mode)
                    and bool(st.st_mode & stat.S_IXUSR) == executable  # git's mode, too
                    and scan.git_blob_id(data, oid) == oid
                ):
                    ref = GIT_PREFIX + oid  # git holds these exact bytes: no copy needed yet
                else:
                    ref = store.put_blob(data)
            updates[item.path] = _row(st, ref, racy_after)
        store.mark_baseline()
        store.set_meta("last_capture_ns", str(observation.started_ns))
        seq = store.record((), updates)
        return Capture(seq, (), observation.files, time.perf_counter() - started, baseline=True)

    # -- reading what is there now ------------------------------------------------------------

    def current_refs(self, seen: Iterable[Seen]) -> dict[str, tuple[str, int]]:
        """path -> (reference, mode) of what is on disk now, for paths that differ from the
        cache (read and hashed, nothing stored)."""
        out: dict[str, tuple[str, int]] = {}
        for item in seen:
            if item.st is None:
                out[item.path] = (ABSENT, 0)
                continue
            data = self.read(item.path, item.st)
            if data is None:
                ref = NOT_CAPTURED
            elif item.row is not None and _held_by_git(item.row.ref, data):
                ref = item.row.ref
            else:
                ref = blob_hash(data)
            out[item.path] = (ref, item.st.st_mode)
        return out


def _by_folder(seen: Iterable[Seen]) -> list[Seen]:
    """In path order, so the files of one folder are read one after another (the capture's
    folder descriptors stay open for them: :class:`scan.OpenFolders`)."""
    return sorted(seen, key=lambda item: item.path)


def _needs_settling(change: Change) -> bool:
    """The old content is only in git and the file's content changed (a mode change keeps
    the bytes git holds, referenced as they are)."""
    return change.before_ref.startswith(GIT_PREFIX) and change.after_ref != change.before_ref


def _file_only(st: os.stat_result | None) -> os.stat_result | None:
    """A path that turned into a folder (or a pipe) is gone as far as files go."""
    if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        return st
    return None


def _held_by_git(ref: str, data: bytes) -> bool:
    if not ref.startswith(GIT_PREFIX):
        return False
    oid = ref[len(GIT_PREFIX) :]
    return scan.git_blob_id(data, oid) == oid


def _row(st: os.stat_result, ref: str, racy_after: int) -> CacheRow:
    return CacheRow(
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        st.st_mode,
        ref,
        st.st_mtime_ns >= racy_after or st.st_ctime_ns >= racy_after,
    )
