"""Bringing the project's files back to a checkpoint: first a plan, then the writes.

The plan compares what is on disk with the files at the checkpoint and lists every file that
would change, with +/- lines. Files changed outside agentsh since the last capture are marked:
they are only overwritten when the caller passes ``include_outside`` (the second confirmation).
Files that cannot be restored safely say why and are left alone: their old content was not
kept, or their current content could not be saved first (so it would be lost for good), or a
folder on the way is a symbolic link, or the file has other hard links (treated as outside the
project), or an ignore rule now covers it.

Applying writes each file atomically (:mod:`agentsh.checkpoints.restore_fs`: temporary file,
fsync, rename, through folder descriptors opened without following links), so a kill leaves
each file old or new; ``.git/`` is never listed, so never touched. A set-user-ID or
set-group-ID bit is never restored (git keeps neither): the plan and the result say so. The
caller checkpoints the current state first, so a restore can itself be undone, and
:func:`apply` refuses to write if anything changed since.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import agentsh.checkpoints.scan as scan
from agentsh.checkpoints.capture import Recorder
from agentsh.checkpoints.restore_fs import (
    VCS_REFUSED,
    delete_file,
    is_vcs,
    write_file,
)
from agentsh.checkpoints.restore_fs import (
    RestoreError as RestoreError,  # re-exported: the error of a restore, planned or written
)
from agentsh.checkpoints.store import ABSENT, GIT_PREFIX, NOT_CAPTURED, CacheRow, blob_hash
from agentsh.fsutil import LinkRefused
from agentsh.session.entries import CheckpointEntry
from agentsh.tools.file_diff import header_name, unified_diff

Ref = tuple[str, int]  # (content reference, mode)

#: +/- lines are counted only for texts up to this size (difflib is quadratic at worst)
DIFF_MAX_BYTES = 1 << 20
#: set-user-ID and set-group-ID: never restored (git keeps neither); a file comes back without
ID_BITS = stat.S_ISUID | stat.S_ISGID


@dataclass(frozen=True, slots=True)
class PlanItem:
    path: str
    action: str  # "modify", "create", "delete", "mode"
    target: Ref
    current: Ref
    added: int = 0
    removed: int = 0
    binary: bool = False
    outside: bool = False  # changed outside agentsh since the last checkpoint
    problem: str = ""  # non-empty: left alone, and why

    @property
    def id_bits_dropped(self) -> str:
        """The ID bits the file had at the checkpoint and comes back without ("" if none)."""
        mode = 0 if stat.S_ISLNK(self.target[1]) else self.target[1]
        bits = ((stat.S_ISUID, "set-user-ID"), (stat.S_ISGID, "set-group-ID"))
        names = [name for bit, name in bits if mode & bit]
        return f"{' and '.join(names)} bit{'s' * (len(names) > 1)}" if names else ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "action": self.action,
            "added": self.added,
            "removed": self.removed,
        }
        if self.binary:
            data["binary"] = True
        if self.id_bits_dropped:
            data["idBitsDropped"] = True
        if self.outside:
            data["changedOutside"] = True
        if self.problem:
            data["problem"] = self.problem
        return data


@dataclass(frozen=True, slots=True)
class RestorePlan:
    seq: int
    items: tuple[PlanItem, ...] = ()
    problem: str = ""  # non-empty: nothing can be restored, and why
    entry_id: str = ""  # the session entry whose files these are (set by the checkpointer)

    @property
    def writable(self) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if not i.problem and not i.outside)

    @property
    def outside(self) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if not i.problem and i.outside)

    @property
    def blocked(self) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if i.problem)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "entryId": self.entry_id,
            "seq": self.seq,
            "files": [i.to_json() for i in self.items],
        }
        if self.problem:
            data["problem"] = self.problem
        return data


@dataclass(slots=True)
class RestoreResult:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    id_bits_dropped: list[str] = field(default_factory=list)  # written without setuid/setgid
    seq: int = 0  # the journal position after the restore
    undo: CheckpointEntry | None = None  # the record of the files as they were before it


# -- planning -----------------------------------------------------------------------------------


def plan(recorder: Recorder, seq: int) -> RestorePlan:
    """What restoring the files of journal position ``seq`` would change now."""
    store = recorder.store
    with store.writing():  # a consistent view: nobody records while this reads
        horizon = store.horizon()
        if seq < horizon:
            return RestorePlan(
                seq,
                problem="its file history was dropped to keep the checkpoint store within "
                "store_max_mb; it can no longer restore files",
            )
        if seq > store.seq():
            return RestorePlan(seq, problem="the checkpoint store no longer has this checkpoint")
        cache = store.cache()
        observation = recorder.observe(cache)
        targets = store.first_after(seq)
        now = recorder.current_refs(s for s in observation.seen if s.listed)

        def known(path: str) -> Ref:
            row = cache.get(path)
            return (row.ref, row.mode) if row is not None else (ABSENT, 0)

        # Changed outside agentsh: what is on disk differs from what the last capture saw
        # (a stat that merely looks recent is not a change), or an ignore rule took it.
        outside = {
            s.path: s
            for s in observation.seen
            if not s.listed or not _same(recorder, now[s.path], known(s.path))
        }
        items: list[PlanItem] = []
        for path in sorted(set(targets) | set(outside)):
            target = targets.get(path, known(path))
            current = now.get(path, known(path))
            if _same(recorder, target, current) or _same(recorder, _safe(target), current):
                continue  # (ID bits alone are nothing a restore would bring back)
            seen = outside.get(path)
            problem = _problem(recorder, path, target, current)
            if seen is not None and not seen.listed:
                problem = problem or "an ignore rule covers it now; left as it is"
            items.append(
                _item(recorder, path, target, current, outside=seen is not None, problem=problem)
            )
    return RestorePlan(seq, _clear_own_way(recorder.root, items))


def _safe(ref: Ref) -> Ref:
    """``ref`` as a restore writes it: without set-user-ID and set-group-ID."""
    return (ref[0], ref[1] & ~ID_BITS)


def _same(recorder: Recorder, a: Ref, b: Ref) -> bool:
    """Same file: same mode and same bytes (a git reference compared by what it holds)."""
    if a == b:
        return True
    if a[1] != b[1] or NOT_CAPTURED in (a[0], b[0]) or ABSENT in (a[0], b[0]):
        return False
    return _digest(recorder, a[0]) == _digest(recorder, b[0])


def _digest(recorder: Recorder, ref: str) -> str:
    if not ref.startswith(GIT_PREFIX):
        return ref
    data = content(recorder, ref)
    return ref if data is None else blob_hash(data)


def content(recorder: Recorder, ref: str) -> bytes | None:
    """The bytes behind a reference: the store's, or git's for a never-changed tracked file."""
    if ref in (ABSENT, NOT_CAPTURED):
        return None
    if ref.startswith(GIT_PREFIX):
        oid = ref[len(GIT_PREFIX) :]
        return scan.git_blobs(recorder.root, [oid]).get(oid)
    return recorder.store.get_blob(ref)


def _problem(recorder: Recorder, path: str, target: Ref, current: Ref) -> str:
    if target[0] == NOT_CAPTURED:
        return (
            "agentsh has no copy of it from that point (it was over max_file_bytes, "
            "hard-linked or unreadable)"
        )
    if current[0] == NOT_CAPTURED:
        # A hard-linked file is not captured either (it counts as outside the project).
        return _unsafe(recorder, path) or (
            "it is over max_file_bytes now, so it could not be saved first; left as it is"
        )
    if stat.S_ISLNK(current[1]) and target[0] != ABSENT and not stat.S_ISLNK(target[1]):
        return "a symbolic link is there now (a link is never written through); left as it is"
    stored = target[0] != ABSENT and not target[0].startswith(GIT_PREFIX)
    if stored and not recorder.store.has_blob(target[0]):
        return "its content at that point is no longer in the checkpoint store"
    return _unsafe(recorder, path)


def _unsafe(recorder: Recorder, path: str) -> str:
    """Why writing ``path`` would reach outside the project, or "" when it would not."""
    if is_vcs(path) or not path or path.startswith("/") or ".." in path.split("/"):
        return VCS_REFUSED if is_vcs(path) else "its name points outside the project"
    parts = path.split("/")
    folder = str(recorder.root)
    for part in parts[:-1]:
        folder = f"{folder}{os.sep}{part}"
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            return ""  # created on the way, as a real folder
        except OSError as exc:
            return f"its folder cannot be read ({exc.strerror})"
        if stat.S_ISLNK(st.st_mode):
            return "a folder on its path is a symbolic link; left as it is"
        if not stat.S_ISDIR(st.st_mode):
            return FILE_IN_THE_WAY
    try:
        st = os.lstat(f"{recorder.root}{os.sep}{path}")
    except OSError:
        return ""
    if stat.S_ISDIR(st.st_mode):
        return FOLDER_IN_THE_WAY
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return "it has other hard links (treated as outside the project); left as it is"
    return ""


FOLDER_IN_THE_WAY = "a folder is in the way; left as it is"
FILE_IN_THE_WAY = "a file is in the way of its folder; left as it is"
FOLDER_HOLDS_MORE = (
    "a folder of that name is in the way, holding files a restore does not cover; left as it is"
)


def _clear_own_way(root: Path, items: list[PlanItem]) -> tuple[PlanItem, ...]:
    """A file that turned into a folder of the same name (``util`` -> ``util/__init__.py``),
    or back: the plan's own deletions clear the way, since deletions are written first.
    Where they do not (the folder holds other files, a ``__pycache__``), the deletions under
    it are kept too, so a restore never leaves neither the file nor the folder."""
    deleted = {i.path for i in items if i.action == "delete" and not i.problem and not i.outside}
    kept: dict[str, str] = {}  # folder -> the file its files are kept for
    out: list[PlanItem] = []
    for item in items:
        if item.problem == FILE_IN_THE_WAY and _blocking_file(root, item.path) in deleted:
            item = replace(item, problem="")
        elif item.problem == FOLDER_IN_THE_WAY:
            if _emptied_by(root, item.path, deleted):
                item = replace(item, problem="")
            else:
                kept[item.path] = item.path
                item = replace(item, problem=FOLDER_HOLDS_MORE)
        out.append(item)
    if not kept:
        return tuple(out)
    return tuple(
        replace(i, problem=f"left as it is, as {_blocked_by(i.path, kept)} is (see there)")
        if not i.problem and _blocked_by(i.path, kept)
        else i
        for i in out
    )


def _blocked_by(path: str, kept: dict[str, str]) -> str:
    parts = path.split("/")
    for end in range(1, len(parts)):
        folder = "/".join(parts[:end])
        if folder in kept:
            return kept[folder]
    return ""


def _blocking_file(root: Path, path: str) -> str:
    """The first folder of ``path`` that is not a folder on disk ("" when none is)."""
    parts = path.split("/")
    for end in range(1, len(parts)):
        prefix = "/".join(parts[:end])
        try:
            if not stat.S_ISDIR(os.lstat(f"{root}{os.sep}{prefix}").st_mode):
                return prefix
        except OSError:
            return ""
    return ""


def _emptied_by(root: Path, folder: str, deleted: set[str]) -> bool:
    """Whether deleting ``deleted`` leaves ``folder`` empty, so the deletions remove it
    (a folder is removed once a deletion empties it). Looked at without following links,
    and no further than those deletions reach."""
    under = {p for p in deleted if p.startswith(f"{folder}/")}
    needed = {p.rsplit("/", 1)[0] for p in under}  # folders that hold a deleted file
    for path in list(needed):
        while "/" in path and path != folder:
            path = path.rsplit("/", 1)[0]
            needed.add(path)
    stack, seen = [folder], 0
    while stack:
        current = stack.pop()
        try:
            with os.scandir(f"{root}{os.sep}{current}") as entries:
                for entry in entries:
                    rel = f"{current}/{entry.name}"
                    seen += 1
                    if seen > len(under) + len(needed) + 1:
                        return False  # more there than the deletions account for
                    if entry.is_dir(follow_symlinks=False):
                        if rel not in needed:
                            return False
                        stack.append(rel)
                    elif rel not in under:
                        return False
        except OSError:
            return False
    return True


def _item(
    recorder: Recorder, path: str, target: Ref, current: Ref, *, outside: bool, problem: str
) -> PlanItem:
    if target[0] == ABSENT:
        action = "delete"
    elif current[0] == ABSENT:
        action = "create"
    elif _same_content(recorder, target[0], current[0]):
        action = "mode"
    else:
        action = "modify"
    added = removed = 0
    binary = False
    if action != "mode" and NOT_CAPTURED not in (target[0], current[0]):
        old = _bytes_now(recorder, path, current)
        new = content(recorder, target[0]) if target[0] != ABSENT else b""
        added, removed, binary = line_counts(old or b"", new or b"", path)
    return PlanItem(path, action, target, current, added, removed, binary, outside, problem)


def _same_content(recorder: Recorder, a: str, b: str) -> bool:
    return a == b or _digest(recorder, a) == _digest(recorder, b)


def _bytes_now(recorder: Recorder, path: str, current: Ref) -> bytes | None:
    if current[0] == ABSENT:
        return b""
    st = scan.lstat(recorder.root, path)
    return recorder.read(path, st) if st is not None else None


def line_counts(old: bytes, new: bytes, path: str) -> tuple[int, int, bool]:
    """(+lines, -lines, binary) from ``old`` to ``new``."""
    if b"\0" in old[:8192] or b"\0" in new[:8192]:
        return 0, 0, True
    if len(old) > DIFF_MAX_BYTES or len(new) > DIFF_MAX_BYTES:
        return new.count(b"\n"), old.count(b"\n"), False
    _diff, added, removed = unified_diff(
        old.decode("utf-8", "replace"), new.decode("utf-8", "replace"), path
    )
    return added, removed, False


def diff_text(recorder: Recorder, item: PlanItem) -> str:
    """The unified diff of one planned change, from the file now to the file restored (a
    name on one line, escaped as in a diff header), and the ID bits it comes back without."""
    name = header_name(item.path)
    dropped = item.id_bits_dropped
    verb = "are" if dropped.endswith("bits") else "is"
    note = f"{name}: its {dropped} {verb} not restored (as git does)\n" if dropped else ""
    return _change_text(recorder, item, name) + note


def _change_text(recorder: Recorder, item: PlanItem, name: str) -> str:
    if item.action == "mode":
        old_mode, new_mode = item.current[1] & 0o7777, _safe(item.target)[1] & 0o7777
        return f"{name}: mode {old_mode:04o} -> {new_mode:04o}\n"
    old = _bytes_now(recorder, item.path, item.current) or b""
    new = content(recorder, item.target[0]) if item.target[0] != ABSENT else b""
    new = new or b""
    if b"\0" in old[:8192] or b"\0" in new[:8192]:
        return f"Binary file {name} differs\n"
    if len(old) > DIFF_MAX_BYTES or len(new) > DIFF_MAX_BYTES:
        return f"{name}: too large to show a diff ({len(old):,} -> {len(new):,} bytes)\n"
    text, _added, _removed = unified_diff(
        old.decode("utf-8", "replace"),
        new.decode("utf-8", "replace"),
        item.path,
        created=item.action == "create",
    )
    return text


# -- applying -----------------------------------------------------------------------------------


def apply(
    recorder: Recorder, restore_plan: RestorePlan, *, include_outside: bool = False
) -> RestoreResult:
    """Write the plan's files. The caller captured the current state just before (so the
    restore can be undone); if any planned file changed since the plan was made, nothing is
    written and :class:`RestoreError` says which."""
    if restore_plan.problem:
        raise RestoreError(restore_plan.problem)
    store = recorder.store
    chosen = _chosen(restore_plan, include_outside)
    result = RestoreResult()
    with store.writing():
        cache = store.cache()
        _raise_if_moved(_moved_since_plan(recorder, cache, chosen))
        contents: dict[str, bytes] = {}
        for item in chosen:
            if item.target[0] != ABSENT:
                data = content(recorder, item.target[0])
                if data is None:
                    raise RestoreError(f"the store has lost {item.path}; nothing was written")
                contents[item.path] = data
        # Deletions first: one may empty (and so remove) a folder in the way of a file.
        for item in sorted(chosen, key=lambda i: i.target[0] != ABSENT):
            try:
                if item.target[0] == ABSENT:
                    delete_file(recorder.root, item.path)
                    result.deleted.append(item.path)
                else:
                    path, data = item.path, contents[item.path]
                    write_file(recorder.root, path, data, _safe(item.target)[1])
                    result.written.append(item.path)
                    if item.id_bits_dropped:
                        result.id_bits_dropped.append(item.path)
            except LinkRefused as exc:
                result.failed.append((item.path, exc.reason))
            except (OSError, RestoreError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                result.failed.append((item.path, why))
        result.seq = recorder.capture().seq
    return result


def check_unchanged(
    recorder: Recorder, restore_plan: RestorePlan, *, include_outside: bool = False
) -> None:
    """Raise :class:`RestoreError` when a file the plan would write changed since it was made.

    Called before the current files are checkpointed for the restore: that checkpoint would
    take in the change, and the next plan would no longer name the file as changed outside
    agentsh (so it could be overwritten without the second confirmation)."""
    if restore_plan.problem:
        raise RestoreError(restore_plan.problem)
    store = recorder.store
    with store.writing():
        moved = _moved_since_plan(recorder, store.cache(), _chosen(restore_plan, include_outside))
    _raise_if_moved(moved)


def _chosen(restore_plan: RestorePlan, include_outside: bool) -> list[PlanItem]:
    return [
        item
        for item in restore_plan.items
        if not item.problem and (include_outside or not item.outside)
    ]


def _raise_if_moved(moved: str) -> None:
    if moved:
        raise RestoreError(
            f"{moved} changed after the restore was planned; nothing was written. "
            "Look at the files and plan the restore again."
        )


def _moved_since_plan(recorder: Recorder, cache: dict[str, CacheRow], items: list[PlanItem]) -> str:
    """The first planned path whose content is no longer what the plan saw, or ""."""
    seen = {s.path: s for s in recorder.observe(cache).seen}
    for item in items:
        if item.path in seen:
            now = recorder.current_refs([seen[item.path]])[item.path]
        else:
            row = cache.get(item.path)
            now = (row.ref, row.mode) if row is not None else (ABSENT, 0)
        if not _same(recorder, now, item.current):
            return item.path
    return ""
