"""Approvals over ACP when the client is gone or wedged: the turn gets its answer anyway."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from acp.schema import AllowedOutcome, RequestPermissionResponse

from agentsh.acp import permissions
from agentsh.events import ApprovalDecision, ApprovalRequest

pytestmark = pytest.mark.asyncio


class GoneClient:
    """An editor whose connection closed: every request fails as the ``acp`` package's does."""

    async def request_permission(self, **_kwargs: Any) -> Any:
        raise ConnectionError("Connection closed")


async def _closed(_text: str) -> None:
    raise ConnectionError("Connection closed")


async def _wedged(_text: str) -> None:
    await asyncio.Event().wait()  # a client that stopped reading: the write never finishes


def _request() -> ApprovalRequest:
    return ApprovalRequest(
        call_id="c1", tool="bash", summary="bash: rm -rf build", detail="", reason="ask mode"
    )


async def _ask(
    client: object, request: ApprovalRequest, say: Callable[[str], Awaitable[None]]
) -> ApprovalDecision | None:
    """``permissions.ask`` for call e1/c1 of session s1 (5 s to answer), as a turn asks."""
    return await permissions.ask(
        client,  # type: ignore[arg-type]  # an editor as a test needs it, not a Client
        "s1",
        "e1/c1",
        request,
        path=None,
        timeout_s=5,
        say=say,
    )


async def test_a_closed_connection_refuses_the_call_without_raising() -> None:
    request = _request()
    decision = await _ask(GoneClient(), request, _closed)
    assert decision is ApprovalDecision.NO_ANSWER
    assert request.decision.result() is ApprovalDecision.NO_ANSWER


async def test_a_wedged_client_cannot_hold_the_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_TELL_TIMEOUT_S", 0.1)
    request = _request()
    decision = await asyncio.wait_for(_ask(GoneClient(), request, _wedged), 5)
    assert decision is ApprovalDecision.NO_ANSWER
    assert request.decision.result() is ApprovalDecision.NO_ANSWER


def _kinds(request: ApprovalRequest) -> dict[str, str]:
    return {o.option_id: o.name for o in permissions.options(request)}


async def test_always_is_offered_only_where_it_is_remembered_and_named_for_what() -> None:
    tool = _request()
    assert _kinds(tool) == {
        "allow_once": "Allow once",
        "allow_always": "Always allow bash in this session",
        "reject": "Reject",
    }
    protected = _request()
    protected.session_scope = ""  # a write to .git/: "always" would allow this call only
    assert "allow_always" not in _kinds(protected)
    armed = _request()
    armed.session_scope = "repository"
    assert _kinds(armed)["allow_always"] == (
        "Always allow git commands in this repository in this session"
    )
    folder = _request()
    folder.session_scope, folder.scope_path = "folder", "/home/u/notes"
    assert _kinds(folder)["allow_always"] == "Always allow reading /home/u/notes in this session"


class Answering:
    """An editor that picks one option."""

    def __init__(self, option_id: str) -> None:
        self.option_id = option_id
        self.options: list[str] = []

    async def request_permission(self, **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        self.options = [o.option_id for o in kwargs["options"]]
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=self.option_id, outcome="selected")
        )


async def test_an_mcp_tool_offers_every_tool_of_its_server() -> None:
    request = ApprovalRequest(
        call_id="c1",
        tool="mcp__git__git_log",
        summary="git_log",
        detail="",
        reason="ask mode",
        group="every tool of MCP server 'git'",
    )
    assert _kinds(request)["allow_group"] == (
        "Always allow every tool of MCP server 'git' in this session"
    )
    client = Answering("allow_group")
    decision = await _ask(client, request, _closed)
    assert decision is ApprovalDecision.ALLOW_GROUP
    assert "allow_group" in client.options


class AnsweringClient:
    """An editor that answers every question with ``choice``, offered or not."""

    def __init__(self, choice: str) -> None:
        self.choice = choice

    async def request_permission(self, **_kwargs: Any) -> Any:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=self.choice, outcome="selected")
        )


@pytest.mark.parametrize("choice", ["allow_always", "allow_group", "bogus"])
async def test_an_option_that_was_not_offered_is_a_refusal(choice: str) -> None:
    """A write outside the project offers no "always", a command no "every tool of the
    server": an editor answering with one anyway had the call allowed."""
    request = ApprovalRequest(
        call_id="c1",
        tool="write",
        summary="write: /etc/x",
        detail="",
        reason="it writes outside the project",
        outside_project=True,
    )
    assert choice not in _kinds(request)
    told: list[str] = []

    async def say(text: str) -> None:
        told.append(text)

    assert await _ask(AnsweringClient(choice), request, say) is ApprovalDecision.DENY
    assert request.decision.result() is ApprovalDecision.DENY
    assert told and "not one of its options" in told[0]
    # what was offered still counts
    offered = _request()
    assert await _ask(AnsweringClient("allow_once"), offered, say) is ApprovalDecision.ALLOW_ONCE
