"""Sessions follow the project: after ``mv``, in every worktree, and from the old layout."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

from agentsh.config import load_environment
from agentsh.paths import UserPaths, first_commit, git_common_dir, project_slug
from agentsh.session.catalog import Catalog
from agentsh.session.entries import Role
from agentsh.startup import session_for_args


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _repo(path: Path) -> Path:
    path.mkdir()
    _git("init", "-q", cwd=path)
    (path / "README").write_text("hi\n")
    _git("add", "README", cwd=path)
    _git("commit", "-q", "-m", "first", cwd=path)
    return path


def _args(**options: object) -> argparse.Namespace:
    base: dict[str, object] = {"continue_session": False, "resume": None, "session": None}
    return argparse.Namespace(**(base | options))


def _new_session_with(cwd: Path, text: str) -> str:
    env = load_environment(cwd)
    session = session_for_args(env, _args(), cwd)
    session.append_message(Role.USER, text)
    session.close()
    return session.id


def _continued(cwd: Path) -> str:
    env = load_environment(cwd)
    session = session_for_args(env, _args(continue_session=True), cwd)
    session.close()
    return session.id


def test_continue_finds_the_session_after_the_project_moved(
    tmp_path: Path, agentsh_home: Path
) -> None:
    # `mv project project2` used to make -c silently start a new session.
    repo = _repo(tmp_path / "project")
    made = _new_session_with(repo, "before the move")
    moved = repo.rename(tmp_path / "project2")
    assert _continued(moved) == made


def test_every_worktree_of_a_repository_is_the_same_project(
    tmp_path: Path, agentsh_home: Path
) -> None:
    repo = _repo(tmp_path / "main")
    _git("worktree", "add", "-q", str(tmp_path / "feature"), cwd=repo)
    feature = tmp_path / "feature"
    assert git_common_dir(feature) == git_common_dir(repo) == (repo / ".git").resolve()
    made = _new_session_with(feature, "in the worktree")
    assert _continued(repo) == made


def test_a_folder_without_commits_is_known_by_its_path(tmp_path: Path, agentsh_home: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    user = UserPaths.from_env()
    assert user.project_session_folders(plain) == [project_slug(plain)]
    _git("init", "-q", cwd=plain)  # a repository without commits yet
    assert first_commit(plain) == ""
    assert user.project_session_folders(plain) == [project_slug(plain)]


def test_sessions_kept_under_the_path_are_found_and_then_moved(
    tmp_path: Path, agentsh_home: Path
) -> None:
    repo = _repo(tmp_path / "project")
    user = UserPaths.from_env()
    legacy = user.sessions_dir / project_slug(repo)
    # A session an older agentsh wrote under the path-based folder.
    from agentsh.session.session import Session

    old = Session.create(legacy, repo)
    old.append_message(Role.USER, "old layout")
    old.close()
    assert _continued(repo) == old.id  # found before anything moved
    _new_session_with(repo, "new")  # the first new session moves the folder over
    identity = user.project_sessions_dir(repo)
    assert identity.name.startswith("git-") and not legacy.exists()
    assert {i.id for i in Catalog(user).list(repo)} >= {old.id}
    moved = repo.rename(tmp_path / "elsewhere")
    assert old.id in {i.id for i in Catalog(user).list(moved)}


def test_git_runs_once_per_repository_not_at_every_start(
    tmp_path: Path, agentsh_home: Path, monkeypatch: object
) -> None:
    repo = _repo(tmp_path / "project")
    cache = tmp_path / "ids.json"
    found = first_commit(repo, cache)
    assert len(found) == 40 and cache.exists()
    import agentsh.gitutil

    def no_git(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("git ran although the answer was cached")

    monkeypatch.setattr(agentsh.gitutil, "run_git", no_git)  # type: ignore[attr-defined]
    assert first_commit(repo, cache) == found
