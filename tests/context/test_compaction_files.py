"""Every front end names a compaction's files for what they hold, as they are on disk.

A Summarize writes the turns it takes out verbatim (``NNN-archive.md``) and then its summary
(``NNN-summary.md``); the other tiers write the archive only, and pruning alone writes nothing.
``-p`` said "archive .../002-summary.md", ACP "the full turns are kept in .../002-summary.md",
``agentsh compact`` "Workspace file: .../002-summary.md" and stream-json named no file: a user
looking for what the summary model left out was sent to the summary.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agentsh.acp.acp_session import _compacted
from agentsh.cli import main
from agentsh.events import CompactionFinished, Tier
from agentsh.headless.claude_code import ClaudeCodeStream
from agentsh.headless.output import progress
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry
from agentsh.session.session import Session
from tests.agent.test_agent_loop import AgentFactory, collect, make_agent
from tests.context.builders import Step, add_turn
from tests.context.conftest import GOOD_SUMMARY
from tests.fakes.fixtures import FAKE_KEY
from tests.fakes.server import Reply, ScriptedServer, text

__all__ = ["make_agent"]  # the fixture, imported for pytest

WORDS = " ".join(f"w{i}" for i in range(400))


def _holds_the_turns(path: str) -> bool:
    body = Path(path).read_text(encoding="utf-8")
    return body.startswith("# Archived turns") and "one: rename the option" in body


def _holds_the_summary(path: str) -> bool:
    return Path(path).read_text(encoding="utf-8").startswith("# Context summary")


async def _summarized(
    make_agent: AgentFactory, server: ScriptedServer, project: Path
) -> CompactionFinished:
    (project / ".agentsh").mkdir(exist_ok=True)
    (project / ".agentsh" / "config.toml").write_text("[context]\nsummarize_keep_turns = 1\n")
    server.script(
        Reply(text=f"first {WORDS}"), Reply(text=f"second {WORDS}"), GOOD_SUMMARY.format(n=1)
    )
    agent = make_agent()
    await collect(agent.run("one: rename the option"))
    await collect(agent.run("two"))
    events = await collect(agent.compact(Tier.SUMMARIZE))
    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    assert done.tier is Tier.SUMMARIZE
    return done


@pytest.mark.asyncio
async def test_a_summarize_names_its_summary_and_its_archive_apart(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    done = await _summarized(make_agent, scripted_server, project)
    assert _holds_the_turns(done.archive_file) and _holds_the_summary(done.summary_file)
    assert done.workspace_file == done.summary_file  # what the context points at

    err = io.StringIO()
    progress(done, err)
    line = err.getvalue()
    assert f"summary {done.summary_file}; archive {done.archive_file}" in line
    assert f"archive {done.summary_file}" not in line

    acp = _compacted(done)
    assert f"the full turns are kept in {done.archive_file}" in acp
    assert f"the summary is in {done.summary_file}" in acp

    (boundary,) = ClaudeCodeStream("s", "m").feed(done)
    meta = boundary["compact_metadata"]
    assert meta["archive_file"] == done.archive_file
    assert meta["summary_file"] == done.summary_file


def test_an_archiving_tier_names_one_file_and_pruning_none() -> None:
    archived = CompactionFinished(
        "e1",
        Tier.MOVE_TO_WORKSPACE,
        9_000,
        4_000,
        "/w/001-archive.md",
        archive_file="/w/001-archive.md",
    )
    pruned = CompactionFinished("e2", Tier.TRUNCATE, 9_000, 7_000, "", "pruned tool output only")
    err = io.StringIO()
    progress(archived, err)
    progress(pruned, err)
    first, second = err.getvalue().splitlines()
    assert first.endswith("tokens; archive /w/001-archive.md") and "summary" not in first
    assert "archive" not in second and "summary" not in second
    assert "summary is in" not in _compacted(archived)
    meta = ClaudeCodeStream("s", "m").feed(pruned)[0]["compact_metadata"]
    assert meta["archive_file"] is None and meta["summary_file"] is None


def _long_session(project: Path) -> Session:
    session = Session.create(UserPaths.from_env().project_sessions_dir(project), project)
    add_turn(session, "one: rename the option", [Step("read", {"path": "a.py"}, "x\n" * 300)], "ok")
    for i in range(13):
        add_turn(session, f"request {i}", [Step("read", {"path": f"m{i}.py"}, "y\n" * 300)], "ok")
    session.close()
    return session


@pytest.mark.parametrize("as_json", [True, False])
def test_agentsh_compact_names_the_summary_and_the_archive(
    project: Path,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("AGENTSH_API_BASE", scripted_server.base_url)
    session = _long_session(project)
    scripted_server.script(text(GOOD_SUMMARY.format(n=1)))
    json_flag = ["--json"] if as_json else []

    assert main(["compact", session.id[:8], "--tier", "summarize", *json_flag]) == 0

    out = capsys.readouterr().out
    assert session.path is not None
    entry = Session.open(session.path, lock=False).current_path()[-1]
    assert isinstance(entry, CompactionEntry) and entry.tier == "summarize"
    assert _holds_the_turns(entry.archive_file) and _holds_the_summary(entry.workspace_file)
    if as_json:
        data = json.loads(out)
        assert data["archive_file"] == entry.archive_file
        assert data["summary_file"] == entry.workspace_file
    else:
        assert f"Archive file (the turns verbatim): {entry.archive_file}" in out
        assert f"Summary file: {entry.workspace_file}" in out
