"""The strict schema check the end-to-end tests run on every frame the agent sends
(:mod:`tests.acp.wire`) refuses what the package's lenient client would let through."""

from __future__ import annotations

from typing import Any

from acp.helpers import update_tool_call
from acp.schema import SessionNotification, ToolCallLocation

from tests.acp.wire import schema_problems


def _frame(update: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": update},
    }


def test_a_frame_built_from_the_models_passes() -> None:
    update = update_tool_call("c1", status="completed", locations=[ToolCallLocation(path="/a")])
    params = SessionNotification(session_id="s", update=update).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    assert schema_problems({"jsonrpc": "2.0", "method": "session/update", "params": params}) == []


def test_snake_case_names_unknown_keys_and_salvaged_values_are_refused() -> None:
    good = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}
    assert schema_problems(_frame(good)) == []
    snake = {"session_update": "tool_call_update", "tool_call_id": "c1"}
    assert schema_problems(_frame(snake))
    assert schema_problems(_frame({**good, "isError": False}))
    bad_line = {**good, "locations": [{"path": "/a", "line": -3}]}  # the package reads None
    assert schema_problems(_frame(bad_line))
    assert schema_problems({"jsonrpc": "2.0", "method": "session/prompt", "params": {}})


def test_a_response_is_read_by_the_model_of_the_request_it_answers() -> None:
    asked = {1: "session/prompt", 2: "session/new"}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    assert schema_problems(answer, asked) == []
    assert schema_problems({**answer, "result": {"stop_reason": "end_turn"}}, asked)
    assert schema_problems({**answer, "result": {"stopReason": "finished"}}, asked)
    assert schema_problems({"jsonrpc": "2.0", "id": 2, "result": {}}, asked)  # no sessionId
    assert schema_problems({"jsonrpc": "2.0", "id": 2, "error": {"code": "x"}}, asked)
    error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad"}}
    assert schema_problems(error, asked) == []
    assert schema_problems({"jsonrpc": "2.0", "id": 9, "result": {"odd": 1}}, asked) == []
