"""Approvals over ACP when the client is gone or wedged: the turn gets its answer anyway."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

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


async def test_a_closed_connection_refuses_the_call_without_raising() -> None:
    request = _request()
    decision = await permissions.ask(
        GoneClient(),  # type: ignore[arg-type]
        "s1",
        "e1/c1",
        request,
        path=None,
        timeout_s=5,
        say=_closed,
    )
    assert decision is ApprovalDecision.NO_ANSWER
    assert request.decision.result() is ApprovalDecision.NO_ANSWER


async def test_a_wedged_client_cannot_hold_the_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(permissions, "_TELL_TIMEOUT_S", 0.1)
    request = _request()
    decision = await asyncio.wait_for(
        permissions.ask(
            GoneClient(),  # type: ignore[arg-type]
            "s1",
            "e1/c1",
            request,
            path=None,
            timeout_s=5,
            say=_wedged,
        ),
        5,
    )
    assert decision is ApprovalDecision.NO_ANSWER
    assert request.decision.result() is ApprovalDecision.NO_ANSWER
