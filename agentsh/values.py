"""Value types shared by the model door and the session log.

A reply from the model (its text, tool calls, usage and why it stopped) is the same data
whether it is streaming in (:mod:`agentsh.llm`) or stored (:mod:`agentsh.session`). Keeping
these small frozen types here, below both, lets the model door stay ignorant of the log.
Standard library only. Also here, as low as it goes: the one way to parse JSON or TOML that
someone else wrote (a model's tool arguments, a project's config), where nesting too deep for
Python's parser is bad input like any other, not a crash.
"""

from __future__ import annotations

import json
import tomllib
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
            value = loads_json(self.arguments or "{}")
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


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` for text a model, a file or a peer wrote: nesting deeper than the parser
    can recurse (``[[[[...`` a thousand deep, a few KB) raises ``json.JSONDecodeError`` like
    any other bad JSON instead of a RecursionError that ended agentsh."""
    try:
        return json.loads(text)
    except RecursionError:
        shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError("nested too deeply", shown, 0) from None


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` for a file someone else wrote (a cloned repository's config): nesting
    too deep for the parser raises ``tomllib.TOMLDecodeError`` instead of a RecursionError."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply") from None
