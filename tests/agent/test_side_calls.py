"""Every model call counts: the summary and branch-summary calls are in the session's tokens and
cost (status bar, the catalog), and a huge request is refused before it is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import load_environment
from agentsh.events import (
    CompactionFailed,
    CompactionFinished,
    ErrorKind,
    ErrorOccurred,
    Tier,
    TurnEnded,
)
from agentsh.paths import UserPaths
from agentsh.session.catalog import Catalog
from agentsh.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ModelCallEntry,
    Role,
    Usage,
)
from agentsh.session.session import Session
from tests.agent.test_agent_loop import AgentFactory, collect, make_agent
from tests.context.conftest import GOOD_SUMMARY
from tests.fakes.server import Reply, ScriptedServer

__all__ = ["make_agent"]  # the fixture, imported for pytest

WORDS = " ".join(f"w{i}" for i in range(400))


def _priced(project: Path) -> None:
    """Prices in the user's config (a project's may not set them), one kept turn in the
    project's."""
    user_config = load_environment(project).user.config_file
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("[model]\ninput_cost_per_mtok = 1.0\noutput_cost_per_mtok = 2.0\n")
    (project / ".agentsh").mkdir(exist_ok=True)
    (project / ".agentsh" / "config.toml").write_text("[context]\nsummarize_keep_turns = 1\n")


