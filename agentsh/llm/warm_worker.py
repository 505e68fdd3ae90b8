"""The warm model worker: a process of the user's with litellm loaded, which forks a ready model
worker for each front end that asks, in milliseconds instead of the seconds ``import litellm``
costs (5 s of CPU on a quiet 2-core machine, more under load).

Where it comes from. The first model worker of an environment (:mod:`agentsh.llm.worker`)
imports litellm and makes its warm-up call as always; then it forks this process off itself
(:func:`start_from_worker`, twice, so it belongs to no front end and no terminal). The copy
shares the worker's memory pages, and pays no import of its own. A second TUI, an ``agentsh -p``
or an ACP agent started afterwards with the same environment asks it for a worker
(:func:`forked`) and gets one already past its import: its first request leaves at once.

How a front end gets a worker. It makes the three pipes a worker's stdin, stdout and stderr
would be and sends their far ends over the socket (``SCM_RIGHTS``). The server forks; the child
takes the pipes as its standard streams and serves the front end exactly as a worker it had
started itself (the same protocol; its environment is the front end's, sent with the first
request). The server answers with the child's pid and a pidfd, and keeps the connection to
report the child's exit code. When anything fails (no server, a server busy or stale) the front
end starts its own worker as before: nothing waits on this process.

Trust. The socket is in the user's runtime folder (:mod:`agentsh.user_socket`: 0700, the user's
own, not a link, never a path a project chooses), bound 0600, and each side checks the other's
uid. Its name holds a digest of what the worker's import depended on: the interpreter, agentsh's
folder and the whole environment but for a few variables that only say which terminal or folder
a shell is in, agentsh's own (read at each call, from the environment the front end sends) and
a test runner's (:data:`VOLATILE`), so a front end never gets a worker whose litellm was loaded
with other settings, keys or proxies. Each child serves one front end and ends with it, so
nothing one session did reaches another. The server runs in ``/``; it holds no project file, no
conversation, and runs no call itself. It ends when agentsh's or litellm's code changes on disk,
and :data:`IDLE_S` seconds (the user's ``model.warm_worker_s``, or ``AGENTSH_WARM_WORKER_S``)
after the last worker of its environment (its first one included) has ended; 0 turns it off.
A project's config cannot set it.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from agentsh.user_socket import (
    PACKAGE,
    CodeWatch,
    bound,
    listening,
    peer_uid,
    read_line,
    runtime_folder,
    socket_in,
)

PROTOCOL = 1
# Seconds the warm worker outlives the last worker of its environment; 0: never ask for one,
# nor start one. Read from the user's environment only.
IDLE_VARIABLE = "AGENTSH_WARM_WORKER_S"
IDLE_S = 300.0
HANDSHAKE_S = 3.0  # a front end waits this long for its worker, then starts its own
# Variables that say where a shell is and in which terminal, not how litellm loads: left out of
# the socket's name, so agentsh in another folder, tab, pane or terminal program finds the warm
# worker another left. So are agentsh's own variables (``AGENTSH_MODEL``, ``AGENTSH_HOME``...):
# litellm never reads them, and a worker reads them at each call from the environment its front
# end sent; and pytest's, which name the test running when a test suite starts agentsh (each
# test would otherwise pay the import again). Every other variable is in it.
VOLATILE = frozenset(
    {
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
        "TERM",
        "COLORTERM",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "TERM_SESSION_ID",
        "SHELL_SESSION_ID",
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
        "WINDOWID",
        "WT_SESSION",
        "COLUMNS",
        "LINES",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "SSH_TTY",
        "GPG_TTY",
        "XDG_SESSION_ID",
        "PROMPT_COMMAND",
    }
)
VOLATILE_PREFIXES = (
    *("VSCODE_", "ITERM_", "KITTY_", "WEZTERM_", "ALACRITTY_", "KONSOLE_"),
    *("AGENTSH_", "PYTEST_"),
)


def idle_s(environ: Mapping[str, str]) -> float:
    """How long the warm worker for ``environ`` stays once no worker of it runs (0: off)."""
    try:
        value = float(environ.get(IDLE_VARIABLE, "") or IDLE_S)
    except ValueError:
        return IDLE_S
    return value if value > 0 else 0.0


def enabled(environ: Mapping[str, str]) -> bool:
    """On unless turned off; only where processes have pidfds (Linux 5.3 and later)."""
    return idle_s(environ) > 0 and hasattr(os, "pidfd_open")


_configured_s: float | None = None  # the user's ``model.warm_worker_s``, once a front end read it


def configure(seconds: float) -> None:
    """The user's config says how long the warm worker stays (:data:`IDLE_VARIABLE` in the
    environment, when set, says it instead)."""
    global _configured_s
    _configured_s = seconds


def worker_environment() -> dict[str, str]:
    """The environment a model worker of this process starts with: this process's, and the
    user's ``model.warm_worker_s`` unless the environment names it."""
    environ = dict(os.environ)
    if _configured_s is not None:
        environ.setdefault(IDLE_VARIABLE, f"{_configured_s:g}")
    return environ


