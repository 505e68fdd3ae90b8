"""The warm model worker: the first model worker of an environment leaves a copy of itself with
litellm loaded, and the front ends that come after get a worker forked from it, not a new
process that imports litellm for seconds.

Real processes throughout: model workers started by :class:`ModelWorker` as a front end starts
them, the warm copy they fork, and calls over HTTP to the scripted server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from agentsh.config import ModelSettings, load_config
from agentsh.llm import remote, warm_worker
from agentsh.llm.client import Completion, LLMError
from agentsh.llm.env import prepare_environment
from agentsh.llm.remote import ModelWorker, RemoteLLMClient
from agentsh.llm.warm_worker import ForkedWorker, WarmServer, forked, socket_path
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.user_socket import CodeWatch
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import Reply, ScriptedServer
from tests.fakes.warm_workers import end_warm_workers, warm_workers, worker_processes

USER = [{"role": "user", "content": "hello"}]


@pytest.fixture
def warm_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home of its own, short enough for a Unix socket path (pytest's tmp paths may not be),
    its runtime folder inside (not the run's, tests/conftest.py), the warm worker gone after 2 s
    of idleness."""
    home = Path(tempfile.mkdtemp(prefix="ah", dir="/tmp"))
    monkeypatch.setenv("AGENTSH_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv(warm_worker.IDLE_VARIABLE, "2")
    yield home
    end_warm_workers(home)
    shutil.rmtree(home, ignore_errors=True)


def _environ() -> dict[str, str]:
    """The environment a model worker of this process starts with."""
    prepare_environment()
    return dict(os.environ)


def _client(server: ScriptedServer, worker: ModelWorker) -> RemoteLLMClient:
    settings = ModelSettings(retry_base_delay_s=0.01, retry_max_delay_s=0.05)
    return RemoteLLMClient(
        TEST_MODEL, settings=settings, api_base=server.base_url, api_key=FAKE_KEY, worker=worker
    )


async def _reply(server: ScriptedServer, worker: ModelWorker) -> str:
    items = [item async for item in _client(server, worker).stream(USER)]
    completion = items[-1]
    assert isinstance(completion, Completion)
    return completion.text


def _until(condition: Any, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


def _parent(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


@pytest.mark.asyncio
async def test_later_front_ends_get_workers_forked_from_the_first_ones_warm_copy(
    scripted_server: ScriptedServer, warm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second model client in this process, then ``agentsh -p`` as a user runs it, both get
    their worker from the warm copy the first worker left. The ``-p`` run's CPU, with every
    process it waited for, is a fraction of the first worker's, which imported litellm (CPU,
    not wall time: a loaded machine slows both alike)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)  # the -p run below: the same environment
    scripted_server.script(
        Reply(text="first"), Reply(text="second"), Reply(text="word " * 400, delay_s=0.05)
    )
    scripted_server.script(Reply(text="after the kill"), Reply(text="from agentsh -p"))
    path = socket_path(_environ())
    assert path is not None
    first = ModelWorker()
    second = ModelWorker()
    try:
        assert await asyncio.wait_for(_reply(scripted_server, first), 120) == "first"
        await asyncio.to_thread(_until, lambda: warm_workers(warm_home), 60)
        [warm] = warm_workers(warm_home)
        # Its socket is the user's alone.
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

        second.start()
        process = second._child.process if second._child else None
        assert isinstance(process, ForkedWorker)
        assert _parent(process.pid) == warm
        assert await asyncio.wait_for(_reply(scripted_server, second), 60) == "second"
        assert second._child is not None and second._child.sent_env == dict(os.environ)

        # A forked worker that dies is reported with its exit code, and the next call gets
        # another one from the warm copy.
        streaming = asyncio.create_task(_reply(scripted_server, second))
        await asyncio.to_thread(_until, lambda: len(scripted_server.requests) >= 3, 30)
        os.kill(process.pid, signal.SIGKILL)
        with pytest.raises(LLMError, match=r"stopped unexpectedly \(exit code -9\)"):
            await asyncio.wait_for(streaming, 30)
        assert await asyncio.wait_for(_reply(scripted_server, second), 60) == "after the kill"
        again = second._child.process if second._child else None
        assert isinstance(again, ForkedWorker) and again.pid != process.pid
        assert _parent(again.pid) == warm

        p_cpu = await asyncio.to_thread(_agentsh_p, scripted_server, warm_home)
    finally:
        second.close()
        before = _children_cpu()
        first.close()  # reaped here: its CPU, the litellm import's, is counted now
        first_cpu = _children_cpu() - before
    assert again.returncode == 0  # it ended when its front end closed the pipe
    assert p_cpu < first_cpu / 3, (p_cpu, first_cpu)
    # With no worker of its environment left, it ends after its idle time (2 s here).
    await asyncio.to_thread(_until, lambda: not worker_processes(warm_home), 30)
    assert not path.exists()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _agentsh_p(server: ScriptedServer, home: Path) -> float:
    """``agentsh -p`` run to its end; the CPU of it and of every process it waited for."""
    project = home / "project"
    project.mkdir()
    command = [sys.executable, "-m", "agentsh", "-m", TEST_MODEL, "--api-base"]
    command += [server.base_url, "-p", "hello"]
    before = _children_cpu()
    run = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=180)
    used = _children_cpu() - before
    assert run.returncode == 0, run.stderr
    assert "from agentsh -p" in run.stdout
    return used


def test_only_the_same_environment_finds_it(warm_home: Path) -> None:
    """What litellm's import read decides which warm copy a front end may use; where a shell
    is (its folder, its terminal), agentsh's own variables and the test running do not."""
    environ = _environ()
    elsewhere = {"PWD": "/else", "TMUX_PANE": "%3", "TERM": "tmux", "VSCODE_PID": "7"}
    elsewhere |= {"AGENTSH_HOME": "/other", "AGENTSH_MODEL": "x/y", "PYTEST_CURRENT_TEST": "t"}
    assert socket_path(environ) == socket_path({**environ, **elsewhere})
    for other in ({"OPENAI_API_BASE": "http://127.0.0.1:9"}, {"LITELLM_MODE": "DEV"}):
        assert socket_path({**environ, **other}) != socket_path(environ)
    home = socket_path(environ)
    assert home is not None and home.parent == warm_home.resolve() / "cache" / "run"


def _no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    def fork() -> int:
        raise AssertionError("forked")

    monkeypatch.setattr(os, "fork", fork)


def test_turned_off_it_is_neither_made_nor_asked(
    warm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {**_environ(), warm_worker.IDLE_VARIABLE: "0"}
    _no_fork(monkeypatch)
    warm_worker.start_from_worker(environ)
    path = socket_path(environ)
    assert path is not None and not path.exists()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        assert forked(environ) is None  # not even asked: nothing connected
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_a_worker_with_a_thread_of_its_own_makes_no_copy(
    warm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy would lack the thread, in the middle of whatever it did."""
    _no_fork(monkeypatch)
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)
    busy.start()
    try:
        warm_worker.start_from_worker(_environ())
    finally:
        stop.set()
        busy.join()


def test_a_socket_nobody_listens_on_leaves_the_front_end_to_start_its_own(
    warm_home: Path,
) -> None:
    environ = _environ()
    path = socket_path(environ)
    assert path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as left:
        left.bind(str(path))  # left by a warm worker that was killed
    started = time.monotonic()
    assert forked(environ) is None
    assert time.monotonic() - started < 1


def test_a_warm_copy_whose_code_changed_forks_nothing_and_ends(
    warm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fork(monkeypatch)

    class Changed:
        def changed(self) -> bool:
            return True

    path = warm_home / "w.sock"
    wakeup, chld = signal.set_wakeup_fd(-1), signal.getsignal(signal.SIGCHLD)
    with contextlib.ExitStack() as stack:
        stack.callback(signal.signal, signal.SIGCHLD, chld)
        stack.callback(signal.set_wakeup_fd, wakeup)
        listener = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        listener.bind(str(path))
        listener.listen(1)
        asking = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        asking.connect(str(path))
        pipes = [os.pipe() for _ in range(3)]
        request = json.dumps({"protocol": warm_worker.PROTOCOL, "cwd": "/"}).encode() + b"\n"
        socket.send_fds(asking, [request], [read for read, _write in pipes])
        creator = os.pidfd_open(os.getpid())
        server = WarmServer(listener, cast(CodeWatch, Changed()), creator, idle_s=30)
        assert server._accept() is False
        assert asking.recv(100) == b""  # told nothing: the front end starts its own worker
        assert not server.children
        for read, write in pipes:
            os.close(read)
            os.close(write)
        os.close(creator)


def test_the_front_ends_process_object_waits_and_kills_like_popen() -> None:
    """:class:`ForkedWorker` stands where a :class:`subprocess.Popen` stood: here around a
    process of our own (the warm copy's part, its exit code, from a socket)."""
    child = subprocess.Popen(["sleep", "30"])
    ours, theirs = socket.socketpair()
    pipes = [os.pipe() for _ in range(3)]
    process = ForkedWorker(
        child.pid, os.pidfd_open(child.pid), ours, pipes[0][1], pipes[1][0], pipes[2][0]
    )
    try:
        assert process.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(0.1)
        process.kill()
        code = child.wait(10)
        theirs.sendall(json.dumps({"exit": code}).encode() + b"\n")
        assert process.wait(10) == -9 and process.poll() == -9
    finally:
        theirs.close()
        for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
            os.close(fd)
        for stream in (process.stdin, process.stdout, process.stderr):
            assert stream is not None
            stream.close()


def test_the_users_config_says_how_long_it_stays_and_a_project_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = UserPaths.from_env()
    user.config_file.parent.mkdir(parents=True, exist_ok=True)
    user.config_file.write_text("[model]\nwarm_worker_s = 0\n")
    project = ProjectPaths(tmp_path / "p")
    project.agentsh_dir.mkdir(parents=True)
    project.config_file.write_text("[model]\nwarm_worker_s = 86400\n")
    loaded = load_config(user, project)
    assert loaded.settings.model.warm_worker_s == 0
    assert [p.key for p in loaded.problems] == ["model.warm_worker_s"]

    monkeypatch.delenv(warm_worker.IDLE_VARIABLE)
    monkeypatch.setattr(warm_worker, "_configured_s", None)
    assert warm_worker.IDLE_VARIABLE not in warm_worker.worker_environment()
    remote.activate(loaded.settings.model.warm_worker_s)
    environ = warm_worker.worker_environment()
    assert environ[warm_worker.IDLE_VARIABLE] == "0" and not warm_worker.enabled(environ)
    monkeypatch.setenv(warm_worker.IDLE_VARIABLE, "60")  # the environment has the last word
    assert warm_worker.worker_environment()[warm_worker.IDLE_VARIABLE] == "60"
