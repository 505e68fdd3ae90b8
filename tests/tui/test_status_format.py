"""The status bar's layout: what it shows for each state and what it drops when narrow."""

from __future__ import annotations

import pytest

from agentsh.events import ContextStatus, Tier
from agentsh.tui.status_format import context_bar, human_cost, human_tokens, layout, plain

FULL = ContextStatus(
    model="anthropic/claude-sonnet-4-6",
    window=200_000,
    used=171_000,
    pct=85.5,
    tier=Tier.SUMMARIZE,
    session_input_tokens=1_200_000,
    session_output_tokens=45_000,
    session_cost=3.21,
    compactions=2,
    paused=True,
    branch_index=2,
    branch_count=3,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (999, "999"), (1000, "1k"), (1234, "1.2k"), (45_000, "45k"), (1_234_567, "1.2M"),
     (12_000_000, "12M")],
)  # fmt: skip
def test_token_counts_are_shortened_like_other_agents(value: int, text: str) -> None:
    assert human_tokens(value) == text


def test_costs_keep_cents_and_show_fractions_of_a_cent() -> None:
    assert human_cost(0) == "$0.00"
    assert human_cost(0.004) == "$0.0040"
    assert human_cost(3.214) == "$3.21"


def test_bar_fills_in_proportion_to_usage() -> None:
    assert context_bar(0) == ("", "░" * 10)
    assert context_bar(85.5) == ("█" * 9, "░")
    assert context_bar(100) == ("█" * 10, "")


def test_wide_bar_shows_every_field() -> None:
    text = plain(layout(FULL, 200))
    for part in (
        "anthropic/claude-sonnet-4-6",
        "171k / 200k",
        "(86%)",
        "Summarize",
        "auto-compaction paused",
        "Σ 1.2M tok",
        "$3.21",
        "2 compactions",
        "branch 2/3",
    ):
        assert part in text


def test_current_context_and_session_totals_are_separate_figures() -> None:
    text = plain(layout(FULL, 200))
    assert text.index("171k / 200k") < text.index("Σ 1.2M tok")


def test_estimated_usage_is_marked_with_a_question_mark() -> None:
    status = ContextStatus(model="m", window=100_000, used=5_000, pct=5.0, estimated=True)
    assert "5k? / 100k (5%?)" in plain(layout(status, 120))


def test_no_tier_name_below_the_first_threshold() -> None:
    status = ContextStatus(model="m", window=100_000, used=5_000, pct=5.0)
    text = plain(layout(status, 120))
    for name in ("MoveToWorkspace", "Summarize", "Truncate"):
        assert name not in text


@pytest.mark.parametrize("tier", [Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE])
def test_each_tier_is_named_and_coloured_differently(tier: Tier) -> None:
    status = ContextStatus(model="m", window=100, used=90, pct=90.0, tier=tier)
    segs = layout(status, 120)
    assert tier.label in plain(segs)
    bar = next(s for s in segs if s.key == "bar")
    assert bar.parts[0].style  # coloured by tier
    styles = {
        t: next(s for s in layout(ContextStatus(model="m", window=100, pct=50, tier=t), 120)
                if s.key == "bar").parts[0].style
        for t in Tier
    }  # fmt: skip
    assert len(set(styles.values())) == len(Tier)


def test_eighty_columns_fit_and_keep_the_context_figures() -> None:
    segs = layout(FULL, 80)
    text = plain(segs)
    assert len(text) + 2 <= 80
    assert "171k / 200k" in text and "Summarize" in text and "auto-compaction paused" in text


def test_fields_drop_in_the_fixed_order_as_the_bar_narrows() -> None:
    dropped_at: dict[str, int] = {}
    for width in range(200, 30, -1):
        segs = layout(FULL, width)
        keys = {s.key for s in segs}
        if "anthropic/" not in plain(segs):
            dropped_at.setdefault("provider", width)
        for key in ("bar", "compactions", "session_tokens", "branch", "cost"):
            if key not in keys and key not in dropped_at:
                dropped_at[key] = width
    order = sorted(dropped_at, key=lambda k: -dropped_at[k])
    assert order == ["bar", "compactions", "provider", "session_tokens", "branch", "cost"]
    assert "claude-sonnet-4-6" in plain(layout(FULL, 80))


def test_the_prompt_cache_share_is_shown_once_the_provider_reads_from_it() -> None:
    from dataclasses import replace

    assert "cache " not in plain(layout(FULL, 200))
    cached = replace(FULL, session_cache_read_tokens=984_000, session_cache_write_tokens=61_000)
    assert "cache 82 %" in plain(layout(cached, 200))
    # It goes with the compaction count, before the provider prefix.
    gone = {
        name: next(w for w in range(200, 30, -1) if text not in plain(layout(cached, w)))
        for name, text in (("cache", "cache 82 %"), ("provider", "anthropic/"))
    }
    assert gone["cache"] > gone["provider"]


def test_loading_is_shown_before_the_agent_is_ready() -> None:
    status = ContextStatus(model="openai/gpt-4.1", window=1_047_576)
    assert "loading…" in plain(layout(status, 100, loading=True))
    assert "loading…" not in plain(layout(status, 100, loading=False))


def test_a_problem_is_always_shown() -> None:
    status = ContextStatus(model="m", window=100, problem="compaction not written; retried")
    assert "⚠ compaction not written" in plain(layout(status, 60))


def test_the_mcp_share_shows_after_the_context_and_goes_right_after_the_bar() -> None:
    status = ContextStatus(
        model="openai/gpt-4o", window=128_000, used=9_000, pct=7.0, mcp_tools=4_200
    )
    wide = plain(layout(status, 200))
    assert "9k / 128k (7%) │ mcp 4.2k" in wide
    no_bar = plain(layout(status, len(wide) - 1))
    assert "█" not in no_bar and "░" not in no_bar and "mcp 4.2k" in no_bar
    narrow = plain(layout(status, len(no_bar) - 1))
    assert "mcp" not in narrow and "9k / 128k" in narrow
    assert "mcp" not in plain(layout(ContextStatus(model="m", window=1000, used=10, pct=1.0), 200))


def test_with_no_model_the_bar_shows_no_context_gauge() -> None:
    """Started with no model configured, the bar read "no model │ ░░░ │ 2.2k? / 128k (2%?)":
    a window and a share of it for a model that does not exist."""
    bar = plain(layout(ContextStatus(model="", window=128_000, used=2_200, estimated=True), 80))
    assert bar.strip() == "no model"
