"""The scripted server itself: wire format, script exhaustion, the process mode and its log."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.server import (
    ErrorReply,
    Reply,
    ScriptedServer,
    ToolCallSpec,
    reply_from_json,
    split_pieces,
)

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-x"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def sse_events(raw: bytes) -> list[Any]:
    events = []
    for block in raw.decode().split("\n\n"):
        if block.startswith("data: "):
            payload = block.removeprefix("data: ")
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def test_a_stream_has_role_text_tool_deltas_finish_usage_and_done(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.script(
        Reply(text="hi there", tool_calls=(ToolCallSpec("bash", {"cmd": "ls"}, id="c9"),))
    )

    status, headers, raw = post(
        scripted_server.base_url,
        {"messages": [], "stream": True, "stream_options": {"include_usage": True}},
    )

    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] > 0
    finish = events[-3]["choices"][0]
    assert finish["finish_reason"] == "tool_calls"
    deltas = [e["choices"][0]["delta"] for e in events[:-3]]
    assert deltas[0]["role"] == "assistant"
    tool_deltas = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    head, *rest = tool_deltas
    assert head["id"] == "c9" and head["function"]["name"] == "bash"
    assert all(set(d) == {"index", "function"} for d in rest)
    assert "".join(d["function"]["arguments"] for d in rest) == '{"cmd": "ls"}'


def test_no_usage_chunk_unless_asked(scripted_server: ScriptedServer) -> None:
    scripted_server.script("hi")

    _, _, raw = post(scripted_server.base_url, {"messages": [], "stream": True})

    assert not any(isinstance(e, dict) and "usage" in e for e in sse_events(raw))


def test_an_exhausted_script_answers_a_clear_500(scripted_server: ScriptedServer) -> None:
    status, _, raw = post(scripted_server.base_url, {"messages": []})

    assert status == 500
    assert "script exhausted" in json.loads(raw)["error"]["message"]


def test_error_replies_carry_status_body_and_retry_after(scripted_server: ScriptedServer) -> None:
    scripted_server.script(ErrorReply(429, message="slow down", retry_after="3"))

    status, headers, raw = post(scripted_server.base_url, {"messages": []})

    assert status == 429
    assert headers["Retry-After"] == "3"
    assert json.loads(raw)["error"]["message"] == "slow down"


def test_text_is_cut_into_irregular_but_reproducible_pieces() -> None:
    import random

    text = "one two three four five six seven eight nine ten " * 4
    first = split_pieces(text, random.Random(1))
    again = split_pieces(text, random.Random(1))

    assert first == again
    assert "".join(first) == text
    assert len({len(p) for p in first}) > 3


def test_the_script_file_format_parses_every_kind_of_reply() -> None:
    assert reply_from_json("hi") == Reply(text="hi")
    overflow = reply_from_json({"overflow": True})
    assert isinstance(overflow, ErrorReply) and overflow.code == "context_length_exceeded"
    error = reply_from_json({"error": {"status": 503, "retry_after": 2}})
    assert isinstance(error, ErrorReply) and (error.status, error.retry_after) == (503, "2")
    calls = reply_from_json({"tool_calls": [{"name": "bash", "arguments": {"cmd": "ls"}}]})
    assert isinstance(calls, Reply) and calls.finish == "tool_calls"
    quiet = reply_from_json({"text": "x", "no_usage": True, "stall": 1.5})
    assert isinstance(quiet, Reply) and (quiet.no_usage, quiet.stall_s) == (True, 1.5)
    with pytest.raises(ValueError):
        reply_from_json(42)


def test_the_server_runs_as_a_process_and_logs_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["first", {"error": {"status": 401, "message": "no"}}]))
    log = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.server", "--script", str(script), "--log", str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("PORT=")
        base = f"http://127.0.0.1:{int(line.removeprefix('PORT='))}/v1"

        first = post(base, {"messages": [{"role": "user", "content": "a"}]})
        second = post(base, {"messages": [{"role": "user", "content": "b"}]})
    finally:
        proc.terminate()
        proc.wait(10)

    assert json.loads(first[2])["choices"][0]["message"]["content"] == "first"
    assert second[0] == 401
    logged = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["body"]["messages"][0]["content"] for r in logged] == ["a", "b"]
    assert logged[0]["headers"]["authorization"] == "Bearer sk-x"
