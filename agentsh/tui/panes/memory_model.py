"""What the Memory pane shows, computed off the UI thread: each curated file against the
session's snapshot of it, and the typed docs.

The system prompt keeps the snapshot taken when the session started, so an entry the file gained
since is ``ADDED``, one it lost ``REMOVED`` and one that was rewritten ``CHANGED``; entries the
injection guard keeps out of the prompt carry the pattern's name. Plain data and a blocking
reader (:func:`build_model`, run in a thread): the widget in :mod:`.memory_pane` draws it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from agentsh.memory.curated import CuratedMemory, MemorySnapshot, MemoryTarget, SnapshotEntry
from agentsh.memory.docs import DocType, MemoryDoc, load_docs
from agentsh.memory.guard import Scope, first_threat

ALIKE_RATIO = 0.5  # entries at least this similar count as one entry rewritten


class EntryStatus(StrEnum):
    """How a live entry relates to the snapshot the session's system prompt holds."""

    SAME = "same"
    ADDED = "added"  # in the file, not in the snapshot: the model sees it next session
    REMOVED = "removed"  # in the snapshot, gone from the file: the model still sees it
    CHANGED = "changed"  # rewritten since the session started


@dataclass(frozen=True, slots=True)
class EntryView:
    text: str
    status: EntryStatus = EntryStatus.SAME
    blocked: str = ""  # the guard pattern that keeps it out of the prompt ("" if none)
    previous: str = ""  # CHANGED: the text the session's snapshot holds


@dataclass(frozen=True, slots=True)
class CuratedView:
    """One curated file as it is on disk, against the session's snapshot of it."""

    target: MemoryTarget
    path: Path
    display: str  # a short name for people: project-relative, or ``user:USER.md``
    chars: int
    limit: int
    entries: tuple[EntryView, ...]
    text: str  # the whole live file, for the read view
    snapshot_chars: int | None = None  # None when no snapshot is known yet
    problem: str = ""

    @property
    def fill(self) -> float:
        return self.chars / self.limit if self.limit > 0 else 0.0

    @property
    def differs(self) -> bool:
        return any(e.status is not EntryStatus.SAME for e in self.entries)


DocGroups = tuple[tuple[DocType, tuple[MemoryDoc, ...]], ...]


@dataclass(frozen=True, slots=True)
class MemoryModel:
    files: tuple[CuratedView, ...]
    docs: DocGroups
    problems: tuple[str, ...]
    has_snapshot: bool


def diff_entries(
    live: list[str],
    snapshot: tuple[SnapshotEntry, ...] | None,
    blocked: Callable[[str], str],
) -> tuple[EntryView, ...]:
    """The live entries in file order, with the snapshot's lost entries where they stood.

    ``blocked(text)`` names the guard pattern an entry matches ("" if none). Without a
    snapshot every entry is shown as it is."""
    if snapshot is None:
        return tuple(EntryView(text, blocked=blocked(text)) for text in live)
    old = [entry.text for entry in snapshot]
    views: list[EntryView] = []
    matcher = difflib.SequenceMatcher(a=old, b=live, autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        match op:
            case "equal":
                for i, j in zip(range(a1, a2), range(b1, b2), strict=True):
                    threat = snapshot[i].threat
                    views.append(EntryView(live[j], blocked=threat.name if threat else ""))
            case "insert":
                views.extend(
                    EntryView(live[j], EntryStatus.ADDED, blocked(live[j])) for j in range(b1, b2)
                )
            case "delete":
                views.extend(_removed(snapshot[i]) for i in range(a1, a2))
            case "replace":
                # Entries at the same place that still look alike were rewritten; others
                # were replaced: one removed, one added.
                pairs = min(a2 - a1, b2 - b1)
                for k in range(pairs):
                    before, text = old[a1 + k], live[b1 + k]
                    if _alike(before, text):
                        views.append(EntryView(text, EntryStatus.CHANGED, blocked(text), before))
                    else:
                        views.append(_removed(snapshot[a1 + k]))
                        views.append(EntryView(text, EntryStatus.ADDED, blocked(text)))
                views.extend(
                    EntryView(live[j], EntryStatus.ADDED, blocked(live[j]))
                    for j in range(b1 + pairs, b2)
                )
                views.extend(_removed(snapshot[i]) for i in range(a1 + pairs, a2))
    return tuple(views)


def _alike(before: str, after: str) -> bool:
    return difflib.SequenceMatcher(a=before, b=after, autojunk=False).ratio() >= ALIKE_RATIO


def _removed(entry: SnapshotEntry) -> EntryView:
    return EntryView(entry.text, EntryStatus.REMOVED, entry.threat.name if entry.threat else "")


def build_model(
    memory: CuratedMemory,
    snapshot: MemorySnapshot | None,
    docs_dir: Path | None,
    display: Callable[[MemoryTarget], str],
    *,
    root: Path | None = None,
) -> MemoryModel:
    """Read both curated files and the typed docs (blocking: run it in a thread). No
    ``docs_dir`` (an untrusted folder) shows no docs; ``root`` confines their reads."""
    max_bytes = memory.settings.guard_max_scan_bytes

    def blocked(text: str) -> str:
        threat = first_threat(text, Scope.SNAPSHOT, max_bytes=max_bytes)
        return threat.name if threat is not None else ""

    files: list[CuratedView] = []
    problems: list[str] = []
    for target in MemoryTarget:
        path = memory.path(target)
        text, problem = memory.read_text(target)
        live = memory.entries(target) if not problem else []
        frozen = snapshot.get(target) if snapshot is not None else None
        files.append(
            CuratedView(
                target=target,
                path=path,
                display=display(target),
                chars=len(text),
                limit=memory.limit(target),
                entries=diff_entries(live, frozen.entries if frozen else None, blocked),
                text=text,
                snapshot_chars=frozen.chars if frozen is not None else None,
                problem=problem,
            )
        )
    docs, doc_problems = load_docs(docs_dir, root) if docs_dir is not None else ([], [])
    problems.extend(doc_problems)
    groups = tuple(
        (kind, tuple(sorted((d for d in docs if d.type is kind), key=lambda d: d.title.lower())))
        for kind in DocType
    )
    return MemoryModel(
        files=tuple(files),
        docs=tuple(g for g in groups if g[1]),
        problems=tuple(problems),
        has_snapshot=snapshot is not None,
    )
