"""``agentsh -p`` ends on Ctrl+C and SIGTERM although a worker thread never comes back.

A tool's worker thread blocked in a system call for good (here ls's listing, opening a FIFO
nobody writes: a hung network mount or a library's socket read do the same) used to hold the
process forever: the first Ctrl+C waited for the tool, the second cancelled the task and then
asyncio waited for the thread when its loop closed, and the interpreter again at exit. No
result line was written either.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.fakes.stuck_tool import DRIVER


def _start(server: ScriptedServer, project: Path) -> subprocess.Popen[str]:
    server.script(tool_call("ls", {}), text("never asked for"))
    env = dict(os.environ, OPENAI_API_KEY=FAKE_KEY)
    command = [sys.executable, "-c", DRIVER, "-m", TEST_MODEL, "--api-base", server.base_url]
    command += ["-p", "search", "--output-format", "stream-json", "--verbose"]
    proc = subprocess.Popen(
        command,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while proc.stderr.readline().strip() != "blocked":  # the thread is in its open() now
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "ls never started"
    time.sleep(0.3)
    return proc


@pytest.mark.parametrize(
    "signals",
    [(signal.SIGINT, signal.SIGINT, signal.SIGTERM), (signal.SIGTERM,), (signal.SIGINT,)],
    ids=["INT-INT-TERM", "TERM", "INT"],
)
def test_a_signal_ends_the_run_although_a_thread_is_stuck_in_a_syscall(
    signals: tuple[signal.Signals, ...],
    scripted_server: ScriptedServer,
    project: Path,
    agentsh_home: Path,
    fast_retries: Path,
) -> None:
    proc = _start(scripted_server, project)
    try:
        started = time.monotonic()
        for signum in signals:
            proc.send_signal(signum)
            time.sleep(0.5)
        stdout, stderr = proc.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # One signal: the stop asked of the tool gets 3 s (ending.GRACE_S), then the run is ended.
    assert took < 8, (took, stderr)
    assert proc.returncode == 130, stderr
    assert "agentsh: interrupted" in stderr
    lines = [json.loads(line) for line in stdout.splitlines()]  # every line whole
    assert [line["type"] for line in lines] == ["system", "assistant", "result"]
    result = lines[-1]
    assert result["subtype"] == "error_during_execution" and result["is_error"]
    assert result["terminal_reason"] == "aborted_tools"
    assert result["errors"] == ["interrupted"]
