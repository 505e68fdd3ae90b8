"""agentsh's own git calls run nothing a repository's config or attributes choose."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from agentsh.gitutil import GitError, arun_git, driver_overrides, find_git, run_git
from agentsh.tui.file_list import list_project_files

_AUTHOR = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **_AUTHOR}
    )


def _hostile_repo(root: Path, marker: Path) -> None:
    """A committed file whose attributes name drivers, and a config arming every vector."""
    (root / "a.txt").write_text("one\n")
    (root / ".gitattributes").write_text(
        "*.txt filter=evil diff=evil merge=evil\n*.md filter=odd=name\n"
    )
    (root / "b.md").write_text("b\n")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "init")
    hooks = root / ".git" / "hooks"
    for hook in ("pre-commit", "post-commit", "reference-transaction", "post-checkout"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}.hook-{hook}\n")
        (hooks / hook).chmod(0o755)
    touch = f"touch {marker}"
    config = {
        "core.fsmonitor": f"{touch}.fsmonitor; false",
        "core.pager": f"{touch}.pager; cat",
        "core.editor": f"{touch}.editor",
        "core.sshCommand": f"{touch}.ssh",
        "filter.evil.clean": f"{touch}.clean; cat",
        "filter.evil.smudge": f"{touch}.smudge; cat",
        "filter.evil.required": "true",
        "filter.odd=name.clean": f"{touch}.oddclean; cat",
        "diff.evil.textconv": f"{touch}.textconv; cat",
        "diff.evil.command": f"{touch}.diffcmd",
        "diff.external": f"{touch}.external",
        "merge.evil.driver": f"{touch}.merge",
        "log.showSignature": "true",
        "gpg.program": f"{touch}.gpg",
        "commit.gpgSign": "true",
    }
    for key, value in config.items():
        _git(root, "config", key, value)
    (root / "a.txt").write_text("two\n")
    (root / "b.md").write_text("bb\n")


def _markers(marker: Path) -> list[str]:
    return sorted(p.name for p in marker.parent.glob(marker.name + "*"))


def test_file_listing_does_not_run_the_repositorys_fsmonitor(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    marker = tmp_path / "pwned"
    _git(root, "config", "core.fsmonitor", f"touch {marker}; false")
    (root / "x.py").write_text("x\n")
    assert list_project_files(root) == ["x.py"]
    assert not marker.exists()


def test_commands_that_would_run_drivers_hooks_and_pagers_run_none(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    marker = tmp_path / "pwned"
    _hostile_repo(root, marker)
    for args in (
        ["status", "--porcelain"],
        ["diff"],
        ["diff", "HEAD", "--stat"],
        ["log", "-p", "-1"],
        ["show", "HEAD"],
        ["add", "-A"],
        ["stash", "push", "-q"],
        ["stash", "show", "-p"],
        ["stash", "pop", "-q"],
        ["add", "-A"],
        ["commit", "-qm", "snapshot"],
        ["checkout", "HEAD~1", "--", "a.txt"],
        ["blame", "a.txt"],
    ):
        run_git(args, cwd=root, env=_AUTHOR)
    assert _markers(marker) == []


def test_raw_cat_file_skips_the_driver_listing_and_a_converting_one_is_disarmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentsh import gitutil

    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    marker = tmp_path / "pwned"
    _hostile_repo(root, marker)
    spawned: list[list[str]] = []
    real = gitutil._run

    def counting(
        argv: list[str], cwd: Path, env: dict[str, str], input: bytes | None, timeout: float
    ) -> gitutil.GitResult:
        spawned.append(argv)
        return real(argv, cwd, env, input, timeout)

    monkeypatch.setattr(gitutil, "_run", counting)
    raw = run_git(["cat-file", "--batch"], cwd=root, input=b"HEAD:a.txt\n")
    assert raw.stdout.endswith(b"one\n\n") and len(spawned) == 1  # no config listing first
    for option in ("--textconv", "--filters"):
        spawned.clear()
        run_git(["cat-file", option, "HEAD:a.txt"], cwd=root, check=False)
        assert any("--get-regexp" in argv for argv in spawned)  # drivers listed, then blanked
    assert _markers(marker) == []


def test_the_async_runner_is_disarmed_alike(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    marker = tmp_path / "pwned"
    _hostile_repo(root, marker)
    done = asyncio.run(arun_git(["status", "--porcelain"], cwd=root))
    assert b"a.txt" in done.stdout
    asyncio.run(arun_git(["diff"], cwd=root))
    assert _markers(marker) == []


def test_a_git_in_the_project_folder_is_never_the_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    fake = root / "git"
    fake.write_text(f"#!/bin/sh\ntouch {tmp_path}/pwned\n")
    fake.chmod(0o755)
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", "." + os.pathsep + os.environ["PATH"])
    found = find_git()
    assert found is not None and Path(found).is_absolute() and Path(found) != fake
    monkeypatch.setenv("PATH", ".")
    assert find_git() is None
    with pytest.raises(GitError, match="not installed"):
        run_git(["status"], cwd=root)
    assert not (tmp_path / "pwned").exists()


def test_core_worktree_cannot_move_the_work_tree_out(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("s\n")
    _git(root, "init", "-q")
    _git(root, "config", "core.worktree", str(elsewhere))
    (root / "mine.txt").write_text("m\n")
    assert list_project_files(root) == ["mine.txt"]


def test_driver_names_with_dots_and_equals_are_parsed_whole() -> None:
    pairs = dict(driver_overrides(["filter.a=b.c.clean", "diff.external", "diff.x.textconv"]))
    assert pairs["filter.a=b.c.clean"] == ""
    assert pairs["filter.a=b.c.process"] == ""
    assert pairs["filter.a=b.c.required"] == "false"
    assert pairs["diff.x.command"] == ""
    assert not any(k.startswith("diff.external.") for k in pairs)


def test_failures_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"^git rev-parse failed: .*not a git repository"):
        run_git(["rev-parse", "HEAD"], cwd=tmp_path)
    done = run_git(["rev-parse", "HEAD"], cwd=tmp_path, check=False)
    assert done.returncode != 0
