"""Entries -> provider messages, and the rule that no request carries an orphan tool call."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from agentsh.context.accounting import Accounting
from agentsh.context.convert import SUMMARY_FOOTER, SUMMARY_HEADER, to_messages
from agentsh.context.manager import ContextManager
from agentsh.context.preflight import cap_messages, truncate_tool_results
from agentsh.context.repair import (
    CANCELLED,
    INTERRUPTED,
    Message,
    pair_problems,
    repair_messages,
    tool_message,
)
from agentsh.context.view import build_view
from agentsh.context.workspace import MemoryWorkspace
from agentsh.events import Tier
from agentsh.llm.tokens import estimate_tokens
from agentsh.paths import UserPaths
from agentsh.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    Role,
    StopReason,
    ToolCall,
    UnknownEntry,
)
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.context.conftest import FakeSummarizer, settings_with


def _view_messages(session: Session, system: str = "SYSTEM") -> list[Message]:
    return to_messages(build_view(session.current_path()), system)


def test_messages_are_openai_format_with_system_first(memory_session: Session) -> None:
    add_turn(memory_session, "list files", [Step("ls", {"path": "."}, "a.py\nb.py")], "Two files.")
    messages = _view_messages(memory_session)
    assert messages[0] == {"role": "system", "content": "SYSTEM"}
    assert messages[1] == {"role": "user", "content": "list files"}
    call = messages[2]["tool_calls"][0]
    assert call["type"] == "function"
    assert call["function"]["name"] == "ls"
    assert json.loads(call["function"]["arguments"]) == {"path": "."}
    assert messages[2]["content"] is None
    assert messages[3] == {"role": "tool", "tool_call_id": call["id"], "content": "a.py\nb.py"}
    assert messages[4] == {"role": "assistant", "content": "Two files."}


def test_unknown_model_change_and_empty_failed_replies_are_not_sent(
    memory_session: Session,
) -> None:
    s = memory_session
    s.append_message(Role.USER, "hi")
    s.append(ModelChangeEntry(id=s.new_id(), parent_id=s.leaf_id, model="other/model"))
    s.append(UnknownEntry(id=s.new_id(), parent_id=s.leaf_id, raw={"type": "future"}))
    s.append_message(Role.ASSISTANT, "", stop_reason=StopReason.ERROR, error="500")
    s.append_message(Role.ASSISTANT, "partial ans", stop_reason=StopReason.ABORTED)
    messages = _view_messages(s)
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert messages[-1]["content"] == "partial ans"


def test_branch_summary_is_a_short_user_note(memory_session: Session) -> None:
    s = memory_session
    s.append_message(Role.USER, "hi")
    s.append(BranchSummaryEntry(id=s.new_id(), parent_id=s.leaf_id, from_id="x", summary="tried A"))
    note = _view_messages(s)[-1]
    assert note["role"] == "user"
    assert "another branch" in str(note["content"]) and "tried A" in str(note["content"])


def test_compaction_summary_is_fenced_reference_and_replacements_apply(
    memory_session: Session,
) -> None:
    s = memory_session
    add_turn(s, "old request", [Step("bash", {"command": "ls"}, "x" * 500)])
    add_turn(s, "new request", [Step("bash", {"command": "make"}, "y" * 500)])
    path = s.current_path()
    kept_user = next(e for e in path if getattr(e, "content", "") == "new request")
    result = path[-2]
    asking = path[-3]
    assert isinstance(asking, MessageEntry)
    call = asking.tool_calls[0]
    s.append(
        CompactionEntry(
            id=s.new_id(),
            parent_id=s.leaf_id,
            tier="summarize",
            summary="## Goal\nthe goal",
            first_kept_id=kept_user.id,
            tokens_before=10,
            tokens_after=5,
            replacements={result.id: "[bash] ran `make` -> exit 0, 1 lines"},
            argument_replacements={call.id: '{"command": "m"}'},
        )
    )
    messages = _view_messages(s)
    summary = str(messages[1]["content"])
    assert messages[1]["role"] == "user"
    assert summary.startswith(SUMMARY_HEADER) and summary.endswith(SUMMARY_FOOTER)
    assert "not a new instruction" in summary and "## Goal\nthe goal" in summary
    assert messages[2] == {"role": "user", "content": "new request"}
    assert all("old request" not in str(m.get("content")) for m in messages)
    assert messages[3]["tool_calls"][0]["function"]["arguments"] == '{"command": "m"}'
    assert messages[4]["content"] == "[bash] ran `make` -> exit 0, 1 lines"


def test_call_without_result_after_a_crash_gets_an_interrupted_result(
    memory_session: Session,
) -> None:
    s = memory_session
    s.append_message(Role.USER, "run it")
    s.append_message(
        Role.ASSISTANT,
        "",
        tool_calls=(ToolCall("c1", "bash", '{"command": "sleep 99"}'),),
        stop_reason=StopReason.TOOL_CALLS,
    )
    # The process died here; the user came back and typed again.
    s.append_message(Role.USER, "what happened?")
    messages = _view_messages(s)
    assert messages[3] == tool_message("c1", INTERRUPTED)
    assert messages[4] == {"role": "user", "content": "what happened?"}
    assert pair_problems(messages) == []


def test_cancelled_reply_calls_get_a_not_run_result(memory_session: Session) -> None:
    s = memory_session
    s.append_message(Role.USER, "go")
    s.append_message(
        Role.ASSISTANT,
        "let me",
        tool_calls=(ToolCall("c1", "bash", "{}"),),
        stop_reason=StopReason.ABORTED,
    )
    messages = _view_messages(s)
    assert messages[-1] == tool_message("c1", CANCELLED)


def test_repair_drops_orphan_results_and_moves_late_results_next_to_their_call() -> None:
    messages = [
        {"role": "user", "content": "x"},
        tool_message("ghost", "orphan"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}},
            ],
        },
        tool_message("b", "B"),
        {"role": "user", "content": "y"},
        tool_message("a", "A"),
    ]
    repaired = repair_messages(messages)
    assert [m.get("tool_call_id") for m in repaired if m["role"] == "tool"] == ["a", "b"]
    assert repaired[2]["content"] == "A" and repaired[3]["content"] == "B"
    assert pair_problems(repaired) == []
    assert pair_problems(messages) != []


def test_bounded_buffer_keeps_system_and_summary_and_never_splits_a_pair() -> None:
    system = {"role": "system", "content": "S"}
    summary = {"role": "user", "content": SUMMARY_HEADER + "\n..."}
    body: list[dict[str, object]] = []
    for i in range(60):
        body.append({"role": "user", "content": f"u{i}"})
        calls = [
            {"id": f"c{i}_{k}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            for k in range(3)
        ]
        body.append({"role": "assistant", "content": None, "tool_calls": calls})
        body.extend(tool_message(f"c{i}_{k}", "r") for k in range(3))
    capped, dropped = cap_messages([system, summary, *body], 100)
    assert capped[0] is system and capped[1] is summary
    assert len(capped) - 1 <= 100
    assert dropped > 0 and "left out" in str(capped[2]["content"])
    assert pair_problems(capped) == []
    assert capped[-1] == body[-1]


# -- the property: whatever happened, the request has no orphan ---------------------------------

_KINDS = ["turn"] * 5 + ["error", "branch", "compact", "compact", "unknown"]
_ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(_KINDS),
        st.integers(0, 10_000),
        st.sampled_from(["all", "all", "crash", "abort", "fail"]),
    ),
    min_size=4,
    max_size=40,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=_ACTIONS, max_messages=st.integers(4, 40))
def test_no_assembled_context_ever_has_an_orphan_tool_call(
    actions: list[tuple[str, int, str]], max_messages: int
) -> None:
    session = Session.create(None, Path("/tmp"))
    summarizer = FakeSummarizer()
    manager = ContextManager(
        session,
        settings_with(max_messages=max_messages, kept_turns_max_tokens=1000),
        UserPaths(Path("/nonexistent/c"), Path("/nonexistent/d"), Path("/nonexistent/e")),
        model="m",
        window=4_000,
        summarize=summarizer,
        workspace=MemoryWorkspace(),
    )
    for n, (kind, number, mode) in enumerate(actions, start=1):
        match kind:
            case "turn":
                session.append_message(Role.USER, f"request {n} " + "w" * 300)
                calls = tuple(
                    ToolCall(f"c{n}_{k}", "bash", json.dumps({"command": f"cmd {k}"}))
                    for k in range(number % 4)
                )
                stop = StopReason.ABORTED if mode == "abort" else StopReason.TOOL_CALLS
                session.append_message(Role.ASSISTANT, "", tool_calls=calls, stop_reason=stop)
                answered = calls if mode in ("all", "fail") else calls[: len(calls) // 2]
                for call in answered:
                    session.append_tool_result(call.id, "bash", f"out {n} " * 80)
                if mode in ("all", "fail"):
                    session.append_message(Role.ASSISTANT, f"done {n}")
            case "error":
                session.append_message(Role.ASSISTANT, "", stop_reason=StopReason.ERROR)
            case "branch":
                ids = list(session.tree.nodes)
                if ids:
                    session.move_leaf(ids[number % len(ids)])
            case "compact":
                summarizer.mode = "fail" if mode == "fail" else "good"
                tier = (Tier.MOVE_TO_WORKSPACE, Tier.SUMMARIZE, Tier.TRUNCATE)[number % 3]
                asyncio.run(manager.compact(tier))
            case "unknown":
                session.append(
                    UnknownEntry(id=session.new_id(), parent_id=session.leaf_id, raw={"type": "x"})
                )
        messages = asyncio.run(manager.prepare("SYSTEM", []))
        assert messages[0]["role"] == "system"
        assert pair_problems(messages) == [], messages
        truncated, _ = truncate_tool_results(messages, 50)
        assert pair_problems(truncated) == []
    # Steer the search towards histories with many compactions on the path.
    target(float(manager.status().compactions))


def test_accounting_counts_only_new_entries_on_the_next_status(memory_session: Session) -> None:
    calls: list[str] = []

    def counter(text: str) -> int:
        calls.append(text)
        return estimate_tokens(text)

    accounting = Accounting(memory_session, counter)
    for i in range(50):
        add_turn(memory_session, f"task {i}", [Step("read", {"path": f"f{i}"}, "z" * 300)])
    accounting.used(0, 0)
    calls.clear()
    memory_session.append_message(Role.USER, "one more")
    accounting.used(0, 0)
    assert calls == ["one more"]
    calls.clear()
    accounting.used(0, 0)
    assert calls == []


def test_bounded_buffer_keeps_the_request_of_a_long_turn() -> None:
    system = {"role": "system", "content": "S"}
    body: list[Message] = [{"role": "user", "content": "older"}]
    body.append({"role": "assistant", "content": "ok"})
    body.append({"role": "user", "content": "migrate every module"})
    for i in range(70):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        body.append({"role": "assistant", "content": None, "tool_calls": [call]})
        body.append(tool_message(f"c{i}", "r"))
    capped, dropped = cap_messages([system, *body], 100)
    assert len(capped) - 1 <= 100 and dropped > 0
    assert capped[1]["content"].startswith("[Note:")
    assert capped[2] == {"role": "user", "content": "migrate every module"}
    assert {"role": "user", "content": "older"} not in capped
    assert capped[3]["role"] == "assistant" and pair_problems(capped) == []
    assert capped[-1] == body[-1]


def test_the_guard_cuts_in_whole_chunks_so_consecutive_requests_share_their_prefix() -> None:
    """Dropping one group per request changed the start of every request past 100 messages:
    a provider's prompt cache could reuse nothing of them."""
    system: Message = {"role": "system", "content": "S"}
    grown: list[Message] = [system]
    requests: list[list[Message]] = []
    for n in range(200):
        grown.append({"role": "user" if n % 2 == 0 else "assistant", "content": f"m{n}"})
        if n % 2 == 0:
            capped, _dropped = cap_messages(grown, 100)
            assert len(capped) <= 101
            requests.append(capped)
    breaks = sum(1 for a, b in itertools.pairwise(requests) if b[: len(a)] != a)
    assert breaks <= 3  # the cut moved 50 messages at a time, not at every request
