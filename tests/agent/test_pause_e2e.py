"""The anti-thrashing pause as a user scripting ``agentsh -p -c`` meets it: it holds from one
process to the next, no compaction (and no summary call) runs while it holds, it is said once,
and ``agentsh context`` shows it; ``agentsh compact`` lifts it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentsh.context.summary import SYSTEM_PROMPT as SUMMARY_SYSTEM_PROMPT
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner
from tests.agent.test_facts_e2e import LOSSY
from tests.context.builders import add_turn
from tests.fakes.in_process import run_cli
from tests.fakes.server import RecordedRequest, Reply, ScriptedServer, text, tool_call

WINDOW = 4_000


def _newest_session(project: Path) -> str:
    sessions = UserPaths.from_env().project_sessions_dir(project)
    newest = max(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    session = Session.open(newest)
    session.close()
    return session.id[:8]


def _thrashed_session(project: Path) -> Session:
    """A session whose last two automatic compactions freed under 10 % each (what pauses
    automatic compaction), then one more turn."""
    user = UserPaths.from_env()
    session = Session.create(user.project_sessions_dir(project), project)
    add_turn(session, "start", [], "started")
    for before, after in ((3_400, 3_250), (3_380, 3_240)):
        session.append(
            CompactionEntry(
                id=session.new_id(),
                parent_id=session.leaf_id,
                tier="summarize",
                summary="",
                first_kept_id=session.current_path()[0].id,
                tokens_before=before,
                tokens_after=after,
            )
        )
    session.close()
    return session


def test_the_pause_holds_across_processes_is_said_once_and_shown(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    project: Path,
    fast_retries: Path,
) -> None:
    fast_retries.write_text(fast_retries.read_text() + f"window = {WINDOW}\n")
    session = _thrashed_session(project)
    long_request = "please look at all of this: " + "the build log says more " * 25
    # What a provider would count: the context the pause left at 81 % of the window, each
    # request adding its own tokens (the third one about 150: into the Summarize tier).
    scripted_server.script(
        text("one", usage={"prompt_tokens": 3_250, "completion_tokens": 5}),
        text("two", usage={"prompt_tokens": 3_262, "completion_tokens": 5}),
        text("three", usage={"prompt_tokens": 3_430, "completion_tokens": 5}),
    )
    first = run_agentsh("-c", "-p", "first request")
    assert first.code == 0, first.stderr
    told = [line for line in first.stderr.splitlines() if "paused" in line]
    assert len(told) == 1 and "MoveToWorkspace not run at 81%" in told[0], first.stderr
    second = run_agentsh("-c", "-p", "second request")
    assert second.code == 0, second.stderr
    assert "paused" not in second.stderr, second.stderr  # the same state: said once
    third = run_agentsh("-c", "-p", long_request)
    assert third.code == 0, third.stderr
    # Into the next tier: still the same pause, said once (it said at 82 % every time a -p
    # run crossed a tier, "Summarize not run" after "MoveToWorkspace not run").
    assert "paused" not in third.stderr, third.stderr
    # Nothing compacted, no summary call: one request a run.
    assert [r.messages[-1]["content"] for r in scripted_server.requests] == [
        "first request",
        "second request",
        long_request,
    ]
    assert session.path is not None
    reopened = Session.open(session.path)
    compactions = [e for e in reopened.current_path() if isinstance(e, CompactionEntry)]
    reopened.close()
    assert len(compactions) == 2

    shown = run_cli(["context", session.id[:8]])
    assert "Automatic compaction is paused" in shown.stdout, shown.stdout


def _natural_responder(request: RecordedRequest) -> Reply:
    """Each turn: a command printing ~60 lines (and writing a file), then an answer; summary
    calls get a structured summary that names nothing."""
    messages = request.messages
    if messages and messages[0].get("content") == SUMMARY_SYSTEM_PROMPT:
        return text(LOSSY)
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    found = re.search(r"task (\d+)", str(messages[last]["content"]))
    n = int(found.group(1)) if found else 0
    if not any(m["role"] == "tool" for m in messages[last:]):
        command = f'for i in $(seq 1 60); do echo "out $i of run {n} text"; done; echo v > g{n}.txt'
        return tool_call("bash", {"command": command})
    return text(f"Task {n} is done.")


def test_a_natural_4k_session_that_compaction_cannot_keep_up_with_ends_paused(
    run_agentsh: AgentshRunner,
    scripted_server: ScriptedServer,
    project: Path,
    fast_retries: Path,
) -> None:
    """`agentsh -p -c` turn after turn on a 4k window, each turn a 2,000-character request
    and a command's output: automatic compaction ran on every turn and never paused. Now it
    pauses once, says so once, stays paused (the pre-flight check alone compacts), and every
    request after a compaction keeps the newest request and every file a command wrote."""
    fast_retries.write_text(fast_retries.read_text() + "window = 4000\n")
    scripted_server.script(*([_natural_responder] * 60))
    told: list[str] = []
    for n in range(1, 6):
        request = f"task {n}: " + "detail " * 280 + "END-OF-REQUEST"
        mark = len(scripted_server.requests)
        done = run_agentsh(
            "--dangerously-skip-permissions", *(["-c"] if n > 1 else []), "-p", request
        )
        assert done.code == 0, done.stderr
        for line in done.stderr.splitlines():
            told += [line] if "Automatic compaction is" in line else []
            if told and "context compacted" in line:  # stable: the pre-flight check's, and says so
                assert "automatic compaction is paused" in line, line
        if n >= 3:
            for sent in scripted_server.requests[mark:]:
                if sent.messages[0].get("content") == SUMMARY_SYSTEM_PROMPT:
                    continue
                body = json.dumps(sent.messages)
                assert f"task {n}: detail" in body and "END-OF-REQUEST" in body
                assert all(f"g{k}.txt" in body for k in range(1, n))
    assert len(told) == 1 and "Automatic compaction is paused" in told[0], told
    shown = run_cli(["context", "--json", _newest_session(project)])
    assert json.loads(shown.stdout)["paused"] is True, shown.stdout
