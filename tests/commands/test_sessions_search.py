"""`agentsh sessions search TEXT`: which past transcripts hold the text, and where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.session.entries import Role
from agentsh.session.session import Session
from tests.session.helpers import user_paths


def _session(project: Path, *texts: str) -> Session:
    session = Session.create(user_paths().project_sessions_dir(project), project)
    for i, text in enumerate(texts):
        session.append_message(Role.USER if i % 2 == 0 else Role.ASSISTANT, text)
    session.close()
    return session


def test_search_finds_the_sessions_holding_the_text_with_a_snippet(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hit = _session(project, "why does the Parser drop tokens?", 'It reads "name" too early.')
    _session(project, "unrelated question", "unrelated answer")
    assert main(["sessions", "search", "parser DROP"]) == 0
    out = capsys.readouterr().out
    assert hit.id[:8] in out and out.count("\n    ") == 1
    assert "user: why does the Parser drop tokens?" in out
    # quotes are found as the log spells them (escaped)
    assert main(["sessions", "search", '"name" too', "--json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)
    assert found["id"] == hit.id and found["hits"] == 1
    assert main(["sessions", "search", "nowhere to be seen"]) == 0
    assert "no session holds" in capsys.readouterr().out


def test_search_shows_control_sequences_instead_of_running_them(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _session(project, "clear \x1b[2J the screen")
    assert main(["sessions", "search", "clear"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out
