"""The catalog: what it knows, what it reads (and does not), lookups, and self-repair."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsh.paths import UserPaths
from agentsh.session import catalog as catalog_module
from agentsh.session import log
from agentsh.session.catalog import (
    AmbiguousSession,
    Catalog,
    SessionInfo,
    SessionNotFound,
)
from agentsh.session.catalog_scan import Scan, shorten
from agentsh.session.entries import Role, Usage
from agentsh.session.session import Session
from tests.session.helpers import header, message, new_project_session, user_paths

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def paths() -> UserPaths:
    return user_paths()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every (file name, start offset) the catalog reads lines from."""
    seen: list[tuple[str, int]] = []
    real = log.iter_line_blocks

    def spy(path: Path, start: int = 0, block_size: int = 1 << 24) -> Iterator[tuple[int, bytes]]:
        seen.append((path.name, start))
        return real(path, start, block_size)

    monkeypatch.setattr(log, "iter_line_blocks", spy)
    return seen


def test_a_session_is_listed_with_its_title_counts_tokens_and_cost(
    project: Path, paths: UserPaths
) -> None:
    session = new_project_session(project, turns=2, title="Fix the   parser\nplease", cost=0.5)
    [info] = Catalog(paths).list(project)
    assert isinstance(info, SessionInfo)
    assert info.id == session.id and info.path == session.path
    assert info.title == "Fix the parser please"
    assert info.first_message == "Fix the   parser\nplease"
    assert info.cwd == str(project) and info.created == session.header.timestamp
    assert (info.entries, info.messages) == (8, 6)
    assert info.tokens == 2 * (110 + 220) and info.cost == pytest.approx(2.0)
    assert info.model == "openai/test-model" and info.parent_session is None
    assert info.size_bytes == session.path.stat().st_size
    assert abs(info.last_activity - time.time()) < 60


def test_the_title_of_a_prompt_with_piped_text_is_the_prompt(
    project: Path, paths: UserPaths
) -> None:
    """`git diff | agentsh -p "review this"`: the title is what the user asked, not the
    `<stdin>` block the diff was attached in (the first message keeps both)."""
    from agentsh.text import attach_piped

    asked = attach_piped("review this", "diff --git a/x b/x\n+new line\n")
    new_project_session(project, title=asked)
    [info] = Catalog(paths).list(project)
    assert info.title == "review this"
    assert info.first_message == asked
    # Only an attached block at the very end is left out; text that merely names it stays.
    new_project_session(project, title="what does <stdin> mean here?")
    titles = {i.title for i in Catalog(paths).list(project)}
    assert titles == {"review this", "what does <stdin> mean here?"}


def test_listing_is_newest_activity_first_and_per_project(
    project: Path, paths: UserPaths, tmp_path: Path
) -> None:
    other_project = tmp_path / "other"
    other_project.mkdir()
    old = new_project_session(project, title="old")
    new = new_project_session(project, title="new")
    elsewhere = new_project_session(other_project, title="elsewhere")
    # Activity, not creation, orders the list: touching the old one makes it the newest.
    assert old.path is not None
    reopened = Session.open(old.path)
    time.sleep(0.01)
    reopened.append_message(Role.USER, "back again")
    reopened.close()
    catalog = Catalog(paths)
    assert [i.id for i in catalog.list(project)] == [old.id, new.id]
    assert {i.id for i in catalog.list(project, all=True)} == {old.id, new.id, elsewhere.id}
    assert [i.id for i in catalog.list(other_project)] == [elsewhere.id]
    newest = catalog.newest(project)
    assert newest is not None and newest.id == old.id
    assert catalog.newest(tmp_path / "empty") is None


def test_an_unchanged_file_is_not_opened_again(
    project: Path, paths: UserPaths, reads: list[tuple[str, int]]
) -> None:
    new_project_session(project)
    catalog = Catalog(paths)
    catalog.list(project)
    reads.clear()
    stats = catalog.refresh(project)
    assert reads == [] and stats.unchanged == 1 and stats.seen == 1


def test_a_grown_file_is_read_only_from_its_stored_offset(
    project: Path, paths: UserPaths, reads: list[tuple[str, int]]
) -> None:
    session = new_project_session(project, turns=1)
    assert session.path is not None
    catalog = Catalog(paths)
    catalog.refresh(project)
    size_before = session.path.stat().st_size
    reads.clear()
    again = Session.open(session.path)
    again.append_message(
        Role.ASSISTANT, "more", usage=Usage(input_tokens=1000, output_tokens=1, cost=1.0)
    )
    again.close()
    stats = catalog.refresh(project)
    assert stats.appended == 1 and stats.rescanned == 0
    assert reads == [(session.path.name, size_before)]
    [info] = catalog.list(project, refresh=False)
    assert info.messages == 4 and info.tokens == 110 + 220 + 1001
    assert info.cost == pytest.approx(1.02)


