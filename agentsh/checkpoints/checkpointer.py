"""The one object the agent, the CLI and the TUI use: checkpoint a session, plan and restore.

:meth:`Checkpointer.checkpoint` captures the project's files and, when they differ from what
the session's current entry already stands for, appends a ``checkpoint`` record pointing at
it; so a session whose turns change no file gains no record at all. It never raises: a failure
becomes a notice (the turn goes on, the user is told its file changes cannot be restored), as
does every eviction the store budget forces.

:meth:`Checkpointer.restore` checkpoints the current state first (so a restore is undone by
restoring the entry that was current), then writes the plan. Nothing here restores on its
own: only a front end acting on the user's answer calls it (headless ``-p`` never does).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import agentsh.checkpoints.budget as budget
from agentsh.checkpoints.capture import Capture, Recorder
from agentsh.checkpoints.history import RESTORED, CheckpointIndex
from agentsh.checkpoints.restore import (
    RestoreError,
    RestorePlan,
    RestoreResult,
    apply,
    check_unchanged,
    plan,
)
from agentsh.checkpoints.scan import ScanError, TooManyFiles
from agentsh.checkpoints.store import CheckpointStore, StoreError
from agentsh.config import CheckpointSettings
from agentsh.git_listing import known_listing_refusal
from agentsh.gitutil import GitError
from agentsh.paths import UserPaths
from agentsh.session.entries import CheckpointEntry
from agentsh.session.log import SessionError
from agentsh.session.session import Session

#: file names a checkpoint record lists (the count covers the rest)
FILES_LISTED = 20

CheckpointFailure = (StoreError, ScanError, GitError, sqlite3.Error, OSError)


class Checkpointer:
    """Checkpoints of one project; the store opens on first use (nothing at start-up)."""

    def __init__(
        self, user: UserPaths, root: Path, settings: CheckpointSettings, *, create: bool = True
    ) -> None:
        self.user = user
        self.root = root
        self.settings = settings
        self.create = create  # False: never create a store (commands that only look)
        self._recorder: Recorder | None = None
        self._index: tuple[Session, CheckpointIndex] | None = None
        self._notices: list[str] = []
        self._told: set[str] = set()
        self._lock = threading.RLock()
        self._warming: threading.Thread | None = None
        self._closed = False
        self._off = ""  # why checkpoints gave up for this run ("": they did not)
        self.last_capture: Capture | None = None

    @property
    def recorder(self) -> Recorder:
        """The project's recorder (opens the store; raises :class:`StoreError`)."""
        if self._recorder is None:
            store = CheckpointStore.open(self.user, self.root, create=self.create)
            self._recorder = Recorder(store, self.root, max_file_bytes=self.settings.max_file_bytes)
        return self._recorder

    def index(self, session: Session) -> CheckpointIndex:
        if self._index is None or self._index[0] is not session:
            self._index = (session, CheckpointIndex(session.tree))
        return self._index[1]

    # -- checkpointing ------------------------------------------------------------------------

    def checkpoint(self, session: Session, reason: str) -> CheckpointEntry | None:
        """Capture the files and record them at the session's leaf if they changed there.
        Never raises; problems become notices (see :meth:`take_notices`)."""
        capture = self.capture()
        return None if capture is None else self.record(session, reason, capture)

    def capture(self, paths: Sequence[Path] = ()) -> Capture | None:
        """The heavy half (listing, stat, reading, the store): safe in a worker thread.
        ``paths``: the only files that can have changed since the last capture (what a write
        or an edit just wrote), which spares listing the project. None when it failed (the
        user is told)."""
        with self._lock:
            if self._closed or self._off:
                return None
            try:
                capture = self.recorder.capture(self._relative(paths))
                self.last_capture = capture
                refused = known_listing_refusal(self.root)
                if refused is not None:  # listed by the walk instead: say why, once
                    self._tell(refused)
                if capture.changed or capture.baseline:
                    self._enforce_budget()
                return capture
            except TooManyFiles as exc:
                # Listing 150,000 files to find there are too many took 2-3 s, twice per tool
                # call: give up for this run instead.
                self._off = str(exc)
                self._tell(
                    f"Checkpoints are off for this run: {_why(exc)}. File changes cannot be "
                    "restored."
                )
            except CheckpointFailure as exc:
                self._tell(
                    f"Checkpoint failed ({_why(exc)}); the file changes of this step cannot be "
                    "restored."
                )
            except Exception as exc:  # noqa: BLE001 - a project that trips a bug of ours
                # (a RecursionError from a deep tree, once) must not end the user's turn
                self._tell(
                    f"Checkpoint failed (unexpected {type(exc).__name__}: {_why(exc)}); the file "
                    "changes of this step cannot be restored."
                )
            return None

    def record(self, session: Session, reason: str, capture: Capture) -> CheckpointEntry | None:
        """The light half: append the record for ``capture`` at the leaf when the leaf does
        not already stand for those files. Run it where the session is used (the event loop)."""
        with self._lock:
            try:
                return self._record(session, reason, capture)
            except CheckpointFailure as exc:
                self._tell(f"Checkpoint not recorded ({_why(exc)}).")
            except SessionError as exc:
                self._tell(f"Checkpoint not recorded in the session log: {exc}")
            return None

    def _record(
        self, session: Session, reason: str, capture: Capture, at: str | None = None
    ) -> CheckpointEntry | None:
        """Return the record that stands for the files of ``capture`` at ``at`` (default: the
        leaf; an existing record when nothing changed there), or None when there is none."""
        leaf = at if at is not None else session.leaf_id
        if leaf is None or session.read_only or leaf not in session.tree.nodes:
            return None
        store = self.recorder.store
        index = self.index(session)
        if reason == "restore":
            # Files a restore put in place (and nobody touched since) belong to the entry
            # they were restored to, not to the leaf: recording them at the leaf would make
            # the leaf forget its own files, and the restore could not be undone.
            restored = _newest(index.records(), RESTORED)
            if restored is not None and (restored.store, restored.seq) == (
                store.store_id,
                capture.seq,
            ):
                return restored
        state = index.state_at(leaf)
        known = state if state is not None and state.store == store.store_id else None
        if known is not None and known.seq == capture.seq:
            return known  # the leaf already stands for these files
        if known is not None:
            with store.reading():
                files, changed = store.paths_between(known.seq, capture.seq, FILES_LISTED)
        else:
            files, changed = sorted(capture.changed)[:FILES_LISTED], len(capture.changed)
        entry = CheckpointEntry(
            id=session.new_id(),
            parent_id=None,
            target_id=leaf,
            store=store.store_id,
            seq=capture.seq,
            reason=reason,
            files=tuple(files),
            changed=changed,
        )
        session.append(entry)
        return entry

    def _record_restored(self, session: Session, target: str, result: RestoreResult) -> None:
        """Files just restored stand for ``target`` (see :meth:`_record`)."""
        changed = sorted(result.written + result.deleted)
        if not changed or target not in session.tree.nodes or session.read_only:
            return
        session.append(
            CheckpointEntry(
                id=session.new_id(),
                parent_id=None,
                target_id=target,
                store=self.recorder.store.store_id,
                seq=result.seq,
                reason=RESTORED,
                files=tuple(changed[:FILES_LISTED]),
                changed=len(changed),
            )
        )

    def _enforce_budget(self) -> None:
        budget_bytes = self.settings.store_max_mb * 1_000_000
        report = budget.enforce_budget(self.user, budget_bytes, self.recorder.store)
        for sentence in report.evictions:
            self._tell(sentence, once=False)
        if report.shortfall:
            self._tell(report.shortfall)

    def _relative(self, paths: Sequence[Path]) -> list[str]:
        """``paths`` as the store names them; [] (look at everything) if one is outside.
        A file outside the project (an ``--add-dir`` folder's) is not checkpointed, and the
        user is told so once per folder: no restore brings it back."""
        out: list[str] = []
        outside = False
        for path in paths:
            try:
                out.append(path.relative_to(self.root).as_posix())
            except ValueError:
                outside = True
                self._tell(
                    f"{path.parent} is outside the project: file checkpoints do not cover "
                    "what is written there, and no restore brings it back."
                )
        return [] if outside else out

    def take_notices(self) -> list[str]:
        """What the user has not been told yet (evictions, failures), once."""
        with self._lock:
            taken, self._notices = self._notices, []
        return taken

    def _tell(self, text: str, *, once: bool = True) -> None:
        if once and text in self._told:
            return
        self._told.add(text)
        self._notices.append(text)

    # -- restoring ----------------------------------------------------------------------------

    def target(self, session: Session, entry_id: str) -> CheckpointEntry | None:
        """The checkpoint record whose files ``entry_id`` stands for (None: no files known)."""
        return self.index(session).state_at(entry_id)

    def plan(self, session: Session, entry_id: str) -> RestorePlan:
        """What bringing the files to ``entry_id``'s state would change now."""
        state = self.target(session, entry_id)
        if state is None:
            return RestorePlan(
                0, problem="no checkpoint of the files at or before this entry", entry_id=entry_id
            )
        return self.plan_record(state, entry_id)

    def plan_record(self, record: CheckpointEntry, entry_id: str = "") -> RestorePlan:
        """What bringing the files to one checkpoint record's state would change now."""
        recorder = self.recorder
        if record.store != recorder.store.store_id:
            return RestorePlan(
                record.seq,
                problem="its checkpoint store is gone (it was reset or belongs to another folder)",
                entry_id=entry_id or record.target_id,
            )
        return replace(plan(recorder, record.seq), entry_id=entry_id or record.target_id)

    def restore(
        self,
        session: Session,
        restore_plan: RestorePlan,
        *,
        include_outside: bool = False,
        leaving: str | None = None,
    ) -> RestoreResult:
        """Checkpoint the current state at ``leaving`` (the entry the files belong to now:
        default the leaf; a front end that moved the leaf first passes the old one), then
        write the plan (raises :class:`RestoreError` when nothing could be written).

        A front end with an event loop runs the same three steps itself, the two slow ones
        (:meth:`save_current`, :meth:`write`) in a worker thread and the two that append to
        the session log where the session is used."""
        with self._lock:
            saved = self.save_current(restore_plan, include_outside=include_outside)
            before = self.record_current(session, saved, leaving)
            result = self.write(restore_plan, include_outside=include_outside)
            self.record_restored(session, restore_plan, result, before)
            return result

    def save_current(self, restore_plan: RestorePlan, *, include_outside: bool = False) -> Capture:
        """Capture the files as they are, before a restore. :class:`RestoreError` when a
        planned file changed since the plan (checked first: the capture would take the
        change in, and it would no longer count as made outside agentsh), or when the
        capture fails (the restore could not be undone, so it must not start)."""
        with self._lock:
            try:
                check_unchanged(self.recorder, restore_plan, include_outside=include_outside)
                capture = self.recorder.capture()
            except CheckpointFailure as exc:
                raise RestoreError(
                    f"the current files could not be checkpointed first ({_why(exc)}), so the "
                    "restore could not be undone; nothing was written"
                ) from exc
            self.last_capture = capture
            return capture

    def record_current(
        self, session: Session, capture: Capture, leaving: str | None = None
    ) -> CheckpointEntry | None:
        """The record standing for the files :meth:`save_current` saw, at ``leaving``."""
        with self._lock:
            try:
                return self._record(session, "restore", capture, leaving)
            except CheckpointFailure as exc:
                raise RestoreError(
                    f"the current files could not be checkpointed first ({_why(exc)}); "
                    "nothing was written"
                ) from exc

    def write(self, restore_plan: RestorePlan, *, include_outside: bool = False) -> RestoreResult:
        """Write the plan's files (see :func:`agentsh.checkpoints.restore.apply`)."""
        with self._lock:
            try:
                return apply(self.recorder, restore_plan, include_outside=include_outside)
            except CheckpointFailure as exc:
                raise RestoreError(f"the restore stopped: {_why(exc)}") from exc

    def record_restored(
        self,
        session: Session,
        restore_plan: RestorePlan,
        result: RestoreResult,
        before: CheckpointEntry | None,
    ) -> None:
        """Note in the log that the restored files stand for the plan's entry; ``before``
        (the record of the files as they were) is how the restore is undone."""
        with self._lock:
            result.undo = before
            try:
                self._record_restored(session, restore_plan.entry_id, result)
            except SessionError as exc:
                self._tell(f"The restore was not recorded in the session log: {exc}")

    def warm(self) -> None:
        """Start the first capture in the background: in a project never captured before it
        reads every file once (about a second for 10,000 files), which would otherwise delay
        the first message. Checkpoints wait for it through the lock."""
        if self._warming is None:
            self._warming = threading.Thread(
                target=self.capture, name="checkpoint-warm-up", daemon=True
            )
            self._warming.start()

    def close(self) -> None:
        with self._lock:  # waits for a capture in progress (the warm-up's too)
            self._closed = True
            if self._recorder is not None:
                self._recorder.store.close()
                self._recorder = None


def _newest(records: list[CheckpointEntry], reason: str) -> CheckpointEntry | None:
    for record in reversed(records):
        if record.reason == reason:
            return record
    return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        name = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{name}"
    return str(exc) or type(exc).__name__
