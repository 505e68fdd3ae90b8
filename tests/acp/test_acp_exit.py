"""How ``agentsh acp`` ends when the editor signals it: like end of input, every session closed
(its log finished, its MCP servers and their process groups stopped) before the exit."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# ``agentsh acp``'s entry point with a server that only records being closed (a real one costs
# a litellm import; what closing a session stops is tested with the MCP client).
HOST = """
import argparse, sys
from pathlib import Path
import agentsh.acp.server as served

class Recorder:
    def __init__(self, options):
        pass
    def on_connect(self, conn):
        print("serving", file=sys.stderr, flush=True)
    async def end_turns(self):
        Path(sys.argv[1]).write_text("turns ended")
    def close(self):
        marker = Path(sys.argv[1])
        marker.write_text(marker.read_text() + ", then closed")

served.AcpServer = Recorder
from agentsh.acp import entry
entry.main(argparse.Namespace(approve=None))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_closes_every_session_before_the_agent_exits(
    tmp_path: Path, signum: signal.Signals
) -> None:
    # Left to the signal's default, the agent vanished at once: nothing was closed, and the
    # editor's MCP servers lived on until their watchdogs noticed (up to 2 s later).
    marker = tmp_path / "closed"
    process = subprocess.Popen(
        [sys.executable, "-c", HOST, str(marker)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == b"serving\n"
        process.send_signal(signum)
        code = process.wait(20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert marker.read_text() == "turns ended, then closed"
    assert code == 128 + signum
    assert process.stdout is not None and process.stdout.read() == b""
