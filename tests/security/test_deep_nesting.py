"""JSON and TOML someone else wrote, nested deeper than Python's parsers recurse: bad input
like any other, never a crash (a model's tool arguments, a cloned repository's config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.paths import UserPaths
from agentsh.trust import TrustState, check_project
from tests.agent.conftest import AgentshRunner, fast_retries, run_agentsh
from tests.fakes.server import ScriptedServer, text, tool_call

__all__ = ["fast_retries", "run_agentsh"]  # the fixtures, imported for pytest

DEEP_JSON = "[" * 5000 + "]" * 5000  # 10 KB: a model can be talked into sending it


def test_deeply_nested_tool_arguments_are_an_error_for_the_model_not_a_crash(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    # "Internal error: RecursionError: maximum recursion depth exceeded while decoding a JSON
    # array", exit status 1, the turn and its log cut short.
    scripted_server.script(
        tool_call("bash", '{"command": ' + DEEP_JSON + "}"),
        text("sorry"),
    )
    run = run_agentsh("-p", "hi", "--approve", "all")
    assert run.code == 0, run.stderr
    assert "RecursionError" not in run.stderr and "sorry" in run.stdout
    (result,) = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert "not a valid JSON object" in str(result["content"])


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (".agentsh/config.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (".mcp.json", '{"mcpServers": ' + DEEP_JSON + "}"),
    ],
    ids=["config.toml", "mcp.json"],
)
def test_a_deeply_nested_project_file_is_refused_not_a_crash(
    project: Path, name: str, content: str
) -> None:
    # The trust check reads them in every folder agentsh opens, before anything is asked.
    from agentsh.mcp.server_trust import register

    register()  # as cli.main does first
    path = project / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(content)
    check = check_project(UserPaths.from_env(), project)
    assert check.state is TrustState.NEW
    assert any("not valid" in f.description for f in check.findings)
