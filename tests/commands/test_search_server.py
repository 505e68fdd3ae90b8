"""The warm ``agentsh memory search`` process (``search.warm_process_s``, on by default, issue
16): it answers exactly what the command prints, only to its own user, from a folder that is
the user's alone; only the user's own config or environment turns it off, and a search it
answers loads nothing heavy in the command's process."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh import trust
from agentsh.cli import main
from agentsh.commands import search_server
from agentsh.commands.search_server import SearchServer, socket_path
from agentsh.config import load_environment
from agentsh.memory import ranking
from agentsh.paths import ProjectPaths, UserPaths
from agentsh.user_socket import read_line
from tests.memory.conftest import write


@pytest.fixture
def short_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An AGENTSH_HOME short enough for a Unix socket path (pytest's tmp paths are not), and
    the warm process not turned off (tests/conftest.py turns it off for every other test)."""
    home = Path(tempfile.mkdtemp(prefix="ah", dir="/tmp"))
    monkeypatch.setenv("AGENTSH_HOME", str(home))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv(search_server.OFF_VARIABLE, raising=False)
    yield home
    shutil.rmtree(home, ignore_errors=True)


def _user_config(text: str) -> None:
    write(UserPaths.from_env().config_file, text)


def _serving(idle_s: float) -> tuple[SearchServer, threading.Thread, Path]:
    path = socket_path(UserPaths.from_env())
    assert path is not None
    server = SearchServer(path, idle_s=idle_s)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return server, thread, path


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The warm processes started (recorded, not run); other programs (git) run."""
    started: list[list[str]] = []
    real = subprocess.Popen

    def popen(argv: list[str], **kwargs: Any) -> object:
        if "agentsh.commands.search_server" in argv:
            started.append(argv)
            return None
        return real(argv, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    return started


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


def _folder(user: UserPaths) -> Path:
    """The folder of the user's socket (there is one: the folder is safely theirs)."""
    path = socket_path(user)
    assert path is not None
    return path.parent


def test_the_users_runtime_folder_is_used_when_it_is_theirs_alone(
    short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = UserPaths.from_env()
    runtime = short_home / "rt"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    path = socket_path(user)
    assert path is not None and path.parent == runtime / "agentsh"
    assert path.parent.stat().st_mode & 0o777 == 0o700
    runtime.chmod(0o777)  # a shared folder, or one named by a relative path: not used
    assert _folder(user) == user.cache_dir / "run"
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "rt")
    assert _folder(user) == user.cache_dir / "run"
    link = short_home / "link"
    link.symlink_to(runtime)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(link))
    assert _folder(user) == user.cache_dir / "run"


def test_a_project_cannot_turn_the_warm_process_on_or_off(project: Path, short_home: Path) -> None:
    write(ProjectPaths(project).config_file, "[search]\nwarm_process_s = 0\n")
    env = load_environment(project, trust_project=True)
    assert env.settings.search.warm_process_s == 300  # on by default, the user's to change
    assert any("warm_process_s" in str(p) for p in env.config.problems)
    _user_config("[search]\nwarm_process_s = 0\n")
    assert load_environment(project, trust_project=True).settings.search.warm_process_s == 0


def test_the_first_search_starts_it_unless_the_user_says_no(
    project: Path, short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ProjectPaths(project).memory_dir / "MEMORY.md", "The API runs on port 8000.")
    started = _spawned(monkeypatch)
    assert main(["memory", "search", "port"]) == 0
    assert len(started) == 1 and started[0][-2:] == ["agentsh.commands.search_server", "300"]
    _user_config("[search]\nwarm_process_s = 0\n")
    assert main(["memory", "search", "port"]) == 0
    monkeypatch.setenv(search_server.OFF_VARIABLE, "1")
    _user_config("")
    assert main(["memory", "search", "port"]) == 0
    _user_config('[search]\nembedding = "none"\n')  # keyword-only: nothing it could answer
    monkeypatch.delenv(search_server.OFF_VARIABLE)
    assert main(["memory", "search", "port"]) == 0
    assert len(started) == 1


def test_what_the_server_cannot_answer_exactly_is_a_fallback(
    project: Path, short_home: Path
) -> None:
    path = socket_path(UserPaths.from_env())
    assert path is not None
    server = SearchServer(path, 1)
    request = {"protocol": search_server.PROTOCOL, "cwd": str(project), "query": "x"}
    assert server.answer({**request, "protocol": 0}) == {"status": "fallback"}
    assert server.answer({**request, "cwd": "project"}) == {"status": "fallback"}
    _user_config('[search]\nembedding = "none"\n')
    assert server.answer(request) == {"status": "fallback"}  # keyword-only: said by the command
    assert not server._stop
    _user_config("[search]\nwarm_process_s = 0\n")  # turned off since it started: it ends
    assert server.answer(request) == {"status": "fallback"}
    assert server._stop


