"""The Claude Agent SDK's ``query()`` driving agentsh as its CLI, end to end: the SDK starts
agentsh with its own flags (``--system-prompt ""``, ``--input-format stream-json``,
``--allowedTools`` joined by commas, ...), speaks its control protocol, and reads the messages.
It used to stop at once: ``--system-prompt`` was an unknown option (exit 2)."""

from __future__ import annotations

import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    SystemMessage,
    ToolPermissionContext,
    ToolUseBlock,
    query,
)
from claude_agent_sdk.types import PermissionRuleValue

from tests.fakes.fixtures import FAKE_KEY, TEST_MODEL
from tests.fakes.server import ScriptedServer, text, tool_call, tool_calls


def _cli(tmp_path: Path, server: ScriptedServer) -> Path:
    """What a user would put on PATH: agentsh pointed at the model server."""
    script = tmp_path / "agentsh-cli"
    script.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m agentsh -m {TEST_MODEL} '
        f'--api-base {server.base_url} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_query_runs_a_turn_with_a_tool_through_agentsh(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    scripted_server.script(
        tool_call("bash", {"command": "echo from-the-tool"}, id="call_1"),
        text("The tool said from-the-tool."),
    )
    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        max_turns=4,
        allowed_tools=["Bash(echo:*)", "Read"],
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def run() -> list[Any]:
        return [m async for m in query(prompt="run echo for me", options=options)]

    messages = anyio.run(run)
    assert isinstance(messages[0], SystemMessage) and messages[0].subtype == "init"
    assert messages[0].data["cwd"] == str(project)
    uses = [
        b for m in messages if isinstance(m, AssistantMessage) for b in m.content
        if isinstance(b, ToolUseBlock)
    ]  # fmt: skip
    assert [u.input for u in uses] == [{"command": "echo from-the-tool"}]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert (result.subtype, result.is_error, result.num_turns) == ("success", False, 2)
    assert result.result == "The tool said from-the-tool."
    # The allow rule let the command run: its output went back to the model.
    tool_message = [m for m in scripted_server.requests[1].messages if m["role"] == "tool"]
    assert "from-the-tool" in str(tool_message[0]["content"])
    # The SDK's empty --system-prompt keeps agentsh's own instructions.
    assert "You are agentsh" in str(scripted_server.requests[0].messages[0]["content"])


