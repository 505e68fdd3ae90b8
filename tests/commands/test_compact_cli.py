"""`agentsh compact ID --json`: what the compaction did, for other tools to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn


def _long_session(project: Path) -> Session:
    session = Session.create(UserPaths.from_env().project_sessions_dir(project), project)
    for i in range(14):
        add_turn(
            session,
            f"request {i}",
            [Step("read", {"path": f"src/m{i}.py"}, f"line of m{i}\n" * 300)],
            f"answer {i}",
        )
    session.close()
    return session


def test_compact_json_reports_the_tier_tokens_and_archive(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _long_session(project)

    assert main(["compact", session.id[:8], "--tier", "move_to_workspace", "--json"]) == 0

    data = json.loads(capsys.readouterr().out)
    assert session.path is not None
    entry = Session.open(session.path, lock=False).current_path()[-1]
    assert isinstance(entry, CompactionEntry)
    assert data["session"] == session.id and data["compacted"] is True
    assert data["entry"] == entry.id
    assert data["tier"] == "move_to_workspace"
    assert data["tokens_before"] > data["tokens_after"] > 0
    assert Path(data["workspace_file"]).name == "001-archive.md"


def test_compact_json_of_an_unknown_session_is_a_one_line_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compact", "ffffffff", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("agentsh: ") and len(captured.err.splitlines()) == 1
