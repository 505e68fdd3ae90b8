"""Claude Code-compatible headless output, read by a real consumer: the Claude Agent SDK.

Every line agentsh prints with ``--output-format stream-json`` goes through the SDK's own
message parser (``claude_agent_sdk._internal.message_parser.parse_message``), which skipped
agentsh's old event lines and rejected its result object.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk._internal.message_parser import parse_message
from claude_agent_sdk.types import SystemInitData

from agentsh.events import (
    AssistantMessage as AgentReply,
)
from agentsh.events import (
    ErrorKind,
    ErrorOccurred,
    Event,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
)
from agentsh.headless.claude_code import ClaudeCodeStream
from agentsh.session.entries import MessageEntry
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner, Run, session_files
from tests.fakes.server import ErrorReply, ScriptedServer, text, tool_call


def _lines(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]


def _parsed(run: Run) -> list[Any]:
    messages = [parse_message(line) for line in _lines(run)]
    assert None not in messages, "the SDK skipped a line it did not understand"
    return messages


def test_every_stream_json_line_is_a_message_the_sdk_understands(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        tool_call("write", {"path": "a.txt", "content": "hi\n"}, id="call_w"),
        tool_call("bash", {"command": "git status"}, id="call_b"),
        text("Wrote a.txt and checked git."),
    )
    run = run_agentsh(
        "-p",
        "write a.txt then check git",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Bash(git:*)",
        "Edit",
    )
    assert run.code == 0, run.stderr
    raw = _lines(run)
    messages = _parsed(run)
    init, *middle, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert {"bash", "edit", "read"} <= set(init.data["tools"])
    assert init.data["cwd"] == str(project) and init.data["model"]
    # every field the SDK's init type requires; a version, or the SDK warns that the CLI
    # "is too old to report its version, and may be unsupported"
    assert SystemInitData.__required_keys__ <= set(raw[0])
    assert init.data["claude_code_version"] == "2.0.0"
    assert isinstance(result, ResultMessage)
    assert result.subtype == "success" and not result.is_error
    assert result.result == "Wrote a.txt and checked git."
    assert result.num_turns == 3 and result.duration_ms >= result.duration_api_ms > 0
    assert result.usage is not None
    assert result.usage["input_tokens"] > 0
    assert {"cache_read_input_tokens", "cache_creation_input_tokens"} <= set(result.usage)
    assert result.total_cost_usd == 0.0 and result.permission_denials == []
    # every line carries the session id
    assert {line["session_id"] for line in raw} == {result.session_id}

    uses = [b for m in middle if isinstance(m, AssistantMessage) for b in m.content]
    tool_uses = [b for b in uses if isinstance(b, ToolUseBlock)]
    assert [(b.id, b.name) for b in tool_uses] == [("call_w", "write"), ("call_b", "bash")]
    assert tool_uses[0].input == {"path": "a.txt", "content": "hi\n"}
    results = [
        b
        for m in middle
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [r.tool_use_id for r in results] == ["call_w", "call_b"]
    assert not any(r.is_error for r in results)
    assert any(isinstance(b, TextBlock) and "Wrote" in b.text for b in uses)
    assert (project / "a.txt").read_text() == "hi\n"


def test_json_is_the_result_object_alone(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("forty-two"))
    run = run_agentsh("-p", "answer", "--output-format", "json")
    assert run.code == 0, run.stderr
    (message,) = _parsed(run)
    assert isinstance(message, ResultMessage)
    assert message.result == "forty-two" and message.subtype == "success"
    assert message.terminal_reason == "completed"


def test_limits_and_failures_have_claude_codes_error_subtypes(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(ErrorReply(400, "bad request: nonsense"))
    run = run_agentsh("-p", "hi", "--output-format", "stream-json")
    assert run.code == 1
    result = _parsed(run)[-1]
    assert result.subtype == "error_during_execution" and result.is_error
    assert result.errors and "nonsense" in result.errors[-1]
    assert result.terminal_reason == "model_error"
    assert result.api_error_status == 400  # the model API's HTTP status (it was missing)

    scripted_server.script(tool_call("ls", {"path": "."}), text("never"))
    run = run_agentsh("-p", "list", "--output-format", "json", "--max-turns", "1")
    assert run.code == 1
    (result,) = _parsed(run)
    assert result.subtype == "error_max_turns" and result.is_error
    assert result.terminal_reason == "max_turns"
    assert result.api_error_status is None and '"api_error_status": null' in run.stdout


def test_plan_mode_neither_edits_nor_runs_and_reports_the_denials(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        tool_call("write", {"path": "plan.txt", "content": "x"}, id="c1"),
        tool_call("bash", {"command": "touch ran.txt"}, id="c2"),
        text("Here is the plan."),
    )
    run = run_agentsh(
        "-p",
        "do it",
        "--permission-mode",
        "plan",
        "--allowedTools",
        "Bash",
        "Edit",
        "--output-format",
        "json",
    )
    assert run.code == 0, run.stderr
    assert not (project / "plan.txt").exists() and not (project / "ran.txt").exists()
    (result,) = _parsed(run)
    assert [d["tool_use_id"] for d in result.permission_denials] == ["c1", "c2"]
    assert result.permission_denials[1]["tool_input"]["command"] == "touch ran.txt"
    # A person watching stderr learns of each refusal and why (stdout stays one JSON object).
    notes = [line for line in run.stderr.splitlines() if line.startswith("agentsh: denied")]
    assert notes == [
        "agentsh: denied write: plan.txt: plan mode changes no file and runs no command",
        "agentsh: denied bash: touch ran.txt: plan mode changes no file and runs no command",
    ]
    system = scripted_server.requests[0].messages[0]["content"]
    assert "plan mode" in system.lower()


def test_permission_modes_map_onto_approval_modes(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        tool_call("write", {"path": "e.txt", "content": "x"}),
        tool_call("bash", {"command": "touch c.txt"}),
        text("ok"),
    )
    run = run_agentsh("-p", "go", "--permission-mode", "acceptEdits")
    assert run.code == 0, run.stderr
    assert (project / "e.txt").exists() and not (project / "c.txt").exists()
    run = run_agentsh("-p", "go", "--permission-mode", "acceptEdits", "--approve", "all")
    assert run.code == 2


def test_disallowed_tools_are_not_offered_and_deny_rules_win(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(tool_call("bash", {"command": "rm -f keep.txt"}), text("ok"))
    (project / "keep.txt").write_text("keep")
    run = run_agentsh(
        "-p",
        "clean",
        "--approve",
        "all",
        "--disallowedTools",
        "Bash(rm:*)",
        "Write",
        "--output-format",
        "stream-json",
    )
    assert run.code == 0, run.stderr
    init = _parsed(run)[0]
    assert "write" not in init.data["tools"] and "bash" in init.data["tools"]
    offered = {t["function"]["name"] for t in scripted_server.requests[0].body["tools"]}
    assert "write" not in offered
    assert (project / "keep.txt").exists()
    assert "Bash(rm:*)" in scripted_server.requests[1].messages[-1]["content"]


def test_append_system_prompt_and_session_id(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    scripted_server.script(text("one"), text("two"))
    wanted = str(uuid.uuid4())
    run = run_agentsh(
        "-p",
        "hi",
        "--append-system-prompt",
        "Always answer in French.",
        "--session-id",
        wanted,
        "--output-format",
        "json",
    )
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["session_id"] == wanted
    system = scripted_server.requests[0].messages[0]["content"]
    assert system.rstrip().endswith("Always answer in French.")
    again = run_agentsh("-p", "hi", "--session-id", wanted)
    assert again.code == 1 and "already in use" in again.stderr
    assert run_agentsh("-p", "hi", "--session-id", "nope").code == 2


def test_fork_session_continues_in_a_copy(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    scripted_server.script(text("first"), text("second"))
    first = json.loads(run_agentsh("-p", "q1", "--output-format", "json").stdout)
    run = run_agentsh(
        "-r", first["session_id"][:8], "--fork-session", "-p", "q2", "--output-format", "json"
    )
    assert run.code == 0, run.stderr
    second = json.loads(run.stdout)
    assert second["session_id"] != first["session_id"]
    paths = session_files(agentsh_home)
    assert len(paths) == 2
    by_id = {Session.open(p, lock=False).id: Session.open(p, lock=False) for p in paths}
    path = by_id[first["session_id"]].current_path()
    original = [e.content for e in path if isinstance(e, MessageEntry)]
    assert len(original) == len(path)  # messages only
    copy = by_id[second["session_id"]]
    assert original == ["q1", "first"]  # the original is untouched
    assert [e.content for e in copy.current_path() if isinstance(e, MessageEntry)] == [
        "q1",
        "first",
        "q2",
        "second",
    ]
    assert copy.header.parent_session == first["session_id"]


def test_stream_json_input_drives_several_turns(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(
        text("first answer"),
        tool_call("write", {"path": "made.txt", "content": "x"}, id="w1"),
        text("second answer"),
    )

    def mode(request_id: str, name: str) -> dict[str, Any]:
        request = {"subtype": "set_permission_mode", "mode": name}
        return {"type": "control_request", "request_id": request_id, "request": request}

    messages = [
        {"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}},
        {"type": "user", "message": {"role": "user", "content": "question one"}},
        # ClaudeSDKClient.set_permission_mode: the write of turn two runs without asking
        mode("r2", "acceptEdits"),
        mode("r3", "yolo"),
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": "question two"}]},
        },
    ]
    run = run_agentsh(
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        input="".join(json.dumps(m) + "\n" for m in messages),
    )
    assert run.code == 0, run.stderr
    lines = _lines(run)
    control = [line["response"] for line in lines if line["type"] == "control_response"]
    assert control[0] == {"subtype": "success", "request_id": "r1", "response": {}}
    assert control[1] == {"subtype": "success", "request_id": "r2", "response": {}}
    assert control[2]["subtype"] == "error" and "no permission mode 'yolo'" in control[2]["error"]
    assert (project / "made.txt").read_text() == "x"
    results = [parse_message(line) for line in lines if line["type"] == "result"]
    assert [r.result for r in results if isinstance(r, ResultMessage)] == [
        "first answer",
        "second answer",
    ]
    assert len(results) == 2
    second = [m["content"] for m in scripted_server.requests[1].messages]
    assert "question one" in second and "first answer" in second and "question two" in second


@pytest.mark.timeout(300)  # it hung for good; a loaded machine took 90 s to pass it
def test_a_question_the_host_can_no_longer_answer_is_refused(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    # The host closed stdin after its message (it died, or it never answers can_use_tool):
    # the approval was waited for forever and the run never ended.
    scripted_server.script(
        tool_call("bash", {"command": "echo hi > out.txt"}, id="b1"), text("could not")
    )
    message = {"type": "user", "message": {"role": "user", "content": "run it"}}
    run = run_agentsh(
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        input=json.dumps(message) + "\n",
    )
    assert run.code == 0, run.stderr
    assert not (project / "out.txt").exists()
    results = [line for line in _lines(run) if line["type"] == "result"]
    assert [r["result"] for r in results] == ["could not"]
    assert [d["tool_use_id"] for d in results[0]["permission_denials"]] == ["b1"]
    assert "stdin is closed, nobody can answer" in run.stderr
    told = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert "nobody answered" in str(told[0]["content"])


def test_partial_messages_stream_text_deltas(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("streamed in pieces of text"))
    run = run_agentsh("-p", "hi", "--output-format", "stream-json", "--include-partial-messages")
    assert run.code == 0, run.stderr
    events = [m.event for m in _parsed(run) if type(m).__name__ == "StreamEvent"]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    deltas = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert deltas == "streamed in pieces of text"


def _ended(*events: Event, interrupt_before: int | None = None) -> dict[str, Any]:
    """The result line after ``events`` (the last is the ``TurnEnded``); the user stopped the
    turn just before the event at ``interrupt_before``."""
    stream = ClaudeCodeStream("s1", "openai/m")
    stream.start_turn()
    for at, event in enumerate(events):
        if at == interrupt_before:
            stream.note_interrupt()
        stream.feed(event)
    return stream.result([])


def test_the_result_says_why_the_loop_ended_as_the_sdks_terminal_reason() -> None:
    """``ResultMessage.terminal_reason``, which SDK hosts read to tell an interrupted turn from
    a failed one ("aborted_streaming" / "aborted_tools"): it was missing."""
    tool = ToolStarted("c1", "bash", {"command": "sleep 9"}, "bash: sleep 9")
    finished = ToolFinished("c1", "bash", "e2", "(cancelled)", is_error=True)
    reply = AgentReply("e1", "", (("c1", "bash", "{}"),), "tool_calls")
    aborted = TurnEnded(TurnOutcome.ABORTED)
    cases = {
        "completed": _ended(TextDelta("hi"), TurnEnded(TurnOutcome.DONE, "hi")),
        "max_turns": _ended(reply, TurnEnded(TurnOutcome.DONE, limit="max_turns")),
        # stopped while the command ran: its (partial) result still comes before the end
        "aborted_tools": _ended(reply, tool, finished, aborted, interrupt_before=2),
        # stopped while the model wrote, or while the next call was on its way
        "aborted_streaming": _ended(TextDelta("I will"), aborted, interrupt_before=1),
        "prompt_too_long": _ended(
            ErrorOccurred(ErrorKind.CONTEXT_OVERFLOW, "too long"),
            TurnEnded(TurnOutcome.ERROR, error="too long"),
        ),
        "model_error": _ended(
            ErrorOccurred(ErrorKind.SERVER, "500"), TurnEnded(TurnOutcome.ERROR, error="500")
        ),
    }
    for reason, result in cases.items():
        assert result["terminal_reason"] == reason, (reason, result)
        parsed = parse_message(result)
        assert isinstance(parsed, ResultMessage) and parsed.terminal_reason == reason
    after_tools = _ended(reply, tool, finished, aborted, interrupt_before=3)
    assert after_tools["terminal_reason"] == "aborted_streaming"  # the next call, not a tool
    budget = _ended(reply, TurnEnded(TurnOutcome.DONE, limit="max_budget_usd"))
    assert budget["subtype"] == "error_max_budget_usd" and "terminal_reason" not in budget
