"""Process groups of stdio servers: a group of zombies is a group that is gone."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from agentsh.mcp import groups

PARENT_OF_A_ZOMBIE = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os._exit(0)\n"  # the child exits; the parent never reaps it
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


@pytest.mark.skipif(not groups.supported(), reason="POSIX process groups")
def test_a_group_whose_processes_all_exited_is_not_alive() -> None:
    leader = subprocess.Popen(
        [sys.executable, "-c", PARENT_OF_A_ZOMBIE],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert leader.stdout is not None and leader.stdout.readline() == "ready\n"
        assert groups.group_alive(leader.pid)  # the leader runs, beside its zombie child
        leader.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 5
        while groups.group_alive(leader.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        # Only zombies are left (the leader, unreaped until wait() below, and its child):
        # waiting for them to "exit" would wait for ever.
        assert not groups.group_alive(leader.pid)
    finally:
        leader.kill()
        leader.wait()
