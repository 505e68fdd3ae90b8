"""The typed events the agent emits, and the status snapshot it publishes.

``Agent.run`` yields these; the TUI and the headless mode are two consumers of the same stream.
They are plain frozen dataclasses so a front end can ``match`` on them and the headless
``stream-json`` output can serialise any of them with :func:`event_to_json`. This module sits at
the bottom of the layers: it imports nothing from agentsh (the usage type only for the type
checker).
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentsh.values import Usage


class Tier(StrEnum):
    """Context tiers of SPEC §4, in order of severity."""

    NONE = "none"
    MOVE_TO_WORKSPACE = "move_to_workspace"
    SUMMARIZE = "summarize"
    TRUNCATE = "truncate"

    @property
    def label(self) -> str:
        return _TIER_LABELS[self]

    @classmethod
    def label_of(cls, value: str) -> str:
        """The label of a tier as the log stores it (``"summarize"``); a value this version
        does not know (a newer agentsh wrote it) is shown as it is."""
        try:
            return cls(value).label or value
        except ValueError:
            return value


_TIER_LABELS = {
    Tier.NONE: "",
    Tier.MOVE_TO_WORKSPACE: "MoveToWorkspace",
    Tier.SUMMARIZE: "Summarize",
    Tier.TRUNCATE: "Truncate",
}


class TurnOutcome(StrEnum):
    DONE = "done"
    ABORTED = "aborted"
    ERROR = "error"


class ErrorKind(StrEnum):
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    CONTEXT_OVERFLOW = "context_overflow"
    BAD_REQUEST = "bad_request"
    NETWORK = "network"
    TIMEOUT = "timeout"  # the provider took the request but did not answer in time
    SERVER = "server"
    NO_MODEL = "no_model"
    OTHER = "other"


class NoticeLevel(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ContextStatus:
    """What the status bar shows. Computed by the core, rendered as-is by front ends."""

    model: str = ""
    window: int = 0
    used: int = 0
    pct: float = 0.0
    tier: Tier = Tier.NONE
    estimated: bool = False  # True until a provider reply anchors the count
    session_input_tokens: int = 0  # cache reads included
    session_output_tokens: int = 0
    session_cost: float = 0.0
    session_cache_read_tokens: int = 0  # of session_input_tokens, read from the prompt cache
    session_cache_write_tokens: int = 0
    compactions: int = 0
    paused: bool = False  # anti-thrashing paused automatic compaction
    branch_index: int = 1
    branch_count: int = 1
    problem: str = ""  # e.g. a compaction that could not be written, retried next turn
    mcp_tools: int = 0  # of ``used``: the MCP tool definitions sent (agentsh.mcp)


class Event:
    """Base class of every agent event (for isinstance checks and typing)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    user_entry_id: str
    text: str


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta(Event):
    text: str


@dataclass(frozen=True, slots=True)
class TextEnded(Event):
    """The provider said its reply is over (its finish reason came, e.g. ``stop``): every
    delta is here; its usage and the logged reply follow. A front end can show the rest of the
    reply now instead of when it is logged (tens of milliseconds later, more under load)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta(Event):
    """A fragment of a tool call as it streams in (name first, then argument pieces)."""

    index: int
    call_id: str
    name: str
    arguments_fragment: str


@dataclass(frozen=True, slots=True)
class AssistantMessage(Event):
    """The model's reply is complete and appended to the log as ``entry_id``."""

    entry_id: str
    text: str
    tool_calls: tuple[tuple[str, str, str], ...]  # (call id, tool name, arguments JSON)
    stop_reason: str


@dataclass(frozen=True, slots=True)
class ToolStarted(Event):
    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str  # the header line, e.g. "bash: pytest -q"


@dataclass(frozen=True, slots=True)
class ToolRunning(Event):
    """The call was allowed (asked or not) and its tool begins to run now: between
    ``ToolStarted`` and this it was checked and perhaps waited for an approval. A call refused,
    or with bad arguments, never runs: ``ToolFinished`` follows ``ToolStarted`` directly."""

    call_id: str