def socket_path(environ: Mapping[str, str]) -> Path | None:
    """The socket of the warm worker for a worker started with ``environ``."""
    digest = hashlib.sha256(f"{PROTOCOL}\0{sys.executable}\0{PACKAGE}".encode())
    for name in sorted(environ):
        if name not in VOLATILE and not name.startswith(VOLATILE_PREFIXES):
            digest.update(f"\0{name}={environ[name]}".encode())
    return socket_in(runtime_folder(), f"model-{digest.hexdigest()[:20]}.sock")


# -- the front end's side ---------------------------------------------------------------------


class ForkedWorker:
    """A worker the warm process forked for us: what :class:`subprocess.Popen` offers the model
    client (its pipes, pid, poll, wait, kill), for a process that is not our child. Its exit is
    seen on a pidfd; the code comes from the server, which is its parent."""

    def __init__(
        self, pid: int, pidfd: int, conn: socket.socket, stdin: int, stdout: int, stderr: int
    ) -> None:
        self.pid = pid
        self.args = ["warm model worker"]
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._conn = conn
        self._lock = threading.Lock()  # the model client's reader thread and close() both wait
        self.stdin: IO[bytes] | None = os.fdopen(stdin, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(stdout, "rb")
        self.stderr: IO[bytes] | None = os.fdopen(stderr, "rb")

    def poll(self) -> int | None:
        if self.returncode is None and _readable(self._pidfd, 0):
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not _readable(self._pidfd, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._ended()
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        with self._lock:  # never through a pidfd another thread has just closed
            if self.returncode is None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def _ended(self) -> None:
        """It has exited: its code, as the server (its parent) reports it; -1 if it cannot."""
        with self._lock:
            if self.returncode is None:
                self._collect()

    def _collect(self) -> None:
        code = -1
        with contextlib.suppress(OSError, ValueError):
            self._conn.settimeout(0.5)  # the server reaps it at once: woken by SIGCHLD
            reply = json.loads(read_line(self._conn))
            if isinstance(reply, dict) and isinstance(reply.get("exit"), int):
                code = reply["exit"]
        self.returncode = code
        self._conn.close()
        with contextlib.suppress(OSError):
            os.close(self._pidfd)


def forked(environ: Mapping[str, str]) -> ForkedWorker | None:
    """A worker forked by the warm process for ``environ``, or None (off, none runs, it failed):
    the caller then starts its own."""
    if not enabled(environ):
        return None
    path = socket_path(environ)
    if path is None or not path.exists():
        return None
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    stderr_read, stderr_write = os.pipe()
    ours = [stdin_write, stdout_read, stderr_read]
    theirs = [stdin_read, stdout_write, stderr_write]  # the child's stdin, stdout, stderr
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(HANDSHAKE_S)
        conn.connect(str(path))
        if peer_uid(conn) != os.getuid():
            raise OSError("the warm worker's socket is not the user's")
        request = {"protocol": PROTOCOL, "cwd": str(Path.cwd())}  # the worker runs there
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], theirs)
        data, fds, _flags, _address = socket.recv_fds(conn, 4096, 1)
        reply = json.loads(data) if data else None
        if not isinstance(reply, dict) or not isinstance(reply.get("pid"), int) or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise OSError("the warm worker did not fork")
    except (OSError, ValueError):
        conn.close()
        for fd in ours:
            os.close(fd)
        return None
    finally:
        for fd in theirs:  # the child has its copies (or there is no child)
            os.close(fd)
    os.set_inheritable(fds[0], False)  # received as inheritable: no program we start gets it
    conn.settimeout(None)
    return ForkedWorker(int(reply["pid"]), fds[0], conn, *ours)


def _readable(fd: int, timeout: float | None) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


# -- the worker's side: how the warm process comes to be --------------------------------------


def start_from_worker(environ: Mapping[str, str]) -> None:
    """Called by a model worker started with ``environ`` once litellm is loaded and warm, from a
    moment when no call runs: unless one already listens for that environment (or the user
    turned it off), fork the warm process off this one. Returns at once in the worker."""
    if not enabled(environ) or _other_threads():
        return
    path = socket_path(environ)
    if path is None or listening(path):
        return
    creator = os.getpid()
    try:
        middle = os.fork()
    except OSError:
        return
    if middle:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(middle, 0)  # it exits as soon as it has forked the server
        return
    # The middle process: a session of its own, and a child that init adopts.
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        _become_server(path, dict(environ), creator)
    finally:
        os._exit(0)


