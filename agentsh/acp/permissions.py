"""Approvals as ``session/request_permission``: allow once, allow for the session (where
agentsh remembers it), every tool of the call's MCP server for the session, reject.

The agent waits on an :class:`~agentsh.events.ApprovalRequest`'s future; this module asks the
client and resolves it. A client that never shows the request (or never answers it) must not
hang the session: after ``acp.permission_timeout_s`` the call is refused as unanswered, the model
is told it was not the user's choice, and the user gets a note saying what happened. A cancelled
turn withdraws the question at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from agentsh.acp.updates import ToolContent, diff_contents, fenced, text_content, tool_kind
from agentsh.events import ApprovalDecision, ApprovalRequest

log = logging.getLogger(__name__)

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
ALLOW_GROUP = "allow_group"
REJECT = "reject"

_DECISIONS = {
    ALLOW_ONCE: ApprovalDecision.ALLOW_ONCE,
    ALLOW_ALWAYS: ApprovalDecision.ALLOW_SESSION,
    ALLOW_GROUP: ApprovalDecision.ALLOW_GROUP,
    REJECT: ApprovalDecision.DENY,
}

_TELL_TIMEOUT_S = 5.0

# ApprovalRequest.session_scope -> the "always" option's name
_ALWAYS = {
    "tool": "Always allow {tool} in this session",
    "repository": "Always allow git commands in this repository in this session",
    "folder": "Always allow reading {path} in this session",
}

Say = Callable[[str], Awaitable[None]]
"""Sends a note to the user's thread."""


def options(request: ApprovalRequest) -> list[PermissionOption]:
    """The choices; "always" only where agentsh keeps it (a write outside the project or to
    ``.git/`` allows that one call only, whatever the answer), and named for what it keeps."""
    choices = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    always = _ALWAYS.get(request.session_scope, "")
    if always and not request.outside_project:
        choices.append(
            PermissionOption(
                option_id=ALLOW_ALWAYS,
                name=always.format(tool=request.tool, path=request.scope_path),
                kind="allow_always",
            )
        )
    if request.group:  # an MCP tool: every tool of its server
        choices.append(
            PermissionOption(
                option_id=ALLOW_GROUP,
                name=f"Always allow {request.group} in this session",
                kind="allow_always",
            )
        )
    choices.append(PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"))
    return choices


def detail_content(request: ApprovalRequest, path: str | None) -> list[ToolContent]:
    """What is asked about: the diff of an edit, the command, and why it asks."""
    content: list[ToolContent] = []
    if path and request.detail.startswith(("---", "(")):
        content += diff_contents(path, request.detail)
    elif request.detail and request.detail != request.summary:
        info = "sh" if request.tool == "bash" else ""
        content.append(text_content(fenced(request.detail, info)))
    content.append(text_content(f"agentsh asks because {request.reason}."))
    return content


async def ask(
    client: Client,
    session_id: str,
    acp_call_id: str,
    request: ApprovalRequest,
    *,
    path: str | None,
    timeout_s: float,
    say: Say,
) -> ApprovalDecision | None:
    """Ask the client about ``request`` and resolve its decision with the answer, which is
    returned (None when the turn was cancelled meanwhile). Never raises."""
    tool_call = ToolCallUpdate(
        tool_call_id=acp_call_id,
        title=request.summary,
        kind=tool_kind(request.tool),
        status="pending",
        content=detail_content(request, path),
    )
    offered = options(request)
    asking = asyncio.ensure_future(
        client.request_permission(session_id=session_id, tool_call=tool_call, options=offered)
    )
    waiting: set[asyncio.Future[Any]] = {asking, request.decision}
    try:
        await asyncio.wait(waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not asking.done():
            asking.cancel()  # the turn was cancelled, or the time is up: withdraw the question
    if request.decision.done():
        return None  # withdrawn: the turn was cancelled meanwhile
    if not asking.done() or asking.cancelled():
        decision = ApprovalDecision.NO_ANSWER
        told = (
            f"agentsh: nobody answered the request to approve `{request.summary}` within "
            f"{timeout_s:g} s, so it was refused."
        )
    else:
        decision, told = _decision(asking, request, {o.option_id for o in offered})
    if told:
        await _tell(say, told)  # before the refusal's tool result, in the thread's order
    if request.decision.done():
        return None
    request.decision.set_result(decision)
    return decision


async def _tell(say: Say, text: str) -> None:
    """A note in the thread, if the client is still there to read it. The turn waits for the
    decision after this, so a client that left (a closed connection) or stopped reading must
    neither raise here nor hold it."""
    try:
        await asyncio.wait_for(say(text), _TELL_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - a closed connection, a broken client
        log.warning("could not tell the editor: %r", exc)


def _decision(
    asking: asyncio.Future[RequestPermissionResponse],
    request: ApprovalRequest,
    offered: set[str],
) -> tuple[ApprovalDecision, str]:
    """The client's answer as a decision, and what to tell the user ("" if nothing). Only an
    option that was offered counts: "always" for a write outside the project, or "every tool
    of the server" for a command, was allowed once before."""
    exc = asking.exception()
    if exc is not None:
        log.warning("session/request_permission failed: %r", exc)
        why = str(exc) if isinstance(exc, RequestError) else type(exc).__name__
        return ApprovalDecision.NO_ANSWER, (
            f"agentsh: the editor could not ask about `{request.summary}` ({why}), so it was "
            "refused."
        )
    outcome = asking.result().outcome
    if isinstance(outcome, AllowedOutcome) and outcome.option_id not in offered:
        shown = repr(outcome.option_id[:40])
        return ApprovalDecision.DENY, (
            f"agentsh: the editor answered the request to approve `{request.summary}` with "
            f"{shown}, which was not one of its options, so it was refused."
        )
    if isinstance(outcome, AllowedOutcome):
        return _DECISIONS.get(outcome.option_id, ApprovalDecision.DENY), ""
    return ApprovalDecision.DENY, ""  # "cancelled": the client is cancelling the turn
