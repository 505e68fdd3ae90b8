"""Reads by a path outside the project ask (Claude Code's working-directory rule): a prompt
injection in a repository file must not make the model read ``~/.ssh/id_ed25519`` unasked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsh.config import ApprovalMode
from agentsh.events import ApprovalDecision
from agentsh.tools.approval import Approver
from agentsh.tools.base import Tool, ToolContext
from agentsh.tools.file_read import ReadTool
from agentsh.tools.rules import ToolRules
from agentsh.tools.search import FindTool, GrepTool, LsTool
from tests.tools.test_approval import User, authorize, with_user

pytestmark = pytest.mark.asyncio


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the project with a secret in it, and a subfolder."""
    home = tmp_path / "home" / ".ssh"
    (home / "old").mkdir(parents=True)
    (home / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / "old" / "id_rsa").write_text("OLD KEY\n")
    return home


def _approver(project: Path, mode: ApprovalMode = ApprovalMode.ASK, **kw: Any) -> Approver:
    return Approver(mode, project, interactive=kw.pop("interactive", True), **kw)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (ReadTool(), {"path": "{o}/id_ed25519"}),
        (GrepTool(), {"pattern": "KEY", "path": "{o}"}),
        (FindTool(), {"pattern": "*", "path": "{o}"}),
        (LsTool(), {"path": "{o}"}),
        (ReadTool(), {"path": "../home/.ssh/id_ed25519"}),  # `..` out of the project
    ],
    ids=["read", "grep", "find", "ls", "dotdot"],
)
async def test_a_read_outside_the_project_asks(
    project: Path, ctx: ToolContext, outside: Path, tool: Tool, arguments: dict[str, Any]
) -> None:
    user = User(ApprovalDecision.DENY)
    for mode in (ApprovalMode.ASK, ApprovalMode.EDITS):
        args = {k: v.format(o=outside) for k, v in arguments.items()}
        refused = await authorize(_approver(project, mode), tool, with_user(ctx, user), **args)
        assert refused is not None and "declined" in refused
    assert len(user.requests) == 2
    request = user.requests[0]
    assert request.session_scope == "folder" and request.scope_path == str(outside)
    assert str(outside) in request.reason


async def test_reads_inside_the_project_never_ask(project: Path, ctx: ToolContext) -> None:
    (project / "a.txt").write_text("a\n")
    user = User(ApprovalDecision.DENY)
    approver = _approver(project)
    with_user(ctx, user)
    assert await authorize(approver, ReadTool(), ctx, path="a.txt") is None
    assert await authorize(approver, ReadTool(), ctx, path=str(project / "a.txt")) is None
    assert await authorize(approver, GrepTool(), ctx, pattern="a") is None
    assert await authorize(approver, LsTool(), ctx) is None
    assert user.requests == []


async def test_allow_the_folder_for_the_session_covers_it_and_below_only(
    project: Path, ctx: ToolContext, outside: Path, tmp_path: Path
) -> None:
    user = User(ApprovalDecision.ALLOW_SESSION)
    approver = _approver(project)
    with_user(ctx, user)
    assert await authorize(approver, ReadTool(), ctx, path=f"{outside}/id_ed25519") is None
    assert await authorize(approver, ReadTool(), ctx, path=f"{outside}/old/id_rsa") is None
    assert await authorize(approver, LsTool(), ctx, path=str(outside)) is None
    assert len(user.requests) == 1
    (tmp_path / "home" / "other").write_text("x\n")  # the parent folder was not allowed
    assert await authorize(approver, ReadTool(), ctx, path=str(tmp_path / "home" / "other")) is None
    assert len(user.requests) == 2
    approver.forget_session()
    assert await authorize(approver, ReadTool(), ctx, path=f"{outside}/id_ed25519") is None
    assert len(user.requests) == 3


async def test_allow_once_allows_that_read_only(
    project: Path, ctx: ToolContext, outside: Path
) -> None:
    user = User(ApprovalDecision.ALLOW_ONCE)
    approver = _approver(project)
    with_user(ctx, user)
    for _ in range(2):
        assert await authorize(approver, ReadTool(), ctx, path=f"{outside}/id_ed25519") is None
    assert len(user.requests) == 2


