"""The tiers on windows from 4k to 1M tokens: they act at their percentages, the pre-flight
check only when a request truly does not fit, a tier that cannot free enough does not run,
and a pause holds until the user acts."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from agentsh.context import tiers
from agentsh.context.manager import ContextManager
from agentsh.context.preflight import budget_for, reply_reserve
from agentsh.context.repair import Message
from agentsh.context.workspace import MemoryWorkspace
from agentsh.events import (
    CompactionFailed,
    CompactionStarted,
    Event,
    Notice,
    StatusChanged,
    Tier,
)
from agentsh.paths import UserPaths
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session
from tests.context.builders import (
    SYSTEM,
    Step,
    add_turn,
    drive_turn,
    fill_project,
    own_prompt,
    unique_output,
)
from tests.context.conftest import FakeSummarizer, ManagerFactory, settings_with

WINDOWS = (4_000, 8_000, 32_768, 128_000, 1_000_000)


def _started(events: list[Event]) -> list[CompactionStarted]:
    return [e for e in events if isinstance(e, CompactionStarted)]


def test_the_reply_reserve_scales_with_the_window() -> None:
    cs = settings_with().context
    for window in WINDOWS:
        reserve = reply_reserve(window, cs)
        # Never more than the room above the Truncate tier: the budget is at least 95 %.
        assert budget_for(window, reserve) >= 0.95 * window
        assert reserve <= cs.reserve_tokens
    assert reply_reserve(1_000_000, cs) == 16_384  # a large window keeps the full reserve
    assert reply_reserve(1_000_000, cs, max_output=8_192) == 8_192  # never over the max output


@pytest.mark.parametrize("window", [4_000, 8_000, 32_768])
@pytest.mark.asyncio
async def test_small_windows_do_not_compact_below_the_tiers(
    memory_session: Session, make_manager: ManagerFactory, window: int
) -> None:
    """A 16k reserve clamped to half the window made pre-flight compact at ~50 % of a 32k
    window (and on every turn of a 4k one)."""
    s = memory_session
    events: list[Event] = []
    manager = make_manager(s, window=window, events=events)
    n = 0
    while manager.status().pct < 76:
        n += 1
        output = unique_output(int(window * 0.03), f"f{n}")
        await drive_turn(manager, s, f"request {n}", [Step("read", {"path": f"f{n}.py"}, output)])
    assert _started(events) == []
    assert manager.last_preflight is not None and manager.last_preflight.route == "fits"


@pytest.mark.parametrize("window", [4_000, 8_000, 32_768])
@pytest.mark.asyncio
async def test_on_small_windows_the_first_tiers_make_room_before_truncate(
    memory_session: Session, make_manager: ManagerFactory, window: int
) -> None:
    """Turns of ~15 % of the window: ten (or five) kept turns of up to 20k tokens were the
    whole of a 4k-32k window, so MoveToWorkspace and Summarize had nothing to free and said so,
    and every compaction was a Truncate at 95-100 % (measured with `agentsh -p -c`)."""
    s = memory_session
    events: list[Event] = []
    manager = make_manager(s, window=window, events=events)
    for n in range(24):
        output = unique_output(int(window * 0.12), f"r{n}")
        await drive_turn(manager, s, f"request {n}", [Step("read", {"path": f"r{n}.py"}, output)])
    tiers_run = [e.tier for e in _started(events)]
    assert tiers_run and Tier.TRUNCATE not in tiers_run, tiers_run
    skipped = [e.text for e in events if isinstance(e, Notice) and "skipped" in e.text]
    assert len(skipped) <= 2, skipped


async def three_big_turns_to_81_percent(manager: ContextManager, s: Session, window: int) -> None:
    """Three turns of one big read each, together filling the context to about 81 %."""
    for n in range(3):
        size = int((0.81 * window - manager.status().used) / (3 - n)) - 40
        await drive_turn(
            manager, s, f"big {n}", [Step("read", {"path": "x"}, unique_output(size, f"b{n}"))]
        )


@pytest.mark.parametrize("window", [4_000, 32_768])
@pytest.mark.asyncio
async def test_a_tier_that_cannot_free_enough_does_not_run_and_says_so_once(
    memory_session: Session, make_manager: ManagerFactory, window: int
) -> None:
    """Three big turns at 81 %: MoveToWorkspace keeps the last ten, so it can free nothing.
    It used to start, fail with "nothing to free" and say so at every call of every turn."""
    s = memory_session
    events: list[Event] = []
    manager = make_manager(
        s, window=window, events=events, kept_turns_max_tokens=10**6, compact_target=1.0
    )
    await three_big_turns_to_81_percent(manager, s, window)
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    for n in range(3):
        await drive_turn(manager, s, f"small {n}", [Step("bash", {"command": "ls"}, "ok")])
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    assert _started(events) == [] and not [e for e in events if isinstance(e, CompactionFailed)]
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].startswith("MoveToWorkspace skipped: nothing to free")


@pytest.mark.asyncio
async def test_a_skip_is_said_once_across_processes_too(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A user scripting `agentsh -p -c` turn after turn got the same "skipped" line from every
    process: each new manager forgot it had been said. The log tells: the previous turn was
    already in this tier with no compaction since."""
    s = memory_session
    window = 4_000
    events: list[Event] = []
    options: dict[str, Any] = {"kept_turns_max_tokens": 10**6, "compact_target": 1.0}
    manager = make_manager(s, window=window, events=events, **options)
    await three_big_turns_to_81_percent(manager, s, window)
    for n in range(3):  # one process a turn
        manager = make_manager(s, window=window, events=events, **options)
        await drive_turn(manager, s, f"small {n}", [Step("bash", {"command": "ls"}, "ok")])
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].startswith("MoveToWorkspace skipped: nothing to free")


