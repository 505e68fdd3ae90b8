"""The ``checkpoint`` session record: its JSON, what an older agentsh makes of it, and that it
survives resume, fork, the catalog and ``sessions show``."""

from __future__ import annotations

import json
from pathlib import Path

from agentsh.checkpoints.history import CheckpointIndex
from agentsh.paths import UserPaths
from agentsh.session import export
from agentsh.session.catalog import Catalog
from agentsh.session.entries import (
    CheckpointEntry,
    Role,
    UnknownEntry,
    encode_line,
)
from agentsh.session.entry_parse import entry_from_json
from agentsh.session.session import Session
from agentsh.session.tree import SessionTree


def record(
    target: str,
    seq: int,
    entry_id: str = "c0000001",
    *,
    reason: str = "",
    files: tuple[str, ...] = (),
    changed: int = 0,
) -> CheckpointEntry:
    return CheckpointEntry(
        id=entry_id,
        parent_id=None,
        target_id=target,
        store="s1",
        seq=seq,
        reason=reason,
        files=files,
        changed=changed,
    )


def _state(index: CheckpointIndex, entry_id: str) -> CheckpointEntry:
    """The record ``entry_id`` stands for, which the test expects to exist."""
    state = index.state_at(entry_id)
    assert state is not None, f"no checkpoint at {entry_id}"
    return state


def test_a_record_round_trips_through_json() -> None:
    entry = record("m1", 7, reason="tool", files=("a.py", "b/c.txt"), changed=3)
    line = encode_line(entry)
    assert entry_from_json(json.loads(line)) == entry
    quiet = record("m1", 7, reason="user")
    assert "files" not in quiet.to_json()  # nothing changed: no file list written


def test_an_older_agentsh_keeps_it_as_an_annotation_that_changes_nothing() -> None:
    # What a version without the type does: an UnknownEntry, parentless with a targetId.
    raw = record("m1", 7, reason="tool", files=("a.py",), changed=1).to_json()
    unknown = UnknownEntry(id=raw["id"], parent_id=None, raw=raw)
    assert not unknown.is_node
    session = Session.create(None, Path("/p"))
    first = session.append_message(Role.USER, "hi")
    tree, problems = SessionTree.build([first, unknown])
    assert problems == [] and tree.leaf_id == first.id and list(tree.nodes) == [first.id]


def test_records_survive_resume_and_fork_and_keep_their_meaning(tmp_path: Path) -> None:
    session = Session.create(tmp_path, Path("/p"))
    user = session.append_message(Role.USER, "hi")
    session.append(record(user.id, 1, "c1"))
    reply = session.append_message(Role.ASSISTANT, "hello")
    session.append(record(reply.id, 2, "c2", files=("x",), changed=1))
    follow = session.append_message(Role.USER, "more")
    # Back at the first message later, with other files: recorded there, after `reply` exists.
    session.move_leaf(user.id)
    session.append(record(user.id, 9, "c9"))
    session.sync()
    path = session.path
    assert path is not None
    session.close()

    resumed = Session.open(path)
    index = CheckpointIndex(resumed.tree)
    assert [r.id for r in index.records()] == ["c1", "c2", "c9"]
    assert _state(index, user.id).id == "c9"
    # `reply` was made when `user` stood for seq 1: the later record does not reach it.
    assert _state(index, reply.id).id == "c2"
    assert _state(index, follow.id).id == "c2"
    assert index.marks()[reply.id].files == ("x",)

    fork = resumed.fork(tmp_path, follow.id)
    copied = CheckpointIndex(fork.tree)
    assert [(r.target_id, r.seq) for r in copied.records()] == [(user.id, 1), (reply.id, 2)]
    assert _state(copied, follow.id).seq == 2
    fork.close()
    resumed.close()


def test_the_catalog_and_sessions_show_treat_records_as_annotations(
    tmp_path: Path, agentsh_home: Path
) -> None:
    user_paths = UserPaths.from_env()
    folder = user_paths.project_sessions_dir(tmp_path)
    session = Session.create(folder, tmp_path)
    first = session.append_message(Role.USER, "hi")
    session.append(record(first.id, 1, "c1", files=("a",), changed=1))
    session.append_message(Role.ASSISTANT, "hello")
    session.close()
    (info,) = Catalog(user_paths).list(tmp_path)
    assert info.entries == 2 and info.messages == 2
    assert session.path is not None
    shown = Session.open(session.path, lock=False)
    assert "checkpoint" not in "\n".join(export.transcript_lines(shown))
    data = export.session_json(shown, tree=True)
    assert [e["type"] for e in data["entries"]] == ["message", "message"]
    assert export.entry_summary(record(first.id, 1)) == "[checkpoint record]"
    shown.close()
