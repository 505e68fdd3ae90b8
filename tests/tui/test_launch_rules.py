"""--allowedTools / --disallowedTools, --permission-mode, --append-system-prompt and
--system-prompt in the TUI: the same meaning as with -p (they used to be read by -p only, so the
TUI offered and ran what the user had forbidden, and asked where the user had said not to)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agentsh.agent import Agent
from agentsh.config import ApprovalMode, load_environment
from agentsh.session.entries import Role
from agentsh.session.session import Session
from agentsh.tui import launch
from agentsh.tui.lifecycle import build_real_agent
from agentsh.tui.options import LaunchOptions
from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL


def test_the_tui_agent_takes_the_rule_flags(
    project: Path, agentsh_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    args = argparse.Namespace(
        model=TEST_MODEL,
        api_base="http://127.0.0.1:9/v1",
        allowed_tools=["Bash(git status:*)"],
        disallowed_tools=["Bash(rm:*)", "write"],
    )
    options = LaunchOptions.from_args(args)
    env = load_environment(project, trust_project=True)
    agent = build_real_agent(env, Session.create(None, project), options)
    assert isinstance(agent, Agent)
    try:
        assert "write" not in agent.tool_names()  # a bare deny takes the tool away
        assert "bash" in agent.tool_names()
        rules = agent.approver.rules
        assert [r.text for r in rules.allow] == ["Bash(git status:*)"]
        assert [r.text for r in rules.deny] == ["Bash(rm:*)", "write"]
        assert agent.approver.mode is ApprovalMode(env.settings.tools.approval)
    finally:
        agent.close()


def test_a_malformed_rule_stops_before_the_first_frame(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argparse.Namespace(allowed_tools=["Bash(git"], disallowed_tools=None)
    assert launch.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentsh: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("mode", "approval", "plan"),
    [
        ("acceptEdits", ApprovalMode.EDITS, False),
        ("bypassPermissions", ApprovalMode.ALL, False),
        ("plan", ApprovalMode.ASK, True),
    ],
)
def test_the_tui_agent_takes_claude_codes_permission_mode_and_prompts(
    project: Path,
    agentsh_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    approval: ApprovalMode,
    plan: bool,
) -> None:
    # `agentsh --permission-mode acceptEdits` started in ask mode, and --append-system-prompt
    # and --system-prompt were dropped: the TUI read neither.
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    args = argparse.Namespace(
        model=TEST_MODEL,
        api_base="http://127.0.0.1:9/v1",
        permission_mode=mode,
        append_system_prompt="APPENDED-RULE-41",
        system_prompt="You are the REPLACED-BASE-17 agent.",
    )
    options = LaunchOptions.from_args(args)
    env = load_environment(project, trust_project=True)
    agent = build_real_agent(env, Session.create(None, project), options)
    try:
        assert isinstance(agent, Agent)
        assert (agent.approval_mode, agent.plan_mode) == (approval, plan)
        prompt = agent.system_prompt()
        assert "APPENDED-RULE-41" in prompt and "REPLACED-BASE-17" in prompt
        assert ("# Plan mode" in prompt) is plan
    finally:
        agent.close()


def test_approve_and_permission_mode_together_stop_before_the_first_frame(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = argparse.Namespace(approve="all", permission_mode="plan")
    assert launch.main(args) == 2
    assert capsys.readouterr().err == (
        "agentsh: --approve and --permission-mode cannot be used together\n"
    )


def test_the_tui_takes_session_id_and_fork_session(project: Path, agentsh_home: Path) -> None:
    """`agentsh -c --fork-session --session-id U` in a terminal: the TUI dropped both and
    continued (and changed) the very session the user asked to keep as it was."""
    import uuid

    from agentsh.cli import build_parser
    from agentsh.startup import session_for_args

    env = load_environment(project, trust_project=True)
    original = Session.create(env.user.project_sessions_dir(project), project)
    original.append_message(Role.USER, "keep me as I am")
    original.close()
    wanted = str(uuid.uuid4())
    args = build_parser().parse_args(["-c", "--fork-session", "--session-id", wanted])
    options = LaunchOptions.from_args(args)
    session = session_for_args(env, options.namespace(), project)  # as the TUI's load does
    try:
        assert session.id == wanted != original.id
        assert session.header.parent_session == original.id
    finally:
        session.close()