def _other_threads() -> bool:
    """A thread besides this one and the worker's event loop: the copy would lack it, mid-work
    (litellm's logging threads, were its warm-up to start them), so no copy is made."""
    here, loop = threading.current_thread(), threading.main_thread()
    return any(thread not in (here, loop) for thread in threading.enumerate())


def _become_server(path: Path, environ: dict[str, str], creator: int) -> None:
    """Drop everything the worker had open (its pipes to a front end above all: that front end
    must see them close when its worker ends), then serve."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, _max_fd())
    _standard_streams()
    os.chdir("/")
    os.environ.clear()
    os.environ.update(environ)
    try:
        creator_fd = os.pidfd_open(creator)
    except OSError:
        return  # the worker has already gone: nobody to follow
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # the children share these pages; a collection there would copy them
    watch = CodeWatch((PACKAGE, *_litellm_folder()))
    watch.note()
    with bound(path) as listener:
        if listener is not None:
            WarmServer(listener, watch, creator_fd, idle_s(environ)).serve()


def _standard_streams() -> None:
    """``sys.stdin``, ``stdout`` and ``stderr`` on descriptors 0-2 again: the worker had moved
    its own elsewhere (descriptors closed since)."""
    sys.stdin = os.fdopen(0, "r", closefd=False)
    sys.stdout = os.fdopen(1, "w", closefd=False)
    sys.stderr = os.fdopen(2, "w", closefd=False)


def _litellm_folder() -> list[Path]:
    module = sys.modules.get("litellm")
    origin = getattr(module, "__file__", None)
    return [Path(origin).parent] if isinstance(origin, str) else []


def _max_fd() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 65536)
    except (OSError, ValueError):
        return 1024


# -- the server -------------------------------------------------------------------------------


class WarmServer:
    """Forks a worker for each front end that asks; ends once its code changed, or once
    ``idle_s`` has passed with no worker of its environment running."""

    def __init__(
        self, listener: socket.socket, watch: CodeWatch, creator_fd: int, idle_s: float
    ) -> None:
        self.listener = listener
        self.idle_s = idle_s
        self.watch = watch
        self.children: dict[int, socket.socket] = {}  # pid -> the connection to report its exit
        self._creator_fd: int | None = creator_fd
        wake_read, wake_write = socket.socketpair()
        wake_read.setblocking(False)
        wake_write.setblocking(False)
        self._wake = wake_read
        self._wake_write = wake_write
        signal.set_wakeup_fd(wake_write.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wake-up fd tells the loop

    def serve(self) -> None:
        idle_since: float | None = None
        while True:
            self._reap()
            if self._creator_fd is not None and _readable(self._creator_fd, 0):
                os.close(self._creator_fd)
                self._creator_fd = None
            if self._creator_fd is None and not self.children:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= self.idle_s:
                    return
            else:
                idle_since = None
            watched = [self.listener.fileno(), self._wake.fileno()]
            if self._creator_fd is not None:
                watched.append(self._creator_fd)
            ready = select.select(watched, [], [], min(5.0, self.idle_s))[0]
            if self._wake.fileno() in ready:
                with contextlib.suppress(OSError):
                    while self._wake.recv(512):
                        pass
            if self.listener.fileno() in ready and not self._accept():
                return

    def _accept(self) -> bool:
        """One front end's request; False when this server must end (its code changed)."""
        conn, _address = self.listener.accept()
        fds: list[int] = []
        try:
            conn.settimeout(HANDSHAKE_S)
            if peer_uid(conn) != os.getuid():
                conn.close()
                return True
            data, fds, _flags, _address = socket.recv_fds(conn, 65536, 3)
            request = json.loads(data)
            if self.watch.changed():
                conn.close()
                return False
            if (
                not isinstance(request, dict)
                or request.get("protocol") != PROTOCOL
                or len(fds) != 3
            ):
                conn.close()
                return True
            self._fork(conn, fds, str(request.get("cwd", "/")))
        except (OSError, ValueError):
            conn.close()
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def _fork(self, conn: socket.socket, fds: list[int], cwd: str) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                self._be_worker(fds, cwd)
            except BaseException:  # noqa: BLE001 - said on stderr: the front end shows the tail
                import traceback

                traceback.print_exc()
            finally:
                os._exit(1)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)
        conn.settimeout(None)
        self.children[pid] = conn

    def _be_worker(self, fds: list[int], cwd: str) -> None:
        """In the child: the front end's pipes become its standard streams; then it is a model
        worker like any other, litellm already loaded."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, _max_fd())  # the listener, the other front ends' connections
        _standard_streams()
        try:
            os.chdir(cwd)
        except OSError:
            os.chdir("/")
        from agentsh.llm import worker

        worker.main(warm=True)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                conn.sendall(b"\n")
            conn.close()