@dataclass(frozen=True, slots=True)
class ToolOutput(Event):
    """Streaming output of a running tool (bash)."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolFinished(Event):
    call_id: str
    name: str
    entry_id: str
    content: str
    is_error: bool
    truncated: bool = False
    diff: str = ""  # unified diff for edit/write
    full_output_path: str = ""


@dataclass(eq=False, slots=True)
class ApprovalRequest(Event):
    """A tool wants to write or run something; the front end resolves ``decision``."""

    call_id: str
    tool: str
    summary: str
    detail: str  # the command, or the diff of the edit
    reason: str  # why it asks (mode, outside the project root, ...)
    outside_project: bool = False
    decision: asyncio.Future[ApprovalDecision] = field(default_factory=lambda: _new_future())
    # What ALLOW_GROUP would allow for the session, e.g. "every tool of MCP server 'git'";
    # empty when the tool is not part of a group (the prompt then does not offer it).
    group: str = ""
    # What ALLOW_SESSION keeps allowed after this call: "tool" (this tool's later calls),
    # "repository" (git commands in this repository that runs programs), "folder" (reads
    # beneath ``scope_path``, a folder outside the project), or "" (nothing: it allows this
    # call only, e.g. a write outside the project or to .git/), so a front end offers
    # "always" only where it is remembered.
    session_scope: str = "tool"
    scope_path: str = ""
    # Set with an allowing ``decision`` when the one who answered rewrote the call's input
    # (the Claude Agent SDK's ``updatedInput``): the call runs with it only if it fits the
    # tool and passes every check that stands above an approval (agentsh.tools.approval).
    updated_input: dict[str, Any] | None = None


class ApprovalDecision(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    ALLOW_GROUP = "allow_group"  # the call's whole group (ApprovalRequest.group), this session
    DENY = "deny"
    #: nobody answered in time (an editor that never showed the request): refused, and the
    #: model is told it was not the user's choice
    NO_ANSWER = "no_answer"


def _new_future() -> asyncio.Future[ApprovalDecision]:
    return asyncio.get_running_loop().create_future()


@dataclass(frozen=True, slots=True)
class UsageReported(Event):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    model: str = ""  # the model that answered ("" for a compaction's summary call)
    estimated: bool = False  # counted by agentsh: a reply cancelled or cut off mid-stream

    @classmethod
    def of(cls, usage: Usage, model: str = "") -> UsageReported:
        return cls(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.cost,
            model=model,
            estimated=usage.estimated,
        )


@dataclass(frozen=True, slots=True)
class StatusChanged(Event):
    status: ContextStatus


@dataclass(frozen=True, slots=True)
class Retrying(Event):
    attempt: int
    max_attempts: int
    delay_s: float
    reason: str
    fallback_model: str = ""  # the next attempt goes to this model (--fallback-model)
    model: str = ""  # with fallback_model: the model given up on


@dataclass(frozen=True, slots=True)
class ModelClientStarting(Event):
    """The model call waits for the model client to start (the model worker process is still
    importing litellm: seconds on a loaded machine); nothing has been sent to the model yet.
    :class:`ModelClientReady` follows when the request goes out."""


@dataclass(frozen=True, slots=True)
class ModelClientReady(Event):
    """The model client has started (after :class:`ModelClientStarting`): the request is
    sent, the call now waits for the model."""


@dataclass(frozen=True, slots=True)
class CompactionStarted(Event):
    tier: Tier
    reason: str


@dataclass(frozen=True, slots=True)
class CompactionFinished(Event):
    """A compaction applied. ``archive_file`` holds the turns it took out, verbatim ("" when
    it took none out: pruning only); ``summary_file`` the summary a Summarize wrote beside it
    ("" for the other tiers, and when a summary failed and the turns were archived instead).
    ``workspace_file`` is the one the context points at: the summary's, else the archive's."""

    entry_id: str
    tier: Tier
    tokens_before: int
    tokens_after: int
    workspace_file: str
    note: str = ""  # e.g. "summary failed; archived instead"
    archive_file: str = ""
    summary_file: str = ""  # "" when it wrote no summary


@dataclass(frozen=True, slots=True)
class CompactionFailed(Event):
    tier: Tier
    reason: str


@dataclass(frozen=True, slots=True)
class Notice(Event):
    """Something the user should know that is not an error of the turn."""

    level: NoticeLevel
    text: str
    #: set when the notice announces the limit that stops the turn ("max_turns",
    #: "max_budget_usd"): a front end that reports the limit its own way (``-p``) skips it
    limit: str = ""


@dataclass(frozen=True, slots=True)
class ErrorOccurred(Event):
    kind: ErrorKind
    message: str
    #: the HTTP status of the model API's answer when the model call failed with one
    status: int | None = None


@dataclass(frozen=True, slots=True)
class TurnEnded(Event):
    outcome: TurnOutcome
    text: str = ""  # the final answer of the turn
    error: str = ""
    #: the limit that stopped the turn before the model was done: "max_turns" or
    #: "max_budget_usd" (headless reports it as an error; the TUI lets the user go on)
    limit: str = ""


@dataclass(frozen=True, slots=True)
class IndexUpdated(Event):
    """The memory search index took in changed files (the memory pane refreshes on it).

    Emitted by the memory watcher, not by the agent loop; paths are absolute.
    """

    paths: tuple[str, ...]
    removed: tuple[str, ...] = ()


def event_to_json(event: Event) -> dict[str, Any]:
    """A JSON-safe dict of an event, with its type name under ``"type"``."""
    if isinstance(event, ApprovalRequest):
        data: dict[str, Any] = {
            "call_id": event.call_id,
            "tool": event.tool,
            "summary": event.summary,
            "reason": event.reason,
        }
    else:
        data = dataclasses.asdict(event)  # type: ignore[call-overload]
    return {"type": _snake(type(event).__name__), **data}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
