"""Hand-made damaged files: everything valid loads, and each problem is reported exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.session import entries as E
from agentsh.session.entries import MessageEntry, Role, UnknownEntry
from agentsh.session.log import SessionError, SessionReadOnly, read_log
from agentsh.session.session import Session
from tests.session.helpers import header, line, message


def write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"".join(parts))
    return path


def problems_of(session: Session) -> list[tuple[int, str]]:
    return [(p.line, p.message) for p in session.problems]


def every_kind_of_damage(version: int = 1) -> list[bytes]:
    future = {"type": "future", "id": "u1", "parentId": "m2", "timestamp": "t", "x": {"y": 1}}
    return [
        header(version=version),  # 1
        message("m1", None),  # 2
        message("m2", "m1", role="assistant"),  # 3
        b"this is not json at all\n",  # 4  garbage
        b'{"type":"message","id":"bad\xff\xfe","parentId":"m2"}\n',  # 5  not UTF-8
        message("o1", "missing-parent"),  # 6  orphan
        message("c1", "c2"),  # 7  cycle c1 -> c2 -> c1
        message("c2", "c1"),  # 8
        line(future),  # 9  unknown type: kept, no warning
        message("m2", "m1", "a second m2"),  # 10 duplicate id
        message("m3", "u1"),  # 11 valid, child of the unknown entry
        line({"type": "toolResult", "id": "t1", "parentId": "m3"}),  # 12 malformed known type
        line({"type": "label", "id": "l1", "parentId": None, "targetId": "nowhere", "label": "x"}),
        b'{"type":"message","id":"m4","parentId":"m3","timest',  # 14 torn last line
    ]


def test_every_kind_of_damage_loads_the_rest_with_one_warning_each(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", *every_kind_of_damage())
    session = Session.open(path, lock=False)
    assert list(session.tree.nodes) == ["m1", "m2", "u1", "m3"]
    m2 = session.tree.nodes["m2"]
    assert isinstance(m2, MessageEntry) and m2.content == "text of m2"
    assert session.leaf_id == "m3"
    assert [e.id for e in session.current_path()] == ["m1", "m2", "u1", "m3"]
    found = problems_of(session)
    assert len(found) == 8, found
    by_line = dict(found)
    assert "not valid JSON" in by_line[4]
    assert "not valid UTF-8" in by_line[5]
    assert "orphan" in by_line[6] and "missing-parent" in by_line[6]
    assert "cycle" in by_line[7] or "cycle" in by_line[8]
    assert "duplicate id m2" in by_line[10]
    assert "t1" in by_line[12]
    assert "nowhere" in by_line[13]
    assert "incomplete last line" in by_line[14]
    assert all("skipped" in text for _, text in found)


def test_unknown_entry_types_are_kept_shown_and_round_trip_through_a_fork(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", *every_kind_of_damage())
    session = Session.open(path, lock=False)
    unknown = session.get("u1")
    assert isinstance(unknown, UnknownEntry) and unknown.type_name == "future"
    child = session.fork(tmp_path / "forks")
    child.close()
    assert child.path is not None
    copied = [json.loads(raw) for raw in child.path.read_bytes().splitlines()[1:]]
    assert {"type": "future", "id": "u1", "parentId": "m2", "timestamp": "t", "x": {"y": 1}} in (
        copied
    )
    assert Session.open(child.path, lock=False).problems == []


def test_a_newer_format_loads_read_only_with_one_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", header(version=E.FORMAT_VERSION + 1), message("m1", None))
    session = Session.open(path)  # asking for the lock is fine: it is simply not taken
    assert list(session.tree.nodes) == ["m1"]
    assert len(session.problems) == 1 and "newer agentsh" in session.problems[0].message
    with pytest.raises(SessionReadOnly):
        session.append_message(Role.USER, "no")
    session.close()
    assert path.read_bytes().count(b"\n") == 2  # nothing written


def test_a_newer_format_with_damage_still_reports_each_problem_once(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", *every_kind_of_damage(version=E.FORMAT_VERSION + 1))
    session = Session.open(path, lock=False)
    assert list(session.tree.nodes) == ["m1", "m2", "u1", "m3"]
    assert len(session.problems) == 9


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_on_a_fresh_line(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header(),
        message("m1", None),
        b'{"type":"message","id":"m2","parentId":"m1","content":"half',
    )
    session = Session.open(path)
    assert session.leaf_id == "m1" and len(session.problems) == 1
    added = session.append_message(Role.ASSISTANT, "after the crash")
    session.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[2] == b'{"type":"message","id":"m2","parentId":"m1","content":"half'
    assert json.loads(lines[3])["id"] == added.id
    again = Session.open(path, lock=False)
    assert [e.id for e in again.current_path()] == ["m1", added.id]
    assert [(p.line, "incomplete" in p.message) for p in again.problems] == [(3, True)]


def test_a_valid_last_line_without_its_newline_is_kept_and_ended_by_the_next_append(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "s.jsonl", header(), message("m1", None).rstrip(b"\n"))
    session = Session.open(path)
    assert session.problems == [] and session.leaf_id == "m1"
    session.append_message(Role.ASSISTANT, "next")
    session.close()
    again = Session.open(path, lock=False)
    assert again.problems == [] and len(again.tree.nodes) == 2


def test_entries_below_a_damaged_line_are_attached_to_its_parent(tmp_path: Path) -> None:
    # Bit rot in the middle of a linear conversation: the line still shows its id and parent,
    # so only that entry is lost, not everything after it.
    rotten = message("m2", "m1", "some text")[:60] + b"\x00\x00garbage\n"
    path = write(
        tmp_path / "s.jsonl",
        header(),
        message("m1", None),
        rotten,
        message("m3", "m2"),
        message("m4", "m3"),
    )
    session = Session.open(path, lock=False)
    assert [e.id for e in session.current_path()] == ["m1", "m3", "m4"]
    assert len(session.problems) == 1 and session.problems[0].line == 3


def test_an_unrecognisable_damaged_line_orphans_its_children_in_one_report(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header(),
        message("m1", None),
        b"\x00\x01 nothing recognisable\n",
        message("m3", "m2"),
        message("m4", "m3"),
        message("m5", "m4"),
    )
    session = Session.open(path, lock=False)
    assert list(session.tree.nodes) == ["m1"]
    messages = [p.message for p in session.problems]
    assert len(messages) == 2
    assert "m3" in messages[1] and "with 2 entries below it" in messages[1]


def test_records_pointing_at_skipped_entries_are_not_reported_twice(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        header(),
        message("m1", None),
        message("o1", "ghost"),
        line({"type": "leaf", "id": "l1", "parentId": None, "targetId": "o1"}),
        line({"type": "label", "id": "l2", "parentId": None, "targetId": "o1", "label": "x"}),
    )
    session = Session.open(path, lock=False)
    assert len(session.problems) == 1 and session.leaf_id == "m1"


def test_blank_lines_are_harmless(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", header(), b"\n", message("m1", None), b"   \n")
    session = Session.open(path, lock=False)
    assert session.problems == [] and session.leaf_id == "m1"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "empty"),
        (b"\n" + message("m1", None), "empty"),
        (b"not a header\n" + message("m1", None), "not a valid session header"),
        (message("m1", None), "not a session header"),
        (b"\xff\xfe\n", "not a valid session header"),
    ],
)
def test_a_file_without_a_valid_header_is_a_clear_error(
    tmp_path: Path, content: bytes, why: str
) -> None:
    path = write(tmp_path / "s.jsonl", content)
    with pytest.raises(SessionError, match=why):
        Session.open(path, lock=False)


def test_a_missing_file_or_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="not found"):
        read_log(tmp_path / "nope.jsonl")
    with pytest.raises(SessionError, match="folder"):
        read_log(tmp_path)
    with pytest.raises(SessionError, match="not found"):
        Session.open(tmp_path / "nope.jsonl")


def test_name_and_model_call_records_survive_a_damaged_file(tmp_path: Path) -> None:
    """Records that point at no entry (a name, a model call) were dropped on the careful path
    a damaged file takes, with a bogus "points at unknown entry None" problem."""
    usage = {"input": 700, "output": 40, "cacheRead": 0, "cacheWrite": 0, "cost": 0.5}
    call = {"type": "modelCall", "id": "k1", "parentId": None, "timestamp": "t"}
    path = write(
        tmp_path / "s.jsonl",
        header(),
        message("m1", None),
        line({"type": "name", "id": "n1", "parentId": None, "targetId": None, "name": "kept"}),
        line({**call, "targetId": None, "purpose": "branch summary", "usage": usage}),
        message("o1", "missing-parent"),  # an orphan: the careful path
        message("m2", "m1", role="assistant"),
    )
    session = Session.open(path, lock=False)
    assert [p.line for p in session.problems] == [5]
    assert session.name == "kept"
    assert [e.id for e in session.tree.records] == ["m1", "n1", "k1", "m2"]
    assert session.leaf_id == "m2"
