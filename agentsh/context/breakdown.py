"""What ``agentsh context`` reports: where the tokens of the current context go.

:meth:`agentsh.context.manager.ContextManager.breakdown` counts the parts; this is the report's
shape and its JSON form (``agentsh context --json``), apart from the manager's work.
"""

from __future__ import annotations

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
