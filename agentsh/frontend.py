"""The front-end protocols: what each front end may ask of the agent, typed.

The TUI, headless ``-p`` and the ACP server are three front ends over one core. Each drives
the agent through the protocol that names exactly what it uses (:class:`InteractiveAPI`,
:class:`HeadlessAPI`, :class:`EditorAPI`), built from :class:`AgentAPI` (what every front end
drives) and the roles only some share (:class:`McpAPI`, :class:`PermissionsAPI`). The real
:class:`agentsh.agent.Agent` satisfies all of them structurally; mypy checks that where a front
end receives one, and checks each front end (and a test's stand-in for the agent) against
its own protocol only, so a fake TUI agent need not answer what only ``-p`` asks. Never
attribute chains into the agent's parts: renaming something inside the agent breaks the type
check instead of silently blanking a pane.

What a front end does with the answers is its own business; what flows back during work is
the event stream of :mod:`agentsh.events` (``run`` and ``compact`` yield it). The session log
stays readable directly (:attr:`AgentAPI.session`): it is the truth every front end shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from agentsh.checkpoints.session_files import SessionFiles
    from agentsh.config import ApprovalMode
    from agentsh.context.breakdown import ContextUsage
    from agentsh.context.undo import UndoResult
    from agentsh.events import ContextStatus, Event, Tier
    from agentsh.mcp.state import McpOverview
    from agentsh.memory.curated import MemorySnapshot
    from agentsh.session.entries import BranchSummaryEntry
    from agentsh.session.session import Session
    from agentsh.tools.approval import Denial
    from agentsh.tools.rules import ToolRules


class AgentAPI(Protocol):
    """What every front end drives: the session and model open, the work, closing.

    Work (``run``, ``compact``) is an async stream of events ending with the turn; one runs at a
    time (a second raises :class:`agentsh.agent.AgentBusy`: front ends queue instead). The rest
    answers at once.
    """

    # -- what is open -----------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The session the agent appends to (replaced by :meth:`InteractiveAPI.switch_session`)."""
        ...

    @property
    def model(self) -> str | None:
        """The litellm model string, or None when no model is configured."""
        ...

    @property
    def busy(self) -> bool:
        """A turn or a compaction is running."""
        ...

    def status(self) -> ContextStatus:
        """What the status line shows now: model, window, tokens, tier, cost, branch."""
        ...

    # -- work: streams of events ------------------------------------------------------------------

    def run(self, text: str) -> AsyncIterator[Event]:
        """One user turn: the message is logged, the model and tools run, until ``TurnEnded``."""
        ...

    def compact(self, tier: Tier | None = None, instructions: str = "") -> AsyncIterator[Event]:
        """A manual compaction (``/compact``): the tier given, else the one the context is in
        (Summarize when ``instructions`` steer the summary)."""
        ...

    def cancel(self) -> None:
        """Stop the running work; what was received is kept and the turn marked aborted."""
        ...

    # -- the model, the end -----------------------------------------------------------------------

    def set_model(self, model: str) -> None:
        """Use ``model`` from the next request on (logged as a model change)."""
        ...

    def close(self) -> None:
        """Finish the session log; the agent is not used afterwards."""
        ...


class McpAPI(Protocol):
    """The MCP servers, listed and switched (the TUI's ``/mcp``, a ``-p`` host's requests)."""

    def mcp_overview(self) -> McpOverview:
        """Every MCP server with its state, its tools and what their definitions cost."""
        ...

    def set_mcp_server(self, name: str, *, enabled: bool | None = None) -> None:
        """Enable or disable a server for this session, or (``enabled`` None) restart it."""
        ...


class ModesAPI(Protocol):
    """The approval mode, switched while the agent runs: the TUI's Shift+Tab, an editor's
    mode, a ``-p`` host's request."""

    @property
    def approval_mode(self) -> ApprovalMode:
        """What tools may do without asking (``ask``, ``edits``, ``all``)."""
        ...

    @property
    def plan_mode(self) -> bool:
        """Plan mode: nothing but reads, whatever the approval mode."""
        ...

    def set_approval_mode(self, mode: ApprovalMode, *, plan: bool = False) -> None:
        """Change the approval mode (and plan mode) from the next tool call on."""
        ...


