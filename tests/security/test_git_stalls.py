"""A repository whose git files would make git (or agentsh) wait forever.

An unpacked archive can carry FIFOs where git keeps its files: ``.git`` itself (agentsh read
it with a plain open at every start and never got further), ``commondir``, the branch file
``HEAD`` names, a file a config's ``include.path`` names. Each of agentsh's own git calls
then waited out its timeout (a one-reply ``-p`` run took two minutes, and blamed the ignore
patterns). A config that includes ``/dev/tty`` made git read the user's keystrokes.
"""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentsh.gitutil import GitError, run_git
from agentsh.paths import first_commit
from tests.fakes.git_repo import git


def _committed(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")


def _quick(call: Callable[[], object], limit: float = 20.0) -> object:
    """``call()`` in a thread that must finish within ``limit`` seconds (a hang fails)."""
    import threading

    result: list[object] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            failed.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(limit)
    assert not worker.is_alive(), f"still waiting after {limit} s"
    if failed:
        raise failed[0]
    return result[0] if result else None


def test_a_dot_git_fifo_does_not_hang_the_start(tmp_path: Path) -> None:
    root = tmp_path / "unpacked"
    root.mkdir()
    os.mkfifo(root / ".git")
    assert _quick(lambda: first_commit(root)) == ""


def test_a_gitdir_pointer_to_a_fifo_commondir_does_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "unpacked"
    meta = root / "meta"
    meta.mkdir(parents=True)
    (root / ".git").write_text("gitdir: meta\n")
    os.mkfifo(meta / "commondir")
    assert _quick(lambda: first_commit(root)) == ""


def _plant(root: Path, where: str) -> Path:
    if where == "commondir":
        fifo = root / ".git" / "commondir"
    elif where == "head-ref":
        fifo = root / ".git" / "refs" / "heads" / "main"
        (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (root / ".git" / "refs" / "heads" / "master").unlink(missing_ok=True)
    elif where == "include":
        fifo = root / "settings.inc"
        with (root / ".git" / "config").open("a") as config:
            config.write("[include]\n\tpath = ../settings.inc\n")
    elif where == "nested-include":
        (root / "first.inc").write_text("[include]\n\tpath = second.inc\n")
        fifo = root / "second.inc"
        with (root / ".git" / "config").open("a") as config:
            config.write('[includeIf "gitdir:/"]\n\tpath = "../first.inc"\n')
    elif where == "config-link":
        os.mkfifo(root / "elsewhere")
        fifo = root / ".git" / "info" / "attributes"  # named by its own name: the link
        fifo.symlink_to(root / "elsewhere")
        return fifo
    else:
        fifo = root / where
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize(
    "where",
    ["commondir", "head-ref", "include", "nested-include", "config-link", ".gitattributes"],
)
def test_git_is_not_run_into_a_fifo(project: Path, where: str) -> None:
    _committed(project)
    fifo = _plant(project, where)
    started = time.monotonic()
    with pytest.raises(GitError) as caught:
        _quick(lambda: run_git(["status", "--porcelain"], cwd=project, timeout=8))
    assert time.monotonic() - started < 5
    assert f"{fifo} is a FIFO: git would wait on it forever" in str(caught.value)
    # From a sub-folder too: git finds the repository above.
    (project / "sub").mkdir()
    with pytest.raises(GitError, match="would wait on it forever"):
        _quick(lambda: run_git(["rev-parse", "HEAD"], cwd=project / "sub", timeout=8))


def test_a_device_named_by_the_config_is_refused(project: Path) -> None:
    _committed(project)
    with (project / ".git" / "config").open("a") as config:
        config.write("[include]\n\tpath = /dev/zero\n")
    with pytest.raises(GitError, match="/dev/zero is a device"):
        _quick(lambda: run_git(["status"], cwd=project, timeout=8))


def test_benign_neighbours_still_run_git(project: Path) -> None:
    """A socket in .git (git's own fsmonitor daemon keeps one there), /dev/null as an
    excludes file, sub-folders of .git and include paths that do not exist are fine."""
    import socket

    _committed(project)
    with (project / ".git" / "config").open("a") as config:
        config.write("[core]\n\texcludesFile = /dev/null\n[include]\n\tpath = ~/nowhere.inc\n")
    sock = socket.socket(socket.AF_UNIX)
    place = project / ".git" / "fsmonitor--daemon.ipc"
    with contextlib.suppress(OSError):  # a path too long for a socket: the rest counts
        sock.bind(str(place))
    try:
        done = run_git(["rev-parse", "HEAD"], cwd=project, timeout=20)
    finally:
        sock.close()
    assert len(done.stdout.strip()) == 40


_TTY_CHILD = """
import sys, time
from pathlib import Path
from agentsh.gitutil import GitError, run_git
started = time.monotonic()
try:
    run_git(["status", "--porcelain"], cwd=Path(sys.argv[1]), timeout=6, check=False)
    print("finished", flush=True)
except GitError as exc:
    print("error", exc, flush=True)
print("took", round(time.monotonic() - started, 1), flush=True)
"""


def test_git_never_reads_the_terminal(project: Path, tmp_path: Path) -> None:
    """git runs without a controlling terminal: a config that includes /dev/tty (here the
    user's global one, which no check reads) cannot wait for, or eat, the user's keys."""
    _committed(project)
    global_config = tmp_path / "gitconfig"
    global_config.write_text("[include]\n\tpath = /dev/tty\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(global_config)}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal
        os.execve(sys.executable, [sys.executable, "-c", _TTY_CHILD, str(project)], env)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    text = out.decode("utf-8", "replace")
    assert "took" in text, text
    assert "timed out" not in text, text
    took = float(text.rsplit("took", 1)[1].split()[0])
    assert took < 5, text


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_agentsh_p_answers_in_a_folder_whose_dot_git_is_a_fifo(
    tmp_path: Path, agentsh_home: Path, scripted_server: object
) -> None:
    from tests.fakes.fixtures import FAKE_KEY
    from tests.fakes.server import ScriptedServer, text

    assert isinstance(scripted_server, ScriptedServer)
    scripted_server.script(text("hello"))
    root = tmp_path / "unpacked"
    root.mkdir()
    os.mkfifo(root / ".git")
    (root / "main.py").write_text("print(1)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSH_", "OPENAI"))}
    env |= {"AGENTSH_HOME": str(agentsh_home), "OPENAI_API_KEY": FAKE_KEY}
    run = subprocess.run(
        [
            *(sys.executable, "-m", "agentsh", "-p", "hi", "-m", "openai/test-model"),
            *("--api-base", scripted_server.base_url),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "hello"


def test_a_core_worktree_elsewhere_does_not_move_agentshs_listings(
    project: Path, tmp_path: Path
) -> None:
    """``core.worktree = ~`` in a cloned repository's config had agentsh's listings cover the
    home folder: checkpoints missed every change in the project (and `@` completion and the
    changed-files lists named the other folder's files)."""
    from agentsh.checkpoints.scan import git_changes, list_files

    _committed(project)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tax-return.pdf").write_text("private\n")
    git(project, "config", "core.worktree", str(home))
    (project / "new.py").write_text("x = 1\n")
    listing = list_files(project, max_files=1000)
    assert "new.py" in listing.paths and "tax-return.pdf" not in listing.paths
    changes = git_changes(project)
    assert changes is not None
    assert "new.py" in changes.paths and "tax-return.pdf" not in changes.paths
    assert "a.txt" not in changes.paths  # unchanged, and present where agentsh looks


def test_after_git_hangs_once_in_a_repository_agentsh_runs_no_more_git_there(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A FIFO no check can list cheaply (``pkg/.gitattributes``, read when a file of ``pkg``
    changed) made every ``git status`` wait out its 30 s: a two-call ``-p`` run took 84 s."""
    from agentsh import gitutil
    from agentsh.gitutil import GitStall, GitTimeout

    monkeypatch.setattr(gitutil, "_GAVE_UP", {})
    monkeypatch.setattr(gitutil, "GIVE_UP_AFTER_S", 1.0)
    (project / "pkg").mkdir()
    (project / "pkg" / "a.txt").write_text("a\n")
    git(project, "add", ".")
    git(project, *("-c", "user.email=a@b", "-c", "user.name=a"), "commit", "-qm", "init")
    os.mkfifo(project / "pkg" / ".gitattributes")
    (project / "pkg" / "a.txt").write_text("b\n")
    with pytest.raises(GitTimeout):
        _quick(lambda: run_git(["status", "--porcelain"], cwd=project, timeout=1.5))
    started = time.monotonic()
    with pytest.raises(GitStall, match=r"did not finish in 1\.5 s .* no more git there"):
        run_git(["status", "--porcelain"], cwd=project / "pkg", timeout=1.5)
    assert time.monotonic() - started < 0.5
