"""A small driver for programs in a private tmux server: start, type, read the screen.

Each :class:`TmuxPane` runs its own tmux server on a private socket (``tmux -L``), so tests
and benchmarks never touch a user's tmux sessions, and :meth:`TmuxPane.close` ends exactly the
server it started. Used by the end-to-end test and the TUI benchmarks.

The tmux server is a daemon: nothing ends it with the test. A pane left behind keeps its
program alive, in a terminal nobody reads, for ever (a full suite once left an agentsh and its
model worker running for an hour). So :meth:`TmuxPane.close` waits for the pane's program to
end after the server's SIGHUP and kills its process group if it does not, a pane that fails to
start is closed at once, and a watchdog process closes the pane when the test process dies
without closing it (a crash, a kill, a timeout that ends the worker).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

#: a little over agentsh.tui.key_grace.GRACE_S (the tests' own conftest sets that to 0)
ANSWER_AFTER_S = 0.7


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
        self._pid = 0
        self._watchdog: subprocess.Popen[bytes] | None = None
        try:
            size = ["-x", str(width), "-y", str(height)]
            self._tmux("new-session", "-d", "-s", "main", *size, shell, timeout=60)
            with contextlib.suppress(ValueError, IndexError):  # it ended at once: nothing to end
                self._pid = self.pid()
            self._watchdog = self._start_watchdog()
        except BaseException:
            self.close()  # a server that started must not outlive a failed start
            raise

    def _tmux(self, *args: str, timeout: float = 10) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=timeout
        )
        return done.stdout

    def _start_watchdog(self) -> subprocess.Popen[bytes]:
        """A process that waits for end of input, then ends the server and the pane's group:
        the input closes when :meth:`close` closes it or when the test process dies."""
        group = f"kill -KILL -- -{self._pid} 2>/dev/null" if self._pid else ":"
        script = f"read _; tmux -L {self.socket} kill-server 2>/dev/null; sleep 5; {group}"
        return subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the test's process group does not reach it
        )

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "main")

    def pid(self) -> int:
        """The process the pane runs (the command itself: the shell ``exec``s it)."""
        return int(self._tmux("list-panes", "-t", "main", "-F", "#{pane_pid}").split()[0])

    def send(self, *keys: str, literal: bool = False) -> None:
        self._tmux("send-keys", "-t", "main", *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.send(text, literal=True)

    def answer(self, *keys: str) -> None:
        """Answer a question just drawn (trust, restore, branch summary): it takes a key as an
        answer only once the typing paused for half a second after it appeared (keys typed
        ahead are text: agentsh.tui.key_grace), and it is drawn after that wait began."""
        time.sleep(ANSWER_AFTER_S)
        self.send(*keys)

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

    def close(self, grace: float = 10.0) -> None:
        """End the server (its SIGHUP lets the program finish its work), wait up to ``grace``
        seconds for the pane's program to end, then kill its process group."""
        # (a loaded machine may time the client out: the group is killed below all the same)
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run(
                ["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30
            )
        if self._pid:
            deadline = time.monotonic() + grace
            while _alive(self._pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signal.SIGKILL)  # the program, or what it left in its group
            self._pid = 0
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:  # its job is done: it must not kill anything later
            watchdog.kill()
            watchdog.wait()
            assert watchdog.stdin is not None
            watchdog.stdin.close()

    def __enter__(self) -> TmuxPane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet has ended: a container's init may never reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


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
