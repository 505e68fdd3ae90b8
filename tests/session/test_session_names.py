"""Session names: --name / set_name, kept in the log, listed, and found with -r NAME."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import pytest

from agentsh.commands.sessions_cmd import format_table
from agentsh.config import load_environment
from agentsh.session import export
from agentsh.session.catalog import SCHEMA_VERSION, AmbiguousSession, Catalog
from agentsh.session.entries import NameEntry, Role, UnknownEntry, clean_name
from agentsh.session.entry_parse import entry_from_json
from agentsh.session.session import Session
from agentsh.startup import session_for_args
from tests.session.helpers import conversation, new_project_session, user_paths


def _args(**options: object) -> argparse.Namespace:
    base: dict[str, object] = {"continue_session": False, "resume": None, "session": None}
    return argparse.Namespace(**(base | options))


def test_a_name_is_kept_in_the_log_and_the_newest_wins(project: Path) -> None:
    session = Session.create(user_paths().project_sessions_dir(project), project)
    conversation(session, 1)
    path_before = [e.id for e in session.current_path()]
    assert session.set_name("  parser\n rewrite\x1b[31m ") == "parser rewrite"
    session.set_name("parser rewrite v2")
    session.close()
    assert session.path is not None
    reopened = Session.open(session.path, lock=False)
    assert reopened.name == "parser rewrite v2"
    assert reopened.problems == []
    # Not a node: the conversation's shape and leaf are untouched.
    assert [e.id for e in reopened.current_path()] == path_before
    [info] = Catalog(user_paths()).list(project)
    assert info.name == "parser rewrite v2"
    assert info.to_json()["name"] == "parser rewrite v2"
    assert info.entries == len(path_before)  # name records are not counted as entries


def test_an_older_agentsh_sees_an_annotation_not_a_new_root() -> None:
    line = NameEntry(id="abcd0001", parent_id=None, name="x").to_json()
    assert line["targetId"] is None and line["parentId"] is None
    # What an agentsh without the name type does with it: an unknown annotation.
    old = UnknownEntry(id="abcd0001", parent_id=None, timestamp="t", raw=line)
    assert not old.is_node
    assert isinstance(entry_from_json(json.loads(json.dumps(line))), NameEntry)


def test_resume_by_name_prefers_this_project_and_then_a_unique_name(
    project: Path, tmp_path: Path
) -> None:
    older = new_project_session(project, title="older")
    newer = new_project_session(project, title="newer")
    for made in (older, newer):
        assert made.path is not None
        reopened = Session.open(made.path)
        reopened.set_name("Fix Parser")
        reopened.close()
    catalog = Catalog(user_paths())
    assert catalog.find("fix parser", project).id == newer.id  # this project's newest
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(AmbiguousSession, match="named 'fix parser'"):
        catalog.find("fix parser", elsewhere)  # two elsewhere: give an id
    assert catalog.find(older.id[:8], elsewhere).id == older.id


@pytest.mark.parametrize(
    ("stored", "asked"),
    [("Straße", "STRASSE"), ("ÉMILE Ökonom", "émile ökonom"), ("ΣΟΦΊΑ", "σοφία"), ("ﬁx", "FIX")],
)
def test_a_name_is_found_whatever_its_case_beyond_ascii(
    project: Path, stored: str, asked: str
) -> None:
    # SQLite's NOCASE folds A-Z only: "émile" did not find "ÉMILE".
    made = new_project_session(project)
    assert made.path is not None
    reopened = Session.open(made.path)
    reopened.set_name(stored)
    reopened.close()
    catalog = Catalog(user_paths())
    assert catalog.find(asked, project).id == made.id
    assert catalog.find(asked, project.parent).id == made.id  # from elsewhere: a unique name
    [info] = catalog.list(project)
    assert info.name == stored  # shown as the user wrote it


def test_name_option_names_a_new_session_and_renames_a_resumed_one(project: Path) -> None:
    env = load_environment(project)
    session = session_for_args(env, _args(name="first name"), project)
    session.append_message(Role.USER, "hello")
    session.close()
    again = session_for_args(env, _args(resume="first name", name="second name"), project)
    again.close()
    assert again.id == session.id
    [info] = Catalog(user_paths()).list(project)
    assert info.name == "second name"


def test_a_schema_2_catalog_is_rebuilt_and_then_knows_the_names(project: Path) -> None:
    """A catalog written before names (schema 2) has up-to-date rows without a name column:
    kept, a named session would list without its name forever (its file does not change)."""
    made = new_project_session(project)
    assert made.path is not None
    reopened = Session.open(made.path)
    reopened.set_name("old catalog")
    reopened.close()
    paths = user_paths()
    assert Catalog(paths).list(project)  # the catalog file exists, rows are current
    with sqlite3.connect(paths.catalog_db) as db:  # what schema 2 left: no name column
        db.execute("DROP INDEX sessions_by_name")
        db.execute("ALTER TABLE sessions DROP COLUMN name")
        db.execute("PRAGMA user_version = 2")
    [info] = Catalog(paths).list(project)
    assert info.name == "old catalog"
    with sqlite3.connect(paths.catalog_db) as db:  # the file itself was rebuilt, not bypassed
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT name FROM sessions").fetchall() == [("old catalog",)]


def test_a_name_from_someone_else_s_file_loses_its_escape_sequences_whole() -> None:
    """A Pi file or a hand-edited log is someone's input: an OSC 52 clipboard write or a CSI
    colour must not print, nor leave its payload ("]52;c;aGk=") behind in listings."""
    hostile = "fix\x1b]52;c;aGk=\x07 the\x1b[31m parser\x1b[0m\u202e\r\nnow\x9b2J\x1b\\"
    assert clean_name(hostile) == "fix the parser now"


def test_the_listing_shows_the_start_of_a_long_name(project: Path) -> None:
    session = Session.create(user_paths().project_sessions_dir(project), project)
    conversation(session, 1)
    session.set_name("refactor the session catalog into two modules")
    session.close()
    table = format_table(Catalog(user_paths()).list(project), show_project=False, width=120)
    assert table[0].split()[5] == "NAME"
    assert "refactor the session ca…" in table[1]


def test_show_and_the_exports_say_the_name(project: Path) -> None:
    session = Session.create(user_paths().project_sessions_dir(project), project)
    conversation(session, 1)
    session.set_name("<b>parser</b> fix")
    assert "name    <b>parser</b> fix" in export.transcript_lines(session)
    assert "- name: <b>parser</b> fix" in export.to_markdown(session).splitlines()
    assert "<p>name &lt;b&gt;parser&lt;/b&gt; fix</p>" in export.to_html(session)
    session.close()
