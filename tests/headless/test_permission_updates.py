"""The ``updatedPermissions`` an SDK host sends with an allow (agentsh.headless.permission_updates),
applied to a real agent; the SDK end to end: test_agent_sdk_query. They were only warned about."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentsh.agent import Agent
from agentsh.agent_assembly import build_agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.headless.permission_updates import PermissionUpdates
from agentsh.session.session import Session
from agentsh.tools.rules import ToolRules


@pytest.fixture
def agent(project: Path) -> Iterator[Agent]:
    env = load_environment(project)
    made = build_agent(
        env,
        Session.create(None, project),
        model=None,
        cwd=project,
        rules=ToolRules.parse(["Bash(git status)"], ["Bash(rm:*)"]),
    )
    yield made
    made.close()


def _rules(behavior: str, *rules: tuple[str, str | None], kind: str = "addRules") -> dict[str, Any]:
    values = [{"toolName": n} | ({"ruleContent": c} if c else {}) for n, c in rules]
    return {"type": kind, "rules": values, "behavior": behavior, "destination": "session"}


def _texts(agent: Agent) -> tuple[list[str], list[str]]:
    rules = agent.tool_rules
    return [r.text for r in rules.allow], [r.text for r in rules.deny]


def test_rules_are_added_replaced_and_removed_beside_the_command_lines(
    agent: Agent, project: Path
) -> None:
    updates = PermissionUpdates(agent, project, project)
    assert updates.apply([_rules("allow", ("Bash", "ls:*"), ("Read", None))]) == []
    assert _texts(agent) == (["Bash(git status)", "Bash(ls:*)", "Read"], ["Bash(rm:*)"])
    allowed = agent.tool_rules.check("bash", _Command("ls -la"), project, project)
    assert allowed is not None and allowed.allowed
    assert updates.apply([_rules("deny", ("Edit", "secrets/**"))]) == []
    assert _texts(agent)[1] == ["Bash(rm:*)", "Edit(secrets/**)"]
    # replaceRules replaces what the host added, not the command line's rules
    assert updates.apply([_rules("allow", ("Grep", None), kind="replaceRules")]) == []
    assert _texts(agent)[0] == ["Bash(git status)", "Grep"]
    problems = updates.apply(
        [_rules("deny", ("Edit", "secrets/**"), ("Bash", "rm:*"), kind="removeRules")]
    )
    assert _texts(agent)[1] == ["Bash(rm:*)"]
    assert problems == ["removeRules: Bash(rm:*) came from the command line and stays"]


def test_a_destination_other_than_the_session_is_applied_for_the_run_and_not_saved(
    agent: Agent, project: Path
) -> None:
    update = _rules("allow", ("Bash", "npm test")) | {"destination": "projectSettings"}
    [problem] = PermissionUpdates(agent, project, project).apply([update])
    assert "Bash(npm test)" in _texts(agent)[0]
    assert "not saved to projectSettings" in problem
    assert not (project / ".claude").exists() and not (project / ".agentsh").exists()


def test_what_cannot_be_applied_is_named_and_nothing_else_changes(
    agent: Agent, project: Path
) -> None:
    updates = PermissionUpdates(agent, project, project, bypass_allowed=False)
    before = _texts(agent)
    problems = updates.apply(
        [
            _rules("ask", ("Bash", None)),
            {"type": "setMode", "mode": "bypassPermissions", "destination": "session"},
            {"type": "setMode", "mode": "yolo"},
            {"type": "addRules", "rules": [{"toolName": "Bash("}], "behavior": "allow"},
            _rules("allow", ("Bash", None)) | {"destination": "elsewhere"},
            {"type": "grantEverything"},
            "not an object",
        ]
    )
    assert _texts(agent) == before
    assert agent.approval_mode is ApprovalMode.ASK
    assert len(problems) == 7
    assert "ask rules are not supported" in problems[0]
    assert "disables bypassPermissions" in problems[1]
    assert "no permission mode 'yolo'" in problems[2]
    assert "cannot read the tool rule" in problems[3]
    assert "unknown destination 'elsewhere'" in problems[4]
    assert updates.apply({"type": "setMode"}) == [
        "updatedPermissions is not a list; nothing applied"
    ]


def test_set_mode_switches_the_approval_mode(agent: Agent, project: Path) -> None:
    updates = PermissionUpdates(agent, project, project)
    assert updates.apply([{"type": "setMode", "mode": "acceptEdits"}]) == []
    assert (agent.approval_mode, agent.plan_mode) == (ApprovalMode.EDITS, False)
    assert updates.apply([{"type": "setMode", "mode": "plan"}]) == []
    assert agent.plan_mode


def test_added_folders_are_checked_like_another_programs(
    agent: Agent, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "work").mkdir()
    (home / "link-to-ssh").symlink_to(home / ".ssh")
    monkeypatch.setenv("HOME", str(home))
    other = tmp_path / "other"
    other.mkdir()
    (project / "sub").mkdir()
    updates = PermissionUpdates(agent, project, project)
    given = [str(other), "../home/work", str(home / ".ssh"), str(home / "link-to-ssh"), "/", "sub"]
    problems = updates.apply([{"type": "addDirectories", "directories": given}])
    assert list(agent.folders[0]) == [other.resolve(), (home / "work").resolve()]
    [problem] = problems
    assert problem.count("hidden folder of the home folder") == 2
    assert problem.startswith("addDirectories: ") and "/ is the filesystem's root" in problem
    removed = [{"type": "removeDirectories", "directories": [str(other)]}]
    assert updates.apply(removed) == []
    assert list(agent.folders[0]) == [(home / "work").resolve()]


def test_a_folder_from_add_dir_is_not_removed(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "given"
    other.mkdir()
    made = build_agent(
        load_environment(project),
        Session.create(None, project),
        model=None,
        cwd=project,
        added_dirs=[other],
    )
    try:
        updates = PermissionUpdates(made, project, project)
        [problem] = updates.apply([{"type": "removeDirectories", "directories": [str(other)]}])
        assert "came from --add-dir and stays" in problem
        assert made.folders[0] == (other.resolve(),)
    finally:
        made.close()


class _Command:
    def __init__(self, command: str) -> None:
        self.command = command


def test_set_permission_mode_may_not_bypass_what_settings_disabled(agent: Agent) -> None:
    """``--settings`` with ``disableBypassPermissionsMode``: the host's ``set_permission_mode``
    (ClaudeSDKClient) may not switch every prompt off either (it could before)."""
    from agentsh.headless.control import Controls
    from agentsh.headless.stream_input import ControlRequest

    request = ControlRequest("r1", "set_permission_mode", {"mode": "bypassPermissions"})
    answer = Controls(agent, bypass_allowed=False).answer(request)
    assert answer["response"]["subtype"] == "error"
    assert "disables bypassPermissions" in answer["response"]["error"]
    assert agent.approval_mode is ApprovalMode.ASK
    assert Controls(agent).answer(request)["response"]["subtype"] == "success"
    assert _mode(agent) is ApprovalMode.ALL


def _mode(agent: Agent) -> ApprovalMode:
    return agent.approval_mode  # read again (mypy keeps the narrowed value otherwise)


def test_an_mcp_tools_name_from_can_use_tool_becomes_its_configured_servers_rule(
    project: Path,
) -> None:
    """A host's "always allow" sends back the name ``can_use_tool`` asked about, the cleaned
    one (``mcp__my_server__echo`` for ``my.server``); MCP rules match the configured server,
    so it is kept as ``mcp__my.server__echo`` (else it would cover nothing)."""
    from tests.mcp.conftest import fake_spec

    made = build_agent(
        load_environment(project),
        Session.create(None, project),
        model=None,
        cwd=project,
        mcp_servers=[fake_spec("my.server")],
    )
    try:
        made.settle_mcp(60)
        assert "mcp__my_server__echo" in made.tool_names()
        updates = PermissionUpdates(made, project, project)
        rule = _rules("allow", ("mcp__my_server__echo", None))
        assert updates.apply([rule]) == []
        assert _texts(made)[0] == ["mcp__my.server__echo"]
        verdict = made.tool_rules.check(
            "mcp__my_server__echo", {}, project, project, mcp=("my.server", "echo")
        )
        assert verdict is not None and verdict.allowed
    finally:
        made.close()
