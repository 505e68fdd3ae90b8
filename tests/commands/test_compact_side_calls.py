"""Every summary call ``agentsh compact`` makes counts in the session's tokens and cost, also
when the compaction it was for is not applied (issue 13: all model calls count)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.context.accounting import Accounting
from agentsh.paths import UserPaths
from agentsh.session.catalog import Catalog
from agentsh.session.entries import (
    CompactionEntry,
    MessageEntry,
    ModelCallEntry,
    Role,
    StopReason,
    Usage,
)
from agentsh.session.session import Session
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text

SUMMARY = "## Goal\nKeep going.\n## Progress\n" + "Did a great many things. " * 40


def _short_session(project: Path) -> Session:
    """Seven tiny turns: whatever a summary says beside the facts kept by code, it is not
    smaller than the two turns a Summarize would take away."""
    session = Session.create(UserPaths.from_env().project_sessions_dir(project), project)
    for i in range(7):
        session.append_message(Role.USER, f"q{i}")
        session.append_message(
            Role.ASSISTANT,
            f"a{i}",
            model=TEST_MODEL,
            usage=Usage(10, 2, cost=0.001),
            stop_reason=StopReason.STOP,
        )
    session.close()
    return session


def _totals(path: Path) -> tuple[int, int]:
    reopened = Session.open(path, lock=False)
    totals = Accounting(reopened, len).totals()
    return totals.input_tokens, totals.output_tokens


def test_a_refused_summarize_still_counts_its_summary_call(
    project: Path,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("AGENTSH_API_BASE", scripted_server.base_url)
    session = _short_session(project)
    assert session.path is not None
    before = _totals(session.path)
    scripted_server.script(text(SUMMARY, usage={"prompt_tokens": 1234, "completion_tokens": 321}))

    assert main(["compact", session.id[:8], "--tier", "summarize"]) == 1

    err = capsys.readouterr().err
    assert "no smaller" in err
    assert "summary call (1,234 tokens in, 321 out) counts in the session's totals" in err
    assert len(err.splitlines()) == 1
    assert len(scripted_server.requests) == 1  # the summary call was made
    reopened = Session.open(session.path, lock=False)
    assert not any(isinstance(e, CompactionEntry) for e in reopened.tree.records)
    assert not any(e.is_node and not isinstance(e, MessageEntry) for e in reopened.tree.records)
    assert _totals(session.path) == (before[0] + 1234, before[1] + 321)
    [call] = [e for e in reopened.tree.records if isinstance(e, ModelCallEntry)]
    assert call.purpose == "compaction summary" and "no smaller" in call.note
    # The session list counts it too, as a call and not as an entry.
    [info] = Catalog(UserPaths.from_env()).list(project)
    assert info.tokens == sum(before) + 1234 + 321
    assert info.entries == 14
