"""Sessions follow the project: after ``mv``, in every worktree, and from the old layout."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

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
    tmp_path: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "project")
    cache = tmp_path / "ids.json"
    found = first_commit(repo, cache)
    assert len(found) == 40 and cache.exists()
    import agentsh.gitutil

    def no_git(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("git ran although the answer was cached")

    monkeypatch.setattr(agentsh.gitutil, "run_git", no_git)
    assert first_commit(repo, cache) == found


def _clone(source: Path, target: Path) -> Path:
    _git("clone", "-q", str(source), str(target), cwd=source.parent)
    return target


def test_continue_in_another_clone_does_not_pick_up_this_clones_session(
    tmp_path: Path, agentsh_home: Path
) -> None:
    # Two clones share the first commit: -c in B used to continue A's newest session (its
    # tools then acting in B).
    a = _repo(tmp_path / "a")
    b = _clone(a, tmp_path / "b")
    made_in_a = _new_session_with(a, "work in clone a")
    continued = _continued(b)
    assert continued != made_in_a
    assert _continued(a) == made_in_a
    # B's own session is continued there, A's stays A's.
    made_in_b = _new_session_with(b, "work in clone b")
    assert _continued(b) == made_in_b
    assert _continued(a) == made_in_a
    # An explicit id still opens the other clone's session.
    env = load_environment(b)
    explicit = session_for_args(env, _args(resume=made_in_a[:8]), b)
    explicit.close()
    assert explicit.id == made_in_a


def test_a_fork_sharing_the_root_commit_does_not_list_the_private_sessions(
    tmp_path: Path, agentsh_home: Path
) -> None:
    private = _repo(tmp_path / "private")
    secret = _new_session_with(private, "the secret plan")
    fork = _clone(private, tmp_path / "fork")
    user = UserPaths.from_env()
    assert secret not in {i.id for i in Catalog(user).list(fork)}
    assert secret in {i.id for i in Catalog(user).elsewhere(fork)}
    assert secret in {i.id for i in Catalog(user).list(private)}
    # Moved, the private project still finds its session by its git folder's inode; the
    # fork does not, although the session's folder is now gone.
    moved = private.rename(tmp_path / "private2")
    assert secret in {i.id for i in Catalog(user).list(moved)}
    assert secret not in {i.id for i in Catalog(user).list(fork)}
    assert _continued(fork) != secret


def test_this_folders_sessions_come_before_a_worktrees(tmp_path: Path, agentsh_home: Path) -> None:
    repo = _repo(tmp_path / "main")
    _git("worktree", "add", "-q", str(tmp_path / "feature"), cwd=repo)
    feature = tmp_path / "feature"
    mine = _new_session_with(repo, "in main")
    theirs = _new_session_with(feature, "in the worktree, newer")
    assert _continued(repo) == mine
    assert _continued(feature) == theirs
    user = UserPaths.from_env()
    assert [i.id for i in Catalog(user).list(repo)] == [mine, theirs]


def test_the_listing_names_other_clones_without_showing_them(
    tmp_path: Path,
    agentsh_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentsh.cli import main

    a = _repo(tmp_path / "a")
    b = _clone(a, tmp_path / "b")
    _new_session_with(a, "a's private title")
    monkeypatch.chdir(b)
    assert main(["sessions"]) == 0
    out = capsys.readouterr().out
    assert "a's private title" not in out
    assert "1 more in other clones" in out
