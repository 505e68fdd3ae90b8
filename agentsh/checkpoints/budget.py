"""The total store budget: every project's checkpoint store together stays under
``[checkpoints] store_max_mb``, by dropping the oldest file history first.

The measure is what the stores take on disk (database plus WAL). Over budget, the store holding
the oldest journal record gives up a quarter of its records (and the blobs only they used),
and so on until the total fits. The content of the files as they are now is never dropped, so
a project whose current files alone exceed the budget is reported, not emptied. Every eviction
comes back as a sentence for the user: what was dropped, and from when on checkpoints still
restore files.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from agentsh.checkpoints.store import STORE_FILE, CheckpointStore, Eviction, disk_bytes
from agentsh.paths import UserPaths

MAX_PASSES = 64


def store_files(user: UserPaths) -> list[Path]:
    base = user.data_dir / "checkpoints"
    try:
        return sorted(p / STORE_FILE for p in base.iterdir() if (p / STORE_FILE).is_file())
    except OSError:
        return []


def total_bytes(user: UserPaths) -> int:
    return sum(disk_bytes(path) for path in store_files(user))


@dataclass(frozen=True, slots=True)
class BudgetReport:
    evictions: tuple[str, ...] = ()  # one sentence per eviction
    shortfall: str = ""  # set when the budget cannot be met by evicting


def enforce_budget(user: UserPaths, budget_bytes: int, current: CheckpointStore) -> BudgetReport:
    """Evict oldest-first until every store together fits ``budget_bytes``."""
    if total_bytes(user) <= budget_bytes:
        return BudgetReport()
    dropped: dict[Path, Eviction] = {}  # per store, all passes together (in order)
    forgotten: list[str] = []
    shortfall = ""
    opened: dict[Path, CheckpointStore] = {current.path: current}
    try:
        for _ in range(MAX_PASSES):
            victim = _oldest(user, opened)
            idle = _least_recent(opened, current)
            if idle is not None and (victim is None or idle[0] <= _oldest_time(victim)):
                # Another project with no file history left, last used before the oldest
                # history anywhere: the copies of its current files go (kept, they made every
                # capture of every other project drop its own new history at once).
                forgotten.append(_forgot(idle[1], idle[1].forget_files(), budget_bytes))
                if total_bytes(user) <= budget_bytes:
                    break
                continue
            if victim is None:
                size = total_bytes(user) / 1e6
                shortfall = (
                    f"Checkpoints: the stores take {size:.0f} MB with no file history left to "
                    f"drop (the current files alone exceed store_max_mb = "
                    f"{budget_bytes / 1e6:.0f}); raise it or lower max_file_bytes."
                )
                break
            records = max(1, victim.journal_size() // 4)
            dropped[victim.path] = _added(dropped.get(victim.path), victim.evict(records))
            if total_bytes(user) <= budget_bytes:
                break
        # One sentence per store, however many passes it took (it was one per pass: a
        # single capture over budget printed 40 warning lines).
        reports = tuple(
            _sentence(opened[path], eviction, budget_bytes) for path, eviction in dropped.items()
        ) + tuple(forgotten)
    finally:
        for store in opened.values():
            if store is not current:
                store.close()
    return BudgetReport(reports, shortfall)


def _added(before: Eviction | None, now: Eviction) -> Eviction:
    if before is None:
        return now
    return Eviction(
        before.records + now.records,
        before.freed_bytes + now.freed_bytes,
        now.horizon,
        now.horizon_time,
    )


def _oldest(user: UserPaths, opened: dict[Path, CheckpointStore]) -> CheckpointStore | None:
    best: tuple[float, CheckpointStore] | None = None
    for path in store_files(user):
        store = opened.get(path)
        if store is None:
            try:
                # The root is only written into a new store; these all exist already.
                store = CheckpointStore(path, path.parent)
            except sqlite3.Error:
                continue
            opened[path] = store
        with contextlib.suppress(sqlite3.Error):
            oldest = store.oldest_record()
            if oldest is not None and (best is None or oldest[1] < best[0]):
                best = (oldest[1], store)
    return None if best is None else best[1]


def _least_recent(
    opened: dict[Path, CheckpointStore], current: CheckpointStore
) -> tuple[float, CheckpointStore] | None:
    """(last used, store): another project's store with no file history left that still
    holds copies of its files, the least recently used."""
    idle: list[tuple[float, CheckpointStore]] = []
    for store in opened.values():
        if store is current:
            continue
        with contextlib.suppress(sqlite3.Error):
            if store.has_baseline() and not store.journal_size():
                idle.append((store.last_used() / 1e9, store))
    return min(idle, key=lambda pair: pair[0]) if idle else None


def _oldest_time(store: CheckpointStore) -> float:
    oldest = store.oldest_record()
    return oldest[1] if oldest is not None else float("inf")


def _forgot(store: CheckpointStore, freed: int, budget_bytes: int) -> str:
    root = store.meta("root") or str(store.root)
    return (
        f"Checkpoints: over the {budget_bytes / 1e6:.0f} MB budget, dropped the copies of the "
        f"files of {root} (no file history was left there; {freed / 1e6:.1f} MB freed); its "
        "next checkpoint starts afresh."
    )


def _sentence(store: CheckpointStore, eviction: Eviction, budget_bytes: int) -> str:
    root = store.meta("root") or str(store.root)
    since = (
        f"checkpoints from before {_when(eviction.horizon_time)} can no longer restore files"
        if eviction.horizon_time
        else "its older checkpoints can no longer restore files"
    )
    return (
        f"Checkpoints: over the {budget_bytes / 1e6:.0f} MB budget, dropped the "
        f"{eviction.records} oldest file changes of {root} ({eviction.freed_bytes / 1e6:.1f} MB "
        f"freed); {since}."
    )


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))
