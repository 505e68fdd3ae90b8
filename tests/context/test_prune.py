"""Phase 1: pruning tool output without a model call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentsh.config import ContextSettings
from agentsh.context.accounting import Accounting
from agentsh.context.convert import to_messages
from agentsh.context.prune import prune, shorten_arguments, stub
from agentsh.context.view import turn_starts
from agentsh.events import CompactionFinished, Event, Tier
from agentsh.llm.tokens import estimate_tokens
from agentsh.session.entries import CompactionEntry, ToolCall, ToolResultEntry, Usage
from agentsh.session.session import Session
from tests.context.builders import Step, add_turn
from tests.context.conftest import FakeSummarizer, ManagerFactory


def _result(tool: str, content: str, **kw: Any) -> ToolResultEntry:
    return ToolResultEntry(
        id="r",
        parent_id=None,
        tool_call_id="c",
        tool_name=tool,
        content=content,
        **kw,
    )


def test_stubs_say_what_ran_and_how_it_ended() -> None:
    bash = ToolCall("c", "bash", json.dumps({"command": "pytest -q"}))
    out = "\n".join(["F"] * 214)
    line = stub(_result("bash", out, details={"exit_code": 1}, is_error=True), bash)
    assert line.startswith("[bash] ran `pytest -q` -> exit 1, 214 lines")
    read = ToolCall("c", "read", json.dumps({"path": "src/app.py", "limit": 200}))
    line = stub(_result("read", "x\n" * 199 + "x", details={"total_lines": 812}), read)
    assert line.startswith("[read] src/app.py (1-200 of 812 lines)")
    grep = ToolCall("c", "grep", json.dumps({"pattern": "def main", "path": "src"}))
    assert stub(_result("grep", "a\nb"), grep).startswith("[grep] `def main` in src -> 2 lines")
    edit = ToolCall("c", "edit", json.dumps({"path": "a.py"}))
    assert stub(_result("edit", "boom", is_error=True), edit).startswith("[edit] a.py -> failed")
    other = ToolCall("c", "memory", json.dumps({"action": "add", "text": "t" * 100}))
    line = stub(_result("memory", "ok"), other)
    assert line.startswith('[memory] action="add", text="ttt')
    assert "\n" not in line


def test_long_argument_strings_are_shortened_and_the_json_stays_valid() -> None:
    args = json.dumps({"path": "a.py", "content": "c" * 5000, "nested": [{"x": "n" * 300}]})
    short = shorten_arguments(args, 200)
    assert short is not None
    value = json.loads(short)
    assert value["path"] == "a.py"
    assert len(value["content"]) < 220 and "5,000 chars" in value["content"]
    assert len(value["nested"][0]["x"]) < 220
    assert shorten_arguments('{"broken": "', 200) is None
    assert shorten_arguments(json.dumps({"a": "short"}), 200) is None


def test_prune_dedupes_stubs_old_outputs_and_shortens_old_arguments(
    memory_session: Session,
) -> None:
    s = memory_session
    same = "identical output\n" * 30
    add_turn(s, "t0", [Step("write", {"path": "big.py", "content": "w" * 3000}, "wrote big.py")])
    add_turn(s, "t1", [Step("bash", {"command": "make"}, same, details={"exit_code": 0})])
    add_turn(s, "t2", [Step("read", {"path": "a.py"}, "line\n" * 100)])
    add_turn(s, "t3", [Step("bash", {"command": "make"}, same, details={"exit_code": 0})])
    acc = Accounting(s, estimate_tokens)
    view = acc.view()
    starts = turn_starts(view.entries)
    result = prune(view, old_before=starts[1], settings=ContextSettings(), count=estimate_tokens)
    results = [e for e in view.entries if isinstance(e, ToolResultEntry)]
    first_make, read, last_make = results[1], results[2], results[3]
    assert (
        result.deduplicated == 1
        and "identical to a later bash output" in result.replacements[first_make.id]
    )
    assert last_make.id not in result.replacements  # the newest copy stays verbatim
    assert read.id not in result.replacements  # t2 is a kept turn
    assert result.shortened_calls == 1
    ((_call_id, args),) = result.argument_replacements.items()
    assert json.loads(args)["path"] == "big.py"
    assert result.saved_tokens > 0
    # An old output past the kept turns is stubbed.
    result = prune(view, old_before=starts[3], settings=ContextSettings(), count=estimate_tokens)
    assert result.replacements[read.id].startswith("[read] a.py")


@pytest.mark.asyncio
async def test_pruning_alone_stops_the_compaction_when_it_is_enough(
    memory_session: Session, make_manager: ManagerFactory
) -> None:
    s = memory_session
    summarizer = FakeSummarizer()
    events: list[Event] = []
    for i in range(18):
        add_turn(
            s,
            f"task {i}",
            [Step("read", {"path": f"f{i}.py"}, f"{i}:" + "z" * 12_000)],
            # The provider reported 82 % of the window after the last reply: pruning the eight
            # outputs older than the last ten turns takes it under 60 % (compact_target).
            usage=Usage(input_tokens=81_990, output_tokens=10) if i == 17 else None,
        )
    manager = make_manager(s, window=100_000, summarize=summarizer, events=events)
    assert manager.status().tier is Tier.MOVE_TO_WORKSPACE
    await manager.prepare("SYSTEM", [])
    compaction = s.current_path()[-1]
    assert isinstance(compaction, CompactionEntry)
    # Nothing was cut, but the facts are written all the same.
    assert compaction.summary.startswith("## Active Task\ntask 17\n")
    assert "`f0.py`" in compaction.summary and compaction.workspace_file == ""
    assert compaction.first_kept_id == s.current_path()[0].id
    assert len(compaction.replacements) == 8  # the outputs older than the last 10 turns
    assert summarizer.calls == []
    finished = [e for e in events if isinstance(e, CompactionFinished)]
    assert finished and "no model call" in finished[0].note
    assert manager.status().tier is Tier.NONE
    messages = to_messages(manager.accounting.view(), "S")
    assert any(str(m.get("content", "")).startswith("[read] f0.py") for m in messages)
    # Every turn is still there (and the summary block).
    assert sum(1 for m in messages if m["role"] == "user") == 19