@pytest.mark.asyncio
async def test_a_summary_call_counts_in_session_tokens_cost_and_the_catalog(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    _priced(project)
    usage = {"prompt_tokens": 1_000, "completion_tokens": 100}
    scripted_server.script(
        Reply(text=f"first {WORDS}", usage=usage),
        Reply(text=f"second {WORDS}", usage=usage),
        Reply(
            text=GOOD_SUMMARY.format(n=1), usage={"prompt_tokens": 5_000, "completion_tokens": 300}
        ),
    )
    agent = make_agent()
    await collect(agent.run("one"))
    await collect(agent.run("two"))
    before = agent.status()
    spent = agent.spent_usd
    events = await collect(agent.compact(Tier.SUMMARIZE))
    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    entry = agent.session.get(done.entry_id)
    assert isinstance(entry, CompactionEntry) and entry.usage is not None
    assert (entry.usage.input_tokens, entry.usage.output_tokens) == (5_000, 300)
    after = agent.status()
    assert after.session_input_tokens == before.session_input_tokens + 5_000
    assert after.session_output_tokens == before.session_output_tokens + 300
    assert abs(after.session_cost - (before.session_cost + 0.005 + 0.0006)) < 1e-9
    assert abs(agent.spent_usd - spent - (0.005 + 0.0006)) < 1e-9  # --max-budget-usd counts it
    agent.session.sync()
    [info] = Catalog(UserPaths.from_env()).list(project)
    assert info.tokens == 2 * 1_100 + 5_300
    assert abs(info.cost - after.session_cost) < 1e-9


@pytest.mark.asyncio
async def test_a_branch_summary_call_counts_in_session_tokens(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    _priced(project)
    scripted_server.script(
        Reply(text="answer one", usage={"prompt_tokens": 100, "completion_tokens": 10}),
        Reply(text="a short summary", usage={"prompt_tokens": 700, "completion_tokens": 40}),
    )
    agent = make_agent()
    root_leaf = agent.session.leaf_id
    await collect(agent.run("explore an idea"))
    left = agent.session.leaf_id
    assert left is not None
    agent.session.move_leaf(root_leaf)
    before = agent.status()
    text = await agent.summarize_branch(left)
    entry = agent.attach_branch_summary(left, text)
    assert isinstance(entry, BranchSummaryEntry) and entry.usage is not None
    after = agent.status()
    assert after.session_input_tokens == before.session_input_tokens + 700
    assert after.session_output_tokens == before.session_output_tokens + 40
    # It survives a reload (the entry carries the usage).
    assert agent.session.path is not None
    reopened = Session.open(agent.session.path, lock=False)
    found = [e for e in reopened.tree.nodes.values() if isinstance(e, BranchSummaryEntry)]
    assert found[0].usage == entry.usage


@pytest.mark.asyncio
async def test_a_request_too_big_for_the_window_is_not_sent(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    """Compaction cannot help a first message larger than the window: it used to be sent
    anyway (a 750k-token prompt, read and refused by the provider)."""
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text("[model]\nwindow = 20000\n")
    agent = make_agent()
    huge = " ".join(f"line{i}" for i in range(40_000))
    events = await collect(agent.run(huge))
    errors = [e for e in events if isinstance(e, ErrorOccurred)]
    assert errors and errors[0].kind is ErrorKind.CONTEXT_OVERFLOW
    assert "not sent" in errors[0].message and "/compact" in errors[0].message
    assert isinstance(events[-1], TurnEnded) and events[-1].outcome.value == "error"
    assert scripted_server.requests == []
    # The request stays in the log, and the session can go on after /compact or /new.
    assert [
        m.content
        for m in agent.session.current_path()
        if isinstance(m, MessageEntry) and m.role is Role.USER
    ] == [huge]


@pytest.mark.asyncio
async def test_an_empty_branch_summary_still_counts_its_call(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    """A reply with no text leaves nothing to attach: its usage used to go nowhere."""
    _priced(project)
    scripted_server.script(
        Reply(text="answer one", usage={"prompt_tokens": 100, "completion_tokens": 10}),
        Reply(text="  ", usage={"prompt_tokens": 700, "completion_tokens": 40}),
    )
    agent = make_agent()
    root_leaf = agent.session.leaf_id
    await collect(agent.run("explore an idea"))
    left = agent.session.leaf_id
    assert left is not None
    agent.session.move_leaf(root_leaf)
    before = agent.status()
    spent = agent.spent_usd
    assert await agent.summarize_branch(left) == ""
    after = agent.status()
    assert after.session_input_tokens == before.session_input_tokens + 700
    assert after.session_output_tokens == before.session_output_tokens + 40
    assert abs(agent.spent_usd - spent - (0.0007 + 0.00008)) < 1e-9  # --max-budget-usd too
    assert agent.session.path is not None
    reopened = Session.open(agent.session.path, lock=False)
    [call] = [e for e in reopened.tree.records if isinstance(e, ModelCallEntry)]
    assert call.purpose == "branch summary" and call.usage.input_tokens == 700
    assert reopened.leaf_id == root_leaf  # a record beside the tree, not a node in it


@pytest.mark.asyncio
async def test_the_memory_save_and_summary_count_when_the_compaction_fails(
    make_agent: AgentFactory, scripted_server: ScriptedServer, project: Path
) -> None:
    """The pre-compaction memory save and the summary call rode on the compaction entry: when
    the compaction failed (here its archive cannot be written) both were dropped."""
    (project / ".agentsh").mkdir()
    (project / ".agentsh" / "config.toml").write_text(
        "[model]\nwindow = 20000\n[context]\npre_compaction_memory_save = true\n"
    )
    user = UserPaths.from_env()
    session = Session.create(user.project_sessions_dir(project), project)
    for i in range(8):
        session.append_message(Role.USER, f"question-{i}")
        words = " ".join(f"detail{i}x{j}" for j in range(600))
        session.append_message(Role.ASSISTANT, f"answer-{i} {words}")
    session.append_message(Role.ASSISTANT, "noted", usage=Usage(input_tokens=17_900))
    blocker = user.session_workspace(session.id)
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the archive folder should be\n")
    scripted_server.script(
        Reply(text="nothing to save", usage={"prompt_tokens": 900, "completion_tokens": 9}),
        Reply(text=GOOD_SUMMARY.format(n=1), usage={"prompt_tokens": 800, "completion_tokens": 80}),
        Reply(text="carried on", usage={"prompt_tokens": 100, "completion_tokens": 1}),
    )
    agent = make_agent(session=session)
    events = await collect(agent.run("one more"))

    assert [e for e in events if isinstance(e, CompactionFailed)]
    assert len(scripted_server.requests) >= 2
    status = agent.status()
    assert status.session_input_tokens >= 17_900 + 900 + 800
    assert agent.session.path is not None
    reopened = Session.open(agent.session.path, lock=False)
    calls = [e for e in reopened.tree.records if isinstance(e, ModelCallEntry)]
    assert [c.purpose for c in calls] == ["memory save", "compaction summary"]
    assert [c.usage.input_tokens for c in calls] == [900, 800]
