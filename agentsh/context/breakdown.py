"""What ``agentsh context`` reports: where the tokens of the current context go.

:meth:`agentsh.context.manager.ContextManager.breakdown` counts the parts; this is the report's
shape and its JSON form (``agentsh context --json``), apart from the manager's work. A running
agent adds what only it knows (:class:`ContextUsage`: the instruction and memory files of its
system prompt, each MCP tool's definition, where automatic compaction starts), which headless
``-p`` answers the Claude Agent SDK's ``get_context_usage`` with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentsh.context.engine_protocol import TierPreview
from agentsh.events import Tier


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """``agentsh context``: where the tokens of the current context go."""

    model: str
    window: int
    engine: str
    system: int
    tools: int
    memory: int
    summary: int
    messages: int  # user and assistant messages (tool-call arguments included)
    tool_results: int
    estimated_total: int
    used: int
    estimated: bool
    pct: float
    tier: Tier
    entries: int
    turns: int
    compactions: int
    paused: bool
    problem: str
    previews: tuple[TierPreview, ...] = ()
    mcp_tools: int = 0  # of ``tools``: the MCP servers' definitions

    def to_json(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "previews"}
        data["tier"] = self.tier.value
        data["previews"] = [
            {**{k: getattr(p, k) for k in p.__dataclass_fields__}, "tier": p.tier.value}
            for p in self.previews
        ]
        return data


@dataclass(frozen=True, slots=True)
class CountedFile:
    """An instruction file (AGENTS.md) or curated memory file in the system prompt."""

    path: str
    scope: str  # "user" (the user's own, every project) or "project"
    tokens: int  # of its part of the system prompt, heading and fence included


@dataclass(frozen=True, slots=True)
class CountedTool:
    """One MCP tool and what its definition costs."""

    name: str  # mcp__server__tool, as the model calls it
    server: str
    tokens: int
    loaded: bool  # its definition is sent (False: mcp_search stands in for it)


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """Where the running agent's context goes now (``get_context_usage``)."""

    breakdown: ContextBreakdown
    instructions: tuple[CountedFile, ...] = ()  # AGENTS.md files, part of ``breakdown.system``
    memory: tuple[CountedFile, ...] = ()  # MEMORY.md and USER.md, in ``breakdown.memory``
    mcp_tools: tuple[CountedTool, ...] = ()
    compacts_at: int = 0  # the usage at which automatic compaction starts; 0: it does not
    # AGENTS.md files below the working folder, loaded into a tool's result on the first touch
    # of a file under them: those whose text the context still holds (not pruned or compacted)
    nested: tuple[CountedFile, ...] = ()


def compaction_point(auto_tier: Callable[[int, int], Tier], window: int) -> int:
    """The least usage at which ``auto_tier`` (an engine's) starts compacting, found by
    bisection (a tier only grows with usage); 0 when it never does within the window."""
    if window <= 0 or auto_tier(window, window) is Tier.NONE:
        return 0
    low, high = 0, window  # auto_tier(low) is NONE (or low is 0); auto_tier(high) is not
    while high - low > 1:
        middle = (low + high) // 2
        if auto_tier(middle, window) is Tier.NONE:
            low = middle
        else:
            high = middle
    return high
