"""Claude through the real agent: every conversation request carries its three cache markers,
before and after compactions of each tier, and reads the cache again after each one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentsh.agent_assembly import build_agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.context.summary import SYSTEM_PROMPT as SUMMARY_SYSTEM_PROMPT
from agentsh.events import CompactionFinished, Tier, UsageReported
from agentsh.session.session import Session
from tests.agent.test_agent_loop import collect
from tests.context.conftest import GOOD_SUMMARY
from tests.fakes.anthropic import cache_markers
from tests.fakes.server import RecordedRequest, Reply, ScriptedServer, ToolCallSpec

CLAUDE = "anthropic/claude-sonnet-4-5"
WORDS = " ".join(f"w{i}" for i in range(300))


def _is_summary(request: RecordedRequest) -> bool:
    return SUMMARY_SYSTEM_PROMPT in json.dumps(request.body.get("system", ""))


def _responder(request: RecordedRequest) -> Reply:
    if _is_summary(request):
        return Reply(text=GOOD_SUMMARY.format(n=1))
    messages = request.body["messages"]
    last = messages[-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    if last["role"] == "user" and any(b.get("type") == "tool_result" for b in blocks):
        return Reply(text=f"done {WORDS}")
    return Reply(tool_calls=(ToolCallSpec("ls", {"path": "."}, ""),))


@pytest.mark.asyncio
async def test_every_claude_request_carries_its_markers_across_compactions_of_each_tier(
    scripted_server: ScriptedServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-AGENTSH-0123456789")
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        "[context]\nmove_to_workspace_keep_turns = 1\nsummarize_keep_turns = 1\n"
        "truncate_keep_turns = 1\n"
    )
    scripted_server.script(*([_responder] * 200))
    env = load_environment(project, trust_project=True)
    session = Session.create(env.user.project_sessions_dir(project), project)
    agent = build_agent(
        env,
        session,
        model=CLAUDE,
        api_base=scripted_server.base_url.removesuffix("/v1"),
        approval=ApprovalMode.ALL,
        interactive=True,
        cwd=project,
    )
    reads_after: list[int] = []
    try:
        for n, tier in enumerate((None, Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE)):
            if tier is not None:
                events = await collect(agent.compact(tier))
                assert any(isinstance(e, CompactionFinished) for e in events), events
            for k in range(3):
                events = await collect(agent.run(f"request {n}.{k}"))
                usage = [e for e in events if isinstance(e, UsageReported)]
                if tier is not None and k == 0:
                    # The compaction rewrote the prefix: its first call writes it, the turn's
                    # second call (after the tool) reads it back.
                    reads_after.append(usage[-1].cache_read_tokens)
    finally:
        agent.close()
    sent = [r for r in scripted_server.requests if r.anthropic]
    conversation = [r for r in sent if not _is_summary(r)]
    assert len(conversation) == 24 and len(sent) == 25  # one summary call
    assert cache_markers(conversation[0].body) == 2  # nothing earlier to mark yet
    assert [cache_markers(r.body) for r in conversation[1:]] == [3] * 23
    assert [cache_markers(r.body) for r in sent if _is_summary(r)] == [0]
    assert len(reads_after) == 3 and all(reads > 0 for reads in reads_after), reads_after
