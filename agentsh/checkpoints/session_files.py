"""The file checkpoints of the agent's session, as an interactive front end asks about them.

A front end that moves the leaf offers to bring the files along: :meth:`SessionFiles.plan`
says what would change, :meth:`SessionFiles.diff` shows it, :meth:`SessionFiles.restore`
does it. The slow halves (listing and reading the project, writing files) run in a worker
thread; what appends to the session log runs on the caller's event loop, where the session is
used, so the log is never written from two threads. :meth:`SessionFiles.marks` feeds the tree
pane's ``✎ N files`` and :meth:`SessionFiles.listing` the ``/checkpoints`` list.

Nothing here restores on its own: a front end calls :meth:`SessionFiles.restore` on the
user's answer, never headless ``-p``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass

from agentsh.checkpoints.checkpointer import Checkpointer, CheckpointFailure
from agentsh.checkpoints.history import Mark
from agentsh.checkpoints.restore import RestoreError, RestorePlan, RestoreResult, diff_text
from agentsh.session.entries import CheckpointEntry
from agentsh.session.session import Session


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    """One line of ``/checkpoints``: a record, the entry it stands at, and whether it can
    still restore files (``problem`` says why not)."""

    record: CheckpointEntry
    on_path: bool
    problem: str = ""


class SessionFiles:
    """The files of the session the agent holds (``session`` is asked each time: the agent
    switches sessions)."""

    def __init__(self, checkpointer: Checkpointer, session: Callable[[], Session]) -> None:
        self.checkpointer = checkpointer
        self._session = session

    async def plan(self, entry_id: str) -> RestorePlan:
        """What bringing the files to ``entry_id``'s state would change now: an empty plan
        when no checkpoint is known there (nothing to offer), a plan whose ``problem`` says
        why nothing can be restored (the history was evicted, the store is unusable)."""
        c = self.checkpointer
        record = c.target(self._session(), entry_id)
        if record is None:
            return RestorePlan(0, entry_id=entry_id)
        try:
            return await asyncio.to_thread(c.plan_record, record, entry_id)
        except CheckpointFailure as exc:
            return RestorePlan(
                record.seq, problem=f"the checkpoint store cannot be read: {exc}", entry_id=entry_id
            )

    async def diff(self, plan: RestorePlan, paths: Collection[str] | None = None) -> str:
        """The unified diff of the plan's changes (of ``paths`` only, when given), from the
        files now to the files restored; a file that cannot be restored is left out."""
        recorder = self.checkpointer.recorder
        items = [
            item
            for item in plan.items
            if not item.problem and (paths is None or item.path in paths)
        ]

        def build() -> str:
            return "".join(diff_text(recorder, item) for item in items)

        try:
            return await asyncio.to_thread(build)
        except CheckpointFailure as exc:
            return f"(the diff cannot be shown: {exc})\n"

    async def restore(
        self, plan: RestorePlan, *, include_outside: bool = False, leaving: str | None = None
    ) -> RestoreResult:
        """Checkpoint the files as they are (at ``leaving``, the entry they belong to: the
        leaf the front end just moved away from), then write the plan. ``result.undo`` is
        that checkpoint. :class:`RestoreError` when nothing was written."""
        c = self.checkpointer
        if plan.problem:
            raise RestoreError(plan.problem)
        capture = await asyncio.to_thread(c.save_current, plan, include_outside=include_outside)
        session = self._session()
        before = c.record_current(session, capture, leaving)
        result = await asyncio.to_thread(c.write, plan, include_outside=include_outside)
        c.record_restored(self._session(), plan, result, before)
        return result

    def marks(self) -> dict[str, Mark]:
        """entry id -> the files its checkpoints changed (the tree pane's ``✎ N files``)."""
        return self.checkpointer.index(self._session()).marks()

    async def listing(self) -> list[CheckpointRow]:
        """Every checkpoint record of the session, oldest first, for ``/checkpoints``."""
        session = self._session()
        records = self.checkpointer.index(session).records()
        if not records:
            return []
        on_path = set(session.tree.path_ids())
        try:
            horizon, store_id = await asyncio.to_thread(self._store_facts)
        except CheckpointFailure as exc:
            why = f"the checkpoint store cannot be read: {exc}"
            return [CheckpointRow(r, r.target_id in on_path, why) for r in records]
        rows: list[CheckpointRow] = []
        for record in records:
            problem = ""
            if record.store != store_id:
                problem = "from another checkpoint store"
            elif record.seq < horizon:
                problem = "its file history was dropped (store budget)"
            rows.append(CheckpointRow(record, record.target_id in on_path, problem))
        return rows

    def _store_facts(self) -> tuple[int, str]:
        store = self.checkpointer.recorder.store
        with store.reading():
            return store.horizon(), store.store_id

    def take_notices(self) -> list[str]:
        """What the user has not been told yet (evictions, failures), once."""
        return self.checkpointer.take_notices()
