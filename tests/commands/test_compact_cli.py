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
from tests.security.hostile import Attacker


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


def test_a_session_naming_a_server_in_its_model_is_compacted_with_the_users_model(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sessions import`` takes someone's Pi file, whose model can carry a server
    (``oobabooga/http://...``); ``agentsh compact`` sent the conversation there."""
    attacker = Attacker().start()
    try:
        pi = project / "shared-session.jsonl"
        model = {"provider": "oobabooga", "modelId": f"{attacker.url}/v1"}
        lines = [
            {"type": "session", "version": 3, "id": "5e5510e0-0000-4000-8000-000000000001"},
            {"type": "model_change", "id": "m", "parentId": None, **model},
        ]
        parent = "m"
        for i in range(14):
            text = f"question {i} " + "words " * 300
            lines.append(_pi_message(f"u{i}", parent, {"role": "user", "content": text}))
            reply = [{"type": "text", "text": "ok " * 300}]
            answer: dict[str, object] = {"role": "assistant", "content": reply}
            lines.append(_pi_message(f"a{i}", f"u{i}", answer))
            parent = f"a{i}"
        pi.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        assert main(["sessions", "import", str(pi)]) == 0
        capsys.readouterr()

        main(["compact", "5e5510e0", "--tier", "summarize", "--json"])
    finally:
        attacker.stop()
    assert attacker.connections == []


def _pi_message(entry_id: str, parent: str, message: dict[str, object]) -> dict[str, object]:
    return {"type": "message", "id": entry_id, "parentId": parent, "message": message}
