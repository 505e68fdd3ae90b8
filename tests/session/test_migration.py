"""The format version and its migration hook, exercised with a made-up older format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentsh.session import entries as E
from agentsh.session import log
from agentsh.session.entries import MessageEntry, Role
from agentsh.session.log import SessionLocked
from agentsh.session.session import Session
from tests.session.helpers import line


def _v0_to_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """Format 0 (made up for the test) called messages "msg" and their text "text"."""
    if raw.get("type") == "msg":
        raw = {**raw, "type": "message", "content": raw.get("text", "")}
        raw.pop("text", None)
    return raw


def old_file(path: Path) -> bytes:
    data = b"".join(
        [
            line({"type": "session", "version": 0, "id": "old-1", "timestamp": "t", "cwd": "/w"}),
            line({"type": "msg", "id": "a", "parentId": None, "role": "user", "text": "hi"}),
            b"damaged line kept as it is\n",
            line({"type": "msg", "id": "b", "parentId": "a", "role": "assistant", "text": "hello"}),
        ]
    )
    path.write_bytes(data)
    return data


@pytest.fixture
def migration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log, "MIGRATIONS", {0: _v0_to_v1})


@pytest.mark.usefixtures("migration")
def test_an_older_file_is_upgraded_in_memory_for_reading(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    original = old_file(path)
    session = Session.open(path, lock=False)
    assert session.header.version == E.FORMAT_VERSION
    messages = [e for e in session.current_path() if isinstance(e, MessageEntry)]
    assert messages == session.current_path()
    assert [(e.id, e.content) for e in messages] == [
        ("a", "hi"),
        ("b", "hello"),
    ]
    assert len(session.problems) == 1  # only the damaged line
    assert path.read_bytes() == original  # reading never rewrites


@pytest.mark.usefixtures("migration")
def test_opening_an_older_file_to_append_rewrites_it_in_the_new_format_with_a_backup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    original = old_file(path)
    session = Session.open(path)
    backup = path.with_name("old.jsonl.v0.bak")
    assert backup.read_bytes() == original
    lines = path.read_bytes().split(b"\n")
    assert json.loads(lines[0])["version"] == E.FORMAT_VERSION
    assert json.loads(lines[1])["type"] == "message"
    assert lines[2] == b"damaged line kept as it is"
    # The lock moved to the new file with it.
    with pytest.raises(SessionLocked):
        Session.open(path)
    added = session.append_message(Role.USER, "new")
    session.close()
    monkeypatch.setattr(log, "MIGRATIONS", {})  # the rewritten file needs none
    again = Session.open(path, lock=False)
    assert [e.id for e in again.current_path()] == ["a", "b", added.id]
    assert len(again.problems) == 1


def test_a_new_format_version_applies_registered_steps_and_stamps_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def add_marker(raw: dict[str, Any]) -> dict[str, Any]:
        if raw.get("type") == "message":
            return {**raw, "content": raw["content"] + " (migrated)"}
        return raw

    path = tmp_path / "v1.jsonl"
    session = Session.create(tmp_path, Path("/w"))
    session.append_message(Role.USER, "hi")
    session.close()
    assert session.path is not None
    monkeypatch.setattr(E, "FORMAT_VERSION", 2)
    monkeypatch.setattr(log, "MIGRATIONS", {1: add_marker})
    loaded = Session.open(session.path, lock=False)
    entry = loaded.current_path()[0]
    assert isinstance(entry, MessageEntry) and entry.content == "hi (migrated)"
    fresh = Session.create(tmp_path, Path("/w"))
    fresh.append_message(Role.USER, "x")
    fresh.close()
    assert fresh.path is not None and not path.exists()
    assert json.loads(fresh.path.read_bytes().split(b"\n")[0])["version"] == 2
