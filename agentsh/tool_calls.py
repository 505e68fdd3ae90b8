"""One tool call of the model's, from its JSON arguments to its result in the log.

A call is parsed and checked (an unknown tool or bad arguments become an error result the model
reads), announced (``ToolStarted`` with the header its tool wrote for it), approved, run and
redacted (a command may print a provider key), and answered in the log before ``ToolFinished``
announces it. Calls that may change files are checkpointed before and after. A tool's bug or an
OS error becomes an error result, never the end of the turn. The turn loop
(:mod:`agentsh.turn`) calls :meth:`ToolCalls.run` for each call of an assistant message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentsh.events import (
    Event,
    Notice,
    NoticeLevel,
    ToolFinished,
    ToolOutput,
    ToolRunning,
    ToolStarted,
)
from agentsh.instructions import TOUCHING_TOOLS
from agentsh.llm.client import redact
from agentsh.memory.guard.threats import Scope
from agentsh.session.entries import ToolCall
from agentsh.tools.base import (
    Effect,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolRegistry,
    ToolResult,
    params_json,
    resolve_path,
)
from agentsh.tools.untrusted import guarded
from agentsh.values import loads_json

if TYPE_CHECKING:
    from agentsh.checkpoints.checkpointer import Checkpointer
    from agentsh.config import Environment
    from agentsh.instructions import NestedInstructions
    from agentsh.mcp.mcp_manager import McpManager
    from agentsh.session.session import Session
    from agentsh.tools.approval import Approver
    from agentsh.tools.host import ToolHost

MAX_SUMMARY_CHARS = 300  # a tool call's header, as stored in the log
_NOTICE_HEADER_CHARS = 80  # the call's header in a one-line notice
_SCAN_MAX = 1 << 20  # bytes of one tool output the injection guard reads at most
_SHOWN_INPUT_CHARS = 2_000  # a rewritten input longer than this is named, not quoted, to the model


@dataclass(slots=True)
class TurnState:
    """What the running turn has produced so far, for a clean abort."""

    text: str = ""
    streaming: bool = False
    # What the model call in flight was sent (tokens, by the accounting) and what arrived of
    # it (text, reasoning, tool calls): its usage if it ends without the provider's figures.
    sent_tokens: int = 0
    received: list[str] = field(default_factory=list)
    # The call waits for the model client to start (ModelClientStarting, not yet Ready):
    # nothing went out, so a cancel now counts nothing.
    unsent: bool = False
    pending_calls: list[ToolCall] = field(default_factory=list)
    answered_calls: set[str] = field(default_factory=set)
    started_calls: set[str] = field(default_factory=set)  # calls whose tool began to run
    # What each call's approvals were answered (ToolContext.approvals), for a result that is
    # written without the call's run (a cancel): the chat shows them after a reload too.
    approvals: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    running_tool: bool = False
    final_text: str = ""
    limit: str = ""  # the limit that ended the turn early (see TurnEnded.limit)


class ToolCallHost(Protocol):
    """What running a call uses of its agent (:class:`agentsh.agent.Agent` is one)."""

    env: Environment
    session: Session
    cwd: Path
    tools: ToolRegistry
    approver: Approver
    nested: NestedInstructions
    host: ToolHost | None
    checkpoints: Checkpointer | None
    mcp: McpManager | None
    secrets: tuple[str, ...]
    tool_cancel: asyncio.Event

    def emit(self, event: Event) -> None: ...


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """The call's arguments as a dict, or an error message for the model."""
    try:
        value = loads_json(raw or "{}")
    except json.JSONDecodeError as exc:
        return (
            f"The tool arguments were not valid JSON ({exc.msg} at position {exc.pos}); "
            "resend the call with a JSON object."
        )
    if isinstance(value, dict) and "_invalid_arguments" in value and len(value) == 1:
        return "The tool arguments were not a valid JSON object; resend the call."
    if not isinstance(value, dict):
        return "The tool arguments must be a JSON object."
    return value


def changes_files(tool: Tool, params: Any, ctx: ToolContext) -> bool:
    """Calls that may change files (write, edit, bash) are checkpointed before and after:
    the files they write (``target_paths``) when the tool names them, else the project."""
    return tool.effect(params, ctx) in (Effect.EDIT, Effect.EXECUTE)


def summarized(tools: ToolRegistry, call: ToolCall) -> ToolCall:
    """The call with the header its tool writes for it (the call's name when the tool is
    unknown or the arguments do not parse), stored in the log with the call, so a resumed
    session shows the header the live turn showed."""
    tool = tools.get(call.name)
    arguments = parse_arguments(call.arguments)
    summary = call.name
    if tool is not None and isinstance(arguments, dict):
        with contextlib.suppress(ToolArgumentError):
            summary = tool.summary(tool.parse(arguments))
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 1] + "…"
    return replace(call, summary=summary)