def test_a_server_whose_code_changed_ends_at_the_next_search(
    project: Path, short_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "agentsh"
    package.mkdir()
    module = package / "ranking.py"
    module.write_text("WEIGHT = 1\n")
    monkeypatch.setattr(search_server, "_PACKAGE", package)
    monkeypatch.setitem(sys.modules, "fake_ranking", types.SimpleNamespace(__file__=str(module)))
    path = socket_path()
    assert path is not None
    server = SearchServer(path, 60)
    server._code.note()
    assert not server._code.changed()
    module.write_text("WEIGHT = 20\n")
    request = {"protocol": search_server.PROTOCOL, "cwd": str(project), "query": "x"}
    assert server.answer(request) == {"status": "fallback"}
    assert server._stop  # the command searches with the new code, and starts a new server


def test_the_server_checks_trust_with_the_files_the_command_checks(
    short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = [s for s in trust.sources() if s.__module__ == "agentsh.trust"]
    monkeypatch.setattr(trust, "_SOURCES", list(base))  # as in a new `python -m` process
    monkeypatch.setattr(trust, "_memo", None)
    monkeypatch.setattr(SearchServer, "serve", lambda self: None)
    assert search_server.main(["5"]) == 0
    added = {f"{s.__module__}.{s.__name__}" for s in trust.sources()} - {
        f"{s.__module__}.{s.__name__}" for s in base
    }
    assert trust._memo is not None  # and it keeps what memory files held while unchanged
    assert added == {
        "agentsh.mcp.server_trust.mcp_findings",
        "agentsh.tools.git_armed.git_findings",
    }


def test_a_search_it_answers_loads_nothing_heavy_in_the_command(
    project: Path, short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command asks before the trust check, the config and the memory modules load."""
    runtime = short_home / "rt"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    path = socket_path()
    assert path is not None
    asked: list[dict[str, object]] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                asked.append(json.loads(read_line(conn)))
                reply = {"status": "ok", "stdout": "1. warm answer\n", "stderr": ""}
                conn.sendall(json.dumps(reply).encode() + b"\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        program = (
            "import sys\nfrom agentsh.cli import main\n"
            "code = main(['memory', 'search', 'which port', '-k', '2'])\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('numpy', 'agentsh.config',"
            " 'agentsh.memory', 'agentsh.trust', 'agentsh.mcp', 'agentsh.tools',"
            " 'agentsh.paths', 'subprocess')))\n"
            "print(code, heavy, file=sys.stderr)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", program],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
        thread.join(10)
    assert done.stdout == "1. warm answer\n"
    assert done.stderr.strip().splitlines()[-1] == "0 []", done.stderr
    assert asked[0]["query"] == "which port" and asked[0]["k"] == 2
    assert asked[0]["cwd"] == str(project)


@pytest.mark.slow
def test_the_warm_process_answers_what_the_command_prints(
    project: Path,
    short_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same bytes, same ranking, same scores: queries in English, Korean and mixed, with -k
    and --json, after a note changes, and with the configuration's warnings."""
    memory = ProjectPaths(project).memory_dir
    write(memory / "MEMORY.md", "# Memory\nThe API runs on port 8000.\nRedis is on 6379.")
    write(memory / "deploy.md", "Deploys: helm upgrade, canary 10 % for 30 minutes.")
    write(memory / "ko.md", "# 배포\n배포는 태그를 푸시하면 시작된다.\nRollback: helm rollback.")
    for i in range(6):
        body = "\n".join(
            f"note {i}.{j}: redis cache {j} expires, port {8000 + j}" for j in range(30)
        )
        write(memory / "notes" / f"n{i}.md", body)
    _user_config("[search]\nwarm_process_s = 3\nmin_score = 7\n")  # a bad value: its warning
    monkeypatch.setattr(search_server, "start_unless_running", lambda _u, _s: None)
    # Older files decay by age: one clock for both runs, or a slow machine's seconds between
    # them can move a score across its printed rounding.
    now = time.time()
    monkeypatch.setattr(ranking, "time", types.SimpleNamespace(time=lambda: now))
    queries = [
        ["which port does the API listen on", "--json"],
        ["helm canary", "-k", "1"],
        ["배포 태그", "--json"],
        ["redis 캐시 expiry", "-k", "3", "--json"],
        ["port"],
    ]

    def search(words: list[str], *, warm: bool) -> tuple[str, str]:
        if warm:
            monkeypatch.delenv(search_server.OFF_VARIABLE, raising=False)
        else:
            monkeypatch.setenv(search_server.OFF_VARIABLE, "1")
        assert main(["memory", "search", *words]) == 0
        printed = capsys.readouterr()
        assert "min_score" in printed.err
        return printed.out, printed.err

    # Every vector first: the command waits 20 s for them, then ranks what it has by keywords,
    # and on a loaded machine the first search could stop waiting before they all came (the
    # warm process, later, had them: the answers differed by the machine's load).
    monkeypatch.setenv(search_server.OFF_VARIABLE, "1")
    assert main(["memory", "reindex"]) == 0
    capsys.readouterr()
    alone = [search(q, warm=False) for q in queries]  # in this process
    server, thread, path = _serving(idle_s=60)
    assert path.stat().st_mode & 0o777 == 0o600
    assert [search(q, warm=True) for q in queries] == alone
    assert server.answered == len(queries)
    assert server.idle_s == 3  # the user's setting, read with each search
    write(memory / "deploy.md", "Deploys: helm upgrade, canary 50 % for 5 minutes, port 9000.")
    changed = search(queries[1], warm=False)
    assert "50 %" in changed[0]
    assert search(queries[1], warm=True) == changed
    assert server.answered == len(queries) + 1
    thread.join(30)  # idle for 3 s: it ends, and takes its socket with it
    assert not thread.is_alive() and not path.exists()
    assert json.loads(alone[0][0])["mode"] == "hybrid"


def test_a_socket_left_by_a_killed_server_does_not_stop_a_new_one(
    short_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = _spawned(monkeypatch)
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
