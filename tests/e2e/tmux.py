"""A small driver for programs in a private tmux server: start, type, read the screen.

Each :class:`TmuxPane` runs its own tmux server on a private socket (``tmux -L``), so tests
and benchmarks never touch a user's tmux sessions, and :meth:`TmuxPane.close` ends exactly the
server it started. Used by the end-to-end test and the TUI benchmarks.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


class TmuxPane:
    def __init__(
        self,
        command: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        width: int = 120,
        height: int = 40,
    ) -> None:
        self.socket = f"agentsh-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        shell = f"cd {shlex.quote(str(cwd))} && exec env {exports} {shlex.join(command)}"
        self.started = time.perf_counter()
        self._tmux("new-session", "-d", "-s", "main", "-x", str(width), "-y", str(height), shell)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "main")

    def pid(self) -> int:
        """The process the pane runs (the command itself: the shell ``exec``s it)."""
        return int(self._tmux("list-panes", "-t", "main", "-F", "#{pane_pid}").split()[0])

    def send(self, *keys: str, literal: bool = False) -> None:
        self._tmux("send-keys", "-t", "main", *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.send(text, literal=True)

    def wait_for(
        self, predicate: Callable[[str], bool], timeout: float = 20.0, poll: float = 0.01
    ) -> float:
        """Poll the screen until ``predicate(screen)``; returns seconds since the start."""
        deadline = time.perf_counter() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return time.perf_counter() - self.started
            if time.perf_counter() > deadline:
                raise TimeoutError(f"screen never matched; last screen:\n{screen}")
            time.sleep(poll)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)

    def __enter__(self) -> TmuxPane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptedServerProcess:
    """``python -m tests.fakes.server --script FILE`` as a child process; reads its port."""

    def __init__(self, script: Path, *, root: Path, log: Path | None = None) -> None:
        args = [sys.executable, "-m", "tests.fakes.server", "--script", str(script)]
        if log is not None:
            args += ["--log", str(log)]
        self.process = subprocess.Popen(
            args, cwd=root, stdout=subprocess.PIPE, text=True, stderr=subprocess.DEVNULL
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("PORT="):
            self.close()
            raise RuntimeError(f"the scripted server did not start: {line!r}")
        self.port = int(line.removeprefix("PORT="))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def __enter__(self) -> ScriptedServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
