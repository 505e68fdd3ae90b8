"""``agentsh -p`` end to end: the real command line, the real litellm client (in the model
worker), the scripted server; as a process where the process is what is tested."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsh.session.entries import MessageEntry, StopReason, ToolResultEntry
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner, session_files
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.in_process import run_cli
from tests.fakes.server import ErrorReply, ScriptedServer, text, tool_call


def test_write_then_bash_then_answer_lands_on_one_path(
    run_agentsh_process: AgentshRunner,
    scripted_server: ScriptedServer,
    project: Path,
    agentsh_home: Path,
) -> None:
    # The whole command as a process of its own (its start, its model worker); the other
    # tests run the same command line in the test process (tests/fakes/in_process.py).
    scripted_server.script(
        tool_call("write", {"path": "hello.txt", "content": "hello from agentsh\n"}),
        tool_call("bash", {"command": "cat hello.txt"}),
        text("The file says hello from agentsh."),
    )
    run = run_agentsh_process("-p", "create hello.txt and read it back", "--approve", "all")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "The file says hello from agentsh."
    assert (project / "hello.txt").read_text() == "hello from agentsh\n"
    # The bash result (the file's content) went back to the model.
    third = scripted_server.requests[2].messages
    assert any(m["role"] == "tool" and "hello from agentsh" in str(m["content"]) for m in third)

    (path,) = session_files(agentsh_home)
    session = Session.open(path, lock=False)
    kinds = [
        (e.role.value if isinstance(e, MessageEntry) else "toolResult")
        for e in session.current_path()
    ]
    assert kinds == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]
    assert session.problems == []


def test_continue_extends_the_same_session(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    scripted_server.script(text("first answer"), text("second answer"))
    assert run_agentsh("-p", "first question").code == 0
    run = run_agentsh("-c", "-p", "second question")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "second answer"
    (path,) = session_files(agentsh_home)
    path_texts = [
        e.content
        for e in Session.open(path, lock=False).current_path()
        if isinstance(e, MessageEntry)
    ]
    assert path_texts == ["first question", "first answer", "second question", "second answer"]
    # The second request carried the whole first exchange.
    contents = [m["content"] for m in scripted_server.requests[1].messages]
    assert "first question" in contents and "first answer" in contents


def test_continue_with_nothing_to_continue_says_so_once_and_starts_a_new_session(
    run_headless: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    """`agentsh -c -p x` in a folder with no session ran in a new one without a word."""
    scripted_server.script(text("an answer"), text("another"))
    run = run_headless("-c", "-p", "first question")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "an answer"
    warning = (
        "agentsh: warning: -c: no earlier session in this folder to continue; starting a new one"
    )
    assert run.stderr.count(warning) == 1, run.stderr
    assert len(session_files(agentsh_home)) == 1
    run = run_headless("-c", "-p", "second question")  # now there is one: no warning
    assert run.code == 0 and "-c:" not in run.stderr, run.stderr


def test_rate_limit_then_server_error_then_success_is_retried(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(
        ErrorReply(429, "slow down", retry_after="0"),
        ErrorReply(500, "boom"),
        text("made it"),
    )
    run = run_agentsh("-p", "hello")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "made it"
    assert len(scripted_server.requests) == 3
    assert "retry 1/3" in run.stderr and "retry 2/3" in run.stderr


def test_a_rate_limits_retry_after_is_waited_out_and_said(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, fast_retries: Path
) -> None:
    # The user's backoff is 0.01-0.05 s, but the provider asked for 1 s: that wait is kept
    # (up to retry_max_delay_s, raised here to let it), and stderr says it.
    with fast_retries.open("a") as config:
        config.write("retry_max_delay_s = 5.0\n")
    scripted_server.script(ErrorReply(429, "slow down", retry_after="1"), text("made it"))
    run = run_agentsh("-p", "hello")
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "made it"
    assert "agentsh: rate limited (429); retry 1/3 in 1.0s" in run.stderr
    first, second = scripted_server.requests
    assert second.received_s - first.received_s >= 0.95


def test_auth_error_exits_non_zero_without_leaking_the_key(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    scripted_server.script(ErrorReply(401, f"Incorrect API key provided: {FAKE_KEY}"))
    run = run_agentsh("-p", "hello")
    assert run.code == 1
    assert run.stderr.strip(), "a one-line reason is printed"
    assert "Traceback" not in run.stderr
    assert FAKE_KEY not in run.stderr + run.stdout
    assert "key" in run.stderr.lower()
    (path,) = session_files(agentsh_home)
    assert FAKE_KEY not in path.read_text()
    session = Session.open(path, lock=False)  # still loadable
    assert session.problems == []
    last = session.current_path()[-1]
    assert isinstance(last, MessageEntry) and last.stop_reason is StopReason.ERROR


def test_orphan_tool_call_in_a_hand_made_session_is_never_sent(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "crashed.jsonl"
    lines = [
        {
            "type": "session",
            "version": 1,
            "id": "s-1",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": str(tmp_path),
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "t",
            "role": "user",
            "content": "run the tests",
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": "t",
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "call_9", "name": "bash", "arguments": '{"command": "pytest"}'}],
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scripted_server.script(text("ok"))
    run = run_agentsh("--session", str(path), "-p", "what happened?")
    assert run.code == 0, run.stderr
    sent = scripted_server.requests[0].messages
    call_ids = {c["id"] for m in sent for c in m.get("tool_calls") or []}
    result_ids = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert call_ids == result_ids == {"call_9"}


def test_ask_mode_denies_in_headless_and_tells_the_model_why(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, project: Path
) -> None:
    scripted_server.script(tool_call("bash", {"command": "touch made.txt"}), text("denied, ok"))
    run = run_agentsh("-p", "make a file")
    assert run.code == 0, run.stderr
    assert not (project / "made.txt").exists()
    results = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert "--approve" in results[0]["content"]
    # The user is told too, in one line on stderr (stdout keeps only the answer).
    assert run.stdout == "denied, ok\n"
    [note] = [line for line in run.stderr.splitlines() if "denied" in line]
    assert note.startswith("agentsh: denied bash: touch made.txt: ")
    assert "--approve all" in note


def test_json_and_stream_json_output(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("one"), text("two"))
    run = run_agentsh("-p", "hi", "--output-format", "json")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["result"] == "one" and result["subtype"] == "success"
    assert result["session_id"] and result["usage"]["input_tokens"] > 0

    # agentsh's own events stay available under their own name.
    run = run_agentsh("-p", "hi", "--output-format", "events")
    events = [json.loads(line) for line in run.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "turn_started" and "text_delta" in types
    assert types[-2:] == ["turn_ended", "result"]
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "two"
    assert all(e["session_id"] for e in events)
    # The provider's end of the reply comes after its text and before the reply is logged.
    ended = [n for n, e in enumerate(events) if e["type"] == "text_ended"]
    last_delta = max(n for n, t in enumerate(types) if t == "text_delta")
    assert len(ended) == 1 and last_delta < ended[0] < types.index("assistant_message")
    assert events[ended[0]]["reason"] == "stop"


def test_no_model_configured_explains_how_to_configure_one(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(name)
    done = run_cli(["-p", "hi"])
    assert done.code == 1
    assert "no model is configured" in done.stderr
    assert "OPENAI_API_KEY" in done.stderr or "ANTHROPIC_API_KEY" in done.stderr


def test_tool_result_entries_carry_their_call(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    scripted_server.script(tool_call("ls", {"path": "."}, id="call_ls"), text("listed"))
    assert run_agentsh("-p", "list").code == 0
    (path,) = session_files(agentsh_home)
    results = [
        e for e in Session.open(path, lock=False).current_path() if isinstance(e, ToolResultEntry)
    ]
    assert [r.tool_call_id for r in results] == ["call_ls"]
    assert not results[0].is_error


def test_ctrl_c_during_a_command_keeps_its_output_and_still_prints_the_result(
    scripted_server: ScriptedServer, project: Path, agentsh_home: Path, fast_retries: Path
) -> None:
    # The command ran (and may have changed files): the log must say what it printed, not
    # "not run", and a json consumer still gets its result object.
    scripted_server.script(
        tool_call("bash", {"command": "echo partial-output; touch started.txt; sleep 60"}),
        text("never asked for"),
    )
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
    command = [sys.executable, "-m", "agentsh", "-m", TEST_MODEL, "--api-base"]
    command += [scripted_server.base_url, "-p", "run it", "--approve", "all"]
    command += ["--output-format", "json"]
    proc = subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 90
        while not (project / "started.txt").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()

    assert proc.returncode == 130, stderr
    assert "agentsh: interrupted" in stderr
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["subtype"] == "error_during_execution" and result["is_error"]
    assert result["errors"] == ["interrupted"]
    (path,) = session_files(agentsh_home)
    session = Session.open(path, lock=False)
    (tool_result,) = [e for e in session.current_path() if isinstance(e, ToolResultEntry)]
    assert "partial-output" in tool_result.content
    assert "not run" not in tool_result.content
    assert len(scripted_server.requests) == 1  # the model was not called again