def test_a_file_changed_by_another_process_is_noticed(project: Path, paths: UserPaths) -> None:
    session = new_project_session(project, turns=1)
    catalog = Catalog(paths)
    assert catalog.list(project)[0].messages == 3
    script = (
        "import sys; from pathlib import Path; from agentsh.session.session import Session;"
        "from agentsh.session.entries import Role;"
        "s = Session.open(Path(sys.argv[1])); s.append_message(Role.USER, 'from elsewhere');"
        "s.close()"
    )
    subprocess.run(
        [sys.executable, "-c", script, str(session.path)],
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert catalog.list(project)[0].messages == 4


def test_a_replaced_or_shrunk_file_is_rescanned(
    project: Path, paths: UserPaths, reads: list[tuple[str, int]]
) -> None:
    session = new_project_session(project, turns=2)
    assert session.path is not None
    catalog = Catalog(paths)
    catalog.refresh(project)
    reads.clear()
    session.path.write_bytes(header("replaced-id") + message("m1", None, "a new story"))
    stats = catalog.refresh(project)
    assert stats.rescanned == 1 and reads == [(session.path.name, 0)]
    [info] = catalog.list(project, refresh=False)
    assert (info.id, info.title, info.messages) == ("replaced-id", "a new story", 1)


def test_a_same_size_file_with_a_new_header_is_rescanned(project: Path, paths: UserPaths) -> None:
    session = new_project_session(project, turns=1)
    assert session.path is not None
    catalog = Catalog(paths)
    catalog.refresh(project)
    data = session.path.read_bytes()
    swapped = data.replace(session.id.encode(), ("f" * len(session.id)).encode(), 1)
    session.path.write_bytes(swapped + message("zz", None))
    catalog.refresh(project)
    assert catalog.list(project, refresh=False)[0].id == "f" * len(session.id)


def test_a_deleted_file_is_dropped(project: Path, paths: UserPaths) -> None:
    gone = new_project_session(project)
    kept = new_project_session(project)
    catalog = Catalog(paths)
    assert len(catalog.list(project)) == 2
    assert gone.path is not None
    gone.path.unlink()
    assert [i.id for i in catalog.list(project)] == [kept.id]
    assert catalog.refresh(project).removed == 0


def test_a_partial_last_line_is_read_once_it_is_complete(project: Path, paths: UserPaths) -> None:
    folder = paths.project_sessions_dir(project)
    folder.mkdir(parents=True)
    path = folder / "20260101T000000000000Z_abc.jsonl"
    path.write_bytes(header("abc") + message("m1", None) + b'{"type":"message","id":"m2"')
    catalog = Catalog(paths)
    assert catalog.list(project)[0].messages == 1
    with path.open("ab") as handle:
        handle.write(b',"parentId":"m1","role":"assistant","content":"done"}\n')
    assert catalog.list(project)[0].messages == 2


def test_files_that_are_not_sessions_are_not_listed(project: Path, paths: UserPaths) -> None:
    folder = paths.project_sessions_dir(project)
    folder.mkdir(parents=True)
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "garbage.jsonl").write_bytes(b"not json\n")
    (folder / "notes.txt").write_text("hello")
    (folder / ".hidden.jsonl").write_bytes(header("hidden"))
    (folder / "dir.jsonl").mkdir()
    real = new_project_session(project)
    assert [i.id for i in Catalog(paths).list(project)] == [real.id]


def test_lines_in_another_shape_are_still_counted(project: Path, paths: UserPaths) -> None:
    folder = paths.project_sessions_dir(project)
    folder.mkdir(parents=True)
    path = folder / "20260101T000000000000Z_other.jsonl"
    path.write_bytes(
        header("other") + b'{ "id": "m1", "type": "message", "role": "user", "parentId": null,'
        b' "content": [{"type": "text", "text": "spaced out"}] }\n'
        + b'{"role":"assistant","type":"message","id":"m2","parentId":"m1","content":"ok",'
        b'"usage":{"output":5,"input":50,"cost":0.25}}\n'
    )
    [info] = Catalog(paths).list(project)
    assert (info.messages, info.tokens, info.title) == (2, 55, "spaced out")
    assert info.cost == pytest.approx(0.25)


def test_find_by_unique_prefix_exact_id_and_errors(
    project: Path, paths: UserPaths, tmp_path: Path
) -> None:
    folder = paths.project_sessions_dir(project)
    folder.mkdir(parents=True)
    for session_id in ("abc111", "abc222", "abc"):
        (folder / f"20260101T000000000000Z_{session_id}.jsonl").write_bytes(
            header(session_id) + message("m1", None, f"about {session_id}")
        )
    catalog = Catalog(paths)
    assert catalog.find("abc1", project).id == "abc111"
    assert catalog.find("  ABC2 ", project).id == "abc222"
    assert catalog.find("abc", project).id == "abc"  # an exact id wins over longer ones
    with pytest.raises(AmbiguousSession) as caught:
        catalog.find("ab", project)
    assert len(caught.value.candidates) == 3
    assert "abc111" in str(caught.value) and "give more characters" in str(caught.value)
    with pytest.raises(SessionNotFound, match="no session id starts with 'zzz'"):
        catalog.find("zzz", project)
    with pytest.raises(SessionNotFound):
        catalog.find("   ", project)
    assert issubclass(SessionNotFound, LookupError) and issubclass(AmbiguousSession, LookupError)


