"""The anti-thrashing pause in a natural drive: turns a quarter of a small window each, so
every compaction is full again within a turn. Automatic compaction used to run on every turn
(a summary call each, the prompt cache rewritten each time) and never paused: the 10 %
minimum saving stopped every strike. Now it pauses once, visibly, and stays paused; only the
pre-flight check compacts a request that would not fit."""

from __future__ import annotations

import pytest

from agentsh.context.manager import ContextManager
from agentsh.events import CompactionFinished, CompactionStarted, Event, Notice, StatusChanged
from agentsh.session.entries import Usage
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn, drive_turn, unique_output
from tests.context.conftest import FakeSummarizer, ManagerFactory


async def _quarter_turns(
    manager: ContextManager, s: Session, window: int, turns: range, turn_of: list[int]
) -> None:
    """agentsh's own prompt at a quarter of the window (a 4k window's, measured: 23-31 %), then
    each turn a long request (1/8 of the window) and a command printing another 1/8."""
    system = unique_output(window // 4, "system")
    for n in turns:
        turn_of[0] = n
        request = f"task {n}: " + " ".join(f"detail{n}_{k}" for k in range(window // 20))
        output = unique_output(window // 8, f"o{n}")
        steps = [Step("bash", {"command": f"make {n}"}, output)]
        await drive_turn(manager, s, request, steps, system=system)


@pytest.mark.parametrize("window", [4_000, 8_000])
@pytest.mark.asyncio
async def test_when_compaction_cannot_keep_up_it_pauses_once_and_stays_paused(
    memory_session: Session, make_manager: ManagerFactory, window: int
) -> None:
    s = memory_session
    events: list[tuple[int, Event]] = []
    turn_of = [0]
    summarizer = FakeSummarizer()
    manager = make_manager(
        s,
        window=window,
        summarize=summarizer,
        emit=lambda e: events.append((turn_of[0], e)),
    )
    await _quarter_turns(manager, s, window, range(16), turn_of)
    started = [(t, e) for t, e in events if isinstance(e, CompactionStarted)]
    automatic = [t for t, e in started if not e.reason.startswith("pre-flight")]
    # Before: an automatic compaction on every turn from the fourth on (13 of 16).
    assert 1 <= len(automatic) <= 2, started
    pauses = [(t, e.text) for t, e in events if isinstance(e, Notice) and "is paused" in e.text]
    assert len(pauses) == 1, pauses
    paused_from = pauses[0][0]
    assert paused_from <= 6, pauses
    # Stable: shown in every status after it, through the pre-flight check's compactions.
    after = [e.status for t, e in events if isinstance(e, StatusChanged) and t > paused_from]
    assert after and all(status.paused for status in after)
    assert manager.status().paused
    # The provider counts a request well under what a compaction estimated it left: the pause
    # lifted itself (seen in the TUI at 51 % of a 4k window: "the context shrank").
    add_turn(s, "short one", [], usage=Usage(input_tokens=window // 5))
    assert manager.status().paused
    assert all(e.reason.startswith("pre-flight") for t, e in started if t > paused_from)
    finished = [e for t, e in events if isinstance(e, CompactionFinished) and t > paused_from]
    assert finished and all("automatic compaction is paused" in e.note for e in finished)
    # No other notice repeats it turn after turn.
    notices = [e.text for _t, e in events if isinstance(e, Notice)]
    assert len(notices) <= 3, notices
    assert len(started) <= 16 // 2 and len(summarizer.calls) <= 1  # was 15 and up to 5

    # The next `agentsh -p -c` process reads the same state from the log, says nothing.
    events.clear()
    again = make_manager(
        s, window=window, summarize=summarizer, emit=lambda e: events.append((turn_of[0], e))
    )
    assert again.status().paused
    await _quarter_turns(again, s, window, range(16, 19), turn_of)
    assert again.status().paused
    assert not [e for _t, e in events if isinstance(e, Notice)]

    # /compact lifts it (also when only the newest turn is left to keep, as on 4k here).
    await again.compact()
    assert not again.status().paused


@pytest.mark.asyncio
async def test_with_auto_compact_off_nothing_is_said_to_pause(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The pre-flight check's compactions (the only ones with `context.auto_compact = false`)
    came within a turn of each other, and "Automatic compaction is paused" was said and shown
    about a switch the user had turned off."""
    s = memory_session
    events: list[Event] = []
    manager = make_manager(s, window=4_000, auto_compact=False, events=events)
    await _quarter_turns(manager, s, 4_000, range(16), [0])
    started = [e for e in events if isinstance(e, CompactionStarted)]
    assert started and all(e.reason.startswith("pre-flight") for e in started)
    assert not [e for e in events if isinstance(e, Notice)]
    statuses = [e.status for e in events if isinstance(e, StatusChanged)]
    assert not any(status.paused for status in statuses)


@pytest.mark.asyncio
async def test_the_pause_holds_through_a_pre_flight_compaction_that_cuts_what_paused_it(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """Seen against the Anthropic fake on a 6k window: paused at turn 3, the pre-flight check
    truncated at turn 4, and the pause was gone (the state is read back from the path, and the
    turns that had paused it were counted as the new context sends them: cut, so under the
    tier); turn 6 compacted automatically and paused again, said twice."""
    s = memory_session
    events: list[tuple[int, Event]] = []
    turn_of = [0]
    manager = make_manager(
        s,
        window=6_000,
        summarize=FakeSummarizer("empty"),
        emit=lambda e: events.append((turn_of[0], e)),
    )
    system = unique_output(2_000, "system")
    output = "".join(f"line {i} of output\n" for i in range(1, 111))
    for n in range(12):
        turn_of[0] = n
        steps = [Step("bash", {"command": "seq 1 110"}, output) for _ in range(2)]
        request = f"turn {n}: run the two steps " + "x " * 200
        await drive_turn(manager, s, request, steps, "Both steps ran.", system=system)
    pauses = [t for t, e in events if isinstance(e, Notice) and "is paused" in e.text]
    assert len(pauses) == 1, pauses
    started = [(t, e) for t, e in events if isinstance(e, CompactionStarted)]
    assert [t for t, e in started if t > pauses[0]], "the pre-flight check compacts meanwhile"
    assert all(e.reason.startswith("pre-flight") for t, e in started if t > pauses[0]), started
    after = [e.status for t, e in events if isinstance(e, StatusChanged) and t > pauses[0]]
    assert after and all(status.paused for status in after)
    # And so does the next process, reading the log.
    again = make_manager(s, window=6_000, summarize=FakeSummarizer("empty"))
    assert again.status().paused
