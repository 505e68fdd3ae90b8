"""The tmux driver ends what it started: a pane's program never outlives its test.

A full suite once left an agentsh (and its model worker) running for an hour in a tmux server
that nothing stopped; these drive the driver with programs that make that happen."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.tmux import TmuxPane, _alive, tmux_available

pytestmark = pytest.mark.skipif(not tmux_available(), reason="tmux is not installed")

ROOT = Path(__file__).resolve().parents[2]
DEAF = ["sh", "-c", "trap '' HUP; exec sleep 600"]  # a program that outlives a SIGHUP


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_close_ends_a_program_that_ignores_the_hang_up(tmp_path: Path) -> None:
    pane = TmuxPane(DEAF, cwd=tmp_path, env={})
    pid = pane.pid()
    try:
        assert _alive(pid)
        pane.close(grace=0.2)
        assert _gone_within(pid, 5)
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_a_test_process_that_dies_without_closing_leaves_no_pane_behind(tmp_path: Path) -> None:
    code = (
        "import os, sys; from pathlib import Path; from tests.e2e.tmux import TmuxPane; "
        "pane = TmuxPane(['sleep', '600'], cwd=Path(sys.argv[1]), env={}); "
        "print(pane.pid(), flush=True); os._exit(0)"  # no close, no exit handlers
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pid = int(done.stdout.split()[0])
    try:
        assert _gone_within(pid, 15)
    finally:
        if _alive(pid):
            os.kill(pid, 9)