def test_find_looks_in_this_project_first_then_everywhere(
    project: Path, paths: UserPaths, tmp_path: Path
) -> None:
    here = paths.project_sessions_dir(project)
    there = paths.project_sessions_dir(tmp_path / "elsewhere")
    for folder, session_id in ((here, "dup-here"), (there, "dup-there"), (there, "only-there")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"20260101T000000000000Z_{session_id}.jsonl").write_bytes(
            header(session_id) + message("m1", None)
        )
    catalog = Catalog(paths)
    assert catalog.find("dup", project).id == "dup-here"  # this project's match wins
    assert catalog.find("only", project).id == "only-there"
    with pytest.raises(AmbiguousSession):
        catalog.find("dup")  # no project: everywhere, where it is ambiguous


def test_a_deleted_database_is_rebuilt(project: Path, paths: UserPaths) -> None:
    session = new_project_session(project)
    catalog = Catalog(paths)
    catalog.list(project)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{paths.catalog_db}{suffix}").unlink(missing_ok=True)
    assert [i.id for i in catalog.list(project)] == [session.id]
    assert paths.catalog_db.exists()


@pytest.mark.parametrize(
    "damage", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_a_corrupt_database_is_rebuilt(project: Path, paths: UserPaths, damage: bytes) -> None:
    session = new_project_session(project)
    paths.catalog_db.parent.mkdir(parents=True, exist_ok=True)
    paths.catalog_db.write_bytes(damage)
    assert [i.id for i in Catalog(paths).list(project)] == [session.id]
    with sqlite3.connect(paths.catalog_db) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_a_database_of_another_schema_version_is_rebuilt(project: Path, paths: UserPaths) -> None:
    session = new_project_session(project)
    paths.catalog_db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(paths.catalog_db) as db:
        db.execute("CREATE TABLE sessions (path TEXT PRIMARY KEY, junk TEXT)")
        db.execute("INSERT INTO sessions VALUES ('/nowhere', 'x')")
        db.execute("PRAGMA user_version = 999")
    assert [i.id for i in Catalog(paths).list(project)] == [session.id]
    with sqlite3.connect(paths.catalog_db) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == catalog_module.SCHEMA_VERSION


def test_an_unwritable_cache_falls_back_to_memory(
    project: Path, paths: UserPaths, tmp_path: Path
) -> None:
    session = new_project_session(project)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    catalog = Catalog(paths, db_path=blocker / "catalog.sqlite3")
    assert [i.id for i in catalog.list(project)] == [session.id]
    assert catalog.find(session.id[:6], project).id == session.id


def test_two_processes_can_refresh_at_the_same_time(project: Path, paths: UserPaths) -> None:
    ids = {new_project_session(project, turns=1, title=f"s{i}").id for i in range(12)}
    script = (
        "import sys; from pathlib import Path; from agentsh.paths import UserPaths;"
        "from agentsh.session.catalog import Catalog;"
        "c = Catalog(UserPaths.from_env());"
        "[c.refresh(Path(sys.argv[1])) for _ in range(5)];"
        "print(len(c.list(Path(sys.argv[1]))))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(project)], stdout=subprocess.PIPE, env=env
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=60)[0].strip() for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0]
    assert outputs == [b"12", b"12", b"12"]
    assert {i.id for i in Catalog(paths).list(project)} == ids


def test_shorten_makes_one_line_with_an_ellipsis() -> None:
    assert shorten("a\n b   c", 10) == "a b c"
    assert shorten("x" * 100, 10) == "x" * 9 + "…"


def test_the_block_scanner_agrees_with_the_line_by_line_scanner(project: Path) -> None:
    session = new_project_session(project, turns=3, title="")
    assert session.path is not None
    session = Session.open(session.path)
    first = session.tree.roots[0]
    session.set_label(first, "x")
    session.move_leaf(first)
    session.append_message(Role.USER, 'a "quoted"\nsecond question', model="m/\\u00e9")
    session.close()
    assert session.path is not None
    body = session.path.read_bytes().split(b"\n", 1)[1]
    fast, slow = Scan(), Scan()
    assert fast._scan_canonical(body)
    slow._scan_lines(body)
    for name in ("entries", "messages", "tokens", "title", "model", "last_timestamp"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert fast.cost == pytest.approx(slow.cost)
    assert fast.title == "question 1"  # the first user message with text gives the title
    assert fast.model == "m/\\u00e9"
