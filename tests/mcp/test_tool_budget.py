"""Whether MCP tools wait behind ``mcp_search`` is decided on the definitions as they would be
sent: terse on a small window (agentsh.context.prompt_budget), full size on a large one."""

from __future__ import annotations

import json

from agentsh.config import Settings
from agentsh.mcp.state import RemoteTool
from agentsh.mcp.tools import SEARCH_TOOL, McpToolSource
from agentsh.tools.base import ToolRegistry
from tests.mcp.conftest import ListedTools

LONG = "Looks up an issue in the tracker and returns it with its comments. " * 8
TOOLS = tuple(
    RemoteTool(
        "tracker",
        f"get_{i}",
        f"mcp__tracker__get_{i}",
        LONG,
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "The issue's key, like PROJ-123. " * 4},
                "full": {"type": "boolean", "description": "Include every comment. " * 4},
            },
            "required": ["id"],
        },
    )
    for i in range(6)
)


def _chars_per_token(text: str) -> int:
    return len(text) // 4


def _registry(window: int, terse: bool) -> tuple[ToolRegistry, McpToolSource]:
    registry = ToolRegistry()
    registry.terse = terse
    source = McpToolSource(
        ListedTools(TOOLS),
        Settings(),
        window=lambda: window,
        count=_chars_per_token,
        terse=lambda: registry.terse,
    )
    registry.add_source(source)
    return registry, source


def test_a_small_windows_terse_definitions_are_what_the_budget_weighs() -> None:
    # 12k window: 10 % is 1,200 tokens. The servers' full schemas take ~1,700 (over), the
    # terse ones the registry sends ~400 (under): the tools themselves are offered.
    registry, source = _registry(12_000, terse=True)
    assert not source.deferred()
    sent = registry.schemas()
    assert [s["function"]["name"] for s in sent] == [t.name for t in TOOLS]
    compact = json.dumps(sent, separators=(",", ":"), sort_keys=True)
    assert source.definition_tokens() == _chars_per_token(compact) < source.budget_tokens()
    assert sum(source.tokens_by_server().values()) == source.definition_tokens()
    # The same tools, full size, are over that budget: they would have waited behind
    # mcp_search although what is sent fits.
    registry.terse = False
    assert source.definition_tokens() > source.budget_tokens()
    assert source.deferred()
    assert [s["function"]["name"] for s in registry.schemas()] == [SEARCH_TOOL]
