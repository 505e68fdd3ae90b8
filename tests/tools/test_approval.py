"""The approval policy: each mode and effect, writes outside the root, session grants, -p."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentsh.config import ApprovalMode
from agentsh.events import ApprovalDecision, ApprovalRequest, Event
from agentsh.tools.approval import Approver
from agentsh.tools.base import Tool, ToolContext
from agentsh.tools.file_read import ReadTool
from agentsh.tools.files import EditTool, WriteTool
from agentsh.tools.shell import BashTool


class User:
    """Answers every approval request at once with the scripted decision, and counts them."""

    def __init__(self, decision: ApprovalDecision = ApprovalDecision.ALLOW_ONCE) -> None:
        self.decision = decision
        self.requests: list[ApprovalRequest] = []

    def __call__(self, event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            self.requests.append(event)
            event.decision.set_result(self.decision)


def with_user(ctx: ToolContext, user: User) -> ToolContext:
    ctx.emit = user
    return ctx


async def authorize(
    approver: Approver, tool: Tool, ctx: ToolContext, **arguments: Any
) -> str | None:
    return await approver.authorize(tool, tool.parse(arguments), ctx)


READ = (ReadTool(), {"path": "a.txt"})
EDIT = (WriteTool(), {"path": "a.txt", "content": "new\n"})
EXECUTE = (BashTool(), {"command": "echo hi"})


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("mode", "call", "asks"),
    [
        (ApprovalMode.ASK, READ, False),
        (ApprovalMode.ASK, EDIT, True),
        (ApprovalMode.ASK, EXECUTE, True),
        (ApprovalMode.EDITS, READ, False),
        (ApprovalMode.EDITS, EDIT, False),
        (ApprovalMode.EDITS, EXECUTE, True),
        (ApprovalMode.ALL, READ, False),
        (ApprovalMode.ALL, EDIT, False),
        (ApprovalMode.ALL, EXECUTE, False),
    ],
    ids=lambda v: (
        v.value if isinstance(v, ApprovalMode) else (v[0].name if isinstance(v, tuple) else str(v))
    ),
)
async def test_each_mode_and_effect(
    project: Path,
    ctx: ToolContext,
    mode: ApprovalMode,
    call: tuple[Tool, dict[str, Any]],
    asks: bool,
) -> None:
    user = User()
    approver = Approver(mode, project, interactive=True)
    tool, arguments = call
    assert await authorize(approver, tool, with_user(ctx, user), **arguments) is None
    assert len(user.requests) == (1 if asks else 0)


@pytest.mark.asyncio
async def test_the_request_carries_the_diff_or_the_command(project: Path, ctx: ToolContext) -> None:
    (project / "a.txt").write_text("old\n")
    user = User()
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    await authorize(
        approver, EditTool(), with_user(ctx, user), path="a.txt", old_text="old", new_text="new"
    )
    await authorize(approver, BashTool(), ctx, command="make test")
    edit, bash = user.requests
    assert edit.call_id == "call-1" and edit.tool == "edit" and edit.summary == "edit: a.txt"
    assert edit.detail == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"
    assert "approval mode is 'ask'" in edit.reason and not edit.outside_project
    assert (project / "a.txt").read_text() == "old\n"  # asking writes nothing
    assert bash.detail == "make test" and bash.summary == "bash: make test"


@pytest.mark.asyncio
async def test_deny_returns_a_message_for_the_model(project: Path, ctx: ToolContext) -> None:
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    denial = await authorize(
        approver, BashTool(), with_user(ctx, User(ApprovalDecision.DENY)), command="rm -rf /tmp/x"
    )
    assert denial is not None
    assert denial.startswith("The user declined bash: rm -rf /tmp/x; it was not run.")
    # What the user answered goes with the call (the result's details keep it in the log).
    assert ctx.approvals == [{"decision": "deny", "summary": "bash: rm -rf /tmp/x", "group": ""}]


@pytest.mark.asyncio
@pytest.mark.parametrize("decision", [ApprovalDecision.ALLOW_ONCE, ApprovalDecision.NO_ANSWER])
async def test_an_answer_is_kept_with_the_call_and_no_answer_is_not(
    project: Path, ctx: ToolContext, decision: ApprovalDecision
) -> None:
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    await authorize(approver, BashTool(), with_user(ctx, User(decision)), command="make")
    answered = decision is not ApprovalDecision.NO_ANSWER
    kept = [{"decision": "allow_once", "summary": "bash: make", "group": ""}] if answered else []
    assert ctx.approvals == kept


@pytest.mark.asyncio
async def test_allow_for_the_session_is_remembered_per_tool(
    project: Path, ctx: ToolContext
) -> None:
    user = User(ApprovalDecision.ALLOW_SESSION)
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    with_user(ctx, user)
    assert await authorize(approver, BashTool(), ctx, command="ls") is None
    assert await authorize(approver, BashTool(), ctx, command="pwd") is None
    assert len(user.requests) == 1
    assert approver.session_allowed == {"bash"}
    assert user.requests[0].session_scope == "tool"
    # The grant is for bash only: a write still asks.
    assert await authorize(approver, WriteTool(), ctx, path="x.txt", content="x") is None
    assert len(user.requests) == 2
    approver.forget_session()
    await authorize(approver, BashTool(), ctx, command="ls")
    assert len(user.requests) == 3


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", list(ApprovalMode))
async def test_writes_outside_the_project_always_ask(
    project: Path, ctx: ToolContext, tmp_path: Path, mode: ApprovalMode
) -> None:
    user = User()
    approver = Approver(mode, project, interactive=True)
    outside = tmp_path / "elsewhere.txt"
    assert (
        await authorize(approver, WriteTool(), with_user(ctx, user), path=str(outside), content="x")
        is None
    )
    (request,) = user.requests
    assert request.outside_project
    assert "outside the project root" in request.reason and str(outside) in request.reason


@pytest.mark.asyncio
async def test_session_grant_never_covers_outside_writes(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    user = User(ApprovalDecision.ALLOW_SESSION)
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    with_user(ctx, user)
    for _ in range(2):
        await authorize(approver, WriteTool(), ctx, path=str(tmp_path / "out.txt"), content="x")
    assert len(user.requests) == 2
    assert approver.session_allowed == frozenset()
    assert {r.session_scope for r in user.requests} == {""}
    # A session grant made inside the project does not leak outside either.
    await authorize(approver, WriteTool(), ctx, path="in.txt", content="x")
    await authorize(approver, WriteTool(), ctx, path="in2.txt", content="x")
    assert len(user.requests) == 3
    await authorize(approver, WriteTool(), ctx, path="../escape.txt", content="x")
    assert len(user.requests) == 4 and user.requests[-1].outside_project


@pytest.mark.asyncio
async def test_a_symlink_escaping_the_root_counts_as_outside(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    target = tmp_path / "real"
    target.mkdir()
    (project / "link").symlink_to(target)
    user = User()
    approver = Approver(ApprovalMode.ALL, project, interactive=True)
    await authorize(
        approver, EditTool(), with_user(ctx, user), path="link/new.txt", old_text="a", new_text="b"
    )
    await authorize(approver, WriteTool(), ctx, path="link/new.txt", content="x")
    (request,) = user.requests  # the edit fails anyway (no file), so only the write asks
    assert request.outside_project and str(target / "new.txt") in request.reason


@pytest.mark.asyncio
async def test_a_call_that_would_fail_is_not_asked_about(project: Path, ctx: ToolContext) -> None:
    user = User()
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    (project / "a.txt").write_text("alpha\n")
    message = await authorize(
        approver, EditTool(), with_user(ctx, user), path="a.txt", old_text="omega", new_text="x"
    )
    assert message is not None and message.startswith("Could not find old_text in a.txt.")
    assert user.requests == []


# -- non-interactive (-p) -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_headless_ask_mode_denies_edits_and_says_how_to_allow(
    project: Path, ctx: ToolContext
) -> None:
    approver = Approver(ApprovalMode.ASK, project, interactive=False)
    denial = await authorize(approver, WriteTool(), ctx, path="a.txt", content="x")
    assert denial == (
        "Denied: write: a.txt. This run is non-interactive (agentsh -p) with approval mode "
        "'ask': file edits cannot be approved, so this edit was not made. Do not retry it; "
        "tell the user what you wanted to do. To allow it, the user can allow edits inside the "
        "project with `--approve edits`, or edits and commands with `--approve all`."
    )
    assert not (project / "a.txt").exists()


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [ApprovalMode.ASK, ApprovalMode.EDITS])
async def test_headless_denies_commands_unless_all(
    project: Path, ctx: ToolContext, mode: ApprovalMode
) -> None:
    approver = Approver(mode, project, interactive=False)
    denial = await authorize(approver, BashTool(), ctx, command="make")
    assert denial is not None
    assert f"approval mode '{mode.value}'" in denial
    assert "commands cannot be approved" in denial and "`--approve all`" in denial
    assert (
        await authorize(
            Approver(ApprovalMode.ALL, project, interactive=False), BashTool(), ctx, command="make"
        )
        is None
    )


@pytest.mark.asyncio
async def test_headless_edits_mode_allows_edits_inside(project: Path, ctx: ToolContext) -> None:
    approver = Approver(ApprovalMode.EDITS, project, interactive=False)
    assert await authorize(approver, WriteTool(), ctx, path="a.txt", content="x") is None


@pytest.mark.asyncio
async def test_headless_never_writes_outside_even_in_all_mode(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    approver = Approver(ApprovalMode.ALL, project, interactive=False)
    denial = await authorize(approver, WriteTool(), ctx, path=str(tmp_path / "o.txt"), content="x")
    assert denial is not None
    assert "outside the project root" in denial
    assert "never allowed in non-interactive mode (agentsh -p), whatever --approve says" in denial


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [ApprovalMode.EDITS, ApprovalMode.ALL])
async def test_the_project_settings_file_always_asks_and_no_grant_covers_it(
    project: Path, ctx: ToolContext, mode: ApprovalMode
) -> None:
    # .agentsh/config.toml holds tools.approval: an agent allowed to edit files must not be
    # able to grant itself commands for the next run.
    user = User(ApprovalDecision.ALLOW_SESSION)
    approver = Approver(mode, project, interactive=True)
    with_user(ctx, user)
    for _ in range(2):
        await authorize(
            approver,
            WriteTool(),
            ctx,
            path=".agentsh/config.toml",
            content='[tools]\napproval = "all"\n',
        )
    assert len(user.requests) == 2
    assert "project settings" in user.requests[0].reason
    assert approver.session_allowed == frozenset()
    # The front ends are told "for this session" keeps nothing here (ACP offers no "always").
    assert {r.session_scope for r in user.requests} == {""}
    # Other files inside .agentsh/ are ordinary edits.
    await authorize(approver, WriteTool(), ctx, path=".agentsh/notes.md", content="x")
    assert len(user.requests) == 2


@pytest.mark.asyncio
async def test_headless_never_changes_the_project_settings(project: Path, ctx: ToolContext) -> None:
    approver = Approver(ApprovalMode.ALL, project, interactive=False)
    denial = await authorize(
        approver, WriteTool(), ctx, path=".agentsh/config.toml", content="[tools]\n"
    )
    assert denial is not None and "agentsh's project settings" in denial
    assert not (project / ".agentsh" / "config.toml").exists()


# -- cancellation ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_cancel_while_waiting_returns_promptly(project: Path, ctx: ToolContext) -> None:
    requests: list[ApprovalRequest] = []
    ctx.emit = lambda e: requests.append(e) if isinstance(e, ApprovalRequest) else None
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    task = asyncio.create_task(authorize(approver, BashTool(), ctx, command="ls"))
    await asyncio.sleep(0.05)
    assert not task.done() and len(requests) == 1
    ctx.cancelled.set()
    message = await asyncio.wait_for(task, 2)
    assert message == "Cancelled while waiting for the user's approval; bash: ls was not run."
    assert requests[0].decision.cancelled()  # the front end can see the prompt is void
    # Kept with the call: a reload shows "not answered" where the prompt was, as live.
    assert ctx.approvals == [{"decision": "cancelled", "summary": "bash: ls", "group": ""}]


@pytest.mark.asyncio
async def test_task_cancel_while_waiting_propagates(project: Path, ctx: ToolContext) -> None:
    requests: list[ApprovalRequest] = []
    ctx.emit = lambda e: requests.append(e) if isinstance(e, ApprovalRequest) else None
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    task = asyncio.create_task(authorize(approver, BashTool(), ctx, command="ls"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 2)
    assert requests[0].decision.cancelled()


@pytest.mark.asyncio
async def test_a_withdrawn_prompt_counts_as_not_approved(project: Path, ctx: ToolContext) -> None:
    def withdraw(event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            event.decision.cancel()

    ctx.emit = withdraw
    approver = Approver(ApprovalMode.ASK, project, interactive=True)
    message = await authorize(approver, BashTool(), ctx, command="ls")
    assert message is not None and "was not run" in message
    assert ctx.approvals == [{"decision": "cancelled", "summary": "bash: ls", "group": ""}]


def test_mode_may_be_given_as_text(project: Path) -> None:
    assert Approver("edits", project, interactive=True).mode is ApprovalMode.EDITS
    with pytest.raises(ValueError):
        Approver("sometimes", project, interactive=True)


@pytest.mark.asyncio
async def test_an_added_folder_is_written_like_the_project_with_its_guards(
    project: Path, ctx: ToolContext, tmp_path: Path
) -> None:
    # --add-dir: the folder counts as inside; .git/ in it stays protected, a link out of it
    # still leads outside, and the memory tool (writes without asking) stays in the project.
    from agentsh.tools.base import Effect

    shared = tmp_path / "shared"
    (shared / ".git").mkdir(parents=True)
    (shared / "out").symlink_to(tmp_path)
    approver = Approver(ApprovalMode.EDITS, project, interactive=False, added_dirs=[shared])
    assert (
        await authorize(approver, WriteTool(), ctx, path=str(shared / "a.txt"), content="x") is None
    )
    git = await authorize(approver, WriteTool(), ctx, path=str(shared / ".git/config"), content="x")
    assert git is not None and ".git/" in git
    out = await authorize(approver, WriteTool(), ctx, path=str(shared / "out/b.txt"), content="x")
    assert out is not None and "outside the project" in out

    class Remembering(WriteTool):  # writes without asking, as the memory tool does
        def effect(self, params: Any, ctx: ToolContext) -> Effect:
            return Effect.READ

    kept = await authorize(approver, Remembering(), ctx, path=str(shared / "m.md"), content="x")
    assert kept is not None and "only writes inside the project" in kept