def tool_context(host: ToolCallHost, call_id: str) -> ToolContext:
    """What a tool run for ``call_id`` may know and use."""
    return ToolContext(
        project=host.env.project,
        user=host.env.user,
        settings=host.env.settings,
        cwd=host.cwd,
        call_id=call_id,
        emit=lambda event: _emit_tool_event(host, event),
        cancelled=host.tool_cancel,
        session_id=host.session.id,
        project_trusted=host.env.trusted,
        secrets=host.secrets,
        host=host.host,
        added_dirs=host.approver.reach.added_dirs,
    )


async def checkpoint(host: ToolCallHost, reason: str, paths: Sequence[Path] = ()) -> None:
    """Capture the project's files at the leaf (agentsh/checkpoints); the capture runs in
    a thread, the record is appended here. Never fails the turn: problems are notices."""
    if host.checkpoints is None:
        return
    capture = await asyncio.to_thread(host.checkpoints.capture, paths)
    if capture is not None:
        host.checkpoints.record(host.session, reason, capture)
    for text in host.checkpoints.take_notices():
        host.emit(Notice(NoticeLevel.WARNING, text))


def emit_mcp_notices(host: ToolCallHost) -> None:
    """What the MCP servers have to say (one came up, one failed), as warnings."""
    if host.mcp is None:
        return
    for notice in host.mcp.take_notices():
        host.emit(Notice(NoticeLevel.WARNING, notice))


def _emit_tool_event(host: ToolCallHost, event: Event) -> None:
    if isinstance(event, ToolOutput) and host.secrets:
        event = ToolOutput(event.call_id, redact(event.text, host.secrets))
    host.emit(event)


