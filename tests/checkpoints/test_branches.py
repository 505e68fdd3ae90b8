"""Issue 17's scenario end to end: the real agent and tools against the scripted server change
files on branch A (write, edit, and bash: sed -i, a generator script, rm), the files follow
when the conversation moves to branch B and back, a hand edit is reported and kept, and a new
process restores again from the session on disk."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentsh.agent import Agent
from agentsh.events import Event, Notice
from agentsh.session.entries import CheckpointEntry, MessageEntry, Role, ToolResultEntry
from agentsh.session.session import Session
from tests.checkpoints.conftest import INITIAL, AgentFactory, files_of
from tests.fakes.server import ScriptedServer, text, tool_call

GENERATOR = "mkdir -p gen\nfor i in 1 2 3; do echo A$i > gen/f$i.txt; done\n"
BRANCH_A = [
    tool_call("write", {"path": "hello.txt", "content": "hello from A\n"}),
    tool_call("edit", {"path": "app.py", "old_text": "return 1", "new_text": "return 2"}),
    tool_call("write", {"path": "gen.sh", "content": GENERATOR}),
    tool_call("bash", {"command": "sed -i 's/^notes$/NOTES/' notes.md && sh gen.sh && rm old.txt"}),
    text("A done"),
]
FILES_A = {
    **{k: v for k, v in INITIAL.items() if k != "old.txt"},
    "app.py": "def main():\n    return 2\n",
    "notes.md": "NOTES\nmore notes\n",
    "hello.txt": "hello from A\n",
    "gen.sh": GENERATOR,
    "gen/f1.txt": "A1\n",
    "gen/f2.txt": "A2\n",
    "gen/f3.txt": "A3\n",
}
BRANCH_B = [
    tool_call("write", {"path": "b.txt", "content": "only on B\n"}),
    tool_call("bash", {"command": "sed -i 's/VALUE = 1/VALUE = 22/' src/lib.py"}),
    text("B done"),
]
FILES_B = {**INITIAL, "b.txt": "only on B\n", "src/lib.py": "VALUE = 22\n"}


AGENTSH = (sys.executable, "-m", "agentsh")


def command(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60)


async def run(agent: Agent, prompt: str) -> list[Event]:
    return [event async for event in agent.run(prompt)]


def last_reply(session: Session) -> MessageEntry:
    entry = session.get(session.leaf_id or "")
    assert isinstance(entry, MessageEntry) and entry.role is Role.ASSISTANT
    return entry


def move_with_files(agent: Agent, target: str, *, include_outside: bool = False) -> list[str]:
    """What the TUI does on a leaf move the user confirms: restore, then move the leaf.
    Returns the paths the plan kept because they changed outside agentsh."""
    assert agent.checkpoints is not None
    plan = agent.checkpoints.plan(agent.session, target)
    assert not plan.problem, plan.problem
    assert not plan.blocked, plan.blocked
    agent.checkpoints.restore(agent.session, plan, include_outside=include_outside)
    agent.session.move_leaf(target)
    return [item.path for item in plan.outside]


@pytest.mark.asyncio
async def test_files_follow_the_conversation_between_branches(
    make_agent: AgentFactory, scripted_server: ScriptedServer, repo: Path
) -> None:
    agent = make_agent(None)
    scripted_server.script(text("ready"))
    await run(agent, "start")
    fork = last_reply(agent.session).id

    scripted_server.script(*BRANCH_A)
    events = await run(agent, "branch A")
    assert not [e for e in events if isinstance(e, Notice) and "heckpoint" in e.text]
    end_a = last_reply(agent.session).id
    assert files_of(repo) == FILES_A

    # Every file-changing call has a record after it naming what it changed.
    session = agent.session
    marks = agent.checkpoints.index(session).marks() if agent.checkpoints else {}
    results = [e for e in session.current_path() if isinstance(e, ToolResultEntry)]
    assert [marks[r.id].changed for r in results] == [1, 1, 1, 5]
    assert set(marks[results[-1].id].files) == {
        "gen/f1.txt",
        "gen/f2.txt",
        "gen/f3.txt",
        "notes.md",
        "old.txt",
    }

    assert move_with_files(agent, fork) == []
    assert files_of(repo) == INITIAL
    scripted_server.script(*BRANCH_B)
    await run(agent, "branch B")
    end_b = last_reply(agent.session).id
    assert files_of(repo) == FILES_B

    assert move_with_files(agent, end_a) == []
    assert files_of(repo) == FILES_A
    assert move_with_files(agent, end_b) == []
    assert files_of(repo) == FILES_B

    # A hand edit between two moves is named and kept, the rest of the files move.
    (repo / "notes.md").write_text("mine\n")
    assert move_with_files(agent, end_a) == ["notes.md"]
    assert files_of(repo) == {**FILES_A, "notes.md": "mine\n"}
    # Coming back to B brings B's files and the hand edit made while B was current.
    assert move_with_files(agent, end_b) == []
    assert files_of(repo) == {**FILES_B, "notes.md": "mine\n"}
    # The second confirmation overwrites (here: deletes) a hand-edited file.
    (repo / "b.txt").write_text("edited by hand\n")
    assert move_with_files(agent, end_a, include_outside=True) == ["b.txt"]
    assert files_of(repo) == {**FILES_A, "notes.md": "mine\n"}

    # .git and the index were never touched: git still sees the same commit and index.
    status = (await asyncio.to_thread(command, repo, "git", "status", "--porcelain")).stdout
    assert " M app.py" in status and " D old.txt" in status and "A " not in status

    # A new process restores from the session on disk.
    session_id = agent.session.id
    path = agent.session.path
    agent.close()
    assert path is not None
    reloaded = Session.open(path, lock=False)
    assert reloaded.problems == []
    assert any(isinstance(r, CheckpointEntry) for r in reloaded.tree.records)
    reloaded.close()
    done = await asyncio.to_thread(command, repo, *AGENTSH, "restore", session_id[:8], end_b)
    assert done.returncode == 0, done.stderr
    # B as it was left: with the hand edits made while it was current.
    assert files_of(repo) == {**FILES_B, "notes.md": "mine\n", "b.txt": "edited by hand\n"}
    undo = done.stdout.strip().splitlines()[-1]
    assert undo.startswith("undo with: agentsh restore ")
    listed = await asyncio.to_thread(
        command, repo, *AGENTSH, "checkpoints", session_id[:8], "--json"
    )
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["checkpoints"]
    assert {row["reason"] for row in rows} >= {"user", "tool", "restore", "restored"}
    assert all(row["restorable"] for row in rows)
