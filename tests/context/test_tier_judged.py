"""An automatic compaction's tier is judged on the context as it will be sent: after pruning
(SPEC §4: every tier prunes first, and a prune that takes the context under the tier's
threshold ends it) and after the pre-flight check's cut of oversized tool output.

The tier was judged before either trimmed anything: a context at 88 % ran a Summarize (a
summary call to a lossy model, five turns kept) although pruning old tool output alone took it
to 68 %, where an archive that keeps ten turns and calls no model was enough; at 96 % a
Truncate dropped turns without a summary although pruning left 88 %, a Summarize's range; and
one large command output on a 32k window at 60 % ran a Truncate that the pre-flight cut of
that output made needless (the reply to the cut request measured it at 73 %).
"""

from __future__ import annotations

import pytest

from agentsh.events import CompactionFinished, Event, Notice, Tier
from agentsh.session.entries import CompactionEntry, Role, StopReason, ToolCall, Usage
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.context.conftest import FakeSummarizer, ManagerFactory

W = 100_000


def _make_ran(s: Session, measured: int, call_id: str, output: str) -> None:
    """The model ran ``make`` in a reply that measured the context at ``measured`` tokens
    (its input), and the command printed ``output``."""
    s.append_message(
        Role.ASSISTANT,
        "",
        tool_calls=(ToolCall(call_id, "bash", '{"command": "make"}'),),
        usage=Usage(input_tokens=measured, output_tokens=20),
        stop_reason=StopReason.TOOL_CALLS,
    )
    s.append_tool_result(call_id, "bash", output)


def _session(s: Session, *, answer_chars: int, output_chars: int, turns: int = 18) -> None:
    for i in range(turns):
        add_turn(
            s,
            f"task {i}",
            [Step("read", {"path": f"f{i}.py"}, f"{i}:" + "z" * output_chars)],
            f"answer {i} " + "a" * answer_chars,  # an answer is never pruned
        )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("answer_chars", "output_chars", "in_tier", "runs"),
    [
        # Summarize at ~88 %; pruning the 13 outputs past the 5 kept turns leaves ~68 %.
        (14_000, 5_400, Tier.SUMMARIZE, Tier.MOVE_TO_WORKSPACE),
        # Truncate at ~96 %; pruning leaves a Summarize's range whatever the tier prunes.
        (18_900, 2_400, Tier.TRUNCATE, Tier.SUMMARIZE),
    ],
)
async def test_the_tier_that_runs_is_the_one_the_pruned_context_is_in(
    memory_session: Session,
    make_manager: ManagerFactory,
    answer_chars: int,
    output_chars: int,
    in_tier: Tier,
    runs: Tier,
) -> None:
    s = memory_session
    _session(s, answer_chars=answer_chars, output_chars=output_chars)
    summarizer = FakeSummarizer()
    events: list[Event] = []
    manager = make_manager(s, window=W, summarize=summarizer, events=events)
    assert manager.status().tier is in_tier

    await manager.prepare("SYSTEM", [])

    compaction = s.current_path()[-1]
    assert isinstance(compaction, CompactionEntry)
    assert compaction.tier == runs.value
    assert len(summarizer.calls) == (1 if runs is Tier.SUMMARIZE else 0)
    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    assert done.tier is runs
    assert f"so {runs.label} ran instead of {in_tier.label}" in done.note
    # What it left is out of every tier: the lighter tier freed enough.
    assert manager.status().tier is Tier.NONE


