"""Real processes: a writer killed with SIGKILL mid-append, and two processes on one file."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentsh.session.entries import MessageEntry, Role
from agentsh.session.log import SessionLocked, is_locked
from agentsh.session.session import Session

ROOT = Path(__file__).resolve().parents[2]

# Appends numbered messages forever, alternating small and large ones (a large write is the
# likeliest to be cut by the kill), printing each number once its append returned.
WRITER = r"""
import sys
from pathlib import Path
from agentsh.session.entries import Role
from agentsh.session.session import Session

session = Session.open(Path(sys.argv[1]))
print("ready", flush=True)
n = int(sys.argv[2])
while True:
    body = f"#{n} " + ("x" * (100_000 if n % 5 == 0 else 40))
    session.append_message(Role.USER if n % 2 else Role.ASSISTANT, body)
    print(n, flush=True)
    n += 1
"""

# Opens the session (taking its lock), says so, and holds it until stdin closes.
HOLDER = r"""
import sys
from pathlib import Path
from agentsh.session.session import Session

session = Session.open(Path(sys.argv[1]))
print("locked", flush=True)
sys.stdin.read()
session.close()
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def _numbers(session: Session) -> list[int]:
    # The writer appends messages only: anything else on the path fails the isinstance.
    messages = [e for e in session.current_path() if isinstance(e, MessageEntry)]
    assert len(messages) == len(session.current_path())
    return [int(e.content.split()[0][1:]) for e in messages]


def _kill_series(folder: Path, rng: random.Random, kills: int) -> tuple[int, int]:
    """Kill a writer ``kills`` times on one file, checking the file after each kill; then
    append once more. Returns (appends acknowledged, torn lines left in the file)."""
    start = Session.create(folder, Path("/w"))
    start.append_message(Role.USER, "#0 start")
    start.close()
    assert start.path is not None
    path = start.path
    acked_total = 0
    expected = [0]
    torn_seen = 0
    for _ in range(kills):
        writer = _spawn(WRITER, str(path), str(len(expected)))
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.015))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        acked = [int(x) for x in writer.stdout.read().split()]
        writer.stdout.close()
        writer.stdin.close()
        acked_total += len(acked)

        session = Session.open(path, lock=False)
        numbers = _numbers(session)
        # Every acknowledged append is there, in order, with nothing missing in between; at
        # most the one entry being written at the kill is lost (or already complete).
        assert numbers[: len(expected)] == expected
        assert numbers == list(range(len(numbers)))
        assert set(acked) <= set(numbers)
        assert len(numbers) - len(expected) in (len(acked), len(acked) + 1)
        torn = [p for p in session.problems if "incomplete" in p.message]
        assert len(session.problems) == len(torn)  # tears are the only damage a kill can do
        torn_seen = len(torn)
        expected = numbers
    # A later append after all those kills lands on a fresh line and everything still loads.
    session = Session.open(path)
    last = session.append_message(Role.USER, "#-1 after the storm")
    session.close()
    again = Session.open(path, lock=False)
    assert again.current_path()[-1].id == last.id
    assert len(again.problems) == torn_seen
    lines = [line for line in path.read_bytes().split(b"\n") if line]
    assert len(lines) == 1 + len(again.tree.nodes) + torn_seen  # no entry glued to a torn one
    return acked_total, torn_seen


@pytest.mark.timeout(300)  # processes started and killed in turn: 35 s at load 10, > 90 s at 17
def test_sigkill_mid_append_never_loses_a_complete_entry(tmp_path: Path) -> None:
    rng = random.Random(7)
    acked = torn = 0
    for series in range(6):  # 6 files x 5 kills: files stay small, so the test stays fast
        series_acked, series_torn = _kill_series(tmp_path / str(series), rng, kills=5)
        acked += series_acked
        torn += series_torn
    assert acked > 30


def test_a_second_process_cannot_append_and_is_offered_a_fork(tmp_path: Path) -> None:
    session = Session.create(tmp_path, Path("/w"))
    first = session.append_message(Role.USER, "hello")
    session.close()
    assert session.path is not None
    holder = _spawn(HOLDER, str(session.path))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert is_locked(session.path)
        with pytest.raises(SessionLocked, match="another agentsh process") as caught:
            Session.open(session.path)
        assert "Fork" in str(caught.value) and caught.value.path == session.path
        # Reading is fine, and the fork continues in a file of its own.
        view = Session.open(session.path, lock=False)
        fork = view.fork(tmp_path / "forks")
        reply = fork.append_message(Role.ASSISTANT, "continued in the fork")
        fork.close()
        assert fork.path is not None and fork.header.parent_session == session.id
        loaded = Session.open(fork.path, lock=False)
        assert [e.id for e in loaded.current_path()] == [first.id, reply.id]
        assert session.path.read_bytes().count(b"\n") == 2  # the original is untouched
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
    assert not is_locked(session.path)
    reopened = Session.open(session.path)  # the lock went with the process
    reopened.close()


def test_the_same_file_cannot_be_opened_for_appending_twice_in_one_process(
    tmp_path: Path,
) -> None:
    session = Session.create(tmp_path, Path("/w"))
    session.append_message(Role.USER, "hello")
    assert session.path is not None
    with pytest.raises(SessionLocked):
        Session.open(session.path)
    session.close()
    Session.open(session.path).close()


def test_a_locked_file_is_not_read_before_the_lock_is_held(tmp_path: Path) -> None:
    # A refused open must not have loaded (and so could not act on) a stale tree: the error
    # comes from the lock, before any parsing, even for a file that would not parse.
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"garbage\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(SessionLocked):
            Session.open(path)
    finally:
        os.close(fd)