class PermissionsAPI(ModesAPI, Protocol):
    """What a host or an editor sets for the run from outside: besides the mode, the folders
    beside the project (headless ``-p``, ACP). The TUI sets them at start only."""

    @property
    def folders(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """The folders beside the project written like it (``--add-dir``), and those only
        read without asking (an editor's additional directories)."""
        ...

    def set_folders(
        self,
        *,
        added: Sequence[Path] | None = None,
        read: Sequence[Path] | None = None,
        note: str | None = None,
    ) -> None:
        """Replace either list (None keeps it) from the next call on; ``note`` replaces what
        the end of the system prompt tells the model about them."""
        ...


class InteractiveAPI(AgentAPI, McpAPI, ModesAPI, Protocol):
    """The agent as the TUI drives it: besides the work, the conversation's tree (sessions,
    branches and their summaries, compactions undone, archives expanded), what the side panes
    show, and the MCP servers watched as they come and go. Only :meth:`summarize_branch` asks
    the model."""

    # -- the conversation -------------------------------------------------------------------------

    async def warm_up(self, *, tokenizer: bool = True) -> None:
        """Load what a turn needs (the model worker, the tokenizer) ahead of it: the user has
        started writing. A turn that comes first loads them itself. ``tokenizer=False``: the
        model worker only (building the tokenizer holds the interpreter for 0.4-0.8 s, so a
        front end loads it when the user pauses, not under their fingers)."""
        ...

    def switch_session(self, session: Session) -> None:
        """Continue in another session (new, resumed or forked); the old one is closed."""
        ...

    def undo_compaction(self) -> UndoResult:
        """The context from before the newest compaction, as a new leaf (``/compact undo``)."""
        ...

    async def summarize_branch(self, from_leaf: str, instructions: str = "") -> str:
        """A short summary of the branch ``from_leaf`` ended, written by the model ("" when
        nothing was left behind); the caller attaches it with :meth:`attach_branch_summary`."""
        ...

    def attach_branch_summary(self, from_leaf: str, text: str) -> BranchSummaryEntry:
        """Attach the summary where the user went, with the usage of the call that wrote it
        (counted in the session's tokens and cost)."""
        ...

    # -- what the agent holds ---------------------------------------------------------------------

    def read_archive(self, where: str) -> str | None:
        """The text of a compaction's workspace file (``CompactionEntry.workspace_file``), in
        memory for a session not kept on disk; None when it cannot be read."""
        ...

    def files(self) -> SessionFiles | None:
        """The session's file checkpoints: what moving the leaf would change on disk, and the
        restore the user confirms (None when ``[checkpoints] enabled`` is off). Never called
        by headless ``-p``: it does not restore on its own."""
        ...

    def memory_snapshot(self) -> MemorySnapshot | None:
        """The curated memory as this session's system prompt holds it (taken at start); None
        when the agent holds none (the memory pane then lists the files without comparing)."""
        ...

    # -- MCP servers as they change ---------------------------------------------------------------

    def watch_mcp(self, callback: Callable[[], None]) -> None:
        """``callback()`` on every server state change, called on the MCP thread."""
        ...

    def tools_changed(self) -> ContextStatus:
        """The status with the tools offered now counted in (after servers came or went)."""
        ...


class HeadlessAPI(AgentAPI, McpAPI, PermissionsAPI, Protocol):
    """The agent as headless ``-p`` drives it: the rules a host changes mid-run, what Claude
    Code's output reports (tools offered, calls refused, the context's breakdown), the MCP
    servers settled before the tools are listed."""

    @property
    def tool_rules(self) -> ToolRules:
        """The allow and deny rules calls are checked against (``--allowedTools``...)."""
        ...

    def set_tool_rules(self, rules: ToolRules) -> None:
        """Replace the rules from the next tool call on."""
        ...

    def context_usage(self) -> ContextUsage:
        """Where the context's tokens go now, part by part, file by file, tool by tool."""
        ...

    def tool_names(self) -> list[str]:
        """The tools the model is offered (headless ``system/init``)."""
        ...

    def denials(self) -> list[Denial]:
        """The tool calls refused so far without asking anyone (headless reports them as
        ``permission_denials``)."""
        ...

    def mcp_identity(self, name: str) -> tuple[str, str] | None:
        """The (server as configured, tool as listed) of the MCP tool the model calls
        ``name``; None for any other name."""
        ...

    def settle_mcp(self, timeout: float | None = None) -> None:
        """Block until no MCP server is still starting (headless, before it lists tools)."""
        ...


class EditorAPI(AgentAPI, PermissionsAPI, Protocol):
    """The agent as the ACP server drives it for an editor: the work, the mode the editor
    picks and the editor's additional directories."""