class ToolCalls:
    """Runs the tool calls of one turn, recording in ``state`` which were answered and
    whether a tool is running (a cancel then stops the tool, not the task)."""

    def __init__(self, host: ToolCallHost, state: TurnState) -> None:
        self.host = host
        self.state = state

    async def run(self, call: ToolCall) -> None:
        """Run one call and append its result; every path ends with ``ToolFinished``."""
        host = self.host
        tool = host.tools.get(call.name)
        arguments = parse_arguments(call.arguments)
        ctx = tool_context(host, call.id)
        self.state.approvals[call.id] = ctx.approvals
        params: Any = None
        problem = ""
        if tool is None:
            known = ", ".join(host.tools.names())
            problem = f"Unknown tool '{call.name}'. Available tools: {known}."
            if host.mcp is not None:  # a tool of an MCP server that is down says so
                problem = host.mcp.missing_tool(call.name) or problem
        elif isinstance(arguments, str):
            problem = arguments
        else:
            try:
                params = tool.parse(arguments)
            except ToolArgumentError as exc:
                problem = f"Invalid arguments for {call.name}: {exc}"
        changing = tool is not None and not problem and changes_files(tool, params, ctx)
        host.emit(
            ToolStarted(
                call.id,
                call.name,
                arguments if isinstance(arguments, dict) else {},
                call.summary or call.name,
            )
        )
        if problem or tool is None:
            result = ToolResult(problem, is_error=True)
        else:
            result = await self._authorized_run(tool, params, ctx)
            if ctx.approved_params is not None:  # allowed with another input: that one ran
                params = ctx.approved_params
                result = self._rewritten(tool, call, params, result)
            result = self._guarded(tool, params, call, self._redacted(result))
            result = self._with_nested_instructions(tool, params, result)
            if ctx.approvals:  # what the user answered, shown again on reload
                result = replace(result, details={**result.details, "approvals": ctx.approvals})
        emit_mcp_notices(host)
        entry = host.session.append_tool_result(
            call.id,
            call.name,
            result.content,
            is_error=result.is_error,
            truncated=result.truncated,
            details=result.details,
        )
        changing = changing or (
            tool is not None and not problem and changes_files(tool, params, ctx)
        )
        if changing:  # the files as this call left them (a write/edit: its targets only)
            await checkpoint(host, "tool", tool.target_paths(params, ctx) if tool else [])
        self.state.answered_calls.add(call.id)
        host.emit(
            ToolFinished(
                call_id=call.id,
                name=call.name,
                entry_id=entry.id,
                content=result.content,
                is_error=result.is_error,
                truncated=result.truncated,
                diff=str(result.details.get("diff", "")),
                full_output_path=str(result.details.get("full_output_path", "")),
            )
        )

    def answer_unrun(self, why: str) -> None:
        """Give every call of the message not answered yet a result saying ``why`` ("not run:
        ..."), so the log never holds an orphan tool call. A call whose tool had started (its
        task cancelled from outside: a quit, an editor gone) says it was stopped while it ran:
        "not run" would have the model run it again, effects and all."""
        state = self.state
        for call in state.pending_calls:
            if call.id not in state.answered_calls:
                text = why
                if call.id in state.started_calls:
                    text = (
                        f"stopped while it ran ({why.removeprefix('not run: ')}): it may have "
                        "had some of its effects, and its output was lost"
                    )
                approvals = state.approvals.get(call.id)
                details = {"approvals": approvals} if approvals else None
                self.host.session.append_tool_result(
                    call.id, call.name, text, is_error=True, details=details
                )
                state.answered_calls.add(call.id)
        state.pending_calls = []

    def _with_nested_instructions(self, tool: Tool, params: Any, result: ToolResult) -> ToolResult:
        """A file read, written or edited for the first time under a folder with its own
        AGENTS.md: that file joins the result, once (agentsh/instructions.py)."""
        where = getattr(params, "path", None)
        if result.is_error or tool.name not in TOUCHING_TOOLS or not isinstance(where, str):
            return result
        load = self.host.nested.after_touch(resolve_path(where, self.host.cwd))
        for text in load.loaded:
            self.host.emit(Notice(NoticeLevel.INFO, text))
        for text in load.problems:
            self.host.emit(Notice(NoticeLevel.WARNING, text))
        if not load.block:
            return result
        return replace(result, content=f"{result.content}\n\n{load.block}")

    def _guarded(self, tool: Tool, params: Any, call: ToolCall, result: ToolResult) -> ToolResult:
        """Output that carries others' words (a cloned file, a command's output) as the model
        may read it: fenced as data when the injection guard flags it, and the user told in
        one line (agentsh/tools/untrusted.py)."""
        if not tool.output_origin:
            return result
        where = getattr(params, "path", None)
        shown = guarded(
            result.content,
            tool=tool.name,
            origin=tool.output_origin,
            source=f"{tool.name}:{where}" if isinstance(where, str) and where else tool.name,
            scope=Scope.TOOL_OUTPUT,
            # The tool capped its output already (50 KB by default): read all of it, up to a
            # bound a project's settings cannot raise (past it: head, tail and "oversized").
            max_bytes=min(len(result.content.encode("utf-8", "surrogatepass")), _SCAN_MAX),
        )
        if not shown.flagged:
            return result
        header = call.summary or call.name
        if len(header) > _NOTICE_HEADER_CHARS:
            header = header[: _NOTICE_HEADER_CHARS - 1] + "…"
        self.host.emit(
            Notice(
                NoticeLevel.WARNING,
                f"{header}: the output looks like a prompt injection "
                f"({', '.join(shown.flagged)}); the model got it fenced as untrusted data",
            )
        )
        details = {**result.details, "injection": list(shown.flagged)}
        return replace(result, content=shown.text, details=details)

    def _rewritten(self, tool: Tool, call: ToolCall, params: Any, result: ToolResult) -> ToolResult:
        """The call ran with the input it was allowed with, not the model's: the model reads
        which, the log keeps it in the result's details, and the user is told."""
        ran = params_json(params)
        header = tool.summary(params)
        self.host.emit(
            Notice(
                NoticeLevel.INFO,
                f"{call.summary or call.name}: ran as {header} (the input it was allowed with)",
            )
        )
        shown = json.dumps(ran, ensure_ascii=False)
        if len(shown) > _SHOWN_INPUT_CHARS:  # a whole file's content: its header says enough
            shown = f"{header} (the whole input is in the session log)"
        return replace(
            result,
            content=f"(Allowed with a changed input; this call ran as {shown}.)\n{result.content}",
            details={**result.details, "input": ran},
        )

    def _redacted(self, result: ToolResult) -> ToolResult:
        """A command may print a provider key (``env``, a debug log): keep it out of the log,
        the screen and the next request."""
        secrets = self.host.secrets
        if not secrets:
            return result
        details = dict(result.details)
        if isinstance(details.get("diff"), str):
            details["diff"] = redact(details["diff"], secrets)
        return replace(result, content=redact(result.content, secrets), details=details)

    async def _authorized_run(self, tool: Tool, params: Any, ctx: ToolContext) -> ToolResult:
        try:
            denial = await self.host.approver.authorize(tool, params, ctx)
            if denial is not None:
                return ToolResult(denial, is_error=True)
            if ctx.approved_params is not None:
                params = ctx.approved_params  # allowed with another input, checked again
            if changes_files(tool, params, ctx):
                # The files before this call changes them: a write's or an edit's own targets
                # (a hand edit of one is caught there), everything for a command.
                await checkpoint(self.host, "tool", tool.target_paths(params, ctx))
            self.state.running_tool = True
            self.state.started_calls.add(ctx.call_id)
            self.host.emit(ToolRunning(ctx.call_id))
            return await tool.run(params, ctx)
        except (OSError, ValueError) as exc:
            return ToolResult(f"{tool.name} failed: {exc}", is_error=True)
        except Exception as exc:  # noqa: BLE001 - a tool's bug must not end the turn
            # (sqlite3.Error from a damaged index, a bug in a tool): the model reads what went
            # wrong and can go on another way; the user sees the failed call.
            kind = type(exc).__name__
            return ToolResult(f"{tool.name} failed unexpectedly ({kind}: {exc})", is_error=True)
        finally:
            self.state.running_tool = False
