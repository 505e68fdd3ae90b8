"""One ACP session: an agentsh agent, and a prompt turn as a stream of ``session/update`` s.

:meth:`AcpSession.prompt` runs the turn through :meth:`EditorAPI.run` and translates each event
as it comes: text and thinking as message chunks, a tool call as ``tool_call`` (``pending``:
checked, perhaps asked) then ``tool_call_update`` s (``in_progress`` once it runs, its output
while it runs, its result, diffs of edits, the terminal it runs in), an approval as a
permission request on the side (the turn waits for it, the stream does not), notices and
compactions as notes, the context's size as ``usage_update``. The turn's ending becomes the
prompt's stop reason; an error is told in the thread and answered as a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path

from acp import RequestError
from acp.helpers import (
    start_tool_call,
    tool_terminal_ref,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import PromptResponse, StopReason

from agentsh.acp import commands, permissions
from agentsh.acp.client_host import ClientHost
from agentsh.acp.prompt import PromptBlock, prompt_text
from agentsh.acp.updates import (
    SessionUpdate,
    ToolContent,
    diff_contents,
    fenced,
    first_changed_line,
    is_edit,
    locations,
    note,
    plan_from_text,
    text_content,
    tool_call_id,
    tool_kind,
    usage_update,
)
from agentsh.events import (
    ApprovalRequest,
    AssistantMessage,
    CompactionFailed,
    CompactionFinished,
    CompactionStarted,
    ContextStatus,
    ErrorOccurred,
    Event,
    Notice,
    NoticeLevel,
    Retrying,
    StatusChanged,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolOutput,
    ToolRunning,
    ToolStarted,
    TurnEnded,
    TurnOutcome,
)
from agentsh.frontend import EditorAPI
from agentsh.mcp.servers_config import ServerSpec

log = logging.getLogger(__name__)

#: Output of a running command shown in its tool call: the end of it.
_LIVE_OUTPUT_CHARS = 4000


class AcpSession:
    """An agent and the client it reports to; one prompt at a time."""

    def __init__(
        self,
        agent: EditorAPI,
        client: Client,
        *,
        cwd: Path,
        permission_timeout_s: float,
        notes: list[str] | None = None,
        host: ClientHost | None = None,
        mcp_servers: Sequence[ServerSpec] = (),
    ) -> None:
        self.agent = agent
        self.mcp_servers = tuple(mcp_servers)  # the editor's, as given when it was opened
        self.host = host
        self.client = client
        self.cwd = cwd
        self.permission_timeout_s = permission_timeout_s
        self._notes = list(notes or [])  # told at the start of the next turn
        self._turn: _Turn | None = None
        self._lock = asyncio.Lock()
        self._offering: asyncio.Future[None] | None = None  # the commands' update being sent

    @property
    def id(self) -> str:
        return self.agent.session.id

    @property
    def running(self) -> bool:
        """A prompt (or a command such as ``/compact``) is being answered."""
        return self._lock.locked()

    def tell_later(self, text: str) -> None:
        self._notes.append(text)

    async def send(self, update: SessionUpdate) -> None:
        await self.client.session_update(session_id=self.id, update=update)

    async def say(self, text: str) -> None:
        await self.send(note(text))

    async def terminal_shown(self, call_id: str, terminal_id: str) -> None:
        """A command runs in the client's terminal: embed it in its tool call."""
        if self._turn is not None:
            await self._turn.terminal(call_id, terminal_id)

    async def prompt(self, blocks: list[PromptBlock]) -> PromptResponse:
        if self._lock.locked():
            raise RequestError(-32000, "agentsh is still working on the previous prompt")
        async with self._lock:
            given = prompt_text(blocks)
            for text in self._notes:
                await self.say(text)
            self._notes.clear()
            if given.skipped:
                kinds = ", ".join(sorted(set(given.skipped)))
                await self.say(f"agentsh takes text only; left out of this prompt: {kinds}.")
            if not given.text:
                raise RequestError.invalid_params({"prompt": "the prompt holds no text"})
            command = commands.parse(given.text)
            if command is not None:
                return await self._command(command)
            turn = _Turn(self)
            self._turn = turn
            try:
                async for event in self.agent.run(given.text):
                    await turn.event(event)
            finally:
                self._turn = None
                await turn.withdraw()
                await turn.close_unfinished()
            return turn.response()

    def offer_commands(self) -> None:
        """Tell the editor the slash commands, once the session/new answer is on its way."""
        self._offering = asyncio.ensure_future(self.send(commands.available()))

    async def _command(self, command: commands.Command) -> PromptResponse:
        """``/context`` as a note; ``/compact [what to keep]`` as the TUI runs it."""
        if command.name == "context":
            await self.say(commands.context_text(self.agent.status()))
            return PromptResponse(stop_reason="end_turn")
        turn = _Turn(self)
        self._turn = turn
        try:
            async for event in self.agent.compact(None, command.arguments):
                await turn.event(event)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return PromptResponse(stop_reason="cancelled")  # session/cancel stopped it
        finally:
            self._turn = None
        return PromptResponse(stop_reason="end_turn")

    async def end_turn(self, within_s: float) -> None:
        """The client is leaving: cancel the running turn as ``session/cancel`` does and wait
        (at most ``within_s``) until it has ended, so the log keeps what a running command
        printed, as after Esc, rather than "not run" for a command that ran."""
        if not self._lock.locked():
            return
        self.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle(), within_s)

    async def _idle(self) -> None:
        async with self._lock:
            pass

    def cancel(self) -> None:
        """``session/cancel``: stop the turn as Esc does (what arrived is kept), and withdraw
        what the editor was asked for its buffers or a terminal and has not answered."""
        self.agent.cancel()
        if self.host is not None:
            self.host.abort()

    def close(self) -> None:
        self.agent.close()


