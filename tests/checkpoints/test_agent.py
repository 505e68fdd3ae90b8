"""The agent's side: records where the turn changes files, a failure that is told and never ends
the turn, the settings, and headless ``-p`` recording without ever restoring."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsh.config import load_config
from agentsh.events import Event, Notice, TurnEnded, TurnOutcome
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.session.entries import CheckpointEntry, MessageEntry, Role, ToolResultEntry
from agentsh.session.session import Session
from tests.checkpoints.conftest import AgentFactory
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.in_process import run_cli
from tests.fakes.server import ScriptedServer, text, tool_call


async def events_of(factory: AgentFactory, prompt: str) -> tuple[list[Event], Session]:
    agent = factory(None)
    events = [event async for event in agent.run(prompt)]
    return events, agent.session


def records(session: Session) -> list[CheckpointEntry]:
    return [r for r in session.tree.records if isinstance(r, CheckpointEntry)]


@pytest.mark.asyncio
async def test_records_sit_on_the_user_message_and_on_each_changing_call(
    make_agent: AgentFactory, scripted_server: ScriptedServer, repo: Path
) -> None:
    scripted_server.script(
        tool_call("read", {"path": "app.py"}),
        tool_call("write", {"path": "a.txt", "content": "a\n"}),
        tool_call("bash", {"command": "echo hi"}),  # runs, changes nothing
        text("done"),
    )
    _events, session = await events_of(make_agent, "go")
    kinds = {r.target_id: type(session.get(r.target_id)).__name__ for r in records(session)}
    user = next(e for e in session.current_path() if isinstance(e, MessageEntry))
    write_result = next(
        e
        for e in session.current_path()
        if isinstance(e, ToolResultEntry) and e.tool_name == "write"
    )
    assert user.role is Role.USER and user.id in kinds
    changed = [r for r in records(session) if r.changed]
    assert [(r.target_id, r.files) for r in changed] == [(write_result.id, ("a.txt",))]
    assert len(records(session)) == 2  # nothing else changed: no other record written


@pytest.mark.asyncio
async def test_a_checkpoint_failure_is_told_and_the_turn_goes_on(
    make_agent: AgentFactory, scripted_server: ScriptedServer, repo: Path, agentsh_home: Path
) -> None:
    blocker = agentsh_home / "data" / "checkpoints"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the store's folder should be")
    scripted_server.script(tool_call("write", {"path": "a.txt", "content": "a\n"}), text("done"))
    events, session = await events_of(make_agent, "go")
    failures = [e.text for e in events if isinstance(e, Notice) and "Checkpoint failed" in e.text]
    assert len(failures) == 1  # told once, not at every call
    assert "cannot be restored" in failures[0]
    assert isinstance(events[-1], TurnEnded) and events[-1].outcome is TurnOutcome.DONE
    assert (repo / "a.txt").read_text() == "a\n"
    assert records(session) == []


@pytest.mark.asyncio
async def test_the_user_config_can_switch_checkpoints_off(
    make_agent: AgentFactory, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    config = agentsh_home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[checkpoints]\nenabled = false\n")
    scripted_server.script(tool_call("write", {"path": "a.txt", "content": "a\n"}), text("done"))
    _events, session = await events_of(make_agent, "go")
    assert records(session) == []
    assert not (agentsh_home / "data" / "checkpoints").exists()


def test_a_projects_config_cannot_change_checkpoints(repo: Path, agentsh_home: Path) -> None:
    (repo / ".agentsh").mkdir()
    (repo / ".agentsh" / "config.toml").write_text(
        "[checkpoints]\nenabled = false\nstore_max_mb = 16\n"
    )
    loaded = load_config(UserPaths.from_env(), ProjectPaths(repo))
    assert loaded.settings.checkpoints.enabled is True
    assert loaded.settings.checkpoints.store_max_mb == 1024
    assert [p.key for p in loaded.problems] == ["checkpoints"]


def test_headless_records_checkpoints_and_never_restores(
    scripted_server: ScriptedServer, repo: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted_server.script(
        tool_call("bash", {"command": "rm old.txt && echo x > made.txt"}), text("done")
    )
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.chdir(repo)
    command = ["-m", TEST_MODEL, "--api-base", scripted_server.base_url]
    done = run_cli([*command, "--approve", "all", "-p", "clean up"])  # in this process
    assert done.code == 0, done.stderr
    assert not (repo / "old.txt").exists() and (repo / "made.txt").exists()
    (path,) = (agentsh_home / "data" / "sessions").rglob("*.jsonl")
    session = Session.open(path, lock=False)
    (changed,) = [r for r in records(session) if r.changed]
    assert set(changed.files) == {"old.txt", "made.txt"}
    session.close()


@pytest.mark.asyncio
async def test_a_write_or_edit_is_checkpointed_by_its_paths_without_listing_the_project(
    make_agent: AgentFactory,
    scripted_server: ScriptedServer,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 17: the checkpoint before a write or an edit ran `git status` and `git ls-files
    --others` over the whole project (54 ms of a 10,000-file repository's 54 ms a call); the
    paths it writes are known, so those are what it captures. A hand edit of the target just
    before the call is still caught, and a bash call still looks at everything."""
    import agentsh.checkpoints.scan as scan

    listings: list[str] = []
    for name in ("git_changes", "list_files"):
        real = getattr(scan, name)

        def counted(*args: object, _real: Any = real, _name: str = name, **kw: object) -> Any:
            listings.append(_name)
            return _real(*args, **kw)

        monkeypatch.setattr(scan, name, counted)

    def hand_edit(_request: object) -> Any:
        (repo / "app.py").write_text("def main():\n    return 'by hand'\n")
        return tool_call("edit", {"path": "app.py", "old_text": "by hand", "new_text": "model"})

    scripted_server.script(
        tool_call("bash", {"command": "echo warm"}),  # learns the project's git state
        hand_edit,
        tool_call("write", {"path": "b.txt", "content": "b\n"}),
        text("done"),
    )
    agent = make_agent(None)
    events = [event async for event in agent.run("go")]
    assert isinstance(events[-1], TurnEnded) and events[-1].outcome is TurnOutcome.DONE
    assert (repo / "app.py").read_text() == "def main():\n    return 'model'\n"
    # The first capture, the user message's, and the bash call's two; none for the edit or
    # the write (there were two more).
    assert len(listings) == 4, listings
    session = agent.session
    results = [e for e in session.current_path() if isinstance(e, ToolResultEntry)]
    edit_result = next(e for e in results if e.tool_name == "edit")
    changed = {(session.get(r.target_id).id, r.files) for r in records(session) if r.changed}
    # The hand edit belongs to the reply that asked for the edit (the leaf when it ran), the
    # model's edit to the edit's result, the new file to the write's.
    asked = next(
        e
        for e in session.current_path()
        if isinstance(e, MessageEntry) and any(c.name == "edit" for c in e.tool_calls)
    )
    write_result = next(e for e in results if e.tool_name == "write")
    assert changed == {
        (asked.id, ("app.py",)),
        (edit_result.id, ("app.py",)),
        (write_result.id, ("b.txt",)),
    }
    # And the files come back as they were there: the hand edit, before the write.
    checkpoints = agent.checkpoints
    assert checkpoints is not None
    checkpoints.restore(session, checkpoints.plan(session, asked.id))
    assert (repo / "app.py").read_text() == "def main():\n    return 'by hand'\n"
    assert not (repo / "b.txt").exists()