def _paused_session(s: Session) -> None:
    """Two automatic compactions that freed under 10 % each (a pause rebuilt from the log)."""
    for _ in range(2):
        s.append(
            CompactionEntry(
                id=s.new_id(),
                parent_id=s.leaf_id,
                tier="move_to_workspace",
                summary="",
                first_kept_id=s.current_path()[0].id,
                tokens_before=82_000,
                tokens_after=78_000,
            )
        )


@pytest.mark.asyncio
async def test_the_pause_holds_under_the_tier_and_shows_until_the_user_acts(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The pause used to lift on the next call because usage was back under the 80 % tier."""
    s = memory_session
    add_turn(s, "start", [])
    start = s.leaf_id
    _paused_session(s)
    s.append_message(Role.USER, "go on")
    s.append_message(Role.ASSISTANT, "ok", usage=Usage(input_tokens=76_000))
    events: list[Event] = []
    manager = make_manager(s, window=100_000, events=events)
    assert manager.status().paused
    for n in range(4):  # under the tier, then into it: still paused, nothing compacts
        await drive_turn(
            manager, s, f"turn {n}", [Step("bash", {"command": "ls"}, unique_output(1_000, f"{n}"))]
        )
    assert manager.status().pct > 80
    assert _started(events) == []
    statuses = [e.status for e in events if isinstance(e, StatusChanged)]
    assert statuses and all(status.paused for status in statuses)
    # Said once, when a tier is reached and the pause keeps it from running; not again by the
    # next process (`-p -c`) in the same state.
    told = [e.text for e in events if isinstance(e, Notice)]
    assert len(told) == 1 and told[0].startswith("MoveToWorkspace not run at 8"), told
    assert "paused" in told[0]
    again = make_manager(s, window=100_000, events=events)
    await drive_turn(again, s, "one more", [Step("bash", {"command": "ls"}, "ok")])
    assert _started(events) == [] and again.status().paused
    assert [e.text for e in events if isinstance(e, Notice)] == told
    # A user action that shrinks the context (going back to an earlier point) lifts it.
    s.move_leaf(start)
    assert not manager.status().paused


@pytest.mark.asyncio
async def test_a_manual_compaction_lifts_the_pause(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    add_turn(s, "start", [])
    _paused_session(s)
    for n in range(6):
        add_turn(s, f"turn {n}", [Step("bash", {"command": "ls"}, unique_output(2_000, f"{n}"))])
    manager = make_manager(s, window=100_000)
    assert manager.status().paused
    assert await manager.compact(Tier.TRUNCATE) is not None
    assert not manager.status().paused and manager.strikes == 0


@pytest.mark.asyncio
async def test_a_compaction_that_would_not_shrink_the_context_is_not_applied(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """`/compact truncate` on four short turns archived one and added a longer pointer: the
    context grew."""
    s = memory_session
    for n in range(4):
        add_turn(s, f"hi {n}", [], f"hello {n}")
    events: list[Event] = []
    manager = make_manager(s, window=100_000, events=events)
    path = s.current_path()
    assert await manager.compact(Tier.TRUNCATE) is None
    assert s.current_path() == path
    (failed,) = [e for e in events if isinstance(e, CompactionFailed)]
    assert "no smaller" in failed.reason
    assert isinstance(manager.workspace, MemoryWorkspace) and manager.workspace.files == {}


# -- the property test ---------------------------------------------------------------------------


Sent = list[tuple[int, list[dict[str, Any]]]]


async def _replay(
    window: int, project: Path
) -> tuple[list[tuple[int, Tier, float, str]], ContextManager, int, Sent, int]:
    """A scripted 60-turn session (reads, commands that fail, edits) on ``window``, with
    agentsh's own prompt at its largest; returns (turn, tier, usage fraction, reason) for every
    compaction that started, every request with the number of compactions started before it,
    and the own prompt's tokens."""
    fill_project(project)  # agentsh's own prompt at its largest
    system, tools = own_prompt(project, window)
    rng = random.Random(window)
    s = Session.create(None, Path("/tmp"))
    started: list[tuple[int, Tier, float, str]] = []
    turn = [0]
    manager: ContextManager

    def emit(event: Event) -> None:
        if isinstance(event, CompactionStarted):
            started.append((turn[0], event.tier, manager.status().used / window, event.reason))

    sent: Sent = []

    class RecordingManager(ContextManager):
        """Keeps every request it prepares, with the compactions started before it."""

        async def prepare(
            self,
            system_prompt: str,
            tools: list[dict[str, Any]],
            pending_input: str = "",
            *,
            compact: bool = True,
        ) -> list[Message]:
            request = await super().prepare(system_prompt, tools, pending_input, compact=compact)
            sent.append((len(started), request))
            return request

    manager = RecordingManager(
        s,
        settings_with(),
        UserPaths.from_env(),
        model="test/model",
        window=window,
        summarize=FakeSummarizer(),
        emit=emit,
    )
    largest = 0
    for n in range(60):
        turn[0] = n
        steps = []
        for k in range(rng.randint(1, 3)):
            size = int(window * rng.uniform(0.005, 0.03))
            if rng.random() < 0.2:
                steps.append(
                    Step(
                        "bash",
                        {"command": f"pytest -k t{n}"},
                        unique_output(size, f"e{n}{k}"),
                        is_error=True,
                        details={"exit_code": 1},
                    )
                )
            elif rng.random() < 0.3:
                steps.append(Step("edit", {"path": f"src/m{n}.py", "old": "a", "new": "b"}, "ok"))
            else:
                steps.append(
                    Step("read", {"path": f"src/m{n}_{k}.py"}, unique_output(size, f"r{n}{k}"))
                )
        requests = await drive_turn(
            manager, s, f"task {n}: do step {n}", steps, f"done {n}", system=system, tools=tools
        )
        largest = max(largest, manager.status().used)
        assert all(r for r in requests)
    own = manager.accounting.count_text(system) + manager.accounting.count_tools(tools)
    return started, manager, largest, sent, own


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.asyncio
async def test_no_tier_fires_below_its_threshold_and_no_two_turns_in_a_row_compact(
    window: int, project: Path
) -> None:
    """With agentsh's own prompt at its largest: at full size it was 10,400 tokens (260 % of a
    4k window, 130 % of an 8k one); scaled, it leaves the conversation over half the window
    below the first tier."""
    started, manager, largest, _sent, own = await _replay(window, project)
    cs = manager.settings.context
    assert own <= 0.35 * window, (window, own)
    assert cs.move_to_workspace_at * window - own >= 0.45 * window
    assert started, "the session should reach the tiers"
    for turn, tier, usage, reason in started:
        threshold = tiers.rule(tier, cs).threshold
        assert usage >= threshold - 1e-9, (turn, tier, usage, reason)
    by_turn: dict[int, float] = {}
    for turn, _tier, usage, _reason in started:
        by_turn[turn] = max(by_turn.get(turn, 0.0), usage)
    for turn, usage in by_turn.items():
        if turn - 1 in by_turn:
            assert usage >= cs.truncate_at, (turn, usage)
    assert largest <= window


def _cap_notes(request: list[dict[str, Any]]) -> list[str]:
    return [
        str(m["content"])
        for m in request
        if str(m.get("content", "")).startswith("[Note: ") and "left out" in str(m["content"])
    ]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.asyncio
async def test_a_request_starts_with_the_previous_one_unless_a_compaction_ran(
    window: int, project: Path
) -> None:
    """The prefix a provider caches: nothing earlier in a request (system prompt, summary
    block, kept facts, old tool output) changes between two requests unless a compaction
    ran between them, or the message-count guard moved its cut (half its budget at a time)."""
    _started, _manager, _largest, sent, _own = await _replay(window, project)
    compared = 0
    for (done_before, old), (done_after, new) in itertools.pairwise(sent):
        if done_after != done_before or _cap_notes(old) != _cap_notes(new):
            continue
        compared += 1
        assert new[: len(old)] == old, window
    assert compared > 0.8 * len(sent)


@pytest.mark.asyncio
async def test_with_auto_compact_off_the_tiers_show_but_only_the_pre_flight_check_acts(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    events: list[Event] = []
    manager = make_manager(s, window=32_768, events=events, auto_compact=False)
    n = 0
    while manager.status().pct < 92:
        n += 1
        output = unique_output(1_000, f"f{n}")
        await drive_turn(manager, s, f"request {n}", [Step("read", {"path": f"f{n}.py"}, output)])
    assert manager.status().tier is Tier.SUMMARIZE  # the bar still shows the tier
    assert _started(events) == []
    # A request that would not fit is still compacted first.
    big = unique_output(3_000, "big")
    s.append_message(Role.USER, "one more\n" + big)
    await manager.prepare("system", [])
    started = _started(events)
    assert started and started[0].reason.startswith("pre-flight")


@pytest.mark.asyncio
async def test_summary_instructions_from_the_config_and_from_compact_reach_the_model(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    for n in range(8):
        add_turn(s, f"turn {n}", [Step("bash", {"command": "ls"}, unique_output(800, f"{n}"))])
    summarizer = FakeSummarizer()
    manager = make_manager(
        s, window=100_000, summarize=summarizer, summary_instructions="Keep every TODO."
    )
    assert await manager.compact(instructions="Focus on the parser decisions.") is not None
    prompt = summarizer.last_prompt
    assert (
        "<instructions>\nKeep every TODO.\n\nFocus on the parser decisions.\n</instructions>"
        in (prompt)
    )


def test_a_skip_names_only_the_tiers_the_engine_runs(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The pi engine compacts only by Summarize, near the window's end: its "skipped" notice
    said "Compaction waits for Truncate at 95%", a tier it never runs (seen in a 4k drive)."""
    pi = make_manager(memory_session, window=4_000, engine="pi")
    assert pi.compactor._next(Tier.SUMMARIZE) == "Run /compact to choose what leaves."
    tiered = make_manager(memory_session, window=4_000)
    assert "Truncate at 95%" in tiered.compactor._next(Tier.SUMMARIZE)


@pytest.mark.asyncio
async def test_a_skip_is_said_once_when_the_request_that_crossed_the_tier_failed(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The next `-p -c` process read what was already said from the newest reply that carried
    usage: when the reply to the request that crossed the tier failed (no usage), it measured
    the request before, under the tier, and said "skipped" again."""
    s = memory_session
    window = 4_000
    events: list[Event] = []
    options: dict[str, Any] = {"kept_turns_max_tokens": 10**6, "compact_target": 1.0}
    manager = make_manager(s, window=window, events=events, **options)
    for n in range(2):
        size = int((0.81 * window - manager.status().used) / 3)
        await drive_turn(
            manager, s, f"big {n}", [Step("read", {"path": "x"}, unique_output(size, f"b{n}"))]
        )
    s.append_message(Role.USER, "big 2")
    await manager.prepare(SYSTEM, [])
    call = ToolCall(id="call_big2", name="read", arguments='{"path": "y"}')
    s.append_message(
        Role.ASSISTANT,
        "",
        tool_calls=(call,),
        usage=Usage(input_tokens=manager.status().used, output_tokens=20),
        stop_reason=StopReason.TOOL_CALLS,
    )
    size = int(0.82 * window - manager.status().used)
    s.append_tool_result(call.id, "read", unique_output(size, "b2"))
    await manager.prepare(SYSTEM, [])  # crosses into MoveToWorkspace: skipped, said
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    s.append_message(Role.ASSISTANT, "", stop_reason=StopReason.ERROR)  # the reply failed
    for n in range(2):  # one process a turn
        manager = make_manager(s, window=window, events=events, **options)
        await drive_turn(manager, s, f"small {n}", [Step("bash", {"command": "ls"}, "ok")])
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].startswith("MoveToWorkspace skipped"), notices
