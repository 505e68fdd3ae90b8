"""One open session: the file (if any), its tree, and the operations the agent and UI use.

This is the only way the rest of agentsh changes a session. Every change is an append:
messages and tool results become children of the leaf, moving the leaf or labelling an entry
appends an annotation record, and a fork copies the path into a new file that names its
parent. The file is created lazily on the first append, so opening agentsh and quitting leaves
nothing behind.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from agentsh.session import entries
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    CheckpointEntry,
    Header,
    LabelEntry,
    LeafEntry,
    MessageEntry,
    ModelCallEntry,
    NameEntry,
    Role,
    StopReason,
    ToolCall,
    ToolResultEntry,
    Usage,
    clean_name,
    encode_checked,
    new_id,
    now_iso,
)
from agentsh.session.entry_parse import entry_from_json
from agentsh.session.log import (
    LoadProblem,
    LogWriter,
    SessionError,
    SessionReadOnly,
    gc_paused,
    read_log,
)
from agentsh.session.tree import BranchPosition, SessionTree
from agentsh.values import loads_json

_E = TypeVar("_E", bound=AnyEntry)


class Session:
    def __init__(
        self,
        header: Header,
        tree: SessionTree,
        *,
        path: Path | None,
        writer: LogWriter | None = None,
        problems: list[LoadProblem] | None = None,
        read_only_reason: str = "",
        fsync_each: bool = False,
    ) -> None:
        self.header = header
        self.tree = tree
        self.path = path
        self.problems: list[LoadProblem] = problems or []
        self.read_only_reason = read_only_reason
        self._writer = writer
        self._fsync_each = fsync_each
        #: called with every entry right after it is written (the agent turns it into an
        #: :class:`~agentsh.session.entries.EntryAppended` event); one listener at a time
        self.on_append: Callable[[AnyEntry], None] | None = None

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        sessions_dir: Path | None,
        cwd: Path,
        *,
        parent_session: str | None = None,
        fsync_each: bool = False,
        session_id: str | None = None,
        repo: str | None = None,
    ) -> Session:
        """A new, empty session; ``sessions_dir=None`` keeps it in memory only.
        ``session_id`` (a UUID the caller checked) replaces the random one; ``repo`` is the
        project's git folder key (:func:`agentsh.session.affinity.repo_key`)."""
        session_id = session_id or str(uuid.uuid4())
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        header = Header(
            id=session_id,
            timestamp=now_iso(),
            cwd=str(cwd),
            version=entries.FORMAT_VERSION,
            parent_session=parent_session,
            repo=repo,
        )
        path = sessions_dir / f"{stamp}_{session_id}.jsonl" if sessions_dir else None
        return cls(header, SessionTree(), path=path, fsync_each=fsync_each)

    @classmethod
    def open(cls, path: Path, *, fsync_each: bool = False, lock: bool = True) -> Session:
        """Load a session file and take its lock (raises :class:`SessionLocked`).

        The lock is taken before the file is read, so nobody can append between the read and
        the first write of this process. ``lock=False`` opens a read-only view (listing,
        ``sessions show``, the source of a fork).
        """
        writer = LogWriter.open(path, fsync_each=fsync_each) if lock else None
        try:
            with gc_paused(promote=True):
                loaded = read_log(path)
                tree, tree_problems = SessionTree.build(
                    loaded.entries, loaded.line_numbers, loaded.damaged
                )
            if writer is not None:
                if loaded.read_only_reason:
                    writer.close()
                    writer = None
                elif loaded.migrated_from is not None:
                    writer.upgrade_file(loaded.migrated_from)
                else:
                    writer.needs_newline = not loaded.ends_with_newline
        except BaseException:
            if writer is not None:
                writer.close()
            raise
        problems = sorted(loaded.problems + tree_problems, key=lambda p: p.line)
        return cls(
            loaded.header,
            tree,
            path=path,
            writer=writer,
            problems=problems,
            read_only_reason=loaded.read_only_reason
            or ("" if lock else "opened as a read-only view"),
            fsync_each=fsync_each,
        )

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- properties -------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def leaf_id(self) -> str | None:
        return self.tree.leaf_id

    @property
    def persistent(self) -> bool:
        return self.path is not None

    def current_path(self) -> list[AnyEntry]:
        return self.tree.path()

    def branch_position(self) -> BranchPosition:
        return self.tree.branch_position()

    @property
    def read_only(self) -> bool:
        return bool(self.read_only_reason)

    def get(self, entry_id: str) -> AnyEntry:
        return self.tree.nodes[entry_id]

    def label(self, entry_id: str) -> str:
        return self.tree.labels.get(entry_id, "")

    # -- appending --------------------------------------------------------------------------

    def new_id(self) -> str:
        while True:
            candidate = new_id()
            if not self.tree.has_id(candidate):
                return candidate

    def append(self, entry: _E) -> _E:
        """Write ``entry`` (one line) and apply it to the tree; the write comes first."""
        if self.read_only_reason:
            raise SessionReadOnly(self.read_only_reason)
        if self.tree.has_id(entry.id):
            raise SessionError(f"entry id {entry.id} already exists in this session")
        if entry.is_node and entry.parent_id is not None and entry.parent_id not in self.tree.nodes:
            raise SessionError(f"parent {entry.parent_id} of {entry.id} is not in this session")
        target = (
            entry.target_id if isinstance(entry, LabelEntry | LeafEntry | CheckpointEntry) else None
        )
        if target is not None and target not in self.tree.nodes:
            raise SessionError(f"no entry {target} in this session")
        line, repaired = encode_checked(entry)
        if repaired:  # the entry as written (and as a reload reads it), also in memory
            entry = cast("_E", entry_from_json(json.loads(line)))
        if self.path is not None:
            if self._writer is None:
                self._writer = LogWriter.create(self.path, self.header, fsync_each=self._fsync_each)
            self._writer.append_line(line)
        self.tree.add(entry)
        if self.on_append is not None:
            self.on_append(entry)
        return entry

    def append_message(
        self,
        role: Role,
        content: str,
        *,
        tool_calls: tuple[ToolCall, ...] = (),
        model: str | None = None,
        usage: Usage | None = None,
        stop_reason: StopReason | None = None,
        error: str | None = None,
    ) -> MessageEntry:
        entry = MessageEntry(
            id=self.new_id(),
            parent_id=self.leaf_id,
            role=role,
            content=content,
            tool_calls=tuple(_valid_call(c) for c in tool_calls),
            model=model,
            usage=usage,
            stop_reason=stop_reason,
            error=error,
        )
        return self.append(entry)

    def append_tool_result(
        self,
        tool_call_id: str,
        tool_name: str,
        content: str,
        *,
        is_error: bool = False,
        truncated: bool = False,
        details: dict[str, Any] | None = None,
    ) -> ToolResultEntry:
        entry = ToolResultEntry(
            id=self.new_id(),
            parent_id=self.leaf_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=is_error,
            truncated=truncated,
            details=details or {},
        )
        return self.append(entry)

    def move_leaf(self, target_id: str | None) -> None:
        """Continue from ``target_id`` (None: start over from an empty context)."""
        if target_id == self.leaf_id:
            return
        if target_id is not None and target_id not in self.tree.nodes:
            raise SessionError(f"no entry {target_id} in this session")
        # Recorded even for "start over" (None), so a resume lands exactly here.
        self.append(LeafEntry(id=self.new_id(), parent_id=None, target_id=target_id))

    def set_label(self, target_id: str, label: str) -> None:
        """Label an entry; an empty label clears it. Appends a ``label`` record."""
        if target_id not in self.tree.nodes:
            raise SessionError(f"no entry {target_id} in this session")
        text = " ".join(label.split())  # one line: labels show inline in the tree
        if self.tree.labels.get(target_id, "") == text:
            return
        self.append(LabelEntry(id=self.new_id(), parent_id=None, target_id=target_id, label=text))

    @property
    def name(self) -> str:
        """The session's name ("" when it has none): the newest ``name`` record."""
        for record in reversed(self.tree.records):
            if isinstance(record, NameEntry):
                return record.name
        return ""

    def set_name(self, name: str) -> str:
        """Name the session (an empty name clears it); appends a ``name`` record unless the
        name is already this one. Returns the name as stored (one line, capped)."""
        cleaned = clean_name(name)
        if cleaned != self.name:
            self.append(NameEntry(id=self.new_id(), parent_id=None, name=cleaned))
        return cleaned

    def append_branch_summary(
        self, from_id: str, summary: str, usage: Usage | None = None
    ) -> BranchSummaryEntry:
        """Attach a summary of the branch that ended at ``from_id`` below the leaf; it becomes
        the leaf, so the next message is sent with it. ``usage`` is the call that wrote it."""
        entry = BranchSummaryEntry(
            id=self.new_id(), parent_id=self.leaf_id, from_id=from_id, summary=summary, usage=usage
        )
        return self.append(entry)

    def record_model_call(self, purpose: str, usage: Usage, note: str = "") -> ModelCallEntry:
        """Record a model call whose output is not kept (see :class:`ModelCallEntry`), durably:
        the session's tokens and cost count it from now on, whatever happens next."""
        entry = ModelCallEntry(
            id=self.new_id(), parent_id=None, purpose=purpose, usage=usage, note=note
        )
        entry = self.append(entry)
        self.sync()
        return entry

    def fork(
        self, sessions_dir: Path | None, to_id: str | None = None, *, session_id: str | None = None
    ) -> Session:
        """A new session holding the path root -> ``to_id`` (default: the leaf)."""
        child = Session.create(
            sessions_dir,
            Path(self.header.cwd),
            parent_session=self.id,
            fsync_each=self._fsync_each,
            session_id=session_id,
            repo=self.header.repo,
        )
        path = self.tree.path(to_id)
        checkpoints = _checkpoints_along(self.tree, path)
        for entry in path:
            child.append(entry)
            if label := self.tree.labels.get(entry.id):
                child.set_label(entry.id, label)
            for checkpoint in checkpoints.get(entry.id, ()):
                child.append(replace(checkpoint, id=child.new_id()))
        child.sync()
        return child

    # -- durability -------------------------------------------------------------------------

    def sync(self) -> None:
        """End of a turn: make everything appended so far durable."""
        if self._writer is not None:
            self._writer.sync()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _checkpoints_along(tree: SessionTree, path: list[AnyEntry]) -> dict[str, list[CheckpointEntry]]:
    """The checkpoint records a fork keeps: for each node of ``path``, those written before
    the next node of the path (all of them for its last node), so the files each copied node
    stands for are the same in the fork as in its parent."""
    records = tree.records
    position = {record.id: index for index, record in enumerate(records)}
    limit = {entry.id: len(records) for entry in path}
    for node, following in itertools.pairwise(path):
        limit[node.id] = position[following.id]
    kept: dict[str, list[CheckpointEntry]] = {}
    for index, record in enumerate(records):
        if isinstance(record, CheckpointEntry) and index < limit.get(record.target_id, -1):
            kept.setdefault(record.target_id, []).append(record)
    return kept


def _valid_call(call: ToolCall) -> ToolCall:
    """Never persist a tool call whose arguments are not a JSON object: it would poison every
    later request. Broken arguments are kept as a string field the model can see."""
    try:
        value = loads_json(call.arguments or "{}")
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return call
    return replace(call, arguments=json.dumps({"_invalid_arguments": call.arguments}))
