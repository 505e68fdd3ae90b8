"""The working indicator's state, from the events of a turn (issue 14, item 4)."""

from __future__ import annotations

from agentsh.events import (
    AssistantMessage,
    CompactionFinished,
    CompactionStarted,
    Retrying,
    TextDelta,
    ThinkingDelta,
    Tier,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.tui.activity import WAITING, Activity, human_seconds


def test_the_indicator_follows_what_the_turn_is_doing_and_stops_with_it() -> None:
    now = [100.0]
    activity = Activity(clock=lambda: now[0])
    assert activity.line() == "" and not activity.running
    activity.start()
    now[0] = 112.4
    assert activity.line().endswith(f"{WAITING} · 12s · Esc to cancel")
    steps = [
        (TurnStarted("u1", "hi"), WAITING),
        (ThinkingDelta("hmm"), "thinking"),
        (TextDelta("Let me"), "writing the reply"),
        (AssistantMessage("a1", "", (("c1", "bash", "{}"),), "tool_calls"), "about to run bash"),
        (ToolStarted("c1", "bash", {}, "bash: pytest -q"), "running bash: pytest -q"),
        (ToolFinished("c1", "bash", "t1", "ok", False), WAITING),
        (Retrying(2, 4, 3.0, "rate limited"), "retrying (rate limited; attempt 2/4 in 3s)"),
        (CompactionStarted(Tier.SUMMARIZE, "80%"), "compacting (Summarize)"),
        (CompactionFinished("c", Tier.SUMMARIZE, 10, 5, ""), WAITING),
    ]
    for event, doing in steps:
        activity.follow(event)
        assert activity.doing == doing, event
    assert "running" not in activity.line(cancel_key="Ctrl+X")
    assert activity.line(cancel_key="Ctrl+X").endswith("· 12s · Ctrl+X to cancel")
    activity.follow(TurnEnded(TurnOutcome.DONE))
    assert not activity.running and activity.line() == ""


def test_a_compaction_without_a_turn_starts_the_clock_itself() -> None:
    activity = Activity(clock=lambda: 5.0)
    activity.follow(CompactionStarted(Tier.TRUNCATE, "manual"))
    assert activity.running and activity.doing == "compacting (Truncate)"


def test_elapsed_time_reads_naturally() -> None:
    assert [human_seconds(s) for s in (0, 7.9, 65, 3725)] == ["0s", "7s", "1m 05s", "1h 02m"]
