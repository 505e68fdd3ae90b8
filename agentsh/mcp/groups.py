"""The process groups of stdio MCP servers, so nothing a server started outlives agentsh.

The SDK starts each server in a new session (its own process group) and, when closing, kills
that group only if the server itself does not exit within two seconds of losing its stdin. A
server that exits at once but left children behind (a ``sleep``, a ``node`` worker, anything
started by an ``npx`` wrapper) leaves them orphaned. So agentsh learns each server's process
group (the server's pid: see :data:`ANNOUNCE`) and signals the whole group whenever the
connection ends, and once more, synchronously, as the process exits (:func:`kill_all_now`).
And for the exits where nothing runs any more (SIGKILL, a hang-up ending in ``os._exit``, a
crash), each group carries a watchdog: a tiny shell loop that kills its whole group once
agentsh's process is gone (within :data:`WATCH_INTERVAL_S`).

A group id is never reused while any process is still in the group, so signalling a tracked
group cannot hit an unrelated process while there is something left to stop.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path

# The server is started as ``/bin/sh -c LAUNCH agentsh-mcp <agentsh pid> command args...``: the
# shell writes its pid on stderr (the server's log), starts the watchdog in the background
# (away from the server's pipes, so it never holds them open), and execs the server in its
# place, keeping that pid, which is also the group id. Only public SDK API is needed, and the
# command line shown is unchanged.
SHELL = "/bin/sh"
MARKER = "agentsh-mcp-pid"
WATCH_INTERVAL_S = 2
LAUNCH = (
    f'echo "{MARKER} $$" >&2; watched=$1; shift; '
    f'(while kill -0 "$watched" 2>/dev/null; do sleep {WATCH_INTERVAL_S}; done; kill -s KILL 0) '
    '</dev/null >/dev/null 2>&1 & exec "$@"'
)


def wrapped(command: str, args: list[str]) -> tuple[str, list[str]]:
    """The launch shell's command line for a server's ``command`` and ``args``."""
    return SHELL, ["-c", LAUNCH, "agentsh-mcp", str(os.getpid()), command, *args]


_TERM_GRACE_S = 1.0

_lock = threading.Lock()
_live: set[int] = set()


def supported() -> bool:
    return os.name == "posix" and Path(SHELL).exists()


def track(pgid: int) -> None:
    with _lock:
        _live.add(pgid)


def untrack(pgid: int) -> None:
    with _lock:
        _live.discard(pgid)


def tracked() -> frozenset[int]:
    with _lock:
        return frozenset(_live)


def _signal(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when the group is empty (or not ours)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. A zombie does not count: it is a member until
    its parent reaps it, and the server that would have is gone (where /proc tells states)."""
    return pgid in alive_groups((pgid,))


def alive_groups(pgids: Iterable[int]) -> set[int]:
    """Those of ``pgids`` with a process that still runs, from one pass over /proc (a pass
    costs tens of milliseconds on a busy machine: one per poll, not one per group)."""
    wanted = {pgid for pgid in pgids if pgid > 1 and _signal(pgid, 0)}
    proc = Path("/proc")
    if not wanted or not proc.is_dir():
        return wanted
    alive: set[int] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != "Z" and fields[2].isdigit():
            group = int(fields[2])
            if group in wanted:
                alive.add(group)
                if alive == wanted:
                    break
    return alive


async def stop_group(pgid: int, grace: float = _TERM_GRACE_S) -> None:
    """SIGTERM to everything left in the group, SIGKILL after ``grace``; then forget it."""
    await stop_groups((pgid,), grace)


async def stop_groups(pgids: Iterable[int], grace: float = _TERM_GRACE_S) -> None:
    """:func:`stop_group` for several groups at once: all signalled together, one /proc pass
    per poll, made off the event loop (the MCP loop keeps serving the other servers)."""
    import anyio  # the MCP loop has it loaded; importing this module must stay light

    targets = [pgid for pgid in set(pgids) if pgid > 1]
    try:
        left = [pgid for pgid in targets if _signal(pgid, signal.SIGTERM)]
        deadline = time.monotonic() + grace
        # Nothing signals that a group has emptied; polling is the only way.
        while left:
            try:
                alive = await anyio.to_thread.run_sync(alive_groups, left)
            except RuntimeError:  # no new thread at interpreter shutdown (3.12+): scan here
                alive = alive_groups(left)
            left = [pgid for pgid in left if pgid in alive]
            if not left or time.monotonic() >= deadline:
                break
            await anyio.sleep(0.02)
        for pgid in left:
            _signal(pgid, signal.SIGKILL)
    finally:
        for pgid in targets:
            untrack(pgid)


def kill_all_now() -> None:
    """SIGKILL every group still tracked: the last word at exit, when nothing can wait."""
    with _lock:
        groups = list(_live)
        _live.clear()
    for pgid in groups:
        if pgid > 1:
            _signal(pgid, signal.SIGKILL)


def announced_pid(text: str) -> int | None:
    """The pid the launch shell wrote in the server's log (its first such line)."""
    for line in text.splitlines():
        if line.startswith(MARKER + " "):
            value = line[len(MARKER) + 1 :].strip()
            return int(value) if value.isdigit() else None
    return None
