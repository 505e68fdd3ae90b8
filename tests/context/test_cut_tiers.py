"""Tiers from usage, and where the cut falls."""

from __future__ import annotations

import pytest

from agentsh.config import ContextSettings
from agentsh.context.accounting import Accounting
from agentsh.context.cut import choose_cut, choose_cut_by_tokens
from agentsh.context.tiers import next_tier, parse_tier, rule, tier_for
from agentsh.context.view import ContextEntry
from agentsh.events import Tier
from agentsh.llm.tokens import estimate_tokens
from agentsh.session.entries import MessageEntry, Role, ToolResultEntry
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn


@pytest.mark.parametrize(
    ("fraction", "tier"),
    [
        (0.0, Tier.NONE),
        (0.7999, Tier.NONE),
        (0.80, Tier.MOVE_TO_WORKSPACE),
        (0.8499, Tier.MOVE_TO_WORKSPACE),
        (0.85, Tier.SUMMARIZE),
        (0.9499, Tier.SUMMARIZE),
        (0.95, Tier.TRUNCATE),
        (1.7, Tier.TRUNCATE),
    ],
)
def test_tier_thresholds_are_80_85_95(fraction: float, tier: Tier) -> None:
    assert tier_for(fraction, ContextSettings()) is tier


def test_tier_rules_keep_10_5_3_turns_capped_at_20000_tokens() -> None:
    settings = ContextSettings()
    assert [
        rule(t, settings).keep_turns
        for t in (Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE)
    ] == [10, 5, 3]
    assert rule(Tier.SUMMARIZE, settings).max_kept_tokens == 20_000
    assert next_tier(Tier.NONE) is Tier.MOVE_TO_WORKSPACE
    assert next_tier(Tier.TRUNCATE) is Tier.TRUNCATE
    assert parse_tier("Summarize") is Tier.SUMMARIZE
    assert parse_tier("move-to-workspace") is Tier.MOVE_TO_WORKSPACE
    with pytest.raises(ValueError, match="choose one of"):
        parse_tier("nuke")


def _entries_and_tokens(session: Session) -> tuple[list[ContextEntry], list[int]]:
    acc = Accounting(session, estimate_tokens)
    return list(acc.view().entries), list(acc.tokens_by_entry())


def test_cut_keeps_the_last_n_turns_starting_at_a_user_message(memory_session: Session) -> None:
    for i in range(8):
        add_turn(memory_session, f"task {i}", [Step("bash", {"command": "ls"}, "out")])
    entries, tokens = _entries_and_tokens(memory_session)
    cut = choose_cut(entries, tokens, keep_turns=3, max_kept_tokens=20_000)
    assert cut is not None
    first = entries[cut.index]
    assert isinstance(first, MessageEntry) and first.content == "task 5"
    assert not cut.split_turn
    assert cut.kept_tokens + cut.removed_tokens == sum(tokens)


def test_too_few_turns_means_no_cut(memory_session: Session) -> None:
    add_turn(memory_session, "only", [Step("bash", {"command": "ls"}, "out")])
    entries, tokens = _entries_and_tokens(memory_session)
    assert choose_cut(entries, tokens, keep_turns=3, max_kept_tokens=20_000) is None


def test_token_cap_drops_whole_turns_first(memory_session: Session) -> None:
    for i in range(6):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": "a"}, "r" * 4000)])
    entries, tokens = _entries_and_tokens(memory_session)
    cut = choose_cut(entries, tokens, keep_turns=5, max_kept_tokens=1_500)
    assert cut is not None and not cut.split_turn
    assert cut.kept_tokens <= 1_500
    first = entries[cut.index]
    assert isinstance(first, MessageEntry) and first.content == "task 5"


def test_a_turn_over_the_cap_is_split_at_an_assistant_message_never_at_a_result(
    memory_session: Session,
) -> None:
    add_turn(memory_session, "warm up", [])
    add_turn(
        memory_session,
        "huge task",
        [Step("read", {"path": f"f{i}"}, "q" * 2000) for i in range(10)],
    )
    entries, tokens = _entries_and_tokens(memory_session)
    cut = choose_cut(entries, tokens, keep_turns=3, max_kept_tokens=1_500)
    assert cut is not None and cut.split_turn
    first = entries[cut.index]
    assert isinstance(first, MessageEntry) and first.role is Role.ASSISTANT
    assert not isinstance(entries[cut.index], ToolResultEntry)
    assert cut.kept_tokens <= 1_500
    prefix = entries[cut.prefix_start]
    assert isinstance(prefix, MessageEntry) and prefix.content == "huge task"


def test_pi_cut_keeps_about_the_newest_n_tokens(memory_session: Session) -> None:
    for i in range(10):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": "a"}, "p" * 2000)])
    entries, tokens = _entries_and_tokens(memory_session)
    cut = choose_cut_by_tokens(entries, tokens, keep_tokens=2_000)
    assert cut is not None
    assert cut.kept_tokens <= 2_000 + max(tokens)
    assert isinstance(entries[cut.index], MessageEntry)
    assert choose_cut_by_tokens(entries, tokens, keep_tokens=10**9) is None


def test_a_stored_tier_reads_as_its_label_and_an_unknown_one_as_it_is() -> None:
    assert Tier.label_of("move_to_workspace") == "MoveToWorkspace"
    assert Tier.label_of("none") == "none"  # no label: the stored value
    assert Tier.label_of("from_a_newer_agentsh") == "from_a_newer_agentsh"
