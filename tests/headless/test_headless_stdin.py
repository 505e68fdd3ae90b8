"""agentsh without a terminal: never the TUI into a pipe; the prompt from stdin; piped context.

Each test runs the real ``agentsh`` as a subprocess with stdin and stdout that are pipes or
``/dev/null``, the way scripts and CI call it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from agentsh.headless.stdin import FIRST_BYTE_WAIT_S
from agentsh.paths import UserPaths
from agentsh.session.catalog import Catalog
from agentsh.session.entries import MessageEntry, Role
from agentsh.session.session import Session
from tests.agent.conftest import AgentshRunner, session_files
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call


def _agentsh(server: ScriptedServer, *args: str) -> list[str]:
    return [sys.executable, "-m", "agentsh", "-m", TEST_MODEL, "--api-base", server.base_url, *args]


def _env() -> dict[str, str]:
    return dict(os.environ, OPENAI_API_KEY=FAKE_KEY)


def test_plain_agentsh_without_a_terminal_exits_at_once_with_one_line(
    scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    # `agentsh < /dev/null > out` used to start the TUI into the pipe and never end.
    started = time.monotonic()
    with Path(os.devnull).open("rb") as devnull:
        done = subprocess.run(
            _agentsh(scripted_server),
            stdin=devnull,
            capture_output=True,
            cwd=project,
            env=_env(),
            timeout=30,
        )
    # It never ended before (the 30 s timeout fails it). It ends before anything heavy loads
    # (the test below): a Python start, under a second even on a loaded 2-core machine.
    assert time.monotonic() - started < 5
    assert done.returncode == 2
    assert done.stdout == b""  # no escape codes into the pipe
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "-p" in lines[0] and "terminal" in lines[0]
    assert scripted_server.requests == []


def test_without_a_terminal_and_nothing_piped_agentsh_ends_before_loading_the_agent(
    project: Path, agentsh_home: Path
) -> None:
    """Stdin is read before the headless front end and the configuration load (asyncio, MCP
    trust, the agent's modules: a second of imports on a loaded machine, then the error)."""
    heavy = ("asyncio", "agentsh.config", "agentsh.headless.run", "agentsh.mcp.server_trust")
    code = (
        "import sys\nfrom agentsh.cli import main\ncode = main([])\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\nsys.exit(code)"
    )
    with Path(os.devnull).open("rb") as devnull:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdin=devnull,
            capture_output=True,
            cwd=project,
            env=_env(),
            timeout=30,
        )
    assert done.returncode == 2, done.stderr
    assert done.stdout.decode().strip() == "[]"
    assert b"needs a terminal" in done.stderr


