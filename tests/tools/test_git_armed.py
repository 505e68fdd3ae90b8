"""An allow rule for git commands does not cover them in a repository armed with programs.

A repository delivered as an archive can carry executable ``.git/hooks/*`` and a
``.git/config`` naming programs; with ``--allowedTools "Bash(git:*)"`` the model's ``git
commit`` ran the repository's ``pre-commit`` without anyone asking. Now such a command asks
(naming what the repository carries, in one line), and in ``-p`` it is denied with that line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import ApprovalMode
from agentsh.events import ApprovalDecision, ApprovalRequest, Event
from agentsh.tools.approval import Approver
from agentsh.tools.base import ToolContext
from agentsh.tools.git_armed import armed_reason
from agentsh.tools.rules import ToolRules
from agentsh.tools.shell import BashTool
from tests.fakes.git_repo import git, plant_hook

GIT_RULE = ToolRules.parse(allow=["Bash(git:*)", "Bash(ls:*)"])


class User:
    """Answers every approval request at once with one decision, and keeps them."""

    def __init__(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        self.requests: list[ApprovalRequest] = []

    def __call__(self, event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            self.requests.append(event)
            event.decision.set_result(self.decision)


async def _authorize(approver: Approver, ctx: ToolContext, command: str) -> str | None:
    tool = BashTool()
    return await approver.authorize(tool, tool.parse({"command": command}), ctx)


def test_a_fresh_repository_carries_nothing(repo: Path) -> None:
    # git init writes only *.sample hooks; a hook that is not executable never runs.
    plant_hook(repo, "post-checkout", executable=False)
    assert armed_reason(repo) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "hooks"),
        ("core.sshCommand", "sh -c id"),
        ("alias.st", "!sh -c id"),
        ("filter.x.clean", "sh -c id"),
        ("include.path", "../evil.config"),
        # run by archive --format=tgz, imap-send, add -p, and for an alternate's refs
        ("tar.tgz.command", "sh -c id"),
        ("imap.tunnel", "sh -c id"),
        ("interactive.diffFilter", "sh -c id"),
        ("core.alternateRefsCommand", "sh -c id"),
    ],
)
def test_a_setting_that_names_a_program_arms_the_repository(
    repo: Path, key: str, value: str
) -> None:
    git(repo, "config", key, value)
    reason = armed_reason(repo)
    assert reason is not None and f"setting {key.lower()}" in reason.lower()


@pytest.mark.parametrize("relative", [True, False])
def test_a_remote_on_this_machine_with_receive_hooks_arms_the_repository(
    repo: Path, relative: bool
) -> None:
    """A push runs the receive hooks of the repository it pushes to: a cloned repository can
    carry one (``vendor/cache.git``), and a remote can name it (an archive's ``.git/config``,
    or ``git clone vendor/cache.git c``: the clone's origin is its absolute path)."""
    target = repo / "vendor" / "cache.git"
    git(repo, "init", "-q", "--bare", str(target))
    git(repo, "remote", "add", "v", "./vendor/cache.git" if relative else str(target))
    git(repo, "remote", "set-url", "--push", "v", "./vendor/cache.git")
    assert armed_reason(repo) is None  # no hook there: nothing runs
    (target / "hooks" / "post-commit").write_text("#!/bin/sh\n")  # not run by a push
    (target / "hooks" / "post-commit").chmod(0o755)
    assert armed_reason(repo) is None
    hook = target / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ntouch x\n")
    hook.chmod(0o755)
    reason = armed_reason(repo)
    assert reason is not None and "hook pre-receive" in reason


def test_a_remote_elsewhere_does_not_arm_the_repository(repo: Path) -> None:
    for name, url in [
        ("a", "https://github.com/a/b.git"),
        ("b", "git@github.com:a/b.git"),
        ("c", "/home/u/src/b.git"),  # the folder it was cloned from
        ("d", "ssh://host/b.git"),
    ]:
        git(repo, "remote", "add", name, url)
    assert armed_reason(repo) is None


def test_hooks_are_named_and_counted(repo: Path) -> None:
    for name in ("pre-commit", "post-commit", "pre-push", "reference-transaction"):
        plant_hook(repo, name)
    reason = armed_reason(repo)
    assert reason == (
        "this repository's git runs programs it names (hook post-commit, hook pre-commit, "
        "hook pre-push and 1 more)"
    )


def test_the_users_own_global_settings_do_not_count(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "own.gitconfig"
    own.write_text("[alias]\n\tco = checkout\n[core]\n\tpager = less\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(own))
    assert armed_reason(repo) is None
    # Hooks of the user's own (core.hooksPath): the repository's are not run.
    plant_hook(repo)
    assert armed_reason(repo) is not None
    own.write_text(f"[core]\n\thooksPath = {tmp_path / 'my-hooks'}\n")
    assert armed_reason(repo) is None


@pytest.mark.asyncio
async def test_headless_denies_an_allowed_git_command_in_an_armed_repository(
    repo: Path, ctx: ToolContext
) -> None:
    plant_hook(repo)
    approver = Approver(ApprovalMode.ASK, repo, interactive=False, rules=GIT_RULE)
    message = await _authorize(approver, ctx, "git add -A && git commit -m wip")
    assert message is not None and "hook pre-commit" in message
    assert "'Bash(git:*)' does not cover git commands here" in message
    (denial,) = approver.denials
    assert "hook pre-commit" in denial.why and "\n" not in denial.why
    # What the rule covers and is not git still runs.
    assert await _authorize(approver, ctx, "ls -la") is None


@pytest.mark.asyncio
async def test_headless_denial_of_a_form_the_rule_does_not_cover_does_not_suggest_the_rule(
    repo: Path, ctx: ToolContext
) -> None:
    """``git fetch --upl=...`` under ``Bash(git:*)``: the denial said "a rule like
    Bash(git:*) allows it", the very rule given, which does not cover that form."""
    approver = Approver(ApprovalMode.ASK, repo, interactive=False, rules=GIT_RULE)
    message = await _authorize(approver, ctx, "git fetch --upl='touch /tmp/x;' .")
    assert message is not None and "rules given do not cover this command" in message
    (denial,) = approver.denials
    assert "a rule like" not in denial.why and "--approve all" in denial.why
    plain = Approver(ApprovalMode.ASK, repo, interactive=False)
    message = await _authorize(plain, ctx, "git fetch --upl='touch /tmp/x;' .")
    assert message is not None and 'such as `--allowedTools "Bash(git:*)"`' in message


@pytest.mark.asyncio
async def test_headless_still_allows_git_in_a_plain_repository(
    repo: Path, ctx: ToolContext
) -> None:
    approver = Approver(ApprovalMode.ASK, repo, interactive=False, rules=GIT_RULE)
    assert await _authorize(approver, ctx, "git status") is None


@pytest.mark.asyncio
async def test_interactive_asks_and_a_session_answer_covers_only_this_repository_state(
    repo: Path, ctx: ToolContext
) -> None:
    git(repo, "config", "core.fsmonitor", "false")
    user = User(ApprovalDecision.ALLOW_SESSION)
    ctx.emit = user
    approver = Approver(ApprovalMode.ASK, repo, interactive=True, rules=GIT_RULE)
    assert await _authorize(approver, ctx, "git status") is None
    (request,) = user.requests
    assert "setting core.fsmonitor" in request.reason and "Bash(git:*)" in request.reason
    assert await _authorize(approver, ctx, "git diff") is None
    assert len(user.requests) == 1  # the same armed state was allowed for the session
    plant_hook(repo)  # something new: asked again
    assert await _authorize(approver, ctx, "git commit -m x") is None
    assert len(user.requests) == 2
    # "allow for the session" did not become "every command".
    assert await _authorize(approver, ctx, "echo hi") is None
    assert len(user.requests) == 3 and "approval mode" in user.requests[-1].reason


@pytest.mark.asyncio
async def test_a_declined_git_command_is_not_run(repo: Path, ctx: ToolContext) -> None:
    plant_hook(repo)
    ctx.emit = User(ApprovalDecision.DENY)
    approver = Approver(ApprovalMode.ASK, repo, interactive=True, rules=GIT_RULE)
    message = await _authorize(approver, ctx, "git commit -m x")
    assert message is not None and message.startswith("The user declined")


def test_a_submodules_settings_and_hooks_count(repo: Path, tmp_path: Path) -> None:
    # git status enters submodules and runs their fsmonitor; a recursive checkout their hooks.
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    git(
        inner,
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
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "lib/inner")
    assert armed_reason(repo) is None
    module = repo / ".git" / "modules" / "lib" / "inner"
    git(repo, "config", "--file", str(module / "config"), "core.fsmonitor", "false")
    assert armed_reason(repo) == (
        "this repository's git runs programs it names (submodule lib/inner: setting core.fsmonitor)"
    )


@pytest.mark.asyncio
async def test_a_git_command_after_cd_is_checked_where_it_runs(
    repo: Path, ctx: ToolContext
) -> None:
    # A folder of the project that is a repository of its own (an archive can hold one).
    nested = repo / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    plant_hook(nested)
    rules = ToolRules.parse(allow=["Bash(git:*)", "Bash(cd:*)"])
    approver = Approver(ApprovalMode.ASK, repo, interactive=False, rules=rules)
    assert await _authorize(approver, ctx, "git status") is None
    message = await _authorize(approver, ctx, "cd vendor && git commit -m x")
    assert message is not None and "hook pre-commit" in message
    for hidden in ("cd -P vendor && git commit", "cd - && git commit", "cd nowhere; git commit"):
        # a move agentsh cannot follow: no allow rule covers what runs after it
        message = await _authorize(approver, ctx, hidden)
        assert message is not None, hidden


def test_a_bare_repository_the_users_git_would_find_counts(tmp_path: Path) -> None:
    # agentsh's own git refuses a bare repository it is not named (safe.bareRepository); the
    # user's git in that folder uses it, and its hooks.
    bare = tmp_path / "bare"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    hook = bare / "hooks" / "reference-transaction"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    assert armed_reason(bare) == (
        "this repository's git runs programs it names (hook reference-transaction)"
    )