@pytest.mark.asyncio
async def test_a_large_output_the_pre_flight_cut_makes_fit_compacts_nothing(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    for i in range(6):  # ~60 % of a 32k window, nothing to prune
        add_turn(s, f"task {i}", [], f"answer {i} " + "a" * 13_000)
    s.append_message(Role.USER, "run the build")
    measured = make_manager(s, window=32_768).status().used
    _make_ran(s, measured, "c1", "build line\n" * 4_600)  # ~50 KB: ~12.6k tokens
    summarizer = FakeSummarizer()
    events: list[Event] = []
    manager = make_manager(s, window=32_768, summarize=summarizer, events=events)
    whole = manager.accounting.used(0, 0).tokens
    assert whole > 0.95 * 32_768  # whole, the context is in Truncate's range
    # The status line shows it as sent, the figure the tier is judged on (the reply to the
    # request measures that too), not a Truncate that does not run.
    assert manager.status().tier is Tier.NONE and manager.status().pct < 80

    messages = await manager.prepare("SYSTEM", [])

    assert not [e for e in events if isinstance(e, CompactionFinished)]
    assert not any(isinstance(e, CompactionEntry) for e in s.current_path())
    assert manager.last_truncated == 1  # the output is cut, as it was going to be
    assert "were cut from the middle to fit the context window" in str(messages[-1]["content"])
    assert summarizer.calls == []


@pytest.mark.asyncio
async def test_the_after_figure_is_the_request_as_sent_when_a_kept_output_is_cut(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """A Truncate on an 8k window keeps the newest turn, one 40 KB command output that the
    pre-flight check cuts to its cap in every request: its "after" figure counted the output
    whole (9,923 tokens, 121 % on the status bar until the next reply, for a request of about
    2,600), and the next request, "back in a tier within a turn", paused automatic compaction."""
    s = memory_session
    for i in range(4):
        add_turn(s, f"task {i}", [], f"answer {i} " + "a" * 6_000)
    s.append_message(Role.USER, "run the build")
    measured = make_manager(s, window=8_192).status().used
    _make_ran(s, measured, "c1", "build line\n" * 3_600)  # ~40 KB
    events: list[Event] = []
    manager = make_manager(s, window=8_192, events=events)

    messages = await manager.prepare("SYSTEM", [])

    (done,) = [e for e in events if isinstance(e, CompactionFinished)]
    assert manager.last_truncated == 1  # the kept output goes cut
    sent = sum(manager.accounting.count(str(m.get("content") or "")) + 4 for m in messages)
    assert done.tokens_after < 8_192 * 0.5
    assert abs(done.tokens_after - sent) <= 0.05 * sent  # the figure is the request
    assert manager.status().used == done.tokens_after
    assert manager.status().pct < 50

    # The next step of the turn: no tier, no pause.
    s.append_message(
        Role.ASSISTANT,
        "",
        tool_calls=(ToolCall("c2", "bash", '{"command": "ls"}'),),
        stop_reason=StopReason.TOOL_CALLS,
    )
    s.append_tool_result("c2", "bash", "ok")
    events.clear()
    await manager.prepare("SYSTEM", [])
    assert not [e for e in events if isinstance(e, Notice | CompactionFinished)]
    assert not manager.paused


@pytest.mark.asyncio
async def test_outputs_a_reply_measured_cut_do_not_make_the_next_request_fit_by_truncation(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    """The pre-flight check counted the cut of every oversized output in the context as room it
    could free, also those the provider's figure had measured already cut: on an 8k window with
    automatic compaction paused, four 20 KB outputs "fit by truncation" and a 12.5k-token
    request went out (153 %). Only the outputs no figure measured count; the rest needs the
    pre-flight compaction, which runs whatever the pause."""
    s = memory_session
    s.append_message(Role.USER, "run the builds")
    for k in range(4):
        measured = make_manager(s, window=8_192, auto_compact=False).status().used
        _make_ran(s, measured, f"c{k}", "".join(f"{k}-{i} build " for i in range(2_200)))
    events: list[Event] = []
    manager = make_manager(s, window=8_192, auto_compact=False, events=events)

    messages = await manager.prepare("SYSTEM", [])

    assert [e for e in events if isinstance(e, CompactionFinished)]  # the pre-flight net
    sent = sum(manager.accounting.count(str(m.get("content") or "")) + 4 for m in messages)
    assert sent <= 8_192
