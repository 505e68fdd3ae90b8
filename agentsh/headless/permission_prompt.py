"""``--permission-prompt-tool stdio``: approvals asked of the program driving ``agentsh -p``.

The Claude Agent SDK passes this flag when its host gives a ``can_use_tool`` callback: a tool
call that needs approval is then not refused (nobody at a terminal could answer) but asked
with a ``control_request`` line on stdout (subtype ``can_use_tool``: the tool's name, its
input, the call's id, a title and why it asks), and the host's ``control_response`` on stdin
decides: ``allow`` runs it once, ``deny`` refuses it (``interrupt: true`` also stops the turn),
an error response refuses it as unanswered. A question the turn no longer waits for (an
interrupt, Ctrl+C) is withdrawn with a ``control_cancel_request``; one the host can no longer
answer (it closed stdin) is refused as unanswered. Refusals are listed in the
result's ``permission_denials`` as Claude Code does. An ``allow`` with another ``updatedInput``
runs the call with that input, as Claude Code does, once the approver has checked it: it must
fit the tool's parameters and need no approval beyond this one (not outside the project, not a
protected file, not what a deny rule forbids); else the call is refused and listed as denied
(:mod:`agentsh.tools.approval`). The result the model reads and the log say what ran. Rules, a
mode or folders sent along (``updatedPermissions``, a host's "always allow") hold for the rest
of the run (:mod:`.permission_updates`); what could not be applied, or was not saved where the
host asked, is a warning line.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentsh.events import ApprovalDecision, ApprovalRequest, AssistantMessage
from agentsh.headless.stream_input import ControlResponse
from agentsh.termsafe import one_line
from agentsh.values import loads_json

if TYPE_CHECKING:
    from agentsh.headless.permission_updates import PermissionUpdates

#: the only prompt tool agentsh takes (an MCP tool as the prompt is not supported)
STDIO = "stdio"


class StdioPermissions:
    """Asks the host about each :class:`ApprovalRequest` and resolves it with the answer."""

    def __init__(
        self,
        write: Callable[[dict[str, Any]], None],
        interrupt: Callable[[], None],
        warn: Callable[[str], None] = lambda _text: None,
        updates: PermissionUpdates | None = None,
    ):
        self._write = write
        self._interrupt = interrupt
        self._warn = warn  # one line for the user (stderr)
        self._updates = updates  # None: updatedPermissions are named as not applied
        self._ids = itertools.count(1)
        self._inputs: dict[str, dict[str, Any]] = {}  # call id -> the model's arguments
        self._asked: dict[str, ApprovalRequest] = {}  # our request id -> the waiting request
        self.denied: list[dict[str, Any]] = []  # for the result's permission_denials
        self._gone = False  # the host closed stdin: nobody can answer any more

    def note(self, event: AssistantMessage) -> None:
        """Remember the calls' arguments: the question shows the host the tool's input."""
        for call_id, _name, arguments in event.tool_calls:
            try:
                parsed = loads_json(arguments) if arguments else {}
            except json.JSONDecodeError:
                parsed = {}
            self._inputs[call_id] = parsed if isinstance(parsed, dict) else {}

    def ask(self, request: ApprovalRequest) -> None:
        if self._gone:
            self._unanswered(request)
            return
        request_id = f"agentsh-permission-{next(self._ids)}"
        self._asked[request_id] = request
        self._write(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": request.tool,
                    "input": self._inputs.get(request.call_id, {}),
                    "tool_use_id": request.call_id,
                    "permission_suggestions": [],
                    "title": request.summary,
                    "description": request.reason,
                },
            }
        )
        request.decision.add_done_callback(lambda _f: self._withdraw(request_id))

    def answer(self, response: ControlResponse) -> bool:
        """Resolve the question ``response`` answers; False when it answers none of ours."""
        request = self._asked.pop(response.request_id, None)
        if request is None:
            return False
        if request.decision.done():
            return True  # withdrawn meanwhile (the turn was stopped)
        body = response.response
        asked_input = self._inputs.get(request.call_id, {})
        updated = body.get("updatedInput")
        updated = asked_input if updated is None else updated
        if not response.error and body.get("behavior") == "allow" and isinstance(updated, dict):
            if updated != asked_input:  # checked by the approver before it runs
                request.updated_input = updated
            if body.get("updatedPermissions"):
                self._permissions(request, body["updatedPermissions"])
            request.decision.set_result(ApprovalDecision.ALLOW_ONCE)
            return True
        self.denied.append(
            {"tool_name": request.tool, "tool_use_id": request.call_id, "tool_input": asked_input}
        )
        request.decision.set_result(
            ApprovalDecision.NO_ANSWER if response.error else ApprovalDecision.DENY
        )
        if body.get("interrupt") is True:
            self._interrupt()
        return True

    def host_gone(self) -> None:
        """The host closed stdin: the questions it was asked, and any asked from now on, are
        refused as unanswered (the model is told nobody answered) rather than waited for
        forever."""
        self._gone = True
        pending, self._asked = list(self._asked.values()), {}
        for request in pending:
            if not request.decision.done():
                self._unanswered(request)

    def _unanswered(self, request: ApprovalRequest) -> None:
        self._warn(f"{one_line(request.summary)}: refused: stdin is closed, nobody can answer")
        self.denied.append(
            {
                "tool_name": request.tool,
                "tool_use_id": request.call_id,
                "tool_input": self._inputs.get(request.call_id, {}),
            }
        )
        request.decision.set_result(ApprovalDecision.NO_ANSWER)

    def _permissions(self, request: ApprovalRequest, updates: object) -> None:
        """Apply the updates that came with an allow; a warning line for each problem."""
        if self._updates is None:
            self._warn(
                f"{one_line(request.summary)}: allowed once; the updatedPermissions that came "
                "with the answer are not applied"
            )
            return
        for problem in self._updates.apply(updates):
            self._warn(f"{one_line(request.summary)}: updatedPermissions: {problem}")

    def _withdraw(self, request_id: str) -> None:
        """The turn stopped waiting for the answer (still asked: nobody answered yet)."""
        if self._asked.pop(request_id, None) is not None:
            self._write({"type": "control_cancel_request", "request_id": request_id})