class _Turn:
    """One prompt turn's translation state."""

    def __init__(self, session: AcpSession) -> None:
        self.session = session
        self.entry_id = ""  # the assistant entry whose tool calls run now
        self.calls: dict[str, str] = {}  # model's call id -> ACP tool call id
        self.paths: dict[str, str] = {}  # model's call id -> the file it touches
        self.terminals: dict[str, str] = {}  # model's call id -> client terminal id
        self.output: dict[str, str] = {}  # model's call id -> its output so far
        self.unfinished: dict[str, bool] = {}  # model's call id shown, not ended -> it ran
        self.asking: set[asyncio.Task[None]] = set()
        self.ended: TurnEnded | None = None
        self.errors: list[str] = []
        self.status: ContextStatus | None = None

    async def event(self, event: Event) -> None:
        send, say = self.session.send, self.session.say
        match event:
            case TextDelta(text=text) if text:
                await send(update_agent_message_text(text))
            case ThinkingDelta(text=text) if text:
                await send(update_agent_thought_text(text))
            case AssistantMessage():
                self.entry_id = event.entry_id
                plan = plan_from_text(event.text)
                if plan is not None:
                    await send(plan)
            case ToolStarted():
                await self._started(event)
            case ToolRunning(call_id=call_id):
                self.unfinished[call_id] = True
                await send(update_tool_call(self._acp_id(call_id), status="in_progress"))
            case ToolOutput():
                await self._output(event)
            case ToolFinished():
                await self._finished(event)
            case ApprovalRequest():
                self._ask(event)
            case StatusChanged(status=status):
                if status != self.status:
                    self.status = status
                    await send(usage_update(status))
            case Notice(level=level, text=text):
                await say(text if level is NoticeLevel.INFO else f"agentsh: {text}")
            case Retrying():
                await say(
                    f"agentsh: {event.reason}; retry {event.attempt}/{event.max_attempts} "
                    f"in {event.delay_s:.0f}s"
                )
            case CompactionStarted(tier=tier):
                await say(f"agentsh: compacting the context ({tier.label})…")
            case CompactionFinished():
                await say(_compacted(event))
            case CompactionFailed(reason=reason):
                await say(f"agentsh: the context could not be compacted: {reason}")
            case ErrorOccurred(message=message):
                self.errors.append(message)
                await say(f"agentsh: {message}")
            case TurnEnded():
                self.ended = event

    # -- tool calls -------------------------------------------------------------------------

    def _acp_id(self, call_id: str) -> str:
        return self.calls.setdefault(call_id, tool_call_id(self.entry_id or "turn", call_id))

    async def _started(self, event: ToolStarted) -> None:
        acp_id = self._acp_id(event.call_id)
        self.unfinished[event.call_id] = False
        where = locations(event.name, event.arguments, self.session.cwd)
        if where:
            self.paths[event.call_id] = where[0].path
        await self.session.send(
            start_tool_call(
                acp_id,
                event.summary,
                kind=tool_kind(event.name),
                status="pending",  # checked, perhaps asked; in_progress once it runs
                locations=where,
                raw_input=event.arguments,
            )
        )

    async def terminal(self, call_id: str, terminal_id: str) -> None:
        self.terminals[call_id] = terminal_id
        await self.session.send(
            update_tool_call(self._acp_id(call_id), content=[tool_terminal_ref(terminal_id)])
        )

    async def _output(self, event: ToolOutput) -> None:
        so_far = (self.output.get(event.call_id, "") + event.text)[-_LIVE_OUTPUT_CHARS:]
        self.output[event.call_id] = so_far
        await self.session.send(
            update_tool_call(self._acp_id(event.call_id), content=[text_content(fenced(so_far))])
        )

    async def _finished(self, event: ToolFinished) -> None:
        acp_id = self._acp_id(event.call_id)
        self.unfinished.pop(event.call_id, None)
        content: list[ToolContent] = []
        terminal = self.terminals.get(event.call_id)
        if terminal is not None:
            content.append(tool_terminal_ref(terminal))
        path = self.paths.get(event.call_id)
        where = None
        if path and is_edit(event.name) and event.diff and not event.is_error:
            content += diff_contents(path, event.diff)
            line = first_changed_line(event.diff)
            where = locations(event.name, {"path": path}, self.session.cwd, line)
        if terminal is None:
            tail = event.name == "bash"
            shown = fenced(event.content) if tail or event.is_error else event.content
            content.append(text_content(shown, tail=tail))
        self.output.pop(event.call_id, None)
        await self.session.send(
            update_tool_call(
                acp_id,
                status="failed" if event.is_error else "completed",
                content=content,
                locations=where,
                raw_output={"content": event.content, "is_error": event.is_error},
            )
        )

    def _ask(self, request: ApprovalRequest) -> None:
        task = asyncio.ensure_future(self._approval(request))
        self.asking.add(task)
        task.add_done_callback(self.asking.discard)

    async def _approval(self, request: ApprovalRequest) -> None:
        session = self.session
        acp_id = self._acp_id(request.call_id)
        await permissions.ask(  # allowed: ToolRunning follows; refused: ToolFinished, failed
            session.client,
            session.id,
            acp_id,
            request,
            path=self.paths.get(request.call_id),
            timeout_s=session.permission_timeout_s,
            say=session.say,
        )

    async def withdraw(self) -> None:
        """Questions still open when the turn ends are dropped."""
        for task in list(self.asking):
            task.cancel()
        for task in list(self.asking):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def close_unfinished(self) -> None:
        """A call the editor was shown and that never ended (a cancel withdrew its question,
        or stopped the turn before it ran; or the turn was stopped from outside while it ran)
        gets its final status before the prompt is answered:
        the protocol has the turn's updates all sent by then, and an editor that does not close
        pending calls itself would keep its question or its spinner on it."""
        for call_id, ran in list(self.unfinished.items()):
            self.unfinished.pop(call_id, None)
            text = (
                "stopped while it ran: it may have had some of its effects"
                if ran
                else "not run: the turn was cancelled before this call ran"
            )
            with contextlib.suppress(Exception):  # a client gone: nobody to tell
                await self.session.send(
                    update_tool_call(
                        self._acp_id(call_id),
                        status="failed",
                        content=[text_content(text)],
                        raw_output={"content": text, "is_error": True},
                    )
                )

    # -- the ending -------------------------------------------------------------------------

    def response(self) -> PromptResponse:
        ended = self.ended
        if ended is None or ended.outcome is TurnOutcome.ABORTED:
            return PromptResponse(stop_reason="cancelled")
        if ended.outcome is TurnOutcome.ERROR:
            message = ended.error or (self.errors[-1] if self.errors else "the turn failed")
            first = message.strip().splitlines()[0] if message.strip() else "the turn failed"
            raise RequestError(-32603, f"agentsh: {first}", {"details": message})
        reason: StopReason = "max_turn_requests" if ended.limit == "max_turns" else "end_turn"
        return PromptResponse(stop_reason=reason)


def _compacted(event: CompactionFinished) -> str:
    text = (
        f"agentsh: context compacted ({event.tier.label}): {event.tokens_before:,} → "
        f"{event.tokens_after:,} tokens"
    )
    if event.summary_file:
        text += f"; the summary is in {event.summary_file}"
    if event.archive_file:
        text += f"; the full turns are kept in {event.archive_file}"
    return text + (f". {event.note}" if event.note else "")