async def test_headless_denies_in_one_line_naming_add_dir(
    project: Path, ctx: ToolContext, outside: Path
) -> None:
    approver = _approver(project, ApprovalMode.EDITS, interactive=False)
    refused = await authorize(approver, ReadTool(), ctx, path=f"{outside}/id_ed25519")
    assert refused is not None and "\n" not in refused
    assert "--add-dir" in refused and str(outside / "id_ed25519") in refused
    (denial,) = approver.denials
    assert denial.tool == "read" and f"--add-dir {outside}" in denial.why


@pytest.mark.parametrize(
    "grant",
    ["add_dir", "mode_all", "rule"],
)
async def test_what_lets_a_headless_read_outside_through(
    project: Path, ctx: ToolContext, outside: Path, grant: str
) -> None:
    kw: dict[str, Any] = {"interactive": False}
    mode = ApprovalMode.ASK
    if grant == "add_dir":
        kw["added_dirs"] = [outside.parent]
    elif grant == "mode_all":
        mode = ApprovalMode.ALL
    else:
        kw["rules"] = ToolRules.parse(allow=[f"Read(/{outside}/**)"])
    approver = _approver(project, mode, **kw)
    assert await authorize(approver, ReadTool(), ctx, path=f"{outside}/id_ed25519") is None
    assert approver.denials == []


async def test_links_are_judged_by_where_they_lead(
    project: Path, ctx: ToolContext, outside: Path, tmp_path: Path
) -> None:
    # A link outside that leads into the project reads the project: no question.
    (project / "a.txt").write_text("a\n")
    (tmp_path / "into").symlink_to(project)
    user = User(ApprovalDecision.DENY)
    approver = _approver(project, interactive=False)
    with_user(ctx, user)
    assert await authorize(approver, ReadTool(), ctx, path=str(tmp_path / "into" / "a.txt")) is None
    # A link in an --add-dir folder that leads out of it is outside.
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "key").symlink_to(outside / "id_ed25519")
    approver = _approver(project, interactive=False, added_dirs=[shared])
    assert await authorize(approver, ReadTool(), ctx, path=str(shared / "key")) is not None


async def test_saved_tool_output_reads_without_asking(project: Path, ctx: ToolContext) -> None:
    saved = ctx.user.project_tool_output_dir(ctx.project.root)
    saved.mkdir(parents=True, exist_ok=True)
    (saved / "bash-1.log").write_text("long output\n")
    approver = _approver(project, interactive=False)
    assert await authorize(approver, ReadTool(), ctx, path=str(saved / "bash-1.log")) is None


async def test_another_projects_saved_output_is_outside(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    # The folder was shared by every project: a prompt injection in a cloned repository had
    # the model list, grep and read the long outputs of the user's other projects (a `cat
    # .env`, an `env`) in -p without a question.
    other = ctx.user.project_tool_output_dir(tmp_path / "private-app")
    other.mkdir(parents=True)
    (other / "bash-2.log").write_text("DATABASE_PASSWORD=hunter2\n")
    approver = _approver(project, interactive=False)
    for tool, args in (
        (ReadTool(), {"path": str(other / "bash-2.log")}),
        (LsTool(), {"path": str(ctx.user.tool_output_dir)}),
        (GrepTool(), {"pattern": "PASSWORD", "path": str(ctx.user.tool_output_dir)}),
    ):
        denial = await authorize(approver, tool, ctx, **args)
        assert denial is not None and "--add-dir" in denial


async def test_this_sessions_compaction_archives_read_without_asking(
    project: Path, ctx: ToolContext
) -> None:
    # The context tells the model where the turns it dropped are: reading them back is not
    # reading outside; another session's archives are.
    ctx.session_id = "s-1"
    mine = ctx.user.session_workspace("s-1")
    other = ctx.user.session_workspace("s-2")
    for folder in (mine, other):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "001-archive.md").write_text("turns\n")
    approver = _approver(project, interactive=False)
    assert await authorize(approver, ReadTool(), ctx, path=str(mine / "001-archive.md")) is None
    assert await authorize(approver, ReadTool(), ctx, path=str(other / "001-archive.md"))


async def test_plan_mode_still_asks_for_reads_outside(
    project: Path, ctx: ToolContext, outside: Path
) -> None:
    approver = Approver(ApprovalMode.ASK, project, interactive=False, plan=True)
    assert await authorize(approver, LsTool(), ctx, path=str(outside)) is not None