def test_a_system_prompt_replaces_the_base_but_not_the_data_rule(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    scripted_server.script(text("ok"))
    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        system_prompt="You are a terse reviewer.",
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def run() -> list[Any]:
        return [m async for m in query(prompt="review", options=options)]

    messages = anyio.run(run)
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error
    system = str(scripted_server.requests[0].messages[0]["content"])
    assert system.startswith("You are a terse reviewer.")
    assert "You are agentsh" not in system
    assert "is quoted data" in system  # the fences still mean what they say


def test_can_use_tool_is_asked_and_decides_each_call(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    """The SDK's ``can_use_tool`` callback (``--permission-prompt-tool stdio``): agentsh asks
    the host over the control protocol instead of refusing (exit 2 before: unknown option)."""
    scripted_server.script(
        tool_calls(
            ("bash", {"command": "touch allowed.txt"}), ("bash", {"command": "touch denied.txt"})
        ),
        text("one of two"),
    )
    asked: list[tuple[str, dict[str, Any], str | None]] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        asked.append((name, tool_input, context.tool_use_id))
        if "allowed" in tool_input.get("command", ""):
            return PermissionResultAllow()
        return PermissionResultDeny(message="not that one")

    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        can_use_tool=can_use_tool,
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def prompts() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": "make two files"}}

    async def run() -> list[Any]:
        return [m async for m in query(prompt=prompts(), options=options)]

    messages = anyio.run(run)
    assert [(name, i["command"]) for name, i, _ in asked] == [
        ("bash", "touch allowed.txt"),
        ("bash", "touch denied.txt"),
    ]
    assert all(call_id for _, _, call_id in asked)
    assert (project / "allowed.txt").exists()
    assert not (project / "denied.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "one of two"
    assert [d["tool_input"] for d in result.permission_denials or []] == [
        {"command": "touch denied.txt"}
    ]


def test_can_use_tool_may_rewrite_the_input_within_agentshs_own_checks(
    tmp_path: Path,
    scripted_server: ScriptedServer,
    project: Path,
    agentsh_home: Path,
) -> None:
    """``PermissionResultAllow(updated_input=...)``: the call runs with the host's input, as in
    Claude Code (it was refused before); a rewrite that would write outside the project is
    refused all the same, and listed as denied. The model and the log learn what ran."""
    scripted_server.script(
        tool_calls(
            ("bash", {"command": "touch asked.txt"}),
            ("write", {"path": "notes.txt", "content": "hello\n"}),
        ),
        text("done"),
    )

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow:
        if name == "bash":
            return PermissionResultAllow(updated_input={"command": "touch rewritten.txt"})
        return PermissionResultAllow(updated_input={**tool_input, "path": "../escape.txt"})

    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        can_use_tool=can_use_tool,
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home)},
    )

    async def prompts() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": "make files"}}

    async def run() -> list[Any]:
        return [m async for m in query(prompt=prompts(), options=options)]

    messages = anyio.run(run)
    assert (project / "rewritten.txt").exists() and not (project / "asked.txt").exists()
    assert not (project.parent / "escape.txt").exists() and not (project / "notes.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "done"
    [denied] = result.permission_denials or []
    assert (denied["tool_name"], denied["tool_input"]["path"]) == ("write", "../escape.txt")
    ran, refused = [
        m["content"] for m in scripted_server.requests[1].messages if m["role"] == "tool"
    ]
    assert '"command": "touch rewritten.txt"' in ran
    assert refused.startswith("Denied: ") and "outside the project" in refused
    from agentsh.session.entries import ToolResultEntry
    from agentsh.session.session import Session
    from tests.agent.conftest import session_files

    (path,) = session_files(agentsh_home)
    results = [
        e for e in Session.open(path, lock=False).current_path() if isinstance(e, ToolResultEntry)
    ]
    assert results[0].details["input"] == {"command": "touch rewritten.txt", "timeout": None}
    assert "input" not in results[1].details


def test_updated_permissions_hold_for_the_rest_of_the_run(
    tmp_path: Path, scripted_server: ScriptedServer, project: Path, agentsh_home: Path
) -> None:
    """``PermissionResultAllow(updated_permissions=[...])``, a host's "always allow": the rule
    and the folder hold for the later calls (only a warning before, and the same command was
    asked again); the project's settings are not written, and a hidden folder of the home
    folder is not opened to reads."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("notes from the other folder\n")
    key = str(home / ".ssh" / "id_ed25519")
    scripted_server.script(
        tool_call("bash", {"command": "touch first.txt"}),
        tool_calls(
            ("bash", {"command": "touch second.txt"}),
            ("read", {"path": str(other / "notes.txt")}),
            ("read", {"path": key}),
        ),
        text("done"),
    )
    asked: list[str] = []
    stderr: list[str] = []

    async def can_use_tool(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        asked.append(tool_input.get("command") or tool_input.get("path", ""))
        if name == "read":
            return PermissionResultDeny(message="not the keys")
        always = [
            PermissionUpdate(
                "addRules",
                rules=[PermissionRuleValue("Bash", "touch:*")],
                behavior="allow",
                destination="projectSettings",
            ),
            PermissionUpdate("addDirectories", directories=[str(other), str(home / ".ssh")]),
        ]
        return PermissionResultAllow(updated_permissions=always)

    options = ClaudeAgentOptions(
        cli_path=str(_cli(tmp_path, scripted_server)),
        cwd=str(project),
        can_use_tool=can_use_tool,
        stderr=stderr.append,
        env={"OPENAI_API_KEY": FAKE_KEY, "AGENTSH_HOME": str(agentsh_home), "HOME": str(home)},
    )

    async def prompts() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": "touch and read"}}

    async def run() -> list[Any]:
        return [m async for m in query(prompt=prompts(), options=options)]

    messages = anyio.run(run)
    assert asked == ["touch first.txt", key]  # touch second.txt and the notes: not asked
    assert (project / "first.txt").exists() and (project / "second.txt").exists()
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.result == "done"
    results = [m["content"] for m in scripted_server.requests[2].messages if m["role"] == "tool"]
    assert "notes from the other folder" in results[-2]
    assert "PRIVATE KEY" not in str(results)
    said = "\n".join(stderr)
    assert "not saved to projectSettings" in said
    assert "hidden folder of the home folder" in said
    assert not (project / ".claude").exists()


def test_every_flag_the_sdk_builds_is_taken_or_refused_by_name(tmp_path: Path) -> None:
    """The SDK's own command line for its options, read by agentsh's parser: --setting-sources,
    --effort, thinking and the other tuning flags were unknown options (exit 2), which ended
    the host's query() before it began."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    from agentsh.cli import build_parser
    from agentsh.cli_words import split_prompt_words
    from agentsh.errors import CliError
    from agentsh.run_options import resolve

    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text("You review code.")
    taken = ClaudeAgentOptions(
        cli_path="agentsh",
        max_turns=3,
        model="openai/m",
        fallback_model="openai/f",
        resume="abc",
        fork_session=True,
        include_partial_messages=True,
        permission_mode="acceptEdits",
        allowed_tools=["Read"],
        disallowed_tools=["Bash"],
        add_dirs=[str(tmp_path)],
        setting_sources=["user", "project"],
        max_budget_usd=1.0,
        thinking={"type": "enabled", "budget_tokens": 2000},
        effort="high",
        betas=["context-1m-2025-08-07"],
        system_prompt={"type": "file", "path": str(prompt_file)},
    )
    parser = build_parser()
    argv = SubprocessCLITransport(prompt="hi", options=taken)._build_command()[1:]
    options, _ = split_prompt_words(parser, argv)
    args = parser.parse_args(options)
    extras = resolve(args, tmp_path, headless=True)
    [warning] = [w for w in extras.warnings if "not used by agentsh" in w]
    assert warning.startswith("--setting-sources, --effort, --max-thinking-tokens, --betas")
    assert args.system_prompt == "You review code."
    refused = ClaudeAgentOptions(
        cli_path="agentsh", output_format={"type": "json_schema", "schema": {"type": "object"}}
    )
    argv = SubprocessCLITransport(prompt="hi", options=refused)._build_command()[1:]
    args = parser.parse_args(split_prompt_words(parser, argv)[0])
    with pytest.raises(CliError, match="structured output"):
        resolve(args, tmp_path, headless=True)


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (
            {"resume": "abc", "resume_session_at": "1b7e6c1e-0000-4000-8000-000000000000"},
            "at a message",
        ),
        ({"resume": "abc", "resume_drops_turn": "x"}, "--resume-drops-turn is not supported"),
    ],
)
def test_resuming_at_a_message_is_refused_by_name(options: dict[str, Any], why: str) -> None:
    """The SDK's resume_session_at: it was an unknown option, "did you mean --fork-session?"
    (a fork of the whole session is not what the host asked for)."""
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    from agentsh.cli import build_parser
    from agentsh.cli_words import split_prompt_words
    from agentsh.errors import CliError
    from agentsh.run_options import resolve

    argv = SubprocessCLITransport(
        prompt="hi", options=ClaudeAgentOptions(cli_path="agentsh", **options)
    )._build_command()[1:]
    parser = build_parser()
    args = parser.parse_args(split_prompt_words(parser, argv)[0])
    with pytest.raises(CliError, match=why):
        resolve(args, Path.cwd(), headless=True)
