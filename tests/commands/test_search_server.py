"""The warm ``agentsh memory search`` process (``search.warm_process_s``, issue 16): it answers
exactly what the command prints, only to its own user, from a folder that is the user's alone,
and it is never started unless the user's own config asks for it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsh.cli import main
from agentsh.commands import search_server
from agentsh.commands.search_server import SearchServer, socket_path
from agentsh.config import load_environment
from agentsh.paths import ProjectPaths, UserPaths
from tests.memory.conftest import write


@pytest.fixture
def short_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An AGENTSH_HOME short enough for a Unix socket path (pytest's tmp paths are not)."""
    home = Path(tempfile.mkdtemp(prefix="ah", dir="/tmp"))
    monkeypatch.setenv("AGENTSH_HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _warm(seconds: float, extra: str = "") -> None:
    write(UserPaths.from_env().config_file, f"[search]\nwarm_process_s = {seconds}\n{extra}")


def test_the_socket_folder_must_be_the_users_alone(short_home: Path) -> None:
    user = UserPaths.from_env()
    path = socket_path(user)
    assert path is not None and path.parent == user.cache_dir / "run"
    assert path.parent.stat().st_mode & 0o777 == 0o700
    path.parent.chmod(0o755)  # others could put a socket of theirs there
    assert socket_path(user) is None
    path.parent.rmdir()
    elsewhere = short_home / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    path.parent.symlink_to(elsewhere)
    assert socket_path(user) is None


def test_a_project_cannot_turn_the_warm_process_on(project: Path, short_home: Path) -> None:
    write(ProjectPaths(project).config_file, "[search]\nwarm_process_s = 600\n")
    env = load_environment(project, trust_project=True)
    assert env.settings.search.warm_process_s == 0
    assert any("warm_process_s" in str(p) for p in env.config.problems)


def test_off_unless_asked_nothing_is_asked_or_started(
    project: Path, short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []
    monkeypatch.setattr(search_server, "ask", lambda *a: called.append("ask"))
    monkeypatch.setattr(search_server, "start_unless_running", lambda *a: called.append("start"))
    write(UserPaths.from_env().config_file, '[search]\nembedding = "none"\n')
    assert main(["memory", "search", "anything"]) == 0
    assert called == []


def test_what_the_server_cannot_answer_exactly_is_a_fallback(
    project: Path, short_home: Path
) -> None:
    path = socket_path(UserPaths.from_env())
    assert path is not None
    server = SearchServer(path, 1)
    request = {"protocol": search_server.PROTOCOL, "cwd": str(project), "query": "x"}
    assert server.answer({**request, "protocol": 0}) == {"status": "fallback"}
    write(UserPaths.from_env().config_file, '[search]\nembedding = "none"\n')
    assert server.answer(request) == {"status": "fallback"}  # keyword-only: said by the command


@pytest.mark.slow
def test_the_warm_process_answers_what_the_command_prints(
    project: Path,
    short_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = ProjectPaths(project).memory_dir
    write(memory / "MEMORY.md", "# Memory\nThe API runs on port 8000.\nRedis is on 6379.")
    write(memory / "deploy.md", "Deploys: helm upgrade, canary 10 % for 30 minutes.")
    _warm(30, "min_score = 7\n")  # a bad value: its warning is printed either way
    started: list[float] = []
    monkeypatch.setattr(search_server, "start_unless_running", lambda _u, s: started.append(s))

    def search(*words: str) -> tuple[str, str]:
        assert main(["memory", "search", *words]) == 0
        printed = capsys.readouterr()
        assert "min_score" in printed.err
        return printed.out, printed.err

    alone = search("which port does the API listen on", "--json")  # no server yet
    assert started == [30]  # the command would start one now
    path = socket_path(UserPaths.from_env())
    assert path is not None
    server = SearchServer(path, idle_s=3)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert path.stat().st_mode & 0o777 == 0o600
    assert search("which port does the API listen on", "--json") == alone
    warm_text = search("helm canary", "-k", "1")
    assert server.answered == 2
    thread.join(30)  # idle for 3 s: it ends, and takes its socket with it
    assert not thread.is_alive() and not path.exists()
    assert search("helm canary", "-k", "1") == warm_text  # the command's own answer
    assert json.loads(alone[0])["mode"] == "hybrid"


def test_a_socket_left_by_a_killed_server_does_not_stop_a_new_one(
    short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **_kw: started.append(argv))
    user = UserPaths.from_env()
    path = socket_path(user)
    assert path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        search_server.start_unless_running(user, 60)
        assert started == []  # one listens: nothing started
    assert path.exists()  # closed without removing its socket, as a killed server leaves it
    search_server.start_unless_running(user, 60)
    assert len(started) == 1 and started[0][-2:] == ["agentsh.commands.search_server", "60"]
