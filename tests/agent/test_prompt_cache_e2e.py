"""The agent against a provider that caches only what is marked (the scripted server speaking
the Anthropic Messages API): markers on every request, a prefix that stays byte-stable from one
request to the next, and the cache reads counted in the session's status."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.agent import Agent
from agentsh.agent_assembly import build_agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner
from tests.agent.test_agent_loop import collect, ended
from tests.fakes.anthropic import cache_markers, without_markers
from tests.fakes.server import RecordedRequest, Reply, ScriptedServer, text, tool_call

CLAUDE = "anthropic/claude-sonnet-4-5"


def _responder(request: RecordedRequest) -> Reply:
    """Two steps per turn, then an answer; the second turn saves a fact to memory first."""
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user" and _is_text(m))
    steps = sum(1 for m in messages[last_user:] if m["role"] == "assistant")
    if steps == 0 and "turn 1:" in json.dumps(messages[last_user]):
        return tool_call("memory", {"action": "add", "content": "The tests run with make test."})
    if steps < 2:
        return tool_call("bash", {"command": f"echo step {steps} of turn {last_user}"})
    return text("Both steps ran.")


def _is_text(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return True
    return any(b.get("type") == "text" for b in content or ())


@pytest.fixture
def claude_agent(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Agent]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-AGENTSH-0123456789")
    env = load_environment(project)
    fast = dataclasses.replace(env.settings.model, retry_base_delay_s=0.01)
    env = dataclasses.replace(
        env,
        config=dataclasses.replace(
            env.config, settings=dataclasses.replace(env.settings, model=fast)
        ),
    )
    session = Session.create(env.user.project_sessions_dir(project), project)
    agent = build_agent(
        env,
        session,
        model=CLAUDE,
        api_base=scripted_server.base_url.removesuffix("/v1"),
        approval=ApprovalMode.ALL,
        cwd=project,
    )
    yield agent
    agent.close()


@pytest.mark.asyncio
async def test_markers_on_every_request_a_stable_prefix_and_the_cache_share_in_the_status(
    claude_agent: Agent, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(*([_responder] * 40))
    for n in range(4):
        events = await collect(claude_agent.run(f"turn {n}: run the two steps"))
        assert ended(events).outcome.value == "done"
    sent = scripted_server.requests
    assert len(sent) == 12 and all(r.anthropic for r in sent)
    assert all(cache_markers(r.body) >= 2 for r in sent)
    # Each request starts with the whole previous one (markers aside): nothing earlier changed,
    # not even the system prompt after the memory write (the session keeps its snapshot).
    assert "make test" in claude_agent.env.project.memory_file.read_text()
    for before, after in itertools.pairwise(sent):
        old, new = without_markers(before.body), without_markers(after.body)
        assert new["system"] == old["system"] and new["tools"] == old["tools"]
        assert new["messages"][: len(old["messages"])] == old["messages"]
    status = claude_agent.status()
    assert status.session_cache_read_tokens > 0.8 * status.session_input_tokens
    assert status.session_cache_write_tokens > 0


def test_print_mode_json_reports_the_cache_as_anthropic_does(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-p --output-format json`` against a marked-cache provider: reads and writes apart, and
    ``input_tokens`` without them (it used to count the cache writes twice)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-AGENTSH-0123456789")
    scripted_server.script(tool_call("bash", {"command": "echo hi"}), text("It printed hi."))
    run = run_agentsh("-m", CLAUDE, "-p", "say hi", "--output-format", "json")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    usage = result["usage"]
    assert usage["cache_creation_input_tokens"] > 1_000  # the system prompt and tools, once
    assert usage["cache_read_input_tokens"] >= usage["cache_creation_input_tokens"] * 0.9
    assert usage["input_tokens"] < 200  # only what was neither read nor written (no writes)
    model_usage = result["modelUsage"][CLAUDE]
    assert model_usage["inputTokens"] == usage["input_tokens"]
    assert all(cache_markers(r.body) >= 2 for r in scripted_server.requests)
