"""`agentsh context ID` and `agentsh compact ID` on a session file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.agent_assembly import build_agent
from agentsh.cli import main
from agentsh.config import load_environment
from agentsh.context.accounting import Accounting
from agentsh.llm.tokens import TokenCounter
from agentsh.memory.index_registry import close_shared
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.fakes.server import ScriptedServer


def _session_on_disk(project: Path) -> Session:
    user = UserPaths.from_env()
    session = Session.create(user.project_sessions_dir(project), project)
    for i in range(14):
        add_turn(
            session,
            f"request {i}",
            [
                Step("read", {"path": f"src/m{i}.py"}, f"line of m{i}\n" * 300),
                Step("bash", {"command": "pytest -q"}, "F\n" * 150, details={"exit_code": 1}),
            ],
            f"answer {i}",
        )
    session.close()
    return session


def test_context_prints_the_breakdown_and_what_each_tier_would_do(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session_on_disk(project)
    assert main(["context", session.id[:8]]) == 0
    out = capsys.readouterr().out
    assert f"Session {session.id}" in out
    for label in ("system prompt", "tool schemas", "memory", "messages", "tool results"):
        assert label in out
    assert "Tier: none" in out
    assert "MoveToWorkspace" in out and "Summarize" in out and "Truncate" in out
    assert "14 turns" in out and "0 compactions on this path" in out


def test_context_counts_one_turn_in_the_singular(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = UserPaths.from_env()
    session = Session.create(user.project_sessions_dir(project), project)
    add_turn(session, "only request", [], "only answer")
    session.close()
    assert main(["context", session.id[:8]]) == 0
    assert "2 entries in 1 turn; 0 compactions on this path." in capsys.readouterr().out


def test_context_json_is_machine_readable(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session_on_disk(project)
    assert main(["context", session.id[:8], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"] == session.id and data["turns"] == 14
    assert data["tool_results"] > data["messages"] > 0
    assert [p["tier"] for p in data["previews"]] == ["move_to_workspace", "summarize", "truncate"]


def test_context_of_an_unknown_session_is_a_clear_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["context", "ffffffff"]) == 1
    assert capsys.readouterr().err.startswith("agentsh: ")


def test_compact_archives_and_records_the_compaction(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session_on_disk(project)
    assert main(["compact", session.id[:8], "--tier", "move_to_workspace"]) == 0
    out = capsys.readouterr().out
    assert "Compacted session" in out and "MoveToWorkspace" in out
    assert session.path is not None
    reopened = Session.open(session.path, lock=False)
    entry = reopened.current_path()[-1]
    assert isinstance(entry, CompactionEntry) and entry.manual
    archive = Path(entry.workspace_file)
    assert archive.name == "001-archive.md" and "request 0" in archive.read_text()


def test_compact_summarize_without_a_model_archives_instead_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session_on_disk(project)
    assert main(["compact", session.id[:8], "--tier", "summarize"]) == 0
    out = capsys.readouterr().out
    assert "summary failed" in out and "no model is configured" in out
    assert "001-archive.md" in out


def test_context_counts_the_schemas_of_every_tool_the_agent_sends(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = _session_on_disk(project)
    assert main(["context", session.id[:8], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    env = load_environment(project)
    agent = build_agent(env, Session.create(None, project), model=None, cwd=project)
    try:
        assert {"memory_search", "memory_get"} <= set(agent.tools.names())
        counter = TokenCounter(data["model"] or "gpt-4o")
        expected = Accounting(session, counter.count).count_tools(agent.tools.schemas())
    finally:
        agent.close()
        close_shared()
    assert data["tools"] == expected


def test_compact_sends_a_summary_model_of_another_provider_to_its_own_server(
    project: Path,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`agentsh compact` gave the summary model the session model's server: with an OpenAI
    model on a proxy and an Anthropic summary model, the conversation and the Anthropic key
    went to the proxy. The agent's own summary calls never did (LLMClient._base_for)."""
    secret = "sk-ant-test-AGENTSH-not-for-the-proxy"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    monkeypatch.setenv("ANTHROPIC_API_BASE", "http://127.0.0.1:9")  # its "own" server: refused
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = UserPaths.from_env().config_file
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'[model]\nname = "openai/test-model"\napi_base = "{scripted_server.base_url}"\n'
        'summary_model = "anthropic/claude-3-haiku-20240307"\nmax_retries = 0\n'
    )
    session = _session_on_disk(project)
    assert main(["compact", session.id[:8], "--tier", "summarize"]) == 0
    assert not [r for r in scripted_server.requests if secret in json.dumps(r.to_json())]
    assert scripted_server.requests == []
    assert "summary failed" in capsys.readouterr().out  # its server refused the connection
