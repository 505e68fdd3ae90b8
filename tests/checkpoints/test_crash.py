"""kill -9 in the middle of a restore: every file is old or new, the session log loads, and the
next restore finishes the job."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsh.session.session import Session
from tests.checkpoints.conftest import Driver, files_of

FILES = 600


@pytest.mark.slow
def test_a_restore_killed_midway_leaves_each_file_old_or_new(driver: Driver, repo: Path) -> None:
    names = [f"data/f{i:04d}.txt" for i in range(FILES)]
    old = {name: f"old {name}\n" * 200 for name in names}
    new = {name: f"new {name}\n" * 200 for name in names}

    def write(contents: dict[str, str]) -> None:
        for name, text in contents.items():
            path = repo / name
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)

    write(old)
    driver.checkpointer.checkpoint(driver.session, "tool")
    start = driver.user("rewrite everything")
    driver.tool("bash", lambda: write(new))
    session_id, path = driver.session.id, driver.session.path
    driver.session.close()
    driver.checkpointer.close()
    assert path is not None

    command = [sys.executable, "-m", "agentsh", "restore", session_id[:8], start.id]
    proc = subprocess.Popen(command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = repo / names[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if first.read_text() == old[names[0]]:
            break
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    now = {name: text for name, text in files_of(repo).items() if name.startswith("data/")}
    # A kill between a temporary file's creation and its rename leaves it behind: it is no
    # checkpointed file, and the next capture sweeps it (checked at the end).
    now = {name: text for name, text in now.items() if "/.agentsh-restore-" not in name}
    assert set(now) == set(names)  # no file lost
    states = {
        ("old" if text == old[name] else "new" if text == new[name] else "torn")
        for name, text in now.items()
    }
    assert "torn" not in states
    assert states == {"old", "new"}, "the kill should land in the middle of the restore"

    session = Session.open(path, lock=False)
    assert session.problems == []
    session.close()
    again = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert {n: t for n, t in files_of(repo).items() if n.startswith("data/")} == old
    assert not list(repo.rglob(".agentsh-restore-*"))
