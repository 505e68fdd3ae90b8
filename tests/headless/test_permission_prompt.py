"""``--permission-prompt-tool stdio`` (agentsh.headless.permission_prompt): the answers a host
can give, decided without a process (the SDK end to end: test_agent_sdk_query)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentsh.events import ApprovalDecision, ApprovalRequest, AssistantMessage
from agentsh.headless.permission_prompt import StdioPermissions
from agentsh.headless.stream_input import BadLine, ControlResponse, parse_line


def _asked(
    lines: list[dict[str, Any]], interrupted: list[bool]
) -> tuple[StdioPermissions, ApprovalRequest, str]:
    asks = StdioPermissions(lines.append, lambda: interrupted.append(True))
    asks.note(AssistantMessage("e1", "", (("c1", "bash", '{"command": "ls"}'),), "tool_calls"))
    request = ApprovalRequest("c1", "bash", "bash: ls", "ls", "approval mode is 'ask'")
    asks.ask(request)
    [question] = lines
    assert question["request"]["subtype"] == "can_use_tool"
    assert question["request"]["input"] == {"command": "ls"}
    assert question["request"]["tool_use_id"] == "c1"
    return asks, request, question["request_id"]


@pytest.mark.parametrize(
    ("answer", "decision", "updated", "denied", "interrupt"),
    [
        (
            {"behavior": "allow", "updatedInput": {"command": "ls"}},
            "allow_once",
            None,
            False,
            False,
        ),
        # Another input goes with the answer; the approver checks it before it runs
        # (tests/tools/test_approval_rewrite.py). It was refused before.
        (
            {"behavior": "allow", "updatedInput": {"command": "ls -la"}},
            "allow_once",
            {"command": "ls -la"},
            False,
            False,
        ),
        # not an input at all: refused as a denial
        ({"behavior": "allow", "updatedInput": ["ls"]}, "deny", None, True, False),
        ({"behavior": "deny", "message": "no", "interrupt": True}, "deny", None, True, True),
    ],
)
@pytest.mark.asyncio
async def test_the_host_answer_decides(
    answer: dict[str, Any],
    decision: str,
    updated: dict[str, Any] | None,
    denied: bool,
    interrupt: bool,
) -> None:
    lines: list[dict[str, Any]] = []
    interrupted: list[bool] = []
    asks, request, request_id = _asked(lines, interrupted)
    assert asks.answer(ControlResponse(request_id, answer))
    assert request.decision.result() == ApprovalDecision(decision)
    assert request.updated_input == updated
    assert bool(asks.denied) is denied
    assert bool(interrupted) is interrupt
    await asyncio.sleep(0)  # the decision's callbacks
    assert len(lines) == 1  # nothing withdrawn: it was answered


@pytest.mark.asyncio
async def test_an_error_answer_is_no_answer_and_a_stopped_turn_withdraws_the_question() -> None:
    lines: list[dict[str, Any]] = []
    asks, request, request_id = _asked(lines, [])
    assert asks.answer(ControlResponse(request_id, {}, error="canUseTool callback is not set"))
    assert request.decision.result() is ApprovalDecision.NO_ANSWER
    assert not asks.answer(ControlResponse("nobody-asked", {}))
    lines.clear()
    asks, request, request_id = _asked(lines, [])
    request.decision.cancel()  # the turn was interrupted while it waited
    await asyncio.sleep(0)
    assert lines[-1] == {"type": "control_cancel_request", "request_id": request_id}
    assert asks.answer(ControlResponse(request_id, {"behavior": "allow"})) is False


def test_control_response_lines_are_read() -> None:
    line = b'{"type":"control_response","response":{"subtype":"success","request_id":"a",'
    assert parse_line(line + b'"response":{"behavior":"allow"}}}') == ControlResponse(
        "a", {"behavior": "allow"}
    )
    error = b'{"type":"control_response","response":{"subtype":"error","request_id":"b",'
    assert parse_line(error + b'"error":"boom"}}') == ControlResponse("b", {}, "boom")
    assert isinstance(parse_line(b'{"type":"control_response","response":{}}'), BadLine)


@pytest.mark.asyncio
async def test_permission_updates_without_an_applier_are_named_as_not_applied() -> None:
    """``PermissionResultAllow(updated_permissions=[...])`` (an "always allow" in the host's
    UI) with nothing to apply them (a run builds one: test_permission_updates): the call is
    allowed once and a line says the rules were not added, rather than dropping them in
    silence (the host would wonder why it is asked again)."""
    lines: list[dict[str, Any]] = []
    warnings: list[str] = []
    asks = StdioPermissions(lines.append, lambda: None, warnings.append)
    asks.note(AssistantMessage("e1", "", (("c1", "bash", '{"command": "ls"}'),), "tool_calls"))
    request = ApprovalRequest("c1", "bash", "bash: ls", "ls", "approval mode is 'ask'")
    asks.ask(request)
    update = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}],
        "behavior": "allow",
        "destination": "session",
    }
    answer = {
        "behavior": "allow",
        "updatedInput": {"command": "ls"},
        "updatedPermissions": [update],
    }
    assert asks.answer(ControlResponse(lines[0]["request_id"], answer))
    assert request.decision.result() is ApprovalDecision.ALLOW_ONCE
    [warning] = warnings
    assert "updatedPermissions" in warning and "not applied" in warning
