"""Value types shared by the model door and the session log.

A reply from the model (its text, tool calls, usage and why it stopped) is the same data
whether it is streaming in (:mod:`agentsh.llm`) or stored (:mod:`agentsh.session`). Keeping
these small frozen types here, below both, lets the model door stay ignorant of the log.
Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class StopReason(StrEnum):
    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    ABORTED = "aborted"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text of the arguments object, validated before it is written
    # The header line the tool wrote for this call (``grep: needle in src (*.py)``), stored so
    # a resumed chat shows what the live one showed; "" in logs written before it was kept.
    summary: str = ""

    def parsed_arguments(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    # Counted by agentsh, not reported by the provider: a reply cancelled (or cut by an error)
    # mid-stream reports no usage, so what was sent and what arrived are counted instead.
    estimated: bool = False

    @property
    def context_tokens(self) -> int:
        """Tokens the provider counted as this request's context (prompt plus reply)."""
        return self.input_tokens + self.cache_read_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "input": self.input_tokens,
            "output": self.output_tokens,
            "cacheRead": self.cache_read_tokens,
            "cacheWrite": self.cache_write_tokens,
            "cost": self.cost,
        }
        if self.estimated:
            data["estimated"] = True
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        get = data.get
        return cls(
            int(get("input", 0)),
            int(get("output", 0)),
            int(get("cacheRead", 0)),
            int(get("cacheWrite", 0)),
            float(get("cost", 0.0)),
            get("estimated") is True,
        )
