"""A scripted stand-in for :class:`agentsh.agent.Agent`, for widget-level TUI tests only.

It answers what the TUI asks of an agent (:class:`agentsh.frontend.InteractiveAPI`, which mypy
checks it against where a test hands it to the app), not what only ``-p`` or an editor asks.
It yields events from a script, logging the user message and replies to the real session like
the agent does, so the chat's projection of the log can be checked. Tests that pin streaming,
tools, approval, cancel and the queue use the real agent against the scripted server instead
(test_app_real_agent.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

from agentsh.checkpoints.session_files import SessionFiles
from agentsh.config import ApprovalMode
from agentsh.context.undo import UndoResult, undo_compaction
from agentsh.events import (
    AssistantMessage,
    ContextStatus,
    Event,
    StatusChanged,
    TextDelta,
    Tier,
    TurnEnded,
    TurnOutcome,
    TurnStarted,
)
from agentsh.mcp.state import McpOverview
from agentsh.memory.curated import MemorySnapshot
from agentsh.session.entries import (
    AnyEntry,
    BranchSummaryEntry,
    EntryAppended,
    ModelChangeEntry,
    Role,
    StopReason,
)
from agentsh.session.session import Session

Script = Callable[["FakeAgent", str], AsyncIterator[Event]]


async def echo_script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
    """Log the user message, stream an echo in three pieces, log the reply."""
    user = agent.session.append_message(Role.USER, text)
    yield TurnStarted(user.id, text)
    reply = f"echo: {text}"
    for piece in (reply[:3], reply[3:8], reply[8:]):
        await asyncio.sleep(0)
        yield TextDelta(piece)
    entry = agent.session.append_message(Role.ASSISTANT, reply, stop_reason=StopReason.STOP)
    yield AssistantMessage(entry.id, reply, (), "stop")
    yield StatusChanged(agent.status())
    yield TurnEnded(TurnOutcome.DONE, text=reply)


def streaming(reply: str, piece: int = 40, pause_s: float = 0.002) -> Script:
    """A script that logs the message, streams ``reply`` ``piece`` characters at a time,
    ``pause_s`` apart, and logs the reply."""

    async def script(agent: FakeAgent, text: str) -> AsyncIterator[Event]:
        user = agent.session.append_message(Role.USER, text)
        yield TurnStarted(user.id, text)
        for start in range(0, len(reply), piece):
            await asyncio.sleep(pause_s)
            yield TextDelta(reply[start : start + piece])
        entry = agent.session.append_message(Role.ASSISTANT, reply, stop_reason=StopReason.STOP)
        yield AssistantMessage(entry.id, reply, (), "stop")
        yield TurnEnded(TurnOutcome.DONE, text=reply)

    return script


class FakeAgent:
    def __init__(
        self,
        session: Session,
        *,
        model: str | None = "test/fake",
        script: Script = echo_script,
        status: ContextStatus | None = None,
        approval: ApprovalMode = ApprovalMode.ASK,
    ) -> None:
        self.session = session
        self._model = model
        self.script = script
        self._status = status or ContextStatus(model=model or "", window=100_000)
        self.cancelled = 0
        self.warmed = 0
        self.tokenizer_warmed = 0
        self.runs: list[str] = []
        self.compactions: list[Tier | None] = []
        self.compaction_instructions: list[str] = []
        # None: the memory pane shows the files without comparing (as before the agent loads)
        self.snapshot: MemorySnapshot | None = None
        # None: file checkpoints off (a test sets a real SessionFiles to see restores)
        self.session_files: SessionFiles | None = None
        self._approval = approval
        self._plan = False

    @property
    def model(self) -> str | None:
        return self._model

    def status(self) -> ContextStatus:
        return self._status

    def set_status(self, status: ContextStatus) -> None:
        self._status = status

    @property
    def approval_mode(self) -> ApprovalMode:
        return self._approval

    @property
    def plan_mode(self) -> bool:
        return self._plan

    def set_approval_mode(self, mode: ApprovalMode, *, plan: bool = False) -> None:
        self._approval = ApprovalMode(mode)
        self._plan = plan

    async def run(self, text: str) -> AsyncIterator[Event]:
        self.runs.append(text)
        async for event in self._announcing(self.script(self, text)):
            yield event

    async def _announcing(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """Like the agent: every entry the script writes is announced (``EntryAppended``)
        right after it is written, before the event the script yields next."""
        written: list[AnyEntry] = []
        self.session.on_append = written.append
        try:
            async for event in events:
                for entry in written:
                    yield EntryAppended(entry)
                written.clear()
                yield event
            for entry in written:
                yield EntryAppended(entry)
        finally:
            self.session.on_append = None

    async def warm_up(self, *, tokenizer: bool = True) -> None:
        self.warmed += 1
        self.tokenizer_warmed += tokenizer

    def cancel(self) -> None:
        self.cancelled += 1

    def mcp_overview(self) -> McpOverview:
        return McpOverview()  # no MCP server configured

    def set_mcp_server(self, name: str, *, enabled: bool | None = None) -> None:
        raise KeyError(f"no MCP server named {name!r}")

    def watch_mcp(self, callback: Callable[[], None]) -> None:
        pass

    def tools_changed(self) -> ContextStatus:
        return self._status

    async def compact(
        self, tier: Tier | None = None, instructions: str = ""
    ) -> AsyncIterator[Event]:
        self.compactions.append(tier)
        self.compaction_instructions.append(instructions)
        async for event in self._announcing(self.compaction_events(tier)):
            yield event

    async def compaction_events(self, tier: Tier | None) -> AsyncIterator[Event]:
        """What ``/compact`` does (a subclass writes a compaction entry)."""
        yield StatusChanged(self._status)

    def set_model(self, model: str) -> None:
        self._model = model
        self._status = replace(self._status, model=model)
        if self.session.leaf_id is not None:  # logged as the real agent logs it
            self.session.append(
                ModelChangeEntry(
                    id=self.session.new_id(), parent_id=self.session.leaf_id, model=model
                )
            )

    def switch_session(self, session: Session) -> None:
        if session is not self.session:
            self.session.close()
        self.session = session

    @property
    def busy(self) -> bool:
        return False

    def undo_compaction(self) -> UndoResult:
        return undo_compaction(self.session)

    async def summarize_branch(self, from_leaf: str, instructions: str = "") -> str:
        return ""

    def attach_branch_summary(self, from_leaf: str, text: str) -> BranchSummaryEntry:
        entry = self.session.append_branch_summary(from_leaf, text)
        self.session.sync()
        return entry

    def read_archive(self, where: str) -> str | None:
        try:
            return Path(where).read_text(encoding="utf-8")
        except OSError:
            return None

    def memory_snapshot(self) -> MemorySnapshot | None:
        return self.snapshot

    def files(self) -> SessionFiles | None:
        return self.session_files

    def close(self) -> None:
        self.session.close()
