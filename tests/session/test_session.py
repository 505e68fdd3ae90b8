"""Session operations on real files: appends, the leaf, labels, branching, forks, durability."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentsh.session import entries as E
from agentsh.session.entries import LeafEntry, MessageEntry, Role, ToolCall
from agentsh.session.log import SessionError, SessionReadOnly, gc_paused, keep_frozen
from agentsh.session.session import Session
from tests.session.helpers import conversation


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


def reload(session: Session) -> Session:
    assert session.path is not None
    return Session.open(session.path, lock=False)


def test_no_file_exists_until_the_first_append(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    assert session.path is not None and not session.path.exists()
    session.close()
    assert not folder.exists()
    session.append_message(Role.USER, "hi")
    assert session.path.exists()
    session.close()


def test_file_name_and_header_follow_the_spec(folder: Path) -> None:
    session = Session.create(folder, Path("/work"), parent_session="p-123")
    session.append_message(Role.USER, "hi")
    session.close()
    assert session.path is not None
    stamp, _, rest = session.path.name.partition("_")
    assert rest == f"{session.id}.jsonl" and stamp.endswith("Z") and "T" in stamp
    header = json.loads(session.path.read_bytes().split(b"\n")[0])
    assert header == {
        "type": "session",
        "version": E.FORMAT_VERSION,
        "id": session.id,
        "timestamp": header["timestamp"],
        "cwd": "/work",
        "parentSession": "p-123",
    }


def test_entries_round_trip_through_the_file(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    conversation(session, 3)
    session.close()
    again = reload(session)
    assert again.header == session.header
    assert again.tree.nodes == session.tree.nodes
    assert again.leaf_id == session.leaf_id and again.problems == []


def test_ids_are_short_and_unique_even_when_the_generator_collides(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.create(folder, Path("/work"))
    first = session.append_message(Role.USER, "one")
    fresh = iter([first.id, first.id, "0000beef"])
    monkeypatch.setattr("agentsh.session.session.new_id", lambda: next(fresh))
    second = session.append_message(Role.ASSISTANT, "two")
    assert second.id == "0000beef"
    session.close()


def test_appending_a_duplicate_id_or_a_missing_parent_is_refused(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    first = session.append_message(Role.USER, "one")
    with pytest.raises(SessionError, match="already exists"):
        session.append(MessageEntry(id=first.id, parent_id=None, role=Role.USER, content="x"))
    with pytest.raises(SessionError, match="not in this session"):
        session.append(MessageEntry(id="zz", parent_id="nope", role=Role.USER, content="x"))
    with pytest.raises(SessionError):
        session.move_leaf("nope")
    with pytest.raises(SessionError):
        session.set_label("nope", "x")
    session.close()
    assert len(reload(session).tree.nodes) == 1


def test_the_leaf_is_the_last_append_and_survives_a_reload(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    ids = conversation(session, 2)
    assert session.leaf_id == ids[-1]
    session.close()
    assert reload(session).leaf_id == ids[-1]


def test_moving_the_leaf_appends_a_record_and_a_resume_returns_there(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    ids = conversation(session, 2)
    session.move_leaf(ids[1])
    assert session.current_path()[-1].id == ids[1]
    session.close()
    assert session.path is not None
    last = json.loads(session.path.read_bytes().splitlines()[-1])
    assert last["type"] == "leaf" and last["targetId"] == ids[1]
    again = Session.open(session.path)
    assert again.leaf_id == ids[1]
    # "Start over" is remembered too.
    again.move_leaf(None)
    again.close()
    assert reload(session).leaf_id is None and reload(session).current_path() == []


def test_moving_to_the_current_leaf_writes_nothing(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    conversation(session, 1)
    assert session.path is not None
    size = session.path.stat().st_size
    session.move_leaf(session.leaf_id)
    assert session.path.stat().st_size == size
    session.close()


def test_labels_set_change_clear_and_survive_a_reload(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    ids = conversation(session, 1)
    session.set_label(ids[0], "  the\nstart  ")
    session.set_label(ids[1], "call")
    assert session.label(ids[0]) == "the start"  # one line, trimmed
    session.close()
    assert session.path is not None
    again = Session.open(session.path)
    assert again.tree.labels == {ids[0]: "the start", ids[1]: "call"}
    again.set_label(ids[1], "")
    again.set_label(ids[0], "renamed")
    again.close()
    assert reload(session).tree.labels == {ids[0]: "renamed"}
    # Labels are annotations: they do not move the leaf.
    assert reload(session).leaf_id == ids[-1]


def test_branching_appends_a_sibling_and_never_rewrites(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    ids = conversation(session, 2)
    assert session.path is not None
    before = session.path.read_bytes()
    # "Edit an earlier user message and send it": continue from its parent.
    second_user = ids[4]
    session.move_leaf(session.get(second_user).parent_id)
    edited = session.append_message(Role.USER, "question 1, edited")
    session.sync()
    after = session.path.read_bytes()
    assert after.startswith(before)  # every earlier byte is untouched
    assert session.tree.siblings(edited.id) == [second_user, edited.id]
    assert session.branch_position().index == 2 and session.branch_position().count == 2
    # The old branch can be returned to.
    session.move_leaf(session.tree.deepest_leaf(second_user))
    assert session.current_path()[-1].id == ids[-1]
    session.close()
    again = reload(session)
    assert again.tree.branch_points() == [ids[3]]
    assert again.leaf_id == ids[-1]


def test_fork_copies_the_path_with_labels_into_a_new_file_naming_its_parent(
    folder: Path,
) -> None:
    session = Session.create(folder, Path("/work"))
    ids = conversation(session, 2)
    session.set_label(ids[0], "start")
    child = session.fork(folder, to_id=ids[3])
    child.close()
    session.close()
    assert child.path != session.path and child.header.parent_session == session.id
    loaded = reload(child)
    assert [e.id for e in loaded.current_path()] == ids[:4]
    assert loaded.tree.labels == {ids[0]: "start"}
    assert loaded.header.cwd == "/work"


def test_a_read_only_view_refuses_appends(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    conversation(session, 1)
    session.close()
    view = reload(session)
    with pytest.raises(SessionReadOnly):
        view.append_message(Role.USER, "no")


def test_in_memory_sessions_write_nothing(agentsh_home: Path) -> None:
    session = Session.create(None, Path("/work"))
    conversation(session, 2)
    session.move_leaf(session.tree.roots[0])
    session.close()
    assert not session.persistent and session.leaf_id == session.tree.roots[0]
    assert list(agentsh_home.rglob("*")) == []


def test_tool_calls_with_invalid_json_arguments_are_never_written_as_is(folder: Path) -> None:
    session = Session.create(folder, Path("/work"))
    entry = session.append_message(
        Role.ASSISTANT, "", tool_calls=(ToolCall(id="c", name="bash", arguments='{"cmd": "ls'),)
    )
    assert json.loads(entry.tool_calls[0].arguments) == {"_invalid_arguments": '{"cmd": "ls'}
    session.close()


def test_fsync_happens_per_turn_by_default_and_per_entry_when_asked(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    per_turn = Session.create(folder, Path("/work"))
    per_turn.append_message(Role.USER, "one")
    after_create = len(calls)  # creating the file syncs the header and the folder
    per_turn.append_message(Role.ASSISTANT, "two")
    per_turn.append_message(Role.USER, "three")
    assert len(calls) == after_create  # no fsync mid-turn
    per_turn.sync()
    assert len(calls) == after_create + 1
    per_turn.sync()
    assert len(calls) == after_create + 1  # nothing new to sync
    per_turn.close()

    calls.clear()
    per_entry = Session.create(folder, Path("/work"), fsync_each=True)
    per_entry.append_message(Role.USER, "one")
    baseline = len(calls)
    per_entry.append_message(Role.ASSISTANT, "two")
    per_entry.append_message(Role.USER, "three")
    assert len(calls) == baseline + 2
    per_entry.close()


def test_close_syncs_what_was_appended(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session.create(folder, Path("/work"))
    session.append_message(Role.USER, "one")
    session.append_message(Role.ASSISTANT, "two")
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    session.close()
    assert len(synced) == 1


def test_each_entry_is_written_with_one_write_call(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.create(folder, Path("/work"))
    session.append_message(Role.USER, "first")  # creates the file (header write)
    writes: list[bytes] = []
    real_write = os.write

    def recording_write(fd: int, data: bytes | memoryview) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", recording_write)
    session.append_message(Role.ASSISTANT, "x" * 100_000)
    session.move_leaf(session.tree.roots[0])
    assert len(writes) == 2
    assert all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)
    session.close()


def test_leaf_record_targets_must_exist() -> None:
    session = Session.create(None, Path("/work"))
    with pytest.raises(SessionError):
        session.append(LeafEntry(id="l", parent_id=None, target_id="missing"))


def test_loading_leaves_the_garbage_collector_as_it_found_it(folder: Path) -> None:
    import gc

    session = Session.create(folder, Path("/work"))
    conversation(session, 2)
    session.close()
    assert session.path is not None
    assert gc.isenabled()
    Session.open(session.path, lock=False)
    assert gc.isenabled()
    gc.disable()
    try:
        Session.open(session.path, lock=False)
        assert not gc.isenabled()
    finally:
        gc.enable()
    # Objects the program froze itself stay frozen (the load only promotes when none are).
    gc.freeze()
    keep_frozen(True)
    try:
        frozen = gc.get_freeze_count()
        Session.open(session.path, lock=False)
        assert gc.get_freeze_count() == frozen
    finally:
        keep_frozen(False)
        gc.unfreeze()


def test_a_promotion_never_counts_the_frozen_objects(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting them walks every one (50 ms per 3 million, on the UI thread at each entry of a
    turn, where the tree pane pauses the collector): in CI, 287 ms in one go."""
    import gc

    def walks_them_all() -> int:
        raise AssertionError("gc.get_freeze_count() walks every frozen object")

    monkeypatch.setattr(gc, "get_freeze_count", walks_them_all)
    session = Session.create(folder, Path("/work"))
    conversation(session, 2)
    session.close()
    assert session.path is not None
    with gc_paused(promote=True):
        pass
    Session.open(session.path, lock=False)


@pytest.mark.parametrize("on_disk", [True, False])
def test_a_reply_with_lone_surrogates_is_kept_as_written(tmp_path: Path, on_disk: bool) -> None:
    """The entry kept in memory is the one written (its lone surrogates repaired): one that
    kept them failed again at the next request, when the client encoded it to send it."""
    session = Session.create(tmp_path if on_disk else None, tmp_path)
    session.append_message(Role.USER, "hi")
    text = "half an emoji: \ud83d, a whole one: \ud83d\ude00"
    entry = session.append_message(Role.ASSISTANT, text)
    expected = "half an emoji: \ufffd, a whole one: \U0001f600"
    assert isinstance(entry, MessageEntry) and entry.content == expected
    stored = session.current_path()[-1]
    assert isinstance(stored, MessageEntry) and stored.content == expected
    stored.content.encode("utf-8")
    if on_disk:
        assert session.path is not None
        session.close()
        again = Session.open(session.path)
        last = again.current_path()[-1]
        assert isinstance(last, MessageEntry) and last.content == expected
        again.close()
