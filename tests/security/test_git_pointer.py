"""A folder whose ``.git`` leads to another folder's repository.

An unpacked archive can carry a ``.git`` file (``gitdir: ~/work/private/.git``) or link. Then
``git commit`` in the folder, which the user's ``Bash(git:*)`` rule let the model run in
``-p``, committed the archive's files into the private repository and moved its branch
(reproduced: the private repository's log gained the commit), and agentsh filed the folder's
sessions with the private project's (the same first commit), so ``-c`` there continued them.
A linked worktree and a submodule lead out of the folder too, but their repository names the
folder back; those keep working.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentsh.git_pointer import foreign_repository
from agentsh.git_stalls import discover
from agentsh.gitutil import GitError, run_git
from agentsh.paths import UserPaths, first_commit, git_common_dir
from agentsh.tools.git_armed import armed_programs, git_findings
from tests.fakes.git_repo import git

IDENTITY = ("-c", "user.email=a@b", "-c", "user.name=a")


def _repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    (folder / "secret.txt").write_text("private\n")
    git(folder, "add", "secret.txt")
    git(folder, *IDENTITY, "commit", "-qm", "private work")
    return folder


def _foreign(folder: Path) -> Path | None:
    found = discover(folder)
    assert found is not None
    return foreign_repository(*found)


@pytest.fixture
def private(tmp_path: Path) -> Path:
    return _repository(tmp_path / "work" / "private")


@pytest.mark.parametrize("how", ["gitdir-file", "link", "worktree-of-another", "bare"])
def test_a_dot_git_leading_to_another_folders_repository_is_foreign(
    tmp_path: Path, private: Path, how: str
) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    target = private / ".git"
    if how == "gitdir-file":
        (archive / ".git").write_text(f"gitdir: {target}\n")
    elif how == "link":
        (archive / ".git").symlink_to(target)
    elif how == "worktree-of-another":  # the private repository's own linked worktree
        git(private, "worktree", "add", "-q", str(tmp_path / "wt"))
        target = private / ".git" / "worktrees" / "wt"
        (archive / ".git").write_text(f"gitdir: {target}\n")
    else:
        target = tmp_path / "served.git"
        subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
        (archive / ".git").write_text(f"gitdir: {target}\n")
    assert _foreign(archive) == target.resolve()
    with pytest.raises(GitError, match="leads to a repository outside this folder"):
        run_git(["status"], cwd=archive)
    armed = armed_programs(archive)
    assert armed is not None and "outside this folder" in armed.reason()
    # Not this project's identity: not filed with the private project's sessions.
    assert git_common_dir(archive) is None
    assert first_commit(archive) == ""
    user = UserPaths.from_env()
    assert not set(user.project_session_folders(archive)) & set(
        user.project_session_folders(private)
    )
    # The trust screen names it, with where it leads.
    findings = git_findings(archive, archive)
    assert len(findings) == 1 and str(target.resolve()) in findings[0].description


def test_a_linked_worktree_and_a_submodule_are_their_repositorys_own(
    tmp_path: Path, private: Path
) -> None:
    worktree = tmp_path / "feature"
    git(private, "worktree", "add", "-q", str(worktree))
    assert (worktree / ".git").is_file()
    assert _foreign(worktree) is None
    assert run_git(["rev-parse", "HEAD"], cwd=worktree).stdout.strip()

    library = _repository(tmp_path / "library")
    app = _repository(tmp_path / "app")
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "lib")
    assert (app / "lib" / ".git").is_file()
    assert _foreign(app / "lib") is None
    assert run_git(["rev-parse", "HEAD"], cwd=app / "lib").stdout.strip()


def test_a_separate_git_dir_counts_once_it_names_the_folder(tmp_path: Path) -> None:
    """``git init --separate-git-dir`` leaves no pointer back: foreign, until its config
    names the folder (``core.worktree``), as the README says."""
    folder = tmp_path / "kept-apart"
    folder.mkdir()
    store = tmp_path / "store.git"
    git(folder, "init", "-q", f"--separate-git-dir={store}")
    assert _foreign(folder) == store.resolve()
    subprocess.run(
        ["git", "--git-dir", str(store), "config", "core.worktree", str(folder)], check=True
    )
    assert _foreign(folder) is None


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_git_rule_does_not_commit_into_the_repository_an_archive_points_at(
    tmp_path: Path, private: Path, agentsh_home: Path, scripted_server: object
) -> None:
    from tests.fakes.fixtures import FAKE_KEY
    from tests.fakes.server import ScriptedServer, text, tool_calls

    assert isinstance(scripted_server, ScriptedServer)
    archive = tmp_path / "archive"
    archive.mkdir()
    (archive / ".git").write_text(f"gitdir: {private / '.git'}\n")
    (archive / "main.py").write_text("print(1)\n")
    scripted_server.script(
        tool_calls(("bash", {"command": "git add -A"})),
        tool_calls(("bash", {"command": "git commit -qm wip"})),
        text("done"),
    )
    before = subprocess.run(
        ["git", "log", "--format=%H", "--all"], cwd=private, capture_output=True, check=True
    ).stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTSH_", "OPENAI"))}
    env |= {"AGENTSH_HOME": str(agentsh_home), "OPENAI_API_KEY": FAKE_KEY}
    env |= {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b"}
    env |= {"GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    run = subprocess.run(
        [
            *(sys.executable, "-m", "agentsh", "-p", "commit it", "-m", "openai/test-model"),
            *("--api-base", scripted_server.base_url, "--allowedTools", "Bash(git:*)"),
        ],
        cwd=archive,
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    after = subprocess.run(
        ["git", "log", "--format=%H", "--all"], cwd=private, capture_output=True, check=True
    ).stdout
    assert after == before
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=private, capture_output=True, check=True
    ).stdout
    assert status == b""  # its index untouched too
    denied = [line for line in run.stderr.splitlines() if line.startswith("agentsh: denied")]
    assert len(denied) == 2
    assert all(f"outside this folder ({private / '.git'})" in line for line in denied)
