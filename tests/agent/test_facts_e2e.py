"""Ten compactions across the three tiers, through the real agent and the scripted provider,
with a summary model that drops every fact: what code keeps must be in every later request."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentsh.context.repair import pair_problems
from agentsh.context.summary import SYSTEM_PROMPT as SUMMARY_SYSTEM_PROMPT
from agentsh.events import CompactionFinished, Tier
from tests.agent.test_agent_loop import AgentFactory, collect, ended, make_agent
from tests.context.conftest import GOOD_SUMMARY
from tests.fakes.server import RecordedRequest, Reply, ScriptedServer, text, tool_call

__all__ = ["make_agent"]  # the fixture, imported for pytest

GEN = """n=$(cat .counter 2>/dev/null || echo 0); n=$((n+1)); echo $n > .counter
mkdir -p gen; echo "value = $n" > gen/out_$n.py
for i in $(seq 1 120); do echo "generated line $i of run $n"; done
"""
FAIL = """n=$(cat .counter); echo "compiling..."
echo "ERROR E$n: widget $n exploded at line $((n*7))" >&2; exit 1
"""
# Structured, so it is accepted, and silent on files, the request and the error.
LOSSY = GOOD_SUMMARY.format(n=0).replace("marker-0", "things happened")


def _is_summary(request: RecordedRequest) -> bool:
    messages = request.messages
    return bool(messages) and messages[0].get("content") == SUMMARY_SYSTEM_PROMPT


def _responder(request: RecordedRequest) -> Reply:
    """Each turn: write a file, run a generator that writes another, run a failing build, read
    the first file back, answer."""
    if _is_summary(request):
        return text(LOSSY)
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    task = re.search(r"task (\d+)", str(messages[last_user]["content"]))
    n = int(task.group(1)) if task else 0
    step = sum(1 for m in messages[last_user:] if m["role"] == "tool")
    if step == 0:
        return tool_call("write", {"path": f"src/w{n}.py", "content": f"x = {n}\n" * 40})
    if step == 1:
        return tool_call("bash", {"command": "sh gen.sh"})
    if step == 2:
        return tool_call("bash", {"command": "sh fail.sh"})
    if step == 3:
        return tool_call("read", {"path": f"src/w{n}.py"})
    return text(f"Task {n} is done.")


@pytest.mark.asyncio
@pytest.mark.timeout(600)  # ~12 s alone (30 turns, 10 compactions); hit the 120 s one at load 19
async def test_every_request_after_ten_compactions_keeps_request_files_and_last_error(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        "[context]\nmove_to_workspace_keep_turns = 2\nsummarize_keep_turns = 2\n"
        "truncate_keep_turns = 1\n"
    )
    (project / "gen.sh").write_text(GEN)
    (project / "fail.sh").write_text(FAIL)
    scripted_server.script(*([_responder] * 400))
    agent = make_agent()
    cycle = (Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE)
    compacted: list[Tier] = []
    turn = 0
    checked = 0
    for round_ in range(10):
        for _ in range(3):
            turn += 1
            request = f"task {turn}: build widget {turn}, keep `spacing`  exact"
            mark = len(scripted_server.requests)
            events = await collect(agent.run(request))
            assert ended(events).outcome.value == "done", events[-1]
            if not compacted:
                continue
            # Every request of this turn, after at least one compaction.
            for sent in scripted_server.requests[mark:]:
                if _is_summary(sent):
                    continue
                body = json.dumps(sent.messages)
                assert json.dumps(request)[1:-1] in body
                for k in range(1, turn):  # every earlier turn's files, by tool and by bash
                    assert f"src/w{k}.py" in body and f"gen/out_{k}.py" in body, k
                assert f"ERROR E{turn - 1}: widget {turn - 1} exploded" in body
                assert pair_problems(sent.messages) == []
                checked += 1
        events = await collect(agent.compact(cycle[round_ % 3]))
        (done,) = [e for e in events if isinstance(e, CompactionFinished)]
        compacted.append(done.tier)
    assert len(compacted) == 10 and set(compacted) == set(cycle)
    assert checked >= 9 * 3 * 5
    assert all(pair_problems(r.messages) == [] for r in scripted_server.requests)
