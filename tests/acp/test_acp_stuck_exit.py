"""``agentsh acp`` ends on SIGTERM although a tool's worker thread never comes back.

The editor quitting sends SIGTERM; the running turn is cancelled and given 3 s, then the agent
exits. With a worker thread blocked for good in a system call (here ls's listing opening a FIFO
nobody writes: a hung network mount does the same) it never exited: ``asyncio.run`` waited for
the thread when its loop closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp import connect_to_agent, text_block

from tests.acp.conftest import EditorClient
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call
from tests.fakes.stuck_tool import DRIVER

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


async def test_sigterm_ends_the_agent_although_a_tool_thread_is_stuck(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(project)], check=True)
    server = ScriptedServer().start()
    server.script(tool_call("ls", {}), text("never asked for"))
    env = dict(
        os.environ,
        OPENAI_API_KEY=FAKE_KEY,
        AGENTSH_HOME=str(tmp_path / "home"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        AGENTSH_NO_OLLAMA_PROBE="1",
    )
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-c", DRIVER, "-m", TEST_MODEL, "--api-base", server.base_url),
        *("acp", "--approve", "all"),
        cwd=project,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    client = EditorClient()
    conn = connect_to_agent(client, process.stdin, process.stdout)  # type: ignore[arg-type]
    prompt: asyncio.Future[Any] | None = None
    try:
        await asyncio.wait_for(
            conn.initialize(protocol_version=1, client_capabilities=client.capabilities), 60
        )
        sid = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("look")]))
        while (await asyncio.wait_for(process.stderr.readline(), 120)).strip() != b"blocked":
            assert process.returncode is None
        await asyncio.sleep(0.3)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), 30)
        # The turn's 3 s to end (it cannot: its thread is stuck), then the exit.
        assert time.monotonic() - started < 10
        assert code == 128 + signal.SIGTERM
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        if prompt is not None:
            prompt.cancel()
            with contextlib.suppress(BaseException):
                await prompt
        with contextlib.suppress(Exception):
            await conn.close()
        server.stop()