def test_a_stdin_left_open_and_silent_does_not_hang_plain_agentsh(
    scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    read_end, write_end = os.pipe()  # kept open, never written: a CI runner's stdin
    try:
        started = time.monotonic()
        done = subprocess.run(
            _agentsh(scripted_server),
            stdin=read_end,
            capture_output=True,
            cwd=project,
            env=_env(),
            timeout=30,
        )
        elapsed = time.monotonic() - started
    finally:
        os.close(read_end)
        os.close(write_end)
    # the wait for a first byte, plus a Python start on a loaded 2-core machine (5.04 s seen);
    # it never ended before (the 30 s timeout)
    assert FIRST_BYTE_WAIT_S <= elapsed < FIRST_BYTE_WAIT_S + 15, elapsed
    assert done.returncode == 2
    assert b"nothing arrived on stdin" in done.stderr


def test_plain_agentsh_runs_a_prompt_piped_in_as_if_it_were_dash_p(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("piped answer"))
    run = run_agentsh(input="what is in this folder?\n")
    assert run.code == 0, run.stderr
    assert run.stdout == "piped answer\n"
    assert scripted_server.requests[0].messages[-1]["content"] == "what is in this folder?"


def test_dash_p_without_a_prompt_reads_it_from_stdin(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    # `echo q | agentsh -p` failed with "expected one argument".
    scripted_server.script(text("a1"), text("a2"))
    assert run_agentsh("-p", input="first\n").stdout == "a1\n"
    assert run_agentsh("-p", "-", input="second").stdout == "a2\n"
    sent = [r.messages[-1]["content"] for r in scripted_server.requests]
    assert sent == ["first", "second"]


def test_piped_text_beside_a_prompt_is_attached_as_context(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer, agentsh_home: Path
) -> None:
    # `echo DATA | agentsh -p "summarize this"` silently dropped the piped text.
    scripted_server.script(text("summary"))
    run = run_agentsh("-p", "summarize this", input="line one\nDATA-7f3a\n")
    assert run.code == 0, run.stderr
    sent = scripted_server.requests[0].messages[-1]["content"]
    assert sent.startswith("summarize this\n")
    assert "line one\nDATA-7f3a" in sent
    (path,) = session_files(agentsh_home)
    users = [
        e.content
        for e in Session.open(path, lock=False).current_path()
        if isinstance(e, MessageEntry) and e.role is Role.USER
    ]
    assert users == [sent]  # the log holds what the model saw
    # The session is listed under what the user asked, not the piped block after it.
    [info] = Catalog(UserPaths.from_env()).list(Path.cwd())
    assert info.title == "summarize this"


def test_claude_code_argument_order_prompt_after_the_flags(
    run_agentsh: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(text("ordered"))
    run = run_agentsh("-p", "--max-turns", "3", "explain the layout")
    assert run.code == 0, run.stderr
    assert run.stdout == "ordered\n"
    assert scripted_server.requests[0].messages[-1]["content"] == "explain the layout"


def test_max_turns_reached_is_an_error_with_exit_1_and_one_line(
    run_headless: AgentshRunner, scripted_server: ScriptedServer
) -> None:
    scripted_server.script(
        tool_call("ls", {"path": "."}), tool_call("ls", {"path": "."}), text("never")
    )
    run = run_headless("-p", "keep listing", "--max-turns", "2")
    assert run.code == 1, run.stderr
    # One clear line, not the TUI's "send a message to go on" notice above it.
    assert run.stderr.splitlines() == [
        "agentsh: stopped after 2 model calls (--max-turns) before the model was done; "
        "continue with -c to go on"
    ]
    assert run.stdout == ""
    assert len(scripted_server.requests) == 2


def test_unknown_options_are_named_even_with_a_value(run_agentsh: AgentshRunner) -> None:
    # argparse read `bar` as a subcommand and answered "invalid choice: 'bar'".
    run = run_agentsh("-p", "hi", "--foo", "bar")
    assert run.code == 2
    assert "unknown option --foo" in run.stderr
    assert "invalid choice" not in run.stderr
    run = run_agentsh("-p", "hi", "--max-turn", "3")
    assert run.code == 2 and "did you mean --max-turns?" in run.stderr


def test_a_second_prompt_is_refused_not_dropped(run_agentsh: AgentshRunner) -> None:
    run = run_agentsh("-p", "fix", "the", "bug")
    assert run.code == 2
    assert "'the'" in run.stderr and "quote" in run.stderr


def test_max_budget_usd_stops_before_the_next_model_call_with_exit_1(
    run_headless: AgentshRunner, scripted_server: ScriptedServer, fast_retries: Path
) -> None:
    # A price a user can set for a model litellm does not know: every request costs dollars.
    fast_retries.write_text(fast_retries.read_text() + "input_cost_per_mtok = 1000000.0\n")
    scripted_server.script(tool_call("ls", {"path": "."}), text("never"))
    run = run_headless("-p", "list", "--max-budget-usd", "0.5")
    assert run.code == 1, run.stderr
    assert len(run.stderr.splitlines()) == 1 and "--max-budget-usd" in run.stderr
    assert len(scripted_server.requests) == 1
    run = run_headless("-p", "list", "--max-budget-usd", "0")
    assert run.code == 2 and "more than 0" in run.stderr
