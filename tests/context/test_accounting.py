"""Accounting: provider usage anchors the count, estimates fill in, totals span all branches."""

from __future__ import annotations

import pytest

from agentsh.context.accounting import MESSAGE_OVERHEAD, Accounting
from agentsh.context.convert import summary_message
from agentsh.llm.tokens import estimate_tokens
from agentsh.session.entries import Role, StopReason, Usage
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.context.conftest import ManagerFactory


def test_usage_on_the_newest_reply_anchors_and_only_later_entries_are_estimated(
    memory_session: Session,
) -> None:
    acc = Accounting(memory_session, estimate_tokens)
    add_turn(memory_session, "hello", usage=Usage(input_tokens=1000, output_tokens=50))
    used = acc.used(300, 200)
    assert used.tokens == 1050 and not used.estimated
    memory_session.append_message(Role.USER, "x" * 400)
    used = acc.used(300, 200)
    assert used.tokens == 1050 + 4 + 100
    assert not used.estimated


def test_without_usage_the_figure_is_the_estimate_of_everything(memory_session: Session) -> None:
    acc = Accounting(memory_session, estimate_tokens)
    memory_session.append_message(Role.USER, "y" * 400)
    used = acc.used(300, 200)
    assert used.estimated
    assert used.tokens == 300 + 200 + 104


def test_cjk_text_counts_a_token_per_character(memory_session: Session) -> None:
    acc = Accounting(memory_session, estimate_tokens)
    memory_session.append_message(Role.USER, "漢字" * 100)
    assert acc.used(0, 0).tokens == 200 + 4


@pytest.mark.asyncio
async def test_after_a_compaction_the_count_is_estimated_until_the_next_reply(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    for i in range(12):
        add_turn(
            memory_session,
            f"task {i}",
            [Step("read", {"path": f"f{i}.py"}, f"{i}" * 2000)],
            usage=Usage(input_tokens=5000 + i, output_tokens=10),
        )
    manager = make_manager(memory_session, window=100_000)
    assert not manager.status().estimated
    assert await manager.compact() is not None
    status = manager.status()
    assert status.estimated and status.compactions == 1
    add_turn(memory_session, "next", usage=Usage(input_tokens=2222, output_tokens=8))
    status = manager.status()
    assert not status.estimated and status.used == 2230


def test_session_totals_sum_every_reply_of_every_branch(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    s.append_message(Role.USER, "a")
    fork = s.leaf_id
    s.append_message(
        Role.ASSISTANT, "one", usage=Usage(100, 10, cost=0.5), stop_reason=StopReason.STOP
    )
    s.move_leaf(fork)
    s.append_message(Role.ASSISTANT, "two", usage=Usage(200, 20, cache_read_tokens=5, cost=0.25))
    status = make_manager(s).status()
    assert status.session_input_tokens == 305
    assert status.session_output_tokens == 30
    assert status.session_cost == pytest.approx(0.75)
    assert (status.branch_index, status.branch_count) == (2, 2)
    # The current context is the second branch only.
    assert status.used == 225


def test_branch_position_follows_appends_and_leaf_moves(memory_session: Session) -> None:
    s = memory_session
    acc = Accounting(s, estimate_tokens)
    s.append_message(Role.USER, "root")
    root = s.leaf_id
    s.append_message(Role.ASSISTANT, "a")
    assert acc.branch_position().count == 1
    s.move_leaf(root)
    s.append_message(Role.ASSISTANT, "b")
    position = acc.branch_position()
    assert (position.index, position.count) == (2, 2)
    s.append_message(Role.USER, "deeper")
    assert acc.branch_position().count == 2


def test_a_leaf_jump_rebuilds_the_view(memory_session: Session) -> None:
    s = memory_session
    acc = Accounting(s, estimate_tokens)
    s.append_message(Role.USER, "first")
    first = s.leaf_id
    s.append_message(Role.ASSISTANT, "x" * 4000)
    big = acc.used(0, 0).tokens
    s.move_leaf(first)
    assert acc.used(0, 0).tokens < big
    assert [e.id for e in acc.view().entries] == [first]


def test_status_reports_model_window_and_percent(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    memory_session.append_message(Role.USER, "z" * 3996)
    status = make_manager(memory_session, window=10_000).status()
    assert status.model == "test/model" and status.window == 10_000
    assert status.used == 1003 and status.pct == pytest.approx(10.0)
    assert status.tier.value == "none" and not status.paused


def test_a_summary_counts_as_the_message_that_is_sent(memory_session: Session) -> None:
    """The summary's fence (header, tags, footer) was taken for 60 tokens; as sent it is ~100
    by the estimate, so every figure after a compaction was short by that much."""
    acc = Accounting(memory_session, estimate_tokens)
    summary = "## Active Task\nfix the parser\n\n## Goal\n- a parser that parses\n" * 5
    sent = summary_message(summary)["content"]
    assert abs(acc.summary_tokens(summary) - (MESSAGE_OVERHEAD + estimate_tokens(sent))) <= 2
    assert acc.summary_tokens("  ") == 0
